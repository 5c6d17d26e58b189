"""The Booster accelerator, as a trace-driven performance model of hardwood's own training
(He, Vijaykumar, Thottethodi: *Booster: An Accelerator for Gradient Boosting Decision Trees*).

* ``trace``: train for real with the pages wrapped in ``backends.booster.TracePages`` and
  keep what each step did (rows binned, partitioned, traversed; fields; bins scanned);
* ``constants``: every constant of the model, with its source in the paper;
* ``model``: the trace turned into time and energy on Booster, an Ideal 32-core, an Ideal
  GPU and the inter-record design;
* ``presets``: synthetic stand-ins with the field structure of the paper's data sets;
* ``report``: the paper's experiment as tables, JSON and plots; ``cli``: ``hardwood
  simulate``.
"""
from .model import Config, simulate
from .trace import Trace, record_trace

__all__ = ["Config", "Trace", "record_trace", "simulate"]
