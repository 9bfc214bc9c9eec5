"""Byte ranges: the one function that merges them, and slicing asked ranges back out of
blocks (`split_blocks` after a merge, `cut` from blocks held).

`coalesce` is used by the remote reads (gap `COALESCE_GAP`: a few more bytes cost less than
another request) and by the read-ahead hints of the local sources (`sources.base.hints_of`,
gap 0: adjacent frames become one hint). fsspec has `fsspec.utils.merge_offset_ranges`, which
merges (paths, starts, ends) the same way, but returns the merged ranges only and sorts the
paths too; a reader then needs each asked range back from its block, so `coalesce` and
`split_blocks` keep it to one sort and a binary search per asked range.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence

__all__ = ["COALESCE_GAP", "Block", "block_of", "coalesce", "cut", "http_range", "split_blocks"]

#: Ranges of one object closer than this are fetched as one request. Where each range is a
#: request (S3, GCS, a server without multipart answers) the requests of a round go out
#: together, so a merge saves no round trip but the client's CPU for a request, and costs
#: the CPU and the transfer of the gap's bytes. Measured (2026-12-03, nginx on 127.0.0.1,
#: client process time, 16 concurrent GETs of 24 KiB to 4 MiB): a request costs aiohttp
#: ~0.15 ms and a received KiB ~1.2 us (even at ~125 KiB), obstore ~0.11-0.15 ms and ~0.5
#: us (even at ~200-280 KiB), s3fs ~1.2 ms and ~1.4 us (~850 KiB); on a real network 256 KiB
#: more is also ~2.5 ms of transfer at ~100 MB/s a connection. 256 KiB lies between the
#: clients vidload reads S3 and HTTP with (obstore in workers, aiohttp); s3fs's break-even is
#: larger, but its bytes cost the same wire time.
COALESCE_GAP = 256 << 10
#: A block of bytes held: (start, stop, its bytes [start, stop), shorter where the object
#: ended before stop).
Block = tuple[int, int, bytes]


def coalesce(ranges: Sequence[tuple[int, int]], gap: int) -> list[tuple[int, int]]:
    """`[start, stop)` ranges sorted and merged where they overlap or lie at most `gap`
    bytes apart (gap 0: merged where they touch)."""
    merged: list[list[int]] = []
    for a, b in sorted(ranges):
        if merged and a <= merged[-1][1] + gap:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]


def block_of(merged: Sequence[tuple[int, int]], a: int) -> int:
    """The index of the last merged block starting at or before `a` (0 where none does)."""
    return max(0, bisect.bisect_right(merged, a, key=lambda block: block[0]) - 1)


def split_blocks(
    ranges: Sequence[tuple[int, int]], merged: Sequence[tuple[int, int]], blocks: Sequence[bytes]
) -> list[bytes]:
    """The bytes of each asked range, cut from the fetched `blocks` of `merged` (fewer bytes
    where a block came back short: the end of the object)."""
    out = []
    for a, b in ranges:
        k = block_of(merged, a)
        base = merged[k][0]
        block = blocks[k]
        if a == base and b == merged[k][1] and isinstance(block, bytes):
            out.append(block)  # the whole block: nothing to cut (or copy)
        else:
            out.append(bytes(memoryview(block)[a - base : b - base]))
    return out


def cut(blocks: Iterable[Block], a: int, b: int) -> bytes | None:
    """Bytes [a, b) from the first block that covers them (shorter where that block is), or
    None where none does."""
    for start, stop, data in blocks:
        if start <= a and b <= stop:
            return data[a - start : b - start]
    return None


def http_range(start: int | None, stop: int | None) -> str | None:
    """The HTTP Range header (S3's too) asking bytes [start, stop): the last -start bytes
    where start < 0 and stop is None (a suffix range), None for the whole object (both None)."""
    if start is None and stop is None:
        return None
    if start is not None and start < 0:
        return f"bytes={start}"
    return f"bytes={start or 0}-{'' if stop is None else stop - 1}"
