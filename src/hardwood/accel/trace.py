"""Record the trace of a real hardwood training (``backends/booster.py``'s ``TracePages``).

``record_trace(train_set, params, rounds)`` trains a model exactly as ``hardwood.train``
would (the learner over pages builds the fused grower's trees, bit for bit), with the pages
wrapped in ``TracePages``, and returns a ``Trace``: per tree and node the rows binned in ①,
the rows and field of each ③, the rows, depth and fields of each leaf in ⑤, the bins ②
scanned, the host seconds of each step, and the dataset's field layout (bins per field, the
load a naive packing of bins into SRAMs puts on the busiest SRAM).
"""
from __future__ import annotations

import numbers

import time
from dataclasses import dataclass, field

import numpy as np

from ..backends.booster import BLOCK_SPANS, TracePages
from ..train.booster import Booster
from . import constants as C


@dataclass
class Layout:
    """The field structure of a binned dataset, as the accelerator sees it."""
    n_rows: int
    n_bins: np.ndarray            # bins per field, the missing bin included
    is_categorical: np.ndarray
    naive_max_load: float = 1.0   # mean over records of the busiest SRAM's updates (naive)

    @property
    def n_fields(self):
        return int(self.n_bins.size)

    @property
    def total_bins(self):
        return int(self.n_bins.sum())


@dataclass
class Trace:
    layout: Layout
    trees: list                      # backends.booster.TreeTrace, one per tree
    host: dict                       # measured host seconds per step: histogram, split,
                                     # partition, update (the tracing itself left out)
    n_jobs: int = 1
    params: dict = field(default_factory=dict)
    model: object = None

    @property
    def n_trees(self):
        return len(self.trees)

    @property
    def nodes_scanned(self):
        return sum(t.nodes_scanned for t in self.trees)

    @property
    def bins_scanned(self):
        """② bins scanned: every bin of every node whose split was searched."""
        return self.nodes_scanned * self.layout.total_bins

    def rows_binned(self):
        """① rows binned per tree."""
        return np.asarray([sum(t.hist_rows) for t in self.trees], dtype=np.int64)

    def rows_partitioned(self):
        return np.asarray([sum(t.part_rows) for t in self.trees], dtype=np.int64)


def naive_max_load(bins_row, offsets, sram_bins=C.SRAM_BINS, sample=20000, seed=0):
    """Mean, over records, of the updates that land on the busiest SRAM when all fields' bins
    are packed into SRAMs of ``sram_bins`` in field order (§III-A's naive packing): records
    whose fields' bins share an SRAM serialise there. At most ``sample`` records are read."""
    n = bins_row.shape[0]
    if n == 0:
        return 1.0
    take = np.arange(n) if n <= sample else np.sort(
        np.random.default_rng(seed).choice(n, sample, replace=False))
    ids = np.sort((bins_row[take].astype(np.int64) + offsets[:-1][None, :]) // sram_bins,
                  axis=1)
    run = np.ones(ids.shape[0], dtype=np.int64)
    best = run.copy()
    for j in range(1, ids.shape[1]):
        run = np.where(ids[:, j] == ids[:, j - 1], run + 1, 1)
        np.maximum(best, run, out=best)
    return float(best.mean())


def layout_of(train_set):
    bm = train_set.bin_mapper
    return Layout(int(train_set.n_rows), np.asarray(bm.n_bins, dtype=np.int64),
                  np.asarray(bm.is_categorical, dtype=bool),
                  naive_max_load(train_set.bins_row, np.asarray(bm.offsets, dtype=np.int64)))


def record_trace(train_set, params, rounds, n_jobs=1) -> Trace:
    """Train ``rounds`` rounds on ``train_set`` with ``params`` (single-threaded by default,
    so that the host times are a sequential breakdown, as the paper's Fig. 6), recording the
    trace. Sampling rounds are refused: their sample would grow in untraced pages."""
    from ..train.params import resolve_params

    if isinstance(rounds, bool) or not isinstance(rounds, numbers.Integral) or rounds < 1:
        raise ValueError(f"rounds must be a positive integer, got {rounds!r}")
    p = dict(params)
    resolved = resolve_params(p)  # (names and aliases: LightGBM's bagging, GOSS)
    if resolved["subsample"] < 1.0 or resolved["sampling_method"] != "uniform":
        raise ValueError("simulate traces unsampled training: subsample must be 1 and "
                         f"sampling_method 'uniform' (got subsample={resolved['subsample']}, "
                         f"sampling_method={resolved['sampling_method']!r})")
    if train_set.pages_on_disk is not None or p.get("device", "cpu") == "cuda":
        raise ValueError("simulate traces in-memory CPU training (a Dataset in memory, "
                         "device='cpu')")
    p["n_jobs"] = n_jobs
    bst = Booster(p, train_set)
    tracer = TracePages(bst.pages)
    # the Booster, its grower and the grower's learner share one pages object: all three see
    # the tracer (in_core False: the learner over pages grows every tree)
    bst.pages = bst.grower.pages = bst.grower.learner.pages = tracer
    bst.expect_rounds(rounds)
    t0 = time.perf_counter()
    for _ in range(int(rounds)):
        bst.update()
    total = time.perf_counter() - t0
    prof = bst.training_profile(total)
    host = {"histogram": tracer.host["histogram"],
            "split": prof["split"],
            "partition": tracer.host["partition"],
            "update": max(0.0, prof["update"] - tracer.overhead["update"])}
    model = bst.model()
    return Trace(layout_of(train_set), tracer.trees, host, n_jobs, p, model)


__all__ = ["BLOCK_SPANS", "Layout", "Trace", "layout_of", "naive_max_load", "record_trace"]
