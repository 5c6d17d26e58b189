"""``hardwood.Model``: a trained tree ensemble, its prediction and its importances."""
from __future__ import annotations

import copy
import numbers
import warnings

import numpy as np

from ..data.convert import FeatureInfo, sparse_row_blocks, to_float_matrix
from ..explain import treeshap
from ..parallel import guard
from ..objectives import OBJECTIVES, outputs_fit, transform_margin
from ..predict.naive import pack, predict_leaf, predict_raw
from .tree import Tree, tree_edits

OUTPUTS = ("value", "raw", "leaf", "contrib", "interaction")
SHAP_OUTPUTS = ("contrib", "interaction")
IMPORTANCE_KINDS = ("gain", "weight", "cover", "total_gain", "total_cover")
COMPILED_KEPT = 8  # compiled layouts Model.predict keeps per model (one per runtime and range)
# rows × trees walked from which Model.predict's default lays the model out for auto:
# about where its walk's saving pays for the layout (2026-11-24, depth 6: 100 trees, 10,000
# rows: the reference walk 30 ms, auto 3 ms + 11 ms to lay out; 60-90 ms in a new process)
AUTO_MIN_WORK = 1 << 20
# paths of at most this many elements (distinct features, and the root's) are explained to
# float rounding by TreeSHAP; a model with longer ones has each row's SHAP values checked
# against its margin (see Model._check_additivity)
SHAP_EXACT_PATH = 40


class _Version(tuple):
    """A model's trees version: objects compared by identity (held, so that an id is never
    reused while the cache lives), lengths, names and bytes by value."""

    def __eq__(self, other):
        return (isinstance(other, _Version) and len(self) == len(other)
                and all(a == b if isinstance(a, (int, str, bytes)) else a is b
                        for a, b in zip(self, other)))

    def __ne__(self, other):
        return not self == other

    __hash__ = None


def _counts_edit(name):
    def method(self, *args, **kwargs):
        self.edits += 1
        return getattr(list, name)(self, *args, **kwargs)

    method.__name__ = name
    return method


class TreeList(list):
    """``Model.trees``: a list that counts its own changes (``edits``), so that the model's
    caches can tell in O(1) that a tree was put in, taken out or replaced (comparing every
    tree at every call cost more than predicting one row)."""

    edits = 0
    __setitem__ = _counts_edit("__setitem__")
    __delitem__ = _counts_edit("__delitem__")
    __iadd__ = _counts_edit("__iadd__")
    __imul__ = _counts_edit("__imul__")
    append = _counts_edit("append")
    extend = _counts_edit("extend")
    insert = _counts_edit("insert")
    pop = _counts_edit("pop")
    remove = _counts_edit("remove")
    clear = _counts_edit("clear")
    sort = _counts_edit("sort")
    reverse = _counts_edit("reverse")


