"""`RemoteLocation`: an object or prefix in a bucket (`s3://`, `gs://`, `http(s)://`, any
scheme fsspec knows), read by byte ranges through this process's fsspec filesystem
(`filesystems.filesystem`), every failure through `faults.call`.

Reads: `read_ranges` coalesces nearby ranges (`ranges.COALESCE_GAP`) and fetches what is left
concurrently (`byteranges.cat_spans`: one round trip for a clip's frames; over HTTP one
request for all of them, `byteranges`); `batch.fetch` does the same for the ranges of many
objects at once (a batch's clips: one round trip for the batch).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any, TypeVar

from vidload._storage import byteranges, faults, http_adapter, objectstore, s3_adapter
from vidload._storage.batch import concurrent_group, held
from vidload._storage.filesystems import (
    Span,
    filesystem,
    options_key,
    redact_url,
    scheme,
)
from vidload._storage.location import IMPLEMENTATIONS, Location, Stat
from vidload._storage.ranges import COALESCE_GAP, coalesce, split_blocks
from vidload.errors import VideoReadError

__all__ = ["STATS", "RemoteLocation"]

T = TypeVar("T")

#: Requests this process sent for remote reads and the bytes they returned (for `vidload
#: bench --bucket`; a request retried counts once per attempt), and the rounds it waited: a
#: call that sends requests and waits for them is one, and the calls one `run_concurrently`
#: runs in threads at once (a batch's heads) are one together. Not thread-safe: a count.
STATS = {"requests": 0, "bytes": 0, "rounds": 0}
#: The concurrent group whose round was counted last (None: a call of none).
_COUNTED_GROUP: list[int | None] = [None]


def count(requests: int, data: int = 0) -> None:
    STATS["requests"] += requests
    STATS["bytes"] += data
    group = concurrent_group()
    if group is None or group != _COUNTED_GROUP[0]:  # a round of its own, or a new group's
        _COUNTED_GROUP[0] = group
        STATS["rounds"] += 1


def _version(info: Mapping[str, Any]) -> str:
    """An object's version from fsspec's `info`: its ETag (S3, HTTP), generation (GCS), else
    size and modification time."""
    for key in ("ETag", "etag", "generation", "VersionId"):
        value = info.get(key)
        if value:
            return str(value).strip('"')
    mtime = info.get("LastModified") or info.get("mtime") or info.get("updated") or ""
    return f"{info.get('size')}:{mtime}"


class RemoteLocation(Location):
    """A URL as a `Location` (see the module docstring)."""

    __slots__ = ("_path", "_protocol", "_seen", "_versioned")
    _path: str
    _protocol: str
    #: `versioned()`: reads report their answers' versions, and must all report one
    _versioned: bool
    #: the version a versioned location's reads reported first (None: none yet)
    _seen: str | None

    def _init(self, url: str) -> None:
        self._protocol = scheme(url)
        self._url = url.rstrip("/") if url.count("/") > 3 else url
        self._path = ""
        self._versioned = False
        self._seen = None

    def local_file(self) -> Path | None:
        return None

    @property
    def parent(self) -> Location:
        head = self._url.rstrip("/").rsplit("/", 1)[0]
        return RemoteLocation(head, self._options)

    def __truediv__(self, rel: str | os.PathLike[str]) -> Location:
        rel = os.fspath(rel).replace(os.sep, "/").strip("/")
        return RemoteLocation(f"{self._url.rstrip('/')}/{rel}" if rel else self._url, self._options)

    def __str__(self) -> str:
        return redact_url(self._url)

    # -- the filesystem

    def fs(self) -> tuple[Any, str]:
        """(filesystem, its path for this object)."""
        fs = filesystem(self._protocol, self._options)
        if not self._path:
            self._path = fs._strip_protocol(self._url)
        return fs, self._path

    def call(self, what: str, fn: Callable[[], T], *, index: int | None = None) -> T:
        """`fn()`, its errors as VideoReadError naming this URL; transient ones retried."""
        return faults.call(self, self._options, what, fn, index=index)

    # -- queries

    def exists(self) -> bool:
        fs, path = self.fs()
        return self.call("check", lambda: bool(fs.exists(path)))

    def is_file(self) -> bool:
        fs, path = self.fs()
        return self.call("check", lambda: bool(fs.isfile(path)))

    def is_dir(self) -> bool:
        fs, path = self.fs()
        return self.call("check", lambda: bool(fs.isdir(path)))

    def read_ends(self, head: int, tail: int) -> tuple[Stat, bytes, bytes]:
        """Both ends in one round of two GETs (the tail a suffix range), the size and the
        version from their answers (`_cat`); a filesystem whose answers say no size (not S3,
        HTTP or obstore's) has `stat` ask it in the same round, and a server's "*" after."""
        fs, path = self.fs()
        spans: list[Span] = [(path, 0, head)] + ([(path, -tail, None)] if tail else [])

        def ends() -> list[Any]:
            got = self._cat(spans)
            failed = next((a for a in got if not isinstance(a, tuple)), None)
            if failed is not None:
                raise failed
            return got

        if (
            objectstore.reader(self._protocol, self._options)
            or s3_adapter.is_s3(fs)
            or http_adapter.is_http(fs)
        ):
            got = self.call("read the ends", ends)  # answers that say the size
            asked = None
        else:  # gcs and others answer bodies only: their size asked in the same round
            with ThreadPoolExecutor(1) as pool:
                asked = pool.submit(self.stat)
                got = self.call("read the ends", ends)
        (first, version, size), last = got[0], got[-1][0] if tail else b""
        if size is None:
            return asked.result() if asked is not None else self.stat(), first, last
        return Stat(size, version.strip('"') if version else f"{size}:"), first, last

    def stat(self) -> Stat:
        fs, path = self.fs()

        def info() -> dict[str, Any]:
            count(1)
            try:
                return fs.info(path)
            except FileNotFoundError:
                # fsspec's HTTP info answers any failure (a 503 too) as "not found": a read of
                # one byte tells a missing object (FileNotFoundError) from a failed request
                fs.cat_file(path, start=0, end=1)
                raise ConnectionError("the size request failed") from None

        got = self.call("get the size", info)
        if got.get("type") == "directory":
            raise VideoReadError(self, "a folder, not a file")
        if got.get("size") is None:
            raise VideoReadError(self, "the server does not say the size")
        return Stat(int(got["size"]), _version(got))

    def list_dir(self) -> dict[str, int | None]:
        fs, path = self.fs()

        def ls() -> list[dict[str, Any]]:
            count(1)
            if self._protocol in ("http", "https") and not path.endswith("/"):
                # a server answers a folder's URL without the slash by a redirect to the
                # slash form (nginx, Apache): a second round trip per listing
                try:
                    return fs.ls(path + "/", detail=True)
                except FileNotFoundError:
                    count(1)  # not a folder (a file, or nothing): its own answer
            return fs.ls(path, detail=True)

        entries = self.call("list the folder", ls)
        if not entries:
            raise VideoReadError(self, "not found")
        result: dict[str, int | None] = {}
        for item in entries:
            name = str(item["name"]).rstrip("/").rsplit("/", 1)[-1]
            if item.get("type") == "directory":
                result[name] = None
            else:
                size = item.get("size")
                result[name] = -1 if size is None else int(size)
        if list(result) == [self.name] and entries[0].get("type") != "directory":
            raise VideoReadError(self, "not a folder")
        return result

    @property
    def can_list(self) -> bool:
        return self._protocol not in ("http", "https")

    over_network = True

    def walk_files(self) -> list[str]:
        fs, path = self.fs()
        names = self.call("list the folder", lambda: fs.find(path))
        prefix = path.rstrip("/") + "/"
        return sorted(n[len(prefix) :] for n in names if n.startswith(prefix))

    # -- reads

    def read_bytes(self) -> bytes:
        return self._read(None, "read")[0]

    def read_ranges(
        self, ranges: Sequence[tuple[int, int]], *, index: int | None = None
    ) -> list[bytes]:
        return self._read(ranges, "read byte ranges", index) if ranges else []

    def _read(
        self, ranges: Sequence[tuple[int, int]] | None, what: str, index: int | None = None
    ) -> list[bytes]:
        """The whole object (`ranges` None) or its ranges: what `batch.holding` holds of them,
        else one round (`_fetch_group`), its failed requests retried as `call` retries them."""
        h = held(self._url)
        if h is not None:
            got = [h.whole] if ranges is None else [h.get(a, b) for a, b in ranges]
            if all(g is not None for g in got):
                return got  # type: ignore[return-value]

        def attempt() -> list[bytes] | VideoReadError:
            answer = self._fetch_group([(self, ranges)], retry=False)[0]
            if not isinstance(answer, (list, VideoReadError)):
                raise answer  # a failed request: `call` retries it or says why
            return answer

        answer = self.call(what, attempt, index=index)
        if isinstance(answer, VideoReadError):  # another version answered (`versioned`)
            raise answer
        return answer

    def _cat(self, spans: Sequence[Span]) -> list[Any]:
        """Each `filesystems.Span` of this location's filesystem in one concurrent round,
        counted: its `filesystems.Answer` (bytes, the version and size the answer reported),
        or the exception in a failed one's place.
        The one place that picks the client: obstore where it serves (`objectstore`), over
        HTTP an object's ranges in one request where its server serves that, else the
        filesystem's own client (`byteranges.cat_spans`)."""
        fast = objectstore.reader(self._protocol, self._options)  # where obstore serves
        got: list[Any]
        if fast is not None:
            got, sent = fast.cat(spans), len(spans)
        else:
            got, sent = byteranges.cat_spans(self.fs()[0], spans)
        count(sent, sum(len(r[0]) for r in got if isinstance(r, tuple)))
        return got

    # -- versions (`versioned`)

    def versioned(self) -> Location:
        """This object, its range reads checked against its version: each read takes the
        version the store reports with every answer (`byteranges.cat_spans`: ETag), the
        first one it meets is kept, and a read answered from another version raises
        `VideoReadError(location, faults.CHANGED)`: the object was rewritten since it was
        first read. No request of its own: the GETs report it. Where the filesystem reports no
        version (not S3 or HTTP) nothing is checked. Per process (not kept by pickling)."""
        loc = RemoteLocation(self._url, self._options)
        loc._versioned = True
        return loc

    def _version_error(self, versions: Sequence[str | None]) -> VideoReadError | None:
        """CHANGED where `versions` (reported by this location's answers) differ from each
        other or from the first one seen; else None, the first one now seen."""
        seen = {v for v in versions if v is not None}
        if self._seen is not None:
            seen.add(self._seen)
        if len(seen) > 1:
            return VideoReadError(self, faults.CHANGED)
        if seen and self._seen is None:
            self._seen = seen.pop()
        return None

    def open(self, *, block_size: int = 4 << 20) -> IO[bytes]:
        """Errors from the returned file's reads are fsspec's own."""
        fs, path = self.fs()
        return self.call(
            "open",
            lambda: fs.open(path, "rb", block_size=block_size, cache_type="readahead"),
        )

    # -- writes

    def put_file(self, local: str | os.PathLike[str]) -> None:
        fs, path = self.fs()
        self.call("upload", lambda: fs.put_file(os.fspath(local), path))

    def get_file(self, local: str | os.PathLike[str]) -> None:
        fs, path = self.fs()
        self.call("download", lambda: fs.get_file(path, os.fspath(local)))
        count(1, os.stat(local).st_size)

    def write_bytes(self, data: bytes) -> None:
        fs, path = self.fs()
        self.call("write", lambda: fs.pipe_file(path, data))

    def create_bytes(self, data: bytes) -> bool:
        """fsspec's `mode="create"`, which s3fs sends as `If-None-Match: *` (honoured by AWS
        S3 since 2024-08, MinIO, moto; a server that ignores the header overwrites, and no
        lock holds there) and gcsfs as `ifGenerationMatch=0`. A filesystem without exclusive
        creation raises VideoReadError saying so, never a plain overwrite. After a transient
        failure the retry may find the object the failed attempt wrote: the caller tells its
        own content from another writer's (the lock compares its token)."""
        fs, path = self.fs()

        def create() -> bool:
            try:
                fs.pipe_file(path, data, mode="create")
            except FileExistsError:
                return False
            except TypeError as e:  # an fsspec filesystem without the mode argument
                raise ValueError(
                    f"{type(fs).__name__} cannot create an object exclusively ({e})"
                ) from None
            return True

        return self.call("create exclusively", create)

    def delete(self, *, recursive: bool = False) -> None:
        fs, path = self.fs()
        try:
            self.call("delete", lambda: fs.rm(path, recursive=recursive))
        except VideoReadError as e:
            if e.reason != "not found":
                raise

    # -- many at once: one concurrent round per filesystem

    def _group(self) -> tuple[str, ...]:
        return ("remote", self._protocol, options_key(self._options))

    @classmethod
    def _fetch_group(
        cls,
        requests: Sequence[tuple[Location, Sequence[tuple[int, int]] | None]],
        *,
        retry: bool = True,
    ) -> list[list[bytes] | Exception]:
        """Every location's ranges (or whole object), coalesced per object, in one concurrent
        round (`_cat`); a location whose requests failed is read again on its own (its retries
        and its own error, a VideoReadError naming it, returned in its place), or without
        `retry` (`_read`, which retries) its first failure is returned."""
        locs: list[RemoteLocation] = [loc for loc, _ in requests]  # type: ignore[misc]
        merged = [None if r is None else coalesce(r, COALESCE_GAP) for _, r in requests]
        spans: list[Span] = [
            (loc.fs()[1], a, b)
            for loc, m in zip(locs, merged, strict=True)
            for a, b in ([(None, None)] if m is None else m)
        ]
        if not spans:
            return [[] for _ in requests]
        got = locs[0]._cat(spans)
        out: list[list[bytes] | Exception] = []
        k = 0
        for loc, (_, ranges), m in zip(locs, requests, merged, strict=True):
            n = 1 if m is None else len(m)
            answers, k = got[k : k + n], k + n
            failed = next((a for a in answers if not isinstance(a, tuple)), None)
            if failed is not None:
                out.append(loc._fetch_alone(ranges) if retry else failed)
                continue
            blocks = [a[0] for a in answers]
            error = loc._version_error([a[1] for a in answers]) if loc._versioned else None
            out.append(
                error
                or (blocks if ranges is None or m is None else split_blocks(ranges, m, blocks))
            )
        return out

    @classmethod
    def _put_group(cls, files: Sequence[tuple[str, Location]]) -> None:
        if len(files) == 1:
            return super()._put_group(files)
        first = files[0][1]
        assert isinstance(first, RemoteLocation)
        fs, _ = first.fs()
        lpaths = [local for local, _ in files]
        rpaths = [loc.fs()[1] for _, loc in files]  # type: ignore[attr-defined]
        first.call("upload", lambda: fs.put(lpaths, rpaths))


IMPLEMENTATIONS["remote"] = RemoteLocation
