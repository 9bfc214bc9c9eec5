"""Local storage servers for the bucket tests: S3 (moto) and HTTP with Range, both with faults.

Usage (the fixtures are registered in tests/conftest.py, so any test module can ask for them):

    def test_x(s3_bucket, tmp_path):          # skips cleanly when moto[server] / s3fs are missing
        url = s3_bucket.upload(local_dir, "k400_h5")      # -> "s3://<bucket>/k400_h5"
        src = Hdf5Source(url, storage_options=s3_bucket.storage_options)
        s3_bucket.faults.delay_s = 0.02                   # 20 ms per request from now on
        s3_bucket.faults.fail_next(2, "503")              # the next 2 requests answer 503 SlowDown
        s3_bucket.faults.fail_next(1, "reset")            # ... or a TCP reset (RST) instead
        s3_bucket.faults.fail_next(1, "403", match="/out/")  # AccessDenied, for paths with /out/
        s3_bucket.faults.clear_log(); ...; s3_bucket.faults.requests(method="GET")  # [Request(...)]
        s3_bucket.keys()                                  # every key in the bucket, sorted
        s3_bucket.env()                                   # AWS_* variables for a subprocess

    def test_y(http_dir):                     # a fresh folder under one session HTTP server
        (http_dir.path / "a.mp4").write_bytes(...)
        http_dir.url + "/a.mp4"                           # GET/HEAD, one "bytes=a-b|a-|-n" range
        http_dir.faults.fail_next(1, "reset")

* `s3_server` (session): one moto server per test session on 127.0.0.1 at a free port
  (`endpoint_url`, `storage_options`, `faults`). Starting one costs ~1 s; share it.
* `s3_bucket` (function): a fresh, empty bucket for one test, emptied and deleted after it; the
  faults are reset before and after each test. `storage_options` is what fsspec/s3fs take
  (`key`, `secret`, `client_kwargs={"endpoint_url", "region_name"}`).
* `http_server` (session) / `http_dir` (function): stdlib `ThreadingHTTPServer` serving a folder,
  with single-range GET (206 + Content-Range, 416 when unsatisfiable), HEAD, and directory pages
  whose links fsspec's HTTPFileSystem can list (`faults.listings = False`: 403 instead, as
  nginx without `autoindex`).

The faults sit in front of the server's own handler (WSGI middleware for moto, the request handler
for HTTP), so every request is logged as `Request(method, path, query, range, status, bytes)` with
the body bytes really sent. The administrative calls of `S3Bucket` (create, list, delete) are
marked by their user agent and are neither delayed, failed nor logged, so a test counts only the
requests of the code under test. Both servers listen on 127.0.0.1 only, run in daemon threads, are
stopped at the end of the session, and keep a bounded log.
"""

from __future__ import annotations

import collections
import email.utils
import errno
import http.server
import itertools
import logging
import os
import re
import socket
import struct
import threading
import time
import urllib.parse
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest

ADMIN_AGENT = "vidload-tests-admin"
KEY, SECRET, REGION = "vidload-test-key", "vidload-test-secret", "us-east-1"
LOG_LIMIT = 100_000  # requests kept in a log; older ones drop off

FaultKind = Literal["503", "403", "reset"]


@dataclass(frozen=True)
class Request:
    """One request a server answered (or refused): `range` is the raw Range header or None;
    `bytes` the body bytes sent; `status` 0 for a connection reset."""

    method: str
    path: str
    query: str
    range: str | None
    status: int
    bytes: int


