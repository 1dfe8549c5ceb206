"""``scipy.signal.convolve`` for traced values: ``import nodegrad.scipy.signal as signal``.

The convolution is scipy's own (any number of dimensions; ``mode`` ``'full'``,
``'valid'`` or ``'same'``; ``method`` ``'auto'``, ``'direct'`` or ``'fft'``), recorded as
one primitive (:mod:`nodegrad.extend`). Its gradients are convolutions too: with ``G`` the
output's cotangent placed in the full output (zeros where the mode cut it off),

    d in1 = convolve(G, flip(in2), 'valid'),     d in2 = convolve(G, flip(in1), 'valid'),

each of the shape of its input, computed by the same primitive, so the rule is
differentiated again (every order) and its memory is that of the inputs and the output.
Complex inputs follow nodegrad's convention (the transpose, no conjugate: the
convolution is bilinear).

autograd's ``autograd.scipy.signal.convolve(A, B, axes=None, dot_axes=[(), ()],
mode='full')`` extends scipy's: it convolves along chosen axes, contracts others (a sum
over them, as ``np.tensordot``) and keeps the rest, each input's own. Here ``axes=`` and
``dot_axes=`` are those keywords, with autograd's meaning (see
:mod:`nodegrad.scipy._tensor_convolve`); scipy's positional order is kept, so autograd's
calls, which pass them by keyword, port with the import swap.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.signal

from nodegrad import ops
from nodegrad.engine.guards import guarded
from nodegrad.engine.levels import INTERPRETED
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, DtypeError, ShapeError, user_location
from nodegrad.extend import defvjp, primitive
from nodegrad.scipy._tensor_convolve import tensor_convolve

__all__ = ["convolve"]

_MODES = ("full", "valid", "same")
_METHODS = ("auto", "direct", "fft")


@primitive
def _convolve(in1: Any, in2: Any, mode: str, method: str) -> Any:
    return scipy.signal.convolve(in1, in2, mode=mode, method=method)


def _placed(g: Any, in1: Any, in2: Any, mode: str) -> Any:
    """The cotangent ``g`` of a ``mode`` output placed in the full output, zeros around it."""
    widths = []
    for n, m, kept in zip(np.shape(in1), np.shape(in2), np.shape(g), strict=True):
        full = n + m - 1
        if mode == "full":
            start = 0
        elif mode == "same":
            start = (m - 1) // 2  # scipy centres the 'same' output in the full one
        else:
            start = min(n, m) - 1
        widths.append((start, full - start - kept))
    return ops.pad(g, widths) if any(w != (0, 0) for w in widths) else g


def _vjp(which: int) -> Any:
    def maker(ans: Any, in1: Any, in2: Any, mode: str, method: str) -> Any:
        other = in2 if which == 0 else in1

        def vjp(g: Any) -> Any:
            return _convolve(_placed(g, in1, in2, mode), ops.flip(other), "valid", method)

        return vjp

    return maker


defvjp(_convolve, _vjp(0), _vjp(1))


@guarded
def convolve(
    in1: Any, in2: Any, mode: str = "full", method: str = "auto", *, axes: Any = None, dot_axes: Any = None
) -> Any:
    """Convolve two N-dimensional arrays, ``scipy.signal.convolve``; differentiable in both.

    Parameters
    ----------
    in1, in2 : array_like
        Arrays of the same number of dimensions (traced, or plain).
    mode : {'full', 'valid', 'same'}, default 'full'
        The full discrete convolution; only the part computed without zero-padding (one
        input at least as large as the other in every dimension); or the part the size of
        ``in1``, centred in the full output.
    method : {'auto', 'direct', 'fft'}, default 'auto'
        How scipy computes it (and the gradients' convolutions).
    axes : pair of sequences of int, optional
        HIPS autograd's keyword: ``(axes of in1, axes of in2)`` to convolve along, paired
        in order (by default every axis). The other axes need not match in number.
    dot_axes : pair of sequences of int, optional
        HIPS autograd's keyword: ``(axes of in1, axes of in2)`` of equal sizes to contract
        (sum the products over), as ``np.tensordot``'s ``axes``. With ``axes`` or
        ``dot_axes`` the result's axes are, in order, ``in1``'s other axes, ``in2``'s other
        axes and the convolved ones (autograd's layout), and ``method`` is not used.

    Returns
    -------
    ndarray or Traced
        scipy's convolution (autograd's, with ``axes`` or ``dot_axes``).

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> import nodegrad.scipy.signal as signal
    >>> signal.convolve(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5]))
    array([0. , 1. , 2.5, 4. , 1.5])
    >>> ng.grad(lambda k: ng.sum(signal.convolve(np.array([1.0, 2.0, 3.0]), k, "valid") ** 2))(np.ones(3))
    array([36., 24., 12.])
    >>> images, filters = np.ones((5, 2, 4, 4)), np.ones((2, 3, 3, 3))  # autograd's convnet layout
    >>> signal.convolve(images, filters, axes=([2, 3], [2, 3]), dot_axes=([1], [0]), mode="valid").shape
    (5, 3, 2, 2)
    """
    if mode not in _MODES:
        msg = f"convolve: mode must be one of {_MODES}, got {mode!r} [called at {user_location()}]"
        raise ArgumentError(msg)
    if method not in _METHODS:
        msg = f"convolve: method must be one of {_METHODS}, got {method!r} [called at {user_location()}]"
        raise ArgumentError(msg)
    a = in1 if type(in1) in INTERPRETED else np.asarray(in1)
    b = in2 if type(in2) in INTERPRETED else np.asarray(in2)
    if axes is not None or dot_axes is not None:
        return tensor_convolve(a, b, axes, dot_axes, mode)
    shape1, shape2 = np.shape(unwrap(a)), np.shape(unwrap(b))
    for name, value in (("in1", a), ("in2", b)):
        if np.result_type(unwrap(value)).kind not in "biufc":
            dtype = np.result_type(unwrap(value))
            msg = f"convolve: {name} must be numeric, got dtype {dtype} [called at {user_location()}]"
            raise DtypeError(msg)
    if len(shape1) != len(shape2):
        msg = (
            f"convolve: in1 {shape1} and in2 {shape2} must have the same number of dimensions "
            f"[called at {user_location()}]"
        )
        raise ShapeError(msg)
    if mode == "valid" and not (
        all(n >= m for n, m in zip(shape1, shape2, strict=True))
        or all(m >= n for n, m in zip(shape1, shape2, strict=True))
    ):
        msg = (
            f"convolve: for mode 'valid', one of in1 {shape1} and in2 {shape2} must be at least as large as the "
            f"other in every dimension [called at {user_location()}]"
        )
        raise ShapeError(msg)
    if len(shape1) == 0:
        return a * b  # scipy's answer for two scalars: their product
    return _convolve(a, b, mode, method)
