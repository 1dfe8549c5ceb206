"""The multivariate normal distribution, ``scipy.stats.multivariate_normal``: ``logpdf``
and ``pdf``, differentiable in ``x``, ``mean`` and ``cov``, and ``entropy``, in ``cov``.

``cov`` is read as scipy reads it: a matrix (its lower triangle), a vector (a diagonal)
or a number (times the identity), with scipy's test for a singular matrix (eigenvalues
below ``1e6 * eps * max|eigenvalue|``). A nonsingular ``cov`` is factored by Cholesky,
``L = cholesky(cov)``: the log-determinant is ``2 sum(log(diag(L)))`` and the Mahalanobis
term the squared norm of ``solve(L, x - mean)``. With ``allow_singular=True`` a singular
``cov`` is handled as scipy handles it, through its eigendecomposition (``eigh``): the
pseudo-determinant, the rank in place of the dimension, and ``-inf`` (density 0) off the
subspace the distribution lives on; the gradient in ``cov`` then goes through ``eigh``'s,
which needs the eigenvalues distinct. ``cov`` is read through its lower triangle (as its
Cholesky factor reads it), so its gradient is held on the lower triangle, each
off-diagonal entry counted twice: along symmetric directions it is the gradient with
respect to a symmetric matrix. As in scipy, single points and results of size 1 are
squeezed.

Examples
--------
>>> import numpy as np
>>> import nodegrad as ng
>>> from nodegrad.scipy.stats import multivariate_normal
>>> ng.grad(lambda m: multivariate_normal.logpdf(np.ones(2), m, np.eye(2)))(np.zeros(2))
array([1., 1.])
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nodegrad import ops
from nodegrad.engine.guards import guarded
from nodegrad.errors import ArgumentError, LinAlgError, user_location
from nodegrad.scipy.stats._shared import array_like, plain

__all__ = ["entropy", "logpdf", "pdf"]

_LOG_2PI = math.log(2 * math.pi)


def _refuse(message: str, error: type[ArgumentError] = ArgumentError) -> None:
    msg = f"multivariate_normal: {message} [called at {user_location()}]"
    raise error(msg)


def _parameters(mean: Any, cov: Any) -> tuple[int, Any, Any]:
    """``(dim, mean, cov)`` as scipy reads them: the dimension from ``mean`` or ``cov``, a
    vector ``mean`` and a matrix ``cov``."""
    cov = 1.0 if cov is None else cov
    cov_value = plain(cov)
    if mean is None:
        dim = 1 if cov_value.ndim < 2 else cov_value.shape[0]
        mean = np.zeros(dim)
    else:
        dim = plain(mean).size
    if dim == 1:
        mean, cov = ops.reshape(mean, (1,)), ops.reshape(cov, (1, 1))
    if plain(mean).ndim != 1 or plain(mean).shape[0] != dim:
        _refuse(f"array 'mean' must be a vector of length {dim}")
    cov_value = plain(cov)
    if cov_value.ndim == 0:
        cov = ops.multiply(cov, np.eye(dim))
    elif cov_value.ndim == 1:
        cov = ops.multiply(ops.expand_dims(cov, -1), np.eye(dim))
    elif cov_value.ndim == 2 and cov_value.shape != (dim, dim):
        _refuse(f"array 'cov' has shape {cov_value.shape}, and 'mean' is a vector of length {dim}")
    elif cov_value.ndim > 2:
        _refuse(f"array 'cov' must be at most two-dimensional, but cov.ndim = {cov_value.ndim}")
    return dim, mean, cov


def _quantiles(x: Any, dim: int) -> Any:
    """``x`` with its points along the last axis, as scipy reads it."""
    ndim = plain(x).ndim
    if ndim == 0:
        return ops.reshape(x, (1,))
    if ndim == 1:
        return ops.expand_dims(x, -1 if dim == 1 else 0)
    return x


def _spectrum_cutoff(cov_value: np.ndarray) -> tuple[np.ndarray, float]:
    """The eigenvalues of ``cov`` (its lower triangle) and scipy's cutoff for "zero"."""
    spectrum = np.linalg.eigvalsh(cov_value, UPLO="L")
    factor = 1e3 if spectrum.dtype == np.float32 else 1e6
    return spectrum, factor * np.finfo(spectrum.dtype).eps * np.max(np.abs(spectrum))


def _nonsingular(dev: Any, cov: Any, dim: int) -> Any:
    lower = ops.cholesky(cov)
    points = ops.reshape(dev, (-1, dim))
    whitened = ops.solve(lower, ops.transpose(points))  # (dim, points): L^-1 (x - mean)
    maha = ops.reshape(ops.sum(ops.square(whitened), 0), plain(dev).shape[:-1])
    log_det = 2.0 * ops.sum(ops.log(np.diagonal(lower)))
    return -0.5 * (dim * _LOG_2PI + log_det + maha)


