"""Explanations of a model's predictions: exact path-dependent TreeSHAP values and SHAP
interaction values (``treeshap``), from each leaf's path (``paths``).

Reached through ``Model.predict(X, output="contrib")`` and ``output="interaction"``.
"""
