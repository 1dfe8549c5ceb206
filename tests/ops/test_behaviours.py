"""Fixed-value tests of op behaviour that finite differences cannot check.

Conventions at non-differentiable points (ties, kinks, bounds), exact gradients where an
input has zeros, values and gradients where a result is undefined (an empty segment or
masked group), refusals, and deterministic reproducers of
engine bugs found while writing the op specs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import nodegrad as ng
from nodegrad.errors import OpIndexError
from nodegrad.ops import index_add, index_set
from nodegrad.testing import check_grads
from tests.ops.specs_elementwise import gelu_ref


def _grads(f: Callable[..., Any], *args: Any) -> tuple[Any, ...]:
    result = ng.grad(lambda *a: ng.sum(f(*a)), argnums=tuple(range(len(args))))(*args)
    return tuple(result)


# -- conventions at non-differentiable points -----------------------------------------------------------


@pytest.mark.parametrize(
    ("f", "args", "expected"),
    [
        pytest.param(ng.maximum, ([1.0, 2.0], [1.0, 3.0]), ([0.5, 0.0], [0.5, 1.0]), id="maximum-tie-splits"),
        pytest.param(ng.minimum, ([1.0, 2.0], [1.0, 3.0]), ([0.5, 1.0], [0.5, 0.0]), id="minimum-tie-splits"),
        pytest.param(ng.max, ([1.0, 3.0, 3.0],), ([0.0, 0.5, 0.5],), id="max-ties-share"),
        pytest.param(lambda x: ng.min(x, axis=1), ([[2.0, 2.0, 2.0], [1.0, 0.0, 3.0]],),
                     ([[1 / 3, 1 / 3, 1 / 3], [0.0, 1.0, 0.0]],), id="min-axis-ties-share"),
        pytest.param(ng.relu, ([-1.0, 0.0, 2.0],), ([0.0, 0.0, 1.0],), id="relu-zero-at-0"),
        pytest.param(ng.abs, ([-1.0, 0.0, 2.0],), ([-1.0, 0.0, 1.0],), id="abs-zero-at-0"),
        pytest.param(ng.clamp, ([-1.0, 0.0, 1.0, 2.0], -1.0, 1.0), ([1.0, 1.0, 1.0, 0.0], 0.0, 1.0),
                     id="clamp-bound-goes-to-x"),
        pytest.param(ng.power, ([0.0, -2.0], [2.0, 2.0]), ([0.0, -4.0], [0.0, 0.0]), id="power-dy-0-for-x<=0"),
        pytest.param(lambda d: ng.segment_max(d, np.array([0, 0, 0, 1])),
                     ([[1.0, 5.0], [3.0, 5.0], [3.0, 2.0], [0.5, 7.0]],),
                     ([[0.0, 0.5], [0.5, 0.5], [0.5, 0.0], [1.0, 1.0]],), id="segment_max-ties-share"),
    ],
)  # fmt: skip
def test_gradient_conventions_at_kinks(f: Callable[..., Any], args: tuple[Any, ...], expected: tuple[Any, ...]) -> None:
    arrays = tuple(np.array(a) if isinstance(a, list) else a for a in args)
    for got, want in zip(_grads(f, *arrays), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def test_segment_max_ties_share_a_weighted_gradient() -> None:
    data, ids = np.array([4.0, 4.0, 4.0, 1.0, 2.0]), np.array([1, 1, 1, 0, 0])
    _, back = ng.vjp(lambda d: ng.segment_max(d, ids), data)
    np.testing.assert_allclose(back(np.array([10.0, 6.0]))[0], [2.0, 2.0, 2.0, 0.0, 10.0], rtol=1e-15)


# -- undefined results: empty segments and groups ----------------------------------------------------------

_DATA = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
_IDS = np.array([0, 2, 0])  # segment 1 is empty


def test_segment_mean_of_an_empty_segment_is_0_with_zero_gradient() -> None:
    out, back = ng.vjp(lambda d: ng.segment_mean(d, _IDS, num_segments=3), _DATA)
    np.testing.assert_array_equal(out, [[3.0, 4.0], [0.0, 0.0], [3.0, 4.0]])
    np.testing.assert_array_equal(back(np.ones((3, 2)))[0], [[0.5, 0.5], [1.0, 1.0], [0.5, 0.5]])
    empty_only = ng.grad(lambda d: ng.sum(ng.segment_mean(d, _IDS, num_segments=3)[1]))(_DATA)
    np.testing.assert_array_equal(empty_only, np.zeros_like(_DATA))


def test_segment_max_of_an_empty_segment_is_minus_inf_with_zero_gradient() -> None:
    out, back = ng.vjp(lambda d: ng.segment_max(d, _IDS, num_segments=3), _DATA)
    np.testing.assert_array_equal(out, [[5.0, 6.0], [-np.inf, -np.inf], [3.0, 4.0]])
    np.testing.assert_array_equal(back(np.ones((3, 2)))[0], [[0.0, 0.0], [1.0, 1.0], [1.0, 1.0]])


def test_masked_mean_of_an_all_false_row_is_nan_with_zero_gradient() -> None:
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    mask = np.array([[True, False, True], [False, False, False]])
    out, back = ng.vjp(lambda x: ng.masked_mean(x, mask, axis=1), x)
    np.testing.assert_array_equal(out, [2.0, np.nan])
    np.testing.assert_array_equal(back(np.ones(2))[0], [[0.5, 0.0, 0.5], [0.0, 0.0, 0.0]])
    nan_only = ng.grad(lambda x: ng.masked_mean(x, mask, axis=1)[1])(x)
    np.testing.assert_array_equal(nan_only, np.zeros_like(x))


# -- exact gradients with zeros: the product of the other entries -------------------------------------------
# Small dyadic values, so every product is exact and the comparison can be exact too.

_WITH_ZEROS = [[2.0, 0.0, 3.0, -0.5], [0.0, 4.0, 0.0, 1.5], [2.0, 3.0, -0.5, 4.0], [0.0], [0.0, 0.0, 0.0]]


def _others(x: np.ndarray, i: int) -> float:
    return float(np.prod(np.delete(x, i)))


@pytest.mark.parametrize("x", _WITH_ZEROS)
def test_prod_gradient_is_exact_with_zeros(x: list[float]) -> None:
    x_ = np.array(x)
    np.testing.assert_array_equal(ng.grad(ng.prod)(x_), [_others(x_, i) for i in range(x_.size)])


def test_prod_gradient_along_an_axis_is_exact_with_zeros() -> None:
    x = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0], [1.5, -2.0, 4.0]])
    expected = [[_others(row, i) for i in range(3)] for row in x]
    np.testing.assert_array_equal(ng.grad(lambda x: ng.sum(ng.prod(x, axis=1)))(x), expected)
    np.testing.assert_array_equal(ng.grad(lambda x: ng.sum(ng.prod(x.T, axis=0)))(x), expected)


@pytest.mark.parametrize("x", _WITH_ZEROS)
def test_cumprod_gradient_is_exact_with_zeros(x: list[float]) -> None:
    # d/dx_i sum_j w_j prod_{k<=j} x_k = sum_{j>=i} w_j * (product of x_k, k <= j, k != i)
    x_, n = np.array(x), len(x)
    w = np.arange(1.0, n + 1)
    expected = [sum(w[j] * _others(x_[: j + 1], i) for j in range(i, n)) for i in range(n)]
    np.testing.assert_array_equal(ng.grad(lambda x: ng.sum(ng.cumprod(x) * w))(x_), expected)


def test_cumprod_gradient_along_axis_0_is_exact_with_zeros() -> None:
    x = np.array([[2.0, 0.0], [0.0, 3.0], [4.0, -0.5]])
    expected = np.array([[1 + 0.0 + 0.0, 1 + 3.0 + 3.0 * -0.5], [2.0 + 2.0 * 4.0, 0.0], [0.0, 0.0]])
    np.testing.assert_array_equal(ng.grad(lambda x: ng.sum(ng.cumprod(x, axis=0)))(x), expected)


# -- refusals --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "index"),
    [
        pytest.param((3,), np.array([1, 1]), id="repeat"),
        pytest.param((3,), np.array([1, -2]), id="negative-alias"),
        pytest.param((2, 3), (np.array([0, 1, 0]), np.array([2, 0, -1])), id="repeated-pair"),
        pytest.param((2, 3), (np.array([[0], [0]]),), id="repeat-in-2d-index"),
    ],
)
def test_index_set_with_a_repeated_index_raises(shape: tuple[int, ...], index: Any) -> None:
    with ng.Arena() as arena:
        x = arena.param(np.zeros(shape))
        v = arena.param(np.array(1.0))
        size = len(arena)
        with pytest.raises(OpIndexError, match="index_set: the index selects an element more than once"):
            index_set(x, v, index)
        with pytest.raises(OpIndexError, match="index_set"):
            ng.at(x)[index].set(v)
        assert len(arena) == size


def test_einsum_diagonal_gradient_lands_on_the_diagonal() -> None:
    x = np.arange(9.0).reshape(3, 3)
    assert ng.einsum("ii->", x) == np.trace(x)
    np.testing.assert_array_equal(ng.einsum("ii->i", x), np.diag(x))
    np.testing.assert_array_equal(ng.grad(lambda x: ng.einsum("ii->", x))(x), np.eye(3))
    np.testing.assert_array_equal(ng.grad(lambda y: ng.einsum("ii,i->", x, y))(np.ones(3)), np.diag(x))
    # numpy's interleaved form, through np.einsum on a traced value.
    g = ng.grad(lambda x: np.einsum(x, [0, 0], [0]).sum())(x)
    np.testing.assert_array_equal(g, np.eye(3))


# -- structured outputs of composites ----------------------------------------------------------------------------


def test_split_differentiates_through_the_list_of_pieces() -> None:
    x = np.arange(12.0).reshape(4, 3) / 7
    check_grads(lambda x: ng.split(x, [1, 1, 3]), x)  # an empty piece included
    check_grads(lambda x: ng.split(x, 3, axis=1), x)


def test_one_hot_is_a_plain_constant() -> None:
    out = ng.one_hot(np.array([[2, 0]]), 3, dtype=np.float32)
    assert type(out) is np.ndarray and out.dtype == np.float32
    np.testing.assert_array_equal(out, [[[0, 0, 1], [1, 0, 0]]])


# -- engine bugs found while writing the op suite (deterministic reproducers) ------------------------------------


def test_gelu_exact_accepts_scalars() -> None:
    # Engine bug 1: the exact form calls .astype on the Python float math.erf returns for 0-d input.
    assert ng.gelu(0.5, approximate=False) == pytest.approx(gelu_ref(0.5, approximate=False), rel=1e-12)
    check_grads(lambda x: ng.gelu(x, approximate=False), np.array(0.5))


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod"])
def test_reduction_of_0d_input_along_axis_0(name: str) -> None:
    # numpy lets sum/max/min reduce a 0-d array over "axis 0" (there is nothing to reduce;
    # np.mean alone refuses). nodegrad does the same for all of them, gradient included.
    x = np.array(2.0)
    assert getattr(ng, name)(x, axis=0) == 2.0
    assert ng.grad(lambda v: getattr(ng, name)(v, axis=0))(3.0) == 1.0


def test_vjp_of_a_function_returning_an_earlier_argument() -> None:
    # Engine bug 4: the sweep indexes its mark array by wrt indices above the output's.
    _, back = ng.vjp(lambda x, y: x, 1.0, 2.0)
    assert back(1.0) == (1.0, 0.0)


def test_np_take_out_of_bounds_leaves_no_node() -> None:
    # Engine bug 5: np.take without an axis records a reshape before the gather fails.
    with ng.Arena() as arena:
        x = arena.param(np.ones(3))
        with pytest.raises(OpIndexError, match="gather"):
            np.take(x, np.array([5]))
        assert len(arena) == 1, [node.op for node in arena]


def test_einsum_gradient_of_a_broadcast_operand_with_an_index_summed_inside_it() -> None:
    # Engine bug 6: in '...i,...->...' i is summed inside operand 0 alone, and operand 0's
    # '...' (size 1) broadcasts against operand 1's (size 4). The rule broadcasts its
    # cotangent of shape (4, 1) to the operand's shape (1, 3) instead of to (4, 3).
    a, b = np.array([[1.0, 2.0, 3.0]]), np.arange(4.0)
    np.testing.assert_array_equal(ng.einsum("...i,...->...", a, b), [0.0, 6.0, 12.0, 18.0])
    grad_a, grad_b = ng.grad(lambda a, b: ng.sum(ng.einsum("...i,...->...", a, b)), argnums=(0, 1))(a, b)
    np.testing.assert_array_equal(grad_a, [[6.0, 6.0, 6.0]])
    np.testing.assert_array_equal(grad_b, [6.0, 6.0, 6.0, 6.0])


def test_einsum_gradient_when_a_size_1_index_broadcasts() -> None:
    # Engine bug 7: np.einsum (so ng.einsum's forward) broadcasts an index of size 1 in one
    # operand against a larger size in another; the rule then returns a cotangent of the
    # size-1 shape, (1, 1) here, for an operand of shape (1, 3).
    a, b = np.array([[1.0, 2.0, 3.0]]), np.array([[1.0], [2.0], [3.0], [4.0]])
    np.testing.assert_array_equal(ng.einsum("ij,kj->ik", a, b), np.einsum("ij,kj->ik", a, b))
    grad_a, grad_b = ng.grad(lambda a, b: ng.sum(ng.einsum("ij,kj->ik", a, b)), argnums=(0, 1))(a, b)
    assert grad_a.shape == a.shape and grad_b.shape == b.shape
    np.testing.assert_array_equal(grad_a, [[10.0, 10.0, 10.0]])
    np.testing.assert_array_equal(grad_b, [[6.0], [6.0], [6.0], [6.0]])


def test_take_along_axis_gradient_when_x_broadcasts_against_the_indices() -> None:
    # Engine bug 8: x's size-1 axis 0 broadcasts against the indices' 2 rows, as numpy allows;
    # the forward does so, but the gradient scatters into rows 0 and 1 of x, which has one.
    x, idx = np.array([[1.0, 2.0, 3.0]]), np.array([[0], [2]])
    np.testing.assert_array_equal(ng.take_along_axis(x, idx, axis=1), np.take_along_axis(x, idx, axis=1))
    grad = ng.grad(lambda x: ng.sum(ng.take_along_axis(x, idx, axis=1)))(x)
    np.testing.assert_array_equal(grad, [[1.0, 0.0, 1.0]])


@pytest.mark.parametrize(
    "update",
    [
        pytest.param(lambda x, index, v: index_add(x, v, index), id="index_add"),
        pytest.param(lambda x, index, v: ng.at(x)[index].add(v), id="at-add"),
        pytest.param(lambda x, index, v: ng.scatter_add(x, index, v), id="scatter_add"),
    ],
)
def test_adding_at_a_2d_index_with_values_broadcast_along_its_rows(update: Callable[..., Any]) -> None:
    # Engine bug 9: numpy 2.4's np.add.at, given a 2-D index array and values that broadcast
    # along the index's first axis, reads the values from the wrong memory (a silent wrong
    # result); index_add hands v to it unbroadcast. Rows of v: [1, 2] at [0, 1] and at [2, 0].
    x, index, v = np.zeros(3), np.array([[0, 1], [2, 0]]), np.array([1.0, 2.0])
    np.testing.assert_array_equal(update(x, index, v), [3.0, 2.0, 1.0])


def test_astype_to_float32_and_back_keeps_the_gradient_and_its_dtype() -> None:
    x = np.array([1.0, 2.0, 3.0])
    g = ng.grad(lambda x: ng.sum(ng.astype(x, np.float32) * np.float32(2.0)))(x)
    assert g.dtype == np.float64
    np.testing.assert_array_equal(g, [2.0, 2.0, 2.0])
    g32 = ng.grad(lambda x: ng.sum(x.astype(np.float64) ** 2.0))(x.astype(np.float32))
    assert g32.dtype == np.float32
    np.testing.assert_array_equal(g32, [2.0, 4.0, 6.0])


def test_astype_to_an_integer_dtype_is_plain_data() -> None:
    with ng.Arena() as arena:
        x = arena.param(np.array([1.5, 2.5]))
        ints = x.astype(np.int64)
    assert type(ints) is np.ndarray and ints.dtype == np.int64
    assert len(arena) == 1


def test_float_of_a_traced_value_refuses_to_drop_the_gradient() -> None:
    import math

    with pytest.raises(ng.errors.ArenaError, match="float"):
        ng.grad(lambda x: x[0] * float(x[0]))(np.array([3.0, 1.0]))
    with pytest.raises(ng.errors.ArenaError, match=r"math\.exp"):
        ng.grad(lambda x: math.exp(x[0]) + ng.sum(x))(np.array([0.0, 1.0]))
    # Reading the number on purpose, and formatting it for a log line, still work.
    seen: list[str] = []

    def loss(x: Any) -> Any:
        y = ng.sum(x * x)
        seen.append(f"{y:.2f} {float(y.value):.1f} {np.asarray(y.value).item():.0f}")
        return y

    np.testing.assert_array_equal(ng.grad(loss)(np.array([1.0, 2.0])), [2.0, 4.0])
    assert seen == ["5.00 5.0 5"]


def test_item_and_tolist_of_a_traced_value_refuse_to_drop_the_gradient() -> None:
    # t.item() * t would be differentiated as 2.0 * t: the derivative 2.0, where it is 4.0.
    read_on_purpose = r"x\.item\(\) of a traced value .*np\.asarray\(x\.value\)\.item\(\)"
    with pytest.raises(ng.errors.ArenaError, match=read_on_purpose):
        ng.grad(lambda t: t.item() * t)(2.0)
    with pytest.raises(ng.errors.ArenaError, match=r"x\.tolist\(\) of a traced value"):
        ng.grad(lambda t: ng.sum(t * np.array(t.tolist())))(np.ones(2))
    w = np.array([1.0, 3.0])  # closed over: refused at the outer level of a nested transform too
    with pytest.raises(ng.errors.ArenaError, match=r"x\.item\(\)"):
        ng.grad(lambda s: ng.grad(lambda t: t * s.item())(1.0))(2.0)
    with pytest.raises(ng.errors.ArenaError, match=r"x\.item\(\)"):
        ng.grad(lambda v: ng.sum(v * ng.sum(v * w)[()].item()))(w)
    with pytest.raises(ng.errors.ArenaError, match=r"x\.item\(\)"):
        ng.jvp(lambda t: t.item() * t, (2.0,), (1.0,))
    # Reading the number on purpose is the value's job, and gives the constant's derivative.
    assert ng.grad(lambda t: np.asarray(t.value).item() * t)(2.0) == 2.0
    assert ng.grad(lambda t: t * t)(2.0) == 4.0


def test_int_round_and_the_math_roundings_of_a_traced_value_are_plain_steps() -> None:
    import math

    # Step functions: their derivative is zero wherever it exists, so the plain number they
    # give drops nothing, and f(t) = int(t) * t has derivative int(t).
    for f, slope in (
        (lambda t: int(t) * t, 2.0),
        (lambda t: round(t) * t, 3.0),
        (lambda t: round(t, 1) * t, 2.7),
        (lambda t: math.floor(t) * t + math.ceil(t) * t + math.trunc(t) * t, 7.0),
    ):
        assert ng.grad(f)(2.66) == pytest.approx(slope)
        check_grads(f, 2.66)  # central differences agree: 2.66 is far from every jump
    assert type(int(ng.Arena().param(np.float64(2.5)))) is int
    # Closed over at the outer level of a nested transform: a constant there too.
    assert ng.grad(lambda s: ng.grad(lambda t: t * int(s) * s)(1.0))(2.5) == 2.0
    with pytest.raises(ng.errors.DtypeError, match=r"int\(\) of a traced value .*float64\[2\].*x\.astype\(int\)"):
        ng.grad(lambda t: int(t) * t[0])(np.ones(2))
    with pytest.raises(ng.errors.DtypeError, match=r"round\(\) of a traced value .*np\.round"):
        ng.grad(lambda t: ng.sum(round(t) * t))(np.ones(2))


def test_divmod_of_a_traced_value_is_np_divmods_pair() -> None:
    t0, s0 = np.array([3.5, -2.25, 7.0]), 2.0
    for f in (
        lambda t: divmod(t, s0)[1] * t + divmod(t, s0)[0],
        lambda t: divmod(8.0, t)[1] * t + divmod(8.0, t)[0],
    ):
        got = ng.value_and_grad(lambda t, f=f: ng.sum(f(t)))(t0)
        with ng.Arena() as arena:
            pair = divmod(arena.param(t0), s0)
        assert type(pair[0]) is np.ndarray  # the quotient is piecewise constant: plain, as np.floor_divide
        np.testing.assert_array_equal(pair[0], np.divmod(t0, s0)[0])
        np.testing.assert_array_equal(pair[1].value, np.divmod(t0, s0)[1])
        check_grads(lambda t, f=f: ng.sum(f(t)), t0)
        assert np.isfinite(got[0])
    # the divisor closed over from an enclosing transform: d/ds of (t mod s) is -floor(t / s)
    assert ng.grad(lambda s: ng.grad(lambda t: divmod(t, s)[1] * s)(3.5))(2.0) == pytest.approx(1.0)
    assert ng.grad(lambda s: divmod(3.5, s)[1])(2.0) == pytest.approx(-1.0)


def test_ndarray_methods_on_traced_values_record_ops() -> None:
    x0 = np.arange(1.0, 7.0).reshape(2, 3)

    def f(x: Any) -> Any:
        parts = [
            x.ravel(), x.flatten(), x.prod(axis=0), x.var(axis=1), x.std(), x.cumsum(axis=1), x.cumprod(),
            x.squeeze(), x.swapaxes(0, 1).ravel(), x.dot(np.ones(3)), x.clip(2.0, 5.0).ravel(), x.copy().ravel(),
            x % 4.0, x[0],
        ]  # fmt: skip
        return ng.sum(ng.cat([ng.ravel(p) for p in parts]))

    def plain(x: np.ndarray) -> float:
        parts = [
            x.ravel(), x.flatten(), x.prod(axis=0), x.var(axis=1), x.std(), x.cumsum(axis=1), x.cumprod(),
            x.squeeze(), x.swapaxes(0, 1).ravel(), x.dot(np.ones(3)), x.clip(2.0, 5.0).ravel(), x.copy().ravel(),
            x % 4.0, x[0],
        ]  # fmt: skip
        return float(sum(np.sum(p) for p in parts))

    out, _ = ng.vjp(f, x0)
    assert float(out) == pytest.approx(plain(x0))
    check_grads(f, x0 + 0.05)  # away from the clip bounds and the jumps of x % 4
    with ng.Arena() as arena:
        x = arena.param(x0)
        assert x.argmax() == 5 and x.argmin(axis=1).tolist() == [0, 0] and x.argsort()[0].tolist() == [0, 1, 2]
        np.testing.assert_array_equal(x // 2.0, x0 // 2.0)
        assert np.asarray(x.value).tolist() == x0.tolist()


# -- ssm_scan where products of a overflow -------------------------------------------------------------------
# The doubling scan multiplies a over ever longer windows; those products can overflow to
# inf while the recurrence itself stays finite (inf * 0 gave NaN). Reference: one step at a time.


def test_ssm_scan_is_finite_where_the_products_of_a_overflow() -> None:
    from tests.ops.specs_pipeline import ssm_ref

    t = 1100  # 2 ** 1024 overflows
    a, x = np.full(t, 2.0), np.zeros(t)
    x[-1] = 1.0
    out = ng.ssm_scan(a, 1.0, x)
    np.testing.assert_array_equal(out, ssm_ref(a, 1.0, x))
    assert out[-1] == 1.0
    # Vectorised over a second axis, with a zero in a and a second pulse late in time.
    a2 = np.stack([a, np.where(np.arange(t) == 50, 0.0, 2.0)], axis=1)
    x2 = np.zeros((t, 2))
    x2[-3:, :] = [[1.0, -1.0], [0.0, 0.5], [2.0, 0.0]]
    np.testing.assert_array_equal(ng.ssm_scan(a2, 1.0, x2), ssm_ref(a2, 1.0, x2))


def test_ssm_scan_backward_is_finite_where_the_products_of_a_overflow() -> None:
    # d h[0] / d x = e_0: the adjoint is a reverse scan with the same overflowing windows.
    t = 1100
    a, x = np.full(t, 2.0), np.zeros(t)
    g_a, g_b, g_x = ng.grad(lambda a, b, x: ng.ssm_scan(a, b, x)[0], argnums=(0, 1, 2))(a, 1.0, x)
    expected = np.zeros(t)
    expected[0] = 1.0
    np.testing.assert_array_equal(g_x, expected)
    np.testing.assert_array_equal(g_a, np.zeros(t))
    assert g_b == 0.0


def test_ssm_scan_matches_the_steps_when_terms_cancel_after_an_overflow() -> None:
    # h = 1, 0, 0, ...: the windows starting at step 1 alone overflow (-2 * 2 ** k).
    from tests.ops.specs_pipeline import ssm_ref

    t = 1100
    a, x = np.full((t, 3), 2.0), np.zeros((t, 3))
    x[0], x[1] = 1.0, -2.0
    out = ng.ssm_scan(a, 1.0, x)
    np.testing.assert_array_equal(out, ssm_ref(a, 1.0, x))
    assert np.all(out[1:] == 0.0)


def test_ssm_scan_backward_runs_one_adjoint_scan_for_all_three_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    from nodegrad.ops.pipeline import scans

    calls: list[int] = []
    scan = scans._scan  # the backward's reverse scans (the forward calls _linear_scan directly)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return scan(*args, **kwargs)

    monkeypatch.setattr(scans, "_scan", counted)
    rng = np.random.default_rng(0)
    a, b, x = rng.uniform(-1, 1, (6, 2)), rng.normal(size=(6, 2)), rng.normal(size=(6, 2))
    grads = ng.grad(lambda a, b, x: ng.sum(ng.sin(ng.ssm_scan(a, b, x))), argnums=(0, 1, 2))(a, b, x)
    assert len(calls) == 1, f"{len(calls)} adjoint scans for one ssm_scan node"
    check_grads(lambda a, b, x: ng.sum(ng.sin(ng.ssm_scan(a, b, x))), a, b, x)
    assert all(np.all(np.isfinite(g)) for g in grads)


# -- logsumexp and logaddexp at infinities -------------------------------------------------------------------


def test_logsumexp_of_an_all_minus_inf_row_is_minus_inf_with_zero_gradient() -> None:
    z = np.zeros((3, 4))
    z[2, :] = -np.inf
    out = ng.logsumexp(z, axis=1)
    np.testing.assert_array_equal(out, [np.log(4.0), np.log(4.0), -np.inf])
    unused = ng.grad(lambda q: ng.sum(ng.logsumexp(q, axis=1)[:2]))(z)
    np.testing.assert_allclose(unused, [[0.25] * 4, [0.25] * 4, [0.0] * 4], rtol=1e-15)
    used = ng.grad(lambda q: ng.sum(ng.logsumexp(q, axis=1, keepdims=True)))(z)
    np.testing.assert_allclose(used, [[0.25] * 4, [0.25] * 4, [0.0] * 4], rtol=1e-15)
    # Second order: the Hessian-vector product is finite, zero on the -inf row.
    hv = ng.hvp(lambda q: ng.sum(ng.logsumexp(q, axis=1)[:2] ** 2.0), z, np.ones((3, 4)))
    assert np.all(np.isfinite(hv)) and np.all(hv[2] == 0.0)


def test_logsumexp_gradient_at_plus_inf_goes_to_the_infinite_entries() -> None:
    x = np.array([[np.inf, 0.0, np.inf, 1.0], [np.inf, -np.inf, 2.0, 3.0], [0.0, -np.inf, np.log(3.0), -np.inf]])
    out, back = ng.vjp(lambda x: ng.logsumexp(x, axis=1), x)
    np.testing.assert_allclose(out, [np.inf, np.inf, np.log(4.0)], rtol=1e-15)
    expected = [[0.5, 0.0, 0.5, 0.0], [1.0, 0.0, 0.0, 0.0], [0.25, 0.0, 0.75, 0.0]]
    np.testing.assert_allclose(back(np.ones(3))[0], expected, rtol=1e-15)
    np.testing.assert_allclose(ng.grad(ng.logsumexp)(np.array([np.inf, 1.0, np.inf])), [0.5, 0.0, 0.5], rtol=0)


@pytest.mark.parametrize("f", [ng.logaddexp, ng.logaddexp2], ids=["logaddexp", "logaddexp2"])
def test_logaddexp_gradient_at_infinities(f: Callable[..., Any]) -> None:
    inf = np.inf
    x = np.array([-inf, inf, inf, inf, -inf, 0.0])
    y = np.array([-inf, 1.0, inf, -inf, 2.0, 0.0])
    out, back = ng.vjp(f, x, y)  # outputs -inf and +inf: seeded, not summed
    np.testing.assert_array_equal(out, np.logaddexp(x, y) if f is ng.logaddexp else np.logaddexp2(x, y))
    gx, gy = back(np.ones(6))
    np.testing.assert_allclose(gx, [0.0, 1.0, 0.5, 1.0, 0.0, 0.5], rtol=0)
    np.testing.assert_allclose(gy, [0.0, 0.0, 0.5, 0.0, 1.0, 0.5], rtol=0)
    # Broadcast against a scalar, and through numpy's ufunc.
    ufunc = np.logaddexp if f is ng.logaddexp else np.logaddexp2
    _, back = ng.vjp(lambda x: ufunc(x, -inf), x)
    np.testing.assert_allclose(back(np.ones(6))[0], [0.0, 1.0, 1.0, 1.0, 0.0, 1.0], rtol=0)
    # Second order through the masked weights: finite, and 0 on the infinite entries.
    hv = ng.hvp(lambda x: ng.sum(f(x, y)[5:] ** 2.0), x, np.ones(6))
    assert np.all(np.isfinite(hv)) and np.all(hv[:5] == 0.0)


# -- segment_max of integer data ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.int8])
def test_segment_max_of_integers_fills_an_empty_segment_with_the_dtype_minimum(dtype: Any) -> None:
    data = np.array([[1, 2], [3, 0], [5, 1]], dtype=dtype)
    out = ng.segment_max(data, np.array([0, 2, 0]), num_segments=3)
    assert out.dtype == dtype
    low = np.iinfo(dtype).min
    np.testing.assert_array_equal(out, np.array([[5, 2], [low, low], [3, 0]], dtype=dtype))


def test_segment_max_of_booleans_fills_an_empty_segment_with_false() -> None:
    out = ng.segment_max(np.array([True, False, False]), np.array([0, 2, 2]), num_segments=3)
    assert out.dtype == bool
    np.testing.assert_array_equal(out, [True, False, False])


def test_ssm_scan_of_integer_inputs_runs_in_the_result_dtype() -> None:
    from tests.ops.specs_pipeline import ssm_ref

    a, x = np.full(3, 0.5), np.array([1, 0, 0])
    out = ng.ssm_scan(a, 1, x)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, [1.0, 0.5, 0.25])
    np.testing.assert_array_equal(ng.ssm_scan(np.array([1, 2, 3]), 2, x), ssm_ref(np.array([1, 2, 3]), 2, x))
    # Python scalars stay weak: float32 data gives a float32 result.
    assert ng.ssm_scan(0.5, 1.0, x.astype(np.float32)).dtype == np.float32


# -- where: the branch cotangents are exact selections ------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("layout", ["contiguous", "column block", "transposed"])
def test_where_gives_each_branch_exactly_its_share_of_any_cotangent(dtype: Any, layout: str) -> None:
    # Both rules of one node share a pass over the cotangent; the cotangent may be strided
    # (one block of a concatenation's) or transposed, and may hold inf, nan and -0.0, which
    # must reach the chosen branch bit for bit and never leak into the other one.
    rng = np.random.default_rng(3)
    m = rng.random((5, 4)) > 0.5
    x, y = (rng.standard_normal((5, 4)).astype(dtype) for _ in range(2))
    g = rng.standard_normal((5, 4)).astype(dtype)
    g.flat[[0, 5, 9, 13]] = [np.inf, np.nan, -0.0, -np.inf]

    def f(x: Any, y: Any) -> Any:
        out = np.where(m, x, y)
        if layout == "column block":
            return np.concatenate([x * 2.0, out], axis=1)
        return out.T if layout == "transposed" else out

    seed = {"contiguous": g, "column block": np.concatenate([np.ones_like(g), g], axis=1), "transposed": g.T}[layout]
    _, pullback = ng.vjp(f, x, y)
    gx, gy = pullback(seed)
    expected_x = np.where(m, g, dtype(0.0)) + (2.0 if layout == "column block" else 0.0)
    assert gx.dtype == gy.dtype == dtype
    np.testing.assert_array_equal(gx, expected_x.astype(dtype))
    np.testing.assert_array_equal(gy, np.where(m, dtype(0.0), g))
    np.testing.assert_array_equal(np.signbit(gy), np.signbit(np.where(m, dtype(0.0), g)))


# -- determinants at singular matrices -------------------------------------------------------------


def _cofactors(m: np.ndarray) -> np.ndarray:
    n = m.shape[0]
    minor = lambda i, j: np.delete(np.delete(m, i, 0), j, 1)
    return np.array([[(-1) ** (i + j) * np.linalg.det(minor(i, j)) for j in range(n)] for i in range(n)])


@pytest.mark.parametrize(
    "m",
    [
        np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]),  # rank 2: cofactors nonzero
        np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [3.0, 6.0, 9.0]]),  # rank 1: cofactors all 0
        np.zeros((2, 2)),
        np.array([[0.0, 1.0], [0.0, 0.0]]),
    ],
    ids=["rank-2", "rank-1", "zero", "nilpotent"],
)
def test_det_gradient_is_the_cofactor_matrix_also_at_singular_matrices(m: np.ndarray) -> None:
    # The determinant is a polynomial: its gradient exists everywhere. det * inv(x)^T
    # would divide by zero here; the rule goes through the SVD instead.
    g = ng.grad(ng.det)(m)
    np.testing.assert_allclose(g, _cofactors(m), atol=1e-12)
    stacked = ng.grad(lambda x: ng.sum(np.linalg.det(x)))(np.stack([m, np.eye(len(m))]))
    np.testing.assert_allclose(stacked[0], _cofactors(m), atol=1e-12)
    np.testing.assert_allclose(stacked[1], np.eye(len(m)), atol=1e-12)
