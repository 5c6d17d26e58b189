"""``hardwood.Booster``: the state of gradient boosting, one round at a time.

A Booster holds what training needs between rounds: the objective, the margins of the training
and validation rows, the trees so far, the grower and its backend. ``update()`` adds one round
(one tree per output), ``eval()`` scores the validation sets, ``model()`` returns a snapshot.
``hardwood.train`` is a short loop over it.

Continued training (``init_model``) starts from a model's trees: their margins on the training
rows are computed over the Dataset's bins, in the trees' order, so they are the floats that
training them had left, and each round draws its random numbers from ``(random_state, round)``.
Training 50 rounds, saving, and continuing 50 rounds therefore gives the model that 100 rounds
give, bit for bit.
"""
from __future__ import annotations

import os
import time
import warnings

import numpy as np

from .. import metrics as M
from ..backends.base import make_backend
from ..backends.split import LGB_MISSING_BIN0_ZERO, LGB_MISSING_ZERO, ZERO_EDGE
from ..backends.pages import RowPages
from ..data.convert import unnamed
from ..data.dataset import Dataset
from ..model.model import Model
from ..model.tree import BinnedTree, mask_from_bitset
from ..objectives import (get_objective, lightgbm_flavoured, metric_label_problem,
                          objective_class, trains_as)
from ..parallel import threads
from . import sampling
from .custom_metric import CustomMetrics
from .custom_objective import CustomObjective
from .grower import Grower, GrowParams, Profile, features_drawn
from .params import (ALIASES, DEFAULTS, LIGHTGBM_LEAF_NAMES, LIGHTGBM_OBJECTIVES, MAX_CLASSES,
                     NO_METRIC, OBJECTIVE_PARAMS, resolve_interactions, resolve_monotone,
                     resolve_params)


