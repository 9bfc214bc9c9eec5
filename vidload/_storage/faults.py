"""Faults of remote storage: what kind a failure is, bounded retries, safe messages.

A missing object is `VideoReadError(url, "not found")`, denied access says "access denied",
and transient failures (HTTP 5xx/429/408, connection reset, timeouts) are retried `RETRIES`
more times with backoff (`BACKOFF_S`), then a `VideoReadError` saying how many attempts
failed. (For S3 these replace s3fs's own retry loop; botocore still retries within each
attempt as the AWS configuration says: `AWS_MAX_ATTEMPTS`, `retry_mode`.) Messages show the
URL without user info or query string, and any storage option value longer than 5 characters
(and the AWS_* secrets of the environment) is blanked, so credentials never appear in an
error or a log line.

Local files need none of this: `local.py` maps its `OSError`s to the same reasons directly.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from vidload._storage.filesystems import MissingExtraError
from vidload.errors import VideoReadError

__all__ = ["BACKOFF_S", "CHANGED", "RETRIES", "call"]

T = TypeVar("T")

#: The reason of a read of a versioned location (`RemoteLocation.versioned`) whose answer
#: came from another version of the object than its earlier reads: rewritten in between.
CHANGED = "changed since it was first read"
#: Extra attempts after a transient failure, and the wait before each (seconds).
RETRIES = 3
BACKOFF_S = (0.1, 0.3, 1.0)


def _status(e: BaseException | None) -> int | None:
    """The HTTP status an exception carries (aiohttp, botocore), if any."""
    status = getattr(e, "status", None)
    if isinstance(status, int):
        return status
    response = getattr(e, "response", None)
    if isinstance(response, dict):
        code = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return code if isinstance(code, int) else None
    return None


def kind(e: BaseException) -> str:
    """ "missing", "denied", "transient" or "permanent"."""
    if isinstance(e, FileNotFoundError):
        return "missing"
    if isinstance(e, PermissionError):
        return "denied"
    for carrier in (e, e.__cause__, e.__context__):  # its own status, else its cause's
        status = _status(carrier)
        if status is not None:
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


def _scrubbed(text: str, options: Mapping[str, Any] | None) -> str:
    """`text` with the storage option values (keys, secrets, tokens) and the AWS credentials
    of the environment blanked out."""
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
    for s in sorted(set(secrets), key=len, reverse=True):
        text = text.replace(s, "***")
    return text


def call(
    where: object,
    options: Mapping[str, Any] | None,
    what: str,
    fn: Callable[[], T],
    *,
    index: int | None = None,
) -> T:
    """`fn()`, its errors as VideoReadError naming `where` (a location); transient ones
    retried (see the module docstring)."""
    attempt = 0
    while True:
        try:
            return fn()
        except MissingExtraError:
            raise
        except Exception as e:
            k = kind(e)
            if k == "transient" and attempt < RETRIES:
                time.sleep(BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)])
                attempt += 1
                continue
            said = _scrubbed(f"{type(e).__name__}: {str(e) or type(e).__name__}", options)
            if k == "missing":
                reason = "not found"
            elif k == "denied":
                reason = f"access denied ({said})"
            elif k == "transient":
                reason = f"{what} failed {attempt + 1} times: {said}"
            else:
                reason = f"cannot {what}: {said}"
            raise VideoReadError(where, reason, index) from None
