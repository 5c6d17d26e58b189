"""Plots of a model: feature importance, one tree, learning curves and a SHAP summary.

matplotlib is an optional extra (``pip install 'hardwood[plot]'``), imported only when a plot
is drawn, so ``import hardwood`` never needs it. Each function returns the matplotlib ``Axes``
it drew on and takes ``ax=`` to draw on one of yours; without it, a new figure is made with
pyplot, as ``xgboost.plot_importance`` and ``lightgbm.plot_tree`` do.

Each takes a :class:`hardwood.Model` or a fitted hardwood estimator (its ``model_``);
:func:`plot_metric` takes an ``evals_result`` dict as well.
"""
from __future__ import annotations

import math
import textwrap

import numpy as np

from .model.model import Model
from .model.tree import mask_from_bitset

INSTALL_HINT = "pip install 'hardwood[plot]'"
# importance_type -> Model.feature_importances kind ('split' is LightGBM's name for 'weight')
IMPORTANCE_TYPES = {"gain": "gain", "split": "weight", "weight": "weight", "cover": "cover",
                    "total_gain": "total_gain", "total_cover": "total_cover"}
_IMPORTANCE_LABEL = {"gain": "mean gain of its splits", "weight": "number of splits",
                     "cover": "mean cover of its splits", "total_gain": "total gain",
                     "total_cover": "total cover"}
BAR_COLOR = "#4c72b0"
# the blue-to-red of the shap package's summary plots: low feature values blue, high red
SHAP_COLORS = ("#008afb", "#ff0052")
MISSING_COLOR = "#8c8c8c"


def require_matplotlib():
    """The matplotlib module, or an ImportError that names the extra to install."""
    try:
        import matplotlib
    except ImportError:
        raise ImportError("hardwood's plots need matplotlib, an optional extra: "
                          f"{INSTALL_HINT}") from None
    return matplotlib


def _axes(ax, figsize):
    """``ax``, or the axes of a new pyplot figure of ``figsize`` inches."""
    require_matplotlib()
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figsize)
    return ax


def as_model(model) -> Model:
    """A :class:`hardwood.Model` from a Model or a fitted hardwood estimator."""
    if isinstance(model, Model):
        return model
    inner = getattr(model, "model_", None)
    if isinstance(inner, Model):
        return inner
    raise TypeError(f"expected a hardwood.Model or a fitted hardwood estimator, got "
                    f"{type(model).__name__}")


def _fmt(v, precision=4):
    v = float(v)
    if v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return f"{v:.{precision}g}"


def _num(v, precision):
    """``v`` to ``precision`` significant digits, but whole up to 1e9 (20912, not 2.09e+04)."""
    v = float(v)
    if math.isfinite(v) and 1 <= abs(v) < 1e9:
        precision = max(precision, int(math.log10(abs(v))) + 1)
    return f"{v:.{precision}g}"


