"""``ng.eval_shape`` against the eager call: the same shapes and dtypes, leaf by leaf, in the
same structure, or a ShapeOnlyError that says why -- never another answer.

* every op spec of the registry (``tests/ops/specs_*.py``), forward and gradient;
* generated programs of several ops under the transform stacks users write (grad, vmap,
  vmap of grad, jacobian, hessian), with arguments and with closures;
* shapes no machine could allocate, to show nothing of their size is computed;
* what only values answer raises, naming the user's line, and leaves nothing broken.
"""

from __future__ import annotations

import re
from typing import Any

import attrs
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import nodegrad as ng
from nodegrad.engine.structure import flatten
from nodegrad.errors import LeakedTracerError, ShapeOnlyError
from tests.ops.harness import Case
from tests.ops.test_ops import SPECS

FEW = settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: The op specs eval_shape may refuse (a ShapeOnlyError): where the result's shape or dtype
#: depends on the values, in numpy itself. A list that only shrinks.
MAY_REFUSE = {
    "eig_vectors", "eigvals",  # a real matrix's are complex only where some eigenvalues are (numpy's own rule)
    "logm", "sqrtm",  # the same, for scipy
    "roots",  # one root fewer for each leading zero coefficient
}  # fmt: skip


def signature(out: Any) -> tuple[str, list[tuple[tuple[int, ...], np.dtype[Any]]]]:
    """A result's structure and each leaf's shape and dtype."""
    leaves, treedef = flatten(out)
    return repr(treedef), [(tuple(np.shape(leaf)), np.result_type(leaf)) for leaf in leaves]


def described(out: Any) -> tuple[str, list[tuple[tuple[int, ...], np.dtype[Any]]]]:
    """eval_shape's result as :func:`signature` reads an eager one."""
    leaves, treedef = flatten(out)
    assert all(type(leaf) in (ng.ShapeDtype, int, float, complex, bool) for leaf in leaves), out  # numbers are known
    return repr(treedef), [
        (leaf.shape, leaf.dtype) if type(leaf) is ng.ShapeDtype else ((), np.result_type(leaf)) for leaf in leaves
    ]


def same_or_refused(fun: Any, *args: Any) -> bool:
    """eval_shape of ``fun`` equals the eager call's shapes (True) or refuses (False)."""
    expected = signature(fun(*args))
    try:
        got = ng.eval_shape(fun, *args)
    except ShapeOnlyError:
        return False
    assert described(got) == expected, f"eval_shape {got} against eager {expected}"
    return True


# -- every op of the registry ------------------------------------------------------------------


def _weighted_loss(case: Case) -> Any:
    def loss(*args: Any) -> Any:
        leaves, _ = flatten(case.of_args()(*args))
        return sum(np.sum(np.real(leaf) * 1.5) for leaf in leaves if np.result_type(leaf).kind in "fc")

    return loss


@pytest.mark.parametrize("name", sorted(SPECS))
@FEW
@given(data=st.data())
def test_eval_shape_of_each_op_is_eager_or_refused(name: str, data: st.DataObject) -> None:
    case = data.draw(SPECS[name], label="case")
    answered = same_or_refused(case.fn, *case.values)
    assert answered or name in MAY_REFUSE, f"eval_shape refused {name}, which it answered before"
    if answered and case.args:
        same_or_refused(ng.grad(_weighted_loss(case), argnums=tuple(range(len(case.args)))), *case.args)


# -- programs under transform stacks ----------------------------------------------------------


@attrs.frozen
class Params:
    w: Any
    b: Any


def _model(p: Params, x: Any) -> Any:
    h = np.tanh(x @ p.w + p.b)
    return {"out": np.sum(h**2, axis=-1), "mean": np.mean(h, axis=0)}


def _loss(p: Params, x: Any) -> Any:
    out = _model(p, x)
    return np.sum(out["out"]) + np.sum(np.exp(out["mean"]) * 0.1)


