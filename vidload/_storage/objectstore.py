"""S3 reads through obstore (`pip install "vidload[s3]"`), where it is installed.

s3fs spends ~1.3-1.7 ms of the client's CPU per request (botocore's hooks, user-agent string,
signing and response parsing), obstore (Rust's object_store) ~0.15-0.18 ms: at 8 ranges a
clip that is ~11-13 ms against ~1.3 ms per clip, more than decoding the clip costs
(`tools/obstore_cost.py`; docs/development.md, "obstore against fsspec"). So where obstore is
installed, the reads of `s3://` objects (byte ranges, whole objects, and the versions their
answers report, and the sizes `read_ends` takes from them) go through it; everything else
(listings, stats, writes, exclusive creates) stays with s3fs, and so do the reads where the
options ask for what this module does not map (anything but `key`, `secret`, `token`,
`anon`, `endpoint_url`, `client_kwargs={"endpoint_url", "region_name"}`, `config_kwargs`)
or where no credentials are given (options or `AWS_ACCESS_KEY_ID`): s3fs/botocore then find
them as the AWS configuration says (profiles, instance roles), which object_store does not
all read.

obstore is not fork-safe: its runtime's threads do not exist in a forked child, whose first
request then waits forever (seen: a DataLoader worker forked after the main process read the
manifest through obstore). So it serves the processes that do the reading and never fork:
DataLoader workers (`torch.utils.data.get_worker_info()`), and only where no process this one
was forked from used it; the main process, which may fork workers later, reads through s3fs.
At 0 workers that costs the main process s3fs's CPU per request, as before. A store built
afresh in the child does not help (measured with obstore 0.12.1, 2026-12-03: a parent that
read one range through obstore, then forked; the child's first read through a new store
never returned, async or sync, and after the sync one the parent's next read hung too): the
runtime is obstore's, one per process image, not the store's. A DataLoader with
`multiprocessing_context="forkserver"` (or "spawn") gives workers that never inherited it:
measured, a forkserver child of such a parent reads through obstore.

The requests are vidload's own (`read_ranges`' coalescing, `batch.fetch`'s one round): one
GET per range asked here, all of one call concurrent on this process's event-loop thread,
with object_store's retries off (`faults.call` retries, as for s3fs). Its errors become the
built-in ones `faults.kind` reads (not found, permission), so every message is the same.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from vidload._lru import ProcessLRU
from vidload._storage.filesystems import endpoint, options_key

__all__ = ["S3Reader", "reader"]

#: The options this module maps to obstore's S3 configuration (any other: s3fs reads).
_KNOWN = frozenset({"key", "secret", "token", "anon", "endpoint_url", "client_kwargs"})
_CLIENT_KNOWN = frozenset({"endpoint_url", "region_name"})
#: Options s3fs takes that only tune its own client (ignored here).
_IGNORED = frozenset({"config_kwargs", "skip_instance_cache"})

_LOCK = threading.Lock()
#: This process's readers (a parent's are dropped in a forked child: their stores hold no
#: open connections there), None where obstore does not serve those options.
_READERS: ProcessLRU[str, tuple[S3Reader | None]] = ProcessLRU(None)
#: The process that first sent a request through obstore (its runtime lives there only).
_RUNTIME_PID: list[int] = []


def _may_use() -> bool:
    """A process that reads and does not fork (`_reads_here`), whose ancestors never started
    obstore's runtime."""
    if _RUNTIME_PID and _RUNTIME_PID[0] != os.getpid():
        return False  # started before a fork: dead here
    return _reads_here()


def _reads_here() -> bool:
    """A DataLoader worker: it reads, and forks no process that would read."""
    data = sys.modules.get("torch.utils.data")
    return data is not None and data.get_worker_info() is not None


def reader(protocol: str, options: Mapping[str, Any] | None) -> S3Reader | None:
    """This process's obstore reader for `protocol` and `options`, or None: not S3, obstore
    not installed, options it cannot take, or no explicit credentials (see the module
    docstring)."""
    if protocol not in ("s3", "s3a") or not _may_use():
        return None
    key = options_key(options) + "|" + endpoint(None)
    return _READERS.get_or_make(key, lambda: (_make(options or {}),), _LOCK)[0]


