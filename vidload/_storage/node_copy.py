"""One local copy per machine of an object every process reads, found with no request.

The sidecar of heads (`vidload.sources._heads`) is read by every process of a run: each rank
and each DataLoader worker. At Kinetics size it is hundreds of MB, so it is fetched once per
machine into a local folder (a `LocalCache`'s: the source's `cache_dir`, else this user's
temporary cache, `temporary_cache`) and every process reads the same file there (the page
cache holds it once), by rows (`vidload.sources._heads_file`).

Why not `LocalCache.get`: it asks the store for the object's version once per process (one
request), so that a rewritten object is fetched again. Here a second process must send no
request at all, so the copy is found by a pointer: beside the copies (`<key>~<version hash>`,
`LocalCache.path_of`), `<key>~latest` holds the version of the newest copy this machine
fetched. A reader follows it without a lock and without a request; the version is asked of
the store only by the process that fetches (no pointer yet, or its copy evicted), or when a
caller has seen that its copy is stale (`node_copy(..., stale=version)`: for the heads, a
container whose head fails its check, or one the copy does not list), so that a rewritten
sidecar is fetched again, once per machine, and read under its new version's name.

Several processes at once: the fetch is made under an exclusive `flock` of `.<key>~lock` (so
that the workers of a cold start wait for one download instead of making one each), written
under a name of its own and renamed over its final name when complete (`Location.get_file`),
and the pointer replaced the same way (`LocalCache.put`): a reader sees a whole copy and a
whole pointer or none.
Without `fcntl` (Windows) there is no lock: each process that finds no pointer fetches, and
the last rename wins with the same bytes. A copy the cache evicts while a process reads it
stays readable to that process (POSIX); the next process that follows the pointer to it finds
it gone and fetches it again.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from vidload._storage.cache import PART_SUFFIX, VERSION_MARK, LocalCache
from vidload._storage.location import Location
from vidload.errors import VideoReadError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["node_copy"]

#: Ends the name of the file that holds the version of the newest copy.
LATEST = "latest"


def _named(location: Location, cache: LocalCache, tag: str) -> Path:
    """`<key>~<tag>` beside the copies of `location` in `cache`."""
    path = cache.path_of(location, "")
    return path.with_name(f"{path.name.rsplit(VERSION_MARK, 1)[0]}{VERSION_MARK}{tag}")


def _follow(location: Location, cache: LocalCache, pointer: Path) -> tuple[Path, str] | None:
    """(the copy the pointer names, its version), None where either is missing."""
    try:
        version = pointer.read_text()
    except FileNotFoundError:
        return None
    path = cache.path_of(location, version)
    try:
        os.utime(path)  # a hit: now the most recently used (`LocalCache.evict`)
    except FileNotFoundError:
        return None
    except OSError:  # a read-only cache folder: read it as it is
        if not path.is_file():
            return None
    return path, version


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if need be): one fetcher at a time."""
    if fcntl is None:  # pragma: no cover - Windows
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _fetch(location: Location, cache: LocalCache) -> tuple[Path, str]:
    """Fetch `location` into `cache` under its version's name; (its path, the version).

    Downloaded first, its version asked after (the GET of a missing object answers "not
    found" with no more request; asked first, `fs.info` of a missing S3 key lists its prefix
    too): a copy whose size is not the one the version came with was rewritten meanwhile and
    is fetched again."""
    for attempt in range(3):
        part = cache.folder / f".fetch.{os.getpid()}.{attempt}{PART_SUFFIX}"
        location.get_file(part)
        st = location.stat()
        if os.path.getsize(part) == st.size:
            path = cache.path_of(location, st.version)
            path.parent.mkdir(parents=True, exist_ok=True)
            os.replace(part, path)
            return path, st.version
        os.unlink(part)
    raise VideoReadError(location, "rewritten while it was fetched, three times")


def node_copy(
    location: Location, cache: LocalCache, *, stale: str | None = None
) -> tuple[Path, str]:
    """(the local copy of the remote object `location` in `cache`, its version): the one
    this machine fetched last, with no request where it is there; else fetched (`_fetch`:
    the download, then its version). `stale`: the version of a copy the caller
    found stale; a newer copy another process fetched meanwhile is taken, else the version
    is asked of the store and the object fetched again where it changed. VideoReadError as
    the location's reads raise ("not found", ...)."""
    pointer = _named(location, cache, LATEST)
    if stale is None:
        got = _follow(location, cache, pointer)
        if got is not None:
            return got
    with _locked(pointer.with_name(f".{_named(location, cache, 'lock').name}")):
        got = _follow(location, cache, pointer)
        if got is not None and got[1] != stale:
            return got  # fetched by another process while this one waited
        if stale is None:
            path, version = _fetch(location, cache)
        else:  # a copy is here: its version first, fetched only where it changed
            version = location.stat().version
            path = cache.path_of(location, version)
            if not path.is_file():
                path, version = _fetch(location, cache)
        cache.put(pointer, lambda part: part.write_text(version))
        return path, version
