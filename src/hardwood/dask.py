"""``hardwood.dask``: training and prediction on a Dask cluster (issue 17).

    model = hardwood.dask.train(client, params, X, y, num_boost_round=100)
    pred = hardwood.dask.predict(client, model, X)       # lazy: a Dask collection

``X``, ``y`` (and ``weight``) are ``dask.array`` or ``dask.dataframe`` collections with the
same partitions. The model is an ordinary :class:`hardwood.Model`.

How it runs (``backends/dask.py``): each partition is a page of the tree learner, on the
worker that holds it. Pass 1 sketches each partition's columns there (``data/sketch.py``); the
client merges the sketches in partition order and broadcasts the bin edges; each partition is
binned where it lives and never moves. Every level of every tree: the partitions' histograms
(①) are summed by a binary tree of Dask tasks of fixed shape, the client finds the splits (②)
and the partitions split their rows (③); the margins, g and h stay on the workers. Everything
travels through Dask's task graph: no port, socket or collective of hardwood's own, so a
worker that dies is a worker Dask replaces, and its lost state is recomputed from the lineage
(the same floats: every task is a pure function).

**Bins.** A partition's sketch is exact while it holds at most ``sketch_size + 1`` distinct
values per column (and so is the merge); then the edges are those of
``hardwood.Dataset(concatenated X)`` (which bins a 200,000-row sample beyond that size), and
the trees equal single-machine training on the concatenated data, up to the rounding of the
histogram sums (a tree of partial sums instead of one pass over the rows).

**Failures.** Dask retries tasks whose worker died (``distributed.scheduler.allowed-failures``
times). Past that, or on any other failure of the cluster, :func:`train` raises
:class:`DaskTrainingError`, whose ``model`` is the last complete model (every round done);
``train(..., init_model=err.model, num_boost_round=rounds left)`` continues from it, and the
result equals the uninterrupted training.

**Limits.** Numeric features only; objectives whose gradients are per row (not ranking, not
``reg:absoluteerror``'s leaf refit). The labels (and weights) are gathered on the client
(8 bytes a row: the base score and the label checks need them); validation sets are gathered
there too, unless a set is the training data itself (then its margins are).
"""
from __future__ import annotations

import threading
import uuid

import numpy as np

from .backends.dask import (DaskPages, bin_part, part_length, sketch_part,
                            vector_part)
from .data.binning import BinMapper
from .data.convert import to_float_matrix
from .data.dataset import Dataset
from .model.model import Model
from .objectives import names as objective_names, objective_class
from .train.booster import Booster
from .train.callback import TrainingCallback
from .train.engine import train_booster
from .train.params import resolve_params

__all__ = ["train", "predict", "DaskTrainingError", "DaskGBDTRegressor", "DaskGBDTClassifier",
           "DaskRandomForestClassifier", "DaskRandomForestRegressor"]


class DaskTrainingError(RuntimeError):
    """Training failed on the cluster; ``model`` is the last complete model (or None when no
    round was complete), to continue with ``train(..., init_model=err.model)``."""

    def __init__(self, message, model):
        super().__init__(message)
        self.model = model


def _worker_objectives():
    """The objectives whose gradients the workers compute, row by row."""
    out = set()
    for name in objective_names(trainable=True):
        cls = objective_class(name)
        if cls.task != "ranking" and not cls.refit_leaves:
            out.add(cls.name)
    return frozenset(out)


# -- collections -> partitions ---------------------------------------------------------------
def _kind(obj, what):
    import dask.array as da
    import dask.dataframe as dd

    if isinstance(obj, da.Array):
        return "array"
    if isinstance(obj, (dd.DataFrame, dd.Series)):
        return "frame"
    raise TypeError(f"{what} must be a dask.array or dask.dataframe collection, got "
                    f"{type(obj).__name__}")


