"""No import cycles among vidload's modules, counting every import a module can run.

The graph is read from the source (AST), not from `sys.modules`, so an import that only runs
in a branch, in a function, or under `TYPE_CHECKING` counts as much as one at the top: a
deferred import that hides a cycle is still a cycle (issue 19). Edges:

- `import vidload.a.b`, `from vidload.a import b` (to `vidload.a.b` when `b` is a submodule,
  else to `vidload.a`), relative imports (`from . import x`, `from ..a import y`);
- `importlib.import_module("vidload...")` and `__import__("vidload...")` with a literal name;
- the lazy exports of a package (`lazy_exports(__name__, MAPPING, globals())`, vidload._lazy):
  every vidload module named in `MAPPING`;
- a `"vidload.module:Name"` string anywhere (the table of storage kinds, `vidload._kinds`, names
  each kind's class so and imports it on first use).

Importing `vidload.a.b` also runs `vidload/__init__` and `vidload/a/__init__`; those implicit
parent edges are left out (a package that re-exports its own submodules would otherwise always
be a cycle), as import-linter and pydeps do.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

import vidload

PACKAGE_ROOT = Path(vidload.__file__).resolve().parent


@dataclass(frozen=True)
class Edge:
    target: str
    where: str  # "path:line" of the import


def module_names(package_dir: Path, package: str) -> dict[str, Path]:
    """Every module of the package under `package_dir`: dotted name -> file."""
    names: dict[str, Path] = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join([package, *parts])] = path
    return names


def _resolve_relative(module: str, is_package: bool, level: int, name: str | None) -> str:
    base = module.split(".") if is_package else module.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


def _strings(node: ast.AST) -> list[str]:
    return [
        n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]


def _call_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def import_edges(module: str, path: Path, modules: dict[str, Path], package: str) -> list[Edge]:
    """The vidload modules `module` (source `path`) can import, anywhere in its code."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    shown = (
        path.relative_to(PACKAGE_ROOT.parent) if path.is_relative_to(PACKAGE_ROOT.parent) else path
    )
    assignments = {
        target.id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    edges: list[Edge] = []

    def add(target: str, node: ast.stmt | ast.expr) -> None:
        if target != package and not target.startswith(package + "."):
            return
        if target not in modules:  # a vidload name that is no module: a typo the graph would miss
            raise AssertionError(f"{shown}:{node.lineno}: imports {target!r}, not a module")
        edges.append(Edge(target, f"{shown}:{node.lineno}"))

    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            target, colon, name = node.value.partition(":")
            if colon and name.isidentifier() and target.startswith(package + "."):
                add(target, node)
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node)
        elif isinstance(node, ast.ImportFrom):
            base = (
                _resolve_relative(module, is_package, node.level, node.module)
                if node.level
                else node.module or ""
            )
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                add(sub if sub in modules else base, node)
        elif isinstance(node, ast.Call):
            name = _call_name(node.func)
            if name in ("import_module", "__import__") and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    add(first.value, node)
            elif name == "lazy_exports" and len(node.args) >= 2:
                mapping = node.args[1]
                if isinstance(mapping, ast.Name):
                    assert mapping.id in assignments, f"{shown}: lazy map {mapping.id} not found"
                    mapping = assignments[mapping.id]
                for text in _strings(mapping):
                    if text == package or text.startswith(package + "."):
                        add(text, node)
    return edges


def import_graph(package_dir: Path, package: str) -> dict[str, list[Edge]]:
    modules = module_names(package_dir, package)
    return {name: import_edges(name, path, modules, package) for name, path in modules.items()}


