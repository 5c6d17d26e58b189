"""The paper's experiment on the model, as tables, a JSON summary and PNG plots.

``run_experiment`` traces each stand-in (``accel/presets.py``) or a user's data set, runs the
cost model at the modelled size and at 10x (§V-F), and returns one summary dict; ``tables``
renders it as the paper's figures (6, 7, 8, 9, 10, 12, 13) in plain-text tables, beside the
paper's numbers where the paper states them; ``plots`` draws them with matplotlib.
"""
from __future__ import annotations

import math
import time

import numpy as np

from . import constants as C
from .model import STEPS, Config, energy, sequential_breakdown, simulate
from .presets import PAPER, PAPER_RESULTS, dataset
from .trace import record_trace

STEP_LABELS = {"histogram": "① hist", "split": "② split", "partition": "③ part",
               "update": "⑤ update"}


def geomean(values):
    v = [x for x in values if x is not None and x > 0]
    return float(math.exp(sum(math.log(x) for x in v) / len(v))) if v else None


def summarise(name, trace, rows, trees, cfg=Config(), scale_up=C.SCALE_UP, extra=None):
    """One data set's entry of the summary: its layout, the model at ``rows`` and ``trees``,
    and at ``scale_up`` times the rows."""
    res = simulate(trace, rows, trees, cfg)
    big = simulate(trace, rows * scale_up, trees, cfg)
    seq = sequential_breakdown(trace, rows, trees)
    lay = trace.layout
    rb = trace.rows_binned()
    entry = {
        "name": name,
        "traced_rows": lay.n_rows, "traced_trees": trace.n_trees, "rows": int(rows),
        "trees": int(trees), "fields": lay.n_fields,
        "categorical_fields": int(lay.is_categorical.sum()), "bins": lay.total_bins,
        "naive_max_load": lay.naive_max_load,
        "rows_binned_per_tree": float(rb.mean()) / lay.n_rows if rb.size else 0.0,
        "rows_partitioned_per_tree": (float(trace.rows_partitioned().mean()) / lay.n_rows
                                      if rb.size else 0.0),
        "bins_scanned_per_tree": trace.bins_scanned / max(1, trace.n_trees),
        "mean_leaf_depth": float(np.mean([np.dot(t.leaf_rows, t.leaf_depth) / max(1, t.n_rows)
                                          for t in trace.trees])),
        "host_seconds_traced": dict(trace.host),
        "sequential_seconds": seq,
        "seconds": {m: ({s: res[m][s] for s in (*STEPS, "total")} if res[m] else None)
                    for m in ("multicore", "gpu", "ir", "booster", "booster_no_opts",
                              "booster_group_by_field")},
        "dram_bytes": {m: res[m]["dram_bytes"] for m in ("multicore", "gpu", "booster")},
        "sram_accesses": {m: res[m]["sram_accesses"] for m in ("multicore", "gpu", "booster")},
        "speedup_vs_ideal_multicore": res["speedup"]["booster"],
        "speedup_gpu": res["speedup"]["gpu"],
        "speedup_ir": res["speedup"]["ir"],
        "speedup_booster_no_opts": res["speedup"]["booster_no_opts"],
        "speedup_booster_group_by_field": res["speedup"]["booster_group_by_field"],
        "ir_copies": res["ir_copies"],
        "inference_speedup": res["inference"]["speedup"],
        "inference_seconds": {m: res["inference"][m] for m in ("multicore", "gpu", "booster")},
        "scaled": {"rows": int(rows * scale_up),
                   "speedup_vs_ideal_multicore": big["speedup"]["booster"],
                   "speedup_gpu": big["speedup"]["gpu"]},
        "_energy": {m: {"sram_accesses": res[m]["sram_accesses"],
                        "dram_bytes": res[m]["dram_bytes"]} for m in ("multicore", "gpu",
                                                                        "booster")},
    }
    if extra:
        entry.update(extra)
    return entry


