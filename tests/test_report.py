"""hardwood.report and ``hardwood report``: the page's sections hold the model's own numbers,
it is self-contained (inline PNGs, no script, no link out), and it renders in a real headless
Chromium without console errors and with its plots on screen."""
import base64
import copy
import json
import os
import re
import select
import shutil
import subprocess
import time

import numpy as np
import pytest

import hardwood
from hardwood import metrics as M
from hardwood import report
from hardwood.cli import main

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from test_plot import NAMES, frame, train_model  # noqa: E402

IMG = re.compile(r'<img alt="([^"]*)" src="data:image/png;base64,([A-Za-z0-9+/=]+)">')


@pytest.fixture(scope="module")
def model():
    return train_model(early_stopping_rounds=5)


def images(page):
    """{alt: PNG bytes} of the page's inline images, each checked to be a PNG."""
    found = {alt: base64.b64decode(data) for alt, data in IMG.findall(page)}
    assert page.count("<img") == len(found)  # every image is an inline base64 PNG
    for png in found.values():
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 2000
    return found


def assert_self_contained(page):
    assert "<script" not in page.lower()
    assert not re.search(r"""(src|href)\s*=\s*(?!["']?data:)""", page)
    assert "http://" not in page and "https://" not in page


def test_report_of_a_model_in_memory(model):
    X, y = frame(300, 2)
    page = report.build_report(model, X, y, model_name="churn")
    assert_self_contained(page)
    assert set(images(page)) == {"feature importance: gain and splits", "learning curves",
                                 "training profile", "SHAP summary", "tree 0"}
    # shape: trees, leaves and depths as the model has them
    leaves = [t.n_leaves for t in model.trees]
    assert f"<td>trees</td><td>{model.num_trees}</td>" in page
    assert f"<td>leaves (total)</td><td>{sum(leaves)}</td>" in page
    depths = [t.depth() for t in model.trees]
    assert (f"<td>depth per tree (min / median / max)</td><td>{min(depths)} / "
            f"{np.median(depths):g} / {max(depths)}</td>") in page
    assert f"<td>best iteration (early stopping)</td><td>{model.best_iteration + 1}" in page
    assert "<td>max_depth</td><td>3</td>" in page
    # importance: every used feature, by name
    for j, name in enumerate(NAMES):
        if model.feature_importances("weight")[j] > 0:
            assert f"<td>{name}</td>" in page
    # the training profile: the steps as recorded
    prof = model.training_profile
    assert f"<td>① histograms</td><td class=num>{prof['histogram']:.3f}</td>" in page
    assert f"<td>⑤ update</td><td class=num>{prof['update']:.3f}</td>" in page
    # the runtime auto picks, measured
    picked = hardwood.compile(model, "auto").choose(report.BATCH_ROWS)
    assert f"<td>auto picks, for a batch</td><td>{picked}</td>" in page
    assert re.search(r"<td>throughput, batch of 10,000 rows</td><td>[\d,]+ rows/s", page)
    # the metrics on the data, equal to the metrics module's
    p = model.predict(X)
    for m in ("logloss", "auc"):
        v = M.get_metric(m)(y.astype(float), p, np.ones(len(y)))
        assert f"<td>{m}</td><td class=num>{v:.6g}</td>" in page
    assert "not recorded" not in page