class Booster:
    """Gradient boosting's training state. ``update()`` grows one round, ``eval()`` returns
    ``{set name: {metric: value}}`` for the current model, ``model()`` a snapshot (a
    :class:`hardwood.Model` of its own, which later rounds do not change)."""

    def __init__(self, params, train_set: Dataset, valid_sets=(), valid_names=(),
                 init_model=None, pages=None, custom_objective=None):
        """``pages``: rows that live elsewhere, worked by a ``Pages`` object of the caller's
        (``hardwood.dask``: the partitions on the workers); ``train_set`` then holds the
        labels, weights and bins but no binned matrices. ``custom_objective``: ``(f,
        keyword)``, a function of (margins, dataset) -> (grad, hess) and the keyword it came
        by, 'obj' or 'objective' (``train/custom_objective.py``)."""
        p = resolve_params(params)
        named = p["objective"]  # as given: LightGBM's names bring its interaction rule
        if not isinstance(train_set, Dataset):
            raise TypeError(f"train_set must be a hardwood.Dataset, got {type(train_set).__name__}")
        if train_set.label is None:
            raise ValueError("train_set has no labels (pass y= to hardwood.Dataset)")
        if p["max_bin"] is not None and p["max_bin"] != train_set.max_bin:
            raise ValueError(f"params max_bin={p['max_bin']} differs from the Dataset's max_bin="
                             f"{train_set.max_bin}; build the Dataset with max_bin={p['max_bin']}")
        self.valid_sets, self.valid_names = _check_valid_sets(train_set, valid_sets, valid_names)
        init = _from_best_rounds(_load_init_model(init_model), p, named)
        y = train_set.label
        n = train_set.n_rows
        # (by the loss trained: an alias, multi:softmax, names softprob's; LightGBM's name of
        # a loss it defines otherwise, another: 'multiclass' continuing multi:softprob's trees
        # mixed the two hessians, 0.19 off either library's model)
        before = init.params.get("objective", init.objective) if init is not None else None
        if init is not None and trains_as(before) != trains_as(p["objective"]):
            same = trains_as(before)[0] == trains_as(p["objective"])[0]
            raise ValueError(f"init_model was trained with objective {before!r}, but params ask "
                             f"for {p['objective']!r}" + (
                                 " (XGBoost and LightGBM define that loss differently, and "
                                 "hardwood trains each library's under its names)" if same
                                 else "") + "; continue with the same objective")
        if init is not None:
            _carry_objective_params(p, params, init)
        task = objective_class(p["objective"]).task
        if task != "multiclass" and p["num_class"] is not None:  # it was ignored
            raise ValueError(f"num_class={p['num_class']} applies to multiclass objectives "
                             f"(multi:softprob), not {p['objective']!r}")
        if task != "ranking" and p["sigmoid"] != 1.0:  # it was ignored
            raise ValueError(f"sigmoid={p['sigmoid']} is the slope of the ranking objectives' "
                             f"pairwise logistic, not of {p['objective']!r}: hardwood has no "
                             "LightGBM binary sigmoid parameter (the logistic of "
                             "binary:logistic has slope 1)")
        for key, (what, owner) in OBJECTIVE_PARAMS.items():
            if p[key] != DEFAULTS[key] and objective_class(p["objective"]).name != owner:
                # (huber_slope was taken and ignored; XGBoost warns)
                raise ValueError(f"{key}={p[key]} is {what} {owner}, not a parameter of "
                                 f"{p['objective']!r}")
        _check_lambdarank_params(p, task)
        if task == "multiclass" and p["num_class"] is None:
            p["num_class"] = (init.n_outputs if init is not None
                              else _classes_from_labels(y, p["objective"]))
        obj = get_objective(p["objective"], p)
        if custom_objective is not None:
            if obj.name != "reg:squarederror" or p["num_class"] is not None:
                raise ValueError("a custom objective trains one output of raw margins: leave "
                                 "objective and num_class out (a custom multiclass objective "
                                 "is not supported yet), and apply the link to the "
                                 "predictions yourself")
            fn, keyword = custom_objective
            obj = CustomObjective(fn, train_set, p, keyword)
        if (p["scale_pos_weight"] != 1.0 or p["is_unbalance"]) and obj.task != "binary":
            # (XGBoost takes scale_pos_weight for regression too, LightGBM ignores it there)
            given = "scale_pos_weight" if p["scale_pos_weight"] != 1.0 else "is_unbalance"
            raise ValueError(f"{given} weighs the classes of a binary objective; "
                             f"{obj.name!r} has no positive class: give sample weights "
                             "instead")
        # XGBoost's multi:softmax trains multi:softprob's trees into a model that predicts
        # the class index, as XGBoost's (and an imported multi:softmax model) does
        self.model_objective = "multi:softmax" if p["objective"] == "multi:softmax" else obj.name
        if not lightgbm_flavoured(p["objective"]):
            # (LightGBM's name of a loss it trains otherwise stays: the model's params then
            # retrain it, and a continuation can tell the two apart)
            p["objective"] = obj.name
        obj.check_labels(y)
        if init is not None:
            _carry_constraints(p, params, init)
            _warn_if_growth_changed(p, params, init)
        p["monotone_constraints"] = resolve_monotone(
            p["monotone_constraints"], train_set.feature_names,
            train_set.bin_mapper.is_categorical)
        if p["monotone_constraints"] is not None and obj.refit_leaves:
            raise ValueError(f"monotone_constraints with {obj.name!r}: its leaves are refit to "
                             "the residuals' median (quantile) after each tree is grown, which "
                             "the constraints do not bound")
        p["interaction_constraints"] = resolve_interactions(p["interaction_constraints"],
                                                            train_set.feature_names)
        # LightGBM's rules of the constraints where it grows the trees (num_leaves) or names
        # the objective: features in no interaction set are never split on (XGBoost splits the
        # root on them, and their subtree on them alone), and its basic monotone gains
        self._lightgbm_constraints = _lightgbm_names(p, named)
        _check_weight_range(train_set.weight, "train_set")
        for v, name in zip(self.valid_sets, self.valid_names):
            if v is not train_set:
                _check_weight_range(v.weight, f"valid set {name!r}")
        K = obj.n_outputs
        # unit weights as a read-only stride-0 view (no n-sized array) for the Python-side
        # uses; the gradient kernels take train_set.weight itself (None: a flag, so that
        # their loops vectorise)
        self.w = (train_set.weight if train_set.weight is not None
                  else np.broadcast_to(np.float64(1.0), (n,)))
        if init is not None:
            _check_init_model(init, train_set, K)
            base = np.array(init.base_score, dtype=np.float64)
            if p["base_score"] is not None and not np.allclose(
                    obj.margin_from_user(p["base_score"]), base, rtol=1e-6, atol=1e-12):
                # XGBoost takes the new one, and the init model's trees then predict other
                # values than they were fit to; ignoring it would be silent
                raise ValueError(f"base_score={p['base_score']!r} differs from init_model's "
                                 "base score: continued training keeps the init model's (its "
                                 "trees were fit from it). Leave base_score out, or pass the "
                                 "one the init model was trained with")
        elif (p["base_score"] is None and _start_margins_of(train_set) is not None
              and self._lightgbm_constraints):
            base = np.zeros(K)  # LightGBM's init_score: no boost from the average
        elif p["base_score"] is None:
            base = obj.base_score(y, train_set.weight)  # (None: unweighted)
        else:
            base = obj.margin_from_user(p["base_score"])
        if not np.all(np.isfinite(base)):
            raise FloatingPointError(f"the base score (the labels' mean or median) is not "
                                     f"finite: labels range from {float(y.min()):g} to "
                                     f"{float(y.max()):g}; scale the labels")
        self.metric_names = ([] if p["eval_metric"] == [NO_METRIC[0]]  # (LightGBM's "None")
                             else p["eval_metric"] or [obj.default_metric])
        self.custom_metrics = CustomMetrics()  # hardwood.train sets the user's
        for m in self.metric_names:
            M.get_metric(m, p)
            M.check_metric_for_objective(m, obj.name)
        for v, name in zip(self.valid_sets, self.valid_names):
            if v is not train_set:
                _check_valid_labels(obj, v.label, name)
        if obj.task == "ranking":
            _check_queries(obj, train_set, self.valid_sets, self.valid_names, self.metric_names)
        self.params, self.obj, self.train_set, self.K, self.base = p, obj, train_set, K, base
        self.profile = Profile()
        self.trees, self.groups = [], []
        self._all_rows = None  # the row ids of an unsampled tree, refilled for each tree
        with threads(p["n_jobs"]):
            own_pages, pages = pages, p["pages"]
            paged = train_set.pages_on_disk is not None  # Dataset.from_batches: on disk
            on_gpu = p["device"] == "cuda"
            self.backend = (None if paged or on_gpu or own_pages is not None
                            else make_backend(p["backend"], train_set))
            self._transfers_total = None  # on pages on disk with device='cuda'
            if on_gpu and paged:
                _check_cuda()
                self._transfers_total = {"h2d_bytes": 0, "d2h_bytes": 0}
            if own_pages is not None:
                self.pages = own_pages
            elif on_gpu and not paged:
                self.pages = _cuda_pages(train_set, pages)
            elif paged:
                if pages is not None:
                    raise ValueError("a Dataset from from_batches lives in its pages on disk; "
                                     "the pages parameter does not apply")
                self.pages = _stored_pages(train_set, transfers=self._transfers_total)
            elif pages is None or isinstance(pages, (int, np.integer)):
                self.pages = RowPages.even(self.backend, n, 1 if pages is None else pages)
            elif isinstance(pages, dict):
                self.pages = _disk_pages(train_set, pages)
            else:
                self.pages = RowPages(self.backend, n, pages)
            gp = GrowParams(**{k: p[k] for k in GrowParams.__dataclass_fields__ if k in p},
                            lightgbm_constraints=self._lightgbm_constraints,
                            lightgbm_cover=self._lightgbm_constraints)
            self.grower = Grower(self.backend, self.pages, train_set.bin_mapper, gp,
                                 self.profile, None)
            if gp.missing_rule == "lightgbm":
                self.grower.use_lightgbm_missing(n)
            # the fields each tree draws its features from: all (XGBoost's), or under
            # LightGBM's feature_fraction names those LightGBM keeps (it drops constant and
            # pre-filtered fields first: at feature_fraction=0.2 of 4 useful and 6 constant
            # fields, 45% of hardwood's trees drew none that could split)
            self._feature_pool = (self.grower.lightgbm_features(n, p["min_data_in_leaf"])
                                  if p["colsample_rounding"] == "nearest" else None)
            # LightGBM's names: a set's init_score adds to the base score (the label average
            # LightGBM puts in its first tree; 0 where the training set has one), where
            # XGBoost's base_margin replaces it: a training set without init_score and a
            # validation set with one scored RMSE 7.42 where LightGBM's was 1.88
            p["margins_add_to_base"] = bool(self._lightgbm_constraints)
            add = p["margins_add_to_base"]
            # LightGBM overrides the sets' init_score by the init model's predictions (with
            # a warning), where XGBoost's base_margin stays under them: hardwood added both
            # under LightGBM's names, 0.14 off LightGBM's continued model
            own = not (add and init is not None)
            if not own and any(_start_margins_of(v) is not None
                               for v in [train_set, *self.valid_sets]):
                warnings.warn("init_score is overridden by the predictions of init_model, as "
                              "LightGBM's (under XGBoost's names, base_margin adds to them)",
                              UserWarning, stacklevel=3)
            self.pred = _starting_margins(train_set, base, K, "train_set", add, own)
            self.g = np.empty((K, n), dtype=np.float32)
            self.h = np.empty((K, n), dtype=np.float32)
            self.valid_pred = [_starting_margins(v, base, K, f"valid set {name!r}", add, own)
                               for v, name in zip(self.valid_sets, self.valid_names)]
            at_edges = init is not None and any(  # (the init model's ±1e-35 thresholds)
                np.any(np.abs(t.threshold[t.feature >= 0]) == ZERO_EDGE) for t in init.trees)
            self._zero_side = [_zero_side_rows(v, vp, self.grower, p, at_edges)
                               if v is not train_set else None
                               for v, vp in zip(self.valid_sets, self.valid_pred)]
            if init is not None:  # the margins training the init trees had left
                for tree, k in zip(init.trees, init.tree_group):
                    binned = bin_tree(tree, train_set)
                    self.pages.predict_binned(binned, self.pred[k])
                    self._predict_valid(tree, binned, k)
                    self.trees.append(tree)
                    self.groups.append(int(k))
        # device='cuda' (or Dask workers) with an objective computed there: margins, g and h
        # stay there; pages name the objectives they compute (default: the device's)
        there = getattr(self.pages, "margin_objectives", None)
        self._dev = (getattr(self.pages, "bind_margins", None) is not None
                     and obj.name in (there or _device_objectives()) and not obj.refit_leaves
                     and custom_objective is None)
        if self._dev:
            self.pages.bind_margins(obj, y, obj.gradient_weight(y, train_set.weight), self.pred)
        self.rounds = len(self.trees) // K  # rounds so far, those of init_model included
        self.best_iteration = self.best_score = None

    def _predict_valid(self, tree, binned, k):
        """Add ``tree`` (``binned``; output ``k``) to the validation sets' margins; the rows
        with values LightGBM's edges next to 0.0 route otherwise than their bins
        (``_zero_side_rows``) take it by those values."""
        for v, vp, fix in zip(self.valid_sets, self.valid_pred, self._zero_side):
            if v is self.train_set:
                continue
            predict_binned(_binned_rows(v), binned, vp[k])
            if fix is not None:
                fix.add(tree, binned, k, vp)

    def expect_rounds(self, n):
        """Say that about ``n`` more rounds will follow (a hint: the grower weighs compiling
        its faster kernel against the work ahead; see ``train/grower.py``)."""
        self.grower.trees_left = max(0, int(n)) * self.K

    # -- one round ----------------------------------------------------------------------
    def update(self):
        """Grow one round: one tree per output, added to the model and to the margins."""
        p, obj, K = self.params, self.obj, self.K
        ts = self.train_set
        n = ts.n_rows
        with threads(p["n_jobs"]):
            # each round's random numbers come from (seed, round): continued training draws
            # what one long run would have drawn
            rng = np.random.default_rng([p["random_state"], self.rounds])
            self.grower.rng = rng
            t0 = time.perf_counter()
            # the kernels around the trees launch as the trees' own do
            fused = self.grower.launches_prange()
            if self._dev:
                from ..backends.pages import DeviceRow

                self.pages.gradients()
                if p["sampling_method"] != "uniform":  # the draw reads g and h
                    self.pages.gradients_to_host(self.g, self.h)
            else:
                obj.gradients(self.pred, ts.label, ts.weight, self.g, self.h, parallel=fused)
            t0 = self.profile.add("update", t0)
            rows, weight = sampling.draw(p["sampling_method"], self.g, self.h, rng,
                                         p["subsample"], p["top_rate"], p["other_rate"],
                                         self.rounds, p["learning_rate"])
            if rows is None:
                if self._all_rows is None:
                    self._all_rows = np.empty(n, dtype=np.int32)
                if self.backend is not None:
                    self.backend.fill_row_ids(self._all_rows, parallel=fused)
                else:
                    self._all_rows[:] = np.arange(n, dtype=np.int32)
                rows = self._all_rows
            g, h, w = self.g, self.h, self.w
            sampled = rows.size < n
            compact = sampled and not self.pages.in_core
            if weight is not None:  # unbiased sums: the drawn rows' g, h and weights scaled
                if self._dev:  # on the device, where g and h are recomputed each round
                    self.pages.scale_sample(rows, weight)
                elif not compact:  # (a compacted sample scales its own copies)
                    g, h = g.copy(), h.copy()
                    g[:, rows] *= weight
                    h[:, rows] *= weight
                if obj.refit_leaves:  # leaf optima over the sample, weighted alike
                    w = np.array(w, dtype=np.float64)
                    w[rows] *= weight
            d = ts.n_features
            self.profile.add("other", t0)
            grower = self.grower
            if compact:
                # the out-of-core paper's Algorithm 7: the round's sample, compacted into one
                # in-memory page, grows the trees in core; the pages are read twice a round
                # (the gather, and the update of every row's prediction)
                sample = rows
                grower, g, h = self._compacted(sample, g, h, K, weight)
                rows = np.arange(sample.size, dtype=np.int32)
            # the K trees all start from these rows: their roots' histograms in one pass
            roots = None if self._dev else grower.class_roots(rows, g, h)
            for k in range(K):
                # each tree of the round draws its own features, as in XGBoost and LightGBM
                # (the K trees of a round shared one draw)
                pool = (np.arange(d) if self._feature_pool is None
                        else np.flatnonzero(self._feature_pool))
                if p["colsample_bytree"] < 1.0 and pool.size:
                    tree_mask = np.zeros(d, dtype=np.bool_)
                    tree_mask[rng.choice(pool, features_drawn(p["colsample_bytree"], pool.size,
                                                              p["colsample_rounding"]),
                                         replace=False)] = True
                else:
                    tree_mask = np.zeros(d, dtype=np.bool_)
                    tree_mask[pool] = True
                tree_rows = rows if k == K - 1 else rows.copy()
                gk, hk, pred_k = ((DeviceRow(self.pages.g, k), DeviceRow(self.pages.h, k),
                                   DeviceRow(self.pages.pred, k)) if self._dev
                                  else (g[k], h[k], self.pred[k]))
                tree, binned, leaves = grower.grow(tree_rows, gk, hk, tree_mask,
                                                   None if roots is None else roots[k])
                self._warn_if_too_light(tree)
                if grower is not self.grower:
                    leaves = _GlobalLeaves(leaves, sample)
                t0 = time.perf_counter()
                leaf_ids = np.flatnonzero(binned.feature < 0)
                constant = p["drop_unsplittable"] and leaf_ids.size == 1
                if constant:
                    # LightGBM's growth adds nothing for a tree that cannot split (its
                    # constant tree of 0; the first round's holds the base score, here
                    # apart): hardwood added its one leaf's step, 0.077 off LightGBM's
                    # multi-class probabilities once a class stopped splitting
                    tree.value[:] = 0.0
                    binned.value[:] = 0.0
                elif obj.refit_leaves:  # (w None: unweighted, no sampling weights)
                    _refit_leaves(obj, k, tree, binned, leaves, leaf_ids, ts.label, self.pred[k],
                                  None if w is self.w and not obj.weighs(ts.weight) else w,
                                  p["learning_rate"])
                if sampled:
                    self.pages.predict_binned(binned, pred_k)
                else:
                    leaves.add(binned.value[leaf_ids], pred_k)
                self._predict_valid(tree, binned, k)
                self.profile.add("update", t0)
                if not np.all(np.isfinite(tree.value)):
                    raise FloatingPointError(_non_finite_message(self.rounds, k, ts.label, p,
                                                                     ts.weight))
                self.trees.append(tree)
                self.groups.append(k)
            if grower is not self.grower:
                grower.release()
        self.rounds += 1

    def _warn_if_too_light(self, tree):
        """Warn, once, when a tree cannot split because all its rows' hessian sum is below
        twice ``min_child_weight``: weights that sum to about 1 (AdaBoost's, normalised survey
        weights) gave a constant model without a word (XGBoost's too; LightGBM's default
        floor is 1e-3). Only the weights' ratios matter, so scaling them up is the cure."""
        mcw = self.params["min_child_weight"]
        # (the first round of a weighted training only: later rounds of small hessians, and
        # small unweighted sets, are not the weights' doing)
        if getattr(self, "_warned_light", False) or self.rounds > 0 or \
                self.train_set.weight is None or tree.feature.shape[0] > 1 or \
                not 0 < tree.cover[0] < 2 * mcw:
            return
        self._warned_light = True
        warnings.warn(f"the first tree could not split: its rows' hessian sum "
                      f"{tree.cover[0]:.4g} is below twice min_child_weight ({mcw:g}), the "
                      "least each child needs. Only the sample weights' ratios matter: scale "
                      "them up (weights that sum to about 1 do this), or lower "
                      "min_child_weight", UserWarning, stacklevel=4)

    def _compacted(self, rows, g, h, K, weight):
        """(a grower over the sample's bins gathered from the pages, its g, its h: scaled by
        the sample's ``weight`` unless None)."""
        from ..backends.cpu import CPUBackend

        t0 = time.perf_counter()
        bins_row, bins_col = self.pages.gather(rows)
        offsets = self.train_set.bin_mapper.offsets
        if self.params["device"] == "cuda":  # the sample grows on the GPU
            from ..backends.cuda import CudaPages

            be, pages = None, CudaPages(bins_row, offsets, self._transfers_total)
        else:
            be = CPUBackend(bins_row, bins_col, offsets)
            pages = RowPages(be, rows.size)
        grower = Grower(be, pages, self.train_set.bin_mapper, self.grower.p, self.profile,
                        self.grower.rng)
        # (the training rows' rules and LightGBM's edges next to 0.0, not the sample's)
        grower.missing_rules, grower.zero_edges = self.grower.missing_rules, self.grower.zero_edges
        grower.trees_left = self.grower.trees_left
        self.grower.trees_left = max(0, self.grower.trees_left - K)
        self.profile.add("other", t0)
        g, h = np.ascontiguousarray(g[:, rows]), np.ascontiguousarray(h[:, rows])
        if weight is not None:
            g *= weight
            h *= weight
        return grower, g, h

    def eval(self):
        """``{set name: {metric: value}}`` of the current model on the validation sets."""
        t0 = time.perf_counter()
        out = {}
        if self._dev and any(v is self.train_set for v in self.valid_sets):
            self.pages.margins_to_host(self.pred)  # the training set's margins, from the GPU
        for v, vp, name in zip(self.valid_sets, self.valid_pred, self.valid_names):
            margin = (self.pred if v is self.train_set else vp).T
            pred = self.obj.transform(margin)
            vw = v.weight if v.weight is not None else np.ones(v.n_rows)
            out[name] = {m: (M.get_metric(m)(v.label, pred, v.weight, group=v.group,
                                             gain=getattr(self.obj, "gain", None))
                             if M.is_ranking(m) else
                             M.get_metric(m, self.params)(v.label, pred, vw))
                         for m in self.metric_names}
            if self.custom_metrics:  # (custom_metric / feval: train/custom_metric.py)
                user = pred[:, 0] if pred.ndim == 2 and pred.shape[1] == 1 else pred
                if self.model_objective == "multi:softmax":
                    # XGBoost's multi:softmax gives its metrics the predicted classes, as its
                    # predict does (the probabilities broke a metric written for it)
                    user = np.argmax(pred, axis=1).astype(np.float64)
                out[name].update(self.custom_metrics.scores(user, v, name, out[name]))
        self.profile.add("other", t0)
        return out

    def model(self, evals_result=None) -> Model:
        """A snapshot of the model so far: a Model of its own (its tree list is a copy, so
        later rounds, and the caches of this snapshot, never mix)."""
        m = Model(list(self.trees), np.asarray(self.groups, dtype=np.int32), self.base,
                  self.model_objective, self.K, self.train_set.info, params=self.params,
                  evals_result=evals_result)
        if self.best_iteration is not None:
            m.best_iteration, m.best_score = self.best_iteration, self.best_score
        return m

    def training_profile(self, total):
        prof = dict(self.profile.seconds)
        prof["total"] = total
        prof["other"] = max(0.0, total - sum(v for k, v in prof.items()
                                             if k not in ("other", "total")))
        # device="cuda": the bytes copied between host and device
        transfers = getattr(self.pages, "transfers", None) or self._transfers_total
        if transfers:
            prof.update(transfers)
        return prof