def _make(options: Mapping[str, Any]) -> S3Reader | None:
    try:
        import obstore  # noqa: F401
    except ImportError:
        return None
    client = options.get("client_kwargs") or {}
    if set(options) - _KNOWN - _IGNORED or not isinstance(client, Mapping):
        return None
    if set(client) - _CLIENT_KNOWN:
        return None
    config: dict[str, Any] = {}
    if options.get("anon"):
        config["skip_signature"] = True
    elif options.get("key") and options.get("secret"):
        config["access_key_id"] = options["key"]
        config["secret_access_key"] = options["secret"]
        if options.get("token"):
            config["token"] = options["token"]
    elif not os.environ.get("AWS_ACCESS_KEY_ID"):
        return None  # profiles, instance roles: botocore's to find
    url = endpoint(options)
    if url:
        config["endpoint"] = url
    region = (
        client.get("region_name")
        or os.environ.get("AWS_REGION")
        or os.environ.get("AWS_DEFAULT_REGION")
        or "us-east-1"
    )
    config["region"] = region
    return S3Reader(config, allow_http=url.startswith("http://"))


#: The HTTP status in an obstore error's message ("... non-2xx status code: 503 ...").
_STATUS = re.compile(r"status code: (\d{3})")


def _builtin(e: BaseException) -> BaseException:
    """obstore's error as one `faults.kind` knows: not found, denied, or an OSError carrying
    the HTTP status of its message (`status`: a 503 retried, a 416 not)."""
    name = type(e).__name__
    text = (str(e).splitlines() or [name])[0]
    if name == "NotFoundError":
        return FileNotFoundError(text)
    if name in ("PermissionDeniedError", "UnauthenticatedError"):
        return PermissionError(text)
    if "NotPartial" in str(e):
        # a range answered whole (an empty object's suffix range, at moto and S3): as final
        # as the 416 its other range gets, not a fault to retry
        error = OSError(text)
        error.status = 416  # type: ignore[attr-defined]
        return error
    found = _STATUS.search(str(e))
    if found is not None and not isinstance(e, OSError):
        error = OSError(text)
        error.status = int(found.group(1))  # type: ignore[attr-defined]
        return error
    return e


class S3Reader:
    """Reads of one S3 endpoint and credentials through obstore: a store per bucket, requests
    run concurrently on one event loop in a thread of this process."""

    def __init__(self, config: Mapping[str, Any], *, allow_http: bool) -> None:
        self._config: Any = dict(config)
        self._client: Any = {"allow_http": True} if allow_http else None
        self._stores: dict[str, Any] = {}
        self._loop: Any = None  # an asyncio loop, made on first use

    def _store(self, bucket: str) -> Any:
        store = self._stores.get(bucket)
        if store is None:
            from obstore.store import S3Store

            store = self._stores[bucket] = S3Store(
                bucket,
                config=self._config,
                client_options=self._client,
                retry_config={"max_retries": 0},
            )
        return store

    def _run(self, coro: Any) -> Any:
        import asyncio

        with _LOCK:
            if not _RUNTIME_PID:
                _RUNTIME_PID.append(os.getpid())
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(
                    target=loop.run_forever, name="vidload-obstore", daemon=True
                ).start()
                self._loop = loop
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    async def _get(self, path: str, options: Any) -> tuple[Any, bytes]:
        """(obstore's answer, its bytes) of a GET of the fsspec path "bucket/key" with
        `options`; its errors as `_builtin` makes them."""
        import obstore

        bucket, _, key = path.partition("/")
        try:
            got = await obstore.get_async(self._store(bucket), key, options=options)
            return got, bytes(await got.bytes_async())
        except Exception as e:
            raise _builtin(e) from None

    def cat(
        self, spans: Sequence[tuple[str, int | None, int | None]]
    ) -> list[tuple[bytes, str | None, int | None] | Exception]:
        """Each (fsspec path "bucket/key", start, stop) span's bytes (the whole object where
        start and stop are None; the last -start bytes where start < 0 and stop is None) with
        the ETag its answer reported and the object's size, in one concurrent round; an
        exception in place of a failed one."""
        import asyncio

        async def one(path: str, start: int | None, stop: int | None) -> tuple[bytes, Any, Any]:
            if start is not None and stop is not None and start >= stop:
                return b"", None, None
            options: Any = {}
            if start is not None and start < 0:
                options["range"] = {"suffix": -start}
            elif start is not None or stop is not None:
                options["range"] = {"offset": start} if stop is None else (start or 0, stop)
            got, data = await self._get(path, options)
            return data, got.meta.get("e_tag"), int(got.meta["size"])

        async def gather() -> list[Any]:
            return await asyncio.gather(*(one(*s) for s in spans), return_exceptions=True)

        return self._run(gather())