def _whole(name, v, lo):
    """``v`` as an int >= ``lo``: an integer of any kind (np.int64 too), never a bool."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < lo:
        what = "a positive integer" if lo == 1 else f"an integer >= {lo}"
        raise ValueError(f"{name} must be {what}, got {v!r}")
    return int(v)


def _threshold_text(t, precision):
    """The condition ``x ≤ t`` to ``precision`` digits. Where rounding goes up (an XGBoost
    import's threshold is the float just below XGBoost's ``x < 1``: 0.99999997), it reads
    ``< 1``: "≤ 1" sent a row of 1 left in the picture, right in the model."""
    text = _num(t, precision)
    return f"< {text}" if float(text) > float(t) else f"≤ {text}"


def _tidy(ax, grid_axis=None):
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    if grid_axis:
        ax.grid(True, axis=grid_axis, linestyle=":", linewidth=0.8, alpha=0.7)
        ax.set_axisbelow(True)


# -- importance ---------------------------------------------------------------------------
def plot_importance(model, importance_type="gain", *, ax=None, max_num_features=None,
                    title="Feature importance", xlabel=None, ylabel="Features", height=0.6,
                    color=BAR_COLOR, show_values=True, precision=4, grid=True, figsize=None,
                    iteration_range=None):
    """Horizontal bars of each feature's importance, the most important on top.

    importance_type : 'gain' (mean gain of the feature's splits), 'split' (number of splits;
        'weight' in XGBoost's words), 'cover' (mean cover of its splits), 'total_gain' or
        'total_cover' (:meth:`hardwood.Model.feature_importances`). Features the model never
        splits on are left out, as XGBoost does.
    max_num_features : show only the most important ones.
    iteration_range : the rounds counted, as :meth:`hardwood.Model.predict`'s; every round by
        default, as XGBoost's ``get_score`` (LightGBM's counts up to its best iteration:
        ``(0, best_iteration + 1)``).
    """
    require_matplotlib()
    model = as_model(model)
    kind = IMPORTANCE_TYPES.get(importance_type)
    if kind is None:
        raise ValueError(f"importance_type must be one of {tuple(IMPORTANCE_TYPES)}, got "
                         f"{importance_type!r}")
    if max_num_features is not None:
        max_num_features = _whole("max_num_features", max_num_features, 1)
    precision = _whole("precision", precision, 0)
    imp = np.asarray(model.feature_importances(kind, iteration_range), dtype=np.float64)
    order = [j for j in np.argsort(imp, kind="stable") if imp[j] > 0]  # ascending
    if not order:
        raise ValueError("no feature has any importance: the model's trees have no splits")
    if max_num_features is not None:
        order = order[-max_num_features:]
    ax = _axes(ax, figsize or (7, max(2.5, 0.32 * len(order) + 1.3)))
    values = imp[order]
    pos = np.arange(len(order))
    ax.barh(pos, values, height=height, align="center", color=color)
    names = model.feature_names
    ax.set_yticks(pos, labels=[names[j] for j in order])
    ax.set_ylim(-0.5 - height / 2, len(order) - 0.5 + height / 2)
    ax.set_xlim(0, values.max() * (1.18 if show_values else 1.05))
    if show_values:
        pad = values.max() * 0.01
        for p, v in zip(pos, values):
            ax.text(v + pad, p, _fmt(v, precision), va="center", fontsize="small")
    ax.set_title(title)
    ax.set_xlabel(xlabel if xlabel is not None
                  else f"Importance ({importance_type}: {_IMPORTANCE_LABEL[kind]})")
    ax.set_ylabel(ylabel)
    _tidy(ax, "x" if grid else None)
    return ax


# -- one tree -----------------------------------------------------------------------------
def _layout(tree):
    """x (leaves 0, 1, ... left to right; a split midway over its children) and depth of
    each node, yes (left) branch first."""
    n = tree.n_nodes
    x = np.zeros(n)
    depth = np.zeros(n, dtype=np.int64)
    next_leaf = 0
    stack = [(0, False)]
    while stack:  # post-order without recursion: deep trees stay within Python's limits
        i, children_done = stack.pop()
        if tree.feature[i] < 0:
            x[i] = next_leaf
            next_leaf += 1
        elif children_done:
            x[i] = (x[tree.left[i]] + x[tree.right[i]]) / 2
        else:
            for c in (tree.left[i], tree.right[i]):
                depth[c] = depth[i] + 1
            stack += [(i, True), (int(tree.right[i]), False), (int(tree.left[i]), False)]
    return x, depth


def _category_set(tree, i, info, max_items):
    """The categories node ``i`` sends left, as ``{a, b, ...}``."""
    j = int(tree.feature[i])
    cats = list(info.categories[j] or [])
    n_codes = int(info.n_categories[j])
    words = tree.cat_bitsets[int(tree.cat_offset[i]):]
    left = np.flatnonzero(mask_from_bitset(words, n_codes))
    # a code past the categories is the unseen-category code (FeatureInfo.unseen_left)
    names = [str(cats[c]) if c < len(cats) else ("unseen" if cats else str(c)) for c in left]
    shown = names[:max_items]
    more = f", … +{len(names) - len(shown)}" if len(names) > len(shown) else ""
    return "{" + ", ".join(shown) + more + "}"


def _node_label(model, tree, i, precision, show_info, max_categories):
    if tree.feature[i] < 0:  # (a forest's leaf was drawn as its share of the forest's mean)
        lines = [f"leaf {_num(tree.value[i] * model.leaf_value_scale(), precision)}"]
    else:
        name = model.feature_names[int(tree.feature[i])]
        if tree.is_categorical[i]:
            cond = f"{name} ∈ {_category_set(tree, i, model.info, max_categories)}"
        else:
            cond = f"{name} {_threshold_text(tree.threshold[i], precision)}"
        lines = textwrap.wrap(cond, 30, break_on_hyphens=False) or [cond]
        if "gain" in show_info:
            lines.append(f"gain {_num(tree.gain[i], precision)}")
    if "cover" in show_info:
        lines.append(f"cover {_num(tree.cover[i], precision)}")
    if "count" in show_info:
        lines.append(f"count {int(tree.count[i])}")
    return "\n".join(lines)


SHOW_INFO = ("gain", "cover", "count")


def plot_tree(model, tree_index=0, *, ax=None, precision=3, show_info=(), max_categories=6,
              fontsize=9, title=None, figsize=None):
    """Draw one tree with matplotlib alone (no graphviz): each split's condition (a row goes
    left, 'yes', when ``x ≤ threshold``, or when its category is in the set; the branch that
    missing values take says 'missing'), and the leaf values.

    tree_index : the tree's index in ``model.trees`` (multiclass models keep one tree per
        class per round: round ``r``'s tree for class ``k`` is ``r * n_classes + k``).
    show_info : any of 'gain' (at splits), 'cover', 'count' (at every node), as LightGBM's
        ``show_info``.
    max_categories : the most categories a categorical split lists before '… +N'.
    """
    require_matplotlib()
    model = as_model(model)
    n_trees = model.num_trees
    if isinstance(tree_index, (bool, np.bool_)) or not isinstance(tree_index, (int, np.integer)):
        raise TypeError(f"tree_index must be an integer, got {type(tree_index).__name__}")
    if not 0 <= tree_index < n_trees:
        raise IndexError(f"tree_index {tree_index} is outside the model's {n_trees} trees "
                         f"(0..{n_trees - 1})")
    show_info = () if show_info is None else show_info  # (LightGBM's default)
    if isinstance(show_info, str) or not hasattr(show_info, "__iter__") \
            or any(s not in SHOW_INFO for s in show_info):
        raise ValueError(f"show_info takes a list of {SHOW_INFO}, got {show_info!r}")
    precision = _whole("precision", precision, 0)
    max_categories = _whole("max_categories", max_categories, 1)
    tree = model.trees[int(tree_index)]
    x, depth = _layout(tree)
    n_leaves, max_depth = tree.n_leaves, int(depth.max())
    ax = _axes(ax, figsize or (min(max(6.0, 1.7 * n_leaves), 60.0),
                               min(max(3.0, 1.25 * (max_depth + 1)), 40.0)))
    y = -depth.astype(np.float64)
    edge_box = dict(boxstyle="round,pad=0.15", fc="white", ec="none")
    for i in np.flatnonzero(tree.feature >= 0):
        for child, word, missing in ((tree.left[i], "yes", tree.default_left[i]),
                                     (tree.right[i], "no", not tree.default_left[i])):
            ax.plot([x[i], x[child]], [y[i], y[child]], color="#7f7f7f", lw=1.1, zorder=1)
            ax.text((x[i] + x[child]) / 2, (y[i] + y[child]) / 2,
                    word + (", missing" if missing else ""), ha="center", va="center",
                    fontsize=fontsize - 1, color="#404040", bbox=edge_box, zorder=2)
    for i in range(tree.n_nodes):
        leaf = tree.feature[i] < 0
        box = dict(boxstyle="round,pad=0.4", lw=1.0,
                   fc="#fff4d6" if leaf else "#e3eefa", ec="#c09a2a" if leaf else "#4c72b0")
        ax.text(x[i], y[i], _node_label(model, tree, i, precision, show_info, max_categories),
                ha="center", va="center", fontsize=fontsize, bbox=box, zorder=3)
    ax.set_xlim(-0.7, max(n_leaves - 1, 0) + 0.7)
    ax.set_ylim(-max_depth - 0.5, 0.5)
    ax.set_axis_off()
    if title is None:
        title = f"Tree {tree_index}"
        if model.n_outputs > 1:  # (a class, or a quantile of reg:quantileerror)
            k = int(model.tree_group[tree_index])
            alpha = (model.params or {}).get("quantile_alpha")
            title += (f" (quantile {alpha[k]:g})" if isinstance(alpha, (list, tuple))
                      and len(alpha) == model.n_outputs else f" (class {k})")
        title += f": {n_leaves} lea{'f' if n_leaves == 1 else 'ves'}, depth {max_depth}"
    ax.set_title(title)
    return ax


# -- learning curves ----------------------------------------------------------------------
def plot_metric(evals_result, metric=None, *, dataset_names=None, ax=None, best_iteration=None,
                title=None, xlabel="Iterations", ylabel=None, grid=True, figsize=None):
    """Learning curves: one metric, per round, for each evaluated data set.

    evals_result : ``{data set: {metric: [value per round]}}`` as ``hardwood.train`` records
        it (``Model.evals_result``), or a Model or fitted estimator (then its best iteration,
        if training stopped early, is marked).
    metric : which metric (default: the first one recorded).
    """
    require_matplotlib()
    if isinstance(evals_result, Model) or hasattr(evals_result, "model_"):
        model = as_model(evals_result)
        evals_result = model.evals_result
        if best_iteration is None:
            best_iteration = model.best_iteration
    if not isinstance(evals_result, dict):
        raise TypeError(f"evals_result must be a dict (Model.evals_result) or a Model, got "
                        f"{type(evals_result).__name__}")
    flat = [name for name, ms in evals_result.items() if not isinstance(ms, dict)]
    if flat:
        raise TypeError(f"evals_result maps each data set to its metrics' curves, "
                        f"{{'valid_0': {{'rmse': [...]}}}}; {flat[0]!r} holds a "
                        f"{type(evals_result[flat[0]]).__name__}")
    curves = {name: ms for name, ms in evals_result.items()
              if any(len(v) for v in ms.values())}
    if not curves:
        raise ValueError("no learning curves recorded: evals_result is empty (train with "
                         "valid_sets=[...] to record them; a model file does not keep them)")
    if dataset_names is not None:
        if isinstance(dataset_names, str):  # one name, not its letters
            dataset_names = [dataset_names]
        missing = [n for n in dataset_names if n not in curves]
        if missing:
            raise ValueError(f"no curves for data set(s) {missing}; recorded: {list(curves)}")
        curves = {n: curves[n] for n in dataset_names}
    recorded = list(dict.fromkeys(m for ms in curves.values() for m in ms))
    if metric is None:
        metric = recorded[0]
    elif metric not in recorded:
        raise ValueError(f"metric {metric!r} was not recorded; recorded: {recorded}")
    ax = _axes(ax, figsize or (7, 4.2))
    for name, ms in curves.items():
        values = ms.get(metric)
        if values:
            ax.plot(np.arange(1, len(values) + 1), values, label=name, lw=1.6)
    if best_iteration is not None:
        ax.axvline(best_iteration + 1, color="#7f7f7f", ls="--", lw=1,
                   label=f"best iteration ({best_iteration + 1})")
    ax.legend(loc="best", frameon=False)
    ax.set_title(title if title is not None else f"{metric} during training")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel if ylabel is not None else metric)
    _tidy(ax, "both" if grid else None)
    return ax


# -- SHAP summary -------------------------------------------------------------------------
def _swarm(values, rng, nbins=100, width=0.4):
    """Vertical offsets that pile points of nearly equal x into a beeswarm (the shap
    package's layout): points in one of ``nbins`` bins take alternate sides, outward."""
    n = values.shape[0]
    if n == 0:
        return np.zeros(0)
    lo, hi = float(values.min()), float(values.max())
    binned = np.round(nbins * (values - lo) / (hi - lo + 1e-12)).astype(np.int64)
    order = np.lexsort((rng.random(n), binned))
    b = binned[order]
    starts = np.r_[0, np.flatnonzero(np.diff(b)) + 1]
    layer = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))
    offset = np.empty(n)
    offset[order] = np.ceil(layer / 2) * np.where(layer % 2 == 1, 1.0, -1.0)
    top = np.abs(offset).max()
    return offset * (width / top) if top > 0 else offset