# -- init_model ---------------------------------------------------------------------------
class _GlobalLeaves:
    """The leaves of a tree grown on a compacted sample, with global row ids."""

    def __init__(self, leaves, ids):
        self.leaves, self.ids = leaves, ids

    def rows(self, i):
        return self.ids[self.leaves.rows(i)]


def predict_binned(bins_row, binned_tree, pred):
    """``pred[i] +=`` the leaf value of row i of an in-memory binned matrix (validation
    sets), whatever the training set's backend; ``bins_row``: dense, or ``SparseBins``."""
    from ..backends.sparse_cpu import predict_binned_any

    predict_binned_any(bins_row, binned_tree, pred)


def _zero_side_rows(ds, vp, grower, p, init_at_edges=False):
    """Under LightGBM's missing rule, the thresholds next to 0.0 are its +-1e-35
    (``Grower.lightgbm_threshold``), inside hardwood's bin of the values around 0.0: a
    validation value of 0.3 in a bin of 0.0 up to 0.5 went left with 0.0 by its bin, and
    right by the model's threshold, so ``evals_result`` (and early stopping) scored another
    model than ``predict`` (RMSE 0.035 logged, 1.632 predicted; stopped at round 3 where
    LightGBM stopped at 43). So did a value <= 0 of a field whose training values are all
    >= 1 with some missing: LightGBM's split of the missing values alone (+1e-35) sends it
    left with them, its bin right (RMSE 1.54 logged, 5.33 predicted).

    The rows of ``ds`` holding a value (``Dataset.zero_side``) that some such threshold
    routes otherwise than its bin: ``_ZeroRows`` (their values walked against the trees'
    thresholds, ``_predict_valid``), or None. ``init_at_edges``: an init model has such
    thresholds, whatever rule this training grows by (a model of LightGBM's rule continued
    under XGBoost's logged RMSE 1.2555 where its predictions gave 1.2786): then every entry
    is walked."""
    entries = getattr(ds, "zero_side", None)
    edges = getattr(grower, "zero_edges", None)
    lightgbm = p["missing_rule"] == "lightgbm" and edges is not None
    if entries is None or not (lightgbm or init_at_edges):
        return None
    rows, fields, values = entries
    if not lightgbm:  # (XGBoost's rule: no edges of its own, the init model's anywhere)
        edges = np.full((ds.n_features, 3), -1, dtype=np.int64)
    alone = lightgbm & np.isin(grower.missing_rules[fields],
                               (LGB_MISSING_ZERO, LGB_MISSING_BIN0_ZERO))
    e = edges[fields]
    if not (np.any(e >= 0) or np.any(alone) or init_at_edges):
        return None
    uniq, at = np.unique(rows, return_inverse=True)
    bins = _dense_bins_of_rows(ds, uniq)
    b = bins[at, fields].astype(np.int64)
    below, above = values <= -ZERO_EDGE, values <= ZERO_EDGE  # left of -1e-35, of +1e-35
    lo, hi, straddle = e[:, 0], e[:, 1], e[:, 2]
    differs = alone & above  # (the missing values alone left: every value bin goes right)
    differs |= (lo >= 0) & (below != (b <= lo))
    differs |= (hi >= 0) & (above != (b <= hi))
    differs |= (straddle >= 0) & ((below != (b <= straddle)) | (above != (b <= straddle)))
    if init_at_edges:  # (which of its trees' ±1e-35 thresholds a bin crosses: not known here)
        differs[:] = True
    if not differs.any():
        return None
    rows, fields, values = rows[differs], fields[differs], values[differs]
    own, at = np.unique(rows, return_inverse=True)
    cols, col = np.unique(fields, return_inverse=True)
    raw = np.full((own.size, cols.size), np.nan)  # (NaN: route by the bin)
    raw[at, col] = values
    column = np.full(ds.n_features, -1, dtype=np.int64)
    column[cols] = np.arange(cols.size)
    return _ZeroRows(own, bins[np.searchsorted(uniq, own)], raw, column,
                     np.ascontiguousarray(vp[:, own]))


