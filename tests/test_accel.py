"""The Booster accelerator model (issue 16): the cost model on hand-computed cases, and the
trace against what the CPU backend really did."""
import json

import numpy as np
import pytest

import hardwood as hw
from hardwood.accel import constants as C
from hardwood.accel import model as M
from hardwood.accel.trace import Layout, Trace, naive_max_load, record_trace
from hardwood.backends.booster import BLOCK_SPANS, TreeTrace, distinct_blocks
from hardwood.cli import main


# -- hand-built traces -------------------------------------------------------------------------
def _trace(n_bins, n_rows, hist=(), part=(), leaves=((None, 0),), load=1.0, split=0.0):
    """A one-tree trace: ``hist`` (rows, ascending row ids) binned in ①, ``part`` (rows, field)
    split in ③, ``leaves`` (rows or None for all, depth) in ⑤."""
    t = TreeTrace(n_rows)
    for rows in hist:
        t.hist_rows.append(len(rows))
        t.hist_blocks.append(distinct_blocks(rows))
        t.hist_depth.append(0)
    for rows, f in part:
        t.part_rows.append(len(rows))
        t.part_blocks.append(distinct_blocks(rows))
        t.part_field.append(f)
        t.part_depth.append(0)
    for rows, depth in leaves:
        t.leaf_rows.append(n_rows if rows is None else len(rows))
        t.leaf_depth.append(depth)
        t.leaf_fields.append(depth)
    lay = Layout(n_rows, np.asarray(n_bins), np.zeros(len(n_bins), dtype=bool), load)
    return Trace(lay, [t], {"histogram": 0.0, "split": split, "partition": 0.0,
                            "update": 0.0})


def test_distinct_blocks_of_rows():
    rows = np.array([0, 1, 7, 8, 63, 64, 200])
    got = dict(zip(BLOCK_SPANS, distinct_blocks(rows)))
    # //8: 0,0,0,1,7,8,25 -> 5 distinct; //64: 0,0,0,0,0,1,3 -> 3
    assert got[1] == 7 and got[8] == 5 and got[64] == 3
    assert distinct_blocks([]).sum() == 0


def test_one_record_one_field_one_tree():
    """One record, one 256-bin field, a tree that is its root (a leaf): hand arithmetic."""
    tr = _trace([256], 1, hist=[np.array([0])])
    b = M.step_seconds(tr, "booster")
    # ①: pointer 4 B + the record's block 64 B + the (g, h) block 64 B = 132 B at 400 GB/s;
    # compute 1 record x 8 cycles / (50 replicas x 1 GHz) = 0.16 ns < 0.33 ns: memory-bound
    mem1 = 132 / 400e9
    # the reduction of 50 copies x 256 bins x 2 channels on 32 host cores at 2.2 GHz
    red = 50 * 256 * 2 / (32 * 2.2e9)
    assert b["histogram"] == pytest.approx(mem1 + red)
    # ⑤ with the column format: no field read (a leaf), g and h read and written: 16 B;
    # compute 1 visit x 8 cycles / 3200 BUs at 1 GHz = 2.5 ps < 40 ps
    assert b["update"] == pytest.approx(16 / 400e9)
    assert b["partition"] == 0 and b["split"] == 0
    m = M.step_seconds(tr, "multicore")
    # ①: the same 132 B; compute 1 field x 8 cycles / (32 x 2.2 GHz) = 0.11 ns; reduction of
    # 32 copies on itself
    assert m["histogram"] == pytest.approx(mem1 + 32 * 256 * 2 / (32 * 2.2e9))
    # ⑤ row-major: 1/64 of a block (1 B) + 16 B = 17 B -> 42.5 ps; compute 8 / 70.4 GHz =
    # 113.6 ps: compute-bound
    assert m["update"] == pytest.approx(8 / (32 * 2.2e9))
    g = M.step_seconds(tr, "gpu")
    assert g["update"] == pytest.approx(8 / (64 * 2.2e9))


