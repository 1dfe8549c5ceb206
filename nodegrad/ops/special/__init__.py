"""The special-function family: scipy.special's differentiable functions as ops.

Registered only when scipy is installed (:data:`HAVE_SCIPY`); nodegrad imports and works
without it. Each op's forward is scipy's ufunc and its rules are written with ops and
numpy functions, so they differentiate again; scipy's own ufuncs reach these ops on
traced values through numpy's ufunc protocol (``scipy.special.gammaln(x)``), and
:mod:`nodegrad.scipy.special` gives them scipy's names. One room per kind:

- :mod:`~nodegrad.ops.special.gamma_functions`: ``gammaln``, ``digamma``, ``polygamma``,
  ``gamma``, ``rgamma``, ``gammasgn``, ``beta``, ``betaln``;
- :mod:`~nodegrad.ops.special.error_functions`: ``erf``, ``erfc``, ``erfcx``, ``erfinv``,
  ``erfcinv``, ``ndtr``, ``ndtri``, ``log_ndtr``;
- :mod:`~nodegrad.ops.special.bessel`: ``i0``, ``i1``, ``i0e``, ``i1e``;
- :mod:`~nodegrad.ops.special.cylinder`: ``j0``, ``j1``, ``jn``, ``y0``, ``y1``, ``yn``,
  ``iv``, ``ive``;
- :mod:`~nodegrad.ops.special.logistic`: ``expit``, ``logit``, ``log_expit``;
- :mod:`~nodegrad.ops.special.information`: ``xlogy``, ``xlog1py``, ``entr``,
  ``rel_entr``, ``kl_div``;
- :mod:`~nodegrad.ops.special.incomplete`: ``gammainc``, ``gammaincc``, ``betainc``,
  ``betaincc``, ``stdtr`` (differentiable in the point, not in the shape parameters);
- :mod:`~nodegrad.ops.special.sums`: ``logsumexp`` with scipy's weights and sign.
"""

from __future__ import annotations

import importlib.util

#: Whether scipy is installed, and so whether this family's ops are registered. (Found,
#: not imported: scipy.special loads on the first call of one of these ops.)
HAVE_SCIPY = importlib.util.find_spec("scipy") is not None

__all__ = [
    "HAVE_SCIPY",
    "beta",
    "betainc",
    "betaincc",
    "betaln",
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfcinv",
    "erfcx",
    "erfinv",
    "expit",
    "gamma",
    "gammainc",
    "gammaincc",
    "gammaln",
    "gammasgn",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "iv",
    "ive",
    "j0",
    "j1",
    "jn",
    "kl_div",
    "log_expit",
    "log_ndtr",
    "logit",
    "logsumexp",
    "ndtr",
    "ndtri",
    "polygamma",
    "rel_entr",
    "rgamma",
    "stdtr",
    "xlog1py",
    "xlogy",
    "y0",
    "y1",
    "yn",
]

if HAVE_SCIPY:
    from nodegrad.ops.special.bessel import i0, i0e, i1, i1e
    from nodegrad.ops.special.cylinder import iv, ive, j0, j1, jn, y0, y1, yn
    from nodegrad.ops.special.error_functions import erf, erfc, erfcinv, erfcx, erfinv, log_ndtr, ndtr, ndtri
    from nodegrad.ops.special.gamma_functions import (
        beta,
        betaln,
        digamma,
        gamma,
        gammaln,
        gammasgn,
        polygamma,
        rgamma,
    )
    from nodegrad.ops.special.incomplete import betainc, betaincc, gammainc, gammaincc, stdtr
    from nodegrad.ops.special.information import entr, kl_div, rel_entr, xlog1py, xlogy
    from nodegrad.ops.special.logistic import expit, log_expit, logit
    from nodegrad.ops.special.sums import logsumexp
else:  # pragma: no cover - exercised in a subprocess test
    __all__ = ["HAVE_SCIPY"]