class _ZeroRows:
    """A validation set's rows routed by their values at some fields (``_zero_side_rows``):
    ``rows``, their ``bins``, ``raw`` (rows x the fields of ``column``, NaN where the bin
    routes) and their ``margins`` (outputs x rows)."""

    def __init__(self, rows, bins, raw, column, margins):
        self.rows, self.bins, self.raw, self.column, self.margins = (rows, bins, raw, column,
                                                                      margins)

    def add(self, tree, binned, k, vp):
        """Add ``tree`` (``binned``) to output ``k`` of these rows' margins, and copy them
        into ``vp``, the set's margins, which their bins took it into: where the tree has no
        threshold of +-1e-35 at these fields, those are the margins."""
        from ..backends.cpu import predict_binned_rows_by_value

        f = binned.feature
        with np.errstate(invalid="ignore"):  # (categorical splits: NaN)
            at_edge = (f >= 0) & (np.abs(tree.threshold) == ZERO_EDGE)
        if not np.any(self.column[f[at_edge]] >= 0):
            self.margins[k] = vp[k, self.rows]
            return
        predict_binned_rows_by_value(self.bins, self.raw, self.column, binned, tree.threshold,
                                     self.margins[k])
        vp[k, self.rows] = self.margins[k]


def _dense_bins_of_rows(ds, rows):
    """The bins of rows ``rows`` of a Dataset (dense, sparse-binned made dense), a copy."""
    if ds.sparse_bins is None:
        return np.array(ds.bins_row[rows])
    sb = ds.sparse_bins
    out = np.empty((rows.size, sb.n_features), dtype=sb.dtype)
    out[:] = sb.default_bin.astype(sb.dtype)[None, :]
    for i, r in enumerate(rows):
        a, b = sb.indptr[r], sb.indptr[r + 1]
        out[i, sb.indices[a:b]] = sb.bins[a:b]
    return out


