"""The storage kinds: one table from a kind's name to its one class, as fsspec's `registry.py`
maps a protocol to its filesystem class (imported on first use, with the extra to install
where the import fails).

    jpeg    a folder of JPEG frame files per video          `sources._jpeg_kinds.JpegFolderFormat`
    hdf5    one `.h5` of encoded JPEG frames per video      `sources._jpeg_kinds.Hdf5Format`
    npy     one padded `.npy` of encoded JPEG frames        `sources._jpeg_kinds.NpyFormat`
    video   a re-encoded video per input (`--to video`)    `sources._video_format.VideoFormat`
    lmdb    JPEG frames in one LMDB environment             `sources.lmdb.LmdbFormat` (extra lmdb)

A kind's class (`vidload.sources._format.StorageFormat`) carries everything of it: suffix,
reader, writer or encoder, its own options, verification, head codec, batch planning, bench
rows and choose candidates. `convert --to` (and the CLI's choices), `probe` and `convert`'s
input search, `bench`'s rows, `choose`'s candidates all read this table and never a kind's
name: a new kind is one module and one `register` call (`tests/test_kinds.py` registers one
that is not JPEG bytes and converts and reads it with no other file changed).

The table lives per process: a kind a program registers is unknown to the worker processes
`convert`, `probe` and `choose` spawn (they look the kind up by name) unless they import the
module that registers it too; run those with `workers=1` otherwise.

A row names its class by import path (`"vidload.sources._jpeg_kinds:Hdf5Format"`), imported
on first use: `kind_names()` imports nothing (`convert --to`'s choices); what lists a kind's
own options imports its class, and its reader with it (`vidload --help` now imports PyAV, h5py
and lmdb for `choose`'s candidates: ~0.2 s). The classes live in the sources layer beside their
readers and never import this module, so the table's lazy imports make no cycle
(`tests/test_import_cycles.py` counts them).
"""

from __future__ import annotations

import contextlib
import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vidload._storage.filesystems import MissingExtraError

if TYPE_CHECKING:
    from vidload.sources._format import StorageFormat

__all__ = [
    "formats",
    "file_kind",
    "get_kind",
    "input_kinds",
    "kind_names",
    "register",
    "unregister",
]


@dataclass(frozen=True)
class _Row:
    """A kind's class, as "module:Name" or the class itself, and the extra that installs what
    its module needs (None: nothing beyond vidload's own dependencies)."""

    target: str | type
    extra: str | None = None


_TABLE: dict[str, _Row] = {
    "jpeg": _Row("vidload.sources._jpeg_kinds:JpegFolderFormat"),
    "hdf5": _Row("vidload.sources._jpeg_kinds:Hdf5Format"),
    "npy": _Row("vidload.sources._jpeg_kinds:NpyFormat"),
    "video": _Row("vidload.sources._video_format:VideoFormat"),
    "lmdb": _Row("vidload.sources.lmdb:LmdbFormat", extra="lmdb"),
}
_MADE: dict[str, StorageFormat] = {}


def _load(name: str, row: _Row) -> StorageFormat:
    """The kind's class made, once per process (`_made`)."""
    made = _MADE.get(name)
    if made is None:
        made = _MADE[name] = _made(name, row)
    return made


def _made(name: str, row: _Row) -> StorageFormat:
    """The kind's class imported (MissingExtraError naming the extra where it cannot be) and
    made; ValueError where it calls itself by another name."""
    cls = row.target
    if isinstance(cls, str):
        module, _, attr = cls.partition(":")
        try:
            cls = getattr(importlib.import_module(module), attr)
        except ImportError as e:
            if row.extra is None:
                raise
            needs = e.name or "a package"
            raise MissingExtraError(
                f"storage {name!r} needs {needs}: pip install 'vidload[{row.extra}]'"
            ) from e
    made = cls()
    if made.name != name:
        raise ValueError(f"storage kind {name!r}: its class calls itself {made.name!r}")
    return made


def register(
    name: str, target: str | type, *, extra: str | None = None, replace: bool = False
) -> StorageFormat | None:
    """Add a kind: its class (a `StorageFormat` subclass, or its "module:Name"), imported now;
    the CLI's choices, convert, probe, bench and choose take it from then on. `replace` allows
    a name already taken. Returns the kind; None where its module needs a package that is not
    installed (`extra` names it: the kind is registered, and asking for it says what to
    install). A kind refused leaves the table as it was.

    Raises:
        ValueError: the name is taken (without `replace`), the class names itself otherwise,
            or its suffix is another kind's.
    """
    if name in _TABLE and not replace:
        raise ValueError(f"storage kind {name!r} is already registered")
    row = _Row(target, extra)
    try:
        kind = _made(name, row)
    except MissingExtraError:  # named in the choices; using it names what to install
        _TABLE[name] = row
        _MADE.pop(name, None)
        return None
    for other in formats():
        if other.name != name and other.suffix == kind.suffix:
            raise ValueError(
                f"storage kind {name!r}: suffix {kind.suffix!r} is taken by {other.name!r}"
            )
    _TABLE[name] = row
    _MADE[name] = kind
    return kind


def unregister(name: str) -> None:
    """Remove a kind (a test's kind); nothing when it is not registered."""
    _TABLE.pop(name, None)
    _MADE.pop(name, None)


def kind_names() -> tuple[str, ...]:
    """Every kind's name, in table order: `convert --to`'s choices. Imports no kind."""
    return tuple(_TABLE)


def get_kind(name: str) -> StorageFormat:
    """The class of `name`, made (one per process).

    Raises:
        ValueError: no such kind, naming the kinds there are.
        MissingExtraError: the kind's module needs a package that is not installed (an
            ImportError naming the extra).
    """
    try:
        row = _TABLE[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"storage ({name!r}) must be one of {', '.join(map(repr, _TABLE))}"
        ) from None
    return _load(name, row)


def formats() -> tuple[StorageFormat, ...]:
    """Every kind whose module imports here, in table order (a kind whose extra is not
    installed is left out: bench and choose measure the others)."""
    found = []
    for name, row in list(_TABLE.items()):
        with contextlib.suppress(MissingExtraError):
            found.append(_load(name, row))
    return tuple(found)


def input_kinds() -> tuple[StorageFormat, ...]:
    """The kinds whose containers `convert` and `probe` take as INPUT (JPEG frame folders,
    `.h5`, `.npy`), in table order."""
    return tuple(k for k in formats() if k.takes_input)


def file_kind(name: str) -> str | None:
    """The input kind a file name's suffix says (`x.h5` -> its kind's name), None for any
    other name (a video file's extension is `sources.base.VIDEO_EXTENSIONS`' business)."""
    lowered = name.lower()
    for kind in input_kinds():
        if not kind.folder and lowered.endswith(kind.suffix):
            return kind.name
    return None
