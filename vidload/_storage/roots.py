"""A source's root, local folder or bucket prefix, written once against its `Location`: a
source asks it what it needs (the container of a video, a folder's listing, a clip's frame
files, what to hint for read-ahead) and never which kind it holds, and the root asks its
`Location` what it can do: a local folder (`local_file()`) is read by the fast path, a root
whose reads wait on a network (`over_network`) plans a batch's reads into one round, through
a `LocalCache` of whole objects where it has a `cache_dir`.

Names below are relative to the root, `/`-separated. A video's container has two possible
names (`vidload._layout`: `a/x1.h5`, or `a/x1.mp4.h5` where two ids shared a stem): a local root
looks for the full id's name first (one stat, per call: the answer can change), a bucket tries
the name without the video extension first (convert writes only one of the two) and, where it
is not there, reads the root's manifest (once per process: convert recorded every name in its
`container` column) before trying the full id's, and keeps the name it found for the process.

Where the root's manifest names the containers (`vidload._layout.ContainerNames`, handed over
by the source's `use_containers`), a listed video's container is the name it records, on
either root: no stat, no request, no listing to find it.

A local root's per-clip calls (`local_name`, `handle_key`, `read_files`) work on strings,
never pathlib: two `Path`s and a comparison cost ~15 us per clip
(`vidload._layout.found_container_name`); `open_container` hands its opener the one
`Location` of the name found, which the opener asks for its `local_file()`.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from vidload._layout import (
    MANIFEST_NAME,
    ContainerNames,
    container_name,
    found_container_name,
    join_root,
    recorded_names,
)
from vidload._lru import ProcessLRU
from vidload._storage.batch import read_many
from vidload._storage.cache import LocalCache, temporary_cache
from vidload._storage.location import Location
from vidload.errors import VideoReadError

__all__ = ["SourceRoot"]

T = TypeVar("T")
#: Opens a file or object: a local one (`local_file()`) by the fast path, else by ranges.
Open = Callable[[Location], T]
#: Reads a local frame file: (path, frame index) -> its bytes.
ReadLocal = Callable[[str, int], bytes]
#: The file name of a frame, from its index.
NameOf = Callable[[int], str]
#: Files read: (their contents, what names each).
Files = tuple[list[bytes], list[str]]
#: `storage_options`, `cache_dir`.
Options = Mapping[str, Any] | None
CacheDir = str | os.PathLike[str] | None
#: Folders of a bucket whose listing a process keeps (`SourceRoot.first_existing`).
_LISTINGS = 256
#: One read of a bucket root's manifest at a time (`SourceRoot._names_at_miss`: a batch's
#: containers are opened in threads).
_MISS_LOCK = threading.Lock()


class SourceRoot:
    """Where a source's files are (see the module docstring). Picklable.

    Args:
        root: a local folder or a URL.
        storage_options, cache_dir, cache_max_bytes: for a root whose reads wait on a network
            (a URL): its filesystem's options, and a local folder that keeps a copy of each
            object read (`LocalCache`); a ValueError for a local folder.
    """

    #: The container names the root's manifest records (`use_names`), None: found by the rules.
    names: ContainerNames | None = None

    def __init__(
        self,
        root: str | os.PathLike[str] | Location,
        storage_options: Options = None,
        cache_dir: CacheDir = None,
        cache_max_bytes: int | None = None,
    ) -> None:
        self.location = Location(root, storage_options)
        if not self.location.over_network and storage_options:
            raise ValueError(f"storage_options are for URLs; {self.location} is a local path")
        if not self.location.over_network and cache_dir is not None:
            raise ValueError(f"cache_dir is for URL roots; {self.location} is a local path")
        self.cache = None if cache_dir is None else LocalCache(cache_dir, cache_max_bytes)
        #: The local folder, read by the fast path (its `str`: the per-clip calls), else None.
        self._path = self.location.local_file()
        self._str = None if self._path is None else str(self._path)
        #: Where names are found by requests: the container name found for each full-id name.
        self.found_names: dict[str, str] = {}
        self._first: ProcessLRU[tuple[str, ...], str] = ProcessLRU(None)
        self._listings: ProcessLRU[str, tuple[frozenset[str] | None]] = ProcessLRU(_LISTINGS)
        # the root's manifest's names, read at the first miss (`_names_at_miss`), per process
        self._tried: ProcessLRU[str, tuple[ContainerNames | None]] = ProcessLRU(1)

    def __str__(self) -> str:
        return str(self.location)

    def location_of(self, rel: str) -> Location:
        """The `Location` of `rel` under the root."""
        return self.location / rel

    def use_names(self, names: ContainerNames | None) -> None:
        """Take each listed video's container by the name its manifest records (module doc)."""
        self.names = names

    def named(self, video_id: str) -> str | None:
        """The container name the manifest records for `video_id`, else None."""
        names = self.names
        return None if names is None else names.get(video_id)

    @property
    def reads_wait(self) -> bool:
        """Whether reads wait on a network (a URL root without a cache: no local file, no
        cached copy to read instead): where a batch's reads are worth planning into one round
        (a source's `fetch_plan`, after its `prepare` opened the batch's videos at once; both
        do nothing elsewhere), and a worker's next batch worth fetching while it decodes the
        current one (`make_loader(fetch_ahead=None)`)."""
        return self.location.over_network and self.cache is None

    def local(self, rel: str) -> Path | None:
        """The local file to read for `rel` by the fast path (under a local root, or the
        cached copy of a remote object), or None: read `location_of(rel)` by byte ranges."""
        if self._path is not None:
            return self._path / rel
        return None if self.cache is None else self.cache.get(self.location / rel)

    def local_copy(self, rel: str) -> Path:
        """A local file for `rel` in any case: under a local root, else the object's copy in
        the cache, or (no `cache_dir`) in this user's shared temporary cache
        (`temporary_cache`), for readers that need a local file (FFmpeg's seeks)."""
        return self.local(rel) or temporary_cache().get(self.location / rel)

    def hints(self, make: Callable[[], list[T]]) -> list[T]:
        """Read-ahead hints (local files, byte ranges of them): `make()` under a local root;
        none elsewhere (nothing local to hint)."""
        return [] if self._path is None else make()

    def local_name(self, video_id: str, suffix: str) -> str:
        """The local path of `video_id`'s container as a string (`path()` of a source):
        ValueError for a URL root, which has no local paths."""
        root = self._str
        if root is None:
            raise ValueError(f"{self.location}: a URL root has no local paths")
        name = self.named(video_id) if self.names is not None else None
        return join_root(root, name or found_container_name(root, video_id, suffix))

    def local_container(self, video_id: str, suffix: str) -> str | None:
        """`local_name` under a local root (a source's per-clip path: a string, no `Location`
        to make), None at a URL."""
        return None if self._str is None else self.local_name(video_id, suffix)

    def handle_key(self, video_id: str, suffix: str) -> str:
        """What a per-process cache of open containers keeps `video_id`'s under: its local
        path (`local_name`, what the per-clip lookup computes), or at a URL the id itself
        (the object's name is found when it is opened)."""
        return self.local_container(video_id, suffix) or video_id

    def container_key(self, video_id: str, suffix: str, probe: Callable[[str], object]) -> str:
        """The name of `video_id`'s container (a file, or a folder with `suffix` ""): as
        `find` names it; `probe` runs only where names are found by requests, once."""
        known = self._known_name(video_id, suffix)
        return known if known is not None else self.find(video_id, suffix, probe)[0]

    def _known_name(self, video_id: str, suffix: str) -> str | None:
        """`video_id`'s container name where it is known without a request: the name the
        manifest records; under a local root the one found by a stat; else the name an open
        found (`found_names`), None before one did."""
        known = self.named(video_id)
        if known is None and self._str is not None:
            return found_container_name(self._str, video_id, suffix)
        if known is None:
            known = self.found_names.get(container_name(video_id, suffix, keep_extension=True))
        return known

    def find(self, video_id: str, suffix: str, probe: Callable[[str], T]) -> tuple[str, T]:
        """(name of `video_id`'s container, `probe(name)`): the name the manifest records;
        else under a local root the full id's name where it exists (a stat, per call), else
        the short one; else the short name, then (not found) the name the root's manifest
        records, read at this first miss (once per process: `_names_at_miss`), else the full
        id's, the name found kept in `found_names`."""
        recorded = self.named(video_id)
        if self._str is not None:
            name = recorded or found_container_name(self._str, video_id, suffix)
            return name, probe(name)
        full = container_name(video_id, suffix, keep_extension=True)
        first = recorded or container_name(video_id, suffix)
        try:
            out = first, probe(first)
        except VideoReadError as e:
            if recorded is not None or full == first or e.reason != "not found":
                raise
            recorded = self.named(video_id) if self._names_at_miss(suffix) else None
            second = recorded if recorded and recorded != first else full
            try:
                out = second, probe(second)
            except VideoReadError as e2:
                if e2.reason != "not found":
                    raise
                raise e from None
        self.found_names[full] = out[0]
        return out

    def _names_at_miss(self, suffix: str) -> bool:
        """Whether the root's manifest names containers of `suffix` (`use_names` then holds
        them): read at the first container not found under its stem's name (a collided stem,
        or a missing one), once per process; names handed over before are kept as they are."""
        if self.names is not None:
            return False  # handed over: a video they do not list is found by the rules
        tried = self._tried.get_or_make(
            "manifest", lambda: (self._manifest_names(suffix),), _MISS_LOCK
        )
        if tried[0] is None:
            return False
        self.names = tried[0]
        return True

    def _manifest_names(self, suffix: str) -> ContainerNames | None:
        """The container names of `suffix` the root's manifest records, None without them."""
        recorded = None
        try:
            raw = (self.location / MANIFEST_NAME).read_optional()
            recorded = None if raw is None else recorded_names(raw, self.location)
        except VideoReadError:
            pass  # unreadable here: the rules, as without one
        except ValueError as e:  # not a manifest vidload wrote: said, not used
            warnings.warn(f"{e}: its container names are not used", stacklevel=2)
        return ContainerNames.of(recorded, suffix) if recorded else None

    def open_file(self, rel: str, open_at: Open[T]) -> T:
        """`open_at(location)` of the file `rel`: a local file (`local_file()`) under a local
        root or in the cache, else the object in the bucket."""
        where = self.location / rel
        return open_at(where if self.cache is None else Location(self.cache.get(where)))

    def open_container(self, video_id: str, suffix: str, open_at: Open[T]) -> T:
        """`open_file` of `video_id`'s container, named as `find` names it."""
        if self._str is not None:  # the per-clip path: no closure, no search
            return open_at(Location(self.local_name(video_id, suffix)))
        return self.find(video_id, suffix, lambda name: self.open_file(name, open_at))[1]

    def container(self, video_id: str, suffix: str) -> Location:
        """Where `video_id`'s container is named, for its sidecar files: its local file, or
        its object in the bucket (the name found by the last open, else the short name)."""
        return self.location / (
            self._known_name(video_id, suffix) or container_name(video_id, suffix)
        )

    def read_files(self, folder: str, rows: list[int], name: NameOf, read: ReadLocal) -> Files:
        """(contents, what names each) of the files of frames `rows` in `folder` (frame i in
        `name(i)`): each by `read(path, i)` under a local root; at a URL fetched concurrently
        (through the cache when there is one)."""
        if self._str is not None:
            base = join_root(self._str, folder) + "/"
            paths = [base + name(i) for i in rows]
            return [read(p, i) for p, i in zip(paths, rows, strict=True)], paths
        locations = [self.location / f"{folder}/{name(i)}" for i in rows]
        data = self.cache.read_many(locations) if self.cache is not None else read_many(locations)
        return list(data), [str(loc) for loc in locations]

    def first_existing(self, names: Sequence[str]) -> str:
        """The first of `names` that exists under the root, else `names[0]`: local, a stat
        each (per call); at a URL, from one listing of the folder per process (kept with the
        answer), and `names[0]` where the store cannot list (HTTP)."""
        if self._str is not None:
            root = self._str
            return next((n for n in names if os.path.exists(join_root(root, n))), names[0])
        return self._first.get_or_make(tuple(names), lambda: self._first_listed(names))

    def _first_listed(self, names: Sequence[str]) -> str:
        """At a URL, the first of `names` in its folder's listing (`_listed`, kept per
        process), else `names[0]`."""
        folder = names[0].rpartition("/")[0]
        if len(names) == 1:
            return names[0]
        listed = self._listings.get_or_make(folder, lambda: (self._listed(folder),))[0]
        if listed is None:
            return names[0]
        return next((n for n in names if n.rsplit("/", 1)[-1] in listed), names[0])

    def _listed(self, folder: str) -> frozenset[str] | None:
        """The names in `folder` (empty where there is no such folder: the first name's read
        says so), None where the store cannot list (HTTP)."""
        where = self.location / folder if folder else self.location
        if not where.can_list:
            return None
        try:
            return frozenset(where.list_dir())
        except VideoReadError:
            return frozenset()
