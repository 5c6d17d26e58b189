"""The folder of generated kernels (hardwood.predict._cache): nothing is imported from a
folder that another user could write to, nor from a file someone replaced (issue 12, item
18). CI runs as root, which owns everything, so ownership is tested by faking ``os.stat``
results and ``os.getuid``, and write access by modes."""
import hashlib
import os
import stat
import sys
import tempfile
import uuid
import warnings

import pytest

from hardwood.predict import _cache

pytestmark = pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX ownership and modes")


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """A clean slate: no cached folders or modules, no earlier warning, and the shared temp
    folder moved under tmp_path. Returns (the temp folder, a marker path planted code would
    create)."""
    monkeypatch.setattr(_cache, "_DIRS", {})
    monkeypatch.setattr(_cache, "_LOADED", {})
    monkeypatch.setattr(_cache, "_WARNED", [])
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.delenv("HARDWOOD_CACHE_DIR", raising=False)
    return tmp, tmp_path / "PLANTED_CODE_RAN"


def _source():
    """A unique module source (so no earlier import of it is reused)."""
    return f"TOKEN = {uuid.uuid4().hex!r}\nVALUE = 42\n"


def _name(prefix, source):
    return f"_hardwood_gen_{prefix}_{hashlib.sha256(source.encode()).hexdigest()[:24]}"


def _plant(folder, name, marker):
    """A file with the generated module's name whose code leaves a marker and fails."""
    folder.mkdir(parents=True, exist_ok=True)
    f = folder / f"{name}.py"
    f.write_text(f"open({str(marker)!r}, 'w').write('ran')\nraise SystemExit('planted code ran')\n")
    return f


def _load(prefix, source):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        mod = _cache.load_source(prefix, source)
    return mod, [x for x in w if issubclass(x.category, _cache.CacheWarning)]


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def _under(path, folder):
    return os.path.realpath(path).startswith(os.path.realpath(folder) + os.sep)


def test_private_cache_dir_is_used_and_made_private(fresh, tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("HARDWOOD_CACHE_DIR", str(d))
    old = os.umask(0)  # a permissive umask must not leak into the modes
    try:
        mod, warned = _load("ok", _source())
    finally:
        os.umask(old)
    assert mod.VALUE == 42 and not warned
    assert _under(mod.__file__, d)
    assert _mode(d) == _mode(d / "kernels") == _mode(d / "kernels" / "__pycache__") == 0o700
    assert _mode(mod.__file__) == 0o600
    assert _cache.cache_dir() == os.path.realpath(d)


def test_world_writable_cache_dir_is_never_imported_from(fresh, tmp_path, monkeypatch):
    tmp, marker = fresh
    d = tmp_path / "shared"
    d.mkdir()
    os.chmod(d, 0o777)
    monkeypatch.setenv("HARDWOOD_CACHE_DIR", str(d))
    src = _source()
    planted = _plant(d / "kernels", _name("bad", src), marker)
    os.chmod(d / "kernels", 0o777)
    mod, warned = _load("bad", src)
    assert mod.VALUE == 42
    assert not marker.exists()
    assert not _under(mod.__file__, d)
    assert sorted(os.listdir(d / "kernels")) == [planted.name]  # nothing written there
    assert len(warned) == 1 and str(d) in str(warned[0].message)
    assert "writable by group or others" in str(warned[0].message)
    # the fallback: the fixed-name folder in the temp folder, made private
    fallback = tmp / f"hardwood-cache-{os.getuid()}"
    assert _under(mod.__file__, fallback) and _mode(fallback) == 0o700
    # a second module: no second warning
    mod2, warned2 = _load("bad2", _source())
    assert mod2.VALUE == 42 and not warned2 and _under(mod2.__file__, fallback)


def test_group_writable_kernels_subfolder_is_refused(fresh, tmp_path, monkeypatch):
    _, marker = fresh
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    os.chmod(d, 0o700)
    src = _source()
    _plant(d / "kernels", _name("grp", src), marker)
    os.chmod(d / "kernels", 0o770)
    monkeypatch.setenv("HARDWOOD_CACHE_DIR", str(d))
    mod, warned = _load("grp", src)
    assert mod.VALUE == 42 and not marker.exists() and not _under(mod.__file__, d)
    assert len(warned) == 1 and "kernels" in str(warned[0].message)


def test_unsafe_fixed_temp_dir_falls_back_to_a_private_one(fresh, tmp_path, monkeypatch):
    """Both the configured folder and <tempdir>/hardwood-cache-<uid> are unsafe (another user
    made the latter world-writable and planted the module): a fresh private folder."""
    tmp, marker = fresh
    home = tmp_path / "home"
    home.mkdir()
    os.chmod(home, 0o777)
    monkeypatch.setenv("HARDWOOD_CACHE_DIR", str(home))
    src = _source()
    shared = tmp / f"hardwood-cache-{os.getuid()}"
    _plant(shared / "kernels", _name("tmp", src), marker)
    for p in (shared, shared / "kernels"):
        os.chmod(p, 0o777)
    mod, warned = _load("tmp", src)
    assert mod.VALUE == 42 and not marker.exists()
    assert not _under(mod.__file__, shared) and not _under(mod.__file__, home)
    private = os.path.dirname(os.path.dirname(mod.__file__))
    assert os.path.basename(private).startswith("hardwood-cache-") and _mode(private) == 0o700
    assert len(warned) == 1
    msg = str(warned[0].message)
    assert str(home) in msg and str(shared) in msg and "private" in msg


def test_foreign_owner_is_refused(fresh, tmp_path, monkeypatch):
    """A folder owned by another user (faked through os.stat) is refused even though its
    mode is private."""
    _, marker = fresh
    d = tmp_path / "theirs"
    src = _source()
    _plant(d / "kernels", _name("own", src), marker)
    for p in (d, d / "kernels"):
        os.chmod(p, 0o700)
    real_stat = os.stat
    other = os.getuid() + 1

    def fake_stat(path, *args, **kwargs):
        st = real_stat(path, *args, **kwargs)
        if _under(os.fspath(path), d) or os.path.realpath(os.fspath(path)) == os.path.realpath(d):
            fields = list(st)
            fields[stat.ST_UID] = other
            return os.stat_result(fields)
        return st

    monkeypatch.setattr(os, "stat", fake_stat)
    monkeypatch.setenv("HARDWOOD_CACHE_DIR", str(d))
    mod, warned = _load("own", src)
    assert mod.VALUE == 42 and not marker.exists() and not _under(mod.__file__, d)
    assert len(warned) == 1 and f"owned by uid {other}" in str(warned[0].message)


def test_every_folder_foreign_still_works_in_a_private_folder(fresh, tmp_path, monkeypatch):
    """os.getuid faked: every existing folder belongs to 'someone else'; the fresh
    mkdtemp folder is ours by construction."""
    _, marker = fresh
    d = tmp_path / "cache"
    monkeypatch.setenv("HARDWOOD_CACHE_DIR", str(d))
    real = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: real + 1)
    mod, warned = _load("uid", _source())
    assert mod.VALUE == 42 and not _under(mod.__file__, d)
    assert len(warned) == 1 and "private" in str(warned[0].message)


