"""Ranking data from files (issue 15): query groups from a LibSVM file's qid:, a
LightGBM-style .query file beside the data, a --group file, or a CSV/Parquet qid column;
and ``hardwood train`` on them."""
import os
import re

import numpy as np
import pytest

import hardwood
from hardwood.cli import main
from hardwood.data.readers import (libsvm_qids, query_file_beside, read_group_file,
                                   read_table, read_table_with_queries)
from hardwood.ranking import ranking_metric

SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")
RANK_TRAIN = os.path.join(SHARED, "rank.train")


def _write(path, text):
    path.write_text(text)
    return str(path)


def _rank_lines(n_queries=12, rows=10, seed=0, qid=False):
    """LibSVM lines of a learnable ranking task: the label follows feature 1."""
    rng = np.random.default_rng(seed)
    lines = []
    for q in range(n_queries):
        for _ in range(rows):
            x = rng.random(3)
            label = int(x[0] * 3.999)
            head = f"{label} qid:{q + 7}" if qid else f"{label}"
            lines.append(head + " " + " ".join(f"{j + 1}:{v:.4f}" for j, v in enumerate(x)))
    return "\n".join(lines) + "\n"


# -- LibSVM qid ------------------------------------------------------------------------------
def test_libsvm_qids_read_back(tmp_path):
    path = _write(tmp_path / "r.svm", "2 qid:5 1:1\n# a comment line\n0 qid:5 2:1\n\n"
                                      "1 qid:9 1:3 # tail\n")
    X, y, names, queries = read_table_with_queries(path)
    assert X.shape == (3, 2) and names == ["f1", "f2"]
    np.testing.assert_array_equal(queries.qid, [5, 5, 9])
    assert queries.group is None and "r.svm" in queries.source
    np.testing.assert_array_equal(queries.boundaries(3), [0, 2, 3])
    np.testing.assert_array_equal(libsvm_qids(path), [5, 5, 9])
    ds = hardwood.Dataset(X, y, **queries.dataset_kwargs())
    np.testing.assert_array_equal(ds.group, [0, 2, 3])


def test_libsvm_without_queries(tmp_path):
    path = _write(tmp_path / "plain.svm", "1 1:2\n0 2:1\n")
    assert read_table_with_queries(path)[3] is None
    assert libsvm_qids(path) is None


def test_libsvm_mixed_qid_lines_refused(tmp_path):
    path = _write(tmp_path / "mixed.svm", "1 qid:1 1:2\n# c\n0 qid:1 2:1\n1 1:4\n")
    with pytest.raises(ValueError, match=r"mixed\.svm.*line 1 has one, line 4 has none"):
        read_table_with_queries(path)
    X, _, _ = read_table(path)  # read_table never looks at queries
    assert X.shape == (3, 2)


def test_non_contiguous_qids_refused(tmp_path):
    path = _write(tmp_path / "nc.svm", "1 qid:1 1:2\n0 qid:2 2:1\n1 qid:1 1:4\n")
    with pytest.raises(ValueError, match=r"nc\.svm.*qid 1 appears in rows that are not "
                                         "contiguous"):
        read_table_with_queries(path)


# -- .query files --------------------------------------------------------------------------
def test_query_file_beside_is_picked_up(tmp_path):
    path = _write(tmp_path / "rank.train", _rank_lines(n_queries=3, rows=4))
    assert query_file_beside(path) is None
    assert read_table_with_queries(path, fmt="libsvm")[3] is None
    side = _write(tmp_path / "rank.train.query", "5\n\n3\n4\n")
    assert query_file_beside(path) == side
    X, _, _, queries = read_table_with_queries(path, fmt="libsvm")
    np.testing.assert_array_equal(queries.group, [5, 3, 4])
    assert queries.qid is None and "rank.train.query" in queries.source
    np.testing.assert_array_equal(queries.boundaries(X.shape[0]), [0, 5, 8, 12])


def test_bad_query_sums_refused_naming_the_file(tmp_path):
    path = _write(tmp_path / "d.svm", _rank_lines(n_queries=2, rows=5))
    _write(tmp_path / "d.svm.query", "5\n4\n")
    with pytest.raises(ValueError, match=r"d\.svm\.query.*add up to 9 rows, but the data has "
                                         "10"):
        read_table_with_queries(path)
    other = _write(tmp_path / "sizes.txt", "3\n3\n")
    with pytest.raises(ValueError, match=r"sizes\.txt.*add up to 6 rows"):
        read_table_with_queries(path, group_file=other)


@pytest.mark.parametrize("text,problem", [("3\nabc\n", "line 2: 'abc'"),
                                          ("3\n0\n", "line 2: '0'"),
                                          ("\n\n", "holds no query sizes")])
def test_malformed_query_file(tmp_path, text, problem):
    path = _write(tmp_path / "q.query", text)
    with pytest.raises(ValueError, match="q.query") as e:
        read_group_file(path)
    assert problem in str(e.value)


