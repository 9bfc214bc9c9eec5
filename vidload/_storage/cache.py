"""Local copies of remote objects, and a source's root.

- `RangeFile`: a remote object as a read-only seekable file that serves reads from the blocks
  it holds (`open_prefetched`: head and tail in one round), for readers that walk metadata in
  many small reads (h5py);
- `LocalCache`: whole objects copied into a local folder on first use, shared by processes
  (`roots.SourceRoot` reads through one, with a `cache_dir`).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from vidload._lru import ProcessLRU
from vidload._storage.batch import read_many, run_concurrently
from vidload._storage.filesystems import endpoint, is_url, redact_url, scheme
from vidload._storage.location import Location
from vidload._storage.ranges import cut
from vidload.errors import PATH_NAMES

__all__ = [
    "DEFAULT_CACHE_BYTES",
    "LocalCache",
    "RangeFile",
    "open_prefetched",
    "temporary_cache",
]

#: The least a `RangeFile` fetches for a read outside what it holds.
MIN_FETCH = 64 << 10


class RangeFile(io.RawIOBase):
    """A read-only, seekable file over a remote object of `size` bytes that serves reads from
    the blocks it holds and fetches any other part (at least `MIN_FETCH` bytes) as one range.

    For a reader that walks a file's metadata in many small reads (h5py opening an HDF5 file):
    with the head and tail of the file fetched up front (`Location.open_prefetched`, one round
    of concurrent requests) those reads cost no request at all.
    """

    def __init__(self, location: Location, size: int, blocks: Sequence[tuple[int, bytes]]):
        super().__init__()
        self.location = location
        self.size = size
        self._blocks = [(a, a + len(block), block) for a, block in blocks]
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self.size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        start, stop = self._pos, min(self._pos + len(view), self.size)
        if start >= stop:
            return 0
        data = self._bytes(start, stop)
        view[: len(data)] = data
        self._pos = start + len(data)
        return len(data)

    def _bytes(self, start: int, stop: int) -> bytes:
        held = cut(self._blocks, start, stop)
        if held is not None:
            return held
        block = self.location.read_range(start, min(self.size, max(stop, start + MIN_FETCH)))
        self._blocks.append((start, start + len(block), block))
        return block[: stop - start]


def open_prefetched(location: Location, *, head: int = 64 << 10, tail: int = 64 << 10) -> RangeFile:
    """`location` as a `RangeFile` holding its first `head` and last `tail` bytes, fetched
    with its size in one round of concurrent requests (`Location.read_ends`)."""
    st, first, last = location.read_ends(head, tail)
    blocks = [(0, first)]
    if last and st.size > len(first):
        blocks.append((st.size - len(last), last))
    return RangeFile(location, st.size, blocks)


#: Between an object's name and its version's hash in the cache (`LocalCache.path_of`).
VERSION_MARK = "~"
#: The version mark and hash ending a copy's name.
_VERSION_END = re.compile(re.escape(VERSION_MARK) + "[0-9a-f]{12}$")
#: {a cache folder (as given and absolute): {endpoint hash: URL scheme}}: what `url_of_copy`
#: needs to name a copy by its object's URL, learned as copies are named (`path_of`).
_COPIES: dict[str, dict[str, str]] = {}


def url_of_copy(path: str) -> str | None:
    """The URL (without credentials) of the object whose cached copy is `path`, or None for
    any other path: how an error names a copy (`vidload.errors.PATH_NAMES`), whichever reader
    raised it."""
    for folder, schemes in _COPIES.items():
        if not path.startswith(folder + os.sep):
            continue
        tag, _, rest = path[len(folder) + 1 :].partition(os.sep)
        if tag in schemes and rest:
            rest = _VERSION_END.sub("", rest.replace(os.sep, "/"))
            return f"{schemes[tag]}://{rest}"
    return None


PATH_NAMES.append(url_of_copy)

#: The version (`Location.stat().version`: ETag, generation, or size and mtime) of each object
#: this process has cached or read from the cache, by URL.
_VERSIONS: ProcessLRU[str, str] = ProcessLRU(None)


def version_of(location: Location) -> str:
    """The object's version as this process first saw it (one request, once per object and
    process): what the cache names its copy by, so that an object rewritten in the store is
    fetched again by the next process instead of served from a stale copy."""
    return _VERSIONS.get_or_make(location.url, lambda: location.stat().version)


#: `cache_max_bytes` when none is given.
DEFAULT_CACHE_BYTES = 32 << 30
#: A process rescans the cache's size after this many of its own additions (others add too).
_RESCAN_EVERY = 32
#: Partial downloads older than this are a crashed process's, and removed by eviction.
_STALE_PART_S = 3600.0
#: Ends the name of a partial download (a crashed process's is removed by `evict`).
PART_SUFFIX = ".part"


class LocalCache:
    """Whole objects of a bucket, copied into a local folder on first use and read from there.

    Layout: `folder/<endpoint hash>/<bucket>/<key>~<version hash>`, the first hash telling
    apart servers that use the same bucket names (the endpoint of the options or
    `AWS_ENDPOINT_URL`), the version (ETag, generation, or size and mtime) asked of the store
    once per object and process (`version_of`, one request): an object rewritten in the bucket
    has a new name here and is fetched again, never served stale (within one process the
    version first seen is kept); the old copy goes with the least recently used.

    Safe with several processes (DataLoader workers) filling it at once: an object is
    downloaded under a name of its own (`.<name>.<pid>.<n>.part`) and renamed over the final
    name when complete, so a reader sees a whole object or none; two processes fetching the
    same object both succeed and the second rename wins, with the same bytes.

    Bounded: when the files in the folder exceed `max_bytes`, the least recently used are
    removed (by modification time: a hit touches its file) until they fill at most 90 % of it.
    Each process knows the size it has added since it last listed the folder and lists it
    again when that estimate passes the bound or after `_RESCAN_EVERY` additions; so the
    folder can exceed the bound by what the other processes added since their last listing
    (at most workers x `_RESCAN_EVERY` objects) until the next listing. A file removed while a
    reader has it open stays readable to it (POSIX).
    """

    def __init__(self, folder: str | os.PathLike[str], max_bytes: int | None = None) -> None:
        if is_url(os.fspath(folder)):
            raise ValueError(f"cache_dir ({os.fspath(folder)!r}) must be a local folder")
        self.folder = Path(folder)
        self.max_bytes = DEFAULT_CACHE_BYTES if max_bytes is None else int(max_bytes)
        if self.max_bytes <= 0:
            raise ValueError(f"cache_max_bytes ({max_bytes}) must be > 0")
        self._pid = -1
        self._estimate = 0
        self._added = 0
        self._count = 0
        # the schemes of this folder's copies, for the errors that name one (`url_of_copy`)
        self._named = _COPIES.setdefault(str(self.folder), {})
        _COPIES[os.path.abspath(self.folder)] = self._named

    def __reduce__(self) -> tuple[type[LocalCache], tuple[Path, int]]:
        return (LocalCache, (self.folder, self.max_bytes))  # a new process's counts start afresh

    def __repr__(self) -> str:
        return f"LocalCache({str(self.folder)!r}, max_bytes={self.max_bytes})"

    def path_of(self, location: Location, version: str | None = None) -> Path:
        """Where the copy of `location` as it is now lives in the cache (whether or not it is
        there): `<key>~<version hash>`, the version learned once per process (`version_of`),
        or `version` where the caller knows it (`node_copy`: no request)."""
        where = endpoint(location.storage_options)
        protocol = scheme(location.url)
        tag = hashlib.sha1(f"{protocol}|{where}".encode()).hexdigest()[:12]
        self._named[tag] = protocol
        rest = redact_url(location.url).split("://", 1)[1].split("?", 1)[0]
        parts = [p for p in rest.split("/") if p not in ("", ".", "..")]
        if version is None:
            version = version_of(location)
        version = hashlib.sha1(version.encode()).hexdigest()[:12]
        parts[-1] = f"{parts[-1]}{VERSION_MARK}{version}"
        return self.folder.joinpath(tag, *parts)

    def get(self, location: Location) -> Path:
        """The local copy of `location`, fetched whole on a miss (VideoReadError as the
        location's reads raise: "not found", ...)."""
        path = self.path_of(location)
        try:
            os.utime(path)  # a hit: now the most recently used
            return path
        except FileNotFoundError:
            pass
        self.put(path, location.get_file)
        return path

    def read_many(self, locations: Sequence[Location]) -> list[bytes]:
        """The contents of each location: hits read from the cache, misses fetched
        concurrently (`read_many`) and stored; the versions this process has not learned yet
        asked in one concurrent round first."""
        run_concurrently(version_of, [loc for loc in locations if _VERSIONS.get(loc.url) is None])
        out = [b""] * len(locations)
        missing = []
        for i, loc in enumerate(locations):
            path = self.path_of(loc)
            try:
                os.utime(path)
                out[i] = path.read_bytes()
            except FileNotFoundError:
                missing.append(i)
        got = read_many([locations[i] for i in missing])  # none: [], no request
        for i, data in zip(missing, got, strict=True):
            out[i] = data
            self.put(self.path_of(locations[i]), partial(Path.write_bytes, data=data))
        return out

    def put(self, path: Path, write: Callable[[Path], object]) -> None:
        """`path` in the cache, as `write(part)` writes it: under a name of its own, renamed
        over `path` when complete (see the class docstring)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self._count += 1
        part = path.with_name(f".{path.name}.{os.getpid()}.{self._count}{PART_SUFFIX}")
        try:
            write(part)
            size = os.stat(part).st_size
            os.replace(part, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(part)
        self._note_added(size)

    def _note_added(self, size: int) -> None:
        if self._pid != os.getpid():
            self._pid, self._estimate, self._added = os.getpid(), -1, 0
        self._added += 1
        if self._estimate >= 0:
            self._estimate += size
        if self._estimate < 0 or self._estimate > self.max_bytes or self._added >= _RESCAN_EVERY:
            self._estimate = self.evict()
            self._added = 0

    def evict(self) -> int:
        """List the folder, remove the least recently used files beyond the bound (and stale
        partial downloads); return the bytes left."""
        files: list[tuple[float, int, str]] = []
        total = 0
        now = time.time()
        for dirpath, _dirs, names in os.walk(self.folder):
            for name in names:
                full = os.path.join(dirpath, name)
                try:
                    st = os.stat(full)
                except FileNotFoundError:
                    continue  # removed by another process meanwhile
                if name.endswith(PART_SUFFIX):
                    if now - st.st_mtime > _STALE_PART_S:
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(full)
                    continue
                files.append((st.st_mtime, st.st_size, full))
                total += st.st_size
        if total <= self.max_bytes:
            return total
        target = int(self.max_bytes * 0.9)
        for _mtime, size, full in sorted(files):
            if total <= target:
                break
            with contextlib.suppress(FileNotFoundError):
                os.unlink(full)
            total -= size
        return total


#: The bound of `temporary_cache`.
TEMPORARY_CACHE_BYTES = 4 << 30
_TEMPORARY: list[LocalCache] = []


def temporary_cache() -> LocalCache:
    """The cache of whole objects that readers needing a local file use when no `cache_dir`
    is given: `<tempdir>/vidload-cache-<uid>`, bounded by `TEMPORARY_CACHE_BYTES`, shared by
    this user's processes (and kept between runs, like any cache)."""
    if not _TEMPORARY:
        import tempfile

        uid = os.getuid() if hasattr(os, "getuid") else 0
        folder = Path(tempfile.gettempdir()) / f"vidload-cache-{uid}"
        _TEMPORARY.append(LocalCache(folder, TEMPORARY_CACHE_BYTES))
    return _TEMPORARY[0]
