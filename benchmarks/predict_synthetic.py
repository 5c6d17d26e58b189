"""The paper's §4.1 synthetic study: one random fully balanced tree of depth d over f features,
512k rows built so that every leaf is equally likely; ns per instance per tree for struct,
struct+, pred, vpred (tuned v) and codegen, and vpred's v sweep over {1, 2, 4, 8, 16, 32},
printed beside the paper's Table 2 (VPred / Pred / CodeGen, ns).

    flock /tmp/hardwood-cpu.lock python benchmarks/predict_synthetic.py [--quick] [--threads 2]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

# Table 2 of Asadi et al.: {f: {d: (VPred, Pred, CodeGen)}} in ns per instance
PAPER = {32: {3: (17.4, 22.6, 26.0), 5: (21.3, 31.9, 41.3), 7: (25.1, 44.4, 52.4),
              9: (28.9, 58.9, 63.9), 11: (39.2, 75.8, 85.8)},
         128: {3: (42.2, 61.0, 50.0), 5: (55.8, 85.9, 64.6), 7: (69.3, 96.3, 76.2),
               9: (77.9, 102.0, 85.8), 11: (89.6, 118.7, 116.0)},
         512: {3: (49.7, 110.6, 82.8), 5: (72.3, 200.3, 123.9), 7: (97.8, 302.5, 164.2),
               9: (120.4, 395.5, 187.8), 11: (149.5, 476.1, 250.7)}}


def random_tree_model(depth, n_features, n_rows, seed):
    from hardwood.data.convert import FeatureInfo
    from hardwood.model.model import Model
    from hardwood.model.tree import Tree
    rng = np.random.default_rng(seed)
    n_int = (1 << depth) - 1
    n = 2 * n_int + 1
    feature = np.full(n, -1, np.int32)
    feature[:n_int] = rng.integers(0, n_features, n_int)
    threshold = np.zeros(n)
    threshold[:n_int] = rng.random(n_int)
    ids = np.arange(n)
    left = np.where(ids < n_int, 2 * ids + 1, -1)
    right = np.where(ids < n_int, 2 * ids + 2, -1)
    value = np.where(ids < n_int, 0.0, rng.normal(size=n))
    tree = Tree.from_arrays(feature=feature, threshold=threshold, left=left, right=right,
                            default_left=np.zeros(n, bool), is_categorical=np.zeros(n, bool),
                            cat_offset=np.full(n, -1), value=value, gain=np.zeros(n),
                            cover=np.zeros(n), count=np.zeros(n))
    info = FeatureInfo(names=[f"f{j}" for j in range(n_features)],
                       is_categorical=np.zeros(n_features, bool), categories=[None] * n_features)
    model = Model([tree], [0], [0.0], "reg:squarederror", 1, info)
    # rows: each leaf equally likely; walk up from a random leaf, set the feature on each side
    X = rng.random((n_rows, n_features)).astype(np.float32)
    leaves = rng.integers(0, 1 << depth, n_rows) + n_int
    node = leaves.copy()
    for _ in range(depth):  # bottom-up, so the value nearest the root wins on repeated features
        parent = (node - 1) // 2
        go_left = node == 2 * parent + 1
        f = feature[parent]
        t = threshold[parent]
        v = np.where(go_left, t * rng.random(n_rows), t + (1 - t) * rng.random(n_rows) + 1e-7)
        X[np.arange(n_rows), f] = v.astype(np.float32)
        node = parent
    return model, np.ascontiguousarray(X)


def time_ns(c, X, out, repeat):
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        c.predict(X, output="raw", out=out)
        best = min(best, time.perf_counter() - t)
    return best / X.shape[0] * 1e9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="64k rows; depths 3, 7, 11")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-codegen", action="store_true")
    args = ap.parse_args()
    import numba
    numba.set_num_threads(args.threads)
    import hardwood
    n_rows = 65_536 if args.quick else 524_288
    depths = [3, 7, 11] if args.quick else [3, 5, 7, 9, 11]
    repeat = 3 if args.quick else 5
    vs = [1, 2, 4, 8, 16, 32]
    print(f"{n_rows:,} rows, {args.threads} threads; ns per instance per tree (best of {repeat})")
    print("paper (1 thread, Westmere 2013): VPred / Pred / CodeGen")
    for f in (32, 128, 512):
        print(f"\n-- f = {f}")
        print(f"{'d':>3} {'struct':>7} {'struct+':>7} {'pred':>7} {'vpred':>7} {'(v)':>4} "
              f"{'codegen':>7} | " + " ".join(f"v={v:<3d}" for v in vs)
              + " | paper VPred/Pred/CodeGen   vpred/pred  vpred/codegen")
        for d in depths:
            model, X = random_tree_model(d, f, n_rows, seed=d * 1000 + f)
            out = np.empty((n_rows, 1))
            ref = model.predict(X[:1000], output="raw")
            r = {}
            for rt in ("struct", "struct+", "pred", "vpred") + (() if args.no_codegen else
                                                                ("codegen",)):
                c = hardwood.compile(model, rt)
                assert np.allclose(c.predict(X[:1000], output="raw"), ref)
                r[rt] = time_ns(c, X, out, repeat)
                if rt == "vpred":
                    r["v"] = c.layout.groups[0]["v"]
            sweep = [time_ns(hardwood.compile(model, "vpred", v=v), X, out, repeat) for v in vs]
            pv, pp, pc = PAPER[f][d]
            print(f"{d:>3} {r['struct']:7.1f} {r['struct+']:7.1f} {r['pred']:7.1f} "
                  f"{r['vpred']:7.1f} {r['v']:>4d} {r.get('codegen', float('nan')):7.1f} | "
                  + " ".join(f"{s:5.1f}" for s in sweep)
                  + f" | {pv:6.1f} {pp:6.1f} {pc:6.1f}   "
                  f"{r['pred'] / r['vpred']:5.2f}x  {r.get('codegen', float('nan')) / r['vpred']:5.2f}x"
                  f"  best v={vs[int(np.argmin(sweep))]}")


if __name__ == "__main__":
    main()