def _binned_rows(ds):
    """A Dataset's bins as ``predict_binned`` takes them: sparse if it was binned sparse."""
    return ds.sparse_bins if ds.sparse_bins is not None else ds.bins_row


def _stored_pages(train_set, paths=None, key=None, transfers=None):
    """The pages of ``train_set`` on disk (``paths``, ``key``; by default those of a
    ``Dataset.from_batches`` set), streamed by the learner, each page worked by the CPU
    backend, or with ``transfers`` (device='cuda': the copies are counted there) on the
    GPU."""
    from ..backends.pages import DiskPages

    if paths is None:
        paths, key = train_set.pages_on_disk
    offsets = train_set.bin_mapper.offsets
    if transfers is not None:
        from ..backends.cuda import CudaRowBackend

        return DiskPages(lambda rows, cols, lanes: CudaRowBackend(rows, cols, offsets, lanes,
                                                                  transfers), paths, key)
    from ..backends.cpu import CPUBackend

    return DiskPages(lambda rows, cols, lanes: CPUBackend(rows, cols, offsets, lanes), paths,
                     key)


def _check_queries(obj, train_set, valid_sets, valid_names, metric_names):
    """A ranking objective needs the training set's queries, and a ranking metric those of
    every set it scores; the gains must cover every set's labels."""
    from ..ranking import check_ranking_labels

    if train_set.group is None and train_set.pages_on_disk is not None:
        # (from_files dropped a LibSVM file's qid:, and the advice named arguments it lacks)
        raise ValueError(f"{obj.name} out of core is not supported yet: Dataset.from_batches "
                         "and from_files read no query groups; load the data in memory with "
                         "hardwood.Dataset(X, y, group=sizes) or qid=per-row query ids")
    if train_set.group is None:
        raise ValueError(f"{obj.name} needs query groups: hardwood.Dataset(X, y, group=sizes) "
                         "or qid=per-row query ids")
    obj.set_queries(train_set.group)
    for v, name in zip(valid_sets, valid_names):
        if v is train_set:
            continue
        check_ranking_labels(v.label, f"valid set {name!r}", obj.params.get("label_gain"))
        if v.label.size and int(v.label.max()) >= obj.gain.size:
            raise ValueError(f"valid set {name!r} has label {int(v.label.max())}, beyond "
                             f"label_gain's {obj.gain.size} grades")
        if v.group is None and any(M.is_ranking(m) for m in metric_names):
            raise ValueError(f"valid set {name!r} has no query groups for the ranking metrics "
                             f"{list(metric_names)}: give it group= or qid=")


def _device_objectives():
    from ..backends.cuda import DEVICE_GRADIENTS

    return DEVICE_GRADIENTS


def _check_cuda():
    from ..backends.forest_cuda import cuda_available

    ok, why = cuda_available()
    if not ok:
        raise RuntimeError(f"device='cuda': {why}")


def _cuda_pages(train_set, pages):
    """device='cuda': the rows as one page on the GPU (``backends/cuda.py``). (A Dataset on
    disk pages stays there: each sampled round's sample grows on the GPU, see
    ``Booster._compacted``; unsampled rounds stream the pages on the CPU.)"""
    if pages is not None:
        raise ValueError("device='cuda' keeps the rows in one page on the GPU; the pages "
                         "parameter does not apply")
    from ..backends.cuda import CudaPages

    return CudaPages(train_set.bins_row, train_set.bin_mapper.offsets)