def test_group_file_comes_first_and_must_agree_with_the_files_qids(tmp_path):
    path = _write(tmp_path / "d.svm", _rank_lines(n_queries=2, rows=5, qid=True))
    sizes = _write(tmp_path / "sizes", "5\n5\n")
    queries = read_table_with_queries(path, group_file=sizes)[3]
    np.testing.assert_array_equal(queries.group, [5, 5])
    sizes = _write(tmp_path / "sizes", "2\n8\n")  # it replaced the file's qids silently
    with pytest.raises(ValueError, match="disagree"):
        read_table_with_queries(path, group_file=sizes)


def test_own_qids_and_query_file_must_agree(tmp_path):
    path = _write(tmp_path / "d.svm", _rank_lines(n_queries=2, rows=5, qid=True))
    side = tmp_path / "d.svm.query"
    side.write_text("5\n5\n")
    np.testing.assert_array_equal(read_table_with_queries(path)[3].qid, [7] * 5 + [8] * 5)
    side.write_text("4\n6\n")
    with pytest.raises(ValueError, match="disagree"):
        read_table_with_queries(path)


# -- CSV / Parquet qid column ----------------------------------------------------------------
def test_csv_qid_column(tmp_path):
    path = _write(tmp_path / "r.csv", "a,query,b,y\n1,q1,2,0\n3,q1,4,1\n5,q2,6,2\n")
    X, y, names, queries = read_table_with_queries(path, "y", qid_column="query")
    assert names == ["a", "b"] and list(X.columns) == ["a", "b"]
    np.testing.assert_array_equal(y, [0, 1, 2])
    assert list(queries.qid) == ["q1", "q1", "q2"]
    np.testing.assert_array_equal(queries.boundaries(3), [0, 2, 3])
    with pytest.raises(ValueError, match="'nope' is not among the feature columns"):
        read_table_with_queries(path, "y", qid_column="nope")
    with pytest.raises(ValueError, match="also the label"):
        read_table_with_queries(path, "y", qid_column="y")


def test_csv_qid_column_with_missing_value(tmp_path):
    path = _write(tmp_path / "m.csv", "a,qid,y\n1,1,0\n3,,1\n")
    with pytest.raises(ValueError, match=r"m\.csv.*missing value .*data row 2"):
        read_table_with_queries(path, "y", qid_column="qid")


