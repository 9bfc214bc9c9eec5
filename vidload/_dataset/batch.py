"""A batch of `ClipDataset` items in one concurrent round of storage requests.

`ClipDataset.__getitems__(indices)` (the DataLoader calls it with a batch's indices) is
`getitems`: for a source that can say which bytes a read needs (one that offers `prepare` and
`fetch_plan`, declared by `vidload.sources.base.FrameSourceBase`: `ContainerSource`'s,
`VideoSource`'s), it

1. opens the heads (frame table, npy header, folder listing) of the batch's videos that this
   process has not opened, all at once (`prepare`: one concurrent round, not one per video);
2. plans every item exactly as `__getitem__` will draw it (`ClipDataset.planned_reads`: the
   same (seed, epoch, clip) stream, the same counts) and asks the source for the byte ranges
   of those reads;
3. fetches all of them in one concurrent round (`vidload._storage.fetch`), then
4. runs `__getitem__` on each index with the fetched bytes held (`vidload._storage.batch.
   holding`): the remote reads are answered from them without a request;
5. when the batch names the batch this process reads next (a `Lead`,
   from `make_loader(fetch_ahead=True)`), plans that batch and sends its round before step 4,
   so that it is on the wire while this batch decodes; that batch then takes the bytes
   fetched ahead for each object its own plan asks nothing more of (`split`), and
   fetches the rest in its round.

So a worker waits one round-trip per batch (two for videos it never opened, one where the root's
sidecar of heads lists them: `vidload.sources._heads`), not one per clip (with the next
batch's round sent ahead, only what is left of it when that batch arrives), and each item is built
by the very code that builds it alone: the same bytes, errors, `on_error` skips, learned counts,
`return_info` and views. A read the plan did not foresee (a resample after a short count, a skip
to another video) goes to storage as usual. Where reads do not wait on a network (a local root,
a cached one) the source plans nothing and this is a plain loop over `__getitem__`: local disk
pays nothing for it.

Step 5, the next batch's round in flight while this one decodes (issue 33): a DataLoader worker
reads one batch at a time, and a batch's storage reads are one round sent when the batch
arrives: at 20 ms a request, the worker is idle for that round each batch. `make_loader`'s
`FetchAheadSampler` (`vidload.prefetch`) knows the order and how torch deals batches to workers
(in turn: a worker's next batch is the one `num_workers` batches later), and hands each batch's
first index as a `Lead`, an int that also names the indices of the batch the same worker reads
next. `getitems` plans that batch and sends its round (`_send_ahead`) before decoding the current
one, and when it arrives takes what the round fetched (`split`).

What makes a byte fetched ahead safe to use: bytes are held by object (URL) and exact [start,
stop) range, never by item. A batch uses the round sent ahead for an object only when its own
plan, made when it arrives, asks nothing of that object outside the ranges asked ahead (each
of its ranges inside one of them, as `vidload._storage.batch.Held.get` answers); otherwise it
fetches all of that object's requests itself, so an object's bytes in a batch always come from
one round, as without fetching ahead. A plan that changed (another epoch, a learned frame
count, a resumed loader, a batch that went to another worker than guessed) therefore wastes
the bytes sent ahead and never gives a wrong frame. At most one batch ahead per process and
dataset: the round sent for a batch is dropped when the next batch arrives, used or not.
"""

from __future__ import annotations

import contextlib
import time
import weakref
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from vidload._lru import ProcessLRU
from vidload._storage.batch import Request, fetch_started, holding
from vidload.errors import VidloadError
from vidload.sources.base import FrameSourceBase

__all__ = ["STATS", "Lead", "following", "getitems"]

#: What this process's planned batches waited for and what they fetched ahead (not
#: thread-safe: a count; `tools/fetch_ahead.py` reads it in each worker):
#: `batches` planned, `waited_s` seconds blocked on storage for them (wall time in `prepare`,
#: which opens heads, and waiting for the rounds' answers: an upper bound, `prepare`'s CPU
#: time included), `sent_ahead` rounds sent for a next batch, and of the objects
#: a batch read, `taken` answered from the round sent ahead and `again` fetched again because
#: its plan asked other ranges.
STATS: dict[str, float] = {"batches": 0, "waited_s": 0.0, "sent_ahead": 0, "taken": 0, "again": 0}


