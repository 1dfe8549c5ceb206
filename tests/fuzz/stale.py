"""Replay's stale-result hunt: programs that read values every way a program can, each
called several times with values that change every one of those ways, replayed and eager.

A case is source text: ``make()`` returns a function and a ``step(c)`` that gives call
``c``'s arguments, changing on the way whatever else the function reads (a closure, a
global, a generator's state). Two ``make()`` give two identical worlds, one called
eagerly and one through ``ng.replay``; each call's results must be equal bit for bit and
of the same types. A replay may refuse (``RandomDrawError`` for a random draw it cannot
repeat) but never repeat a recorded answer.
"""

from __future__ import annotations

import io
import math
import random
import warnings
from typing import Any

import attrs
import numpy as np

import nodegrad as ng
from nodegrad.errors import RandomDrawError

CALLS = 4


@attrs.frozen
class Case:
    name: str
    fun: str  # defines ``fun`` (may close over names the setup binds)
    args: str  # call c's arguments, a tuple expression of rng and c
    setup: str = ""  # lines run once in make(), before fun is defined
    between: str = ""  # lines run before each call (nonlocal/global changes)
    fresh: bool = False  # draws from unseeded entropy: eager differs per call; a replay must too, or refuse


def vec(n: int = 3) -> str:
    return f"(rng.normal(size={n}),)"