def test_parquet_qid_column(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    path = str(tmp_path / "r.parquet")
    pd.DataFrame({"a": [1.0, 2.0, 3.0], "qid": [4, 4, 2], "y": [0, 1, 0]}).to_parquet(path)
    X, _, names, queries = read_table_with_queries(path, "y", qid_column="qid")
    assert names == ["a"]
    np.testing.assert_array_equal(queries.qid, [4, 4, 2])


# -- hardwood train ------------------------------------------------------------------------
def _train(tmp_path, *args):
    out = str(tmp_path / "model.json")
    code = main(["train", "-p", "objective=rank:ndcg", "-p", "max_depth=3", "--rounds", "5",
                 "-q", "--out", out, *args])
    return code, out


def test_cli_trains_rank_ndcg_on_libsvm_and_query_file(tmp_path, capsys):
    data = _write(tmp_path / "rank.train", _rank_lines())
    _write(tmp_path / "rank.train.query", "10\n" * 12)
    valid = _write(tmp_path / "rank.valid", _rank_lines(n_queries=4, seed=1, qid=True))
    code, out = _train(tmp_path, "--data", data, "--format", "libsvm", "--valid", valid,
                       "-p", "eval_metric=ndcg@5")
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "12 queries" in captured.out and "valid-ndcg@5" in captured.out
    model = hardwood.load(out)
    X, y, _ = read_table(data, fmt="libsvm")
    scores = model.predict(X)
    assert scores.shape == (120,) and np.all(np.isfinite(scores))
    # the score follows feature 1, as the labels do
    assert np.corrcoef(scores, y)[0, 1] > 0.8


def test_cli_trains_on_csv_qid_column_and_group_file(tmp_path, capsys):
    rng = np.random.default_rng(0)
    rows = ["a,b,qid,label"] + [f"{a:.4f},{b:.4f},{i // 8},{int(a * 3.999)}"
                                for i, (a, b) in enumerate(rng.random((64, 2)))]
    data = _write(tmp_path / "r.csv", "\n".join(rows) + "\n")
    code, out = _train(tmp_path, "--data", data, "--label", "label", "--qid-column", "qid")
    assert code == 0, capsys.readouterr().err
    assert hardwood.load(out).feature_names == ["a", "b"]
    sizes = _write(tmp_path / "sizes", "8\n" * 8)
    svm = _write(tmp_path / "r.svm", _rank_lines(n_queries=8, rows=8))
    code, _ = _train(tmp_path, "--data", svm, "--group", sizes)
    assert code == 0, capsys.readouterr().err


@pytest.mark.parametrize("query,args,message", [
    ("5\n4\n", (), r"r\.svm\.query.*add up to 9 rows, but the data has 10"),
    (None, (), "a ranking objective needs the query groups of"),
    (None, ("--qid-column", "q"), "does not apply to the LibSVM file"),
])
def test_cli_bad_groups_are_clean_errors(tmp_path, capsys, query, args, message):
    data = _write(tmp_path / "r.svm", _rank_lines(n_queries=2, rows=5))
    if query is not None:
        _write(tmp_path / "r.svm.query", query)
    code, out = _train(tmp_path, "--data", data, *args)
    err = capsys.readouterr().err
    assert code == 2 and not os.path.exists(out)
    assert err.startswith("hardwood: error: ") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert re.search(message, err), err


def test_cli_groups_need_a_ranking_objective(tmp_path, capsys):
    data = _write(tmp_path / "r.svm", _rank_lines(n_queries=2, rows=5))
    sizes = _write(tmp_path / "sizes", "5\n5\n")
    code = main(["train", "--data", data, "--group", sizes, "--rounds", "2", "-q",
                 "--out", str(tmp_path / "m.json")])
    assert code == 2
    assert "apply to a ranking objective only" in capsys.readouterr().err


@pytest.mark.skipif(not (os.path.isfile(RANK_TRAIN) and os.path.isfile(RANK_TRAIN + ".query")),
                    reason="the shared LETOR data (../shared/data/rank.train) is absent")
def test_cli_trains_on_shared_rank_train(tmp_path, capsys):
    code, out = _train(tmp_path, "--data", RANK_TRAIN, "--format", "libsvm",
                       "-p", "eval_metric=ndcg@10")
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "3005 rows x 300 features, 201 queries" in captured.out
    X, _, _ = read_table(RANK_TRAIN, fmt="libsvm")
    assert hardwood.load(out).predict(X).shape == (3005,)


# -- hardwood predict ----------------------------------------------------------------------
def test_cli_predict_scores_a_ranking_model_over_its_queries(tmp_path, capsys):
    data = _write(tmp_path / "r.svm", _rank_lines(qid=True))
    code, out = _train(tmp_path, "--data", data)
    assert code == 0, capsys.readouterr().err
    capsys.readouterr()
    rng = np.random.default_rng(5)  # labels that only half follow the scores
    test = _write(tmp_path / "t.svm", "".join(
        f"{int(rng.integers(0, 4)) if rng.random() < 0.5 else line[0]}{line[1:]}\n"
        for line in _rank_lines(n_queries=5, rows=8, seed=2).splitlines()))
    pred = str(tmp_path / "p.csv")
    # the queries from a --group file, from <data>.query, then none at all
    sizes = _write(tmp_path / "sizes", "8\n" * 5)
    assert main(["predict", "-m", out, "--data", test, "--group", sizes, "--out", pred]) == 0
    said = capsys.readouterr().out
    X, y, _ = read_table(test, fmt="libsvm", n_features=3)
    ptr = np.arange(0, 41, 8)
    p = hardwood.load(out).predict(X)
    scores = {m: float(v) for m, v in re.findall(r"(\w+@\d+) ([0-9.e-]+)", said)}
    assert set(scores) == {"ndcg@1", "ndcg@3", "ndcg@10", "map@10"}, said
    for m, v in scores.items():
        assert abs(v - ranking_metric(m, y, p, ptr)) < 1e-5, (m, v)
    assert scores["ndcg@10"] < 1 and "5 queries" in said
    _write(tmp_path / "t.svm.query", "8\n" * 5)
    assert main(["predict", "-m", out, "--data", test, "--out", pred]) == 0
    assert re.findall(r"(\w+@\d+) ([0-9.e-]+)", capsys.readouterr().out) == \
        [(m, str(v)) for m, v in re.findall(r"(\w+@\d+) ([0-9.e-]+)", said)]
    os.remove(tmp_path / "t.svm.query")
    assert main(["predict", "-m", out, "--data", test, "--out", pred]) == 0
    said = capsys.readouterr().out
    assert "no ranking scores" in said and "--group FILE" in said
    np.testing.assert_allclose(np.loadtxt(pred, skiprows=1), p, rtol=1e-6)
    # groups that do not fit the rows, and groups for a model that does not rank
    bad = _write(tmp_path / "bad", "8\n" * 4)
    assert main(["predict", "-m", out, "--data", test, "--group", bad, "--out", pred]) == 2
    assert "add up to 32 rows, but the data has 40" in capsys.readouterr().err
    reg = str(tmp_path / "reg.json")
    assert main(["train", "--data", test, "--rounds", "2", "-q", "--out", reg]) == 0
    capsys.readouterr()
    assert main(["predict", "-m", reg, "--data", test, "--group", sizes, "--out", pred]) == 2
    assert "score a ranking model only" in capsys.readouterr().err