def _singular(dev: Any, cov: Any, keep: np.ndarray, eps: float) -> Any:
    values, vectors = ops.eigh(cov)
    kept = values[keep]
    whiten = ops.divide(vectors[:, keep], ops.sqrt(kept))
    maha = ops.sum(ops.square(ops.matmul(dev, whiten)), -1)
    out = -0.5 * (int(keep.sum()) * _LOG_2PI + ops.sum(ops.log(kept)) + maha)
    residual = np.linalg.norm(plain(dev) @ plain(vectors)[:, ~keep], axis=-1)
    return ops.where(residual < 1e3 * eps, out, -np.inf)


def _checked_spectrum(cov: Any, allow_singular: bool) -> tuple[np.ndarray, float]:
    """Which eigenvalues of ``cov`` scipy counts as nonzero, and its cutoff; a covariance
    scipy refuses is refused with scipy's message (a :class:`LinAlgError`)."""
    spectrum, eps = _spectrum_cutoff(plain(cov))
    if np.min(spectrum) < -eps:
        _refuse("the covariance must be symmetric positive semidefinite", LinAlgError)
    keep = spectrum > eps
    if not keep.all() and not allow_singular:
        _refuse("when allow_singular is False, the covariance must be symmetric positive definite", LinAlgError)
    return keep, eps


def _squeezed(out: Any) -> Any:
    out = ops.squeeze(out)
    return out[()] if isinstance(out, np.ndarray) and out.ndim == 0 else out


@guarded
def logpdf(x: Any, mean: Any = None, cov: Any = 1, allow_singular: bool = False) -> Any:
    """Log of the multivariate normal density at the points ``x`` (along the last axis).

    Parameters
    ----------
    x : array_like
        Points, shaped ``(..., dim)`` (a vector is one point, or ``dim`` points when
        ``dim`` is 1).
    mean : array_like, optional
        The mean, a vector of length ``dim`` (zeros by default).
    cov : array_like, default 1
        The covariance matrix, or its diagonal, or a number times the identity.
    allow_singular : bool, default False
        Accept a singular ``cov`` (otherwise a :class:`~nodegrad.errors.LinAlgError`, which
        is numpy's ``LinAlgError`` too, as scipy raises).
    """
    x, mean, cov = array_like(x), array_like(mean), array_like(cov)
    dim, mean, cov = _parameters(mean, cov)
    x = _quantiles(x, dim)
    keep, eps = _checked_spectrum(cov, allow_singular)
    dev = ops.subtract(x, mean)
    if keep.all():
        return _squeezed(_nonsingular(dev, cov, dim))
    return _squeezed(_singular(dev, cov, keep, eps))


@guarded
def pdf(x: Any, mean: Any = None, cov: Any = 1, allow_singular: bool = False) -> Any:
    """The multivariate normal density, ``exp(logpdf)`` (0 off the support of a singular
    distribution)."""
    return ops.exp(logpdf(x, mean, cov, allow_singular))


@guarded
def entropy(mean: Any = None, cov: Any = 1, allow_singular: bool = False) -> Any:
    """The differential entropy, ``(rank (1 + log(2 pi)) + log pdet(cov)) / 2``, as scipy's.

    ``mean`` only sets the dimension. Differentiable in ``cov`` (to any order) through its
    Cholesky factor, which reads its lower triangle as :func:`logpdf` does: the gradient
    is HIPS autograd's ``inv(cov) / 2`` along symmetric directions, held on the lower
    triangle (each off-diagonal entry counted twice). A singular ``cov``
    (``allow_singular=True``) goes through ``eigh``, with its pseudo-determinant and rank.

    Parameters
    ----------
    mean : array_like, optional
        The mean, a vector of length ``dim`` (read only for ``dim``).
    cov : array_like, default 1
        The covariance matrix, or its diagonal, or a number times the identity.
    allow_singular : bool, default False
        Accept a singular ``cov`` (otherwise a :class:`~nodegrad.errors.LinAlgError`).

    Returns
    -------
    float or Traced
        The entropy, a scalar.

    Examples
    --------
    >>> import numpy as np
    >>> import nodegrad as ng
    >>> from nodegrad.scipy.stats import multivariate_normal
    >>> round(float(multivariate_normal.entropy(cov=np.eye(2))), 6)
    2.837877
    >>> ng.grad(lambda c: multivariate_normal.entropy(None, c))(np.diag([1.0, 4.0]))
    array([[0.5  , 0.   ],
           [0.   , 0.125]])
    """
    dim, _, cov = _parameters(array_like(mean), array_like(cov))
    keep, _ = _checked_spectrum(cov, allow_singular)
    if keep.all():
        log_det = 2.0 * ops.sum(ops.log(np.diagonal(ops.cholesky(cov))))
        return 0.5 * (dim * (_LOG_2PI + 1.0) + log_det)
    values, _ = ops.eigh(cov)
    return 0.5 * (int(keep.sum()) * (_LOG_2PI + 1.0) + ops.sum(ops.log(values[keep])))
