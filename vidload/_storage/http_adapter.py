"""fsspec's HTTP filesystem: the one home of the parts vidload uses that fsspec does not document.

vidload sends two kinds of GET that fsspec's public `cat_ranges` cannot: a Range of several
ranges answered as one `multipart/byteranges` (`byteranges`), and a range whose answer's
headers (ETag, Last-Modified) are kept as the object's version (`filesystems.cat_one`). Both
go out on the filesystem's own aiohttp session, so they share its headers, auth, client
options and connection pool: that needs `HTTPFileSystem.set_session()`, `.encode_url()`,
`.kwargs` and `._raise_not_found_for_status()`, none of which fsspec promises to keep.
Every such use is here and nowhere else; `contract_problems()` names what changed when an
fsspec release moves them, and `tests/test_storage_adapters.py` fails on it (and runs a real
request through each function against the test Range server).
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

__all__ = ["contract_problems", "get", "is_http", "member_problems", "raise_for_status", "url_of"]


def is_http(fs: Any) -> bool:
    """`fs` is fsspec's HTTP filesystem (its public `protocol` says so)."""
    protocol = getattr(type(fs), "protocol", ())
    return "http" in (protocol if isinstance(protocol, tuple) else (protocol,))


def url_of(fs: Any, path: str) -> str:
    """The URL fsspec itself requests for `path` (its quoting rules: `encoded=`)."""
    return str(fs.encode_url(path))


@asynccontextmanager
async def get(fs: Any, path: str, headers: Mapping[str, str]) -> AsyncIterator[Any]:
    """A GET of `path` with `headers` added to the filesystem's own, on its aiohttp session
    with its client options: the aiohttp response, open inside the `async with`."""
    kw = dict(fs.kwargs)
    merged = {**(kw.pop("headers", None) or {}), **headers}
    session = await fs.set_session()
    async with session.get(url_of(fs, path), headers=merged, **kw) as r:
        yield r


def raise_for_status(fs: Any, response: Any, path: str) -> None:
    """Raise as fsspec's own reads raise for `response`'s status (FileNotFoundError for a
    404, aiohttp's errors for 403 and 5xx, which `faults` classifies); nothing for a 2xx."""
    fs._raise_not_found_for_status(response, path)


#: What the functions above use of `HTTPFileSystem`: name -> (its parameters, a coroutine).
_USED: dict[str, tuple[tuple[str, ...], bool]] = {
    "set_session": (("self",), True),
    "encode_url": (("self", "url"), False),
    "_raise_not_found_for_status": (("self", "response", "url"), False),
}


def member_problems(cls: type, used: Mapping[str, tuple[tuple[str, ...], bool]]) -> list[str]:
    """What `cls` no longer has of the members `used` names (name -> (its parameters, a
    coroutine)): a member gone, its parameters or its being a coroutine changed. Both
    adapters' contract check (`s3_adapter.contract_problems` too)."""
    problems = []
    for name, (params, is_async) in used.items():
        member = getattr(cls, name, None)
        if member is None:
            problems.append(f"{cls.__name__}.{name} is gone")
            continue
        got = tuple(inspect.signature(member).parameters)
        if got != params:
            problems.append(f"{cls.__name__}.{name} takes {got}, not {params}")
        if inspect.iscoroutinefunction(member) != is_async:
            problems.append(f"{cls.__name__}.{name} is {'not ' if is_async else ''}a coroutine")
    return problems


def contract_problems() -> list[str]:
    """What the installed fsspec no longer has of what this module uses (empty: all there)."""
    from fsspec.implementations.http import HTTPFileSystem

    problems = member_problems(HTTPFileSystem, _USED)
    if not isinstance(getattr(HTTPFileSystem(skip_instance_cache=True), "kwargs", None), dict):
        problems.append("HTTPFileSystem no longer keeps its client options as .kwargs")
    return problems
