"""Layering (issue 21): imports run one way, estimators -> train -> learner -> backends ->
kernels, with model, predict, data and importers beside them; no module imports another
module's private names. Read from the source with ``ast``, so the test needs no import."""
import ast
import pathlib

import pytest

SRC = pathlib.Path(__file__).resolve().parents[1] / "src" / "hardwood"
ESTIMATORS = {"hardwood.sklearn", "hardwood.forest", "hardwood.cli", "hardwood.__main__"}
# package -> the packages and modules it must not import
FORBIDDEN = {
    "hardwood.backends": ("hardwood.train", *ESTIMATORS),
    "hardwood.train": ESTIMATORS,
    "hardwood.predict": ("hardwood.train", "hardwood.backends.cpu", *ESTIMATORS),
    "hardwood.model": ("hardwood.train", "hardwood.backends", *ESTIMATORS),
    "hardwood.data": ("hardwood.train", "hardwood.backends", *ESTIMATORS),
    "hardwood.importers": ("hardwood.train", "hardwood.backends", *ESTIMATORS),
    "hardwood.explain": ("hardwood.train", "hardwood.backends", "hardwood.model",
                         *ESTIMATORS),
}


def _module_name(path):
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path):
    """(imported module, imported names) of every import in the file, relative ones resolved."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, ()
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            yield mod, tuple(a.name for a in node.names)


FILES = sorted(SRC.rglob("*.py"))


def test_the_source_is_found():
    assert len(FILES) > 40


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(SRC)))
def test_imports_run_one_way(path):
    name = _module_name(path)
    rules = [bad for pkg, bad in FORBIDDEN.items() if name == pkg or name.startswith(pkg + ".")]
    for mod, names in _imports(path):
        for bad in (b for r in rules for b in r):
            targets = [mod] + [f"{mod}.{n}" for n in names]
            hit = [t for t in targets if t == bad or t.startswith(bad + ".")]
            assert not hit, f"{name} imports {hit[0]} (a higher layer)"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(SRC)))
def test_no_private_names_imported_from_another_module(path):
    name = _module_name(path)
    for mod, names in _imports(path):
        if not mod.startswith("hardwood") or mod == name:
            continue
        private = [n for n in names if n.startswith("_") and not n.startswith("__")]
        assert not private, f"{name} imports {private} from {mod}"
