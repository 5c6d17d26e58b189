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
values per column, and the merge of exact sketches is exact, however many values they hold
together; then the edges are those of
``hardwood.Dataset(concatenated X)``, and the trees equal single-machine training on the
concatenated data, up to the rounding of the histogram sums (a tree of partial sums instead
of one pass over the rows; the tests find them equal). Past 200,000 rows a Dataset bins a
sample of 200,000 rows, and each partition sketches its share of a sample of that size (another
sample: the edges differ a little, and so may the trees).

**Failures.** Dask retries tasks whose worker died (``distributed.scheduler.allowed-failures``
times). Past that, or on any other failure of the cluster, :func:`train` raises
:class:`DaskTrainingError`, whose ``model`` is the last complete model (every round done);
``train(..., init_model=err.model, num_boost_round=rounds left)`` continues from it, and the
result equals the uninterrupted training.

**Forests** (:class:`DaskRandomForestClassifier`, :class:`DaskRandomForestRegressor`) run
tree-parallel when the data fit on every worker, and in histogram mode otherwise
(``train/forest_dask.py``); both give the single-machine forest.

**Limits.** Numeric features only; objectives whose gradients are per row (not ranking, not
``reg:absoluteerror``'s leaf refit). The labels (and weights) are gathered on the client
(8 bytes a row: the base score and the label checks need them), and the Booster there keeps
its margin array (filled from the workers only when the training set is evaluated);
validation sets are gathered there too, unless a set is the training data itself. The
scheduler keeps the recipe of every task a live result depends on, so that a lost partition
can be recomputed: a worker lost late in a long training replays that partition's rounds
(no checkpoints yet). Each level costs two scheduler round trips (the partition step, whose
row counts the learner needs to pick the smaller children, and the histogram step), so small
data or many workers are bound by Dask's latency (``benchmarks/README.md``, "Dask").
"""
from __future__ import annotations

import uuid

import numpy as np
from sklearn.utils import check_random_state

from .backends.dask import (DaskPages, bin_part, part_length, sketch_part,
                            vector_part)
from .data.binning import SAMPLE_ROWS, BinMapper
from .data.convert import to_float_matrix, to_vector
from .data.dataset import Dataset, start_margins
from .forest import RandomForestClassifier, RandomForestRegressor
from .model.model import Model
from .objectives import class_scales, names as objective_names, objective_class
from .sklearn import (GBDTClassifier, GBDTRegressor, metric_list, objective_for,
                      both_classes)
from .train.booster import Booster
from .train.callback import TrainingCallback
from .train.engine import train_booster
from .train.forest import Forest
from .train.forest_dask import DaskForestGrower
from .train.forest_grower import GrowData
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


def _aligned(client, X, y, weight, tag):
    """(FeatureInfo, X's partition futures, float64 label and weight futures (weights: None),
    the partitions' row counts): X, y and weight checked to have the same partitions."""
    info = _meta_info(X)
    xs, known_x = _delayed_parts(X, "X", True)
    ys, known_y = _delayed_parts(y, "y", False)
    _check_aligned("y", len(xs), len(ys), known_x, known_y)
    ws, known_w = (None, None) if weight is None else _delayed_parts(weight, "weight", False)
    if ws is not None:
        _check_aligned("weight", len(xs), len(ws), known_x, known_w)
    xf, yf = client.compute(xs), client.compute(ys)
    wf = client.compute(ws) if ws is not None else None

    def lengths(futs, name):
        return client.gather([client.submit(part_length, f, key=f"hardwood-len{name}-{tag}-{p}")
                              for p, f in enumerate(futs)])

    sizes = lengths(xf, "X")
    for name, futs in (("y", yf), ("weight", wf)):
        if futs is None:
            continue
        for p, (a, b) in enumerate(zip(sizes, lengths(futs, name))):
            if a != b:
                raise ValueError(f"X and {name} do not align: partition {p} of X has {a} "
                                 f"rows, {name}'s has {b}; give them the same partitions")

    def vectors(futs, name):
        return [client.submit(vector_part, f, n, f"{name} partition {p}",
                              key=f"hardwood-{name}-{tag}-{p}")
                for p, (f, n) in enumerate(zip(futs, sizes))]

    return info, xf, vectors(yf, "y"), None if wf is None else vectors(wf, "weight"), sizes


class _Partitioned:
    """The training data on the workers: binned partitions, labels and weights as futures,
    and the Dataset shell (labels, weights, bins) the Booster needs."""

    def __init__(self, client, X, y, weight, max_bin, sketch_size, tag, aligned=None):
        info, xf, self.labels, self.weights, sizes = (aligned if aligned is not None else
                                                      _aligned(client, X, y, weight, tag))
        P = len(xf)
        wf = self.weights or [None] * P
        y_host = np.concatenate(client.gather(self.labels)) if P else np.zeros(0)
        w_host = None if self.weights is None else np.concatenate(client.gather(self.weights))
        if y_host.size == 0:
            raise ValueError("X has no rows")
        y_host = to_vector(y_host, y_host.size, "label")  # NaN or inf: refused, as a Dataset does
        if w_host is not None:
            if np.any(w_host < 0) or not np.all(np.isfinite(w_host)):
                raise ValueError("weight must be finite and non-negative")
            if not np.any(w_host > 0):
                raise ValueError("weight is zero for every row")
        # pass 1: sketches where the partitions live, merged on the client in partition order;
        # past SAMPLE_ROWS rows (where a Dataset bins a sample) each partition sketches its
        # share of a sample of that size
        n = int(sum(sizes))
        take = [None if n <= SAMPLE_ROWS else -(-SAMPLE_ROWS * int(s) // n) for s in sizes]
        sk = client.gather([client.submit(sketch_part, xf[p], wf[p], info, int(sketch_size), p,
                                          take[p], key=f"hardwood-sketch-{tag}-{p}")
                            for p in range(P)])
        merged = sk[0]
        for more in sk[1:]:
            for a, b in zip(merged, more):
                a.merge(b)
        bm = BinMapper(max_bin=max_bin).fit_sketches(merged)
        # pass 2: each partition binned where it lives (the raw partitions are then released;
        # the scheduler keeps their recipe, to redo them if a worker dies)
        self.parts = [client.submit(bin_part, xf[p], bm, info, p, key=f"hardwood-bins-{tag}-{p}")
                      for p in range(P)]
        del xf
        ds = Dataset.__new__(Dataset)
        ds.info, ds.n_rows, ds.n_features = info, int(y_host.size), len(info.names)
        ds.label, ds.weight, ds.group = y_host, w_host, None
        ds.bin_mapper, ds.max_bin = bm, bm.max_bin
        ds.bins_row = ds.bins_col = ds.reference = None
        ds.sketch_error = max((s.edge_error_bound() for s in merged), default=0.0)
        self.dataset, self.sizes = ds, sizes

    def release(self):
        self.parts, self.labels, self.weights = [], [], None


def _valid_dataset(client, pair, train_set, X, y, name, weight=None):
    """A validation pair (X, y[, weight]) as an in-memory Dataset over the training bins
    (gathered on the client), or the training set itself: the training data with its own
    weights (``weight``; an unweighted pair of weighted training data was scored with the
    training weights)."""
    if not isinstance(pair, (tuple, list)) or len(pair) not in (2, 3, 4):
        raise TypeError(f"valid set {name!r} must be an (X, y), (X, y, weight) or (X, y, "
                        "weight, base_margin) tuple")
    Xv, yv = pair[0], pair[1]
    wv = pair[2] if len(pair) >= 3 else None
    mv = pair[3] if len(pair) == 4 else None
    if Xv is X and yv is y and wv is weight and mv is None:
        return train_set
    Xv, yv, wv, mv = _on_client(client, Xv, yv, wv, mv)
    return Dataset(Xv, np.asarray(yv).reshape(-1), weight=wv, base_margin=mv,
                   reference=train_set)


def _on_client(client, *values):
    """``values`` gathered on the client where they are Dask collections (a frame or series
    as pandas'), in one computation, the others as they are."""
    lazy = [v for v in values if v is not None and hasattr(v, "dask")]
    got = iter(client.gather(client.compute(lazy)) if lazy else ())
    return [next(got) if v is not None and hasattr(v, "dask") else v for v in values]


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
          init_model=None, sketch_size=2048, base_margin=None) -> Model:
    """Train a gradient-boosted model on a Dask cluster; returns a :class:`hardwood.Model`.

    ``params`` as :func:`hardwood.train`. ``X``: a 2-d ``dask.array`` or a
    ``dask.dataframe.DataFrame``; ``y`` (and ``weight``): a 1-d ``dask.array`` or a
    ``dask.dataframe.Series``, with X's partitions (same count, same rows each).
    ``valid_sets``: ``(X, y)``, ``(X, y, weight)`` or ``(X, y, weight, base_margin)`` tuples
    (Dask or in-memory); a set that is ``(X, y)`` itself is scored from the workers'
    margins. ``base_margin``: the rows' starting margins (a Dask or in-memory array in X's
    row order), as ``hardwood.Dataset(base_margin=)`` takes them; they are gathered on the
    client, as the labels are. ``init_model``: continue
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
    last = _LastModel()
    held = []  # what holds this training's futures
    try:
        data = _Partitioned(client, X, y, weight, int(p["max_bin"] or 256), sketch_size, tag)
        held.append(data)
        ds = data.dataset
        if base_margin is not None:  # (the Booster sends each partition its slice)
            ds.base_margin = start_margins(_on_client(client, base_margin)[0], ds.n_rows,
                                           "base_margin")
        if p["is_unbalance"]:  # the class counts of all the labels, not of a partition's
            p["class_scale"] = class_scales(ds.label, p["scale_pos_weight"], True)
            params = dict(params or {}, class_scale=p["class_scale"])
        pages = DaskPages(client, data.parts, data.labels, data.weights, data.sizes,
                          ds.bin_mapper.offsets, tag)
        held.append(pages)
        pages.margin_objectives = _worker_objectives()
        pages.params = p
        if isinstance(valid_sets, tuple) and len(valid_sets) in (2, 3) and not isinstance(
                valid_sets[0], (tuple, list)):
            valid_sets = [valid_sets]
        if isinstance(valid_names, str):
            valid_names = [valid_names]
        valid_names = list(valid_names or [])
        vs = [_valid_dataset(client, pair, ds, X, y,
                             valid_names[i] if i < len(valid_names) else f"valid_{i}",
                             weight)
              for i, pair in enumerate(valid_sets or [])]
        if not valid_names:
            valid_names = ["train" if v is ds else f"valid_{i}" for i, v in enumerate(vs)]
        bst = Booster(params, ds, vs, valid_names, init_model=init_model, pages=pages)
        last.model = bst.model() if bst.trees else None
        return train_booster(bst, int(num_boost_round), early_stopping_rounds,
                             list(callbacks or []) + [last], verbose_eval)
    except Exception as e:
        if not _cluster_failure(e):
            raise
        # nothing may keep this training's futures alive (a key the scheduler marked as
        # failed stays so while a future holds it, and a retry would meet it): drop them,
        # and the cause's traceback (its frames hold some)
        for h in held:
            h.release()
        e.__traceback__ = None
        model = last.model
        done = 0 if model is None else len(model.trees) // max(model.n_outputs, 1)
        raise DaskTrainingError(
            f"hardwood.dask.train failed on the cluster ({type(e).__name__}: {e}); the last "
            f"complete model ({done} rounds) is this error's .model: continue with "
            "hardwood.dask.train(..., init_model=err.model)", model) from e
    finally:
        for h in held:
            h.release()


# -- prediction ------------------------------------------------------------------------------
def _predict_block(X, margin, model, output):
    """One block's predictions; ``margin``: its rows' starting margins, or None."""
    # (an empty partition too: Model.predict gives 0 rows of the right width)
    if margin is not None:
        margin = np.asarray(margin, dtype=np.float64)
        if margin.shape[0] != X.shape[0]:
            raise ValueError(f"a partition of base_margin has {margin.shape[0]} rows where "
                             f"X's has {X.shape[0]}: give base_margin X's partitions")
        if margin.shape[0] == 0:
            margin = None
    return np.asarray(model.predict(X, output=output, base_margin=margin), dtype=np.float64)


def _margin_blocks(base_margin, X, K):
    """``base_margin`` as a Dask array of X's row blocks, (rows, K) or (rows,) for one
    output, its columns in one block."""
    import dask.array as da

    if not hasattr(base_margin, "dask"):
        base_margin = np.asarray(base_margin, dtype=np.float64)
    elif _kind(base_margin, "base_margin") != "array":
        raise ValueError("base_margin for a Dask array must be a Dask or in-memory array")
    n = X.shape[0]
    if not np.isnan(n) and base_margin.shape[0] != n:
        raise ValueError(f"base_margin has {base_margin.shape[0]} rows for X's {n}")
    if base_margin.ndim == 1:
        base_margin = base_margin[:, None]
    if base_margin.ndim != 2:
        raise ValueError(f"base_margin must be 1- or 2-dimensional, got {base_margin.ndim}")
    if not hasattr(base_margin, "dask"):
        return da.from_array(base_margin, chunks=(X.chunks[0], -1))
    return base_margin.rechunk((X.chunks[0], -1))


def _predict_frame(df, model, output, margin=None):
    import pandas as pd

    out = _predict_block(df, margin, model, output)
    if out.ndim == 1:
        return pd.Series(out, index=df.index, name="prediction")
    return pd.DataFrame(out, index=df.index, columns=[f"output_{k}" for k in range(out.shape[1])])


def predict(client, model, X, output="value", base_margin=None):
    """The model's predictions for a Dask collection, lazily: a ``dask.array`` (one value
    per row, or (rows, outputs) for several outputs) for an array, a ``dask.dataframe``
    Series (or DataFrame) with X's index for a DataFrame. ``output``: 'value' or 'raw' (see
    ``Model.predict``). ``base_margin``: the rows' starting margins, as
    ``Model.predict(base_margin=)`` takes them: a Dask array (or an in-memory one) for an
    array X, a Dask Series or DataFrame of X's partitions for a DataFrame. The model travels
    once per worker, as one key of the graph; each partition is predicted where it lives.
    ``client`` is checked only (pass None for the default client)."""
    import dask

    _client(client)
    if not isinstance(model, Model):
        raise TypeError(f"model must be a hardwood.Model, got {type(model).__name__}")
    if output not in ("value", "raw"):
        raise ValueError(f"output must be 'value' or 'raw', got {output!r}")
    K = model.n_outputs
    m = dask.delayed(model, name=f"hardwood-model-{uuid.uuid4().hex[:12]}")
    kind = _kind(X, "X")
    if kind == "array" and X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional, got {X.ndim} dimensions")
    d = X.shape[1] if kind == "array" else len(getattr(X, "columns", ()))
    if not np.isnan(d) and int(d) != model.n_features:  # now, not in a worker's traceback
        raise ValueError(f"X has {int(d)} features, but the model/training data has "
                         f"{model.n_features}")
    if kind == "array":
        if X.numblocks[1] > 1:
            X = X.rechunk({1: -1})
        shape = dict(drop_axis=1, meta=np.zeros(0)) if K == 1 else dict(
            chunks=(X.chunks[0], (K,)), meta=np.zeros((0, K)))
        if base_margin is None:
            return X.map_blocks(_predict_block, None, m, output, dtype=np.float64, **shape)
        import dask.array as da

        return da.map_blocks(_predict_block, X, _margin_blocks(base_margin, X, K), m, output,
                             dtype=np.float64, **shape)
    import pandas as pd

    meta = (pd.Series([], dtype=np.float64, name="prediction") if K == 1 else
            pd.DataFrame({f"output_{k}": pd.Series([], dtype=np.float64) for k in range(K)}))
    if base_margin is None:
        return X.map_partitions(_predict_frame, m, output, meta=meta)
    if _kind(base_margin, "base_margin") != "frame" or (
            base_margin.npartitions != X.npartitions):
        raise ValueError("base_margin for a Dask DataFrame must be a Dask Series or "
                         f"DataFrame of its {X.npartitions} partitions")
    return X.map_partitions(_predict_frame, m, output, base_margin, meta=meta,
                            align_dataframes=False)


# -- estimators ------------------------------------------------------------------------------
def _unique_labels(y, what="y"):
    """The sorted distinct labels of a Dask array or Series (computed); a missing label (NaN)
    is an error, as in scikit-learn (it became a class of its own)."""
    import dask.array as da

    if _kind(y, what) == "array":
        labels = np.asarray(da.unique(y.ravel()).compute())
    else:
        y = _label_series(y)
        labels = np.sort(np.asarray(y.unique().compute()))
    if labels.dtype.kind in "fc" and np.isnan(labels).any():
        raise ValueError(f"{what} contains NaN: a label is missing")
    return labels


def _label_series(y):
    """A Dask DataFrame of one label column as its Series; a Series as it is (newer Dask
    Series have a ``columns`` attribute too: taking ``y[y.columns[0]]`` of one crashed)."""
    if getattr(y, "ndim", 1) == 2:
        return y[y.columns[0]]
    return y


def _encode(y, classes):
    """Labels -> float codes 0..K-1 (lazily, partition by partition)."""
    if _kind(y, "y") == "array":
        return y.ravel().map_blocks(lambda b: np.searchsorted(classes, b).astype(np.float64),
                                    dtype=np.float64)
    import pandas as pd

    y = _label_series(y)
    return y.map_partitions(lambda s: pd.Series(np.searchsorted(classes, s.to_numpy())
                                                .astype(np.float64), index=s.index),
                            meta=pd.Series([], dtype=np.float64))


def _as_array(pred):
    """A lazy prediction as a dask.array (a DataFrame's: row counts unknown)."""
    import dask.array as da

    return pred if isinstance(pred, da.Array) else pred.to_dask_array()


def _set_features(est, X):
    """``n_features_in_``, and ``feature_names_in_`` for a DataFrame of string column names
    (scikit-learn's convention)."""
    if _kind(X, "X") == "array":
        est.n_features_in_ = int(X.shape[1])
        names = None
    else:
        est.n_features_in_ = len(X.columns)
        names = list(X.columns)
    if names is not None and all(isinstance(c, str) for c in names):
        est.feature_names_in_ = np.asarray(names, dtype=object)
    elif hasattr(est, "feature_names_in_"):
        del est.feature_names_in_


class _ClientNotPickled:
    """A fitted Dask estimator pickles without its ``client`` (a live connection: pickling
    failed on it), as XGBoost's Dask estimators do; the unpickled one uses Dask's default
    client until ``client`` is set again."""

    def __getstate__(self):
        state = dict(super().__getstate__())  # (a copy: it may be the instance's __dict__)
        state.pop("client", None)
        return state


class DaskGBDTRegressor(_ClientNotPickled, GBDTRegressor):
    """:class:`hardwood.GBDTRegressor` trained with :func:`train` on Dask collections;
    ``predict`` returns a lazy Dask collection. The client: the attribute ``client``
    (set it after construction), else Dask's default client. Rows of ``sample_weight`` 0
    stay, as in :func:`train` (``GBDTRegressor`` leaves them out before binning): without
    row sampling the two estimators' models are equal, with ``subsample`` or GOSS the draws
    differ, and so do the models (up to 0.98 apart in session 21's probe)."""

    client = None

    def fit(self, X, y, sample_weight=None, eval_set=None, verbose=False, base_margin=None):
        """``base_margin``: the rows' starting margins, as :func:`train` takes them."""
        objective = _dask_objective(self, self.objective or "reg:squarederror", ("regression",))
        return self._dask_fit(X, y, sample_weight, eval_set, verbose, objective, {},
                              base_margin)

    def _dask_fit(self, X, y, sample_weight, eval_set, verbose, objective, extra,
                  base_margin=None):
        _check_dask_estimator_params(self)
        params = self._train_params(objective)
        if self.early_stopping_rounds is not None and not eval_set:  # (as GBDTRegressor's;
            # train's own message named its valid_sets, which fit does not take)
            raise ValueError("early_stopping_rounds needs a validation set: pass eval_set to fit")
        params.update(extra)
        valid = [] if eval_set is None else list(eval_set)
        model = train(self.client, params, X, y, weight=sample_weight,
                      num_boost_round=int(self.n_estimators), valid_sets=valid,
                      valid_names=[f"validation_{i}" for i in range(len(valid))],
                      early_stopping_rounds=self.early_stopping_rounds,
                      verbose_eval=verbose, base_margin=base_margin)
        self.model_ = model
        self.evals_result_ = model.evals_result
        self.best_iteration_ = (model.best_iteration
                                if self.early_stopping_rounds is not None else None)
        self.best_score_ = (model.best_score
                            if self.early_stopping_rounds is not None else None)
        _set_features(self, X)
        return self

    def predict(self, X, base_margin=None):
        """Predicted values, lazily (``base_margin``: as :func:`predict` takes it)."""
        return predict(self.client, self.model_, X, base_margin=base_margin)

    def score(self, X, y, sample_weight=None):
        """R² of the predictions, computed (scikit-learn's score on the lazy arrays failed
        on a dask DataFrame, whose row counts are unknown)."""
        from sklearn.metrics import r2_score

        return float(r2_score(_computed(y), _computed(self.predict(X)),
                              sample_weight=None if sample_weight is None
                              else _computed(sample_weight)))

class DaskGBDTClassifier(_ClientNotPickled, GBDTClassifier):
    """:class:`hardwood.GBDTClassifier` trained with :func:`train` on Dask collections;
    ``predict`` and ``predict_proba`` return lazy Dask arrays. The labels' classes are
    computed first (one pass over y)."""

    client = None
    _dask_fit = DaskGBDTRegressor._dask_fit

    def fit(self, X, y, sample_weight=None, eval_set=None, verbose=False, base_margin=None):
        """``base_margin``: the rows' starting margins, as :func:`train` takes them."""
        classes = _unique_labels(y)
        if classes.size < 2:
            raise ValueError(f"{type(self).__name__} needs at least 2 classes, y has "
                             f"{classes.size}")
        self.classes_, self.n_classes_ = classes, int(classes.size)
        if self.objective is None:
            objective = "binary:logistic" if classes.size == 2 else "multi:softprob"
        else:  # multi:softmax's model predicts the class: softprob's trees give predict_proba
            objective = "multi:softprob" if self.objective == "multi:softmax" else self.objective
        task = objective_class(_dask_objective(self, objective, ("binary", "multiclass"))).task
        if task == "binary" and classes.size > 2:
            raise ValueError(f"objective={objective!r} is for two classes, but y has "
                             f"{classes.size} ({classes.tolist()[:10]}); use "
                             "objective='multi:softprob', or leave objective unset")
        extra = {"num_class": int(classes.size)} if task == "multiclass" else {}
        valid = None
        if eval_set is not None:
            valid = []
            for i, (Xv, yv) in enumerate(eval_set):
                # an unseen label was coded as its neighbour in the sorted classes
                unknown = np.setdiff1d(_unique_labels(yv, f"eval_set {i} y"), classes)
                if unknown.size:
                    raise ValueError(f"eval_set {i} labels {unknown[:5].tolist()} were not seen "
                                     f"in training (classes: {classes.tolist()[:10]})")
                valid.append((Xv, _encode(yv, classes)))
        return self._dask_fit(X, _encode(y, classes), sample_weight, valid, verbose,
                              objective, extra, base_margin)

    def predict_proba(self, X, base_margin=None):
        """Class probabilities (rows, classes), lazily (``base_margin``: as :func:`predict`
        takes it)."""
        p = _as_array(predict(self.client, self.model_, X, base_margin=base_margin))
        if p.ndim == 1:  # block by block: a dask DataFrame's row counts are unknown
            p = p.map_blocks(both_classes, new_axis=1, chunks=(p.chunks[0], (2,)),
                             dtype=p.dtype)
        return p

    def predict(self, X, base_margin=None):
        """The most probable class of each row, lazily."""
        classes = self.classes_
        return self.predict_proba(X, base_margin).map_blocks(
            lambda b: classes[np.argmax(b, axis=1)], drop_axis=1, dtype=classes.dtype)

    def score(self, X, y, sample_weight=None):
        """Accuracy of the predictions, computed (as the regressor's ``score``)."""
        from sklearn.metrics import accuracy_score

        return float(accuracy_score(_computed(y), _computed(self.predict(X)),
                                    sample_weight=None if sample_weight is None
                                    else _computed(sample_weight)))


def _dask_objective(est, objective, tasks):
    """The estimator's objective checked as the in-memory estimators check it; Dask trains
    no objective function."""
    if callable(objective):
        raise ValueError(f"{type(est).__name__} takes no objective function: hardwood.dask "
                         "trains the named objectives (train a custom objective in memory "
                         "with GBDTRegressor or hardwood.train)")
    return objective_for(est, objective, tasks)


def _check_dask_estimator_params(est):
    """What the in-memory estimators take and ``hardwood.dask`` does not: refused by name
    (both were ignored: a categorical column trained as numbers, 3.15 RMSE against 1.11; a
    metric function dropped, early stopping following rmse instead)."""
    if est.categorical_features is not None:
        raise ValueError(f"{type(est).__name__} takes no categorical_features: hardwood.dask "
                         "trains numeric features (code the categories as numbers, or train "
                         "in memory)")
    if any(callable(m) for m in metric_list(est.eval_metric)):
        raise ValueError(f"{type(est).__name__} takes metric names, not functions, as "
                         "eval_metric: hardwood.dask scores the named metrics on the workers")


def _computed(v):
    """A Dask collection computed (or an in-memory array) as a numpy array."""
    return np.asarray(v.compute() if hasattr(v, "compute") else v)


def _fit_forest_share(cls, params, X, y, w, tree_ids):
    """A worker's share of a forest: the trees ``tree_ids`` over the whole data."""
    est = cls(**params)
    est._tree_ids = list(tree_ids)
    return est.fit(X, y, sample_weight=w)


def _concat(*parts):
    return np.concatenate(parts) if parts else np.zeros(0)


def forest_mode(client, n_rows, n_features):
    """'tree' (every worker holds the whole data and grows its share of the trees) when the
    data, raw (float64) and binned (row- and column-major bytes), fit in a quarter of the
    smallest worker's memory limit; 'histogram' otherwise."""
    need = n_rows * n_features * (8 + 2) + n_rows * 16
    limits = [w.get("memory_limit") or 0 for w in
              client.scheduler_info()["workers"].values()]
    limit = min(limits) if limits and all(limits) else float("inf")
    return "tree" if need <= limit / 4 else "histogram"


FOREST_MODES = ("auto", "tree", "histogram")


def _forest_fit(self, X, y, sample_weight=None):
    """Fit on Dask collections (see DaskRandomForestClassifier)."""
    client = _client(self.client)
    if self.oob_score or self.warm_start:
        raise NotImplementedError(f"{type(self).__name__}: oob_score and warm_start are "
                                  "not supported on Dask yet")
    if self.mode not in FOREST_MODES:
        raise ValueError(f"mode must be one of {FOREST_MODES}, got {self.mode!r}")
    tag = uuid.uuid4().hex[:12]
    if self._classify:
        classes = _unique_labels(y)
        y = _encode(y, classes)
        self.classes_, self.n_classes_ = classes, int(classes.size)
    aligned = _aligned(client, X, y, sample_weight, tag)
    info, xf, yf, wf, sizes = aligned
    n, d = int(sum(sizes)), len(info.names)
    self.mode_ = forest_mode(client, n, d) if self.mode == "auto" else self.mode
    if self.mode_ == "histogram":
        return _forest_fit_histogram(self, client, X, aligned, tag)
    params = self.get_params()
    params.pop("client", None)
    params.pop("mode", None)
    rs = params["random_state"]
    if not isinstance(rs, (int, np.integer)):  # one seed for every worker's share (a
        # RandomState is drawn from, as scikit-learn's: np.random.RandomState(it) failed)
        params["random_state"] = int(check_random_state(rs).randint(2**31 - 1))
    params["n_jobs"] = 1 if params["n_jobs"] is None else params["n_jobs"]
    Xall = client.submit(_concat, *xf, key=f"hardwood-forest-X-{tag}")
    yall = client.submit(_concat, *yf, key=f"hardwood-forest-y-{tag}")
    wall = None if wf is None else client.submit(_concat, *wf, key=f"hardwood-forest-w-{tag}")
    workers = sorted(client.scheduler_info()["workers"])
    shares = [s for s in np.array_split(np.arange(self.n_estimators), len(workers))
              if s.size]
    base = RandomForestClassifier if self._classify else RandomForestRegressor
    fitted = client.gather([
        client.submit(_fit_forest_share, base, params, Xall, yall, wall, s.tolist(),
                      key=f"hardwood-forest-share-{tag}-{i}",
                      workers=[workers[i % len(workers)]], allow_other_workers=True)
        for i, s in enumerate(shares)])
    first = fitted[0]
    trees = [t for f in fitted for t in f.forest_.trees]
    # the shares were fitted on bare matrices: the column names are the collection's
    forest = Forest(trees, n_outputs=first.forest_.n_outputs, is_reg=not self._classify,
                    info=info)
    for k, v in first.__dict__.items():
        if k.endswith("_") and not k.startswith("__") and k != "mode_":
            setattr(self, k, v)
    self.forest_ = forest
    _set_features(self, X)
    self.feature_importances_ = forest.feature_importances()
    self._seed = first._seed
    if self._classify:  # the shares were fitted on the class codes: their classes_ are codes
        self.classes_, self.n_classes_ = classes, int(classes.size)
    return self


def _forest_fit_histogram(self, client, X, aligned, tag):
    """Histogram mode (``train/forest_dask.py``): the partitions are binned where they live
    and never move; each level's large nodes are split from histograms summed over them, and
    each small node's rows are gathered to grow its subtree."""
    if self.max_leaf_nodes is not None:
        raise NotImplementedError(f"{type(self).__name__}: max_leaf_nodes (best-first "
                                  "growth) is not supported in histogram mode yet")
    if self.device != "cpu":
        raise ValueError("hardwood.dask grows forests on the workers' CPUs; leave device unset")
    data = _Partitioned(client, None, None, None, int(self.max_bin), 2048, tag, aligned=aligned)
    try:
        ds = data.dataset
        n, d = ds.n_rows, ds.n_features
        mtry = self._check_params(d)
        is_reg = not self._classify
        y_host, w_host = ds.label, ds.weight
        if self._classify:
            y_enc = y_host.astype(np.int64)
            row_cw, subsample = self.row_class_weights(y_enc, w_host)
            n_out = self.n_classes_
        else:
            y_enc, row_cw, subsample, n_out = None, None, False, 1
        plan = self.sampling_plan(n, w_host, row_cw, subsample, y_enc, n_out, is_reg)
        rs = self.random_state
        self._seed = (int(rs) if isinstance(rs, (int, np.integer)) else
                      int(check_random_state(rs).randint(np.iinfo(np.int32).max)))
        tp = self._tree_params(n, mtry)
        bm = ds.bin_mapper
        meta = GrowData(np.zeros((d, 0), np.uint8), np.zeros((0, d), np.uint8),
                        np.ascontiguousarray(bm.missing_bin, dtype=np.int64), bm.edges_flat,
                        bm.edge_offsets, bm.is_categorical, is_reg, n_out,
                        np.zeros(0, np.int64), np.zeros(0))
        grower = DaskForestGrower(client, data.parts, data.labels, data.sizes, meta, tp, tag,
                                  small_rows=getattr(self, "_small_rows", None))
        cuts = grower.lo
        uniform = plan.bootstrap and plan.row_weight is None and not plan.balanced_subsample
        ones = not plan.bootstrap and plan.row_weight is None and not plan.balanced_subsample
        trees = []
        step = grower.batch_size(self.n_estimators)
        for first in range(0, self.n_estimators, step):
            ids = range(first, min(first + step, self.n_estimators))
            if uniform:
                slots, weights = [(self._seed, t, plan.n_boot) for t in ids], None
            elif ones:
                slots, weights = [(self._seed, t, "ones") for t in ids], None
            else:  # weighted draws: the client draws by the plan, each partition gets its slice
                slots, weights = [(self._seed, t, "given") for t in ids], []
                for t in ids:
                    w = plan.tree_weights(self._seed, t)[1]
                    weights.append([w[cuts[p]:cuts[p + 1]] for p in range(len(data.parts))])
            trees += grower.grow(slots, weights)
        self.forest_ = Forest(trees, n_outputs=n_out, is_reg=is_reg, info=ds.info)
        _set_features(self, X)
        self.feature_importances_ = self.forest_.feature_importances()
        self.dask_log_ = grower.log
        return self
    finally:
        data.release()


class DaskRandomForestClassifier(_ClientNotPickled, RandomForestClassifier):
    """:class:`hardwood.RandomForestClassifier` on Dask collections; the forest equals the
    single-machine forest on the concatenated data with the same ``random_state``, tree for
    tree (with the same bins: see the module docstring). Set ``client`` (or use the default
    client) and ``mode`` as attributes; ``mode_`` is the mode used:

    * ``'tree'``: the data goes whole to every worker and each grows its share of the trees;
    * ``'histogram'``: the partitions never move (``train/forest_dask.py``): each level's
      large nodes split from histograms summed over the partitions, small nodes' rows are
      gathered to grow their subtrees; ``dask_log_`` has one entry per round trip;
    * ``'auto'`` (default): tree-parallel when the data fit in a quarter of the smallest
      worker's memory (:func:`forest_mode`), histogram mode otherwise.

    Not on Dask yet: ``oob_score``, ``warm_start``; in histogram mode ``max_leaf_nodes``.
    ``predict``/``predict_proba`` return lazy Dask arrays."""

    client = None
    mode = "auto"
    _classify = True
    fit = _forest_fit

    def predict_proba(self, X):
        p = _as_array(predict(self.client, self.model_, X))
        p = p.reshape((p.shape[0], self.n_classes_)) if p.ndim == 1 else p
        return p  # (clipped to [0, 1] by multi:proba's transform)

    def predict(self, X):
        classes = self.classes_
        return self.predict_proba(X).map_blocks(
            lambda b: classes[np.argmax(b, axis=1)], drop_axis=1, dtype=classes.dtype)

class DaskRandomForestRegressor(_ClientNotPickled, RandomForestRegressor):
    """:class:`hardwood.RandomForestRegressor` on Dask collections (see
    :class:`DaskRandomForestClassifier`)."""

    client = None
    mode = "auto"
    _classify = False
    fit = _forest_fit

    def predict(self, X):
        return _as_array(predict(self.client, self.model_, X))
