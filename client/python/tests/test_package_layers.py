"""The package's imports point one way: a reader follows ``env.step`` through the SDK in one direction.

The layers, lowest first: the connection core (wire constants, codec, spaces, the I/O-free
``ConnectionCore``), the two drivers that run it (blocking socket, asyncio), the remote sessions
(``gymwire.env``, ``gymwire.vector``, ``gymwire.tools``), the ``Client`` facade (``gymwire.client``),
and everything built on it (collection, datasets, integrations, ``gymwire.ray``). Imports are read
from the source with ``ast``, function-level ones included (they hid cycles before), so a module
that cannot be imported here (Ray, torch) is still checked; imports under ``if TYPE_CHECKING:``
run only for type checkers and are left out.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import gymwire

PACKAGE = Path(gymwire.__file__).parent

#: Lowest first; a module may import its own layer and those below. Modules not listed sit above them all.
LAYERS: list[set[str]] = [
    {
        "gymwire.errors",
        "gymwire._protocol",
        "gymwire.codec",
        "gymwire._request_template",
        "gymwire.spaces",
        "gymwire._connection",
        "gymwire._spin",
        "gymwire._ws_frames",
        "gymwire._transport_socket",
    },
    {"gymwire._transport_sync", "gymwire._transport_asyncio"},
    {"gymwire.env", "gymwire.vector", "gymwire.tools"},
    {"gymwire.client"},
]


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(name: str, path: Path) -> set[str]:
    """The package's modules that ``name`` imports at run time, wherever the import statement is."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()

    def add(target: str) -> None:
        while target and target not in MODULES:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    visit_node(other)
            else:
                visit_node(child)

    def visit_node(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "gymwire":
                    add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            elif (node.module or "").split(".")[0] == "gymwire":
                base = node.module or ""
            else:
                return
            for alias in node.names:
                add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
        else:
            visit(node)

    visit(ast.parse(path.read_text(), str(path)))
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _cycle() -> list[str] | None:
    """One import cycle, as the modules around it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def walk(name: str) -> list[str] | None:
        state[name] = 1
        path.append(name)
        for target in sorted(GRAPH[name]):
            if state.get(target) == 1:
                return path[path.index(target) :] + [target]
            if target not in state and (found := walk(target)) is not None:
                return found
        path.pop()
        state[name] = 2
        return None

    for name in sorted(GRAPH):
        if name not in state and (found := walk(name)) is not None:
            return found
    return None


def test_the_graph_reads_every_kind_of_import() -> None:
    # open_writer imports each format's writer inside the function (their libraries load slowly);
    # registration imports from the package above it; ``from . import errors`` names a module.
    assert "gymwire.formats.lerobot" in GRAPH["gymwire.formats"]
    assert "gymwire.client" in GRAPH["gymwire.registration"]
    assert {"gymwire.errors", "gymwire.ray.errors"} <= GRAPH["gymwire.ray.vector"] | GRAPH["gymwire.ray.pool"]
    assert "gymwire.errors" in GRAPH["gymwire._connection"]
    # Type-only imports are left out: env.py names Client for type checkers only.
    assert "gymwire.client" not in GRAPH["gymwire.env"]


def test_no_module_of_the_package_imports_itself_back() -> None:
    cycle = _cycle()
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_each_layer_imports_only_itself_and_the_layers_below() -> None:
    level = {name: i for i, layer in enumerate(LAYERS) for name in layer}
    assert set(level) <= set(MODULES), set(level) - set(MODULES)
    upward = [
        f"{name} -> {target}" for name, targets in GRAPH.items() if name in level for target in sorted(targets) if level.get(target, len(LAYERS)) > level[name]
    ]
    assert upward == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_imports(name: str) -> None:
    # Each module loads on its own; one whose optional library (Ray, torch, a framework) is missing
    # here fails only for that library.
    try:
        importlib.import_module(name)
    except ImportError as err:
        missing = getattr(err, "name", None) or ""
        cause = getattr(err.__cause__, "name", None) or ""
        if not any(m and m.split(".")[0] != "gymwire" for m in (missing, cause)):
            raise
        pytest.skip(f"{name} needs {missing or cause}, not installed here")


#: Modules built on the clients, which must use their public seams (``Client.request``,
#: ``Client.abandon``, ``Client.aclient``, ``ServerPool.run``, ``closed_by``, ...), never their private state.
CLIENT_USERS = ("gymwire.env", "gymwire.vector", "gymwire.tools", "gymwire.collection", "gymwire.ray", "gymwire.integrations")
#: Private attributes of other libraries that an integration has to set: siiRL's rollout reads observations
#: through ``EmbodiedHFRollout._obs_to_input``, which gymwire's adapter replaces (docs/integrations.md).
FOREIGN_PRIVATE = {("gymwire.integrations.siirl", "_obs_to_input")}


def test_code_built_on_the_clients_reads_no_private_attribute_of_another_object() -> None:
    reach_ins = []
    for name, path in MODULES.items():
        if not name.startswith(CLIENT_USERS):
            continue
        tree = ast.parse(path.read_text(), str(path))
        # Its own objects, its own classes (a static method named for weakref.finalize), other libraries' modules (os._exit).
        own = {"self", "cls"} | {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
        own |= {(a.asname or a.name).split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names if not a.name.startswith("gymwire")}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.endswith("_")):
                continue
            if isinstance(node.value, ast.Name) and node.value.id in own:
                continue
            if (name, node.attr) not in FOREIGN_PRIVATE:
                reach_ins.append(f"{name}:{node.lineno} {ast.unparse(node)}")
    assert reach_ins == []


def test_each_driver_has_methods_of_its_own_kind() -> None:
    # The blocking driver blocks and the asyncio driver awaits: neither is the other with its methods swapped.
    import inspect

    from gymwire._connection import DriverBase
    from gymwire._transport_asyncio import AsyncioDriver
    from gymwire._transport_sync import SocketClient
    from gymwire.client import AsyncClient

    calls = ("request", "request_many", "close", "abandon", "simulate_connection_loss")
    assert not issubclass(SocketClient, AsyncioDriver) and not issubclass(AsyncClient, SocketClient)
    assert SocketClient.__mro__[1] is DriverBase and AsyncioDriver.__mro__[1] is DriverBase
    assert not any(inspect.iscoroutinefunction(getattr(SocketClient, name)) for name in calls)
    assert all(inspect.iscoroutinefunction(getattr(AsyncioDriver, name)) for name in calls)
    assert not any(inspect.iscoroutinefunction(f) for _, f in inspect.getmembers(DriverBase, inspect.isfunction))
    assert not hasattr(gymwire.Client, "drive")
