"""hardwood.plot: each plot rendered to PNG with the Agg backend; what it draws read back from
the Axes (bar lengths, curves, dot positions, labels) against the model's own numbers."""
import copy
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import hardwood
from hardwood import plot

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

NAMES = ["age", "income", "city", "score"]
CITIES = ["Paris", "Lyon", "Nice", "Lille", "Brest", "Metz"]


def frame(n, seed):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"age": rng.normal(40, 10, n), "income": rng.lognormal(10, 1, n),
                       "city": pd.Categorical(rng.choice(CITIES, n), categories=CITIES),
                       "score": rng.normal(size=n)})
    df.loc[rng.random(n) < 0.1, "age"] = np.nan
    logit = (0.08 * (df.age.fillna(40) - 40) + np.log(df.income) - 10
             + df.city.isin(["Paris", "Nice"]) * 1.5 + df.score)
    y = (logit + rng.normal(scale=0.5, size=n) > 0).astype(int).to_numpy()
    return df, y


def train_model(**kwargs):
    """12 rounds of depth 3 on ``frame`` data, logloss and auc recorded on train and valid."""
    X, y = frame(400, 0)
    Xv, yv = frame(200, 1)
    train = hardwood.Dataset(X, y)
    valid = hardwood.Dataset(Xv, yv, reference=train)
    return hardwood.train({"objective": "binary:logistic", "max_depth": 3,
                           "eval_metric": ["logloss", "auc"]}, train, num_boost_round=12,
                          valid_sets=[train, valid], valid_names=["train", "valid"], **kwargs)


@pytest.fixture(scope="module")
def model():
    return train_model()


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def save_png(ax, path):
    """Render the Axes' figure to a PNG; check it is a real, non-empty image."""
    ax.figure.savefig(path, dpi=80)
    raw = path.read_bytes()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    img = matplotlib.image.imread(path)
    assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100
    assert img[..., :3].std() > 0.05  # something is drawn, not a blank canvas
    return img


def texts(ax):
    return [t.get_text() for t in ax.texts]


def ytick_labels(ax):
    return [t.get_text() for t in ax.get_yticklabels()]


@pytest.mark.parametrize("kind,model_kind", [("gain", "gain"), ("split", "weight"),
                                             ("cover", "cover")])
def test_plot_importance(model, tmp_path, kind, model_kind):
    ax = plot.plot_importance(model, importance_type=kind)
    assert isinstance(ax, matplotlib.axes.Axes)
    save_png(ax, tmp_path / f"importance_{kind}.png")
    imp = model.feature_importances(model_kind)
    used = [j for j in np.argsort(imp, kind="stable") if imp[j] > 0]
    # bars from the least important (bottom) to the most important (top), named
    assert ytick_labels(ax) == [NAMES[j] for j in used]
    np.testing.assert_allclose([b.get_width() for b in ax.patches], imp[used])
    assert kind in ax.get_xlabel()


def test_plot_importance_on_given_axes_and_top_features(model, tmp_path):
    fig, axes = plt.subplots(1, 2)
    ax = plot.plot_importance(model, "split", ax=axes[1], max_num_features=2)
    assert ax is axes[1]
    weight = model.feature_importances("weight")
    assert ytick_labels(ax) == [NAMES[j] for j in np.argsort(weight, kind="stable")[-2:]]
    save_png(ax, tmp_path / "two.png")
    with pytest.raises(ValueError, match="importance_type must be one of"):
        plot.plot_importance(model, "shap")


def test_plot_tree_shows_conditions_categories_missing_and_leaves(model, tmp_path):
    tree_index = next(i for i, t in enumerate(model.trees) if t.is_categorical.any())
    tree = model.trees[tree_index]
    ax = plot.plot_tree(model, tree_index)
    save_png(ax, tmp_path / "tree.png")
    labels = texts(ax)
    internal = np.flatnonzero(tree.feature >= 0)
    # one box per node, one label per edge: 'yes' (left) / 'no' (right), 'missing' on the
    # default side only
    assert len(labels) == tree.n_nodes + 2 * internal.size
    edges = [s for s in labels if s.split(",")[0] in ("yes", "no")]
    assert sorted(edges) == sorted(
        w for i in internal for w in (("yes, missing", "no") if tree.default_left[i]
                                      else ("yes", "no, missing")))
    for i in internal:
        name = NAMES[tree.feature[i]]
        if tree.is_categorical[i]:
            words = tree.cat_bitsets[tree.cat_offset[i]:]
            left = [c for k, c in enumerate(CITIES) if (int(words[0]) >> k) & 1]
            assert f"{name} ∈ {{{', '.join(left)}}}" in [s.replace("\n", " ") for s in labels]
        else:  # 'x ≤ r' where r, the rounded threshold, is at least it; else 'x < r'
            conds = [s.split() for s in labels if s.split()[:1] == [name]]
            assert any((op == "≤" and float(r) >= tree.threshold[i] - 5e-3 * abs(
                tree.threshold[i])) or (op == "<" and float(r) > tree.threshold[i])
                for _, op, r, *_ in conds)
    leaves = sorted(float(s.split()[1]) for s in labels if s.startswith("leaf "))
    np.testing.assert_allclose(leaves, np.sort(tree.value[tree.feature < 0]), rtol=5e-3)
    assert ax.get_title().startswith(f"Tree {tree_index}: {tree.n_leaves} leaves")


