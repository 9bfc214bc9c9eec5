"""One way into storage: a path a user gives, local or a URL, as what a reader reads.

`Location(target, storage_options)` names one file or folder. A local path (or `file://`) keeps
the fast path the sources measured (`os.open`/`os.pread`/`mmap` on `local_path`); a URL
(`s3://`, `gs://`, `http(s)://`, any scheme fsspec knows) goes through fsspec:

- resolved as `fsspec.core.url_to_fs` does, the filesystem built once per process and options
  (`_filesystem`) and rebuilt after a fork: fsspec's async filesystems (s3fs, gcsfs, HTTP) run
  their requests on an event-loop thread that a forked child does not have, and refuse to be
  used there ("not fork-safe"); fsspec drops its own instance cache in a child, and so does
  this module's;
- `storage_options` go to the filesystem unchanged (credentials, `endpoint_url`,
  `client_kwargs`, ...); without them s3fs/botocore read the standard AWS configuration as
  they always do (environment, `~/.aws`, `AWS_ENDPOINT_URL`, instance roles);
- a URL is never taken as a local path: a scheme whose filesystem is not installed raises
  `MissingExtraError` naming the extra (`pip install "vidload[s3]"`).

Reads of a remote object: `read_ranges` coalesces nearby ranges (gaps up to `COALESCE_GAP`)
and fetches what is left concurrently (`cat_ranges` on an async filesystem: one round trip
for a clip's frames); `read_many` fetches several whole objects concurrently (a JPEG clip).

Faults (`_call`): a missing object is `VideoReadError(url, "not found ...")`, denied access
says "access denied", and transient failures (HTTP 5xx/429/408, connection reset, timeouts)
are retried `RETRIES` more times with backoff (`BACKOFF_S`), then a `VideoReadError` saying
how many attempts failed. (For S3 these replace s3fs's own retry loop; botocore still
retries within each attempt as the AWS configuration says: `AWS_MAX_ATTEMPTS`, `retry_mode`.)
Errors and `str(location)` show the URL without user info or query string, and any storage
option value longer than 5 characters (and the AWS_* secrets of the environment) is blanked
from a message, so credentials never appear in an error or a log line.

Nothing here imports fsspec until a URL is used: `import vidload` loads no fsspec backend.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import os
import re
import shutil
import stat
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from vidload.errors import VideoReadError

__all__ = [
    "COALESCE_GAP",
    "Location",
    "MissingExtraError",
    "is_url",
    "put_many",
    "read_many",
]

T = TypeVar("T")

#: A URL: a scheme of two or more characters, then "://" (one letter is a Windows drive).
_URL_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+)://")
#: The vidload extra that installs each scheme's filesystem.
EXTRAS: dict[str, str] = {
    "s3": "s3",
    "s3a": "s3",
    "gs": "gcs",
    "gcs": "gcs",
    "http": "http",
    "https": "http",
}
#: Ranges of one object closer than this are fetched as one request: at 20 ms to first byte
#: and ~100 MB/s, 256 KiB more bytes cost ~2.5 ms, a second request 20 ms.
COALESCE_GAP = 256 << 10
#: Extra attempts after a transient failure, and the wait before each (seconds).
RETRIES = 3
BACKOFF_S = (0.1, 0.3, 1.0)


#: Requests this process sent for remote reads and the bytes they returned (for `vidload
#: bench --bucket`; a request retried counts once per attempt). Not thread-safe: a count.
STATS = {"requests": 0, "bytes": 0}


def _count(requests: int, data: int = 0) -> None:
    STATS["requests"] += requests
    STATS["bytes"] += data


class MissingExtraError(ImportError):
    """A URL whose scheme needs a filesystem that is not installed (the message names the
    extra to install)."""


def is_url(target: object) -> bool:
    """True for a string with a scheme (`s3://...`, `file://...`); paths are not URLs."""
    return isinstance(target, str) and _URL_RE.match(target) is not None


def _scheme(url: str) -> str:
    m = _URL_RE.match(url)
    assert m is not None
    return m.group(1).lower()


def redact_url(url: str) -> str:
    """`url` without user info and query string (where credentials travel in a URL)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url.split("?", 1)[0]
    netloc = parts.netloc.rsplit("@", 1)[-1]
    query = "..." if parts.query else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