def test_replaced_generated_file_is_never_executed(fresh, tmp_path, monkeypatch):
    """In a private folder, a generated file that holds other code, or is writable by
    group/others, or is a link, is rewritten before use; its code never runs."""
    _, marker = fresh
    d = tmp_path / "cache"
    monkeypatch.setenv("HARDWOOD_CACHE_DIR", str(d))
    src = _source()
    name = _name("swap", src)
    mod, _ = _load("swap", src)
    path = d / "kernels" / f"{name}.py"
    assert path.read_text() == src
    for how in ("content", "mode", "link"):
        monkeypatch.setattr(_cache, "_LOADED", {})
        sys.modules.pop(name, None)
        if how == "content":
            _plant(d / "kernels", name, marker)
        elif how == "mode":
            path.write_text(src)
            os.chmod(path, 0o666)
        else:
            evil = _plant(tmp_path / "elsewhere", name, marker)
            path.unlink()
            os.symlink(evil, path)
        mod, warned = _load("swap", src)
        assert mod.VALUE == 42 and not marker.exists() and not warned, how
        assert not path.is_symlink() and path.read_text() == src and _mode(path) == 0o600, how


def test_planted_numba_cache_files_are_removed(fresh, tmp_path, monkeypatch):
    """Numba unpickles its index files: one that is writable by others is removed before
    the module is compiled."""
    d = tmp_path / "cache"
    monkeypatch.setenv("HARDWOOD_CACHE_DIR", str(d))
    _load("first", _source())  # makes the folders
    src = _source()
    name = _name("nb", src)
    pyc = d / "kernels" / "__pycache__"
    bad = pyc / f"{name}.kernel-1.py311.nbi"
    bad.write_bytes(b"not a pickle you want")
    os.chmod(bad, 0o666)
    good = pyc / f"{name}.kernel-2.py311.nbi"
    good.write_bytes(b"ours")
    os.chmod(good, 0o600)
    mod, _ = _load("nb", src)
    assert mod.VALUE == 42 and not bad.exists() and good.exists()


def test_generated_kernels_run_from_a_checked_folder(fresh, tmp_path, monkeypatch):
    """End to end: a model compiled with the codegen runtime under a world-writable
    HARDWOOD_CACHE_DIR predicts as the reference and writes nothing there."""
    np = pytest.importorskip("numpy")
    import hardwood

    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 3))
    # trained first: training reads its tuning state from the cache folder, and the warning
    # is given once per process (run alone, this test saw it during training)
    m = hardwood.train({"objective": "reg:squarederror", "max_depth": 2},
                       hardwood.Dataset(X, X[:, 0]), num_boost_round=2)
    d = tmp_path / "shared"
    d.mkdir()
    os.chmod(d, 0o777)
    monkeypatch.setenv("HARDWOOD_CACHE_DIR", str(d))
    with pytest.warns(_cache.CacheWarning):
        got = m.predict(X, runtime="codegen")
    np.testing.assert_allclose(got, m.predict(X), rtol=1e-6)
    assert os.listdir(d) == []