def test_plot_tree_show_info_and_bad_index(model):
    tree = model.trees[0]
    fig, own = plt.subplots()
    ax = plot.plot_tree(model, 0, show_info=("gain", "count"), ax=own)
    assert ax is own
    assert sum("gain" in s for s in texts(ax)) == int((tree.feature >= 0).sum())
    assert sum("count" in s for s in texts(ax)) == tree.n_nodes
    with pytest.raises(IndexError, match="tree_index 12 is outside the model's 12 trees"):
        plot.plot_tree(model, model.num_trees)


def test_plot_metric(model, tmp_path):
    ax = plot.plot_metric(model.evals_result, metric="auc")
    save_png(ax, tmp_path / "metric.png")
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    for name in ("train", "valid"):
        np.testing.assert_allclose(lines[name].get_ydata(), model.evals_result[name]["auc"])
        np.testing.assert_array_equal(lines[name].get_xdata(), np.arange(1, 13))
    assert ax.get_ylabel() == "auc" and ax.get_xlabel() == "Iterations"
    # a Model: its first metric, and its best iteration marked
    stopped = copy.copy(model)
    stopped.best_iteration = 4
    fig, own = plt.subplots()
    ax = plot.plot_metric(stopped, ax=own)
    assert ax is own and ax.get_ylabel() == "logloss"
    assert "best iteration (5)" in [ln.get_label() for ln in ax.get_lines()]
    with pytest.raises(ValueError, match="no learning curves recorded"):
        plot.plot_metric({})
    with pytest.raises(ValueError, match="metric 'rmse' was not recorded"):
        plot.plot_metric(model, "rmse")


def test_plot_shap_summary(model, tmp_path):
    X, _ = frame(150, 2)
    ax = plot.plot_shap_summary(model, X)
    save_png(ax, tmp_path / "shap.png")
    contrib = model.predict(X, output="contrib")[:, :-1]
    order = np.argsort(-np.abs(contrib).mean(axis=0), kind="stable")
    assert ytick_labels(ax) == [NAMES[j] for j in order[::-1]]  # most important on top
    for rank, j in enumerate(order):
        # each feature's dots: at its contributions, within its row's band
        dots = [np.asarray(c.get_offsets()) for c in ax.collections]
        pts = np.concatenate([d for d in dots
                              if len(d) and abs(np.median(d[:, 1]) - (3 - rank)) < 0.45])
        np.testing.assert_allclose(np.sort(pts[:, 0]), np.sort(contrib[:, j]))
        assert np.all(np.abs(pts[:, 1] - (3 - rank)) <= 0.4 + 1e-9)
    assert "SHAP value" in ax.get_xlabel()


def test_plot_shap_summary_bad_input(model):
    X, _ = frame(20, 3)
    with pytest.raises(ValueError, match="has 3 features, but the model"):
        plot.plot_shap_summary(model, X[["age", "income", "score"]].to_numpy(float))
    bare = copy.deepcopy(model)
    for t in bare.trees:
        t.cover[:] = 0.0
    with pytest.raises(ValueError, match="needs each node's cover"):
        plot.plot_shap_summary(bare, X)
    with pytest.raises(TypeError, match="expected a hardwood.Model"):
        plot.plot_importance("model.json")


def test_a_multiclass_summary_names_its_class(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = np.argmax(X, axis=1)
    m = hardwood.train({"objective": "multi:softprob", "num_class": 3, "max_depth": 2},
                       hardwood.Dataset(X, y), num_boost_round=3)
    with pytest.raises(ValueError, match="has 3 outputs: pass class_index="):
        plot.plot_shap_summary(m, X)
    fig, own = plt.subplots()
    ax = plot.plot_shap_summary(m, X, class_index=2, ax=own)
    assert ax is own
    assert "class 2" in ax.get_title()
    assert "class 1" in plot.plot_tree(m, 4).get_title()  # round 1, class 1
    save_png(ax, tmp_path / "multi.png")


def test_without_matplotlib_the_error_names_the_extra(model, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails
    for draw in (lambda: plot.plot_importance(model), lambda: plot.plot_tree(model, 0),
                 lambda: plot.plot_metric(model), lambda: plot.plot_shap_summary(model, None)):
        with pytest.raises(ImportError, match=r"pip install 'hardwood\[plot\]'"):
            draw()


def test_hardwood_imports_without_matplotlib():
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "import hardwood, hardwood.plot, hardwood.report, hardwood.cli\n"
            "hardwood.cli.build_parser()\n"
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