def finish(entries, cfg=Config()):
    """The summary of several data sets: geomeans, energy, the paper's figures."""
    e = energy([x["_energy"] for x in entries])
    out = {
        "datasets": [{k: v for k, v in x.items() if k != "_energy"} for x in entries],
        "geomean_speedup": geomean([x["speedup_vs_ideal_multicore"] for x in entries]),
        "geomean_speedup_gpu": geomean([x["speedup_gpu"] for x in entries]),
        "scaled_geomean_speedup": geomean([x["scaled"]["speedup_vs_ideal_multicore"]
                                           for x in entries]),
        "inference_mean_speedup": float(np.mean([x["inference_speedup"] for x in entries])),
        "energy": e,
        "config": {"group_by_field": cfg.group_by_field, "column_format": cfg.column_format,
                   "double_buffer": cfg.double_buffer,
                   "ideal_cycles_per_op": cfg.ideal_cycles_per_op},
    }
    out["scaled_datasets"] = [{"name": x["name"], **x["scaled"]} for x in out["datasets"]]
    gm_b, gm_g = out["geomean_speedup"], out["geomean_speedup_gpu"]
    out["geomean_speedup_vs_ideal_gpu"] = gm_b / gm_g if gm_b and gm_g else None
    return out


def run_experiment(keys=tuple(PAPER), traced_rows=50_000, traced_rounds=100, seed=0,
                   cfg=Config(), log=None):
    """The paper's experiment on the stand-ins: each traced at ``traced_rows`` rows for
    ``traced_rounds`` trees (depth 6), then modelled at Table III's rows and 500 trees."""
    entries = []
    for key in keys:
        t0 = time.perf_counter()
        ds, params, spec = dataset(key, traced_rows, seed)
        tr = record_trace(ds, params, traced_rounds)
        if log:
            log(f"traced {spec.name}: {traced_rows:,} rows, {traced_rounds} trees "
                f"({time.perf_counter() - t0:.1f} s)")
        entries.append(summarise(spec.name, tr, spec.paper_rows, C.PAPER_TREES, cfg,
                                 extra={"paper_rows": spec.paper_rows,
                                        "paper_features": spec.features,
                                        "paper_seq_minutes": spec.paper_seq_minutes}))
    out = finish(entries, cfg)
    out["paper"] = PAPER_RESULTS
    return out


# -- tables ------------------------------------------------------------------------------------
def _f(x, nd=1):
    return "n/a" if x is None else f"{x:.{nd}f}"


