"""Lazy re-exports for a package's `__init__` (module `__getattr__`, PEP 562).

A package lists its public names and the submodule that defines each; a name is imported on
first use. So `import vidload.convert` or `import vidload.sources.npy` runs `vidload/__init__`
and `vidload/sources/__init__` without importing torch, PyAV or h5py: a `vidload convert`
worker starts in a fraction of the time, and conversion runs where torch is not installed
(`tests/test_imports.py` checks it).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """`(__getattr__, __dir__)` for `package`, whose public `exports` map a name to the module
    that defines it; `namespace` is the package's `globals()` (a resolved name is cached there,
    so later look-ups skip `__getattr__`)."""

    def __getattr__(name: str) -> object:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
