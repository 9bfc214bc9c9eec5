"""s3fs: the one home of the parts vidload uses that s3fs does not document.

A reader that keeps an object's head and reads its body later needs each GET's ETag with its
bytes (`filesystems.cat_one`, `RemoteLocation.versioned`), and one that opens an object needs
the size its GETs' answers report (`RemoteLocation.read_ends`: no HEAD of its own); s3fs's
public `cat_file` hands the body only. So the GET goes out through
`S3FileSystem._call_s3("get_object", ...)`, s3fs's own client (its credentials, endpoint,
retries and connection pool), with the bucket and key from its `split_path`. Every such use
is here and nowhere else; `contract_problems()` names what changed when an s3fs release moves
them, and `tests/test_storage_adapters.py` fails on it (and reads a real object through
`get_object` at the local S3 server).
"""

from __future__ import annotations

from typing import Any

from vidload._storage.http_adapter import member_problems
from vidload._storage.ranges import http_range

__all__ = ["contract_problems", "get_object", "is_s3"]


def is_s3(fs: Any) -> bool:
    """`fs` is s3fs's filesystem (its public `protocol` says so)."""
    protocol = getattr(type(fs), "protocol", ())
    return "s3" in (protocol if isinstance(protocol, tuple) else (protocol,))


async def get_object(
    fs: Any, path: str, start: int | None, stop: int | None
) -> tuple[bytes, str | None, int | None]:
    """`path`'s bytes `[start, stop)` (the whole object where both are None, its last -start
    bytes where start < 0 and stop is None), the ETag the GET's answer reported, and the
    object's size it reported (a range's ContentRange total; None where it says none), in
    one request on s3fs's client."""
    bucket, key, version_id = fs.split_path(path)
    kw: dict[str, Any] = {"VersionId": version_id} if version_id else {}
    asked = http_range(start, stop)
    if asked is not None:
        kw["Range"] = asked
    resp = await fs._call_s3("get_object", Bucket=bucket, Key=key, **kw)
    try:
        data = await resp["Body"].read()
    finally:
        resp["Body"].close()
    total = str(resp.get("ContentRange", "")).rpartition("/")[2]
    size = int(total) if total.isdigit() else None if asked else len(data)
    return data, resp.get("ETag"), size


#: What `get_object` uses of `S3FileSystem`: name -> (its parameters, a coroutine).
_USED: dict[str, tuple[tuple[str, ...], bool]] = {
    "_call_s3": (("self", "method", "akwarglist", "kwargs"), True),
    "split_path": (("self", "path"), False),
}


def contract_problems() -> list[str]:
    """What the installed s3fs no longer has of what this module uses (empty: all there)."""
    from s3fs import S3FileSystem

    return member_problems(S3FileSystem, _USED)
