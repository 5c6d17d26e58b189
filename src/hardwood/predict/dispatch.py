"""The names ``hardwood.predict.dispatch`` has always offered, kept for code that imports
them from here. The runtimes live in modules of their own and register themselves
(``predict.base``: the base class, the registry and :func:`compile`; ``predict.auto``: the
cost model behind ``runtime='auto'``)."""
from __future__ import annotations

from .auto import (PATENTED, AutoRuntime, ModelShape, choose, costs)  # noqa: F401
from .base import (OUTPUTS, REGISTRY, SERIAL_ROWS, CompiledModel, compile,  # noqa: F401
                   runtime_names)
from .codegen_runtime import CodegenRuntime  # noqa: F401
from .cuda_runtime import CudaRuntime  # noqa: F401
from .naive_runtime import NaiveRuntime  # noqa: F401
from .pred_runtime import (DIRECT_FACTOR, V_TABLE, V_TABLE_FEATURES, WALK_PAD_FACTOR,  # noqa: F401
                           WALK_V, PredRuntime, VPredRuntime, tuned_v)
from .quickscorer_runtime import QuickScorerRuntime  # noqa: F401
from .struct_runtime import StructPlusRuntime, StructRuntime  # noqa: F401

RUNTIMES = runtime_names()