class Lead(int):
    """A batch's first index that also names (`following`) the indices of the batch the same
    DataLoader worker reads next. An int in every other respect, so that the batch sampler,
    the worker and `ClipDataset.__getitem__` take it as the index it is (pickled with its
    `following`)."""

    following: tuple[int, ...]

    def __new__(cls, index: int, following: Sequence[int]) -> Lead:
        self = super().__new__(cls, index)
        self.following = tuple(following)
        return self

    def __reduce__(self) -> tuple[type[Lead], tuple[int, tuple[int, ...]]]:
        return (Lead, (int(self), self.following))


def following(indices: Sequence[Any]) -> tuple[int, ...] | None:
    """The indices of the batch read next by this process, when `indices` (a batch) names
    them (its first is a `Lead`), else None."""
    if len(indices) == 0:
        return None
    first = indices[0]
    return first.following if isinstance(first, Lead) else None


@dataclass
class Sent:
    """A round sent ahead: its requests in groups and each group's future (None: empty)."""

    groups: list[list[Request]]
    futures: list[Future | None]


#: The round sent ahead, per process and dataset: (the dataset, weakly; what was sent).
_SENT: ProcessLRU[int, tuple[weakref.ref, Sent]] = ProcessLRU(4)


@dataclass
class Taken:
    """What a batch takes from a round sent ahead: the objects (URLs) it covers."""

    sent: Sent
    urls: frozenset[str]

    def answers(self) -> tuple[list[Request], list[list[bytes] | Exception]]:
        """(requests, what `fetch` gave for each) of the round sent ahead, for the covered
        objects, waiting for the groups that hold them (timed in `STATS`); a group that
        failed as a whole gives its exception for each of its requests (not held: their
        reads meet it themselves, as in `vidload._dataset.batch`)."""
        requests: list[Request] = []
        got: list[list[bytes] | Exception] = []
        for group, future in zip(self.sent.groups, self.sent.futures, strict=True):
            mine = [k for k, (loc, _) in enumerate(group) if loc.url in self.urls]
            if not mine or future is None:
                continue
            answers = answered(group, future)
            requests.extend(group[k] for k in mine)
            got.extend(answers[k] for k in mine)
        return requests, got


def answered(group: list[Request], future: Future) -> list[list[bytes] | Exception]:
    """What `fetch` gave for each request of `group`, waiting for its `future` (timed in
    `STATS`); a group that failed as a whole gives its exception for each request (not
    held: their reads meet it themselves)."""
    with waiting():
        try:
            return future.result()
        except Exception as e:  # noqa: BLE001 - held as the error of each request
            return [e] * len(group)


def split(dataset: object, groups: list[list[Request]]) -> tuple[Taken | None, list[list[Request]]]:
    """(what `dataset`'s batch now arriving takes from the round sent ahead for it, the
    requests of `groups` it still sends): an object is taken when every request the batch
    plans for it lies within what was asked of it ahead (the module docstring); the others'
    requests are all sent now. The round is removed: one batch ahead at most."""
    got = _SENT.get(id(dataset))
    _SENT.discard(id(dataset))
    if got is None or got[0]() is not dataset:
        return None, groups
    sent = got[1]
    asked: dict[str, list[tuple[int, int]] | None] = {}  # None: the whole object
    for group in sent.groups:
        for loc, ranges in group:
            have = asked.setdefault(loc.url, [])
            if ranges is None or have is None:
                asked[loc.url] = None
            else:
                have.extend(ranges)
    planned: dict[str, list[Sequence[tuple[int, int]] | None]] = {}
    for group in groups:
        for loc, ranges in group:
            planned.setdefault(loc.url, []).append(ranges)
    urls = frozenset(
        url for url, wanted in planned.items() if url in asked and _within(wanted, asked[url])
    )
    STATS["taken"] += len(urls)
    STATS["again"] += sum(1 for url in planned if url in asked and url not in urls)
    if not urls:
        return None, groups
    rest = [[r for r in group if r[0].url not in urls] for group in groups]
    return Taken(sent, urls), rest


def _within(
    wanted: list[Sequence[tuple[int, int]] | None], asked: list[tuple[int, int]] | None
) -> bool:
    """Whether every range of `wanted` lies in one range of `asked` (None: the whole object
    was asked; a whole object wanted needs that)."""
    if asked is None:
        return True
    for ranges in wanted:
        if ranges is None:
            return False
        for a, b in ranges:
            if not any(start <= a and b <= stop for start, stop in asked):
                return False
    return True