def _table(header, rows):
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).rjust(w) if i else str(c).ljust(w)  # noqa: E731
                               for i, (c, w) in enumerate(zip(r, widths)))
    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def tables(summary):
    """The figures as plain-text tables."""
    ds = summary["datasets"]
    paper = summary.get("paper", {})
    psp = paper.get("speedup", {})
    out = []
    out.append("Data sets (Table III stand-ins; traced, then scaled)\n" + _table(
        ["data set", "traced rows", "trees", "rows", "fields", "categ.", "bins",
         "naive load", "①rows/tree", "leaf depth", "IR copies"],
        [[d["name"], f"{d['traced_rows']:,}", d["traced_trees"], f"{d['rows']:,}",
          d["fields"], d["categorical_fields"], d["bins"], _f(d["naive_max_load"], 2),
          _f(d["rows_binned_per_tree"], 2), _f(d["mean_leaf_depth"], 2),
          d["ir_copies"] if d["ir_copies"] >= 1 else "none fits"] for d in ds]))
    rows = []
    for d in ds:
        s = d["sequential_seconds"]
        tot = sum(s.values())
        rows.append([d["name"], *[f"{100 * s[k] / tot:.1f}%" for k in STEPS],
                     _f(tot / 60, 2), _f(d.get("paper_seq_minutes"), 1)])
    out.append("Fig. 6: hardwood's sequential time by step (measured, scaled to the rows and "
               "trees)\n" + _table(["data set", *STEP_LABELS.values(), "minutes",
                                   "paper XGBoost min"], rows))
    out.append("Fig. 7: speedup over the Ideal 32-core\n" + _table(
        ["data set", "Ideal GPU", "IR", "Booster", "paper Booster"],
        [[d["name"], _f(d["speedup_gpu"], 2), _f(d["speedup_ir"], 2),
          _f(d["speedup_vs_ideal_multicore"], 1), _f(psp.get(d["name"]), 1)] for d in ds]
        + [["geomean", _f(summary["geomean_speedup_gpu"], 2),
            _f(geomean([d["speedup_ir"] for d in ds]), 2), _f(summary["geomean_speedup"], 1),
            _f(paper.get("speedup_geomean"), 1)]]))
    rows = []
    for d in ds:
        base = d["seconds"]["multicore"]["total"]
        for m, label in (("multicore", "Ideal 32-core"), ("gpu", "Ideal GPU"),
                         ("booster", "Booster")):
            sec = d["seconds"][m]
            rows.append([d["name"], label, *[f"{sec[k] / base:.3f}" for k in STEPS],
                         f"{sec['total'] / base:.3f}", _f(sec["total"], 2)])
    out.append("Fig. 8: time by step, normalised to the Ideal 32-core\n" + _table(
        ["data set", "machine", *STEP_LABELS.values(), "total", "seconds"], rows))
    out.append("Fig. 9: Booster's optimisations (speedup over the Ideal 32-core)\n" + _table(
        ["data set", "no-opts", "+group-by-field", "+column format"],
        [[d["name"], _f(d["speedup_booster_no_opts"], 1),
          _f(d["speedup_booster_group_by_field"], 1), _f(d["speedup_vs_ideal_multicore"], 1)]
         for d in ds]))
    e = summary["energy"]
    out.append("Fig. 10: energy, mean over the data sets, Ideal 32-core = 1\n" + _table(
        ["", "Ideal 32-core", "Ideal GPU", "Booster"],
        [["SRAM", *[_f(e["sram"][m], 2) for m in ("multicore", "gpu", "booster")]],
         ["DRAM", *[_f(e["dram"][m], 2) for m in ("multicore", "gpu", "booster")]]]))
    sc = paper.get("scaled_speedup", {})
    out.append(f"Fig. 12: {C.SCALE_UP}x the rows, speedup over the Ideal 32-core\n" + _table(
        ["data set", "rows", "Ideal GPU", "Booster", "unscaled Booster", "paper Booster"],
        [[d["name"], f"{d['scaled']['rows']:,}", _f(d["scaled"]["speedup_gpu"], 2),
          _f(d["scaled"]["speedup_vs_ideal_multicore"], 1),
          _f(d["speedup_vs_ideal_multicore"], 1), _f(sc.get(d["name"]), 1)] for d in ds]
        + [["geomean", "", "", _f(summary["scaled_geomean_speedup"], 1),
            _f(summary["geomean_speedup"], 1), _f(paper.get("scaled_speedup_geomean"), 1)]]))
    pin = paper.get("inference_speedup", {})
    out.append(f"Fig. 13: batch inference, {C.INFER_TREES} trees, {C.INFER_REPLICAS} replicas "
               f"in {C.INFER_BUS} BUs: speedup over the Ideal 32-core\n" + _table(
                   ["data set", "Booster", "paper"],
                   [[d["name"], _f(d["inference_speedup"], 1),
                     _f(pin.get(d["name"], paper.get("inference_speedup_deep")
                                if paper else None), 1)] for d in ds]
                   + [["mean", _f(summary["inference_mean_speedup"], 1),
                       _f(paper.get("inference_speedup_mean"), 1)]]))
    return "\n\n".join(out)


def json_line(summary):
    """The summary as one JSON line (the last line of ``hardwood simulate --json``)."""
    import json

    return json.dumps(summary, separators=(",", ":"), default=float)