def _disk_pages(train_set, spec):
    """The training set's bins written to binned pages on disk (``data/page_file.py``) and
    streamed from there (``backends.pages.DiskPages``): ``spec`` = {"dir": folder,
    "page_bytes": bytes per page (32 MiB)}. The pages' key is the bin mapper and the shape,
    so that pages of other data are refused."""
    import hashlib
    import json

    from ..data.page_file import write_pages

    unknown = set(spec) - {"dir", "page_bytes"}
    if unknown or "dir" not in spec:
        raise ValueError(f"pages on disk take {{'dir': folder, 'page_bytes': n}}, got {spec!r}")
    bm = train_set.bin_mapper
    key = hashlib.blake2b(json.dumps([bm.to_dict(), list(train_set.bins_row.shape),
                                      str(train_set.bins_row.dtype)]).encode(),
                          digest_size=32).digest()
    paths = write_pages(train_set.bins_row, spec["dir"], int(spec.get("page_bytes", 32 << 20)),
                        key)
    return _stored_pages(train_set, paths, key)


def _warn_if_growth_changed(p, params, init):
    """Warn where a LightGBM objective name alone, which brings LightGBM's leaf-wise growth
    since session 27, continues an init model that grew XGBoost's depth-wise trees under
    those same params (saved before): the new trees would grow otherwise without a word."""
    given = params or {}
    if (p["grow_policy"] == "lossguide" and init.params.get("grow_policy") == "depthwise"
            and not init.params.get("max_leaves")
            and not any(k in given for k in ("grow_policy", "max_leaves", "num_leaves",
                                             *LIGHTGBM_LEAF_NAMES))):
        warnings.warn(f"init_model grew XGBoost's depth-wise trees, but objective "
                      f"{given.get('objective')!r} alone now brings LightGBM's leaf-wise "
                      "growth and defaults (31 leaves, learning_rate 0.1): give "
                      "grow_policy='depthwise' (or max_leaves=0) to continue as the init "
                      "model grew", UserWarning, stacklevel=4)


def _carry_constraints(p, params, init):
    """Constraints the params do not name are the init model's, as XGBoost's continuation
    keeps its booster's: continuing a monotone model without them grew trees that broke its
    promise, without a word. Naming them, ``[]`` included, sets those of the new trees."""
    for key in ("monotone_constraints", "interaction_constraints"):
        named = any(k == key or ALIASES.get(k) == key for k in params)
        if not named and init.params.get(key) is not None:
            p[key] = init.params[key]


def _carry_objective_params(p, params, init):
    """The objective's own parameters the params do not name are the init model's, as
    XGBoost's continuation keeps its booster's: a reg:tweedie model of power 1.3 continued
    at the default 1.5 (0.77 off XGBoost's), a quantile model needed its quantile_alpha
    again, and a ranking model continued at the default truncation, gains and sigmoid
    (0.78-0.80 off the model trained in one go)."""
    objective = params.get("objective")
    lightgbm_quantile = isinstance(objective, str) and objective.lower() == "quantile"
    for key in (*OBJECTIVE_PARAMS, "max_delta_step", "lambdarank_truncation_level",
                "lambdarank_norm", "label_gain", "sigmoid"):
        named = any(k == key or ALIASES.get(k) == key
                    or (k == "alpha" and key == "quantile_alpha" and lightgbm_quantile)
                    for k in params)
        if not named and init.params.get(key) is not None:
            p[key] = init.params[key]


def _load_init_model(init_model):
    if init_model is None:
        return None
    if isinstance(init_model, Model):
        return init_model
    if isinstance(init_model, (str, os.PathLike)):
        from ..model.io import load_model
        return load_model(init_model)
    raise TypeError(f"init_model must be a hardwood.Model or the path of a saved model, got "
                    f"{type(init_model).__name__}")


def _start_margins_of(ds):
    return getattr(ds, "base_margin", None)  # (a Dataset from before it had them: None)


def _starting_margins(ds, base, K, what, add=False, own=True):
    """(K, n_rows) margins a set starts from: its rows' ``base_margin`` (XGBoost's; LightGBM's
    ``init_score``) where it has them and ``own``, in place of the base score (``add``: plus
    it, as LightGBM's), else the base score."""
    m = _start_margins_of(ds) if own else None
    out = np.empty((K, ds.n_rows))
    if m is None:
        out[:] = base[:, None]
        return out
    if m.shape[1] != K:
        raise ValueError(f"{what}'s base_margin has {m.shape[1]} column(s), but the model "
                         f"has {K} output(s): give one starting margin per row and output")
    out[:] = m.T + (base[:, None] if add else 0.0)
    return out


def _lightgbm_names(p, named):
    """Whether training follows LightGBM's rules: its growth (num_leaves, which brings
    ``drop_unsplittable``) or its objective names (``named``, as given)."""
    return bool(p["drop_unsplittable"] or (
        isinstance(named, str) and named.lower() in LIGHTGBM_OBJECTIVES))


def _from_best_rounds(init, p, named):
    """An early-stopped ``init`` predicts with its rounds up to ``best_iteration``, as
    LightGBM's. Under LightGBM's names training continues from those rounds, as LightGBM's
    does (``lgb.train`` returns its model cut there): it continued from every round, the
    ones past the best too, 0.449 off LightGBM's continued model. Under XGBoost's names it
    continues from every round, as XGBoost's, with a warning: what ``init`` predicted is not
    where its trees continue (``init_model=model[:model.best_iteration + 1]`` is)."""
    if init is None or init.best_iteration is None:
        return init
    best = int(init.best_iteration) + 1
    if best >= init.num_boosted_rounds:
        return init
    if _lightgbm_names(p, named):
        return init[:best]
    warnings.warn(f"init_model stopped early: it predicts with its first {best} rounds "
                  f"(best_iteration {init.best_iteration}), but training continues from all "
                  f"its {init.num_boosted_rounds} rounds, as XGBoost's does; to continue from "
                  f"its best rounds, pass init_model=model[:{best}] (LightGBM's names do that)",
                  UserWarning, stacklevel=4)
    return init