CASES: list[Case] = [
    Case("float", "fun = lambda x: x * float(x[0])", vec()),
    Case("item", "fun = lambda x: x * x[1].item() + x.sum().item()", vec()),
    Case("math", "fun = lambda x: x * math.exp(x[0]) + math.floor(x[1] * 3)", vec()),
    Case("round", "fun = lambda x: x * round(float(x[0]), 1)", vec()),
    Case("index_from_value", "fun = lambda x: x[int(abs(x[0]) * 10) % 3] * x", vec()),
    Case("fstring_spec", 'fun = lambda x: (f"{x[0]:.3f}", x * 2)', vec()),
    Case("str_format", 'fun = lambda x: ("{:.2f}".format(x[1]), x + 1)', vec()),
    Case("format_builtin", 'fun = lambda x: (format(x[0], ".4e"), x)', vec()),
    Case("str_repr", "fun = lambda x: (str(x[0]), repr(x[1]), str(x))", vec()),
    Case("savetxt", "def fun(x):\n    out = io.StringIO()\n    np.savetxt(out, x)\n    return out.getvalue()", vec()),
    Case("tolist", "fun = lambda x: (x.tolist(), np.array(x.tolist()) * 2)", vec()),
    Case("python_sum_max", "fun = lambda x: (sum(x), max(x), sorted(x))", vec()),
    Case(
        "isinstance_scalar",
        "fun = lambda s: s * 2.0 if isinstance(s, float) else s * 3.0",
        "(np.float64(rng.normal()),)",
    ),
    Case("signed_zero", "fun = lambda x, s: x / s", "(rng.normal(size=2), (0.0, -0.0)[c % 2])"),
    Case("signed_zero_complex", "fun = lambda x, s: x / s", "(rng.normal(size=2), (0j, complex(-0.0, -0.0))[c % 2])"),
    Case("static_signed_zero", "fun = lambda x, s: np.copysign(x, s)", "(rng.normal(size=2), (0.0, -0.0)[c % 2])"),
    Case(
        "flags",
        'fun = lambda m: m * (1.0 if m.flags["C_CONTIGUOUS"] else 2.0)',
        "((np.ascontiguousarray, np.asfortranarray)[c % 2](rng.normal(size=(3, 3))),)",
    ),
    Case(
        "strides",
        "fun = lambda m: m * m.strides[0]",
        "((np.ascontiguousarray, np.asfortranarray)[c % 2](rng.normal(size=(3, 3))),)",
    ),
    Case(
        "base",
        "fun = lambda x: x * (1.0 if x.base is None else 2.0)",
        "((lambda a: a if c % 2 else a[:])(rng.normal(size=3)),)",
    ),
    Case("data", "fun = lambda x: x * x.data.nbytes", vec()),
    Case("ctypes", "fun = lambda x: x * float(x.ctypes.data != 0)", vec()),
    Case("array_interface", 'fun = lambda x: x * len(x.__array_interface__["shape"])', vec()),
    Case(
        "is_integer",
        "fun = lambda x: x * (2.0 if x[0].is_integer() else 3.0)",
        "(np.round(rng.normal(size=2)) + 0.5 * (c % 2),)",
    ),
    Case("divmod", "fun = lambda x: divmod(x, 0.75)", vec()),
    Case("bytes", "fun = lambda x: (bytes(x), x * 2)", vec()),
    Case(
        "add_at",
        "def fun(x, i):\n    buf = np.zeros(4)\n    np.add.at(buf, i, x)\n    return buf",
        "(rng.normal(size=3), rng.integers(0, 4, 3))",
    ),
    Case(
        "maximum_at",
        "def fun(x, i):\n    buf = np.zeros(4)\n    np.maximum.at(buf, i, x)\n    return buf",
        "(rng.normal(size=3), rng.integers(0, 4, 3))",
    ),
    Case(
        "out_buffer",
        "def fun(x):\n    buf = np.empty(3)\n    np.multiply(x, 2.0, out=buf)\n    return buf + 1.0",
        vec(),
    ),
    Case("setitem_fresh", "def fun(x):\n    buf = np.zeros(3)\n    buf[:2] = x[:2]\n    return buf * 2.0", vec()),
    Case("asarray", "fun = lambda x: np.asarray(x) * 2.0", vec()),
    Case(
        "closure_cell", "fun = lambda x: x * w[0]", vec(), setup="w = [np.ones(3)]", between="w[0] = rng.normal(size=3)"
    ),
    Case(
        "closure_rebound",
        "fun = lambda x: x * scale",
        vec(),
        setup="scale = np.ones(3)",
        between="nonlocal scale\nscale = rng.normal(size=3)",
    ),
    Case(
        "global_array", "fun = lambda x: x * GLOBAL_W", vec(), between="global GLOBAL_W\nGLOBAL_W = rng.normal(size=3)"
    ),
    Case(
        "global_float", "fun = lambda x: x * GLOBAL_S", vec(), between="global GLOBAL_S\nGLOBAL_S = float(rng.normal())"
    ),
    Case(
        "closure_in_place_decision",
        "fun = lambda x: x * 2.0 if w[0] > 0 else x - 1.0",
        vec(),
        setup="w = np.ones(3)",
        between="w[:] = rng.normal(size=3)",
    ),
    Case(
        "closure_dict_entry",
        'fun = lambda x: x * p["w"] + p["b"]',
        vec(),
        setup='p = {"w": np.ones(3), "b": 0.0}',
        between='p["w"] = rng.normal(size=3)\np["b"] = float(rng.normal())',
    ),
    Case(
        "helper_reads_a_global",
        "def helper(x):\n    return x * GLOBAL_H\nfun = lambda x: helper(x) + 1.0",
        vec(),
        between="global GLOBAL_H\nGLOBAL_H = float(rng.normal())",
    ),
    Case(
        "bound_method_attribute",
        "fun = model.apply",
        vec(),
        setup=(
            "class Model:\n    def __init__(self):\n        self.scale = np.ones(3)\n"
            "    def apply(self, x):\n        return np.tanh(x * self.scale)\nmodel = Model()"
        ),
        between="model.scale = rng.normal(size=3)",
    ),
    Case(
        "closure_own_counter",
        "def fun(x):\n    calls.append(1)\n    return x * 2.0",
        vec(),
        setup="calls = []",
    ),
    Case("generator_closure", "fun = lambda x: x * gen.normal(size=3)", vec(), setup="gen = np.random.default_rng(7)"),
    Case(
        "generator_grad",
        "fun = ng.grad(lambda x: np.sum(x * (gen.random(3) > 0.5)))",
        vec(),
        setup="gen = np.random.default_rng(7)",
    ),
    Case(
        "generator_value_and_grad",
        "fun = ng.value_and_grad(lambda x: np.sum(x ** 2 * gen.random(3)))",
        vec(),
        setup="gen = np.random.default_rng(7)",
    ),
    Case(
        "generator_vmap",
        "fun = ng.vmap(lambda x: x * (gen.random(3) > 0.5))",
        "(rng.normal(size=(2, 3)),)",
        setup="gen = np.random.default_rng(7)",
    ),
    Case(
        "bitgenerator_closure",
        "fun = lambda x: x * np.random.Generator(bits).normal(size=3)",
        vec(),
        setup="bits = np.random.PCG64(7)",
    ),
    Case("random_state", "fun = lambda x: x * np.random.RandomState().normal(size=3)", vec(), fresh=True),
    Case(
        "generator_pcg64",
        "fun = lambda x: x * np.random.Generator(np.random.PCG64()).normal(size=3)",
        vec(),
        fresh=True,
    ),
    Case(
        "seed_sequence",
        "fun = lambda x: x * np.random.default_rng(np.random.SeedSequence()).normal(size=3)",
        vec(),
        fresh=True,
    ),
    Case("python_random", "fun = lambda x: x * random.Random().random()", vec(), fresh=True),
    Case(
        "series_arithmetic",
        "fun = lambda s: s * 2",
        '(pd.Series(rng.normal(size=3), index=[["a", "b", "c"], ["b", "c", "d"]][c % 2], name=f"s{c}"),)',
    ),
    Case(
        "series_loc",
        'fun = lambda s: s.loc["b"] * 2.0',
        '(pd.Series(rng.normal(size=3), index=[["a", "b", "c"], ["b", "c", "a"]][c % 2]),)',
    ),
    Case(
        "frame_index_name",
        "fun = lambda df: df * 2.0",
        '(pd.DataFrame({"a": rng.normal(size=2)}, index=pd.Index([1, 2], name=f"n{c}")),)',
    ),
]
CASE_NAMES = [f"stale:{case.name}" for case in CASES]


