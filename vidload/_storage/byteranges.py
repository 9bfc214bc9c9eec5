"""Byte spans of any fsspec filesystem in one concurrent round (`cat_spans`), and over
fsspec's HTTP filesystem several byte ranges of one object in one request
(`multipart/byteranges`, RFC 9110 §14.6).

Every request costs the client ~0.2-0.3 ms of CPU whatever the client (aiohttp through fsspec,
or obstore: `tools/obstore_cost.py`), and a clip of a container is ~8 ranges of one object
(its frames) plus the checks of its head: ~10 requests, ~3 ms of a worker's CPU per clip,
half of what decoding the clip costs. A plain HTTP server (nginx, Apache) answers a
GET whose Range lists several ranges with one `206 multipart/byteranges` answer carrying
each range as a part: one request per object instead of one per range. S3 does not serve
it (its documentation says so); `s3://` and `gs://` URLs are read through their own
filesystems, one range a request, unchanged.

fsspec's `cat_ranges` sends one GET per range and hands no headers back, so this module sends
the GETs itself, on the filesystem's own aiohttp session (its headers, auth and connection
pool; `http_adapter` holds what that takes of fsspec's undocumented parts) and event loop,
and parses the answer by each part's Content-Range (a server may merge adjacent ranges or
reorder them: each asked range is cut from the part that covers it). A server that does not
serve several ranges in one answer (a `200` with the whole object, or a single part that does
not cover them all) is remembered for this process (`unsupported`) and read one range per
request from then on, as before; the answer it sent is not read further (a whole object is
not downloaded to be thrown away). Any other unusable answer (a `416`: a range past the end; a
part missing) falls back to one request per range for that object alone.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Sequence
from typing import Any

from vidload._storage import http_adapter
from vidload._storage.filesystems import Answer, Span, answer_version, cat_one
from vidload._storage.ranges import block_of, coalesce, cut, split_blocks

__all__ = ["MAX_RANGES", "cat_spans", "parse_byteranges", "unsupported"]

#: Ranges one request asks at most (a header of ~2 KiB; Apache's MaxRanges is 200).
MAX_RANGES = 64

#: The hosts ("scheme://netloc") that answered a multi-range request with something else (a
#: set's `add` is atomic: the event loops of several filesystems add without a lock).
_UNSUPPORTED: set[str] = set()

_BOUNDARY = re.compile(r"""boundary=(?:"([^"]+)"|([^;\s]+))""", re.IGNORECASE)
#: A Content-Range value (a one-part answer's header), and the header in a part's head.
_RANGE = re.compile(rb"[ \t]*bytes[ \t]+(\d+)-(\d+)/(\d+|\*)", re.IGNORECASE)
_CONTENT_RANGE = re.compile(rb"^content-range:" + _RANGE.pattern, re.IGNORECASE | re.MULTILINE)

Part = tuple[int, bytes]


def _host(url: Any) -> str:
    parts = urllib.parse.urlsplit(str(url))
    return f"{parts.scheme}://{parts.netloc}"


def unsupported(url: Any) -> bool:
    """Whether this process learned that `url`'s server does not answer several ranges at once."""
    return _host(url) in _UNSUPPORTED


def parse_byteranges(body: bytes, content_type: str) -> tuple[list[Part], int | None] | None:
    """The (start, bytes) parts of a `multipart/byteranges` body and the object's size its
    parts report (None: "*"), or None where it is not one this parser can read whole (no
    boundary, a part without its Content-Range, a short part, no closing delimiter)."""
    found = _BOUNDARY.search(content_type)
    if found is None:
        return None
    delimiter = b"--" + (found.group(1) or found.group(2)).encode("latin-1")
    parts: list[Part] = []
    total: int | None = None
    pos = body.find(delimiter)
    while pos >= 0 and body.startswith(delimiter, pos):
        pos += len(delimiter)
        if body[pos : pos + 2] == b"--":
            return parts, total
        head_end = body.find(b"\r\n\r\n", pos)
        if head_end < 0:
            return None
        got = _CONTENT_RANGE.search(body, pos, head_end)
        if got is None:
            return None
        start, last = int(got.group(1)), int(got.group(2))
        if got.group(3).isdigit():
            total = int(got.group(3))
        data_start = head_end + 4
        data = body[data_start : data_start + last + 1 - start]
        pos = data_start + len(data) + 2
        if len(data) != last + 1 - start or not body.startswith(b"\r\n" + delimiter, pos - 2):
            return None  # a part longer or shorter than its Content-Range says
        parts.append((start, data))
    return None  # no closing delimiter: cut short


def _cover(
    asked: Sequence[tuple[int, int]], parts: Sequence[Part], total: int | None
) -> list[bytes] | None:
    """Each asked [a, b) cut from the part that holds it (shorter where the object ends
    before b, as a read of it would be), or None where a part is missing."""
    out = []
    held = [(start, start + len(data), data) for start, data in parts]
    for a, b in asked:
        if total is not None and a >= total:
            return None  # alone, its request says what it gets
        got = cut(held, a, b if total is None else min(b, total))
        if got is None:
            return None
        out.append(got)
    return out


