"""pandas values meeting traced ones: a float Series or DataFrame inside a differentiated
structure is differentiated (STRICT names its columns by key path), a differentiated Series
argument gets a Series gradient, and ``series * traced`` says to take the Series' values
(pandas would read the traced value as a list). tests/test_tables.py checks tables in depth."""

from __future__ import annotations

import numpy as np
import pytest

import nodegrad as ng
from nodegrad.errors import NoGradientError

pd = pytest.importorskip("pandas")

FRAME = pd.DataFrame({"price": [1.0, 2.0, 3.0], "qty": [1, 2, 3], "name": ["a", "b", "c"]}, index=[10, 20, 30])


def test_a_series_closed_over_meets_a_traced_value_as_a_column() -> None:
    g = ng.grad(lambda w: ng.sum(FRAME["price"] * w))(np.ones(3))
    np.testing.assert_array_equal(g, FRAME["price"].to_numpy())
    price = FRAME["price"].to_numpy()
    g = ng.grad(lambda w: ng.sum(ng.exp(FRAME["price"].to_numpy() * w)))(0.5)
    assert g == pytest.approx(np.sum(price * np.exp(price * 0.5)))


def test_a_differentiated_series_gets_an_array_gradient() -> None:
    g = ng.grad(lambda s: ng.sum(s * s))(FRAME["price"])
    np.testing.assert_allclose(g, 2 * FRAME["price"].to_numpy())


@pytest.mark.parametrize("entry", ["price", "frame"])
def test_a_float_pandas_entry_of_a_differentiated_dict_is_differentiated_by_key_path(entry: str) -> None:
    value = FRAME["price"] if entry == "price" else FRAME
    # Inside the function a DataFrame is a Frame (its "price" a column), a Series its values.
    price = (lambda d: d["price"]) if entry == "frame" else (lambda d: d)
    g = ng.grad(lambda p: ng.sum(p["w"]) + ng.sum(price(p["data"]) ** 2))({"w": np.ones(2), "data": value})
    np.testing.assert_allclose(np.asarray(price(g["data"])), 2 * FRAME["price"].to_numpy())
    with pytest.raises(NoGradientError, match=r"args\[0\]\['data'\]\['price'\]"):
        ng.grad(lambda p: ng.sum(p["w"]), options=ng.GradOptions.STRICT)({"w": np.ones(2), "data": value})


def test_pandas_entries_without_floats_stay_static() -> None:
    g = ng.grad(lambda p: ng.sum(p["w"]))({"w": np.ones(2), "qty": FRAME["qty"], "names": FRAME[["name"]]})
    assert g["qty"] is None and g["names"] is None
