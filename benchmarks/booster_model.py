"""The Booster accelerator model (issue 16): the paper's experiment, and how its results move
with the two assumptions that matter most. Not a timing benchmark: the model's output depends
on the traces (counts of a real training) and on the measured host time of step ②.

    .venv/bin/python benchmarks/booster_model.py [--traced-rows N] [--traced-rounds N]
                                                 [--plot DIR]

Prints the figures of ``hardwood simulate --preset paper`` and a sensitivity table:

* ``ideal 1 cyc``: the ideal machines do a field update, a predicate and a vertex in 1 cycle
  instead of a BU's 8 (``IDEAL_CYCLES_PER_OP``);
* ``② = x% seq``: step ② on the host taken as x% of the paper's sequential XGBoost time
  (Table III; §I gives 2-10%), spread over 32 host cores, instead of hardwood's measured
  split-finding time: Booster's residual time is then the host's, as the paper's Fig. 8
  shows.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from hardwood.accel import constants as C  # noqa: E402
from hardwood.accel.model import Config  # noqa: E402
from hardwood.accel.presets import PAPER, PAPER_RESULTS, dataset  # noqa: E402
from hardwood.accel.report import finish, plots, summarise, tables  # noqa: E402
from hardwood.accel.trace import record_trace  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--traced-rows", type=int, default=50_000)
    ap.add_argument("--traced-rounds", type=int, default=100)
    ap.add_argument("--plot", default=None)
    a = ap.parse_args()
    traces = {}
    for key in PAPER:
        t0 = time.perf_counter()
        ds, params, spec = dataset(key, a.traced_rows)
        traces[key] = record_trace(ds, params, a.traced_rounds)
        print(f"traced {spec.name} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)

    def run(cfg_of):
        entries = [summarise(PAPER[k].name, tr, PAPER[k].paper_rows, C.PAPER_TREES, cfg_of(k),
                             extra={"paper_seq_minutes": PAPER[k].paper_seq_minutes})
                   for k, tr in traces.items()]
        s = finish(entries)
        s["paper"] = PAPER_RESULTS
        return s

    base = run(lambda k: Config())
    print(tables(base))
    if a.plot:
        for p in plots(base, a.plot):
            print("wrote", p, file=sys.stderr)

    def host2(frac):
        # x% of the paper's sequential minutes for 500 trees, on 32 host cores, per tree
        return lambda k: Config(host_split_seconds=PAPER[k].paper_seq_minutes * 60 * frac
                                / C.HOST_CORES / C.PAPER_TREES)

    variants = [("model", base), ("ideal 1 cyc", run(lambda k: Config(ideal_cycles_per_op=1))),
                ("② = 2% seq", run(host2(0.02))), ("② = 10% seq", run(host2(0.10)))]
    print("\nSensitivity: Booster speedup over the Ideal 32-core (10x rows in brackets)")
    names = [d["name"] for d in base["datasets"]]
    print("variant".ljust(14) + "".join(n.rjust(16) for n in names) + "geomean".rjust(16))
    for label, s in variants:
        cells = [f"{d['speedup_vs_ideal_multicore']:.1f} [{d['scaled']['speedup_vs_ideal_multicore']:.1f}]"
                 for d in s["datasets"]]
        gm = f"{s['geomean_speedup']:.1f} [{s['scaled_geomean_speedup']:.1f}]"
        print(label.ljust(14) + "".join(c.rjust(16) for c in cells) + gm.rjust(16))
    print("paper".ljust(14) + "".join(
        (f"{PAPER_RESULTS['speedup'][n]:.1f}" if n in PAPER_RESULTS["speedup"] else "-")
        .rjust(16) for n in names)
        + f"{PAPER_RESULTS['speedup_geomean']:.1f} [{PAPER_RESULTS['scaled_speedup_geomean']:.1f}]"
        .rjust(16))


if __name__ == "__main__":
    main()
