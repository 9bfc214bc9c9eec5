"""vidload's modules in layers, each importing only its own layer and those below it, as
`docs/development.md` draws them (its "Layers" section), and no module importing another
module's private names. The graph is `tests/test_import_cycles.py`'s: every import a module
can run, read from the source.

    cli        the `vidload` command line: parsing and printing (and `vidload.bench.main`, which
               runs `vidload bench`)
    commands   what a command does beyond the library: bench (_bench), choose (and _measure,
               what they share), probe, the exit statuses
    library    convert (and shards), the dataset, the loader, lists and manifests
    sources    the frame sources, and the table of storage kinds (each kind's class lives beside
               its reader)
    storage    local paths and URLs (vidload._storage)
    helpers    the shared mechanisms under all of them: checks, ids, container names, atomic
               writes, sampling and geometry, the errors

A new module goes into LAYERS below (the test names any module that has no layer); "." there
is the package `vidload` itself (its lazy re-exports reach the dataset, loader and sources).
"""

from __future__ import annotations

import ast

import pytest
from test_import_cycles import PACKAGE_ROOT, import_edges, module_names

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = tuple(
    (name, tuple("vidload" if m == "." else f"vidload{m}" for m in modules.split()))
    for name, modules in (
        ("cli", ".cli .__main__ .bench"),
        ("commands", "._commands ._bench .choose ._choose ._measure .probe .synth"),
        (
            "library",
            ". .convert .shards ._convert ._lock .dataset ._dataset ._windows ._official"
            " .datasets .loader .prefetch ._loader .normalization .augment .manifest .labels"
            " ._lists ._dist ._parallel .progress",
        ),
        ("sources", ".sources ._kinds"),
        ("storage", "._storage"),
        (
            "helpers",
            ".transforms .sampling .errors ._atomic ._checks ._ids ._lru ._layout ._cpus"
            " ._cv2 ._lazy ._scratch ._shared_arrays",
        ),
    )
)

MODULES = module_names(PACKAGE_ROOT, "vidload")


def layer_of(module: str) -> int | None:
    """The index in LAYERS of `module`: its longest matching prefix's layer (None: no layer)."""
    best: tuple[int, int] | None = None
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[1]:
                    best = (i, len(prefix))
    return None if best is None else best[0]


def test_every_module_has_a_layer():
    missing = sorted(m for m in MODULES if layer_of(m) is None)
    assert not missing, f"modules with no layer (add them to LAYERS): {missing}"


def test_no_module_imports_a_layer_above_its_own():
    upward = []
    for module, path in MODULES.items():
        mine = layer_of(module)
        for edge in import_edges(module, path, MODULES, "vidload"):
            theirs = layer_of(edge.target)
            if mine is not None and theirs is not None and theirs < mine:
                upward.append(
                    f"{edge.where}: {module} ({LAYERS[mine][0]}) imports {edge.target} "
                    f"({LAYERS[theirs][0]})"
                )
    assert not upward, "imports up the layers:\n" + "\n".join(sorted(set(upward)))


def _private_imports(module: str, path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.ImportFrom) and (node.module or "").startswith("vidload")):
            continue
        for alias in node.names:
            name = alias.name
            submodule = f"{node.module}.{name}"
            if name.startswith("_") and not name.startswith("__") and submodule not in MODULES:
                found.append(f"{path.name}:{node.lineno}: {module} imports {submodule}")
    return found


def test_no_module_imports_another_modules_private_names():
    found = [hit for module, path in MODULES.items() for hit in _private_imports(module, path)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    ("module", "layer"),
    [("vidload.cli", "cli"), ("vidload._storage", "storage"), ("vidload.sources.npy", "sources"),
     ("vidload._kinds", "sources"), ("vidload", "library"), ("vidload._bench.run", "commands")],
)  # fmt: skip
def test_layer_of(module, layer):
    index = layer_of(module)
    assert index is not None and LAYERS[index][0] == layer


MAX_MODULE_LINES = 550


def test_no_module_is_over_550_lines():
    """One idea per module: a module that grows past 550 lines holds two (issue 25's rule);
    split it into parts beside it (as sources/video.py's `_video_*.py`) before it lands."""
    over = {
        str(path.relative_to(PACKAGE_ROOT.parent)): n
        for path in sorted(PACKAGE_ROOT.rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not over, f"modules over {MAX_MODULE_LINES} lines: {over}"