# --- filesystems, one per process and options ------------------------------------------------

_FS_LOCK = threading.Lock()
_FS: dict[tuple[int, str, str], Any] = {}


def _options_key(options: Mapping[str, Any] | None) -> str:
    return json.dumps(options or {}, sort_keys=True, default=repr)


def _filesystem(protocol: str, options: Mapping[str, Any] | None) -> Any:
    """This process's filesystem for `protocol` and `options` (built on first use; a forked
    child builds its own: the key holds the process id)."""
    key = (os.getpid(), protocol, _options_key(options))
    fs = _FS.get(key)
    if fs is not None:
        return fs
    with _FS_LOCK:
        fs = _FS.get(key)
        if fs is None:
            for stale in [k for k in _FS if k[0] != key[0]]:
                del _FS[stale]  # a parent's: never used here
            fs = _FS[key] = _make_filesystem(protocol, options)
    return fs


def _make_filesystem(protocol: str, options: Mapping[str, Any] | None) -> Any:
    extra = EXTRAS.get(protocol)
    hint = f'pip install "vidload[{extra}]"' if extra else f"install fsspec's {protocol} backend"
    try:
        import fsspec
    except ImportError as e:
        raise MissingExtraError(f"{protocol}:// URLs need fsspec: {hint}") from e
    try:
        cls = fsspec.get_filesystem_class(protocol)
    except ValueError as e:  # a scheme fsspec does not know
        raise MissingExtraError(f"no filesystem for {protocol}:// URLs: {hint}") from e
    except ImportError as e:  # known, backend not installed
        raise MissingExtraError(f"{protocol}:// URLs need {e.name or 'a backend'}: {hint}") from e
    try:
        # vidload keeps its own instance per process and options (`_filesystem`)
        fs = cls(**{"skip_instance_cache": True, **dict(options or {})})
    except ImportError as e:
        raise MissingExtraError(f"{protocol}:// URLs need {e.name or 'a backend'}: {hint}") from e
    if protocol in ("s3", "s3a") and isinstance(getattr(fs, "retries", None), int):
        # vidload's bounded retries (`_call`) replace s3fs's own loop (a class attribute);
        # botocore still retries as the AWS configuration says (AWS_MAX_ATTEMPTS, retry_mode)
        fs.retries = 1
    return fs


# --- faults ---------------------------------------------------------------------------------


def _status(e: BaseException) -> int | None:
    """The HTTP status an exception carries (aiohttp, botocore), if any."""
    status = getattr(e, "status", None)
    if isinstance(status, int):
        return status
    response = getattr(e, "response", None)
    if isinstance(response, dict):
        code = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return code if isinstance(code, int) else None
    return None


def _kind(e: BaseException) -> str:
    """ "missing", "denied", "transient" or "permanent"."""
    if isinstance(e, FileNotFoundError):
        return "missing"
    if isinstance(e, PermissionError):
        return "denied"
    status = _status(e)
    if status is None:
        for cause in (e.__cause__, e.__context__):
            if cause is not None and _status(cause) is not None:
                status = _status(cause)
                break
    if status is not None:
        if status == 404:
            return "missing"
        if status in (401, 403):
            return "denied"
        if status >= 500 or status in (408, 429):
            return "transient"
        return "permanent"
    if isinstance(e, (IsADirectoryError, NotADirectoryError, ValueError, TypeError)):
        return "permanent"
    if isinstance(e, OSError) and e.errno in (errno.EACCES, errno.EPERM):
        return "denied"
    # connection reset/refused, timeouts, truncated bodies, botocore/aiohttp client errors
    return "transient"