STACKS = {
    "plain": lambda p, x: _model(p, x),
    "grad": lambda p, x: ng.grad(_loss)(p, x),
    "value_and_grad": lambda p, x: ng.value_and_grad(_loss, argnums=(0, 1))(p, x),
    "vmap": lambda p, x: ng.vmap(_model, in_axes=(None, 0))(p, x[None] * np.ones((2, 1, 1))),
    "vmap_of_grad": lambda p, x: ng.vmap(ng.grad(_loss), in_axes=(None, 0))(p, np.stack([x, 2 * x])),
    "jacobian": lambda p, x: ng.jacobian(lambda b: _model(Params(p.w, b), x)["mean"])(p.b),
    "hessian": lambda p, x: ng.hessian(lambda b: _loss(Params(p.w, b), x))(p.b),
    "closure": lambda p, x: ng.vmap(lambda row: ng.grad(lambda w: np.sum(np.sin(row @ w)))(p.w))(x),
}


@pytest.mark.parametrize("stack", sorted(STACKS))
@settings(max_examples=10, deadline=None)
@given(n=st.integers(1, 4), d=st.integers(1, 4), k=st.integers(1, 3), dtype=st.sampled_from([np.float32, np.float64]))
def test_programs_under_transforms_have_eager_shapes(stack: str, n: int, d: int, k: int, dtype: Any) -> None:
    rng = np.random.default_rng(n * 100 + d * 10 + k)
    p = Params(rng.normal(size=(d, k)).astype(dtype), rng.normal(size=k).astype(dtype))
    x = rng.normal(size=(n, d)).astype(dtype)
    assert same_or_refused(STACKS[stack], p, x), f"{stack} was refused"


# -- sizes that are never allocated ------------------------------------------------------------


def test_shapes_no_machine_holds_are_answered() -> None:
    big = ng.ShapeDtype((10**6, 10**6), np.float32)

    def loss(w: Any, x: Any) -> Any:
        return np.mean(np.tanh(x @ w).reshape(-1, 10) ** 2)

    grads = ng.eval_shape(ng.grad(loss), big, big)
    assert grads == ng.ShapeDtype((10**6, 10**6), np.float32)
    assert ng.eval_shape(lambda a: np.concatenate([a, a])[::2, None, 5], big) == ng.ShapeDtype((10**6, 1), np.float32)


def test_structures_come_back_in_the_callers_structure() -> None:
    p = Params(ng.ShapeDtype((3, 2), np.float64), np.zeros(2))
    out = ng.eval_shape(lambda p, n, name: {"y": p.w * n, "name": name, "n": n}, p, 4, "head")
    assert out == {"y": ng.ShapeDtype((3, 2), np.float64), "name": "head", "n": 4}


# -- what only values answer -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fun", "what"),
    [
        (lambda a: float(a[0, 0]), "float()"),
        (lambda a: a * 2 if a[0, 0] > 0 else a, "bool()"),
        (lambda a: a[a > 0], "boolean mask"),
        (lambda a: np.nonzero(a), "np.nonzero"),
        (lambda a: np.asarray(a).sum(), "plain array"),
    ],
)
def test_reading_values_raises_naming_the_line(fun: Any, what: str) -> None:
    with pytest.raises(ShapeOnlyError, match=re.escape(what)) as info:
        ng.eval_shape(fun, ng.ShapeDtype((3, 4), np.float64))
    assert "test_eval_shape.py" in str(info.value)
    assert ng.grad(lambda x: np.sum(x**2))(np.ones(2)).tolist() == [2.0, 2.0]  # nothing left broken


def test_a_leaked_value_is_refused() -> None:
    leaked: list[Any] = []
    ng.eval_shape(lambda a: leaked.append(a) or a, ng.ShapeDtype((2,), np.float64))
    with pytest.raises(LeakedTracerError, match="eval_shape"):
        np.sin(leaked[0])
