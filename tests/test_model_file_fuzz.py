"""A self-contained fuzz of ``Model.save`` files (issue 12): a fixed seed, a few hundred
mutated model files, each loaded and used in a child process with a memory limit and a
timeout, so that a crash, a runaway allocation or a hang shows up as a failure naming the
mutated file instead of taking pytest down.

It reuses the mutation helpers of test_model_io.py (``apply_mutation``,
``apply_text_mutation``, ``INTERESTING``, ``_paths``) with a plain ``random.Random``
instead of hypothesis, and its ``try_load``/``exercise``: a case may end in a
``ModelFormatError`` (a ValueError) or in a model that loads, predicts through every
output, agrees with the bounds-checked walk and saves again. Anything else fails.

The cases go to the children in batches (one process per ~50 cases, one JSON line back per
case); a batch whose child dies or times out is rerun case by case to name the culprit.
"""
import base64
import json
import math
import os
import random
import struct
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("resource")  # POSIX: the children's memory limit

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:  # the helpers live in test_model_io.py, next to this file
    sys.path.insert(0, HERE)

from test_model_io import (INTERESTING, _categorical_model, _numeric_model,  # noqa: E402
                           _paths, apply_mutation, apply_text_mutation)

import hardwood  # noqa: E402

SEED = 20240612
EXAMPLES = 28  # each gives 15 cases (6 single mutations, 6 stacked, 3 text edits)
BATCH = 50
MEMORY_LIMIT = 3 * 2**30  # RLIMIT_AS of a child, bytes
CASE_SECONDS = 60  # one case, in the child (SIGALRM)
BATCH_SECONDS = 300  # one child, from the parent

CHILD = r"""
import base64, json, resource, signal, sys, traceback
limit = int(sys.argv[3])
try:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
except (ValueError, OSError):  # a platform that cannot cap address space (macOS)
    pass
sys.path.insert(0, sys.argv[1])
from test_model_io import try_load

def _alarm(signum, frame):
    raise TimeoutError("the case ran past its time limit")

signal.signal(signal.SIGALRM, _alarm)
with open(sys.argv[2]) as fh:
    cases = json.load(fh)
for case in cases:
    blob = base64.b64decode(case["blob"])
    signal.alarm(int(sys.argv[4]))
    try:
        rec = {"id": case["id"], "outcome": "loaded" if try_load(blob) else "refused"}
    except BaseException as e:
        rec = {"id": case["id"], "outcome": "error",
               "error": (type(e).__name__ + ": " + " ".join(str(e).split()))[:400],
               "trace": traceback.format_exc()[-3000:]}
    finally:
        signal.alarm(0)
    print(json.dumps(rec), flush=True)
"""


def _base_docs():
    """Three small saved models: numeric and categorical splits (one of 40 categories, two
    bitset words), and a multiclass model."""
    rng = np.random.default_rng(11)
    df = pd.DataFrame({"a": rng.normal(size=200),
                       "b": pd.Categorical(rng.choice(["p", "q", "r", "s", "t"], 200))})
    df.loc[::7, "a"] = np.nan
    y = df["a"].fillna(0).to_numpy() + df["b"].isin(["p", "s"]).to_numpy() * 2.0
    small = hardwood.train({"objective": "reg:squarederror", "max_depth": 2,
                            "max_cat_to_onehot": 1}, hardwood.Dataset(df, y), num_boost_round=2)
    multi, _ = _numeric_model("multi:softprob", rounds=1, seed=3, max_depth=2)
    cat, _ = _categorical_model(rounds=1, objective="binary:logistic")
    docs = []
    for m in (small, multi, cat):
        m.params = {}
        docs.append(json.loads(m.to_json()))
    return docs


def _random_float(rng):
    r = rng.random()
    if r < 0.3:
        return rng.choice([0.0, -0.0, 0.5, -1.5, 1e-300, 5e-324, 1e308, -1e308, 2.0**53,
                           float(2**31), 1e10, math.inf, -math.inf])  # inf: as hypothesis
    if r < 0.6:
        return rng.uniform(-1e3, 1e3)
    while True:  # any finite double, from its bits
        v = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        if math.isfinite(v):
            return v


