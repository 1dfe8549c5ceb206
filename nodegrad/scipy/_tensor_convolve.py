"""HIPS autograd's generalised convolution: ``convolve(A, B, axes=..., dot_axes=...)``.

``axes = (conv_A, conv_B)`` pairs axes of ``A`` and ``B`` to convolve along;
``dot_axes = (dot_A, dot_B)`` pairs axes to contract (the products summed over them, as
``np.tensordot``); every other axis of either input is kept. The result's axes are ``A``'s
kept axes, ``B``'s kept axes, then one per convolved pair (autograd's layout). Along a
convolved pair of sizes ``n`` (``A``) and ``m`` (``B``), the full convolution has
``n + m - 1`` entries, ``out[k] = sum_j A[k - j] B[j]``; ``'valid'`` keeps the
``|n - m| + 1`` computed without zero padding and ``'same'`` the ``n`` centred ones, as
scipy's modes do.

It is written with recorded ops, so it differentiates in both inputs to any order and in
either mode: each convolved axis of ``A`` becomes two (the output position and the offset
into ``B``) by one ``gather`` of zero-padded ``A`` (the "im2col" windows), and one
``einsum`` contracts the windows with ``B`` over the offsets and the dot axes.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

import numpy as np

from nodegrad import ops
from nodegrad.engine.traced import unwrap
from nodegrad.errors import ArgumentError, ShapeError, user_location

__all__ = ["tensor_convolve"]


def _fail(error: type[Exception], message: str) -> Exception:
    return error(f"convolve: {message} [called at {user_location()}]")


def _pair(name: str, value: Any, ndims: tuple[int, int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``value`` as ``(axes of in1, axes of in2)``, each axis made non-negative, or an
    error naming the keyword."""
    try:
        first, second = value
        pair = (tuple(int(a) for a in first), tuple(int(a) for a in second))
    except (TypeError, ValueError):
        msg = f"{name}= must be a pair (axes of in1, axes of in2) of sequences of ints, got {value!r}"
        raise _fail(ArgumentError, msg) from None
    if len(pair[0]) != len(pair[1]):
        raise _fail(ArgumentError, f"{name}= pairs axes of in1 with axes of in2: got {value!r}, of unequal lengths")
    out = []
    for which, (axes, ndim) in enumerate(zip(pair, ndims, strict=True)):
        for a in axes:
            if not -ndim <= a < ndim:
                msg = f"{name}= names axis {a} of in{which + 1}, which has {ndim} dimensions"
                raise _fail(ArgumentError, msg)
        out.append(tuple(a % ndim for a in axes))
    return out[0], out[1]


def _window(n: int, m: int, mode: str) -> tuple[int, int]:
    """The start (in the full convolution) and the length of the ``mode`` output along an
    axis where ``A`` has ``n`` entries and ``B`` has ``m``."""
    if mode == "full":
        return 0, n + m - 1
    if mode == "valid":
        return min(n, m) - 1, abs(n - m) + 1
    return (m - 1) // 2, n  # 'same': n entries, centred as scipy centres them


def _windows(a: Any, axis: int, m: int, start: int, length: int) -> Any:
    """``a`` with ``axis`` (of ``n`` entries) replaced by two, ``(length, m)``: entry
    ``(o, j)`` is ``a[start + o - j]`` along it, zero outside ``a``."""
    n = np.shape(unwrap(a))[axis]
    index = start + np.arange(length)[:, None] - np.arange(m)[None, :]
    left, right = max(0, -int(index.min())), max(0, int(index.max()) - (n - 1))
    if left or right:
        widths = [(0, 0)] * np.ndim(unwrap(a))
        widths[axis] = (left, right)
        a = ops.pad(a, widths)
    return ops.gather(a, index + left, axis=axis)