def _check_init_model(init, train_set, K):
    info = train_set.info
    if init.n_outputs != K:
        raise ValueError(f"init_model has {init.n_outputs} outputs, but this training has {K}")
    if init.trees_per_round != K:
        raise ValueError(f"init_model grows {init.trees_per_round // K} trees per output a "
                         "round (XGBoost's num_parallel_tree), hardwood one: its rounds would "
                         "be miscounted; continue training it in XGBoost")
    if list(init.info.names) != list(info.names) and not (
            unnamed(init.info.names) and unnamed(info.names)
            and len(init.info.names) == len(info.names)):
        # (both unnamed, f0.. or LightGBM's Column_0..: by position, as predict reads them)
        raise ValueError(f"init_model's features {list(init.info.names)[:8]} differ from the "
                         f"Dataset's {list(info.names)[:8]}")
    for j in np.flatnonzero(np.asarray(info.is_categorical) | init.info.is_categorical):
        if (bool(init.info.is_categorical[j]) != bool(info.is_categorical[j])
                or list(init.info.categories[j] or []) != list(info.categories[j] or [])):
            raise ValueError(f"init_model's categories of feature {info.names[j]!r} differ from "
                             "the Dataset's; build the Dataset from the data the model was "
                             "trained on, or with reference= a Dataset of that data (rows "
                             "that lack some of its categories then keep its codes)")
    if init._leaves_are_shares_of_a_mean():
        # (its thresholds lie between sample values inside the boosting bins, and its leaves
        # hold shares of the forest's mean: "build the Dataset from the data the model was
        # trained on" was the advice, which it already was)
        raise ValueError("init_model is a random forest: boosting does not continue a "
                         "forest's trees (its splits fall inside the Dataset's bins and its "
                         "leaves hold shares of the forest's mean); boost on its residuals, "
                         "y - forest.predict(X), instead")
    if init.info.unseen_left is not None and init.info.unseen_left.any():
        raise ValueError("init_model sends categories its training never saw left at every "
                         "split (XGBoost's rule, kept by the importer), which hardwood's "
                         "training does not do; continue training it in XGBoost, or train "
                         "without init_model")


def bin_tree(tree, train_set) -> BinnedTree:
    """``tree`` (raw thresholds) over ``train_set``'s bins, exactly: each bin of a split's
    feature must lie wholly on one side of the split (a model trained on these bins always
    does). A split inside a bin would need the raw values, which a Dataset does not keep."""
    bm = train_set.bin_mapper
    n = tree.feature.shape[0]
    table_offset = np.zeros(n, dtype=np.int64)
    tables = []
    pos = 0
    for i in np.flatnonzero(tree.feature >= 0):
        f = int(tree.feature[i])
        nv = int(bm.n_value_bins[f])
        tbl = np.zeros(nv + 1, dtype=np.uint8)
        if tree.is_categorical[i]:
            n_cat = len(train_set.info.categories[f] or [])
            left = mask_from_bitset(tree.cat_bitsets[int(tree.cat_offset[i]):], n_cat)
            bins = bm.category_bins(f)
            for b in range(nv):
                side = np.unique(left[bins == b])
                if side.size > 1:
                    raise ValueError(f"init_model: a split on feature {f} separates categories "
                                     "that share a bin of this Dataset")
                tbl[b] = bool(side[0]) if side.size else False
        else:
            edges = np.asarray(bm.upper_edges[f], dtype=np.float64)
            t = float(tree.threshold[i])
            # bin b holds (edges[b-1], edges[b]]: left when edges[b] <= t, right when
            # edges[b-1] >= t; the last bin is unbounded above
            lower = np.concatenate([[-np.inf], edges[:-1]])
            # a threshold a few ulps from an edge is that edge: LightGBM writes its midpoints
            # one ulp above (20.500000000000004 for 20.5), and every imported LightGBM model
            # was refused as splitting inside a bin. An edge lies half a gap between two
            # values, far more than EDGE_ULPS ulps from either
            with np.errstate(invalid="ignore"):  # (the last edge, +inf: no spacing)
                near = np.where(np.isfinite(edges), EDGE_ULPS * np.spacing(np.abs(edges)), 0.0)
            left_bins = edges <= t + near
            right_bins = lower >= t - np.concatenate([[0.0], near[:-1]])
            if abs(t) == ZERO_EDGE:
                # LightGBM's edges next to 0.0 (Grower.lightgbm_threshold) lie inside the bin
                # of the values around 0.0, which all lie on one side of them
                for b in np.flatnonzero(~(left_bins | right_bins)):
                    side = _side_of_zero_edge(bm, f, lower[b], edges[b], t)
                    if side is not None:
                        left_bins[b], right_bins[b] = side, not side
            if not np.all(left_bins | right_bins):
                b = int(np.flatnonzero(~(left_bins | right_bins))[0])
                raise ValueError(f"init_model splits feature {f} at {t!r}, inside a bin of this "
                                 f"Dataset ({lower[b]!r}, {edges[b]!r}]; build the Dataset from "
                                 "the data the model was trained on (or with reference=). A "
                                 "model imported from XGBoost, LightGBM or scikit-learn splits "
                                 "at its own library's bin edges, which hardwood's bins need "
                                 "not share, even on the same data: continue training it in "
                                 "that library")
            tbl[:nv] = left_bins[:nv]
        tbl[nv] = bool(tree.default_left[i])
        table_offset[i] = pos
        pos += tbl.size
        tables.append(tbl)
    return BinnedTree(feature=tree.feature.astype(np.int64), table_offset=table_offset,
                      table=np.concatenate(tables) if tables else np.zeros(1, dtype=np.uint8),
                      left=tree.left.astype(np.int64), right=tree.right.astype(np.int64),
                      value=np.asarray(tree.value, dtype=np.float64))


def _side_of_zero_edge(bm, f, lo, hi, t):
    """Whether the training values of feature ``f`` in the bin (lo, hi] lie left of a
    threshold ``t`` of +-1e-35 (True), right of it (False), or on both sides or unknown
    (None), from the values around 0.0 that the bin mapper recorded (its greatest value
    below 0.0, least above, and whether 0.0 is one). A LightGBM-rule model (num_leaves, or
    missing_rule='lightgbm') splits there next to 0.0: continuing it on its own Dataset was
    refused as "a split inside a bin"."""
    below = getattr(bm, "below_zero", None)
    if below is None:
        return None
    below, above, zero = float(below[f]), float(bm.above_zero[f]), bool(bm.has_zero[f])
    if (not np.isnan(below) and below > -ZERO_EDGE) or (not np.isnan(above)
                                                          and above <= ZERO_EDGE):
        return None  # (values within 1e-35 of 0.0: the recorded ones do not tell)
    negative = not np.isnan(below) and below > lo  # (the bin holds a value below 0.0)
    positive = not np.isnan(above) and above <= hi
    left = negative or (zero and t > 0)
    right = positive or (zero and t < 0)
    return None if left == right else left


# -- checks and messages ------------------------------------------------------------------
def _check_valid_sets(train_set, valid_sets, valid_names):
    if isinstance(valid_sets, Dataset):
        valid_sets = [valid_sets]
    valid_sets = list(valid_sets or [])
    if isinstance(valid_names, str):
        valid_names = [valid_names]
    valid_names = list(valid_names or [])
    if valid_names and len(valid_names) != len(valid_sets):
        raise ValueError(f"valid_names has {len(valid_names)} names for {len(valid_sets)} valid_sets")
    if not valid_names:
        valid_names = ["train" if v is train_set else f"valid_{i}" for i, v in enumerate(valid_sets)]
    if not all(isinstance(name, str) for name in valid_names):
        raise TypeError(f"valid_names must be strings, got {valid_names!r}")
    dup = sorted({name for name in valid_names if valid_names.count(name) > 1})
    if dup:  # evals_result is keyed by name: one set's scores overwrote the other's
        raise ValueError(f"valid_names must be distinct; {dup[0]!r} names two valid sets")
    for v, name in zip(valid_sets, valid_names):
        if not isinstance(v, Dataset):
            raise TypeError(f"valid set {name!r} must be a hardwood.Dataset")
        if v.label is None:
            raise ValueError(f"valid set {name!r} has no labels")
        if v is not train_set and v.bin_mapper is not train_set.bin_mapper:
            if v.n_features != train_set.n_features or v.feature_names != train_set.feature_names:
                raise ValueError(f"valid set {name!r} has different columns from the training "
                                 f"set ({v.n_features} vs {train_set.n_features} features)")
            raise ValueError(f"valid set {name!r} was binned on its own; build it with "
                             "hardwood.Dataset(X, y, reference=train_set)")
    return valid_sets, valid_names