@contextlib.contextmanager
def waiting() -> Iterator[None]:
    """Count the time inside the block as this process's wait for storage (`STATS`)."""
    start = time.perf_counter()
    try:
        yield
    finally:
        STATS["waited_s"] += time.perf_counter() - start


def getitems(dataset: Any, indices: Sequence[int]) -> list[Any]:
    """`[dataset[i] for i in indices]`, the storage reads of all of them in one round (see
    the module docstring). `dataset` is a `ClipDataset`."""
    source: FrameSourceBase = dataset.options.adapted
    prepare = source.prepare
    plan = source.fetch_plan
    if prepare is None or plan is None or len(indices) == 0:
        return [dataset[i] for i in indices]
    chunks, videos_of = _planned(dataset, prepare, plan, indices)
    if not any(chunks):  # nothing to fetch, or an index out of range (raising there, as alone)
        return [dataset[i] for i in indices]
    STATS["batches"] += 1
    size, groups = _grouped(chunks)  # all sent at once: one round
    taken, groups = split(dataset, groups)  # what the round sent ahead for it answers
    futures = fetch_started(groups)
    named = following(indices)
    if named is not None:  # the next batch's round on the wire while this one decodes
        _send_ahead(dataset, prepare, plan, named)
    settle = source.settle
    out = []
    with contextlib.ExitStack() as held:
        if taken is not None:  # the objects the round sent ahead answers, held throughout
            held.enter_context(holding(*taken.answers()))
        for k, i in enumerate(indices):
            future = futures[k // size] if k % size == 0 else None
            if future is not None:  # the next group's answers, beside the groups before it
                group = groups[k // size]
                held.enter_context(holding(group, answered(group, future)))
            if settle is not None:  # heads taken from a sidecar: checked by the bytes held
                settle(videos_of[k])
            out.append(dataset[i])
    return out


def _planned(
    dataset: Any, prepare: Any, plan: Any, indices: Sequence[int]
) -> tuple[list[list[Request]], list[list[str]]]:
    """(the storage requests of each item, the videos each item reads) of a batch, its
    videos' heads opened first (`prepare`); none (empty lists) when an index is out of range,
    whose own read raises for it."""
    per_video = dataset.items_per_video
    videos = dataset.videos
    try:
        wanted = [videos[dataset._index(i) // per_video].video_id for i in indices]
    except IndexError:
        return [], []
    with waiting():  # heads not known yet are one round
        prepare(wanted)
    chunks: list[list[Request]] = []  # the requests of each item
    videos_of: list[list[str]] = []
    for i in indices:
        mine: list[Request] = []
        vids: list[str] = []
        chunks.append(mine)
        videos_of.append(vids)
        try:
            reads = dataset.planned_reads(i)
        except (LookupError, ValueError, TypeError, VidloadError):
            continue  # not known without decoding, or an error its own read will raise
        for vid, idx in reads:
            vids.append(vid)
            try:
                mine.extend(plan(vid, idx))
            except VidloadError:
                continue
    return chunks, videos_of


def _send_ahead(dataset: Any, prepare: Any, plan: Any, indices: Sequence[int]) -> None:
    """Plan the batch of `indices` (this process reads it next) and send its round in threads
    (step 5), in the groups its decode will take, kept for that batch (`split`, which dropped
    the one sent before). An index out of range sends nothing: that batch's own read raises
    for it."""
    chunks, _ = _planned(dataset, prepare, plan, indices)
    if any(chunks):
        groups = _grouped(chunks)[1]
        futures = fetch_started(groups, ahead=True)
        STATS["sent_ahead"] += 1
        _SENT.put(id(dataset), (weakref.ref(dataset), Sent(groups, futures)))


#: The groups a batch's requests are sent in (at once): its first items are built while the
#: answers to the others arrive.
_GROUPS = 4


def _grouped(chunks: list[list[Request]]) -> tuple[int, list[list[Request]]]:
    """(items a group, each group's requests): the items' requests (`chunks`) in up to
    `_GROUPS` groups of consecutive items; an item is built as soon as its group (and those
    before it) has been answered."""
    size = -(-len(chunks) // _GROUPS)
    return size, [[r for c in chunks[k : k + size] for r in c] for k in range(0, len(chunks), size)]