def test_rate_matching_of_section_iii_b():
    """§III-B: 64 one-byte fields a block, 8 cycles a field on 3,200 BUs at 1 GHz consume
    exactly the 6.25 blocks a cycle that 400 GB/s delivers."""
    n = 6400
    tr = _trace([256] * 64, n, hist=[np.arange(n)])
    b = M.step_seconds(tr, "booster", M.Config(double_buffer=False))
    records = n * 64 / 400e9                        # 6,400 blocks of records: 1.024 us
    compute = n * 8 / (50 * 1e9)                     # 50 records at once: 1.024 us
    assert records == pytest.approx(compute)
    # without double buffering the two add up; pointers 4 B a row, (g, h) n/8 blocks
    mem = (n * 4 + n * 64 + n / 8 * 64) / 400e9
    red = 50 * 64 * 256 * 2 / (32 * 2.2e9)
    assert b["histogram"] == pytest.approx(mem + compute + red)
    b2 = M.step_seconds(tr, "booster")
    assert b2["histogram"] == pytest.approx(max(mem, compute) + red)


def test_wide_records_and_fields_spanning_sram():
    """115 one-byte fields: 2 blocks and 2 clusters a record (25 replicas), g and h fetched
    per field partition (§III-C(1), (2)); a 300-bin field spans 2 SRAMs (2 bytes)."""
    assert M.record_layout(115) == (1, 2)
    assert M.record_layout(28) == (2, 1)       # two records a block (§III-C(2))
    assert M.record_layout(10) == (4, 1)       # 16-byte slots
    lay = Layout(1, np.array([256] * 115), np.zeros(115, dtype=bool))
    assert M.booster_replicas(lay, True) == (25, 115, 1.0)
    assert list(M.field_bytes([256, 257, 600], True)) == [1, 2, 3]
    assert list(M.field_bytes([256, 257, 600], False)) == [1, 2, 2]
    n = 800
    tr = _trace([256] * 115, n, hist=[np.arange(n)])
    b = M.step_seconds(tr, "booster")
    # memory: 4 B + 2 blocks a row + (g, h) n/8 blocks twice; compute n x 8 / 25 replicas
    mem = (n * 4 + n * 2 * 64 + 2 * (n / 8) * 64) / 400e9
    red = 25 * 115 * 256 * 2 / (32 * 2.2e9)
    assert b["histogram"] == pytest.approx(max(mem, n * 8 / 25e9) + red)


def test_partition_reads_one_column_or_whole_records():
    """③ on 640 contiguous rows of a 2-field record, on field 1 (300 bins: 2-byte entries)."""
    n = 640
    rows = np.arange(n)
    tr = _trace([256, 300], n, part=[(rows, 1)])
    col = M.step_seconds(tr, "booster")
    # pointers in and out 8 B a row; the column: 2-byte entries, 32 a block: 20 blocks
    assert col["partition"] == pytest.approx(max((n * 8 + 20 * 64) / 400e9, n * 8 / 3200e9))
    row = M.step_seconds(tr, "booster", M.Config(column_format=False))
    # group-by-field record: 1 + 2 = 3 B, 4-byte slots, 16 a block: 40 blocks
    assert row["partition"] == pytest.approx((n * 8 + 40 * 64) / 400e9)


def test_naive_packing_serialises_the_busiest_sram():
    tr = _trace([256] * 4, 64, hist=[np.arange(64)], load=3.0)
    gbf = M.step_seconds(tr, "booster", M.Config(double_buffer=False))
    naive = M.step_seconds(tr, "booster", M.Config(group_by_field=False, double_buffer=False))
    # group-by-field: 4 SRAMs, 1 cluster, 50 replicas; naive: ceil(1024 / 256) = 4 SRAMs too,
    # but 3 updates on the busiest one: compute x 3
    red = 50 * 1024 * 2 / (32 * 2.2e9)
    assert naive["histogram"] - gbf["histogram"] == pytest.approx(2 * 64 * 8 / 50e9)
    assert gbf["histogram"] > red


