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
5. when the batch names the batch this process reads next (a `vidload._dataset.ahead.Lead`,
   from `make_loader(fetch_ahead=True)`), plans that batch and sends its round before step 4,
   so that it is on the wire while this batch decodes; that batch then takes the bytes
   fetched ahead for each object its own plan asks nothing more of (`ahead.split`), and
   fetches the rest in its round.

So a worker waits one round-trip per batch (two for videos it never opened, one where the root's
sidecar of heads lists them: `vidload.sources._heads`), not one per clip (with the next
batch's round sent ahead, only what is left of it when that batch arrives), and each item is built
by the very code that builds it alone: the same bytes, errors, `on_error` skips, learned counts,
`return_info` and views. A read the plan did not foresee (a resample after a short count, a skip
to another video) goes to storage as usual. Where reads do not wait on a network (a local root,
a cached one) the source plans nothing and this is a plain loop over `__getitem__`: local disk
pays nothing for it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from vidload._dataset import ahead
from vidload._storage.batch import Request, fetch_started, holding
from vidload.errors import VidloadError
from vidload.sources.base import FrameSourceBase

__all__ = ["getitems"]


def getitems(dataset: Any, indices: Sequence[int]) -> list[Any]:
    """`[dataset[i] for i in indices]`, the storage reads of all of them in one round (see
    the module docstring). `dataset` is a `ClipDataset`."""
    source: FrameSourceBase = dataset.options.adapted
    prepare = source.prepare
    plan = source.fetch_plan
    if prepare is None or plan is None or len(indices) == 0:
        return [dataset[i] for i in indices]
    try:
        chunks, videos_of = _planned(dataset, prepare, plan, indices)
    except IndexError:
        return [dataset[i] for i in indices]  # the bad index raises there, as alone
    if not any(chunks):
        return [dataset[i] for i in indices]
    ahead.STATS["batches"] += 1
    size, groups = _grouped(chunks)  # all sent at once: one round
    taken, groups = ahead.split(dataset, groups)  # what the round sent ahead for it answers
    futures = fetch_started(groups)
    following = ahead.following(indices)
    if following is not None:  # the next batch's round on the wire while this one decodes
        _send_ahead(dataset, prepare, plan, following)
    settle = source.settle
    out = []
    with contextlib.ExitStack() as held:
        if taken is not None:  # the objects the round sent ahead answers, held throughout
            held.enter_context(holding(*taken.answers()))
        for k, i in enumerate(indices):
            future = futures[k // size] if k % size == 0 else None
            if future is not None:  # the next group's answers, beside the groups before it
                group = groups[k // size]
                held.enter_context(holding(group, ahead.answered(group, future)))
            if settle is not None:  # heads taken from a sidecar: checked by the bytes held
                settle(videos_of[k])
            out.append(dataset[i])
    return out


def _planned(
    dataset: Any, prepare: Any, plan: Any, indices: Sequence[int]
) -> tuple[list[list[Request]], list[list[str]]]:
    """(the storage requests of each item, the videos each item reads) of a batch, its
    videos' heads opened first (`prepare`); IndexError for an index out of range."""
    per_video = dataset.items_per_video
    videos = dataset.videos
    wanted = [videos[dataset._index(i) // per_video].video_id for i in indices]
    with ahead.waiting():  # heads not known yet are one round
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
    """Plan the batch of `indices` (this process reads it next) and send its round
    (`vidload._dataset.ahead`), in the groups its decode will take. An index out of range
    sends nothing: that batch's own read raises for it."""
    try:
        chunks, _ = _planned(dataset, prepare, plan, indices)
    except IndexError:
        return
    ahead.send(dataset, _grouped(chunks)[1])


#: The groups a batch's requests are sent in (at once): its first items are built while the
#: answers to the others arrive.
_GROUPS = 4


def _grouped(chunks: list[list[Request]]) -> tuple[int, list[list[Request]]]:
    """(items a group, each group's requests): the items' requests (`chunks`) in up to
    `_GROUPS` groups of consecutive items; an item is built as soon as its group (and those
    before it) has been answered."""
    size = -(-len(chunks) // _GROUPS)
    return size, [[r for c in chunks[k : k + size] for r in c] for k in range(0, len(chunks), size)]