# -- plots ----------------------------------------------------------------------------------------
def plots(summary, folder):
    """PNG files of Figs. 6, 7, 8, 9, 10, 12 and 13 in ``folder``; returns their paths."""
    import os

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(folder, exist_ok=True)
    ds = summary["datasets"]
    names = [d["name"] for d in ds]
    x = np.arange(len(ds))
    paths = []

    def save(fig, name):
        p = os.path.join(folder, name)
        fig.tight_layout()
        fig.savefig(p, dpi=110)
        plt.close(fig)
        paths.append(p)

    def bars(ax, series, labels, width=0.8):
        w = width / len(series)
        for i, (vals, lab) in enumerate(zip(series, labels)):
            ax.bar(x + (i - (len(series) - 1) / 2) * w,
                   [np.nan if v is None else v for v in vals], w, label=lab)
        ax.set_xticks(x, names)
        ax.legend(fontsize=8)

    fig, ax = plt.subplots(figsize=(7, 4))  # Fig. 6
    bottom = np.zeros(len(ds))
    for k in STEPS:
        frac = np.array([d["sequential_seconds"][k] / sum(d["sequential_seconds"].values())
                         for d in ds])
        ax.bar(x, frac, 0.6, bottom=bottom, label=STEP_LABELS[k])
        bottom += frac
    ax.set_xticks(x, names)
    ax.set_ylabel("share of sequential time")
    ax.set_title("Fig. 6: hardwood's sequential time by step")
    ax.legend(fontsize=8)
    save(fig, "fig6_sequential_breakdown.png")

    fig, ax = plt.subplots(figsize=(7, 4))  # Fig. 7
    bars(ax, [[d["speedup_gpu"] for d in ds], [d["speedup_ir"] for d in ds],
              [d["speedup_vs_ideal_multicore"] for d in ds]], ["Ideal GPU", "IR", "Booster"])
    psp = summary.get("paper", {}).get("speedup", {})
    for i, n in enumerate(names):
        if n in psp:
            ax.plot(i + 0.27, psp[n], "k*", ms=10, label="paper (Booster)" if i == 0 else None)
    ax.set_ylabel("speedup over Ideal 32-core")
    ax.set_title("Fig. 7: training speedup (★: the paper's Booster)")
    save(fig, "fig7_speedup.png")

    fig, axes = plt.subplots(1, len(ds), figsize=(2.2 * len(ds), 4), sharey=True)  # Fig. 8
    axes = np.atleast_1d(axes)
    for ax, d in zip(axes, ds):
        base = d["seconds"]["multicore"]["total"]
        bottom = np.zeros(3)
        for k in STEPS:
            vals = np.array([d["seconds"][m][k] / base for m in ("multicore", "gpu", "booster")])
            ax.bar(range(3), vals, 0.6, bottom=bottom, label=STEP_LABELS[k])
            bottom += vals
        ax.set_xticks(range(3), ["32-core", "GPU", "Booster"], rotation=45, fontsize=7)
        ax.set_title(d["name"], fontsize=9)
    axes[0].set_ylabel("time / Ideal 32-core")
    axes[-1].legend(fontsize=7)
    fig.suptitle("Fig. 8: time by step")
    save(fig, "fig8_breakdown.png")

    fig, ax = plt.subplots(figsize=(7, 4))  # Fig. 9
    bars(ax, [[1.0] * len(ds), [d["speedup_booster_no_opts"] for d in ds],
              [d["speedup_booster_group_by_field"] for d in ds],
              [d["speedup_vs_ideal_multicore"] for d in ds]],
         ["Ideal 32-core", "Booster no-opts", "+ group-by-field", "+ column format"])
    ax.set_ylabel("speedup over Ideal 32-core")
    ax.set_title("Fig. 9: Booster's optimisations")
    save(fig, "fig9_optimisations.png")

    fig, axes = plt.subplots(1, 2, figsize=(7, 3.5))  # Fig. 10
    e = summary["energy"]
    for ax, kind in zip(axes, ("sram", "dram")):
        ax.bar(["32-core", "GPU", "Booster"], [e[kind][m] for m in ("multicore", "gpu",
                                                                   "booster")])
        ax.set_title(f"{kind.upper()} energy (Ideal 32-core = 1)", fontsize=9)
    save(fig, "fig10_energy.png")

    fig, ax = plt.subplots(figsize=(7, 4))  # Fig. 12
    bars(ax, [[d["scaled"]["speedup_gpu"] for d in ds],
              [d["scaled"]["speedup_vs_ideal_multicore"] for d in ds]],
         ["Ideal GPU", "Booster"])
    ax.set_ylabel("speedup over Ideal 32-core")
    ax.set_title(f"Fig. 12: {C.SCALE_UP}x the rows")
    save(fig, "fig12_scaled.png")

    fig, ax = plt.subplots(figsize=(7, 4))  # Fig. 13
    bars(ax, [[d["inference_speedup"] for d in ds]], ["Booster"])
    ax.set_ylabel("speedup over Ideal 32-core")
    ax.set_title(f"Fig. 13: batch inference, {C.INFER_TREES} trees")
    save(fig, "fig13_inference.png")
    return paths
