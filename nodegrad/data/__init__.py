"""Small real datasets shipped with nodegrad, for the demo and the notebooks."""

from __future__ import annotations

import csv
from importlib import resources

import numpy as np

__all__ = ["SPECIES", "load_iris"]

#: The iris species, in the order of the indices :func:`load_iris` gives.
SPECIES = ("setosa", "versicolor", "virginica")


def load_iris() -> dict[str, np.ndarray]:
    """Fisher's iris measurements: 150 flowers, 4 features in cm, 3 species.

    Returns
    -------
    dict
        ``{"features": float64 (150, 4), "species": int64 (150,)}``; species are indices
        into :data:`SPECIES`. Feature order: sepal length, sepal width, petal length,
        petal width.

    Examples
    --------
    >>> from nodegrad.data import load_iris
    >>> data = load_iris()
    >>> data["features"].shape, data["species"].shape
    ((150, 4), (150,))
    """
    text = resources.files(__package__).joinpath("iris.csv").read_text(encoding="utf-8")
    rows = list(csv.reader(text.splitlines()))[1:]
    features = np.array([[float(v) for v in row[:4]] for row in rows])
    species = np.array([SPECIES.index(row[4]) for row in rows])
    return {"features": features, "species": species}
