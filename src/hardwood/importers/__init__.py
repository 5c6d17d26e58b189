"""Importers: XGBoost, LightGBM and scikit-learn models → :class:`hardwood.Model`.

``import_model(obj_or_path)`` recognises

* an XGBoost ``Booster`` or ``XGBModel``, or an XGBoost JSON / UBJ file or bytes;
* a LightGBM ``Booster`` or ``LGBMModel``, or a LightGBM text model (file or string);
* a fitted scikit-learn ``DecisionTree*``, ``ExtraTree*``, ``RandomForest*``, ``ExtraTrees*``,
  ``GradientBoosting*`` or ``HistGradientBoosting*`` estimator.

Every imported tree is renumbered breadth-first and checked by ``model.io.validate_tree``; a
malformed or unsupported model raises :class:`ImportModelError` (a ``ModelFormatError``).
"""
from __future__ import annotations

import os

from ._build import ImportModelError


def _module(obj):
    return type(obj).__module__.split(".")[0]


def import_model(obj, format=None):
    """Convert a peer model (object or file) into a hardwood Model.

    format : None (guess), 'xgboost', 'lightgbm' or 'sklearn'.
    """
    if format is None:
        mod = _module(obj)
        if mod in ("xgboost", "lightgbm", "sklearn"):
            format = mod
        elif isinstance(obj, dict):
            format = "xgboost"
        elif isinstance(obj, (str, bytes, bytearray, os.PathLike)):
            format = _guess_file(obj)
        else:
            raise TypeError(f"import_model cannot read a {type(obj).__name__}; pass an "
                            "XGBoost/LightGBM booster, a scikit-learn tree model or a model file")
    else:
        _check_format(obj, format)
    if format == "xgboost":
        from .xgboost import import_xgboost
        return import_xgboost(obj)
    if format == "lightgbm":
        from .lightgbm import import_lightgbm
        return import_lightgbm(obj)
    if format == "sklearn":
        from .sklearn import import_sklearn
        return import_sklearn(obj)
    raise ValueError(f"format must be None, 'xgboost', 'lightgbm' or 'sklearn', got {format!r}")


def _check_format(obj, format):
    """A ``format`` that names another library than the object's (or than a LightGBM text
    file's) is an error saying so: a LightGBM Booster under 'sklearn' was "not fitted", a
    LightGBM file under 'xgboost' had an "unknown UBJ marker b't'"."""
    mod = _module(obj)
    seen = mod if mod in ("xgboost", "lightgbm", "sklearn") else None
    if seen is None and isinstance(obj, (str, bytes, bytearray, os.PathLike)):
        try:
            seen = "lightgbm" if _guess_file(obj) == "lightgbm" else None
        except (OSError, ValueError):
            seen = None  # (the importer names a missing or unreadable file)
    if seen is not None and format in ("xgboost", "lightgbm", "sklearn") and seen != format:
        name = {"xgboost": "an XGBoost", "lightgbm": "a LightGBM", "sklearn": "a scikit-learn"}
        raise ValueError(f"format={format!r}, but this is {name[seen]} model: leave format "
                         f"out, or give format={seen!r}")


def _guess_file(obj):
    if isinstance(obj, (bytes, bytearray)):
        head = bytes(obj[:64])
    elif isinstance(obj, str) and obj.lstrip().startswith("{"):
        head = obj[:64].encode()
    elif isinstance(obj, str) and "\n" in obj:  # model text, not a path: LightGBM's
        return "lightgbm"
    else:
        if not os.path.exists(obj):
            raise FileNotFoundError(f"no model file at {os.fspath(obj)!r}")
        with open(obj, "rb") as fh:
            head = fh.read(64)
    if head.startswith(b"tree\n") or head.startswith(b"tree\r\n"):
        return "lightgbm"
    if head.lstrip()[:1] == b"{" and b'"format"' in head and b'"hardwood"' in head:
        raise ValueError("this is a hardwood model file: load it with hardwood.load")
    return "xgboost"  # JSON or UBJ


__all__ = ["import_model", "ImportModelError"]
