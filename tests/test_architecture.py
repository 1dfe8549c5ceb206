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
import re
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
            "nodegrad.engine.containers",
            "nodegrad.engine.structure",
            "nodegrad.engine.cycles",
            "nodegrad.engine.levels",
            "nodegrad.engine.traced",
            "nodegrad.engine.staged",
            "nodegrad.engine.face",
            "nodegrad.engine.tape",
            "nodegrad.engine.batched",
            "nodegrad.engine.shared",
            "nodegrad.engine.rows",
            "nodegrad.engine.registry",
            "nodegrad.engine.nodes",
            "nodegrad.engine.cotangents",
            "nodegrad.engine.record",
            "nodegrad.engine.guards",
            "nodegrad.engine.whole",
            "nodegrad.engine.rule_errors",
            "nodegrad.engine.sweep",
            "nodegrad.engine.backward",
            "nodegrad.engine.arena",
            "nodegrad.engine.program",
            "nodegrad.engine",
        ),
    ),
    (
        "op families",  # each family may use the ones above it in this list
        (
            "nodegrad.ops.arguments",
            "nodegrad.ops.batching",
            "nodegrad.ops.examples",
            "nodegrad.ops.staging",
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
            "nodegrad.ops.tables",
            "nodegrad.ops.sparse",
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
            "nodegrad.implicit",
            "nodegrad.optim",
            "nodegrad.misc",
            "nodegrad.builtins",
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


def _import_nodes(tree: ast.AST, type_checking: bool = False) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth, except inside ``if TYPE_CHECKING:`` (unless
    ``type_checking``)."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node) and not type_checking:
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def imports_of(name: str, path: pathlib.Path, known: set[str], type_checking: bool = False) -> set[str]:
    """The modules of the package that ``name`` imports: ``from a import b`` counts as
    importing ``a.b`` when that is a module, else ``a``. Imports for type checkers only are
    counted where ``type_checking`` says so."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _import_nodes(ast.parse(path.read_text(), str(path)), type_checking):
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


@pytest.mark.parametrize(
    "room", ["nodegrad.engine.arena", "nodegrad.engine.sweep", "nodegrad.engine.backward", "nodegrad.engine.structure"]
)
def test_the_engine_reaches_no_layer_above_it(room: str) -> None:
    found = modules(ROOT)
    engine = {name for name in found if name.startswith("nodegrad.engine") or name == "nodegrad.errors"}
    assert imports_of(room, found[room], set(found)) <= engine


def test_the_engine_reads_in_its_layer_order_even_for_type_checkers() -> None:
    """The engine's imports, those for type checkers included, point down its layer order:
    read top to bottom, no engine module needs one below it to be understood."""
    found = modules(ROOT)
    engine_rooms = [room for room in LAYERS[1][1] if room != "nodegrad.engine"]
    out = []
    for name in engine_rooms:
        for target in sorted(imports_of(name, found[name], set(found), type_checking=True)):
            if target in engine_rooms and engine_rooms.index(target) > engine_rooms.index(name):
                out.append(f"{name} imports {target}, which sits above it")
    assert out == []


def test_the_engine_package_lists_its_modules_in_the_layer_order() -> None:
    listed = re.findall(r":mod:`~(nodegrad\.engine\.\w+)`", (ROOT / "engine" / "__init__.py").read_text())
    assert listed == [room for room in LAYERS[1][1] if room != "nodegrad.engine"]


# -- the middle of the house: one walker, one recording path, the arena's interface ---------------

#: The one module that walks a structured value to any depth, and the lookup it alone calls.
WALKER, HANDLER_LOOKUP = "nodegrad.engine.structure", "handler_for"
#: The one module that appends a node, and the function that does it; the modules allowed to
#: call it (the recording path, and the arena for its leaves); the one function allowed to
#: append to a node list otherwise (merging copies nodes another arena recorded).
RECORDER, APPEND = "nodegrad.engine.record", "append_node"
#: The batching interpreter appends the two nodes that move a value across a vmap level
#: (examples_stacked, examples_batched) in the arenas that began inside it, and only there:
#: record would re-record them in every enclosing arena too, where they are no ops at all.
APPEND_CALLERS = {"nodegrad.engine.record", "nodegrad.engine.arena", "nodegrad.ops.batching"}
COPIES_NODES = {("nodegrad.engine.arena", "merge")}
ENGINE = "nodegrad.engine"


def _calls_of(tree: ast.AST, name: str) -> Iterator[ast.Call]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if called == name:
                yield node


def _imports_name(tree: ast.AST, name: str) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and any(alias.name == name for alias in node.names)
    ]


def walks_outside_the_walker(root: pathlib.Path, walker: str, lookup: str) -> list[str]:
    """Every call (or import) of the handler lookup outside the walker module: a recursive
    walk of structured values written again, which would disagree with the walker at the
    edges (cycles, depth, static fields)."""
    out = []
    for name, path in modules(root).items():
        if name == walker:
            continue
        tree = ast.parse(path.read_text())
        lines = sorted({call.lineno for call in _calls_of(tree, lookup)} | set(_imports_name(tree, lookup)))
        out.extend(f"{name}:{line} uses {lookup}: walk structures with {walker}" for line in lines)
    return out


def private_attributes(path: pathlib.Path, cls: str) -> set[str]:
    """The private attributes (``self._x = ...``) and methods (``def _x``) of class ``cls``."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for inner in ast.walk(node):
                if isinstance(inner, ast.FunctionDef) and inner.name.startswith("_") and not inner.name.endswith("__"):
                    names.add(inner.name)
                if (
                    isinstance(inner, ast.Attribute)
                    and isinstance(inner.ctx, ast.Store)
                    and isinstance(inner.value, ast.Name)
                    and inner.value.id == "self"
                    and inner.attr.startswith("_")
                ):
                    names.add(inner.attr)
    return names


def private_reaches(root: pathlib.Path, engine: str, private: set[str]) -> list[str]:
    """Reads or writes of an arena's private attributes (``x._nodes``) outside the engine:
    the layers above use the arena's interface. A class's own ``self._x`` is its own."""
    out = []
    for name, path in modules(root).items():
        if name == engine or name.startswith(engine + "."):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            own = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
            if isinstance(node, ast.Attribute) and node.attr in private and not own:
                out.append(f"{name}:{node.lineno} reaches into an arena's {node.attr}")
    return out


def _functions(tree: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node.name, node


def second_recording_paths(root: pathlib.Path) -> list[str]:
    """Nodes appended anywhere but through the recorder's one append: ``append_node``
    defined again or called from outside the recording path, or a node list appended to
    directly outside the recorder (but for the merge, which copies recorded nodes)."""
    out = []
    for name, path in modules(root).items():
        tree = ast.parse(path.read_text())
        if name != RECORDER and any(fn == APPEND for fn, _ in _functions(tree)):
            out.append(f"{name} defines {APPEND} again")
        if name not in APPEND_CALLERS:
            out.extend(f"{name}:{call.lineno} calls {APPEND}" for call in _calls_of(tree, APPEND))
        if name == RECORDER:
            continue
        allowed = {id(node) for fn, node in _functions(tree) if (name, fn) in COPIES_NODES}
        inside_allowed = {id(n) for node in ast.walk(tree) if id(node) in allowed for n in ast.walk(node)}
        for call in _calls_of(tree, "append"):
            receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
            named = receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, "id", "")
            if named in ("nodes", "_nodes") and id(call) not in inside_allowed:
                out.append(f"{name}:{call.lineno} appends to a node list: record through {RECORDER}")
    return out


def test_structures_are_walked_by_the_walker_alone() -> None:
    assert walks_outside_the_walker(ROOT, WALKER, HANDLER_LOOKUP) == []


def test_no_layer_above_the_engine_reaches_into_an_arena() -> None:
    private = private_attributes(ROOT / "engine" / "arena.py", "Arena")
    assert {"_nodes", "_paths", "_enclosing", "_lean"} <= private  # what the check looks for
    assert private_reaches(ROOT, ENGINE, private) == []


def test_nodes_are_recorded_through_one_path() -> None:
    assert second_recording_paths(ROOT) == []


def test_the_middle_checks_fail_where_they_should(tmp_path: pathlib.Path) -> None:
    root = fake_package(
        tmp_path,
        {
            "base.py": "def handler_for(x):\n    return None\n",
            "family/__init__.py": "",
            "family/one.py": (
                "from fake.base import handler_for\n\n"
                "def walk(x):\n    return handler_for(x)\n\n"
                "def peek(arena):\n    return arena._nodes[0]\n\n"
                "def sneak(arena, node):\n    arena._nodes.append(node)\n"
            ),
        },
    )
    assert walks_outside_the_walker(root, "fake.base", "handler_for") == [
        "fake.family.one:1 uses handler_for: walk structures with fake.base",
        "fake.family.one:4 uses handler_for: walk structures with fake.base",
    ]
    assert private_reaches(root, "fake.base", {"_nodes"}) == [
        "fake.family.one:7 reaches into an arena's _nodes",
        "fake.family.one:10 reaches into an arena's _nodes",
    ]
    assert second_recording_paths(root) == [f"fake.family.one:10 appends to a node list: record through {RECORDER}"]


def test_the_public_ops_are_the_functions_their_modules_define() -> None:
    # Errors are wrapped where a function is defined (@guarded), not by rebinding names at
    # import: nodegrad.inv is nodegrad.ops.linalg.decompositions.inv, one object.
    import importlib

    ops = importlib.import_module("nodegrad.ops")
    elsewhere = []
    for name in ops.__all__:
        fn = getattr(ops, name)
        if not callable(fn) or isinstance(fn, type):
            continue
        inner = getattr(fn, "__wrapped__", fn)
        home = importlib.import_module(inner.__module__)
        if getattr(home, inner.__name__, None) is not fn:
            elsewhere.append(name)
    assert elsewhere == []
    # Each reads its arguments before it records, and names itself in their errors; the
    # arithmetic and transcendental functions are one recording call each, whose failures
    # the recording already names, and stay as they are: they are the commonest calls.
    one_record = ("nodegrad.ops.elementwise.arithmetic", "nodegrad.ops.elementwise.transcendental")
    unguarded = [
        name
        for name in ops.__all__
        if callable(getattr(ops, name))
        and not isinstance(getattr(ops, name), type)
        and getattr(getattr(ops, name), "__module__", "") not in one_record
        and not getattr(getattr(ops, name), "guarded", False)
    ]
    assert unguarded == []


# -- one protocol for every interpreter ------------------------------------------------------------

#: The module every interpreter is written on (levels, interpreted values): it alone orders
#: levels, builds the leak check's error and holds the set of handle types.
LEVELS = "nodegrad.engine.levels"
#: The handle types of the interpreters (reverse mode, batching, replay, shapes).
HANDLE_TYPES = {"Traced", "Batched", "Staged", "Shaped"}
#: The one counter of running interpreters, and the module that keeps it for the hot path.
FLAG, FLAG_HOME = "interpreting", "nodegrad.engine.record"


def _reads_stamp(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "stamp" for n in ast.walk(node))


def second_protocols(root: pathlib.Path, levels: str = LEVELS) -> list[str]:
    """What is written again outside the levels' protocol: levels ordered by their stamps (a
    second innermost-level finder), a leak check's error built (a second leak check), a
    collection of every handle type (a second set of them), a second running-interpreters
    flag."""
    out = []
    for name, path in modules(root).items():
        if name == levels:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare | ast.Lambda) and _reads_stamp(node):
                out.append(f"{name}:{node.lineno} orders levels by their stamps: ask {levels} (find_top, inside)")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "LeakedTracerError":
                out.append(f"{name}:{node.lineno} builds a leak error: check with {levels}.check_alive")
            elif isinstance(node, ast.Tuple | ast.Set | ast.List):
                if {e.id for e in node.elts if isinstance(e, ast.Name)} >= HANDLE_TYPES:
                    out.append(f"{name}:{node.lineno} lists every handle type: use {levels}.INTERPRETED")
            elif isinstance(node, ast.FunctionDef) and node.name == FLAG and name != FLAG_HOME:
                out.append(f"{name}:{node.lineno} keeps a second flag of running interpreters")
    return sorted(out, key=lambda line: (line.split(":")[0], int(line.split(":")[1].split()[0])))


def test_every_interpreter_is_written_on_one_protocol() -> None:
    assert second_protocols(ROOT) == []


def test_a_second_protocol_is_found(tmp_path: pathlib.Path) -> None:
    root = fake_package(
        tmp_path,
        {
            "levels.py": "def find_top(args):\n    return max(args, key=lambda a: a.level.stamp)\n",
            "family/__init__.py": "",
            "family/one.py": (
                "def newest(a, b):\n    return a if a.level.stamp > b.level.stamp else b\n\n"
                "def refuse(x):\n    raise LeakedTracerError('gone')\n\n"
                "KINDS = (Traced, Batched, Staged, Shaped)\n\n"
                "def interpreting(entering):\n    pass\n"
            ),
        },
    )
    assert second_protocols(root, "fake.levels") == [
        "fake.family.one:2 orders levels by their stamps: ask fake.levels (find_top, inside)",
        "fake.family.one:5 builds a leak error: check with fake.levels.check_alive",
        "fake.family.one:7 lists every handle type: use fake.levels.INTERPRETED",
        "fake.family.one:9 keeps a second flag of running interpreters",
    ]


#: The interpreters' own modules and the core, where their handle types are named by design.
INTERPRETERS_HOME = (
    "nodegrad.engine",
    "nodegrad.ops.batching",
    "nodegrad.ops.examples",
    "nodegrad.ops.staging",
    "nodegrad.ops.traced_methods",
    "nodegrad.numpy_api",
    "nodegrad.transforms.batching",
    "nodegrad.transforms.replay",
    "nodegrad.transforms.shapes",
    "nodegrad.transforms.shape_eval",
    "nodegrad.transforms.shape_rules",
    "nodegrad.transforms.shape_rules_numeric",
)
#: How many times the handle types are named elsewhere, today: each is a question about a
#: value asked by its type, which the levels' protocol should answer instead. This count
#: only falls (the aim is at most 10).
HANDLE_NAMES_ELSEWHERE = 0


def handle_names_elsewhere(root: pathlib.Path) -> dict[str, int]:
    """How often each module outside the interpreters' homes names a handle type."""
    found: dict[str, int] = {}
    for name, path in modules(root).items():
        if name in INTERPRETERS_HOME or name.startswith("nodegrad.engine."):
            continue
        uses = sum(isinstance(n, ast.Name) and n.id in HANDLE_TYPES for n in ast.walk(ast.parse(path.read_text())))
        if uses:
            found[name] = uses
    return found


def test_the_handle_types_are_named_outside_the_interpreters_no_more_than_today() -> None:
    found = handle_names_elsewhere(ROOT)
    assert sum(found.values()) <= HANDLE_NAMES_ELSEWHERE, sorted(found.items(), key=lambda kv: -kv[1])