def test_naive_max_load_from_bins():
    # two fields of 128 bins share SRAM 0: every record updates it twice
    bins = np.array([[0, 5], [127, 0]], dtype=np.uint8)
    assert naive_max_load(bins, np.array([0, 128, 256])) == 2.0
    # 256-bin fields each fill an SRAM: no conflict
    assert naive_max_load(bins, np.array([0, 256, 512])) == 1.0


def test_ir_copies_from_the_area():
    # a 28-field, 256-bin histogram is 57,344 B; 16.9 MB of one-bank SRAM holds 295 (the
    # paper's IR has 271 for Higgs), and 179 of Mq2008's 46 fields (the paper: 179)
    assert M.ir_copies(28 * 256) == 295
    assert M.ir_copies(46 * 256) == 179
    assert M.ir_copies(10 ** 7) == 0


def test_inference_one_tree_depth_six():
    n = 600
    tr = _trace([256] * 8, n, leaves=[(np.arange(n), 6)])
    b = M.inference_seconds(tr, "booster", trees=500)
    # 6 copies of the trees, each BU walks 6 vertices for n/6 records: 600 x 8 cycles at 1 GHz
    assert b == pytest.approx(max(n / 6 * 6 * 8 / 1e9, n / 8 * 64 / 400e9))
    m = M.inference_seconds(tr, "multicore", trees=500)
    assert m == pytest.approx(n * 6 * 500 * 8 / (32 * 2.2e9))


def test_scaling_rule():
    """Rows scale row-proportional counts; trees scale every count; ② scales with trees."""
    n = 1000
    tr = _trace([256] * 8, n, hist=[np.arange(n)], split=0.32)
    one = M.step_seconds(tr, "multicore")
    big = M.step_seconds(tr, "multicore", rows=10 * n, trees=5)
    assert big["split"] == pytest.approx(5 * one["split"]) == pytest.approx(5 * 0.32 / 32)
    red = 32 * 8 * 256 * 2 / (32 * 2.2e9)
    assert big["histogram"] - 5 * red == pytest.approx(50 * (one["histogram"] - red))


# -- the trace against the CPU backend ---------------------------------------------------------
def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    X[:, 5] = rng.integers(0, 40, size=n)
    y = X[:, 0] + np.sin(X[:, 1]) + 0.3 * (X[:, 5] % 3) + 0.1 * rng.normal(size=n)
    return X, y


def _expected_counts(tree, max_depth):
    """From a tree's own node counts: rows binned (the root, then the smaller child of each
    split whose children may split again) and rows partitioned."""
    depth = np.zeros(tree.feature.size, dtype=np.int64)
    binned = int(tree.count[0])
    parted = 0
    for i in range(tree.feature.size):
        if tree.feature[i] < 0:
            continue
        lc, rc = int(tree.left[i]), int(tree.right[i])
        depth[lc] = depth[rc] = depth[i] + 1
        parted += int(tree.count[i])
        if depth[i] + 1 < max_depth:
            binned += min(int(tree.count[lc]), int(tree.count[rc]))
    return binned, parted


def test_trace_counts_match_the_cpu_backend():
    X, y = _data()
    ds = hw.Dataset(X, y, categorical_features=[5])
    params = {"max_depth": 4, "learning_rate": 0.3}
    tr = record_trace(ds, params, 4)
    plain = hw.train({**params, "n_jobs": 1}, ds, 4)
    # the traced training builds the same model
    np.testing.assert_array_equal(tr.model.predict(X), plain.predict(X))
    for t, tree in zip(tr.trees, plain.trees):
        binned, parted = _expected_counts(tree, 4)
        assert sum(t.hist_rows) == binned
        assert sum(t.part_rows) == parted
        assert sum(t.leaf_rows) == X.shape[0]
        assert max(t.leaf_depth) <= 4
        assert set(t.fields) == set(int(f) for f in tree.feature if f >= 0)
    assert tr.layout.total_bins == int(ds.bin_mapper.n_bins.sum())
    assert tr.bins_scanned == tr.nodes_scanned * tr.layout.total_bins
    assert tr.host["histogram"] > 0 and tr.host["split"] > 0


