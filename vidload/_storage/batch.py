"""Many locations at once: each group of one filesystem in one concurrent round.

`fetch` is what makes a batch one round-trip (`ClipDataset.__getitems__`): the byte ranges of
every clip of a batch, of up to batch-size different objects, go out as one `cat_ranges` of
the remote filesystem (local files are read one after another by `pread`: nothing to wait
on). `read_many` fetches whole objects (a JPEG clip's frame files), `put_many` uploads files.
Each group is handled by its implementation's own class method (`Location._fetch_group`, ...):
nothing here asks which implementation a location is.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from vidload._lru import ProcessLRU
from vidload._storage.location import Location
from vidload._storage.ranges import Block, cut

__all__ = ["fetch", "fetch_started", "held", "holding", "put_many", "read_many", "run_concurrently"]

T = TypeVar("T")
R = TypeVar("R")

#: A request of `fetch`: a location and its [start, stop) ranges, or None for the whole object.
Request = tuple[Location, Sequence[tuple[int, int]] | None]


def _groups(locations: Sequence[Location]) -> dict[tuple[str, ...], list[int]]:
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, loc in enumerate(locations):
        groups.setdefault(loc._group(), []).append(i)
    return groups


def fetch(requests: Sequence[Request]) -> list[list[bytes] | Exception]:
    """For each `(location, [(start, stop), ...])`, the bytes of its ranges in the order
    given (fewer at the end of an object); for `(location, None)` the whole object, as one
    item. Or, in its place, the VideoReadError its reading raised (so that one missing object
    of a batch fails only its own clip). All the remote requests of one filesystem are one
    concurrent round (the ranges of one object coalesced as `read_ranges` does); a location
    whose requests failed is read again on its own, with its retries."""
    out: list[list[bytes] | Exception] = [[] for _ in requests]
    for members in _groups([loc for loc, _ in requests]).values():
        got = type(requests[members[0]][0])._fetch_group([requests[i] for i in members])
        for i, item in zip(members, got, strict=True):
            out[i] = item
    return out


def fetch_started(
    groups: Sequence[Sequence[Request]], *, ahead: bool = False
) -> list[Future | None]:
    """`fetch(group)` of each group started at once in threads (None for an empty group): one
    round for all of them, whose results arrive as each group is answered, so that a caller
    decodes the first items of a batch while the rest are on the way. A future's result is
    `fetch`'s list, or its exception. A lone group is fetched here, before returning (the
    caller waits for it anyway), unless `ahead` (a round for later, `vidload._dataset.batch`:
    every group in a thread)."""
    if not ahead and sum(1 for g in groups if g) <= 1:
        return [_done(fetch(g)) if g else None for g in groups]
    started = iter(_started(fetch, [g for g in groups if g]))
    return [next(started) if g else None for g in groups]


def _done(value: object) -> Future:
    f: Future = Future()
    f.set_result(value)
    return f


def read_many(locations: Sequence[Location]) -> list[bytes]:
    """The whole contents of each location, in order (`fetch` of each whole: the remote ones
    of one filesystem in one concurrent round, a JPEG clip's frames); the first failure
    raised. One location, or all of them held (`holding`), read on their own."""
    if len(locations) == 1 or all(
        (h := held(loc.url)) and h.whole is not None for loc in locations
    ):
        return [loc.read_bytes() for loc in locations]
    got = fetch([(loc, None) for loc in locations])
    for item in got:
        if isinstance(item, Exception):
            raise item
    return [item[0] for item in got]  # type: ignore[index]


def put_many(files: Sequence[tuple[str | os.PathLike[str], Location]]) -> None:
    """Upload each local file to its location; the remote ones of one filesystem go up
    concurrently (fsspec's batched `put`: a JPEG frame folder in a few round trips instead of
    one per frame). A failure raises VideoReadError naming the first location of the batch
    (after the transient retries, which redo the whole batch)."""
    pairs = [(os.fspath(local), loc) for local, loc in files]
    for members in _groups([loc for _, loc in pairs]).values():
        type(pairs[members[0]][1])._put_group([pairs[i] for i in members])


class Held:
    """Bytes fetched ahead for one object: blocks `[(start, stop asked, bytes)]` and maybe the
    whole object; to begin with, what `before` holds (an outer `holding`'s)."""

    __slots__ = ("blocks", "error", "whole")

    def __init__(self, before: Held | None = None) -> None:
        self.blocks: list[Block] = [] if before is None else list(before.blocks)
        self.whole: bytes | None = None if before is None else before.whole
        #: The error the round's request met (nothing held: a read asks storage itself).
        self.error: Exception | None = None if before is None else before.error

    def get(self, a: int, b: int) -> bytes | None:
        """Bytes [a, b) when a held block was asked for them (shorter where the object ended
        there, as a read of them would be)."""
        return self.whole[a:b] if self.whole is not None else cut(self.blocks, a, b)


_HELD = threading.local()


def held(url: str) -> Held | None:
    """What `holding` keeps for `url` in this thread, or None."""
    table = getattr(_HELD, "table", None)
    return None if table is None else table.get(url)


@contextlib.contextmanager
def holding(
    requests: Sequence[Request], fetched: Sequence[list[bytes] | Exception]
) -> Iterator[None]:
    """Inside the block, this thread's reads of the fetched ranges (and whole objects) of
    `requests` are answered from `fetched` without a request (`RemoteLocation` asks `held`);
    any other read goes to storage as usual. This is how a batch read in one round
    (`fetch`) is then decoded by the same per-item code as one read alone: identical bytes,
    identical errors (a failed request is not held, so its reader meets the error itself)."""
    outer = getattr(_HELD, "table", None)
    table = dict(outer or {})  # nested: the outer blocks of an object stay held beside these
    mine: dict[str, Held] = {}
    for (loc, ranges), got in zip(requests, fetched, strict=True):
        h = mine.get(loc.url)
        if h is None:  # what an outer block holds of it too: as if held together
            h = mine[loc.url] = table[loc.url] = Held(table.get(loc.url))
        if isinstance(got, Exception):
            h.error = got  # held for `held(url).error`; a read of it goes to storage
            continue
        if ranges is None:
            h.whole = got[0]
        else:
            h.blocks.extend((a, b, data) for (a, b), data in zip(ranges, got, strict=True))
    _HELD.table = table
    try:
        yield
    finally:
        _HELD.table = outer


#: Threads that wait on storage for `run_concurrently` (the waits overlap; the CPU work is
#: small): one pool per process, made on first use (a forked child makes its own).
_POOL_THREADS = 16
_POOL: ProcessLRU[str, ThreadPoolExecutor] = ProcessLRU(None)


def _pool() -> ThreadPoolExecutor:
    return _POOL.get_or_make(
        "pool", lambda: ThreadPoolExecutor(_POOL_THREADS, thread_name_prefix="vidload-io")
    )


_GROUP = threading.local()
_GROUPS = [0]


def concurrent_group() -> int | None:
    """The number of the `run_concurrently` call this thread is running a call of, else None
    (what `remote.count` counts its rounds by: the calls of one group wait together)."""
    return getattr(_GROUP, "number", None)


def run_concurrently(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """`[fn(x) for x in items]` with the calls in threads at once, for calls that wait on
    storage (opening the heads of a batch's objects: one round for all of them). `fn` must
    not touch shared state; its exceptions propagate."""
    if len(items) <= 1:
        return [fn(x) for x in items]
    futures = _started(fn, items)
    try:
        return [f.result() for f in futures]
    finally:  # after a failure, the calls still queued are not sent (no-op for the done)
        for f in futures:
            f.cancel()


def _started(fn: Callable[[T], R], items: Sequence[T]) -> list[Future]:
    """`fn(x)` of each item started at once in this process's pool, the calls one concurrent
    group (`concurrent_group`)."""
    pool = _pool()
    _GROUPS[0] += 1
    number = _GROUPS[0]
    return [pool.submit(_in_group, number, fn, x) for x in items]


def _in_group(number: int, fn: Callable[[T], R], x: T) -> R:
    """`fn(x)` as a call of the concurrent group `number` (see `concurrent_group`)."""
    _GROUP.number = number
    try:
        return fn(x)
    finally:
        _GROUP.number = None
