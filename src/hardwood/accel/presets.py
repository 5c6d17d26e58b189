"""Synthetic stand-ins for the paper's five data sets (Table III), with their field structure.

| name | rows (paper) | fields | categorical | one-hot features | task |
|---|---|---|---|---|---|
| IoT | 7 M | 115 | 0 | 115 | binary: botnet attack detection |
| Higgs | 10 M | 28 | 0 | 28 | binary: particle collisions |
| Allstate | 10 M | 32 | 16 | 4,232 | regression: insurance claims |
| Mq2008 | 1 M | 46 | 0 | 46 | ranking (LETOR 4.0) |
| Flight | 10 M | 8 | 7 | 666 | binary: flight delay |

The real sets are not downloaded: only their structure matters to the model (fields, bins,
categories, the shape of the trees), and the trees are grown for real by hardwood on the
stand-ins. Choices made for the stand-ins (not fitted to any result):

* numeric fields are continuous (256 bins each: 255 value bins and a missing bin);
* categorical fields have skewed, Zipf-distributed category frequencies (exponent
  ``ZIPF``), so that a split that sets a few categories apart sends most rows one way, as
  §IV observes for Allstate and Flight; every category gets its own bin
  (``group_categories=False``), so a field of more than 256 categories spans several SRAMs
  (§III-C(3));
* Allstate's 4,216 categories (4,232 features less its 16 numeric fields) and Flight's 665
  are split among the categorical fields as listed in ``CATEGORIES``: Flight's follow the
  airline data's columns (origin, destination, day of month, carrier, departure hour, month,
  day of week);
* IoT's label is a nearly separable function of a few fields (botnet traffic is told apart
  almost perfectly): as the margins grow, the hessians shrink and ``min_child_weight`` stops
  the splits, so many trees end shallow, the behaviour §IV reports for IoT;
* Mq2008 is a ranking set of 20-document queries with graded relevance 0-2 (rank:ndcg).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ZIPF = 1.2  # the exponent of the category frequencies (rank r has weight r^-ZIPF)

CATEGORIES = {
    "allstate": (1200, 800, 600, 450, 350, 250, 180, 120, 80, 60, 40, 30, 20, 16, 10, 10),
    "flight": (289, 289, 31, 21, 16, 12, 7),
}


@dataclass(frozen=True)
class Spec:
    name: str
    paper_rows: int           # Table III
    fields: int
    categorical: int
    features: int             # one-hot features (Table III)
    paper_seq_minutes: float  # Table III: XGBoost, sequential, 500 trees
    objective: str


PAPER = {
    "iot": Spec("IoT", 7_000_000, 115, 0, 115, 15.0, "binary:logistic"),
    "higgs": Spec("Higgs", 10_000_000, 28, 0, 28, 18.5, "binary:logistic"),
    "allstate": Spec("Allstate", 10_000_000, 32, 16, 4232, 1.6, "reg:squarederror"),
    "mq2008": Spec("Mq2008", 1_000_000, 46, 0, 46, 2.5, "rank:ndcg"),
    "flight": Spec("Flight", 10_000_000, 8, 7, 666, 5.5, "binary:logistic"),
}

# the paper's figures (§V-A, §V-F, §V-H; Fig. 7's bars are not given as numbers except these)
PAPER_RESULTS = {
    "speedup": {"IoT": 30.6, "Flight": 4.6},
    "speedup_geomean": 11.4,
    "speedup_vs_gpu_geomean": 6.4,
    "gpu_speedup_range": (1.6, 1.9),
    "scaled_speedup_range": (9.8, 61.5),
    "scaled_speedup": {"Flight": 9.8},
    "scaled_speedup_geomean": 27.9,
    "inference_speedup_mean": 45.0,
    "inference_speedup_deep": 55.5,
    "inference_speedup": {"IoT": 21.1},
    "ir_copies": {"Higgs": 271, "Mq2008": 179},
}


def _zipf_codes(rng, n, k):
    p = 1.0 / np.arange(1, k + 1) ** ZIPF
    p /= p.sum()
    # shuffle which code is frequent, so that code order says nothing
    return rng.permutation(k)[rng.choice(k, size=n, p=p)]


def make(key, n_rows, seed=0):
    """(X, y, categorical column indices, group sizes or None, Spec) of a stand-in."""
    spec = PAPER[key]
    rng = np.random.default_rng(seed)
    n = int(n_rows)
    if key == "iot":
        X = rng.normal(size=(n, spec.fields))
        X[:, 5:] += 0.3 * X[:, :1]  # traffic statistics move together
        score = X[:, 0] + 0.8 * X[:, 1] - 0.6 * X[:, 2] + 0.5 * np.abs(X[:, 3])
        y = (score > 0.4).astype(np.float64)
        return X, y, [], None, spec
    if key == "higgs":
        X = rng.normal(size=(n, spec.fields))
        X[:, 21:] = np.abs(X[:, 21:]) + 0.5 * np.abs(X[:, :7])  # derived high-level features
        f = (0.8 * X[:, 21] * X[:, 22] - 0.5 * X[:, 25] + 0.4 * np.sin(2 * X[:, 0])
             + 0.3 * X[:, 3] * X[:, 4] - 0.3 * X[:, 27])
        y = (rng.random(n) < 1 / (1 + np.exp(-(f - f.mean())))).astype(np.float64)
        return X, y, [], None, spec
    if key == "mq2008":
        X = rng.random(size=(n, spec.fields))
        X[:, 20:] = X[:, :26] ** 2 + 0.1 * rng.random(size=(n, 26))
        score = 2 * X[:, 0] + X[:, 5] - X[:, 10] + 0.5 * X[:, 30] + 0.5 * rng.normal(size=n)
        y = np.digitize(score, np.quantile(score, [0.6, 0.9])).astype(np.float64)
        q = 20
        sizes = [q] * (n // q) + ([n % q] if n % q else [])
        return X, y, [], np.asarray(sizes), spec
    cats = CATEGORIES[key]
    n_num = spec.fields - len(cats)
    X = np.empty((n, spec.fields))
    X[:, :n_num] = rng.lognormal(size=(n, n_num))
    f = 0.3 * np.log(X[:, 0])
    for j, k in enumerate(cats):
        codes = _zipf_codes(rng, n, k)
        X[:, n_num + j] = codes
        f += rng.normal(scale=0.5 if j < 3 else 0.2, size=k)[codes]
    cat_cols = list(range(n_num, spec.fields))
    if key == "allstate":
        y = np.exp(0.5 * f) * rng.lognormal(sigma=0.5, size=n)  # claim sizes, skewed
    else:
        y = (rng.random(n) < 1 / (1 + np.exp(-(f - np.quantile(f, 0.8))))).astype(np.float64)
    return X, y, cat_cols, None, spec


def dataset(key, n_rows, seed=0):
    """(hardwood Dataset, training params, Spec) of a stand-in."""
    from ..data.dataset import Dataset

    X, y, cat_cols, sizes, spec = make(key, n_rows, seed)
    ds = Dataset(X, y, categorical_features=cat_cols or None, group=sizes,
                 group_categories=False)
    params = {"objective": spec.objective, "max_depth": 6, "learning_rate": 0.3,
              "random_state": seed}
    return ds, params, spec
