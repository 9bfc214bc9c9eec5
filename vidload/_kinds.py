"""The storage kinds: one table from a kind's name to everything vidload does with it.

    video   a re-encoded video per input (`convert --to video`), read by `VideoSource`
    jpeg    a folder of JPEG frame files per video, read by `JpegSource`
    hdf5    one `.h5` of encoded JPEG frames per video, read by `Hdf5Source`
    npy     one padded `.npy` of encoded JPEG frames per video, read by `NpySource`

`convert --to` (and the CLI's choices), `probe` and `convert`'s input search, `bench`'s rows,
`choose`'s candidates and the container names (`vidload._layout`) all read this table, as
fsspec's `registry.py` maps a protocol to its filesystem class: a new kind is one `register`
call (a row) plus its reader and writer module, and no other file changes
(`tests/test_kinds.py` registers a dummy kind and runs every command on it).

The table lives per process: a kind a program registers is unknown to the worker processes
`convert`, `probe` and `choose` spawn (they look the kind up by name) unless they import the
module that registers it too; run those with `workers=1` otherwise.

A row names its source class and writer by import path (`"vidload.sources.hdf5:Hdf5Source"`),
imported on first use: reading the table imports no source, so `vidload --help` and
`vidload convert` stay free of torch, PyAV and h5py until a command needs them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "BenchRow",
    "StorageKind",
    "container_kinds",
    "file_kind",
    "get_kind",
    "kind_names",
    "register",
    "unregister",
]


@dataclass(frozen=True)
class BenchRow:
    """One row `vidload bench` measures on a kind: its name (`--only` takes it), the source's
    keyword options, and the row's description in the table."""

    name: str
    description: str
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StorageKind:
    """One storage kind (a row of the table).

    Attributes:
        name: what `convert --to`, `probe`, `bench` and `choose` call it.
        suffix: what a container's name adds to its id's stem (`.h5`); "" for a folder.
        source: the `FrameSource` class that reads it, as "module:Name".
        writer: for a container of encoded JPEG frames, the function that writes one, as
            "module:name": `(path, frames: Iterable[bytes]) -> frames written`, with
            `attrs=Mapping` too where `keeps_attrs`. None for `video`, which `convert`
            re-encodes instead.
        described: what an input of this kind is, in messages ("`.h5` files").
        open_options: the source's options where `convert` verifies and `probe` reads one
            container (no handle cache).
        keeps_attrs: the writer stores `attrs` (the input's fps, reported count and id, the
            encoding options) in the container.
        stored_fps: a function `(path) -> float | None` reading the frame rate a container
            stores (`probe` reports it), as "module:name"; None when the format keeps none.
        bench: the rows `vidload bench` measures on it (none: not measured there).
        choose_qualities: the JPEG qualities `vidload choose` builds it at by default.
    """

    name: str
    suffix: str
    source: str
    writer: str | None
    described: str
    open_options: Mapping[str, Any] = field(default_factory=dict)
    stored_fps: str | None = None
    keeps_attrs: bool = False
    bench: tuple[BenchRow, ...] = ()
    choose_qualities: tuple[int, ...] = ()

    @property
    def folder(self) -> bool:
        """A container of this kind is a folder (of frame files), not a file."""
        return self.suffix == ""

    @property
    def holds_jpeg(self) -> bool:
        """Its containers hold encoded JPEG frames (the quality applies; `writer` is set)."""
        return self.writer is not None

    def source_class(self) -> type:
        """The source class, imported now."""
        return _resolve(self.source)

    def open(self, root: str | Path, **options: Any) -> Any:
        """A source reading this kind's containers under `root`."""
        return self.source_class()(root, **options)

    def write(self, path: Path, frames: Iterable[bytes], attrs: Mapping[str, Any]) -> int:
        """Write one container of JPEG `frames` at `path`; the number of frames written."""
        if self.writer is None:
            raise ValueError(f"storage {self.name!r} is not a container of JPEG frames")
        writer: Callable[..., int] = _resolve(self.writer)
        return writer(path, frames, attrs=attrs) if self.keeps_attrs else writer(path, frames)

    def fps(self, path: Path) -> float | None:
        """The frame rate the container at `path` stores, None when it keeps none."""
        return None if self.stored_fps is None else _resolve(self.stored_fps)(path)


