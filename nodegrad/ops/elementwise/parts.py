"""The parts of a complex number: ``real``, ``imag``, ``conj`` and ``angle``.

These are the ops that are not holomorphic, so their rules say how a cotangent crosses
between the real and the complex numbers. nodegrad follows JAX: a rule is the transpose
of the op's derivative for the pairing ``<u, v> = Re(sum(u * v))`` (no conjugate), so a
holomorphic op's rule is ``g * f'(z)`` exactly as for real values, and these four are:

- ``real``: ``g`` (as a complex number); ``imag``: ``-1j * g``; ``conj``: ``conj(g)``;
- ``angle``: ``-1j * g / z`` (0 at ``z == 0``, where the angle jumps);
- ``abs`` (in :mod:`~nodegrad.ops.elementwise.arithmetic`): ``g * conj(z) / |z|``.

On real values ``real`` and ``conj`` are the value itself, and ``imag`` and ``angle``
are piecewise constant: they carry no gradient.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegrad.engine.batched import all_values, plain_map
from nodegrad.engine.guards import guarded
from nodegrad.engine.record import record1
from nodegrad.engine.traced import describe, unwrap
from nodegrad.errors import DtypeError, user_location
from nodegrad.ops.elementwise.arithmetic import positive, unary

__all__ = ["angle", "conj", "imag", "real"]


def _as_complex(g: Any, z: Any) -> Any:
    """A real cotangent ``g`` as a complex one of ``z``'s precision (``g`` may be traced:
    the sweep records itself for higher derivatives)."""
    return g + np.zeros((), np.result_type(z))


REAL = unary("real", np.real, lambda g, ans, z: _as_complex(g, z), "the real part of a complex number")


IMAG = unary("imag", np.imag, lambda g, ans, z: _as_complex(g, z) * -1j, "the imaginary part of a complex number")


CONJ = unary("conj", np.conjugate, lambda g, ans, z: np.conjugate(g), "the complex conjugate")


def _angle_rule(g: Any, ans: Any, z: Any, deg: bool) -> Any:
    # d angle = Im(dz / z); its transpose is -1j g / z. At z == 0 the angle jumps: 0.
    zero = z == 0
    some = bool(np.any(all_values(zero)))  # every example's, under vmap
    safe = np.where(zero, 1, z) if some else z
    step = g * (-1j) / safe
    if deg:
        step = step * (180 / np.pi)
    return np.where(zero, 0, step) if some else step


ANGLE = unary("angle", lambda z, deg: np.angle(z, deg), _angle_rule, "the argument of a complex number")


def _is_complex(name: str, x: Any) -> bool:
    """Whether ``x`` holds complex numbers; anything but numbers is refused, naming ``name``."""
    value = unwrap(x)
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        dtype = np.asarray(value).dtype
    if dtype.kind not in "biufc":
        msg = f"{name}: the values must be numbers, got {describe(value)} [called at {user_location()}]"
        raise DtypeError(msg)
    return dtype.kind == "c"


@guarded
def real(x: Any) -> Any:
    """The real part, as ``np.real``; a real ``x`` is returned as it is.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(lambda z: ng.real(z * z))(1.0 + 2.0j)
    (2+4j)
    """
    return record1(REAL, x) if _is_complex("real", x) else x


@guarded
def imag(x: Any) -> Any:
    """The imaginary part, as ``np.imag``; zeros (no gradient) for a real ``x``.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(lambda z: ng.imag(z * z))(1.0 + 2.0j)
    (4-2j)
    """
    return record1(IMAG, x) if _is_complex("imag", x) else plain_map(np.imag, x)


@guarded
def conj(x: Any) -> Any:
    """The complex conjugate, as ``np.conj``; a real ``x`` gives a new node of its values.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(lambda z: ng.real(z * ng.conj(z)))(1.0 + 2.0j)
    (2-4j)
    """
    return record1(CONJ, x) if _is_complex("conj", x) else positive(x)


@guarded
def angle(x: Any, deg: bool = False) -> Any:
    """The argument (phase) of complex values, as ``np.angle``; for a real ``x``, 0 or
    pi (180 with ``deg``) as plain values, with no gradient.

    Examples
    --------
    >>> import nodegrad as ng
    >>> ng.grad(ng.angle)(1.0 + 1.0j)
    (-0.5-0.5j)
    """
    if not _is_complex("angle", x):
        return np.angle(unwrap(x), deg)
    return record1(ANGLE, x, bool(deg))