async def _multi(
    fs: Any, path: str, asked: Sequence[tuple[int, int]]
) -> tuple[list[bytes], str | None, int | None] | None:
    """The asked ranges of `path` in one GET with the version and size its answer reports, or None
    where the answer cannot serve them (the caller then sends one request per range). A
    missing object or a failing server raises as `_cat_file` does."""
    ranges = ",".join(f"{a}-{b - 1}" for a, b in asked)
    url = http_adapter.url_of(fs, path)
    async with http_adapter.get(fs, path, {"Range": f"bytes={ranges}"}) as r:
        if r.status == 206:
            body = await r.read()
            ctype = r.headers.get("Content-Type", "")
            parts: list[Part] | None = None
            total: int | None = None
            if ctype.lower().startswith("multipart/byteranges"):
                parsed = parse_byteranges(body, ctype)
                if parsed is not None:
                    parts, total = parsed
            else:  # one part: the server merged the ranges, or served the first only
                header = r.headers.get("Content-Range", "").encode("latin-1", "replace")
                got = _RANGE.match(header)
                parts = None if got is None else [(int(got.group(1)), body)]
                total = int(got.group(3)) if got and got.group(3).isdigit() else None
            served = None if parts is None else _cover(asked, parts, total)
            if served is None:
                past_end = total is not None and any(a >= total for a, _ in asked)
                if parts is not None and not past_end:  # not a refusal: a stale range
                    _UNSUPPORTED.add(_host(url))
                return None
            return served, answer_version(r.headers, total), total
        if r.status == 200:  # the ranges ignored: the whole object, not read
            _UNSUPPORTED.add(_host(url))
            r.close()
            return None
        if r.status == 416:  # a range past the end: each alone says what it gets
            return None
        http_adapter.raise_for_status(fs, r, path)  # 404 (not found), 403, 5xx: raised
        return None


def cat_spans(fs: Any, spans: Sequence[Span]) -> tuple[list[Answer | Exception], int]:
    """Each `(path, start, stop)` span's `filesystems.Answer`, all in one concurrent round (an
    exception in place of a failed one, as `cat_ranges(on_error="return")`), and the number
    of requests sent: how `RemoteLocation` reads any fsspec filesystem (obstore's S3 aside).
    Over fsspec's HTTP (`http_adapter.is_http`) the ranges of one object go in one request
    where its server serves that (see the module docstring); every other span is one
    `filesystems.cat_one`, on the filesystem's event loop.

    The version is what the GET's own answer says: S3's ETag, HTTP's ETag (else its
    Last-Modified and total size); the size is its Content-Range's total (a whole object's
    length); None where the filesystem does not hand its responses out (a blocking one, read
    by `cat_ranges`: then nothing can be compared, and `RemoteLocation.read_ends` asks the
    size). This is how a reader that keeps an object's header knows that the bytes it fetches
    later are still that object's, and one that opens an object its size, without a request
    of their own (`RemoteLocation.versioned`, `RemoteLocation.read_ends`). fsspec's
    `cat_ranges` returns the bodies only, so S3 and HTTP are read by their filesystems' own
    clients (`s3_adapter`, `http_adapter`: the one home each of what those libraries do not
    document), the rest by `_cat_file`. A whole S3 object is one GET (s3fs's own `cat_file`
    first asks its size, a HEAD, to fetch a large one in parts: the whole objects read here
    are small, manifests, sidecars, frame files)."""
    if not getattr(fs, "async_impl", False):  # a blocking filesystem: no answer to report
        paths, starts, stops = ([span[k] for span in spans] for k in range(3))
        got = fs.cat_ranges(paths, starts, stops, on_error="return")
        return [g if isinstance(g, Exception) else (g, None, None) for g in got], len(spans)
    import asyncio

    from fsspec.asyn import sync

    starts, stops = [span[1] for span in spans], [span[2] for span in spans]
    by_path: dict[str, list[int]] = {}
    singles: list[int] = []
    http = http_adapter.is_http(fs)
    for i, (path, a, b) in enumerate(spans):
        if not http or a is None or b is None or a >= b:
            singles.append(i)
        else:
            by_path.setdefault(path, []).append(i)
    # per object: its spans merged where they overlap or touch (several spans of one object
    # may come from several clips of a batch; a server may refuse overlapping ranges), at
    # most MAX_RANGES of them a request, each span cut back out of its block
    jobs: list[tuple[str, list[tuple[int, int]], list[int]]] = []
    for path, members in by_path.items():
        if len(members) == 1 or unsupported(http_adapter.url_of(fs, path)):
            singles.extend(members)
            continue
        merged = coalesce([(starts[i], stops[i]) for i in members], 0)  # type: ignore[misc]
        chunks: dict[int, list[int]] = {}
        for i in members:
            chunks.setdefault(block_of(merged, starts[i]) // MAX_RANGES, []).append(i)  # type: ignore[arg-type]
        for k, mine in chunks.items():
            jobs.append((path, merged[k * MAX_RANGES : (k + 1) * MAX_RANGES], mine))
    out: list[Any] = [None] * len(spans)
    sent = [0]

    async def one(i: int) -> None:
        sent[0] += 1
        try:
            out[i] = await cat_one(fs, *spans[i])
        except Exception as e:  # noqa: BLE001 - returned in place, as cat_ranges does
            out[i] = e

    async def several(path: str, asked: list[tuple[int, int]], members: list[int]) -> None:
        sent[0] += 1
        try:
            got = await _multi(fs, path, asked)
        except Exception as e:  # noqa: BLE001 - the object's failure, for each of its ranges
            for i in members:
                out[i] = e
            return
        if got is None:
            await asyncio.gather(*(one(i) for i in members))
            return
        blocks, version, total = got
        wanted = [(starts[i], stops[i]) for i in members]
        for i, data in zip(members, split_blocks(wanted, asked, blocks), strict=True):  # type: ignore[arg-type]
            out[i] = (data, version, total)

    async def gather() -> None:
        await asyncio.gather(*(one(i) for i in singles), *(several(*job) for job in jobs))

    sync(fs.loop, gather)
    return out, sent[0]
