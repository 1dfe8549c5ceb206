"""The package's layers, and the test that keeps them.

``LAYERS`` is the architecture's summary, bottom first. Each entry names a room (a module,
or a package with everything in it); a module may import only its own room and the rooms
listed before it, at module level or inside a function alike (``if TYPE_CHECKING:`` blocks
aside, as they never run). So the engine imports nothing above it, each op family only the
engine and the families below it, and display, NaN checking, testing and Dask are leaves
that the engine reaches only through the sockets of :mod:`nodegrad.engine.plugins`.
Besides the order, no two modules may import each other (even within one room), and no
module may be longer than ``MAX_LINES``.
"""

from __future__ import annotations

import ast
import itertools
import pathlib
from collections.abc import Iterator, Sequence

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent / "nodegrad"
MAX_LINES = 600

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("errors", ("nodegrad.errors",)),
    (
        "engine",  # what an op is, the handle, structured values, the sweep, recording, the store
        (
            "nodegrad.engine.plugins",
            "nodegrad.engine.traced",
            "nodegrad.engine.registry",
            "nodegrad.engine.structure",
            "nodegrad.engine.cycles",
            "nodegrad.engine.sweep",
            "nodegrad.engine.record",
            "nodegrad.engine.arena",
            "nodegrad.engine",
        ),
    ),
    (
        "op families",  # each family may use the ones above it in this list
        (
            "nodegrad.ops.arguments",
            "nodegrad.ops.structured",
            "nodegrad.ops.elementwise",
            "nodegrad.ops.shape",
            "nodegrad.ops.index",
            "nodegrad.ops.fourier",
            "nodegrad.ops.special",
            "nodegrad.ops.linalg",
            "nodegrad.ops.reduce",
            "nodegrad.ops.nn",
            "nodegrad.ops.pipeline",
            "nodegrad.ops.traced_methods",
            "nodegrad.ops",
        ),
    ),
    ("numpy namespace", ("nodegrad.numpy_api", "nodegrad.numpy")),
    (
        "transforms",
        (
            "nodegrad.tree",
            "nodegrad.transforms",
            "nodegrad.custom",
            "nodegrad.extend",
            "nodegrad.optim",
            "nodegrad.misc",
        ),
    ),
    ("scipy namespace", ("nodegrad.scipy",)),  # special functions, distributions, linalg, ODEs
    ("plug-ins", ("nodegrad.debug", "nodegrad.display", "nodegrad.testing", "nodegrad.parallel", "nodegrad.data")),
    ("the package", ("nodegrad", "nodegrad.__main__")),
)


# -- reading imports ------------------------------------------------------------------------