def _delayed_parts(obj, what, matrix):
    """(one Delayed per row partition, the known row count of each or None)."""
    if _kind(obj, what) == "array":
        if matrix:
            if obj.ndim != 2:
                raise ValueError(f"{what} must be 2-dimensional, got {obj.ndim} dimensions")
            if obj.numblocks[1] > 1:
                obj = obj.rechunk({1: -1})
            parts = list(obj.to_delayed()[:, 0])
        else:
            if obj.ndim == 2 and obj.shape[1] == 1:
                obj = obj[:, 0]
            if obj.ndim != 1:
                raise ValueError(f"{what} must be 1-dimensional, got shape {obj.shape}")
            parts = list(obj.to_delayed())
        sizes = obj.chunks[0]
        known = None if any(np.isnan(s) for s in sizes) else [int(s) for s in sizes]
        return parts, known
    if not matrix and hasattr(obj, "columns"):
        if len(obj.columns) != 1:
            raise ValueError(f"{what} must be one column, got {len(obj.columns)}")
    return list(obj.to_delayed()), None


def _meta_info(X):
    """The training columns' FeatureInfo, from the collection's empty meta."""
    if _kind(X, "X") == "array":
        meta = np.full((1, X.shape[1]), np.nan)
    else:
        meta = X._meta_nonempty.iloc[:1]
    _, info = to_float_matrix(meta, what="X")
    if np.any(info.is_categorical):
        raise NotImplementedError("hardwood.dask: categorical features are not supported yet; "
                                  "encode them as numbers")
    return info


def _check_aligned(name, n_x, n_v, known_x, known_v):
    if n_v != n_x:
        raise ValueError(f"X and {name} do not align: X has {n_x} partitions, {name} has "
                         f"{n_v}; give them the same partitions (chunks)")
    if known_x is not None and known_v is not None and known_x != known_v:
        p = next(i for i, (a, b) in enumerate(zip(known_x, known_v)) if a != b)
        raise ValueError(f"X and {name} do not align: partition {p} of X has {known_x[p]} "
                         f"rows, {name}'s has {known_v[p]}; give them the same chunks")


class _Partitioned:
    """The training data on the workers: binned partitions, labels and weights as futures,
    and the Dataset shell (labels, weights, bins) the Booster needs."""

    def __init__(self, client, X, y, weight, max_bin, sketch_size, tag):
        info = _meta_info(X)
        xs, known_x = _delayed_parts(X, "X", True)
        ys, known_y = _delayed_parts(y, "y", False)
        _check_aligned("y", len(xs), len(ys), known_x, known_y)
        ws, known_w = (None, None) if weight is None else _delayed_parts(weight, "weight", False)
        if ws is not None:
            _check_aligned("weight", len(xs), len(ws), known_x, known_w)
        P = len(xs)
        xf = client.compute(xs)
        yf = client.compute(ys)
        wf = client.compute(ws) if ws is not None else [None] * P
        sizes = client.gather([client.submit(part_length, f, key=f"hardwood-len-{tag}-{p}")
                               for p, f in enumerate(xf)])
        for name, futs in (("y", yf), ("weight", wf if ws is not None else None)):
            if futs is None:
                continue
            lens = client.gather([client.submit(part_length, f, key=f"hardwood-len{name}-"
                                                f"{tag}-{p}") for p, f in enumerate(futs)])
            for p, (a, b) in enumerate(zip(sizes, lens)):
                if a != b:
                    raise ValueError(f"X and {name} do not align: partition {p} of X has {a} "
                                     f"rows, {name}'s has {b}; give them the same partitions")
        self.labels = [client.submit(vector_part, f, n, f"y partition {p}",
                                     key=f"hardwood-y-{tag}-{p}")
                       for p, (f, n) in enumerate(zip(yf, sizes))]
        self.weights = None if ws is None else [
            client.submit(vector_part, f, n, f"weight partition {p}", key=f"hardwood-w-{tag}-{p}")
            for p, (f, n) in enumerate(zip(wf, sizes))]
        y_host = np.concatenate(client.gather(self.labels)) if P else np.zeros(0)
        w_host = None if ws is None else np.concatenate(client.gather(self.weights))
        if y_host.size == 0:
            raise ValueError("X has no rows")
        if w_host is not None:
            if np.any(w_host < 0) or not np.all(np.isfinite(w_host)):
                raise ValueError("weight must be finite and non-negative")
            if not np.any(w_host > 0):
                raise ValueError("weight is zero for every row")
        # pass 1: sketches where the partitions live, merged on the client in partition order
        sk = client.gather([client.submit(sketch_part, xf[p], wf[p] if ws is not None else None,
                                          info, int(sketch_size), p,
                                          key=f"hardwood-sketch-{tag}-{p}") for p in range(P)])
        merged = sk[0]
        for more in sk[1:]:
            for a, b in zip(merged, more):
                a.merge(b)
        bm = BinMapper(max_bin=max_bin).fit_sketches(merged)
        # pass 2: each partition binned where it lives (the raw partitions are then released;
        # the scheduler keeps their recipe, to redo them if a worker dies)
        self.parts = [client.submit(bin_part, xf[p], bm, info, p, key=f"hardwood-bins-{tag}-{p}")
                      for p in range(P)]
        del xf, yf, wf
        ds = Dataset.__new__(Dataset)
        ds.info, ds.n_rows, ds.n_features = info, int(y_host.size), len(info.names)
        ds.label, ds.weight, ds.group = y_host, w_host, None
        ds.bin_mapper, ds.max_bin = bm, bm.max_bin
        ds.bins_row = ds.bins_col = ds.reference = None
        ds.sketch_error = max((s.error_bound() for s in merged), default=0.0)
        self.dataset, self.sizes = ds, sizes