def tensor_convolve(a: Any, b: Any, axes: Any, dot_axes: Any, mode: str) -> Any:
    """autograd's ``convolve(a, b, axes=axes, dot_axes=dot_axes, mode=mode)`` (see the
    module's docstring); ``axes=None`` convolves along every axis of ``a`` (paired with the
    same axes of ``b``), ``dot_axes=None`` contracts none."""
    shape_a, shape_b = np.shape(unwrap(a)), np.shape(unwrap(b))
    ndims = (len(shape_a), len(shape_b))
    if axes is None:
        if ndims[1] < ndims[0]:
            msg = f"with axes=None every axis of in1 {shape_a} is convolved with the same of in2 {shape_b}"
            raise _fail(ShapeError, msg)
        axes = (range(ndims[0]), range(ndims[0]))
    conv_a, conv_b = _pair("axes", axes, ndims)
    dot_a, dot_b = _pair("dot_axes", ((), ()) if dot_axes is None else dot_axes, ndims)
    for which, named in ((1, conv_a + dot_a), (2, conv_b + dot_b)):
        if len(set(named)) != len(named):
            msg = f"an axis of in{which} is named twice in axes={axes!r} and dot_axes={dot_axes!r}"
            raise _fail(ArgumentError, msg)
    _check_sizes(shape_a, shape_b, (conv_a, conv_b), (dot_a, dot_b), mode)
    kept_a = [k for k in range(ndims[0]) if k not in conv_a + dot_a]
    kept_b = [k for k in range(ndims[1]) if k not in conv_b + dot_b]
    # a as (kept, dot, conv...), each conv axis then split into (output position, offset).
    windows = ops.transpose(a, (*kept_a, *dot_a, *conv_a))
    first = len(kept_a) + len(dot_a)
    for k, (i, j) in enumerate(zip(conv_a, conv_b, strict=True)):
        start, length = _window(shape_a[i], shape_b[j], mode)
        windows = _windows(windows, first + 2 * k, shape_b[j], start, length)
    letters = iter(string.ascii_letters)
    ka, kb = [next(letters) for _ in kept_a], [next(letters) for _ in kept_b]
    dots = [next(letters) for _ in dot_a]
    outs, offsets = [next(letters) for _ in conv_a], [next(letters) for _ in conv_a]
    paired = [x for o, w in zip(outs, offsets, strict=True) for x in (o, w)]
    spec_a = "".join(ka + dots + paired)
    spec_b = "".join(
        kb[kept_b.index(k)] if k in kept_b else _letter(k, dot_b, dots, conv_b, offsets) for k in range(ndims[1])
    )
    return ops.einsum(f"{spec_a},{spec_b}->{''.join(ka + kb + outs)}", windows, b)


def _letter(k: int, dot_b: Sequence[int], dots: list[str], conv_b: Sequence[int], offsets: list[str]) -> str:
    """The subscript of ``b``'s axis ``k``, contracted or convolved."""
    return dots[dot_b.index(k)] if k in dot_b else offsets[list(conv_b).index(k)]


def _check_sizes(
    shape_a: tuple[int, ...],
    shape_b: tuple[int, ...],
    conv: tuple[Sequence[int], ...],
    dot: tuple[Sequence[int], ...],
    mode: str,
) -> None:
    for i, j in zip(*dot, strict=True):
        if shape_a[i] != shape_b[j]:
            msg = f"dot_axes= contracts axis {i} of in1 {shape_a} with axis {j} of in2 {shape_b}, of different sizes"
            raise _fail(ShapeError, msg)
    pairs = [(shape_a[i], shape_b[j]) for i, j in zip(*conv, strict=True)]
    if mode == "valid" and not (all(n >= m for n, m in pairs) or all(m >= n for n, m in pairs)):
        msg = (
            f"for mode 'valid', one of in1 {shape_a} and in2 {shape_b} must be at least as large as the other "
            f"along every convolved axis (axes {tuple(conv[0])} and {tuple(conv[1])})"
        )
        raise _fail(ShapeError, msg)