def module_name(path: pathlib.Path, root: pathlib.Path) -> str:
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: pathlib.Path) -> dict[str, pathlib.Path]:
    return {module_name(p, root): p for p in sorted(root.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth, except inside ``if TYPE_CHECKING:``."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def imports_of(name: str, path: pathlib.Path, known: set[str]) -> set[str]:
    """The modules of the package that ``name`` imports: ``from a import b`` counts as
    importing ``a.b`` when that is a module, else ``a``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _import_nodes(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in node.names:
            child = f"{base}.{alias.name}"
            found.add(child if child in known else base)
    return {m for m in found if m in known and m != name}


# -- the three rules ----------------------------------------------------------------------


def room_of(name: str, rooms: Sequence[str]) -> int | None:
    """Position of the longest room that holds module ``name`` (the top package holds only
    its own ``__init__``: every module would be inside it otherwise)."""
    best = None
    for i, room in enumerate(rooms):
        inside = name == room or ("." in room and name.startswith(room + "."))
        if inside and (best is None or len(room) > len(rooms[best])):
            best = i
    return best


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = itertools.count()
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = next(counter)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = next(counter)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def problems(root: pathlib.Path, layers: Sequence[tuple[str, Sequence[str]]], max_lines: int) -> list[str]:
    """Everything that breaks the architecture of the package at ``root``, one line each."""
    rooms = [room for _, members in layers for room in members]
    found = modules(root)
    graph = {name: imports_of(name, path, set(found)) for name, path in found.items()}
    out: list[str] = []
    for name, path in found.items():
        lines = len(path.read_text().splitlines())
        if lines > max_lines:
            out.append(f"{name} is {lines} lines long (at most {max_lines}): split it by meaning")
        mine = room_of(name, rooms)
        if mine is None:
            out.append(f"{name} has no place in the declared layers")
            continue
        for target in sorted(graph[name]):
            theirs = room_of(target, rooms)
            if theirs is not None and theirs > mine:
                out.append(f"{name} imports {target}, which sits above it ({rooms[theirs]} after {rooms[mine]})")
    out.extend("import cycle: " + " <-> ".join(component) for component in cycles(graph))
    return out


# -- the package itself ----------------------------------------------------------------------


def test_the_package_keeps_its_layers() -> None:
    assert problems(ROOT, LAYERS, MAX_LINES) == []


def test_every_room_of_the_layers_exists() -> None:
    found = modules(ROOT)
    missing = [room for _, members in LAYERS for room in members if room not in found]
    assert missing == []


def local_imports(path: pathlib.Path, package: str) -> list[str]:
    """Imports of ``package``'s modules made inside a function (``file:line``): with one-way
    layers there is no cycle for them to dodge. Optional third-party extras (dask, IPython,
    tqdm, ...) are imported that way on purpose, and are not counted."""
    found = []
    for function in ast.walk(ast.parse(path.read_text())):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in _import_nodes(function):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or "."]
            if getattr(node, "level", 0) or any(n == package or n.startswith(package + ".") for n in names):
                found.append(f"{path.name}:{node.lineno}")
    return found


def test_no_module_imports_the_package_inside_a_function() -> None:
    found = [hit for p in sorted(ROOT.rglob("*.py")) for hit in local_imports(p, "nodegrad")]
    assert found == []


def test_a_function_local_import_is_found(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("import dask\n\ndef f():\n    import tqdm\n    from fake.family import one\n")
    assert local_imports(path, "fake") == ["m.py:5"]


def test_no_import_is_placed_after_code_to_dodge_a_cycle() -> None:
    dodges = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py") if "noqa: E402" in p.read_text()]
    assert dodges == []


# -- the checker on small fake packages: it fails where it should -------------------------------

FAKE_LAYERS = (("bottom", ("fake.base",)), ("middle", ("fake.family",)), ("top", ("fake",)))


def fake_package(tmp_path: pathlib.Path, files: dict[str, str]) -> pathlib.Path:
    root = tmp_path / "fake"
    for relative, text in {"__init__.py": "from fake import family\n", **files}.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_a_well_layered_fake_package_passes(tmp_path: pathlib.Path) -> None:
    root = fake_package(
        tmp_path,
        {
            "base.py": "import numpy\n",
            "family/__init__.py": "from fake.family.one import f\n",
            "family/one.py": "from fake.base import numpy\n\ndef f():\n    from fake import base\n",
            "family/two.py": "from fake.family.one import f\n",
        },
    )
    assert problems(root, FAKE_LAYERS, 600) == []


def test_a_cycle_fails(tmp_path: pathlib.Path) -> None:
    root = fake_package(
        tmp_path,
        {
            "base.py": "",
            "family/__init__.py": "",
            "family/one.py": "from fake.family import two\n",
            "family/two.py": "def g():\n    from fake.family.one import f\n",  # inside a function: still a cycle
        },
    )
    assert problems(root, FAKE_LAYERS, 600) == ["import cycle: fake.family.one <-> fake.family.two"]


def test_an_import_against_the_layer_order_fails(tmp_path: pathlib.Path) -> None:
    root = fake_package(
        tmp_path,
        {
            "base.py": "def helper():\n    from fake.family import one\n",
            "family/__init__.py": "",
            "family/one.py": "",
        },
    )
    assert problems(root, FAKE_LAYERS, 600) == [
        "fake.base imports fake.family.one, which sits above it (fake.family after fake.base)"
    ]


def test_a_relative_import_against_the_layer_order_fails(tmp_path: pathlib.Path) -> None:
    root = fake_package(tmp_path, {"base.py": "from . import family\n", "family/__init__.py": ""})
    assert problems(root, FAKE_LAYERS, 600) == [
        "fake.base imports fake.family, which sits above it (fake.family after fake.base)"
    ]


def test_an_import_for_type_checking_only_is_allowed(tmp_path: pathlib.Path) -> None:
    text = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from fake.family import one\n"
    root = fake_package(tmp_path, {"base.py": text, "family/__init__.py": "", "family/one.py": ""})
    assert problems(root, FAKE_LAYERS, 600) == []


def test_a_long_module_fails(tmp_path: pathlib.Path) -> None:
    root = fake_package(tmp_path, {"base.py": "x = 1\n" * 601, "family/__init__.py": ""})
    assert problems(root, FAKE_LAYERS, 600) == ["fake.base is 601 lines long (at most 600): split it by meaning"]


def test_a_module_outside_the_layers_fails(tmp_path: pathlib.Path) -> None:
    root = fake_package(tmp_path, {"base.py": "", "family/__init__.py": "", "stray.py": ""})
    assert problems(root, FAKE_LAYERS, 600) == ["fake.stray has no place in the declared layers"]


@pytest.mark.parametrize("room", ["nodegrad.engine.arena", "nodegrad.engine.sweep", "nodegrad.engine.structure"])
def test_the_engine_reaches_no_layer_above_it(room: str) -> None:
    found = modules(ROOT)
    engine = {name for name in found if name.startswith("nodegrad.engine") or name == "nodegrad.errors"}
    assert imports_of(room, found[room], set(found)) <= engine
