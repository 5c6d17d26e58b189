"""hardwood: fast tree ensembles (gradient-boosted trees and random forests)."""
from .data.dataset import Dataset
from .model.io import ModelFormatError, load_model as load
from .model.model import Model
from .importers import import_model
from .predict.dispatch import compile
from .train.booster import Booster
from .train.callback import EarlyStopping, TrainingCallback
from .train.engine import train

__version__ = "0.1.0"

__all__ = ["Booster", "Dataset", "Model", "ModelFormatError", "TrainingCallback", "EarlyStopping",
           "load", "train", "compile", "import_model", "GBDTRegressor", "GBDTClassifier", "GBDTRanker", "RandomForestClassifier",
           "RandomForestRegressor", "__version__"]


def __getattr__(name):  # the estimators import scikit-learn; load them on first use
    if name in ("GBDTRegressor", "GBDTClassifier", "GBDTRanker"):
        from . import sklearn as _sk
        return getattr(_sk, name)
    if name in ("RandomForestClassifier", "RandomForestRegressor"):
        from . import forest as _forest
        return getattr(_forest, name)
    raise AttributeError(f"module 'hardwood' has no attribute {name!r}")