def _value_colors(column, categorical):
    """Each row's place in [0, 1] between its feature's 5th and 95th percentile; NaN where
    the value is missing or categorical (drawn grey)."""
    if categorical or not np.isfinite(column).any():
        return np.full(column.shape, np.nan)
    finite = column[np.isfinite(column)]
    lo, hi = np.percentile(finite, [5, 95])
    if hi <= lo:
        lo, hi = finite.min(), finite.max()
    if hi <= lo:
        return np.where(np.isfinite(column), 0.5, np.nan)
    with np.errstate(invalid="ignore"):
        return np.clip((column - lo) / (hi - lo), 0.0, 1.0)


def plot_shap_summary(model, X, *, max_display=20, class_index=None, ax=None, title=None,
                      dot_size=12, alpha=0.8, seed=0, figsize=None):
    """A beeswarm of the SHAP contributions (``Model.predict(X, output='contrib')``): one row
    per feature, the most important (mean |SHAP|) on top, one dot per row of ``X`` at its
    contribution to the margin, coloured by the feature's value (blue low, red high; grey
    when missing or categorical), as the shap package's ``summary_plot``.

    class_index : which output, for a model with several (multiclass).
    """
    mpl = require_matplotlib()
    model = as_model(model)
    contrib = np.asarray(model.predict(X, output="contrib"))
    if model.n_outputs > 1:
        if isinstance(class_index, (bool, np.bool_)) \
                or not isinstance(class_index, (int, np.integer)) \
                or not 0 <= class_index < model.n_outputs:  # (1.7 and '1' drew class 1)
            raise ValueError(f"the model has {model.n_outputs} outputs: pass class_index= one "
                             f"of 0..{model.n_outputs - 1}, got {class_index!r}")
        contrib = contrib[:, int(class_index), :]
    elif class_index not in (None, 0):
        raise ValueError(f"class_index {class_index!r}: the model has one output")
    shap = contrib[:, :-1]  # the last column is the bias
    if shap.shape[0] == 0:
        raise ValueError("X has no rows to explain")
    max_display = _whole("max_display", max_display, 1)
    values = model.prepare(X)
    importance = np.abs(shap).mean(axis=0)
    order = np.argsort(-importance, kind="stable")[:max_display]
    ax = _axes(ax, figsize or (7.5, max(2.8, 0.42 * len(order) + 1.5)))
    cmap = mpl.colors.LinearSegmentedColormap.from_list("hardwood_shap", SHAP_COLORS)
    rng = np.random.default_rng(seed)
    names = model.feature_names
    for rank, j in enumerate(order):
        pos = len(order) - 1 - rank
        ys = pos + _swarm(shap[:, j], rng)
        c = _value_colors(values[:, j], bool(model.info.is_categorical[j]))
        grey = np.isnan(c)
        if grey.any():
            ax.scatter(shap[grey, j], ys[grey], s=dot_size, color=MISSING_COLOR, alpha=alpha,
                       linewidths=0, zorder=2)
        ax.scatter(shap[~grey, j], ys[~grey], s=dot_size, c=c[~grey], cmap=cmap, vmin=0, vmax=1,
                   alpha=alpha, linewidths=0, zorder=3)
    ax.axvline(0, color="#999999", lw=0.8, zorder=1)
    ax.set_yticks(np.arange(len(order)), labels=[names[j] for j in order[::-1]])
    ax.set_ylim(-0.7, len(order) - 0.3)
    ax.tick_params(axis="y", length=0)
    for y in range(len(order)):
        ax.axhline(y, color="#dddddd", lw=0.6, ls=":", zorder=0)
    ax.set_xlabel("SHAP value (impact on the model's raw output)")
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    sm = mpl.cm.ScalarMappable(norm=mpl.colors.Normalize(0, 1), cmap=cmap)
    bar = ax.figure.colorbar(sm, ax=ax, ticks=[0, 1], aspect=40, fraction=0.04, pad=0.02)
    bar.set_ticklabels(["Low", "High"])
    bar.set_label("Feature value", labelpad=-8)
    bar.outline.set_visible(False)
    if title is None:
        title = "SHAP summary"
        if model.n_outputs > 1:
            title += f" (class {int(class_index)})"
        hidden = shap.shape[1] - len(order)
        if hidden > 0:
            title += f": top {len(order)} of {shap.shape[1]} features"
    ax.set_title(title)
    return ax