def test_report_cli_from_a_model_file(model, tmp_path, capsys):
    X, y = frame(250, 3)
    data = tmp_path / "test.csv"
    X.assign(label=y).to_csv(data, index=False)
    path = tmp_path / "model.json"
    model.save(path)
    out = tmp_path / "report.html"
    rc = main(["report", "--model", str(path), "--data", str(data), "--label", "label",
               "--shap-rows", "100", "--out", str(out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert f"written to {out}" in captured.out
    page = out.read_text(encoding="utf-8")
    assert_self_contained(page)
    # the file keeps the learning curves, not the training profile: the page says so
    assert "Learning curves: not recorded" not in page
    assert "Training profile: not recorded" in page
    assert set(images(page)) == {"feature importance: gain and splits", "learning curves",
                                 "SHAP summary", "tree 0"}
    assert "SHAP values of 100 rows drawn at random" in page
    loaded = hardwood.load(path)
    auc = M.get_metric("auc")(y.astype(float), loaded.predict(X), np.ones(len(y)))
    assert f"<td>auc</td><td class=num>{auc:.6g}</td>" in page
    assert "test.csv: 250 rows" in page
    # no data: no metrics, and the runtime is timed on synthetic rows
    rc = main(["report", "-m", str(path), "-o", str(out)])
    assert rc == 0
    page = out.read_text(encoding="utf-8")
    assert "On the data" not in page and "synthetic rows (no data given)" in page


def run_error(argv, capsys):
    rc = main(argv)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("hardwood: error: "), err
    return lines[0]


def test_report_cli_bad_input(model, tmp_path, capsys, monkeypatch):
    path = tmp_path / "model.json"
    model.save(path)
    X, y = frame(50, 4)
    short = tmp_path / "short.csv"
    X.drop(columns=["score"]).assign(label=y).to_csv(short, index=False)
    out = str(tmp_path / "r.html")
    msg = run_error(["report", "-m", str(path), "--data", str(short), "--label", "label",
                     "-o", out], capsys)
    assert "3 feature columns, but the model has 4" in msg and "score" in msg
    assert "--label needs --data" in run_error(["report", "-m", str(path), "--label", "y",
                                                "-o", out], capsys)
    assert "directory does not exist" in run_error(
        ["report", "-m", str(path), "-o", str(tmp_path / "nope" / "r.html")], capsys)
    assert "no model file" in run_error(["report", "-m", str(tmp_path / "x.json"), "-o", out],
                                        capsys)
    monkeypatch.setitem(__import__("sys").modules, "matplotlib", None)
    assert "pip install 'hardwood[plot]'" in run_error(["report", "-m", str(path), "-o", out],
                                                       capsys)
    assert not os.path.exists(out)


def test_report_api_bad_input(model):
    X, y = frame(40, 5)
    with pytest.raises(ValueError, match="has 3 features, but the model"):
        report.build_report(model, X[["age", "income", "score"]].to_numpy(float))
    with pytest.raises(ValueError, match="X has 40 rows but y has 39"):
        report.build_report(model, X, y[:-1])
    # a model without cover: the page explains why there is no SHAP summary
    bare = copy.deepcopy(model)
    for t in bare.trees:
        t.cover[:] = 0.0
    page = report.build_report(bare, X, y)
    assert "SHAP summary: not available (output=&#x27;contrib&#x27;" in page
    assert "needs each node&#x27;s cover" in page


def test_report_of_a_forest_explains_each_class():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    rf = hardwood.RandomForestClassifier(n_estimators=4, max_depth=3, random_state=0).fit(X, y)
    page = report.build_report(rf, X, y)
    assert {"SHAP summary class 0", "SHAP summary class 1"} <= set(images(page))
    assert "Learning curves: not recorded (this model holds no evaluation history" in page
    assert f"<td>trees</td><td>{rf.model_.num_trees}</td>" in page


# -- a real browser -----------------------------------------------------------------------
def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


class DevTools:
    """Chromium driven over its DevTools protocol on a pipe (``--remote-debugging-pipe``:
    commands in on fd 3, replies and events out on fd 4, NUL-terminated JSON), with the
    standard library only."""

    def __init__(self, binary, tmp):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()
        child_fds = (to_chrome_r, from_chrome_w)

        def fds():  # the child's fd 3 reads the commands, its fd 4 writes the replies
            r, w = (os.dup(fd) for fd in child_fds)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--remote-debugging-pipe", f"--user-data-dir={tmp}", "--hide-scrollbars",
             "--window-size=1200,900", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=fds, close_fds=False)  # the parent's own fds are not inheritable
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b""
        self.next_id = 0
        self.events = []

    def _read_message(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.from_chrome], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer")
            chunk = os.read(self.from_chrome, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed the pipe")
            self.buf += chunk
        msg, _, self.buf = self.buf.partition(b"\0")
        return json.loads(msg)

    def call(self, method, session=None, timeout=30, **params):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            for e in self.events:
                if e.get("method") == method:
                    return e
            self.events.append(self._read_message(deadline))

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_chrome)
        os.close(self.from_chrome)


def render(binary, url, tmp):
    """Open ``url`` in headless Chromium: (console errors, requests made other than the page
    itself and data: URLs, [complete and naturalWidth of each image], full-page PNG)."""
    cdp = DevTools(binary, tmp)
    try:
        try:
            target = cdp.call("Target.createTarget", url="about:blank")["targetId"]
        except (RuntimeError, OSError) as e:  # e.g. a stub that only says how to install
            pytest.skip(f"{binary} does not run as a headless Chromium ({e})")
        session = cdp.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            cdp.call(f"{domain}.enable", session)
        cdp.call("Page.navigate", session, url=url)
        cdp.wait_for("Page.loadEventFired")
        imgs = cdp.call("Runtime.evaluate", session, returnByValue=True,
                        expression="Array.from(document.images).map("
                                   "i => [i.complete, i.naturalWidth])")["result"]["value"]
        height = cdp.call("Runtime.evaluate", session, returnByValue=True,
                          expression="document.documentElement.scrollHeight")["result"]["value"]
        cdp.call("Emulation.setDeviceMetricsOverride", session, width=1200, height=height,
                 deviceScaleFactor=1, mobile=False)
        shot = base64.b64decode(cdp.call("Page.captureScreenshot", session,
                                         format="png")["data"])
        events = [e for e in cdp.events if e.get("sessionId") == session]
    finally:
        cdp.close()
    errors = []
    for e in events:
        p = e.get("params", {})
        if e["method"] == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            errors.append(f'{d.get("text")} {d.get("exception", {}).get("description", "")}')
        elif e["method"] == "Runtime.consoleAPICalled" and p["type"] in ("error", "assert"):
            errors.append(str(p.get("args")))
        elif e["method"] == "Log.entryAdded" and p["entry"]["level"] == "error":
            errors.append(p["entry"]["text"])
    requests = [e["params"]["request"]["url"] for e in events
                if e["method"] == "Network.requestWillBeSent"]
    requests = [u for u in requests if u != url and not u.startswith("data:")]
    return errors, requests, imgs, shot


def pixels(png_path):
    """The screenshot's (red, green, blue) planes, 0..255."""
    img = (matplotlib.image.imread(png_path)[..., :3] * 255).astype(int)
    return img[..., 0], img[..., 1], img[..., 2]


@pytest.mark.timeout(120)
def test_the_report_renders_in_headless_chromium(model, tmp_path):
    binary = find_chromium()
    if binary is None:
        pytest.skip("no Chromium binary (apt-get install chromium) to render the report in")
    X, y = frame(300, 2)
    page = tmp_path / "report.html"
    report.write_report(model, page, X, y, model_name="churn")
    # the harness sees errors: a page with a script error and a missing image fails it
    bad = tmp_path / "bad.html"
    bad.write_text('<img src="missing.png"><script>console.error("boom"); nope();</script>')
    errors, requests, imgs, _ = render(binary, bad.as_uri(), tmp_path / "profile-bad")
    assert any("boom" in e for e in errors) and any("nope" in e for e in errors)
    assert requests and imgs == [[True, 0]]

    errors, requests, imgs, shot = render(binary, page.as_uri(), tmp_path / "profile")
    assert errors == []
    assert requests == []  # self-contained: nothing fetched
    assert len(imgs) == 5 and all(done and width > 300 for done, width in imgs)
    png = tmp_path / "screenshot.png"
    png.write_bytes(shot)
    # the plots are on screen: the importance bars' blue and the SHAP dots' red and blue
    r, g, b = pixels(png)
    bars = (np.abs(r - 0x4C) <= 12) & (np.abs(g - 0x72) <= 12) & (np.abs(b - 0xB0) <= 12)
    assert bars.mean() > 0.005
    red = (r > 200) & (g < 130) & (b < 170) & (r - g > 100)
    blue = (b > 200) & (r < 110) & (g > 100) & (g < 190)
    assert red.mean() > 3e-4 and blue.mean() > 3e-4
    keep = os.environ.get("HARDWOOD_REPORT_SCREENSHOT")
    if keep:  # where a developer wants to look at it
        shutil.copy(png, keep)
