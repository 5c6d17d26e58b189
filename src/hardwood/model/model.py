"""``hardwood.Model``: a trained tree ensemble, its prediction and its importances."""
from __future__ import annotations

import numpy as np

from ..data.convert import FeatureInfo, to_float_matrix
from ..objectives import transform_margin
from ..predict.naive import pack, predict_leaf, predict_raw
from .tree import Tree

OUTPUTS = ("value", "raw", "leaf")
IMPORTANCE_KINDS = ("gain", "weight", "cover", "total_gain", "total_cover")


class Model:
    """A tree ensemble: trees, base score per output, objective, and feature metadata.

    ``predict`` uses the first ``best_iteration + 1`` rounds when training stopped early
    (as LightGBM does); pass ``iteration_range`` to choose others.
    """

    def __init__(self, trees, tree_group, base_score, objective, n_outputs, info: FeatureInfo,
                 params=None, best_iteration=None, best_score=None, evals_result=None,
                 training_profile=None):
        self.trees: list[Tree] = list(trees)
        self.tree_group = np.asarray(tree_group, dtype=np.int32)
        self.base_score = np.asarray(base_score, dtype=np.float64).reshape(-1)
        self.objective = objective
        self.n_outputs = int(n_outputs)
        self.info = info
        self.params = dict(params or {})
        self.best_iteration = best_iteration
        self.best_score = best_score
        self.evals_result = evals_result or {}
        self.training_profile = training_profile or {}
        self._packed = None
        self._compiled = {}

    # -- basic facts ----------------------------------------------------------------
    @property
    def num_trees(self) -> int:
        return len(self.trees)

    @property
    def num_boosted_rounds(self) -> int:
        return len(self.trees) // max(self.n_outputs, 1)

    @property
    def n_features(self) -> int:
        return self.info.n_features

    @property
    def feature_names(self):
        return list(self.info.names)

    def __len__(self):
        return self.num_boosted_rounds

    def __repr__(self):
        return (f"<hardwood.Model objective={self.objective!r} rounds={self.num_boosted_rounds} "
                f"trees={self.num_trees} features={self.n_features}>")

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_packed"] = None
        state["_compiled"] = {}
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    # -- prediction -----------------------------------------------------------------
    def packed(self):
        if self._packed is None:
            self._packed = pack(self.trees, self.tree_group, self.info.n_categories)
        return self._packed

    def _tree_range(self, iteration_range):
        K = max(self.n_outputs, 1)
        if iteration_range is None:
            if self.best_iteration is not None:
                return 0, min((self.best_iteration + 1) * K, len(self.trees))
            return 0, len(self.trees)
        try:
            start, end = (int(v) for v in iteration_range)
        except (TypeError, ValueError):
            raise TypeError("iteration_range must be a pair (start, end) of rounds") from None
        if end == 0:
            end = self.num_boosted_rounds
        if not 0 <= start <= end <= self.num_boosted_rounds:
            raise ValueError(f"iteration_range {iteration_range} is outside the model's "
                             f"{self.num_boosted_rounds} rounds")
        return start * K, end * K

    def prepare(self, X):
        """User matrix -> float matrix coded like the training data (checked)."""
        mat, _ = to_float_matrix(X, info=self.info, what="X")
        return mat

    def predict(self, X, output="value", iteration_range=None, runtime=None):
        """Predict for the rows of ``X``.

        output : 'value' (probabilities for classification, the prediction for regression),
                 'raw' (margins) or 'leaf' (leaf index of each tree, shape (n, n_trees)).
        runtime : None (the reference walk), or a runtime of ``hardwood.compile`` ('auto',
                  'struct+', 'vpred', ...). The compiled layout is kept on the model, so only
                  the first call pays for it; every runtime gives the same output up to float
                  rounding.
        """
        if output not in OUTPUTS:
            raise ValueError(f"output must be one of {OUTPUTS}, got {output!r}")
        if runtime is not None:
            key = (runtime, None if iteration_range is None else tuple(iteration_range))
            compiled = self.__dict__.setdefault("_compiled", {}).get(key)
            if compiled is None:
                from ..predict.dispatch import compile as _compile
                compiled = _compile(self, runtime, iteration_range=iteration_range)
                self._compiled[key] = compiled
            return compiled.predict(X, output=output)
        mat = self.prepare(X)
        t0, t1 = self._tree_range(iteration_range)
        forest = self.packed()
        if output == "leaf":
            return predict_leaf(forest, mat, t0, t1)
        margin = predict_raw(forest, mat, t0, t1, self.base_score, self.n_outputs)
        if output == "raw":
            return margin[:, 0] if self.n_outputs == 1 else margin
        return transform_margin(self.objective, margin)

    # -- importances ----------------------------------------------------------------
    def feature_importances(self, kind="gain"):
        """Per-feature importance: 'gain' (mean gain of its splits), 'total_gain',
        'weight' (number of splits), 'cover' (mean cover), 'total_cover'."""
        if kind not in IMPORTANCE_KINDS:
            raise ValueError(f"kind must be one of {IMPORTANCE_KINDS}, got {kind!r}")
        d = self.n_features
        weight = np.zeros(d)
        gain = np.zeros(d)
        cover = np.zeros(d)
        for t in self.trees:
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