def _resolve(target: str) -> Any:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


_KINDS: dict[str, StorageKind] = {}


def register(kind: StorageKind, *, replace: bool = False) -> StorageKind:
    """Add `kind` to the table (the CLI's choices, convert, probe, bench and choose take it
    from then on); `replace` allows a name already taken.

    Raises:
        ValueError: the name is taken (without `replace`), or its suffix is another kind's.
    """
    if kind.name in _KINDS and not replace:
        raise ValueError(f"storage kind {kind.name!r} is already registered")
    for other in _KINDS.values():
        if other.name != kind.name and other.suffix == kind.suffix:
            raise ValueError(
                f"storage kind {kind.name!r}: suffix {kind.suffix!r} is taken by {other.name!r}"
            )
    _KINDS[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    """Remove a kind (a test's dummy kind); nothing when it is not registered."""
    _KINDS.pop(name, None)


def kind_names() -> tuple[str, ...]:
    """Every kind's name, in table order: `convert --to`'s choices."""
    return tuple(_KINDS)


def get_kind(name: str) -> StorageKind:
    """The row of `name`.

    Raises:
        ValueError: no such kind, naming the kinds there are.
    """
    try:
        return _KINDS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"storage ({name!r}) must be one of {', '.join(map(repr, _KINDS))}"
        ) from None


def container_kinds() -> tuple[StorageKind, ...]:
    """The kinds whose containers hold JPEG frames (all but `video`), in table order."""
    return tuple(k for k in _KINDS.values() if k.holds_jpeg)


def file_kind(name: str) -> str | None:
    """The container kind a file name's suffix says (`x.h5` -> "hdf5"), None for any other
    name (a video file's extension is `sources.base.VIDEO_EXTENSIONS`' business)."""
    lowered = name.lower()
    for kind in container_kinds():
        if not kind.folder and lowered.endswith(kind.suffix):
            return kind.name
    return None


register(
    StorageKind(
        "jpeg",
        "",
        "vidload.sources.jpeg:JpegSource",
        "vidload.sources.jpeg:write_jpeg_folder",
        "JPEG frame folders",
        bench=(BenchRow("jpeg", "JpegSource: one file per frame"),),
    )
)
register(
    StorageKind(
        "hdf5",
        ".h5",
        "vidload.sources.hdf5:Hdf5Source",
        "vidload.sources.hdf5:write_hdf5",
        ".h5 files",
        open_options={"cache_size": 0},
        stored_fps="vidload.sources.hdf5:stored_fps",
        keeps_attrs=True,
        bench=(BenchRow("hdf5", "Hdf5Source: one HDF5 file of JPEG bytes per video"),),
        choose_qualities=(95, 85, 75),
    )
)
register(
    StorageKind(
        "npy",
        ".npy",
        "vidload.sources.npy:NpySource",
        "vidload.sources.npy:write_npy",
        ".npy files",
        bench=(
            BenchRow(
                "npy-mmap",
                'NpySource(mode="mmap"): decode the clip\'s rows of a padded npy where they are '
                "mapped (read = mapping the file; the pages come in during the decode)",
                {"mode": "mmap"},
            ),
            BenchRow(
                "npy-read", 'NpySource(mode="read"): read the whole npy per clip', {"mode": "read"}
            ),
        ),
        choose_qualities=(95,),  # its bytes are HDF5's plus padding: one point says enough
    )
)
register(
    StorageKind(
        "video",
        ".mp4",  # pts exact in the stream's own time base, read by a packet scan
        "vidload.sources.video:VideoSource",
        None,
        "video files",
    )
)