class Model:
    """A tree ensemble: trees, base score per output, objective, and feature metadata.

    ``predict`` uses the first ``best_iteration + 1`` rounds when training stopped early
    (as LightGBM does); pass ``iteration_range`` to choose others.
    """

    def __init__(self, trees, tree_group, base_score, objective, n_outputs, info: FeatureInfo,
                 params=None, best_iteration=None, best_score=None, evals_result=None,
                 training_profile=None):
        self.trees: list[Tree] = TreeList(trees)
        # read-only, as the trees' arrays: the caches know it by identity, and an edit in
        # place (two outputs swapped) left a compiled runtime predicting the old order
        self.tree_group = np.array(tree_group, dtype=np.int32)
        self.tree_group.setflags(write=False)
        self.base_score = np.asarray(base_score, dtype=np.float64).reshape(-1)
        self.objective = objective
        self.n_outputs = int(n_outputs)
        self.info = info
        self.params = dict(params or {})
        self.best_iteration = best_iteration
        self.best_score = best_score
        self.evals_result = evals_result or {}
        self.training_profile = training_profile or {}
        self._packed = None  # (trees version, packed arrays)
        self._compiled = None  # _Layouts: Model.predict's compiled runtimes, for one trees version
        self._shap = None  # (trees version, TreeSHAP's paths and tables)

    def __setattr__(self, name, value):
        if name == "trees" and not isinstance(value, TreeList):
            value = TreeList(value)  # a list assigned anew: its changes counted from here
        if name == "base_score":  # (a plain number or list reached the kernels: TypeError)
            value = np.atleast_1d(np.array(value, dtype=np.float64))
        object.__setattr__(self, name, value)

    # -- basic facts ----------------------------------------------------------------
    @property
    def num_trees(self) -> int:
        return len(self.trees)

    @property
    def trees_per_round(self) -> int:
        """Trees a boosting round adds: one per output, times XGBoost's ``num_parallel_tree``
        for an imported boosted forest."""
        return max(self.n_outputs, 1) * max(int(self.params.get("num_parallel_tree", 1)), 1)

    @property
    def num_boosted_rounds(self) -> int:
        return len(self.trees) // self.trees_per_round

    @property
    def n_features(self) -> int:
        return self.info.n_features

    @property
    def feature_names(self):
        return list(self.info.names)

    def __len__(self):
        return self.num_boosted_rounds

    def __getitem__(self, rounds):
        """A new Model of some of the rounds, as XGBoost's ``booster[start:stop:step]``:
        ``model[3:7]`` keeps rounds 3 to 6, ``model[::2]`` every other round, ``model[i]``
        round i (negative indices count from the end). The base score, objective and
        features are kept; ``best_iteration`` and the learning curves are not (they
        describe the whole model). Part of a random forest is refused (its leaves hold
        each tree's share of the mean of all of them)."""
        n = self.num_boosted_rounds
        if isinstance(rounds, numbers.Integral) and not isinstance(rounds, (bool, np.bool_)):
            i = int(rounds)
            if not -n <= i < n:
                raise IndexError(f"round {i} is outside the model's {n} rounds")
            rounds = slice(i % n, i % n + 1)
        if not isinstance(rounds, slice):
            raise TypeError(f"a Model is sliced by rounds (model[start:stop:step]) or indexed "
                            f"by a round (model[i]), not by {type(rounds).__name__}")
        for v in (rounds.start, rounds.stop, rounds.step):
            if v is not None and (not isinstance(v, numbers.Integral)
                                  or isinstance(v, (bool, np.bool_))):
                raise TypeError(f"the bounds of a Model slice must be integers, got {v!r}")
        if rounds.step is not None and rounds.step < 1:
            raise ValueError(f"a Model slice's step must be positive, got {rounds.step}")
        keep = range(*rounds.indices(n))
        if len(keep) == 0:
            raise ValueError(f"the slice {rounds.start}:{rounds.stop}:{rounds.step} keeps none "
                             f"of the model's {n} rounds")
        if len(keep) < n and self._leaves_are_shares_of_a_mean():
            raise ValueError(f"a slice of a random forest of {n} trees would predict a "
                             "fraction of the forest's mean (each leaf holds its tree's value "
                             "divided by that count); keep every tree")
        K = self.trees_per_round
        ids = [r * K + k for r in keep for k in range(K)]
        return Model([copy.deepcopy(self.trees[t]) for t in ids], self.tree_group[ids],
                     self.base_score.copy(), self.objective, self.n_outputs, self.info,
                     params=dict(self.params))

    def __repr__(self):
        return (f"<hardwood.Model objective={self.objective!r} rounds={self.num_boosted_rounds} "
                f"trees={self.num_trees} features={self.n_features}>")

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_packed"] = None
        state["_compiled"] = None
        state["_shap"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.trees = self.trees  # a model pickled before TreeList: its list made one

    # -- prediction -----------------------------------------------------------------
    def _trees_version(self):
        """What the caches are keyed by: the tree list, its length and its count of edits. The
        trainer appends to the list of the model its callbacks see, and a user may assign a
        new list or put another tree in the list's place, so a cache built before any of these
        can never serve the trees after it (a stale packed copy would send the kernels past the
        end of its arrays, or predict with the tree replaced)."""
        t = self.trees
        return _Version((t, len(t), t.edits, self.tree_group, len(self.tree_group),
                         tree_edits()))

    def _compiled_version(self):
        """The trees version, with what a compiled runtime also holds: the objective (its
        output transform), the outputs and the base score (by value: a user may set it)."""
        base = np.asarray(self.base_score, dtype=np.float64)
        return _Version((*self._trees_version(), str(self.objective), self.n_outputs,
                         base.tobytes()))

    def check_structure(self):
        """The model must hold together before any kernel reads it (Numba's kernels check no
        index): the tree list and ``tree_group`` agree (a tree appended without its group
        sent the kernels past the end of the groups: memory corruption), every tree is whole
        (``model.io.validate_tree``, as a loaded file's: a child index past the tree's end,
        set in memory, was a segfault, a child pointing back an endless walk, a split on a
        feature the model lacks garbage), and the base score and objective fit the outputs
        (one base score for three classes was spread over them). A ``ValueError`` says what
        does not. Checked once per version of the model (trees, objective, base score)."""
        version = _Version((*self._compiled_version(), self.info))
        if version == self.__dict__.get("_checked"):
            return
        self._check_structure()
        self.__dict__["_checked"] = version

    def _check_structure(self):
        from .io import validate_tree

        g = np.asarray(self.tree_group)
        n = len(self.trees)
        bad = next((i for i, t in enumerate(self.trees) if not isinstance(t, Tree)), None)
        if bad is not None:
            raise TypeError(f"model.trees[{bad}] is a {type(self.trees[bad]).__name__}, not a "
                            "hardwood Tree")
        if g.ndim != 1 or g.shape[0] != n or g.dtype.kind not in "iu":
            raise ValueError(f"the model has {n} trees but tree_group holds {g.shape} "
                             f"{g.dtype} entries; give every tree its output (tree_group, one "
                             "integer per tree) when changing model.trees")
        if n and (g.min() < 0 or g.max() >= max(self.n_outputs, 1)):
            raise ValueError(f"tree_group holds output {int(g.min() if g.min() < 0 else g.max())}"
                             f", outside the model's {self.n_outputs} outputs")
        base = np.asarray(self.base_score, dtype=np.float64)
        if base.size != self.n_outputs or not np.all(np.isfinite(base)):
            raise ValueError(f"base_score holds {base.size} numbers for the model's "
                             f"{self.n_outputs} outputs; it needs one finite number per output")
        if (isinstance(self.objective, str) and self.objective in OBJECTIVES
                and not outputs_fit(self.objective, self.n_outputs)):
            raise ValueError(f"objective {self.objective!r} does not fit the model's "
                             f"{self.n_outputs} outputs")
        info, edits = self.info, tree_edits()
        key = (info.n_features, tuple(info.n_categories), edits)
        for i, t in enumerate(self.trees):
            if t.__dict__.get("_valid_for") == key:
                continue  # (whole since the last edit of any tree)
            validate_tree(t, info.n_features, info.n_categories,  # (a ValueError)
                          np.asarray(info.is_categorical, dtype=bool), f"model.trees[{i}]")
            t.__dict__["_valid_for"] = key

    def packed(self):
        self.check_structure()
        version = self._trees_version()
        cached = self.__dict__.get("_packed")
        if cached is None or cached[0] != version:
            for t in self.trees:  # changed in place, they would differ from the packed copy
                t.freeze()
            cached = self._packed = (version, pack(self.trees, self.tree_group,
                                                   self.info.n_categories))
        return cached[1]

    def shap_data(self):
        """TreeSHAP's paths and tables (``explain.treeshap.prepare``), built on first use and
        kept for this trees version; ``ValueError`` if a node lacks cover."""
        version = self._trees_version()
        cached = self.__dict__.get("_shap")
        if cached is None or cached[0] != version:
            cover = (np.concatenate([t.cover for t in self.trees]).astype(np.float64)
                     if self.trees else np.zeros(0))
            cached = self._shap = (version, treeshap.prepare(self.packed(), cover))
        return cached[1]

    def tree_range(self, iteration_range):
        """The trees (t0, t1) that ``iteration_range`` selects: every tree, or those up to
        ``best_iteration`` when early stopping set it; an error names a bad range."""
        K = self.trees_per_round
        if iteration_range is None:
            if self.best_iteration is not None:
                return 0, min((self.best_iteration + 1) * K, len(self.trees))
            return 0, len(self.trees)
        try:
            start, end = iteration_range
        except (TypeError, ValueError):
            raise TypeError("iteration_range must be a pair (start, end) of rounds") from None
        if not all(isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))
                   for v in (start, end)):
            raise TypeError(f"iteration_range must be a pair of integers (rounds), got "
                            f"{iteration_range!r}")
        start, end = int(start), int(end)
        if end == 0:
            end = self.num_boosted_rounds
        if not 0 <= start <= end <= self.num_boosted_rounds:
            raise ValueError(f"iteration_range {iteration_range} is outside the model's "
                             f"{self.num_boosted_rounds} rounds")
        if 0 < end - start < self.num_boosted_rounds and self._leaves_are_shares_of_a_mean():
            # each leaf holds its tree's value / n_estimators: a part of the trees summed to a
            # fraction of the mean (probabilities summing to 0.5 for half of the trees)
            how = ("import LightGBM's booster.model_to_string(num_iteration=k) for its first k "
                   "iterations" if self.params.get("lightgbm_average_output")
                   else "fit a forest of the trees wanted")
            raise ValueError(f"iteration_range {iteration_range} selects part of a random "
                             f"forest of {self.num_boosted_rounds} trees, whose leaves hold "
                             "each tree's value divided by that count: the part would predict "
                             "a fraction of the forest's mean. Predict with every tree (no "
                             f"iteration_range), or {how}")
        return start * K, end * K

    def _leaves_are_shares_of_a_mean(self) -> bool:
        """A random forest, hardwood's or imported from scikit-learn or LightGBM
        (``boosting='rf'``), whose leaf values are scaled by 1 / n_estimators so that their
        sum is the mean of the trees."""
        p = self.params
        return (p.get("booster") == "forest" or bool(p.get("sklearn_average_output"))
                or bool(p.get("lightgbm_average_output")))

    def leaf_value_scale(self) -> float:
        """The factor from a stored leaf value to its tree's own: the tree count of a random
        forest (its leaves hold shares of the mean, see ``_leaves_are_shares_of_a_mean``),
        else 1."""
        if not self._leaves_are_shares_of_a_mean():
            return 1.0
        p = self.params
        return float(p.get("sklearn_average_output") or p.get("lightgbm_average_output")
                     or self.num_boosted_rounds)

    def prepare(self, X):
        """User matrix -> float matrix coded like the training data (checked)."""
        mat, _ = to_float_matrix(X, info=self.info, what="X", allow_inf=True, allow_no_rows=True)
        return mat

    def predict(self, X, output="value", iteration_range=None, runtime=None, base_margin=None):
        """Predict for the rows of ``X``.

        output : 'value' (probabilities for classification, the prediction for regression),
                 'raw' (margins), 'leaf' (leaf index of each tree, shape (n, n_trees)),
                 'contrib' (exact path-dependent TreeSHAP values, shape (n, n_features + 1)
                 with the bias, base score included, in the last column; (n, n_outputs,
                 n_features + 1) for several outputs; each row sums to the raw margin, as
                 XGBoost's ``pred_contribs``) or 'interaction' (SHAP interaction values,
                 shape (n, n_features + 1, n_features + 1), per output as above; each row of
                 a matrix sums to that feature's 'contrib', as XGBoost's
                 ``pred_interactions``). TreeSHAP weights each split by its nodes' cover and
                 raises ``ValueError`` on a model without it.
        runtime : None (the default): the reference walk of every row through every tree,
                  until the rows × trees walked in a tree range (over this model's calls)
                  reach ``AUTO_MIN_WORK``, enough to pay for laying the model out; from
                  then on, for this model and range, the ``auto`` runtime of
                  ``hardwood.compile`` at every batch size. Or a runtime
                  by name: 'naive' (the reference walk always), 'auto', 'struct+',
                  'vpred', ... Laying out takes 3-130 ms for 20-500 trees of depth 6 (more
                  while a new process loads the kernels) and is kept on the model, for the
                  last ``COMPILED_KEPT`` runtimes and ranges. Every runtime gives the same
                  output up to float rounding. 'contrib' and 'interaction' have their own
                  kernel and ignore it.
        base_margin : each row's starting margins, (n,) or (n, n_outputs) (XGBoost's
                  ``base_margin``; LightGBM's ``init_score``, which its predict leaves for
                  you to add), in place of the base score, as a model trained on a
                  ``Dataset(..., base_margin=)`` started from; added to it where it was
                  trained under LightGBM's names, as LightGBM's (its bias term for
                  'contrib' and 'interaction'; 'leaf' does not read it).
        """
        if output not in OUTPUTS:
            raise ValueError(f"output must be one of {OUTPUTS}, got {output!r}")
        self.check_structure()
        if base_margin is not None:
            return self._predict_from(X, output, iteration_range, runtime, base_margin)
        blocks = sparse_row_blocks(X)
        if blocks is not None:  # a wide sparse matrix: a block of rows made dense at a time
            X, block = blocks
            return np.concatenate([self.predict(X[a:a + block], output, iteration_range, runtime)
                                   for a in range(0, X.shape[0], block)], axis=0)
        if output in SHAP_OUTPUTS:
            return self._shap_values(X, output, iteration_range)
        if self.trees:  # (no trees: the base score alone, below)
            compiled = self._compiled_runtime(runtime, iteration_range, X)
            if compiled is not None:
                return compiled.predict(X, output=output)
        mat = self.prepare(X)
        t0, t1 = self.tree_range(iteration_range)
        forest = self.packed()
        with guard():  # parallel kernels (hardwood.parallel)
            if output == "leaf":
                return predict_leaf(forest, mat, t0, t1)
            margin = predict_raw(forest, mat, t0, t1, self.base_score, self.n_outputs)
        if output == "raw":
            return margin[:, 0] if self.n_outputs == 1 else margin
        return transform_margin(self.objective, margin)

    def _predict_from(self, X, output, iteration_range, runtime, base_margin):
        """``predict`` with each row's starting margins in place of the base score."""
        from ..data.dataset import start_margins

        out = self.predict(X, "raw" if output == "value" else output, iteration_range, runtime)
        K = self.n_outputs
        shift = start_margins(base_margin, out.shape[0], "base_margin")
        if shift.shape[1] != K:
            raise ValueError(f"base_margin has {shift.shape[1]} column(s) for the model's {K} "
                             "output(s)")
        if output == "leaf":  # (the margins checked as for every other output, then unused)
            return out
        if not self.params.get("margins_add_to_base", False):  # (XGBoost's: they replace it)
            shift = shift - np.asarray(self.base_score, dtype=np.float64)[None, :]
        if output in SHAP_OUTPUTS:  # the bias term: the last column (and row)
            view = out.reshape(out.shape[0], K, *out.shape[1 + (K > 1):])
            if output == "contrib":
                view[:, :, -1] += shift
            else:
                view[:, :, -1, -1] += shift
            return out
        margin = out.reshape(out.shape[0], K) + shift
        if output == "raw":
            return margin[:, 0] if K == 1 else margin
        return transform_margin(self.objective, margin)

    def _compiled_runtime(self, runtime, iteration_range, X):
        """The compiled model ``predict`` uses (built and kept on first use), or None for the
        reference walk: see ``predict``'s ``runtime``."""
        version = self._compiled_version()
        cache = self.__dict__.get("_compiled")
        if cache is None or cache.version != version:
            cache = self._compiled = _Layouts(version)  # older layouts are dropped
        tr = self.tree_range(iteration_range)
        if runtime is None:
            runtime = "auto"
            if ("auto", tr) not in cache.layouts and \
                    cache.walk(tr, _rows(X) * (tr[1] - tr[0])) < AUTO_MIN_WORK:
                return None
        compiled = cache.layouts.get((runtime, tr))
        if compiled is None:
            from ..predict.dispatch import compile as _compile
            for t in self.trees:  # as packed(): changed in place, they would go stale
                t.freeze()
            compiled = _compile(self, runtime, iteration_range=iteration_range)
            cache.keep((runtime, tr), compiled)
        return compiled

    def _shap_values(self, X, output, iteration_range):
        mat = self.prepare(X)
        t0, t1 = self.tree_range(iteration_range)
        data = self.shap_data()
        explain = treeshap.contributions if output == "contrib" else treeshap.interactions
        with guard():  # parallel kernels (hardwood.parallel)
            values = explain(data, mat, t0, t1, self.base_score, self.n_outputs)
            if t1 > t0 and data.paths.max_size > SHAP_EXACT_PATH:
                self._check_additivity(values, mat, t0, t1)
        return values

    def _check_additivity(self, values, mat, t0, t1):
        """Warn where rows' SHAP values do not add up to their margin: TreeSHAP's recursion
        loses float64 precision on paths of more than about 60 features (off by 4e-7 at 60,
        2e-4 at 70 and 4.5 at 90; the shap package's alike), which deeper trees may have."""
        margin = predict_raw(self.packed(), mat, t0, t1, self.base_score, self.n_outputs)
        total = values.reshape(values.shape[0], self.n_outputs, -1).sum(axis=2)
        gap = np.abs(total - margin).max(axis=1)
        off = gap > 1e-6 * (1.0 + np.abs(margin).max(axis=1))
        if off.any():
            warnings.warn(f"the SHAP values of {int(off.sum())} of {off.size} rows do not add up "
                          f"to their margin (off by up to {float(gap.max()):.3g}): TreeSHAP "
                          "loses float precision on paths of more than about 60 features; "
                          "limit max_depth to explain such a model exactly", RuntimeWarning,
                          stacklevel=4)

    # -- importances ----------------------------------------------------------------
    def feature_importances(self, kind="gain", iteration_range=None):
        """Per-feature importance: 'gain' (mean gain of its splits), 'total_gain',
        'weight' (number of splits), 'cover' (mean cover), 'total_cover', over every tree
        (XGBoost's ``get_score``) or those of ``iteration_range`` (as ``predict``'s; LightGBM's
        ``feature_importance`` counts up to its best iteration: ``(0, best_iteration + 1)``).
        'split' is LightGBM's name of 'weight'."""
        if kind == "split":  # (plot_importance and the estimators took it; this refused it)
            kind = "weight"
        if kind not in IMPORTANCE_KINDS:
            raise ValueError(f"kind must be one of {IMPORTANCE_KINDS}, got {kind!r}")
        t0, t1 = self.tree_range(iteration_range) if iteration_range is not None else (
            0, len(self.trees))
        d = self.n_features
        weight = np.zeros(d)
        gain = np.zeros(d)
        cover = np.zeros(d)
        for t in self.trees[t0:t1]:
            internal = t.feature >= 0
            f = t.feature[internal]
            np.add.at(weight, f, 1.0)
            np.add.at(gain, f, t.gain[internal].astype(np.float64))
            np.add.at(cover, f, t.cover[internal])
        with np.errstate(invalid="ignore", divide="ignore"):
            if kind == "weight":
                return weight
            if kind == "total_gain":
                return gain
            if kind == "total_cover":
                return cover
            if kind == "gain":
                return np.where(weight > 0, gain / np.maximum(weight, 1), 0.0)
            return np.where(weight > 0, cover / np.maximum(weight, 1), 0.0)

    # -- persistence ----------------------------------------------------------------
    def save(self, path):
        """Write the model as versioned JSON (see ``hardwood.model.io``)."""
        from .io import save_model
        save_model(self, path)

    def to_json(self) -> str:
        from .io import model_to_json
        return model_to_json(self)


class _Layouts:
    """``Model.predict``'s compiled runtimes for one trees version: the last
    ``COMPILED_KEPT`` by (runtime, tree range), and the rows × trees walked per range by the
    default, which lays a range out once they reach ``AUTO_MIN_WORK`` (a loop over
    ranges keeps the latest counts only)."""

    def __init__(self, version):
        self.version = version
        self.layouts = {}
        self.walked = {}

    def keep(self, key, compiled):
        if len(self.layouts) >= COMPILED_KEPT:
            del self.layouts[next(iter(self.layouts))]
        self.layouts[key] = compiled

    def walk(self, tree_range, work) -> int:
        """Counts ``work`` walked in ``tree_range``: the total so far."""
        total = self.walked.pop(tree_range, 0) + work
        if len(self.walked) >= 8 * COMPILED_KEPT:
            del self.walked[next(iter(self.walked))]
        self.walked[tree_range] = total
        return total


def _rows(X) -> int:
    """The row count of a matrix-like, before it is checked (0 where it has none)."""
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) > 0:
        return int(shape[0])
    try:
        return len(X)
    except TypeError:
        return 0