class Faults:
    """Latency, injected failures and the request log of one server; thread-safe.

    `delay_s` is slept before each request is handled (in that request's own thread, so
    concurrent requests overlap their latency as they would against a real store).
    `fail_next(n, kind, match=...)` makes the next `n` requests whose path contains `match`
    fail: "503" answers 503 (an S3 `SlowDown` error body on the S3 server), "403" answers 403
    (`AccessDenied`: moto accepts any credentials, so this is how a test is refused), "reset"
    closes the connection with a TCP RST before any byte of a response. `peak_in_flight` is
    the most requests that were inside that delay at once since the log was last cleared:
    above 1, the client sent them concurrently (a check by count, not by a clock).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.delay_s = 0.0
        self._in_flight = 0
        self.peak_in_flight = 0
        self._pending: list[tuple[FaultKind, str]] = []
        self._log: collections.deque[Request] = collections.deque(maxlen=LOG_LIMIT)
        #: The HTTP server answers a Range of several ranges with one `206 multipart/
        #: byteranges` (as nginx and Apache do); False: it ignores such a Range and answers
        #: 200 with the whole file (as a server without the feature may).
        self.multi_ranges = True
        #: The HTTP server lists a folder (the stdlib's page of links); False: it answers
        #: 403, as nginx does without `autoindex` (a store whose folders cannot be listed).
        self.listings = True

    def fail_next(self, n: int, kind: FaultKind = "503", *, match: str = "") -> None:
        if kind not in ("503", "403", "reset"):
            raise ValueError(f"kind ({kind!r}) must be '503', '403' or 'reset'")
        with self._lock:
            self._pending.extend([(kind, match)] * n)

    def pending(self) -> int:
        """Injected failures not yet used."""
        with self._lock:
            return len(self._pending)

    def reset(self) -> None:
        """No delay, no pending failure, an empty log."""
        with self._lock:
            self.delay_s = 0.0
            self._pending.clear()
            self._log.clear()
            self.peak_in_flight = 0
            self.multi_ranges = True
            self.listings = True

    def clear_log(self) -> None:
        with self._lock:
            self._log.clear()
            self.peak_in_flight = 0

    def requests(self, method: str | None = None, path_contains: str = "") -> list[Request]:
        """The logged requests, oldest first, optionally of one method / path substring."""
        with self._lock:
            log = list(self._log)
        return [
            r for r in log if (method is None or r.method == method) and path_contains in r.path
        ]

    # -- used by the servers --
    def _before(self, path: str) -> FaultKind | None:
        """Sleep the delay (counted in `peak_in_flight`), then take the first pending failure
        that matches `path`."""
        with self._lock:
            self._in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self._in_flight)
        try:
            if self.delay_s:
                time.sleep(self.delay_s)
        finally:
            with self._lock:
                self._in_flight -= 1
        with self._lock:
            for i, (kind, match) in enumerate(self._pending):
                if match in path:
                    del self._pending[i]
                    return kind
        return None

    def _record(self, request: Request) -> None:
        with self._lock:
            self._log.append(request)


def _reset_socket(sock: socket.socket) -> None:
    """Close with SO_LINGER 0 now: the peer sees ECONNRESET, not a clean end of stream.

    `sock.close()` would wait for the handler's makefile() objects to let go of the socket;
    detaching closes the descriptor at once, and the handler's later use of the socket object
    fails with EBADF instead of touching a reused descriptor.
    """
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        os.close(sock.detach())
    except OSError:
        pass


def _quiet_after_reset(handle_error: Any) -> Any:
    """socketserver's handle_error, silent for the EBADF a handler meets after `_reset_socket`."""

    def handle(request: Any, client_address: Any) -> None:
        import sys

        err = sys.exc_info()[1]
        if isinstance(err, OSError) and err.errno == errno.EBADF:
            return
        handle_error(request, client_address)

    return handle


_SLOW_DOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate (injected by tests/servers.py).</Message></Error>"
)


_DENIED = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
    b"<Message>Access Denied (injected by tests/servers.py).</Message></Error>"
)