def test_rows_binned_are_the_rows_the_backend_binned(monkeypatch):
    """Count the rows the CPU backend's histogram kernel is really given, per tree."""
    X, y = _data(2000, 1)
    ds = hw.Dataset(X, y, categorical_features=[5])
    from hardwood.backends.cpu import CPUBackend

    seen = []
    real = CPUBackend.build_histograms

    def counting(self, rows, begins, ends, g, h):
        seen.append(int(np.sum(np.asarray(ends) - np.asarray(begins))))
        return real(self, rows, begins, ends, g, h)

    monkeypatch.setattr(CPUBackend, "build_histograms", counting)
    tr = record_trace(ds, {"max_depth": 5}, 3)
    assert sum(seen) == int(tr.rows_binned().sum())


def test_trace_refuses_sampling():
    X, y = _data(500)
    with pytest.raises(ValueError, match="subsample"):
        record_trace(hw.Dataset(X, y), {"subsample": 0.5}, 1)


# -- the command line ------------------------------------------------------------------------
def test_simulate_preset_json(capsys):
    assert main(["simulate", "--preset", "paper", "--datasets", "higgs,flight",
                 "--traced-rows", "3000", "--traced-rounds", "3", "--json"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    summary = json.loads(out[-1])
    assert [d["name"] for d in summary["datasets"]] == ["Higgs", "Flight"]
    assert {"datasets", "scaled_datasets", "energy", "paper"} <= set(summary)
    for d in summary["datasets"]:
        assert d["speedup_vs_ideal_multicore"] > 1
        assert d["rows"] == {"Higgs": 10_000_000, "Flight": 10_000_000}[d["name"]]
        assert 1 <= d["bins_scanned_per_tree"] / d["bins"] <= 2 ** 6 - 1  # nodes searched
        assert 1 <= d["rows_binned_per_tree"] <= 3  # the root, then the smaller children
    assert "Fig. 9" in "\n".join(out) and "Fig. 13" in "\n".join(out)


def test_simulate_data_file_and_plots(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    X, y = _data(1500)
    path = tmp_path / "d.csv"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",",
               header=",".join([f"x{i}" for i in range(6)] + ["y"]), comments="")
    assert main(["simulate", "--data", str(path), "--label", "y", "--rounds", "2",
                 "--param", "max_depth=3", "--rows", "1000000", "--json",
                 "--plot", str(tmp_path / "plots")]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["datasets"][0]["rows"] == 1_000_000
    assert summary["datasets"][0]["traced_trees"] == 2
    pngs = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert "fig7_speedup.png" in pngs and len(pngs) == 7


@pytest.mark.parametrize("argv, msg", [
    (["simulate", "--preset", "nope"], "unknown preset"),
    (["simulate"], "one of --preset"),
    (["simulate", "--preset", "paper", "--datasets", "mnist"], "unknown data set"),
    (["simulate", "--data", "/no/such/file.csv", "--label", "y"], "no such"),
    (["simulate", "--preset", "paper", "--traced-rows", "0"], "positive"),
])
def test_simulate_bad_input_is_one_line(argv, msg, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert msg in err and len(err.strip().splitlines()) == 1


def test_constants_have_sources():
    for c in C.CONSTANTS:
        assert c.source, c.name
        if c.source == "assumption":
            assert c.note, c.name
    assert C.SRAM_BINS == 256
    assert "IR_SRAM_BYTES" in C.table_markdown()