class _Scrubber:
    """Blanks storage option values (keys, secrets, tokens) out of a message."""

    def __init__(self, options: Mapping[str, Any] | None) -> None:
        secrets: list[str] = []

        def collect(value: object) -> None:
            if isinstance(value, str) and len(value) > 5:
                secrets.append(value)
            elif isinstance(value, Mapping):
                for v in value.values():
                    collect(v)
            elif isinstance(value, (list, tuple)):
                for v in value:
                    collect(v)

        collect(dict(options or {}))
        for name in ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID"):
            collect(os.environ.get(name))
        self.secrets = sorted(set(secrets), key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for s in self.secrets:
            text = text.replace(s, "***")
        return text


def _reason(e: BaseException) -> str:
    message = str(e) or type(e).__name__
    return f"{type(e).__name__}: {message}"


# --- Location ---------------------------------------------------------------------------------


class Location:
    """A local file or folder, or an object or prefix in a bucket (see the module docstring).

    Picklable: holds the path or URL and the options, never an open client. `location / "a/b"`
    names something inside it; `str(location)` is safe to show (no credentials).
    """

    __slots__ = ("_local", "_options", "_path", "_protocol", "_url")
    _local: Path | None
    _options: dict[str, Any] | None
    _path: str
    _protocol: str
    _url: str

    def __init__(
        self,
        target: str | os.PathLike[str] | Location,
        storage_options: Mapping[str, Any] | None = None,
    ) -> None:
        if isinstance(target, Location):
            if storage_options is None:
                storage_options = target._options
            target = target._url if target._local is None else target._local
        self._options = dict(storage_options) if storage_options else None
        self._local = None
        self._protocol = ""
        self._path = ""
        if isinstance(target, str) and is_url(target):
            protocol = _scheme(target)
            if protocol == "file":
                self._local = Path(target[len("file://") :])
                self._url = str(self._local)
                return
            self._protocol = protocol
            self._url = target.rstrip("/") if target.count("/") > 3 else target
            return
        if not isinstance(target, (str, os.PathLike)):
            raise TypeError(f"a path or URL is needed, got {type(target).__name__}")
        self._local = Path(target)
        self._url = str(self._local)

    # -- naming

    @property
    def is_local(self) -> bool:
        """True for a local path: `local_path` can be opened directly."""
        return self._local is not None

    @property
    def local_path(self) -> Path:
        """The local path; ValueError for a URL (a URL is never taken as a local path)."""
        if self._local is None:
            raise ValueError(f"{self}: a URL, not a local path")
        return self._local

    @property
    def storage_options(self) -> dict[str, Any] | None:
        return self._options

    @property
    def url(self) -> str:
        """The URL (or local path) as given, with credentials if it holds any: not for display."""
        return self._url

    @property
    def name(self) -> str:
        if self._local is not None:
            return self._local.name
        return self._url.rstrip("/").rsplit("/", 1)[-1]

    @property
    def parent(self) -> Location:
        if self._local is not None:
            return Location(self._local.parent)
        head = self._url.rstrip("/").rsplit("/", 1)[0]
        return Location(head, self._options)

    def __truediv__(self, rel: str | os.PathLike[str]) -> Location:
        if self._local is not None:
            return Location(self._local / rel)
        rel = os.fspath(rel).replace(os.sep, "/").strip("/")
        return Location(f"{self._url.rstrip('/')}/{rel}" if rel else self._url, self._options)

    def with_name(self, name: str) -> Location:
        return self.parent / name

    def __str__(self) -> str:
        return self._url if self._local is not None else redact_url(self._url)

    def __repr__(self) -> str:
        return f"Location({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Location)
            and (self._url, self._options) == (other._url, other._options)
            and self._local == other._local
        )

    def __hash__(self) -> int:
        return hash(self._url)

    def __getstate__(self) -> tuple:
        return (self._url, self._local, self._options, self._protocol)

    def __setstate__(self, state: tuple) -> None:
        self._url, self._local, self._options, self._protocol = state
        self._path = ""

    # -- the filesystem

    def _fs(self) -> tuple[Any, str]:
        """(filesystem, its path for this object), for a URL."""
        fs = _filesystem(self._protocol, self._options)
        if not self._path:
            self._path = fs._strip_protocol(self._url)
        return fs, self._path

    def _call(self, what: str, fn: Callable[[], T], *, index: int | None = None) -> T:
        """`fn()`, its errors as VideoReadError naming this location; transient ones retried."""
        attempt = 0
        while True:
            try:
                return fn()
            except MissingExtraError:
                raise
            except Exception as e:
                kind = _kind(e)
                if kind == "transient" and attempt < RETRIES:
                    time.sleep(BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)])
                    attempt += 1
                    continue
                scrub = _Scrubber(self._options)
                if kind == "missing":
                    reason = "not found"
                elif kind == "denied":
                    reason = f"access denied ({scrub(_reason(e))})"
                elif kind == "transient":
                    reason = f"{what} failed {attempt + 1} times: {scrub(_reason(e))}"
                else:
                    reason = f"cannot {what}: {scrub(_reason(e))}"
                raise VideoReadError(self, reason, index) from None

    # -- queries

    def exists(self) -> bool:
        if self._local is not None:
            return self._local.exists()
        fs, path = self._fs()
        return self._call("check", lambda: bool(fs.exists(path)))

    def is_file(self) -> bool:
        if self._local is not None:
            return self._local.is_file()
        fs, path = self._fs()
        return self._call("check", lambda: bool(fs.isfile(path)))

    def is_dir(self) -> bool:
        if self._local is not None:
            return self._local.is_dir()
        fs, path = self._fs()
        return self._call("check", lambda: bool(fs.isdir(path)))

    def size(self) -> int:
        """Bytes of the file or object; VideoReadError when it does not exist."""
        if self._local is not None:
            try:
                st = os.stat(self._local)
            except FileNotFoundError:
                raise VideoReadError(self, "not found") from None
            except OSError as e:
                raise VideoReadError(self, f"cannot stat: {e}") from e
            if not stat.S_ISREG(st.st_mode):
                raise VideoReadError(self, "not a regular file")
            return st.st_size
        fs, path = self._fs()

        def info() -> dict[str, Any]:
            _count(1)
            try:
                return fs.info(path)
            except FileNotFoundError:
                # fsspec's HTTP info answers any failure (a 503 too) as "not found": a read of
                # one byte tells a missing object (FileNotFoundError) from a failed request
                fs.cat_file(path, start=0, end=1)
                raise ConnectionError("the size request failed") from None

        got = self._call("get the size", info)
        if got.get("type") == "directory":
            raise VideoReadError(self, "a folder, not a file")
        if got.get("size") is None:
            raise VideoReadError(self, "the server does not say the size")
        return int(got["size"])

    def list_dir(self) -> dict[str, int | None]:
        """{name: size in bytes (-1 where the listing does not say: HTTP), None for a
        folder} of the entries directly inside (one listing request for a bucket prefix)."""
        if self._local is not None:
            out: dict[str, int | None] = {}
            try:
                with os.scandir(self._local) as it:
                    for entry in it:
                        out[entry.name] = None if entry.is_dir() else entry.stat().st_size
            except FileNotFoundError:
                raise VideoReadError(self, "folder not found") from None
            except NotADirectoryError:
                raise VideoReadError(self, "not a folder") from None
            except OSError as e:
                raise VideoReadError(self, f"cannot list the folder: {e}") from e
            return out
        fs, path = self._fs()

        def ls() -> list[dict[str, Any]]:
            _count(1)
            return fs.ls(path, detail=True)

        entries = self._call("list the folder", ls)
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
        """Whether `list_dir` names every entry of a folder: local folders and bucket
        prefixes; not HTTP(S), whose "listing" is the links of a page."""
        return self._local is not None or self._protocol not in ("http", "https")

    def walk_files(self) -> list[str]:
        """Every file below this folder, as sorted `/`-separated paths relative to it."""
        if self._local is not None:
            base = self._local
            found = []
            for dirpath, _dirs, files in os.walk(base):
                rel = os.path.relpath(dirpath, base)
                for f in files:
                    found.append(f if rel == "." else f"{rel}/{f}".replace(os.sep, "/"))
            return sorted(found)
        fs, path = self._fs()
        names = self._call("list the folder", lambda: fs.find(path))
        prefix = path.rstrip("/") + "/"
        return sorted(n[len(prefix) :] for n in names if n.startswith(prefix))

    # -- reads

    def read_bytes(self) -> bytes:
        """The whole file or object."""
        if self._local is not None:
            try:
                return self._local.read_bytes()
            except FileNotFoundError:
                raise VideoReadError(self, "not found") from None
            except OSError as e:
                raise VideoReadError(self, f"cannot read: {e}") from e
        fs, path = self._fs()

        def cat() -> bytes:
            data = fs.cat_file(path)
            _count(1, len(data))
            return data

        return self._call("read", cat)

    def read_text(self) -> str:
        """The file as UTF-8 text, without a byte order mark."""
        return self.read_bytes().decode("utf-8").lstrip("\ufeff")

    def read_range(self, start: int, stop: int) -> bytes:
        """Bytes [start, stop) (fewer at the end of the object)."""
        return self.read_ranges([(start, stop)])[0]

    def read_ranges(
        self, ranges: Sequence[tuple[int, int]], *, index: int | None = None
    ) -> list[bytes]:
        """The bytes of each [start, stop) range, in the order given; ranges closer than
        `COALESCE_GAP` are one request, the requests of one call run concurrently."""
        if not ranges:
            return []
        if self._local is not None:
            return _local_ranges(self, ranges)
        fs, path = self._fs()
        merged = coalesce(ranges, COALESCE_GAP)
        starts = [a for a, _ in merged]
        stops = [b for _, b in merged]

        def fetch() -> list[bytes]:
            if len(merged) == 1:
                data = fs.cat_file(path, start=starts[0], end=stops[0])
                _count(1, len(data))
                return [data]
            out = fs.cat_ranges([path] * len(merged), starts, stops, on_error="return")
            _count(len(out), sum(len(b) for b in out if isinstance(b, bytes)))
            for item in out:
                if isinstance(item, BaseException):
                    raise item
            return out

        blocks = self._call("read byte ranges", fetch, index=index)
        result = []
        for a, b in ranges:
            k = _block_of(merged, a, b)
            base = merged[k][0]
            result.append(bytes(memoryview(blocks[k])[a - base : b - base]))
        return result

    def open(self, *, block_size: int = 4 << 20) -> IO[bytes]:
        """A binary file-like object: a local file, or a remote object read in blocks of
        `block_size` bytes with read-ahead (errors from its reads are fsspec's own)."""
        if self._local is not None:
            try:
                return open(self._local, "rb")  # noqa: SIM115 - the caller closes it
            except FileNotFoundError:
                raise VideoReadError(self, "not found") from None
            except OSError as e:
                raise VideoReadError(self, f"cannot open: {e}") from e
        fs, path = self._fs()
        return self._call(
            "open",
            lambda: fs.open(path, "rb", block_size=block_size, cache_type="readahead"),
        )

    def open_prefetched(self, *, head: int = 64 << 10, tail: int = 64 << 10) -> RangeFile:
        """This object as a `RangeFile` holding its first `head` and last `tail` bytes: one
        request for the size, then one round of concurrent requests for both ends."""
        size = self.size()
        if size <= head + tail + COALESCE_GAP:
            return RangeFile(self, size, [(0, self.read_range(0, size))] if size else [])
        ends = [(0, head), (size - tail, size)]
        first, last = self.read_ranges(ends)
        return RangeFile(self, size, [(0, first), (size - tail, last)])

    # -- writes (convert into a bucket)

    def put_file(self, local: str | os.PathLike[str]) -> None:
        """Copy the local file `local` here (an upload for a URL; a whole object appears only
        once complete)."""
        if self._local is not None:
            self._local.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(local, self._local)
            return
        fs, path = self._fs()
        self._call("upload", lambda: fs.put_file(os.fspath(local), path))

    def write_bytes(self, data: bytes) -> None:
        """Write `data` as this whole file or object."""
        if self._local is not None:
            self._local.parent.mkdir(parents=True, exist_ok=True)
            self._local.write_bytes(data)
            return
        fs, path = self._fs()
        self._call("write", lambda: fs.pipe_file(path, data))

    def create_bytes(self, data: bytes) -> bool:
        """Write `data` as this object only if nothing is there yet: True when written, False
        when something already was (the write side's lock, `vidload._lock`).

        A local file is created with `O_CREAT | O_EXCL`; an object with fsspec's
        `mode="create"`, which s3fs sends as `If-None-Match: *` (honoured by AWS S3 since
        2024-08, MinIO, moto; a server that ignores the header overwrites, and no lock holds
        there) and gcsfs as `ifGenerationMatch=0`. A filesystem without exclusive creation
        raises VideoReadError saying so, never a plain overwrite. After a transient failure the
        retry may find the object the failed attempt wrote: the caller tells its own content
        from another writer's (the lock compares its token).
        """
        if self._local is not None:
            try:
                fd = os.open(self._local, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                return False
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            return True
        fs, path = self._fs()

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

        return self._call("create exclusively", create)

    def delete(self, *, recursive: bool = False) -> None:
        """Remove this file (or folder with `recursive`); nothing to remove is not an error."""
        if self._local is not None:
            if recursive and self._local.is_dir():
                shutil.rmtree(self._local)
            else:
                self._local.unlink(missing_ok=True)
            return
        fs, path = self._fs()
        try:
            self._call("delete", lambda: fs.rm(path, recursive=recursive))
        except VideoReadError as e:
            if e.reason != "not found":
                raise


def coalesce(ranges: Sequence[tuple[int, int]], gap: int) -> list[tuple[int, int]]:
    """`ranges` sorted and merged where they overlap or lie at most `gap` bytes apart."""
    merged: list[list[int]] = []
    for a, b in sorted(ranges):
        if merged and a <= merged[-1][1] + gap:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]