class _FaultMiddleware:
    """WSGI middleware: delay, fail and log each request before moto's app sees it."""

    def __init__(self, app: Any, faults: Faults) -> None:
        self.app, self.faults = app, faults

    def __call__(self, environ: dict, start_response: Any) -> Iterable[bytes]:
        if ADMIN_AGENT in environ.get("HTTP_USER_AGENT", ""):
            return self.app(environ, start_response)
        method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")
        query, rng = environ.get("QUERY_STRING", ""), environ.get("HTTP_RANGE")
        kind = self.faults._before(path)
        if kind == "reset":
            self.faults._record(Request(method, path, query, rng, 0, 0))
            _reset_socket(environ["werkzeug.socket"])
            raise ConnectionResetError("injected by tests/servers.py")  # werkzeug: dropped
        if kind in ("503", "403"):
            code, text = (503, _SLOW_DOWN) if kind == "503" else (403, _DENIED)
            body = b"" if method == "HEAD" else text
            start_response(
                "503 Slow Down" if code == 503 else "403 Forbidden",
                [("Content-Type", "application/xml"), ("Content-Length", str(len(text)))],
            )
            self.faults._record(Request(method, path, query, rng, code, len(body)))
            return [body]
        status: list[int] = []

        def recording_start(status_line: str, headers: list, exc_info: Any = None) -> Any:
            status.append(int(status_line.split()[0]))
            return start_response(status_line, headers, exc_info)

        # moto builds every body in memory anyway: join it so the request is logged before its
        # first byte leaves (a client that saw the response then always finds it in the log)
        body = self.app(environ, recording_start)
        try:
            data = b"".join(body)
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()
        sent = 0 if method == "HEAD" else len(data)
        self.faults._record(Request(method, path, query, rng, status[0] if status else 0, sent))
        return [data]


