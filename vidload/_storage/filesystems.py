"""URLs and the fsspec filesystem behind them, one per process and options.

- A URL is a scheme of two or more characters, then "://" (one letter is a Windows drive);
  a URL is never taken as a local path.
- The filesystem is resolved as `fsspec.core.url_to_fs` does, built once per process and
  options (`filesystem`) and rebuilt after a fork: fsspec's async filesystems (s3fs, gcsfs,
  HTTP) run their requests on an event-loop thread that a forked child does not have, and
  refuse to be used there ("not fork-safe"); fsspec drops its own instance cache in a child,
  and so does this module.
- `storage_options` go to the filesystem unchanged (credentials, `endpoint_url`,
  `client_kwargs`, ...); without them s3fs/botocore read the standard AWS configuration as
  they always do (environment, `~/.aws`, `AWS_ENDPOINT_URL`, instance roles).
- A scheme whose filesystem is not installed raises `MissingExtraError` naming the extra
  (`pip install "vidload[s3]"`).

Nothing here imports fsspec until a URL is used: `import vidload` loads no fsspec backend.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from vidload._lru import ProcessLRU
from vidload._storage import http_adapter, s3_adapter
from vidload._storage.ranges import http_range

__all__ = [
    "EXTRAS",
    "MissingExtraError",
    "answer_version",
    "cat_one",
    "filesystem",
    "is_url",
    "options_key",
    "redact_url",
]

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


class MissingExtraError(ImportError):
    """A URL whose scheme needs a filesystem that is not installed (the message names the
    extra to install)."""


def is_url(target: object) -> bool:
    """True for a string with a scheme (`s3://...`, `file://...`); paths are not URLs."""
    return isinstance(target, str) and _URL_RE.match(target) is not None


def scheme(url: str) -> str:
    """The scheme of a URL, lower case."""
    m = _URL_RE.match(url)
    if m is None:
        raise ValueError(f"{url!r} is not a URL")
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


#: Connections s3fs keeps per process unless `config_kwargs={"max_pool_connections": N}` says
#: otherwise (botocore's default is 10). S3 answers one range a request, so a batch of 16
#: HDF5 or npy clips is ~155 concurrent GETs (8 frames and the heads' checks each): at 128 the
#: last ~30 would wait for a connection, a second round trip; the same as HTTP's. (Measured
#: on the loaded 2-core machine, s3fs's own CPU, ~1.5 ms a request, spread a batch's sends
#: over 0.5-3 s either way, so the limit seldom bound there; a faster client would meet it.)
S3_CONNECTIONS = 512
#: Connections fsspec's HTTP filesystem keeps per process unless the options pass a
#: `get_client` or a `client_kwargs["connector"]` (aiohttp's default is 100: a batch's ~130
#: concurrent ranges went out in two waves, a second round trip).
HTTP_CONNECTIONS = 512


async def _http_client(**kwargs: Any) -> Any:
    """fsspec's `get_client` for HTTP with a larger connection pool (`HTTP_CONNECTIONS`);
    made on the filesystem's event loop, as fsspec's own."""
    import aiohttp

    if "connector" not in kwargs:
        kwargs["connector"] = aiohttp.TCPConnector(limit=HTTP_CONNECTIONS)
    return aiohttp.ClientSession(**kwargs)


_FS_LOCK = threading.Lock()
#: The filesystems a forked child inherited from its parent, kept alive (see `filesystem`).
_INHERITED: list[Any] = []
_FS: ProcessLRU[tuple[str, str, str], Any] = ProcessLRU(None, inherited=_INHERITED.append)


def options_key(options: Mapping[str, Any] | None) -> str:
    """The options as a hashable, order-free key."""
    return json.dumps(options or {}, sort_keys=True, default=repr)


def filesystem(protocol: str, options: Mapping[str, Any] | None) -> Any:
    """This process's filesystem for `protocol`, `options` and the endpoint the environment
    names (`AWS_ENDPOINT_URL`: a client is built with it), built on first use; a forked child
    builds its own (`ProcessLRU`)."""
    # the endpoint the environment names is part of what the client is built with. A
    # parent's filesystem is never used in a forked child, and never garbage-collected either
    # (`_INHERITED`): collecting it would close its pooled connections through the event
    # loop's selector, and a forked child shares the parent's epoll instance: the child's
    # EPOLL_CTL_DEL would unregister the parent's sockets, and the parent would then wait
    # forever on answers that have arrived (seen: a DataLoader worker's first URL read hung
    # the parent's next batch).
    key = (protocol, options_key(options), endpoint(None))
    return _FS.get_or_make(key, lambda: _make_filesystem(protocol, options), _FS_LOCK)


def _make_filesystem(protocol: str, options: Mapping[str, Any] | None) -> Any:
    extra = EXTRAS.get(protocol)
    hint = f'pip install "vidload[{extra}]"' if extra else f"install fsspec's {protocol} backend"
    try:
        import fsspec

        cls = fsspec.get_filesystem_class(protocol)
    except ValueError as e:  # a scheme fsspec does not know
        raise MissingExtraError(f"no filesystem for {protocol}:// URLs: {hint}") from e
    except ImportError as e:  # known, backend not installed
        raise MissingExtraError(f"{protocol}:// URLs need {e.name or 'a backend'}: {hint}") from e
    kwargs = {"skip_instance_cache": True, **dict(options or {})}
    if protocol in ("s3", "s3a"):
        # botocore keeps 10 connections by default: a batch's ~100 concurrent ranges would
        # go 10 at a time (10 round trips); the caller's own setting wins
        config = dict(kwargs.get("config_kwargs") or {})
        config.setdefault("max_pool_connections", S3_CONNECTIONS)
        kwargs["config_kwargs"] = config
    if protocol in ("http", "https"):
        kwargs.setdefault("get_client", _http_client)
    try:
        # vidload keeps its own instance per process and options (`filesystem`)
        fs = cls(**kwargs)
    except ImportError as e:
        raise MissingExtraError(f"{protocol}:// URLs need {e.name or 'a backend'}: {hint}") from e
    if protocol in ("s3", "s3a") and isinstance(getattr(fs, "retries", None), int):
        # vidload's bounded retries (`faults.call`) replace s3fs's own loop (a class
        # attribute); botocore still retries as the AWS configuration says
        fs.retries = 1
    return fs


#: A byte range of `byteranges.cat_spans`: (path, start, stop); start and stop None: the
#: whole object; start < 0 and stop None: its last -start bytes.
Span = tuple[str, "int | None", "int | None"]
#: A span's answer: (its bytes, the object's version the answer reported, the object's size it
#: reported); None where it reports none.
Answer = tuple[bytes, "str | None", "int | None"]


def answer_version(headers: Any, total: object) -> str | None:
    """The object's version an HTTP answer reports (its `headers`): its ETag, else its size
    `total` and Last-Modified; None where it says neither. For a one-range answer
    (`cat_one`) and a multi-range one (`byteranges`) alike, so that a versioned read compares
    them."""
    version = headers.get("ETag")
    modified = headers.get("Last-Modified")
    if version is None and modified:
        version = f"{total}:{modified}"
    return version


async def cat_one(fs: Any, path: str, start: int | None, stop: int | None) -> Answer:
    """One span's bytes (start < 0, stop None: the last -start bytes), the version its answer
    reported and the object's size it reported (a single-range request of
    `byteranges.cat_spans`)."""
    if start is not None and stop is not None and start >= stop:
        return b"", None, None
    if s3_adapter.is_s3(fs):
        return await s3_adapter.get_object(fs, path, start, stop)
    if http_adapter.is_http(fs):
        asked = http_range(start, stop)
        async with http_adapter.get(fs, path, {"Range": asked} if asked else {}) as r:
            data = await r.read()
            http_adapter.raise_for_status(fs, r, path)
            total = r.headers.get("Content-Range", "").rpartition("/")[2]
            version = answer_version(r.headers, total or r.headers.get("Content-Length"))
            # a 200 is the whole object (the range ignored); a 206 says the size, or "*"
            size = len(data) if r.status == 200 else int(total) if total.isdigit() else None
            if r.status == 200 and asked:  # the range ignored: cut here
                data = data[start or 0 : stop]
        return data, version, size
    return await fs._cat_file(path, start=start, end=stop), None, None


def endpoint(options: Mapping[str, Any] | None) -> str:
    """The endpoint the options (or the AWS environment) name; "" for the default."""
    options = options or {}
    client = options.get("client_kwargs") or {}
    return str(
        options.get("endpoint_url")
        or (client.get("endpoint_url") if isinstance(client, Mapping) else None)
        or os.environ.get("AWS_ENDPOINT_URL_S3")
        or os.environ.get("AWS_ENDPOINT_URL")
        or ""
    )