def _valid_dataset(client, pair, train_set, X, y, name):
    """A validation pair (X, y[, weight]) as an in-memory Dataset over the training bins
    (gathered on the client), or the training set itself."""
    if not isinstance(pair, (tuple, list)) or len(pair) not in (2, 3):
        raise TypeError(f"valid set {name!r} must be an (X, y) or (X, y, weight) tuple")
    Xv, yv = pair[0], pair[1]
    wv = pair[2] if len(pair) == 3 else None
    if Xv is X and yv is y and wv is None:
        return train_set
    got = client.compute([v for v in (Xv, yv, wv) if v is not None and hasattr(v, "dask")])
    got = iter(client.gather(got))
    Xv, yv, wv = [next(got) if v is not None and hasattr(v, "dask") else v for v in (Xv, yv, wv)]
    return Dataset(Xv, np.asarray(yv).reshape(-1), weight=wv, reference=train_set)


class _LastModel(TrainingCallback):
    """Keeps the model of the last complete round."""

    model = None

    def before_training(self, model):
        self.model = model if model.trees else None

    def after_iteration(self, model, epoch, evals_log):
        self.model = model
        return False


def _cluster_failure(e):
    import asyncio
    import concurrent.futures

    if isinstance(e, (asyncio.CancelledError, concurrent.futures.CancelledError, OSError,
                      TimeoutError)):
        return True
    return type(e).__module__.split(".")[0] == "distributed"


def _client(client):
    from distributed import Client

    if client is None:
        from distributed import default_client

        return default_client()
    if not isinstance(client, Client):
        raise TypeError(f"client must be a distributed.Client, got {type(client).__name__}")
    return client


