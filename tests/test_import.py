"""What ``import nodegrad`` loads: numpy and attrs, and none of the optional libraries.

A notebook or a test file imports nodegrad first; scipy.special alone takes a quarter of a
second to import, pandas and matplotlib more. Each optional library loads on the first use
of the feature that needs it. (The time itself is measured by ``benchmarks/``, not here.)
Each check runs in a fresh interpreter: this process has imported everything already.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OPTIONAL = ("scipy", "pandas", "dask", "IPython", "matplotlib", "tqdm", "ipywidgets", "hypothesis", "sphinx")


def _run(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_importing_nodegrad_loads_no_optional_library() -> None:
    loaded = _run(f"""
        import sys
        import nodegrad
        print(sorted(name for name in {OPTIONAL!r} if name in sys.modules))
    """)
    assert loaded == "[]"


def test_scipy_functions_work_when_scipy_is_imported_after_nodegrad() -> None:
    pytest.importorskip("scipy")
    out = _run("""
        import sys
        import numpy as np
        import nodegrad as ng
        assert "scipy" not in sys.modules
        # exact gelu's forward calls scipy's erf: loaded on this first call
        print(round(float(ng.gelu(np.float64(1.0), approximate=False)), 12))
        import scipy.special as sc  # a ufunc of scipy's reaches nodegrad's op through numpy's protocol
        print(round(float(ng.grad(lambda x: sc.gammaln(x))(2.0)), 12), round(float(sc.digamma(2.0)), 12))
        import nodegrad.scipy.special as nsc
        print(round(float(ng.grad(lambda x: nsc.erf(x))(0.0)), 12))
    """)
    gelu, grads, erf_slope = out.splitlines()
    assert float(gelu) == pytest.approx(0.841344746069)
    got, expected = grads.split()
    assert got == expected
    assert float(erf_slope) == pytest.approx(2 / 3.141592653589793**0.5)