def source(case: Case, seed: int) -> str:
    def indent(text: str, by: int) -> list[str]:
        return [" " * by + line for line in text.splitlines()]

    lines = ["def make():", f"    rng = np.random.default_rng({seed})", *indent(case.setup, 4), *indent(case.fun, 4)]
    lines += ["    def step(c):", *indent(case.between, 8), f"        return {case.args}", "    return fun, step"]
    return "\n".join(lines) + "\n"


def world(case: Case, seed: int) -> dict[str, Any]:
    import pandas as pd

    ns: dict[str, Any] = {"np": np, "ng": ng, "io": io, "math": math, "random": random, "pd": pd}
    exec(compile(source(case, seed), f"<stale case {case.name}>", "exec"), ns)
    return ns


def run(case: Case, seed: int) -> str | None:
    """What the replay gets wrong (None when nothing), comparing call by call."""
    eager_fun, eager_step = world(case, seed)["make"]()
    replay_ns = world(case, seed)
    fun, step = replay_ns["make"]()
    replayed = ng.replay(fun)
    wants, gots = [], []
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for c in range(CALLS):
            wants.append(eager_fun(*eager_step(c)))
            try:
                gots.append(replayed(*step(c)))
            except RandomDrawError:
                return None  # refused, as documented: never frozen
            except Exception as error:
                return f"call {c} raised {type(error).__name__}: {(str(error).splitlines() or [''])[0][:200]}"
    if case.fresh:
        return "the same draws on every call" if all(same(gots[0], g) for g in gots[1:]) else None
    for c, (got, want) in enumerate(zip(gots, wants, strict=True)):
        problem = difference(got, want)
        if problem:
            return f"call {c}: {problem}"
    return None


def same(a: Any, b: Any) -> bool:
    return difference(a, b) is None


def difference(got: Any, want: Any) -> str | None:
    from tests.fuzz.stacks import compare

    return compare(got, want, exact=True, rtol=0.0)


def repro(case: Case, seed: int, problem: str) -> str:
    return (
        f"# stale:{case.name} | {problem}\n"
        "import io, math, random\nimport numpy as np\nimport pandas as pd\nimport nodegrad as ng\n\n\n"
        + source(case, seed)
        + "\n\neager, eager_step = make()\nfun, step = make()\nreplayed = ng.replay(fun)\n"
        + f"for c in range({CALLS}):\n    print(c, replayed(*step(c)), eager(*eager_step(c)))\n"
    )