class S3Server:
    """moto's S3 (all of moto's services, in fact) on 127.0.0.1 behind `Faults`.

    Built from the pieces `moto.server.ThreadedMotoServer` uses, with the app wrapped in the
    fault middleware and port 0 (the kernel picks a free port; no race between finding and
    binding it).
    """

    def __init__(self) -> None:
        from moto.moto_server.werkzeug_app import (
            DomainDispatcherApplication,
            MotoRequestHandler,
            create_backend_app,
        )
        from werkzeug.serving import make_server

        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
        self.faults = Faults()
        app = _FaultMiddleware(DomainDispatcherApplication(create_backend_app), self.faults)
        self._server = make_server(
            "127.0.0.1", 0, app, threaded=True, request_handler=MotoRequestHandler
        )
        self._server.daemon_threads = True
        self._server.handle_error = _quiet_after_reset(self._server.handle_error)  # type: ignore[method-assign]
        self.endpoint_url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def storage_options(self) -> dict[str, Any]:
        """What `fsspec.filesystem("s3", **options)` / a vidload source takes for this server."""
        return {
            "key": KEY,
            "secret": SECRET,
            "client_kwargs": {"endpoint_url": self.endpoint_url, "region_name": REGION},
        }

    def env(self) -> dict[str, str]:
        """The standard AWS variables that point a subprocess (boto3, s3fs) at this server."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_ACCESS_KEY_ID": KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET,
            "AWS_DEFAULT_REGION": REGION,
        }

    def admin(self) -> Any:
        """A boto3 S3 client whose requests the faults ignore (setup and checks of a test)."""
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=KEY,
            aws_secret_access_key=SECRET,
            region_name=REGION,
            config=Config(user_agent_extra=ADMIN_AGENT, retries={"max_attempts": 1}),
        )

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


class S3Bucket:
    """One bucket on an `S3Server`, with helpers to fill and inspect it (through `admin()`)."""

    def __init__(self, server: S3Server, name: str) -> None:
        self.server, self.name = server, name
        self.faults = server.faults
        self.storage_options = server.storage_options
        self.url = f"s3://{name}"
        self._admin = server.admin()
        self._admin.create_bucket(Bucket=name)

    def env(self) -> dict[str, str]:
        return self.server.env()

    def upload(self, local: str | os.PathLike, prefix: str = "") -> str:
        """Copy a local file or folder tree to `s3://<bucket>/<prefix>`; returns that URL."""
        local = Path(local)
        prefix = prefix.strip("/")
        files = [local] if local.is_file() else sorted(p for p in local.rglob("*") if p.is_file())
        for f in files:
            rel = f.name if f == local else f.relative_to(local).as_posix()
            key = f"{prefix}/{rel}" if prefix else rel
            self._admin.put_object(Bucket=self.name, Key=key, Body=f.read_bytes())
        return f"{self.url}/{prefix}" if prefix else self.url

    def keys(self, prefix: str = "") -> list[str]:
        """Every key under `prefix`, sorted."""
        pages = self._admin.get_paginator("list_objects_v2").paginate(
            Bucket=self.name, Prefix=prefix
        )
        return sorted(o["Key"] for page in pages for o in page.get("Contents", []))

    def get(self, key: str) -> bytes:
        return self._admin.get_object(Bucket=self.name, Key=key)["Body"].read()

    def put(self, key: str, data: bytes) -> None:
        self._admin.put_object(Bucket=self.name, Key=key, Body=data)

    def multipart_uploads(self) -> list[str]:
        """Keys of multipart uploads started and neither completed nor aborted."""
        out = self._admin.list_multipart_uploads(Bucket=self.name)
        return sorted(u["Key"] for u in out.get("Uploads", []))

    def delete(self) -> None:
        for key in self.keys():
            self._admin.delete_object(Bucket=self.name, Key=key)
        for u in self._admin.list_multipart_uploads(Bucket=self.name).get("Uploads", []):
            self._admin.abort_multipart_upload(
                Bucket=self.name, Key=u["Key"], UploadId=u["UploadId"]
            )
        self._admin.delete_bucket(Bucket=self.name)


_RANGE = re.compile(r"bytes=(\d*)-(\d*)$")


def _parse_range(header: str, size: int) -> tuple[int, int] | None:
    """`[start, stop)` of one "bytes=a-b" / "a-" / "-n" range; None when unsatisfiable."""
    m = _RANGE.match(header.strip())
    if m is None or m.group(1) == m.group(2) == "":
        return None
    if m.group(1) == "":
        n = int(m.group(2))
        return (max(size - n, 0), size) if n > 0 and size > 0 else None
    start = int(m.group(1))
    stop = size if m.group(2) == "" else min(int(m.group(2)) + 1, size)
    return (start, stop) if start < stop else None


class _RangeHandler(http.server.SimpleHTTPRequestHandler):
    """Files with one byte range per request; directories as SimpleHTTPRequestHandler lists them."""

    protocol_version = "HTTP/1.1"  # keep-alive, as real servers and aiohttp's pool expect
    server: _HttpServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib's name)
        pass

    def do_GET(self) -> None:
        self._serve(body=True)

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def _serve(self, body: bool) -> None:
        faults = self.server.faults
        parsed = urllib.parse.urlsplit(self.path)
        rng = self.headers.get("Range")
        kind = faults._before(parsed.path)
        if kind == "reset":
            faults._record(Request(self.command, parsed.path, parsed.query, rng, 0, 0))
            _reset_socket(self.connection)
            self.close_connection = True
            return
        if kind in ("503", "403"):
            self._reply(int(kind), b"injected by tests/servers.py\n", body, rng, "text/plain")
            return
        local = Path(self.translate_path(self.path))
        if local.is_dir() and not faults.listings:
            self._reply(403, b"listing refused\n", body, rng, "text/plain")
            return
        if local.is_dir():
            f = self.send_head()  # the stdlib's listing (or a redirect to the slash form)
            data = b""
            if f is not None:
                data = f.read()
                f.close()
            code = 200 if parsed.path.endswith("/") else 301  # send_head redirects "dir" to "dir/"
            sent = len(data) if body else 0
            faults._record(Request(self.command, parsed.path, parsed.query, rng, code, sent))
            if body:
                self.wfile.write(data)
            return
        if not local.is_file():
            self._reply(404, b"not found\n", body, rng, "text/plain")
            return
        data = local.read_bytes()
        headers = {
            "Accept-Ranges": "bytes",
            "Last-Modified": email.utils.formatdate(local.stat().st_mtime, usegmt=True),
        }
        if rng is None:
            self._reply(200, data, body, rng, self.guess_type(str(local)), headers)
            return
        if "," in rng:
            self._multi(data, rng, body, headers, self.guess_type(str(local)))
            return
        span = _parse_range(rng, len(data))
        if span is None:
            headers["Content-Range"] = f"bytes */{len(data)}"
            self._reply(416, b"", body, rng, "text/plain", headers)
            return
        start, stop = span
        headers["Content-Range"] = f"bytes {start}-{stop - 1}/{len(data)}"
        self._reply(206, data[start:stop], body, rng, self.guess_type(str(local)), headers)

    def _multi(
        self, data: bytes, rng: str, body: bool, headers: dict[str, str], ctype: str
    ) -> None:
        """Several ranges: a part each (those that can be served), in the order asked."""
        if not self.server.faults.multi_ranges:
            self._reply(200, data, body, rng, ctype, headers)
            return
        unit, _, specs = rng.partition("=")
        spans = [_parse_range(f"{unit}={spec}", len(data)) for spec in specs.split(",")]
        served = [s for s in spans if s is not None]
        if unit.strip() != "bytes" or not served:
            headers["Content-Range"] = f"bytes */{len(data)}"
            self._reply(416, b"", body, rng, "text/plain", headers)
            return
        boundary = "vidload-test-boundary"
        out = bytearray()
        for start, stop in served:
            out += f"\r\n--{boundary}\r\nContent-Type: {ctype}\r\n".encode()
            out += f"Content-Range: bytes {start}-{stop - 1}/{len(data)}\r\n\r\n".encode()
            out += data[start:stop]
        out += f"\r\n--{boundary}--\r\n".encode()
        kind = f"multipart/byteranges; boundary={boundary}"
        self._reply(206, bytes(out), body, rng, kind, headers)

    def _reply(
        self,
        code: int,
        data: bytes,
        body: bool,
        rng: str | None,
        ctype: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        parsed = urllib.parse.urlsplit(self.path)
        sent = len(data) if body else 0
        # logged before the first byte leaves: a client that saw the answer finds it in the log
        self.server.faults._record(
            Request(self.command, parsed.path, parsed.query, rng, code, sent)
        )
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if body:
            self.wfile.write(data)


class _HttpServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    #: socketserver's listen backlog is 5: a round of a dozen new connections overflowed it,
    #: and a dropped connect is retried a second later (outside a counted round)
    request_queue_size = 128
    faults: Faults

    def handle_error(self, request: Any, client_address: Any) -> None:
        _quiet_after_reset(super().handle_error)(request, client_address)


class HttpServer:
    """A folder over HTTP on 127.0.0.1 at a free port, with Range support and `Faults`."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)
        handler = _partial_handler(str(self.root))
        self._server = _HttpServer(("127.0.0.1", 0), handler)
        self.faults = self._server.faults = Faults()
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


