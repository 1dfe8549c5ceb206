"""Forward mode inside ``ng.vmap``, against a Python loop of the unbatched transform.

Forward mode is reverse mode transposed (:mod:`nodegrad.transforms.forward`): its rules
meet a cotangent traced by a transform that began *inside* the ``vmap``, where reverse mode
inside ``vmap`` meets plain ones. So ``vmap(grad)`` being right says nothing of
``vmap(jvp)``. For every linear algebra op of the registry (the list is read from the
registry, so a new op cannot escape) and the public functions built on them, a case drawn
from the op's spec (``tests/ops/specs_*.py``) is batched, and

* ``vmap(jvp)`` with a tangent per example, ``vmap(linearize)`` with one tangent for all,
  ``vmap(jacfwd)`` and ``vmap(jacfwd(grad))`` (per-example Hessians of a weighted sum)
  equal a loop of the same transform over the examples, to 1e-10 in float64 (an error the
  loop raises, vmap raises too);
* a directional derivative through a scalar whose function closes over the batched
  operands equals the loop's;
* the unbatched ``jvp`` agrees with central differences.

Every op of the registry (not only the linear algebra) is swept for ``vmap(jvp)`` once.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import nodegrad as ng
from nodegrad.engine.structure import flatten
from nodegrad.errors import NodegradError
from nodegrad.ops import REGISTRY
from tests.ops.harness import Case
from tests.ops.test_ops import ALL_SPECS
from tests.ops.test_vmap_linalg import SPECS as LINALG_SPECS
from tests.ops.test_vmap_linalg import _specs_on_batched_values  # noqa: F401  (an autouse fixture)
from tests.ops.test_vmap_registry import LAZY_MODULES
from tests.ops.vmap_harness import Batch, assert_same, batches, example_loss, shrinking, stacked

for _module in LAZY_MODULES:
    importlib.import_module(_module)  # they register ops when imported

TOLERANCE = {"rtol": 1e-10, "atol": 1e-10, "equal_nan": True}
#: The most entries of the differentiated operands whose full per-example Hessian is checked.
SMALL = 6
ONCE = settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck), database=None)

#: The linear algebra ops of the registry, and the public functions made of them.
LINALG_OPS = sorted(name for name, op in REGISTRY.items() if op.family in ("linalg", "scipy.linalg"))
PUBLIC = ["eigh", "svd", "qr", "eig", "slogdet", "lstsq", "matrix_power", "tensorsolve", "tensorinv"]
SPECS: dict[str, st.SearchStrategy[Case]] = {**ALL_SPECS, **LINALG_SPECS}


def _norm2_cases() -> st.SearchStrategy[Case]:
    """``np.linalg.norm(x, 2)`` and ``np.linalg.cond(x)``: largest and ratio of singular values."""
    return st.builds(
        lambda scale: Case(
            lambda x: (np.linalg.norm(x, 2), np.linalg.cond(x), np.linalg.norm(x, -2), np.linalg.norm(x, "nuc")),
            lambda x: x,
            (np.array([[3.0, 0.5, 0.2], [0.1, 2.0, 0.3], [0.4, 0.2, 1.0]]) * scale,),
            (True,),
            desc="norm(x, 2), cond(x), norm(x, -2), norm(x, 'nuc')",
        ),
        st.floats(0.5, 2.0),
    )


#: Ops whose unbatched forward mode alone costs about a second per example (logm's rule takes
#: the Frechet derivative of a block logm): only ``vmap(jvp)`` of them is checked here.
COSTLY = {"logm"}

SPECS["norm(ord=2), cond"] = _norm2_cases()
LINALG = [*LINALG_OPS, *PUBLIC, "norm(ord=2), cond"]


def test_every_linear_algebra_op_is_swept() -> None:
    assert len(LINALG_OPS) >= 20, LINALG_OPS
    assert not set(LINALG) - set(SPECS), f"no spec to draw from: {sorted(set(LINALG) - set(SPECS))}"


# -- the transforms, as functions of every operand ---------------------------------------------------------


def _tangents(case: Case, seed: int) -> tuple[Any, ...]:
    """A tangent per differentiated operand, of its shape and dtype, drawn from ``seed``."""
    rng = np.random.default_rng(seed)

    def draw(v: Any) -> Any:
        t = rng.standard_normal(np.shape(v))
        if np.iscomplexobj(v):
            t = t + 1j * rng.standard_normal(np.shape(v))
        return np.asarray(t, np.result_type(v))

    return tuple(draw(v) for v in case.args)


def _of_differentiated(case: Case, values: tuple[Any, ...]) -> Callable[..., Any]:
    """``case.fn`` of the differentiated operands, closing over the others of ``values``."""

    def f(*args: Any) -> Any:
        it = iter(args)
        return case.fn(*(next(it) if d else v for v, d in zip(values, case.diff, strict=True)))

    return f


def _differentiated(case: Case, values: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(v for v, d in zip(values, case.diff, strict=True) if d)


def _transforms(case: Case) -> dict[str, Callable[..., Any]]:
    """The forward-mode transforms of the case, each a function of the example's tangents
    (for ``jvp``) and every operand."""
    argnums = tuple(range(len(case.argnums)))
    shared = _tangents(case, 1)

    def jvp(tangents: Any, *values: Any) -> Any:
        return ng.jvp(_of_differentiated(case, values), _differentiated(case, values), tangents)

    def linearize(tangents: Any, *values: Any) -> Any:
        out, push = ng.linearize(_of_differentiated(case, values), *_differentiated(case, values))
        return out, push(*shared)

    def jacfwd(tangents: Any, *values: Any) -> Any:
        return ng.jacfwd(_of_differentiated(case, values), argnums=argnums)(*_differentiated(case, values))

    def hessian(tangents: Any, *values: Any) -> Any:
        gradient = ng.grad(example_loss(_of_differentiated(case, values)), argnums=argnums)
        if sum(np.size(v) for v in case.args) > SMALL:  # a Hessian-vector product: the full one costs too much
            return ng.jvp(gradient, _differentiated(case, values), tangents)
        return ng.jacfwd(gradient, argnums=argnums)(*_differentiated(case, values))

    def through_a_closure(tangents: Any, *values: Any) -> Any:
        # The batched operands reach the differentiated function through its closure only.
        def along(t: Any) -> Any:
            moved = iter(v + t * s for v, s in zip(_differentiated(case, values), shared, strict=True))
            return case.fn(*(next(moved) if d else v for v, d in zip(values, case.diff, strict=True)))

        return ng.jvp(along, (0.0,), (1.0,))

    return {
        "vmap(jvp)": jvp,
        "vmap(linearize)": linearize,
        "vmap(jacfwd)": jacfwd,
        "vmap(jacfwd(grad)), or vmap(jvp(grad)) of large operands": hessian,
        "vmap(jvp) through a closure": through_a_closure,
    }


def _check(name: str, case: Case, what: str, fun: Callable[..., Any], batch: Batch) -> None:
    """``vmap(fun)`` of the batch (and a tangent per example) against a loop of ``fun`` over
    its examples; an error the loop raises (a second derivative refused, say), vmap raises too."""
    tangents = [_tangents(case, 10 + b) for b in range(batch.size)]
    stacked_tangents = tuple(np.stack([t[k] for t in tangents]) for k in range(len(case.argnums)))

    def vmapped() -> Any:
        return ng.vmap(fun, in_axes=(0, *batch.axes))(stacked_tangents, *batch.batched)

    try:
        expected: Any = stacked([fun(t, *e) for t, e in zip(tangents, batch.examples, strict=True)])
    except NodegradError as exc:
        with pytest.raises(type(exc)):
            vmapped()
        return
    assert_same(vmapped(), expected, f"{name}: {what}, {batch}", TOLERANCE)


def _draw(data: st.DataObject, name: str) -> tuple[Case, Batch]:
    case = data.draw(SPECS[name], label="case")
    batch = data.draw(batches(case, factor=shrinking), label="batch")
    return case, batch


@pytest.mark.parametrize("name", LINALG)
@ONCE
@given(data=st.data())
def test_forward_mode_inside_vmap_equals_a_loop(name: str, data: st.DataObject) -> None:
    case, batch = _draw(data, name)
    if not case.argnums:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a loop's own, at a drawn edge
        for what, fun in _transforms(case).items():
            if name not in COSTLY or what == "vmap(jvp)":
                _check(name, case, what, fun, batch)


@pytest.mark.parametrize("name", LINALG)
@ONCE
@given(data=st.data())
def test_forward_mode_agrees_with_central_differences(name: str, data: st.DataObject) -> None:
    case = data.draw(SPECS[name], label="case")
    if not case.argnums:
        return
    f = _of_differentiated(case, case.values)
    x, t = case.args, _tangents(case, 1)
    h = 1e-6
    ahead = f(*(v + h * s for v, s in zip(x, t, strict=True)))
    behind = f(*(v - h * s for v, s in zip(x, t, strict=True)))
    _, tangent = ng.jvp(f, x, t)
    for k, (a, b, d) in enumerate(zip(flatten(ahead)[0], flatten(behind)[0], flatten(tangent)[0], strict=True)):
        if np.result_type(a).kind in "fc":
            central = (np.asarray(a) - np.asarray(b)) / (2 * h)
            np.testing.assert_allclose(d, central, rtol=1e-5, atol=1e-6, err_msg=f"{name}: jvp leaf {k}")


# -- the whole registry, once ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(set(REGISTRY) - {"param", "input"}))
@ONCE
@given(data=st.data())
def test_vmap_of_jvp_equals_a_loop_for_every_op(name: str, data: st.DataObject) -> None:
    case, batch = _draw(data, name)
    if case.argnums:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            _check(name, case, "vmap(jvp)", _transforms(case)["vmap(jvp)"], batch)


def test_the_determinants_jacobian_per_example() -> None:
    m = np.array([[2.0, 0.3], [0.1, 1.0]])
    cofactors = np.array([[1.0, -0.1], [-0.3, 2.0]])
    np.testing.assert_allclose(ng.vmap(ng.jacfwd(np.linalg.det))(m[None]), cofactors[None], rtol=1e-14)
    _, tangents = ng.vmap(lambda a: ng.jvp(np.linalg.det, (a,), (np.eye(2),)))(np.stack([m, 2 * m]))
    np.testing.assert_allclose(tangents, [3.0, 6.0], rtol=1e-14)
