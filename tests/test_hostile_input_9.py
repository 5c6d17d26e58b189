"""Imported models, model files and estimators tried as a new user would (session 19): each
test names what hardwood did before."""
import numpy as np
import pytest

import hardwood as hw
from hardwood.importers import ImportModelError
from hardwood.model.io import ModelFormatError


def test_lightgbm_names_with_spaces_read_the_training_frame():
    """LightGBM stores a column "sq ft" as "sq_ft" and predicts on the frame it was trained
    on; hardwood refused that frame ("columns differ from the training columns")."""
    lgb = pytest.importorskip("lightgbm")
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"sq ft": rng.normal(size=500), "n rooms": rng.integers(1, 6, 500),
                       "age": rng.normal(size=500)})
    y = df["sq ft"] * 2 + df["n rooms"] + rng.normal(scale=0.1, size=500)
    booster = lgb.train({"verbose": -1, "num_threads": 1}, lgb.Dataset(df, y), 5)
    model = hw.import_model(booster)
    assert model.feature_names == ["sq_ft", "n_rooms", "age"]
    np.testing.assert_allclose(model.predict(df), booster.predict(df), rtol=1e-6, atol=1e-9)
    # the names LightGBM stored read the frame too, and other names are still refused
    np.testing.assert_allclose(model.predict(df.set_axis(["sq_ft", "n_rooms", "age"], axis=1)),
                               booster.predict(df), rtol=1e-6, atol=1e-9)
    with pytest.raises(ValueError, match="differ from the training columns"):
        model.predict(df.set_axis(["sq  ft", "n rooms", "age"], axis=1))
    with pytest.raises(ValueError, match="differ from the training columns"):
        model.predict(df[["n rooms", "sq ft", "age"]])


def test_loading_an_xgboost_ubj_file_points_to_import_model(tmp_path):
    """``hardwood.load`` of XGBoost's binary model said only "the file is not UTF-8 JSON
    text"; its JSON form already pointed to ``import_model``."""
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    booster = xgb.train({"nthread": 1}, xgb.DMatrix(X, X[:, 0]), 2)
    path = tmp_path / "m.ubj"
    booster.save_model(str(path))
    for source in (str(path), path.read_bytes()):
        with pytest.raises(ModelFormatError, match="XGBoost model.*UBJ.*import_model"):
            hw.load(source)
    np.testing.assert_allclose(hw.import_model(str(path)).predict(X),
                               booster.predict(xgb.DMatrix(X)), rtol=1e-6)


def test_importing_an_unfitted_lightgbm_estimator_says_so():
    """An unfitted ``LGBMRegressor`` gave "cannot read a model from a LGBMRegressor"."""
    lgb = pytest.importorskip("lightgbm")
    with pytest.raises(ImportModelError, match="LGBMRegressor is not fitted"):
        hw.import_model(lgb.LGBMRegressor())