def _check_valid_labels(obj, y, name):
    """A validation set's labels must lie where the objective's metrics can read them (early
    stopping follows those metrics)."""
    problem = metric_label_problem(obj.name, obj.n_outputs, y)
    if problem is not None:
        raise ValueError(f"valid set {name!r}: {problem}; encode the validation labels as the "
                         "training labels (GBDTClassifier does it)")


def _classes_from_labels(y, objective):
    """The class count of multiclass labels given without ``num_class``: the labels must be
    the codes 0..K-1, every one of them present (a gap or a huge label is a mistake far more
    often than a class with no rows; pass ``num_class`` for that). ``objective``: the name
    the user gave, for the messages."""
    if np.any(y != np.floor(y)) or np.any(y < 0):
        raise ValueError(f"{objective} needs integer labels 0..num_class-1; use "
                         "GBDTClassifier to encode arbitrary labels")
    top = float(y.max())
    if top >= MAX_CLASSES:
        raise ValueError(f"{objective} labels must be the class codes 0..K-1; the largest "
                         f"label is {top:g} (at most {MAX_CLASSES} classes)")
    present = np.unique(y)
    K = int(top) + 1
    if present.size != K and present.size > 1:  # one class: the objective says so
        absent = np.setdiff1d(np.arange(K), present)
        raise ValueError(f"{objective} labels must be the class codes 0..K-1, each present: "
                         f"the labels run to {K - 1} but {absent.size} codes are absent (e.g. "
                         f"{absent[:5].tolist()}). Encode the labels as 0..K-1 (GBDTClassifier "
                         "does it), or pass num_class if some classes truly have no rows")
    return max(K, 2)


def _non_finite_message(it, k, y, p, w=None):
    big_w = w is not None and float(np.max(w)) > 1e6
    weights = f", weights up to {float(np.max(w)):g}" if big_w else ""
    return (f"training diverged: round {it} (output {k}) produced a non-finite leaf value "
            f"(labels range from {float(y.min()):g} to {float(y.max()):g}{weights}; gradients are "
            f"float32, so labels{' or weights x labels' if big_w else ''} beyond about 1e38, or a "
            f"learning_rate of {p['learning_rate']:g}, can overflow). Scale the labels"
            f"{', the weights' if big_w else ''} or lower learning_rate; no model was returned")


_FLOAT32_MAX = float(np.finfo(np.float32).max)
_FLOAT32_TINY = float(np.finfo(np.float32).tiny)


def _check_lambdarank_params(p, task):
    """LambdaMART's parameters given where nothing reads them were ignored without a word:
    ``rank:pairwise`` here is RankNet over every pair of a query (XGBoost's honours the
    truncation and the normalisation: 0.7-1.5 off), and the other tasks have no queries."""
    given = [k for k in ("lambdarank_truncation_level", "lambdarank_norm", "label_gain")
             if p[k] != DEFAULTS[k] and not (task == "ranking" and (
                 k == "label_gain" or objective_class(p["objective"]).name == "rank:ndcg"))]
    if not given:
        return
    if task == "ranking":
        raise ValueError(f"{given[0]} applies to rank:ndcg (LambdaMART); hardwood's "
                         "rank:pairwise is RankNet over every pair of a query, which it does "
                         "not change: use rank:ndcg, or leave it out")
    raise ValueError(f"{given[0]} applies to the ranking objectives (rank:ndcg), not "
                     f"{p['objective']!r}")


EDGE_ULPS = 8  # (bin_tree: a threshold this near an edge of the Dataset's is that edge)

# the widest span of a training set's positive weights before a warning: past about 2^52 / 4
# a heavy row's gradient sums hold nothing of a light one's (float64)
WEIGHT_SPAN = 1e15


def _check_weight_range(w, what):
    """Weights scale the float32 gradients (g x w): a weight beyond float32's range made them
    infinite, every split's gain NaN, and training returned trees without a split (the base
    score) with no more than numpy's warnings. XGBoost refuses such weights too."""
    if w is None:
        return
    big = w > _FLOAT32_MAX
    if big.any():
        i = int(np.flatnonzero(big)[0])
        raise ValueError(f"{what}'s weights exceed float32's range (about 3.4e38), which the "
                         f"gradients are computed in: {int(big.sum())} of them, the first "
                         f"{float(w[i]):g} at row {i}; scale the weights down (only their "
                         "ratios matter, with reg_lambda and min_child_weight scaled alike)")
    tiny = (w > 0) & (w < _FLOAT32_TINY) if what == "train_set" else None
    if tiny is not None and tiny.any():
        # (below float32's least normal number the gradients lose their digits, and below
        # 1.4e-45 become 0: a constant model without a word)
        i = int(np.flatnonzero(tiny)[0])
        raise ValueError(f"{what}'s weights are below float32's smallest normal number "
                         f"(about 1.2e-38), which the gradients are computed in: "
                         f"{int(tiny.sum())} of them, the first {float(w[i]):g} at row {i}; "
                         "scale the weights up (only their ratios matter, with reg_lambda and "
                         "min_child_weight scaled alike), or give 0 to rows meant to count "
                         "for nothing")
    positive = w[w > 0] if what == "train_set" else np.zeros(0)
    if positive.size and positive.max() > WEIGHT_SPAN * positive.min():
        # (3 rows of weight 1e16 among 4,000 of weight 1: a node of light rows only got its
        # sums as its parent's less its sibling's, nothing but rounding, and leaves of 1e33)
        warnings.warn(f"{what}'s weights span more than {WEIGHT_SPAN:.0e} (from "
                      f"{float(positive.min()):g} to {float(positive.max()):g}): float64 sums "
                      "of the gradients cannot hold the light rows beside the heavy ones, so "
                      "nodes of light rows can get values of rounding alone; clip the weights "
                      "or give 0 to rows meant to count for nothing", UserWarning, stacklevel=4)


def _refit_leaves(obj, k, tree, binned, leaves, leaf_ids, y, pred_k, w, lr):
    """Leaf value = learning_rate x objective's optimum over the leaf's residuals in output
    ``k`` (the weighted median for reg:absoluteerror; ``w`` None: unweighted)."""
    for i, leaf in enumerate(leaf_ids):
        r = leaves.rows(i)
        if r.size == 0:
            continue
        v = lr * obj.leaf_value(y[r] - pred_k[r], None if w is None else w[r], k)
        tree.value[leaf] = v
        binned.value[leaf] = v