def _partial_handler(directory: str) -> Any:
    def handler(*args: Any, **kwargs: Any) -> _RangeHandler:
        return _RangeHandler(*args, directory=directory, **kwargs)

    return handler


@dataclass(frozen=True)
class ServedDir:
    """A fresh folder `path`, served at `url` (no trailing slash) by the session HTTP server."""

    path: Path
    url: str
    faults: Faults


# -- pytest fixtures (imported by tests/conftest.py) --
_bucket_numbers = itertools.count()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """One moto S3 server for the session; skips when moto[server] or s3fs is not installed."""
    pytest.importorskip("moto", reason="moto[server] is not installed (the test extra)")
    pytest.importorskip("werkzeug", reason="moto[server] is not installed (the test extra)")
    pytest.importorskip("s3fs", reason="s3fs is not installed (vidload[s3])")
    server = S3Server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_bucket(s3_server: S3Server) -> Iterator[S3Bucket]:
    """A fresh empty bucket on the session server, deleted after the test; faults reset."""
    s3_server.faults.reset()
    bucket = S3Bucket(s3_server, f"vidload-test-{os.getpid()}-{next(_bucket_numbers)}")
    try:
        yield bucket
    finally:
        s3_server.faults.reset()
        bucket.delete()


@pytest.fixture(scope="session")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """One Range-capable HTTP server for the session, serving a session temporary folder."""
    server = HttpServer(tmp_path_factory.mktemp("http_root"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def http_dir(http_server: HttpServer) -> Iterator[ServedDir]:
    """A fresh folder served by the session HTTP server; faults reset before and after."""
    http_server.faults.reset()
    name = f"d{next(_bucket_numbers)}"
    path = http_server.root / name
    path.mkdir()
    try:
        yield ServedDir(path, f"{http_server.url}/{name}", http_server.faults)
    finally:
        http_server.faults.reset()