def _block_of(merged: list[tuple[int, int]], a: int, b: int) -> int:
    lo, hi = 0, len(merged) - 1
    while lo < hi:  # the last block starting at or before a
        mid = (lo + hi + 1) // 2
        if merged[mid][0] <= a:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _local_ranges(loc: Location, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
    path = loc.local_path
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise VideoReadError(loc, "not found") from None
    except OSError as e:
        raise VideoReadError(loc, f"cannot open: {e}") from e
    try:
        return [os.pread(fd, b - a, a) for a, b in ranges]
    finally:
        os.close(fd)


def _cat_many(fs: Any, paths: list[str]) -> Callable[[], Any]:
    def cat() -> Any:
        got = fs.cat(paths, on_error="return")
        _count(len(paths), sum(len(b) for b in got.values() if isinstance(b, bytes)))
        return got

    return cat


def read_many(locations: Sequence[Location]) -> list[bytes]:
    """The whole contents of each location, in order; the remote ones of one filesystem are
    fetched concurrently (one round trip for a JPEG clip's frames)."""
    out: list[bytes | None] = [None] * len(locations)
    groups: dict[tuple[str, str], list[int]] = {}
    for i, loc in enumerate(locations):
        if loc.is_local:
            out[i] = loc.read_bytes()
        else:
            groups.setdefault((loc._protocol, _options_key(loc._options)), []).append(i)
    for members in groups.values():
        first = locations[members[0]]
        fs, _ = first._fs()
        paths = [locations[i]._fs()[1] for i in members]
        if len(paths) == 1:
            out[members[0]] = first.read_bytes()
            continue
        got: Any = first._call("read", _cat_many(fs, paths))
        for i, p in zip(members, paths, strict=True):
            item = got.get(p) if isinstance(got, dict) else None
            if item is None or isinstance(item, BaseException):
                out[i] = locations[i].read_bytes()  # its own error (or a retried read)
            else:
                out[i] = item
    return [b if b is not None else b"" for b in out]


# --- a remote object as a seekable file, its likely-read parts fetched up front ---------------

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
        self._blocks = sorted(blocks)
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
        for a, block in self._blocks:
            if a <= start and stop <= a + len(block):
                return block[start - a : stop - a]
        fetch_stop = min(self.size, max(stop, start + MIN_FETCH))
        block = self.location.read_range(start, fetch_stop)
        self._blocks.append((start, block))
        self._blocks.sort(key=lambda b: b[0])
        return block[: stop - start]


# --- the local cache of a bucket's objects ----------------------------------------------------

#: `cache_max_bytes` when none is given.
DEFAULT_CACHE_BYTES = 32 << 30
#: A process rescans the cache's size after this many of its own additions (others add too).
_RESCAN_EVERY = 32
#: Partial downloads older than this are a crashed process's, and removed by eviction.
_STALE_PART_S = 3600.0
_PART = ".part"


class LocalCache:
    """Whole objects of a bucket, copied into a local folder on first use and read from there.

    Layout: `folder/<endpoint hash>/<bucket>/<key>`, the hash telling apart servers that use
    the same bucket names (the endpoint of the options or `AWS_ENDPOINT_URL`). Objects are
    assumed not to change once written (as `vidload convert` writes them); after rewriting a
    bucket, empty the cache folder.

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

    def __getstate__(self) -> dict[str, Any]:
        return {"folder": self.folder, "max_bytes": self.max_bytes}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["folder"], state["max_bytes"])  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"LocalCache({str(self.folder)!r}, max_bytes={self.max_bytes})"

    def path_of(self, location: Location) -> Path:
        """Where `location`'s copy lives in the cache (whether or not it is there)."""
        endpoint = _endpoint(location.storage_options)
        tag = hashlib.sha1(f"{location._protocol}|{endpoint}".encode()).hexdigest()[:12]
        rest = redact_url(location.url).split("://", 1)[1].split("?", 1)[0]
        parts = [p for p in rest.split("/") if p not in ("", ".", "..")]
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
        path.parent.mkdir(parents=True, exist_ok=True)
        self._count += 1
        part = path.with_name(f".{path.name}.{os.getpid()}.{self._count}{_PART}")
        try:
            fs, remote = location._fs()
            location._call("download", lambda: fs.get_file(remote, os.fspath(part)))
            size = os.stat(part).st_size
            _count(1, size)
            os.replace(part, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(part)
        self._note_added(size)
        return path

    def read_many(self, locations: Sequence[Location]) -> list[bytes]:
        """The contents of each location: hits read from the cache, misses fetched
        concurrently (`read_many`) and stored."""
        out: list[bytes | None] = [None] * len(locations)
        missing = []
        for i, loc in enumerate(locations):
            path = self.path_of(loc)
            try:
                os.utime(path)
                out[i] = path.read_bytes()
            except FileNotFoundError:
                missing.append(i)
        if missing:
            got = read_many([locations[i] for i in missing])
            for i, data in zip(missing, got, strict=True):
                out[i] = data
                self._store(self.path_of(locations[i]), data)
        return [b if b is not None else b"" for b in out]

    def _store(self, path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._count += 1
        part = path.with_name(f".{path.name}.{os.getpid()}.{self._count}{_PART}")
        try:
            part.write_bytes(data)
            os.replace(part, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(part)
        self._note_added(len(data))

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
                if name.endswith(_PART):
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


def _endpoint(options: Mapping[str, Any] | None) -> str:
    options = options or {}
    client = options.get("client_kwargs") or {}
    return str(
        options.get("endpoint_url")
        or (client.get("endpoint_url") if isinstance(client, Mapping) else None)
        or os.environ.get("AWS_ENDPOINT_URL_S3")
        or os.environ.get("AWS_ENDPOINT_URL")
        or ""
    )


# --- a source's root --------------------------------------------------------------------------


class SourceRoot:
    """Where a source's files are: a local folder, or a bucket prefix read by ranges or
    through a `LocalCache`. The one thing a source asks storage: `local(rel)` is a local file
    to read by the fast path (under a local root, or the cached copy of a remote object), or
    None, and then `remote(rel)` is the object to read by byte ranges. Picklable."""

    def __init__(
        self,
        root: str | os.PathLike[str] | Location,
        storage_options: Mapping[str, Any] | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        cache_max_bytes: int | None = None,
    ) -> None:
        self.location = Location(root, storage_options)
        if self.location.is_local and storage_options:
            raise ValueError(f"storage_options are for URLs; {root!s} is a local path")
        self.cache: LocalCache | None = None
        if cache_dir is not None:
            if self.location.is_local:
                raise ValueError(f"cache_dir is for URL roots; {root!s} is a local path")
            self.cache = LocalCache(cache_dir, cache_max_bytes)

    @property
    def is_local(self) -> bool:
        return self.location.is_local

    def __str__(self) -> str:
        return str(self.location)

    def remote(self, rel: str) -> Location:
        return self.location / rel

    def local(self, rel: str) -> Path | None:
        """The local file to read for `rel` (see the class docstring)."""
        if self.location.is_local:
            return self.location.local_path / rel
        if self.cache is not None:
            return self.cache.get(self.location / rel)
        return None

    def local_copy(self, rel: str) -> Path:
        """A local file for `rel` in any case: under a local root, else the object's copy in
        the cache, or (no `cache_dir`) in this user's shared temporary cache
        (`temporary_cache`), for readers that need a local file (FFmpeg's seeks)."""
        local = self.local(rel)
        if local is not None:
            return local
        return temporary_cache().get(self.location / rel)

    def read_remote_files(self, rels: Sequence[str]) -> list[bytes]:
        """The whole objects `rels` of a URL root, fetched concurrently (through the cache
        when there is one)."""
        locations = [self.location / rel for rel in rels]
        if self.cache is not None:
            return self.cache.read_many(locations)
        return read_many(locations)


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


def _put_batch(fs: Any, lpaths: list[str], rpaths: list[str]) -> Callable[[], Any]:
    return lambda: fs.put(lpaths, rpaths)


def put_many(files: Sequence[tuple[str | os.PathLike[str], Location]]) -> None:
    """Upload each local file to its location; the remote ones of one filesystem go up
    concurrently (fsspec's batched `put`: a JPEG frame folder in a few round trips instead of
    one per frame). A failure raises VideoReadError naming the first location of the batch
    (after the transient retries of `Location._call`, which redo the whole batch)."""
    groups: dict[tuple[str, str], list[tuple[str, Location]]] = {}
    for local, loc in files:
        if loc.is_local:
            loc.put_file(local)
        else:
            key = (loc._protocol, _options_key(loc._options))
            groups.setdefault(key, []).append((os.fspath(local), loc))
    for members in groups.values():
        first = members[0][1]
        if len(members) == 1:
            first.put_file(members[0][0])
            continue
        fs, _ = first._fs()
        lpaths = [local for local, _ in members]
        rpaths = [loc._fs()[1] for _, loc in members]
        first._call("upload", _put_batch(fs, lpaths, rpaths))