# -- training --------------------------------------------------------------------------------
def train(client, params, X, y, weight=None, num_boost_round=100, valid_sets=(),
          valid_names=(), early_stopping_rounds=None, callbacks=(), verbose_eval=False,
          init_model=None, sketch_size=2048) -> Model:
    """Train a gradient-boosted model on a Dask cluster; returns a :class:`hardwood.Model`.

    ``params`` as :func:`hardwood.train`. ``X``: a 2-d ``dask.array`` or a
    ``dask.dataframe.DataFrame``; ``y`` (and ``weight``): a 1-d ``dask.array`` or a
    ``dask.dataframe.Series``, with X's partitions (same count, same rows each).
    ``valid_sets``: ``(X, y)`` or ``(X, y, weight)`` tuples (Dask or in-memory); a set
    that is ``(X, y)`` itself is scored from the workers' margins. ``init_model``: continue
    from a model (the ``model`` of a :class:`DaskTrainingError`). ``sketch_size``: values
    kept per column by each partition's quantile sketch (see the module docstring).
    Each level's histogram reduction is logged on the ``hardwood.dask`` logger (DEBUG), and
    its totals are in ``model.training_profile`` (``dask_levels``, ``dask_bytes``,
    ``dask_reduce_s``).
    """
    client = _client(client)
    if not isinstance(num_boost_round, (int, np.integer)) or num_boost_round < 1:
        raise ValueError(f"num_boost_round must be a positive integer, got {num_boost_round!r}")
    p = resolve_params(params)
    cls = objective_class(p["objective"])
    if cls.name not in _worker_objectives():
        raise ValueError(f"hardwood.dask does not train objective {p['objective']!r} yet "
                         f"(supported: {sorted(_worker_objectives())})")
    if p["device"] != "cpu" or p["pages"] is not None:
        raise ValueError("hardwood.dask trains on the workers' CPUs; leave device and pages "
                         "unset")
    tag = uuid.uuid4().hex[:12]
    data = _Partitioned(client, X, y, weight, int(p["max_bin"] or 256), sketch_size, tag)
    ds = data.dataset
    pages = DaskPages(client, data.parts, data.labels, data.weights, data.sizes,
                      ds.bin_mapper.offsets, tag)
    pages.margin_objectives = _worker_objectives()
    pages.params = p
    if isinstance(valid_sets, tuple) and len(valid_sets) in (2, 3) and not isinstance(
            valid_sets[0], (tuple, list)):
        valid_sets = [valid_sets]
    if isinstance(valid_names, str):
        valid_names = [valid_names]
    valid_names = list(valid_names or [])
    vs = [_valid_dataset(client, pair, ds, X, y,
                         valid_names[i] if i < len(valid_names) else f"valid_{i}")
          for i, pair in enumerate(valid_sets or [])]
    if not valid_names:
        valid_names = ["train" if v is ds else f"valid_{i}" for i, v in enumerate(vs)]
    last = _LastModel()
    try:
        bst = Booster(params, ds, vs, valid_names, init_model=init_model, pages=pages)
        last.model = bst.model() if bst.trees else None
        return train_booster(bst, int(num_boost_round), early_stopping_rounds,
                             list(callbacks or []) + [last], verbose_eval)
    except Exception as e:
        if not _cluster_failure(e):
            raise
        model = last.model
        done = 0 if model is None else len(model.trees) // max(model.n_outputs, 1)
        raise DaskTrainingError(
            f"hardwood.dask.train failed on the cluster ({type(e).__name__}: {e}); the last "
            f"complete model ({done} rounds) is this error's .model: continue with "
            "hardwood.dask.train(..., init_model=err.model)", model) from e
    finally:
        pages.release()


# -- prediction ------------------------------------------------------------------------------
def _predict_block(X, model, output):
    if X.shape[0] == 0:
        K = model.n_outputs
        return np.zeros((0,) if K == 1 or output == "class" else (0, K))
    return np.asarray(model.predict(X, output=output), dtype=np.float64)


def _predict_frame(df, model, output):
    import pandas as pd

    out = _predict_block(df, model, output)
    if out.ndim == 1:
        return pd.Series(out, index=df.index, name="prediction")
    return pd.DataFrame(out, index=df.index, columns=[f"output_{k}" for k in range(out.shape[1])])


def predict(client, model, X, output="value"):
    """The model's predictions for a Dask collection, lazily: a ``dask.array`` (one value
    per row, or (rows, outputs) for several outputs) for an array, a ``dask.dataframe``
    Series (or DataFrame) with X's index for a DataFrame. ``output``: 'value' or 'raw' (see
    ``Model.predict``). The model travels once per worker, as one key of the graph; each
    partition is predicted where it lives. ``client`` is checked only (pass None for the
    default client)."""
    import dask

    _client(client)
    if not isinstance(model, Model):
        raise TypeError(f"model must be a hardwood.Model, got {type(model).__name__}")
    if output not in ("value", "raw"):
        raise ValueError(f"output must be 'value' or 'raw', got {output!r}")
    K = model.n_outputs
    m = dask.delayed(model, name=f"hardwood-model-{uuid.uuid4().hex[:12]}")
    if _kind(X, "X") == "array":
        if X.ndim != 2:
            raise ValueError(f"X must be 2-dimensional, got {X.ndim} dimensions")
        if X.numblocks[1] > 1:
            X = X.rechunk({1: -1})
        if K == 1:
            return X.map_blocks(_predict_block, m, output, drop_axis=1, dtype=np.float64,
                                meta=np.zeros(0))
        return X.map_blocks(_predict_block, m, output, chunks=(X.chunks[0], (K,)),
                            dtype=np.float64, meta=np.zeros((0, K)))
    import pandas as pd

    meta = (pd.Series([], dtype=np.float64, name="prediction") if K == 1 else
            pd.DataFrame({f"output_{k}": pd.Series([], dtype=np.float64) for k in range(K)}))
    return X.map_partitions(_predict_frame, m, output, meta=meta)