def random_mutation(rng, doc):
    """One mutation of a JSON document, (kind, path, payload), drawn like
    test_model_io.json_mutation draws it."""
    paths = list(_paths(doc))
    kind = rng.choice(["replace", "replace", "replace", "tweak", "delete", "insert", "copy",
                       "copy"])
    path = paths[rng.randrange(len(paths))]
    if kind == "replace":
        r = rng.randrange(3)
        payload = (rng.choice(INTERESTING) if r == 0 else rng.randint(-10, 300) if r == 1
                   else _random_float(rng))
    elif kind == "copy":
        payload = paths[rng.randrange(len(paths))]
    else:
        payload = rng.randint(-3, 3)
    return kind, path, payload


def make_cases(docs, rng, examples):
    """(description, file bytes) pairs: the unmutated files, then per example 6 mutations
    alone and stacked up, and 3 text edits of the stacked file."""
    cases = [(f"base {b} unmutated", json.dumps(d).encode()) for b, d in enumerate(docs)]
    for e in range(examples):
        b = rng.randrange(len(docs))
        doc = docs[b]
        cur = doc
        applied = []
        for k in range(6):
            mut = random_mutation(rng, doc)
            cases.append((f"example {e}, base {b}, mutation {mut!r}",
                          json.dumps(apply_mutation(doc, mut)).encode()))
            try:
                cur = apply_mutation(cur, mut)
                applied.append(mut)
            except (KeyError, IndexError, TypeError):
                pass  # the path vanished under an earlier mutation
            cases.append((f"example {e}, base {b}, stacked mutations {applied!r}",
                          json.dumps(cur).encode()))
        raw = json.dumps(cur if isinstance(cur, dict) else doc).encode()
        edits = []
        for _ in range(3):
            n = len(raw)
            edit = (rng.choice(["truncate", "splice", "flip", "delete"]), rng.randint(0, n),
                    rng.randint(0, n), rng.randrange(256))
            raw = apply_text_mutation(raw, edit)
            edits.append(edit)
            cases.append((f"example {e}, base {b}, stacked mutations {applied!r}, "
                          f"text edits {edits!r}", raw))
    return cases


def _run_child(cases, workdir, tag, timeout=BATCH_SECONDS, child=CHILD):
    """Run ``cases`` [(id, bytes)] in one child; returns ({id: record}, problem or None)."""
    path = os.path.join(workdir, f"batch_{tag}.json")
    with open(path, "w") as fh:
        json.dump([{"id": i, "blob": base64.b64encode(b).decode()} for i, b in cases], fh)
    env = dict(os.environ, PYTHONFAULTHANDLER="1")
    try:
        r = subprocess.run([sys.executable, "-c", child, HERE, path, str(MEMORY_LIMIT),
                            str(CASE_SECONDS)], capture_output=True, text=True,
                           timeout=timeout, env=env, cwd=workdir)
        out, err, rc = r.stdout, r.stderr, r.returncode
        problem = None if rc == 0 else f"the child exited with status {rc}"
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        problem = f"the child ran past {timeout} s"
    recs = {}
    for line in out.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and "id" in rec:
            recs[rec["id"]] = rec
    if problem is None and len(recs) != len(cases):
        problem = f"the child answered {len(recs)} of {len(cases)} cases"
    if problem:
        err = " ".join(err.split())
        k = err.find("Fatal Python error")  # faulthandler: where it crashed
        problem += "; stderr: " + (err[k:k + 1500] if k >= 0 else err[-1500:])
    return recs, problem


