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


def test_subpackages_load_on_first_use_as_attributes() -> None:
    out = _run(f"""
        import sys
        import nodegrad as ng
        before = sorted(name for name in {OPTIONAL!r} if name in sys.modules)
        print(before, "nodegrad.testing" in sys.modules, "testing" in dir(ng))
        ng.testing.check_grads(ng.tanh, 0.3)  # the first use loads it
        print(ng.testing is sys.modules["nodegrad.testing"], ng.numpy is sys.modules["nodegrad.numpy"])
        print(ng.grad(lambda x: ng.numpy.sum(ng.numpy.array([x, 2.0 * x])))(1.0), ng.data.load_iris()["features"].shape)
        try:
            ng.no_such_name
        except AttributeError as exc:
            print(exc)
    """)
    first, second, third, fourth = out.splitlines()
    assert first == "[] False True"
    assert second == "True True"
    assert third == "3.0 (150, 4)"
    assert fourth == "module 'nodegrad' has no attribute 'no_such_name'"


def test_nodegrad_scipy_loads_on_first_use_with_its_submodules() -> None:
    pytest.importorskip("scipy")
    out = _run("""
        import sys
        import nodegrad as ng
        print("scipy" in sys.modules)
        special = ng.scipy.special
        print(round(float(ng.grad(ng.scipy.stats.norm.logpdf)(0.5)), 12), special is sys.modules[special.__name__])
    """)
    first, second = out.splitlines()
    assert first == "False"
    assert second == "-0.5 True"


def test_star_import_of_nodegrad_loads_no_optional_library() -> None:
    loaded = _run(f"""
        import sys
        from nodegrad import *
        print(sorted(name for name in {OPTIONAL!r} if name in sys.modules))
    """)
    assert loaded == "[]"
