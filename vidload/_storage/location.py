"""`Location`: one file or folder, local or in a bucket, behind one interface.

`Location(target, storage_options)` returns a `LocalLocation` (`vidload._storage.local`) for a
path or a `file://` URL and a `RemoteLocation` (`vidload._storage.remote`) for any other URL,
as fsspec's `url_to_fs` picks a filesystem: the two have the same methods, and a caller uses
them without asking which it holds (docs/development.md, "Storage", lists the interface).
What both share (naming, text, a single range, equality, pickling) lives here; every method
that touches storage is each implementation's own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any, NamedTuple

from vidload._storage.filesystems import is_url, scheme
from vidload.errors import VideoReadError

__all__ = ["IMPLEMENTATIONS", "Location", "Stat"]


class Stat(NamedTuple):
    """What `Location.stat` says of a file or object: its size in bytes and a version that
    changes when it is rewritten (an ETag or generation where the store gives one, else
    "size:mtime")."""

    size: int
    version: str


#: "local" and "remote": the class `Location(...)` returns, registered by `local.py` and
#: `remote.py` (the package imports both), as fsspec's registry maps a protocol to its class.
IMPLEMENTATIONS: dict[str, type[Location]] = {}


class Location:
    """A local file or folder, or an object or prefix in a bucket (see the module docstring).

    Picklable: holds the path or URL and the options, never an open client. `location / "a/b"`
    names something inside it; `str(location)` is safe to show (no credentials).
    """

    __slots__ = ("_options", "_url")
    _options: dict[str, Any] | None
    _url: str

    def __new__(
        cls,
        target: str | os.PathLike[str] | Location,
        storage_options: Mapping[str, Any] | None = None,
    ) -> Location:
        if cls is not Location:
            return object.__new__(cls)
        if isinstance(target, Location):
            target = target._url
        if isinstance(target, str) and is_url(target) and scheme(target) != "file":
            return object.__new__(IMPLEMENTATIONS["remote"])
        if not isinstance(target, (str, os.PathLike)):
            raise TypeError(f"a path or URL is needed, got {type(target).__name__}")
        return object.__new__(IMPLEMENTATIONS["local"])

    def __init__(
        self,
        target: str | os.PathLike[str] | Location,
        storage_options: Mapping[str, Any] | None = None,
    ) -> None:
        if isinstance(target, Location):  # another's path or URL, and its options by default
            if storage_options is None:
                storage_options = target.storage_options
            target = target.url
        self._options = dict(storage_options) if storage_options else None
        self._init(os.fspath(target))

    def _init(self, target: str) -> None:
        """Set this implementation's own state from the path or URL `target`."""
        raise NotImplementedError

    def __reduce__(self) -> tuple[Any, tuple[str, dict[str, Any] | None]]:
        return (Location, (self._url, self._options))

    # -- naming (shared)

    @property
    def storage_options(self) -> dict[str, Any] | None:
        return self._options

    @property
    def url(self) -> str:
        """The URL (or local path) as given, with credentials if it holds any: not for display."""
        return self._url

    @property
    def name(self) -> str:
        return self._url.rstrip("/").rsplit("/", 1)[-1]

    @property
    def parent(self) -> Location:
        raise NotImplementedError

    def __truediv__(self, rel: str | os.PathLike[str]) -> Location:
        raise NotImplementedError

    def with_name(self, name: str) -> Location:
        return self.parent / name

    def __str__(self) -> str:
        return self._url

    def __repr__(self) -> str:
        return f"Location({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Location)
            and type(other) is type(self)
            and (self._url, self._options) == (other._url, other._options)
        )

    def __hash__(self) -> int:
        return hash(self._url)

    # -- the interface: each implementation's own

    def local_file(self) -> Path | None:
        """The local file to read by the fast path (mmap, a file descriptor, FFmpeg), or
        None: read it by ranges."""
        raise NotImplementedError

    def exists(self) -> bool:
        raise NotImplementedError

    def is_file(self) -> bool:
        raise NotImplementedError

    def is_dir(self) -> bool:
        raise NotImplementedError

    def stat(self) -> Stat:
        """Size and version (see `Stat`); VideoReadError "not found" when it does not exist."""
        raise NotImplementedError

    def size(self) -> int:
        """Bytes of the file or object; VideoReadError when it does not exist."""
        return self.stat().size

    def list_dir(self) -> dict[str, int | None]:
        """{name: size in bytes (-1 where the listing does not say: HTTP), None for a folder}
        of the entries directly inside (one listing request for a bucket prefix)."""
        raise NotImplementedError

    def list_names(self) -> list[str]:
        """The names of the entries directly inside this folder: `list_dir` without the sizes
        (a local folder lists without a stat per file: see `LocalLocation.list_names`)."""
        return list(self.list_dir())

    # -- capabilities: what a caller may count on here (asked, never which class it holds)

    @property
    def can_list(self) -> bool:
        """Whether `list_dir` names every entry of a folder: local folders and bucket
        prefixes; not HTTP(S), whose "listing" is the links of a page."""
        raise NotImplementedError

    @property
    def over_network(self) -> bool:
        """Whether reads here wait on a network: `storage_options` configure its client, a
        local cache of whole objects can serve it, and a batch's reads are worth planning into
        one round (`SourceRoot`). False for a local path (the fast path: no planning)."""
        raise NotImplementedError

    def walk_files(self) -> list[str]:
        """Every file below this folder, as sorted `/`-separated paths relative to it."""
        raise NotImplementedError

    def read_bytes(self) -> bytes:
        """The whole file or object."""
        raise NotImplementedError

    def read_optional(self) -> bytes | None:
        """The whole file or object, or None where there is none (a sidecar that may be
        absent: one request, no existence check first)."""
        try:
            return self.read_bytes()
        except VideoReadError as e:
            if e.reason != "not found":
                raise
            return None

    def read_text(self) -> str:
        """The file as UTF-8 text, without a byte order mark."""
        return self.read_bytes().decode("utf-8").lstrip("\ufeff")

    def read_range(self, start: int, stop: int) -> bytes:
        """Bytes [start, stop) (fewer at the end of the object)."""
        return self.read_ranges([(start, stop)])[0]

    def read_ranges(
        self, ranges: Sequence[tuple[int, int]], *, index: int | None = None
    ) -> list[bytes]:
        """The bytes of each [start, stop) range, in the order given (fewer at the end of the
        object); remote: ranges closer than `COALESCE_GAP` are one request, and the requests
        of one call run concurrently."""
        raise NotImplementedError

    def read_ends(self, head: int, tail: int) -> tuple[Stat, bytes, bytes]:
        """(stat, the first `head` bytes, the last `tail` bytes) in one round: for a remote
        object the head and the tail (a suffix range) are two concurrent requests whose
        answers report its size, so opening a container (HDF5's superblock and frame table,
        an npy header) waits one round-trip, not two. Either end may overlap the other or be
        the whole object; `tail` 0 gives b"". Here: the stat, then both ends as one
        `read_ranges` (what a local file does)."""
        st = self.stat()
        first, last = self.read_ranges([(0, head), (max(0, st.size - tail), st.size)])
        return st, first, last if tail else b""

    def versioned(self) -> Location:
        """This file or object, its range reads checked to come from one version of it: a
        read answered by another version than the first raises `VideoReadError(location,
        faults.CHANGED)` (rewritten since). For a reader that keeps an object's header and
        reads its body later (`sources._video_remote`). A local file is itself: its readers
        open it by path and compare its stat."""
        return self

    def open(self, *, block_size: int = 4 << 20) -> IO[bytes]:
        """A binary file-like object (remote: read in blocks of `block_size` with read-ahead)."""
        raise NotImplementedError

    def put_file(self, local: str | os.PathLike[str]) -> None:
        """Copy the local file `local` here (a whole object appears only once complete)."""
        raise NotImplementedError

    def get_file(self, local: str | os.PathLike[str]) -> None:
        """Copy this whole file or object into the local file `local` (`put_file`'s inverse;
        remote: streamed, one download counted)."""
        raise NotImplementedError

    def write_bytes(self, data: bytes) -> None:
        """Write `data` as this whole file or object."""
        raise NotImplementedError

    def create_bytes(self, data: bytes) -> bool:
        """Write `data` only if nothing is there yet: True when written, False when something
        already was (the write side's lock, `vidload._lock`)."""
        raise NotImplementedError

    def delete(self, *, recursive: bool = False) -> None:
        """Remove this file (or folder with `recursive`); nothing to remove is not an error."""
        raise NotImplementedError

    # -- many locations at once: grouped by `_group`, each group read by its own class

    def _group(self) -> tuple[str, ...]:
        """Locations with the same key are read together (one filesystem)."""
        raise NotImplementedError

    @classmethod
    def _fetch_group(
        cls, requests: Sequence[tuple[Location, Sequence[tuple[int, int]] | None]]
    ) -> list[list[bytes] | Exception]:
        """Each location's ranges, or the VideoReadError of its reading (see `batch.fetch`):
        here each read on its own (`_fetch_alone`)."""
        return [loc._fetch_alone(ranges) for loc, ranges in requests]

    def _fetch_alone(self, ranges: Sequence[tuple[int, int]] | None) -> list[bytes] | Exception:
        """This location's ranges (or whole file) read on their own, or the VideoReadError
        that names it: one entry of `_fetch_group`'s answer."""
        try:
            return [self.read_bytes()] if ranges is None else self.read_ranges(ranges)
        except VideoReadError as e:
            return e

    @classmethod
    def _put_group(cls, files: Sequence[tuple[str, Location]]) -> None:
        """Upload each local file to its location (see `batch.put_many`): here one by one."""
        for local, loc in files:
            loc.put_file(local)