def find_cycles(graph: dict[str, list[Edge]]) -> list[list[tuple[str, Edge]]]:
    """One cycle per strongly connected component with a loop (Tarjan), each as the list of
    (module, edge to the next module), starting from the component's smallest name."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(node: str) -> None:  # recursion depth <= number of modules (~100)
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for edge in graph.get(node, []):
            if edge.target not in index:
                visit(edge.target)
                low[node] = min(low[node], low[edge.target])
            elif edge.target in on_stack:
                low[node] = min(low[node], index[edge.target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1 or any(e.target == node for e in graph.get(node, [])):
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)

    cycles = []
    for component in components:
        start = min(component)
        # shortest path back to `start` inside the component (breadth first)
        previous: dict[str, tuple[str, Edge]] = {}
        frontier = [start]
        found: tuple[str, Edge] | None = None
        while frontier and found is None:
            following = []
            for node in frontier:
                for edge in graph[node]:
                    if edge.target == start:
                        found = (node, edge)
                        break
                    if edge.target in component and edge.target not in previous:
                        previous[edge.target] = (node, edge)
                        following.append(edge.target)
                if found:
                    break
            frontier = following
        assert found is not None
        path = [found]
        while path[-1][0] != start:
            path.append(previous[path[-1][0]])
        cycles.append(path[::-1])
    return cycles


def describe(cycle: list[tuple[str, Edge]]) -> str:
    return " -> ".join(f"{node} ({edge.where})" for node, edge in cycle) + f" -> {cycle[0][0]}"


def test_vidload_has_no_import_cycle():
    graph = import_graph(PACKAGE_ROOT, "vidload")
    # the reading sees what it must, or it would pass by seeing nothing
    assert len(graph) > 50
    # deferred, in a function (the bench command imports the measuring code only to run it)
    assert "vidload._bench.run" in {e.target for e in graph["vidload._commands.bench"]}
    # vidload.bench.main runs the command line, which imports the bench command: no way back
    assert "vidload.cli" in {e.target for e in graph["vidload.bench"]}
    assert "vidload.dataset" in {e.target for e in graph["vidload"]}  # lazy export
    assert "vidload.sources.npy" in {e.target for e in graph["vidload.sources"]}
    # the table of storage kinds imports each kind's class by its "module:Name"
    assert "vidload.sources._jpeg_kinds" in {e.target for e in graph["vidload._kinds"]}
    cycles = find_cycles(graph)
    assert not cycles, "import cycles (module (its import) -> ...):\n" + "\n".join(
        describe(c) for c in cycles
    )


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "vidload"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (  # deferred import inside a function
            {
                "__init__.py": "",
                "a.py": "import vidload.b\n",
                "b.py": "def f():\n    import vidload.a\n",
            },
            ["vidload.a", "vidload.b"],
        ),
        (  # relative imports, `from . import x`
            {"__init__.py": "", "a.py": "from . import b\n", "b.py": "from .a import f\n"},
            ["vidload.a", "vidload.b"],
        ),
        (  # importlib literal and a sub-package's `from .. import`
            {
                "__init__.py": "",
                "a.py": "import importlib\nm = importlib.import_module('vidload.sub.c')\n",
                "sub/__init__.py": "",
                "sub/c.py": "from .. import a\n",
            },
            ["vidload.a", "vidload.sub.c"],
        ),
        (  # lazy exports of a package, through a dict.fromkeys inside the map
            {
                "__init__.py": (
                    "from vidload._lazy import lazy_exports\n"
                    "_LAZY = {'X': 'vidload.a', **dict.fromkeys(('Y',), 'vidload.b')}\n"
                    "__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())\n"
                ),
                "_lazy.py": "",
                "a.py": "",
                "b.py": "import vidload\n",
            },
            ["vidload", "vidload.b"],
        ),
        (  # a registry's lazy "module:Name" imports count
            {
                "__init__.py": "",
                "a.py": "TABLE = {'b': 'vidload.b:B'}\n",
                "b.py": "from vidload.a import TABLE\n",
            },
            ["vidload.a", "vidload.b"],
        ),
        (  # TYPE_CHECKING imports count
            {
                "__init__.py": "",
                "a.py": (
                    "from typing import TYPE_CHECKING\n"
                    "if TYPE_CHECKING:\n"
                    "    from vidload.b import B\n"
                ),
                "b.py": "from vidload.a import A\n",
            },
            ["vidload.a", "vidload.b"],
        ),
    ],
)
def test_cycle_finder_names_the_cycle(tmp_path, files, expected):
    cycles = find_cycles(import_graph(_package(tmp_path, files), "vidload"))
    assert [sorted(node for node, _ in c) for c in cycles] == [expected]
    text = describe(cycles[0])
    assert text.startswith(expected[0] + " (") and text.endswith(" -> " + expected[0])


def test_cycle_finder_accepts_layers_and_rejects_unknown_modules(tmp_path):
    layered = {"__init__.py": "", "a.py": "import vidload.b\n", "b.py": "import os\nimport numpy\n"}
    assert find_cycles(import_graph(_package(tmp_path, layered), "vidload")) == []
    typo = {"__init__.py": "", "a.py": "def f():\n    from vidload.nope import g\n"}
    with pytest.raises(AssertionError, match=r"a.py:2: imports 'vidload.nope', not a module"):
        import_graph(_package(tmp_path / "t", typo), "vidload")