def run_cases(cases, workdir, *, child=CHILD, batch=BATCH, timeout=BATCH_SECONDS,
              case_timeout=CASE_SECONDS + 60):
    """Load and use every (description, bytes) case in children, ``batch`` cases a child,
    two children at a time. Returns ({case index: record}, [failure messages]). When a
    child dies or hangs, the cases it had not answered are rerun one per child, and a case
    that kills its own child is a failure naming it."""
    ids = list(range(len(cases)))
    batches = [ids[k:k + batch] for k in range(0, len(ids), batch)]
    workers = max(1, min(2, os.cpu_count() or 1))

    def run_batch(j):
        return _run_child([(i, cases[i][1]) for i in batches[j]], workdir, j, timeout, child)

    def run_one(i):
        return _run_child([(i, cases[i][1])], workdir, f"one_{i}", case_timeout, child)

    records, failures, again = {}, [], []
    with ThreadPoolExecutor(workers) as pool:
        for j, (recs, problem) in enumerate(pool.map(run_batch, range(len(batches)))):
            records.update(recs)  # a case answered before the child died is complete
            if problem is not None:
                left = [i for i in batches[j] if i not in recs]
                if not left:  # every case answered, then the child failed (at exit?)
                    failures.append(f"the child of cases {batches[j][0]}..{batches[j][-1]} "
                                    f"failed after answering them all: {problem}")
                again += left
        for i, (one, why) in zip(again, pool.map(run_one, again)):
            if why is not None:
                failures.append(f"case {i} ({cases[i][0]}) killed its process: {why}")
            records.update(one)
    for i in ids:
        rec = records.get(i)
        if rec is not None and rec["outcome"] == "error":
            failures.append(f"case {i} ({cases[i][0]}) raised {rec['error']}\n{rec['trace']}")
    return records, failures


def test_model_file_fuzz_in_subprocesses(tmp_path):
    rng = random.Random(SEED)
    cases = make_cases(_base_docs(), rng, EXAMPLES)
    records, failures = run_cases(cases, str(tmp_path))
    assert not failures, (f"{len(failures)} of {len(cases)} mutated model files neither "
                          "loaded cleanly nor raised ModelFormatError:\n\n"
                          + "\n\n".join(failures[:5]))

    outcomes = [records[i]["outcome"] for i in range(len(cases))]
    loaded, refused = outcomes.count("loaded"), outcomes.count("refused")
    print(f"model-file fuzz: {len(cases)} cases, {refused} refused, {loaded} loaded")
    # coverage: asserted here, never depending on another test
    assert len(cases) >= 400 and loaded + refused == len(cases)
    assert all(records[i]["outcome"] == "loaded" for i in range(3))  # the unmutated files
    assert loaded >= 40, (loaded, refused)  # the predict path ran, not only the error path
    assert refused >= 150, (loaded, refused)


# a child whose try_load crashes, hangs or raises on marked inputs: the harness must name them
_FAULTY = CHILD.replace("from test_model_io import try_load", """from test_model_io import try_load as _try_load
import os, time
def try_load(blob):
    if blob == b"ABORT":
        os.abort()
    if blob == b"HANG":  # stuck where no signal reaches Python (as in a Numba kernel)
        import signal
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        while True:
            pass
    if blob == b"RAISE":
        raise IndexError("index 7 is out of bounds")
    return _try_load(blob)""")


def test_fuzz_harness_names_the_culprits(tmp_path):
    good = json.dumps(_base_docs()[0]).encode()
    cases = [("good", good), ("truncated", good[:40]), ("aborts", b"ABORT"),
             ("raises", b"RAISE"), ("good again", good)]
    records, failures = run_cases(cases, str(tmp_path), child=_FAULTY, batch=3)
    text = "\n".join(failures)
    assert len(failures) == 2, text
    assert "case 2 (aborts) killed its process: the child exited with status" in text
    assert "case 3 (raises) raised IndexError: index 7 is out of bounds" in text
    assert [records[i]["outcome"] for i in (0, 1, 4)] == ["loaded", "refused", "loaded"]
    # a case stuck where no signal reaches Python: the parent's timeouts end it (short ones
    # here: nothing else runs in these children)
    records, failures = run_cases([("hangs", b"HANG")], str(tmp_path), child=_FAULTY,
                                  timeout=4, case_timeout=4)
    assert len(failures) == 1 and not records
    assert failures[0].startswith("case 0 (hangs) killed its process: the child ran past 4 s")
