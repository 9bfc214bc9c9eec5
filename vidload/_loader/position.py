"""Where a sampler's pass over an epoch starts and how far it got: the state of vidload's samplers.

Every sampler vidload builds (`EpochShuffleSampler`, `ShardSampler`,
`ResumableDistributedSampler`, and `ReadAheadSampler` around them) yields its rank's share of one
global order, a function of (seed, epoch) alone, split across the ranks step by step (`share`,
`handed_out`): at step s, W ranks with B elements each hand out items `[s·W·B,
(s+1)·W·B)` of that order. So the progress of a run is one number, the items of the epoch's
order handed out over all ranks (`split_state`: `{"sampler", "world_size", "items"}`, what a
stateful loader records), and a pass may begin after the first c of them (`set_epoch(epoch,
items=c)`): each rank then yields its share of the rest, which is how a run stopped on W ranks
continues on W' (rank 0's share is never shorter than another's, so rank 0's count is the one
to save).

A sampler's own state is `{"epoch": e, "yielded": k}` (plus `"begin": c` when its pass began
after item c): the epoch, and how many elements of its share of that epoch's order the latest
pass has handed out. Restoring it skips the first k elements of the same share (a list of
ints: O(k), about 10 ms for a Kinetics epoch), so a resumed loader continues with element k,
whatever the number of workers; it holds for the same world size (the rank's share is W's).

torchdata's `StatefulDataLoader` saves a sampler's state when it has `state_dict` and
`load_state_dict`: in the main process, at the moment each batch's indices are handed to a
worker, and it keeps the state of the batch the training loop last received (not of the batches
prefetched after it). So a sampler must count what it has *yielded*, as it yields it; `Position`
is the counter.

The split is pure arithmetic on positions (each sampler maps a position to its item, `order[p %
n]`): rank r of W yields positions `items + r, items + r + W, ...`, so at step s (B elements a
rank) the ranks together hand out positions `[items + s·W·B, items + (s+1)·W·B)`. With `items` = 0
and padding this is torch's `DistributedSampler` exactly (its `indices[rank:total_size:
num_replicas]`, the list padded with its own first elements up to a multiple of W); with another
`items` it is the same rule on the rest of the order, so a run stopped after c items and resumed
on W' ranks yields each of the remaining items once, plus at most W' - 1 padding repeats, all in
the last step.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from vidload._checks import check_int

T = TypeVar("T")


def share(n: int, items: int, rank: int, world_size: int, *, pad: bool, drop: bool) -> range:
    """Positions of an order of `n` items that rank `rank` of `world_size` yields in a pass
    from item `items` (0 <= items <= n). `pad`: the rest is padded to a multiple of the world
    size with positions >= n (the caller wraps them: `p % n`, DistributedSampler's repeats);
    `drop`: cut down to one instead (DistributedSampler(drop_last=True)); neither: the ranks'
    shares differ by at most one (ShardSampler)."""
    rest = n - items
    if drop:
        stop = items + rest // world_size * world_size
    elif pad:
        stop = items + -(-rest // world_size) * world_size
    else:
        stop = n
    return range(items + rank, stop, world_size)


def handed_out(n: int, items: int, yielded: int, world_size: int) -> int:
    """Items of the order handed out over all ranks once each rank has yielded `yielded`
    elements of a pass that began at item `items` (ranks step together; at most n)."""
    return min(items + yielded * world_size, n)


def check_at_most(name: str, value: object, size: int, what: str) -> int:
    """`value` as an int in [0, size]; ValueError naming `name` and what `size` is (`what`,
    in which `{size}` stands for it)."""
    value = check_int(name, value, minimum=0)
    if value > size:
        raise ValueError(f"{name} ({value}) must be <= {what.format(size=size)}")
    return value


#: What a pass's start and a global order's items are checked against (`check_at_most`).
LENGTH = "the sampler's length ({size})"
ITEMS = "the items of the epoch's order ({size}): a state of another dataset?"


class Position:
    """The next pass's start (this rank's elements to skip), the item of the epoch's global
    order its pass begins at (`items`, 0 but after a resume on another world size), and the
    latest pass's count of elements yielded (from the pass's first element, so a resumed pass
    keeps counting where the saved one stopped)."""

    def __init__(self) -> None:
        self.start = 0
        self.yielded = 0
        self.items = 0

    def reset(self, start: int = 0, *, items: int = 0) -> None:
        """The next pass starts at element `start` of this rank's share of the order from item
        `items` on (both checked by the caller). `items` holds until the next reset: a second
        pass over the same epoch is this rank's whole share of that rest again."""
        self.start = self.yielded = start
        self.items = items

    def run(self, order: Iterable[T], *, skipped: bool = False) -> Iterator[T]:
        """`order` from the pending start on (`skipped`: `order` already begins there),
        counting each element before it is yielded; the pass after this one starts at 0 again
        (a second pass over the same epoch is whole)."""
        start, self.start = self.start, 0
        self.yielded = start
        for element in itertools.islice(order, 0 if skipped else start, None):
            self.yielded += 1
            yield element


class Positioned:
    """The state of a pass of one of vidload's samplers, the one copy `Resumable` (a rank's
    share of a global order) and `Wrapper` (a sampler reading ahead of another) share:
    `set_epoch(epoch, start=k, items=c)`, `state_dict()` -> `{"epoch", "yielded"}` (and
    `"begin": c` when the pass began after item c) and `load_state_dict`, which is
    `set_epoch` with the state's values (checked under the state's names). A subclass says
    how a pass begins (`_begin_pass`) and its epoch (`_epoch`)."""

    _position: Position

    @property
    def begin(self) -> int:
        """The item of the global order the latest (or next) pass begins at."""
        return self._position.items

    def _epoch(self) -> int | None:
        raise NotImplementedError

    def _begin_pass(self, epoch: int, start: object, items: int, names: tuple[str, str]) -> None:
        """`epoch` begins; the next pass starts at element `start` of this sampler's pass,
        from item `items` of the global order (`start` is checked here, a loaded state's as it
        came); `names`: how messages name start and items."""
        raise NotImplementedError

    def set_epoch(self, epoch: int, *, start: int = 0, items: int = 0) -> None:
        """`epoch` begins: the next pass yields this rank's share of its order, from element
        `start` of that share; `items` > 0: of the rest of the order after its first `items`
        items (handed out by a run on another world size or batch size)."""
        self._begin_pass(epoch, start, items, ("start", "items"))

    def state_dict(self) -> dict[str, int | None]:
        state = {"epoch": self._epoch(), "yielded": self._position.yielded}
        return state | ({"begin": self.begin} if self.begin else {})

    def load_state_dict(self, state: dict[str, int | None]) -> None:
        """`set_epoch` with the state's epoch, `yielded` as the start and `begin` (0 when
        absent) as the items, each checked under the state's name for it."""
        owner = type(self).__name__
        if not isinstance(state, Mapping) or not {"epoch", "yielded"} <= state.keys():
            raise ValueError(
                f"{owner} state must be a dict with 'epoch' and 'yielded' (from its state_dict()), "
                f"got {state!r}"
            )
        epoch = check_int(f"{owner} state 'epoch'", state["epoch"], minimum=0)
        begin = check_int(f"{owner} state 'begin'", state.get("begin", 0), minimum=0)
        names = (f"{owner} state 'yielded'", f"{owner} state 'begin'")
        self._begin_pass(epoch, state["yielded"], begin, names)


class Resumable(Positioned):
    """`__iter__`, `__len__` and `split_state`, with `Positioned`'s state, for a sampler
    whose pass is its rank's share of one global order (the module's docstring): the one
    copy `EpochShuffleSampler`, `ShardSampler` and `ResumableDistributedSampler` share. A
    subclass names its order (`order`), its ranks (`num_replicas`), the order's length
    (`global_size`), the order itself (`_order`) and which positions of it a pass from item c
    yields (`_share`)."""

    epoch: int
    num_replicas: int  # the ranks

    @property
    def order(self) -> str:
        """What the global order is (two samplers with equal names and seeds give one)."""
        return type(self).__name__

    def global_size(self) -> int:
        """Items in the epoch's global order (before padding to the ranks)."""
        raise NotImplementedError

    def _order(self) -> Sequence[int]:
        """The epoch's global order (a list, or a range)."""
        raise NotImplementedError

    def _share(self, items: int) -> range:
        """Positions of the global order this rank yields in a pass that starts at `items`."""
        raise NotImplementedError

    def __iter__(self) -> Iterator[int]:
        order = self._order()  # positions past its end are padding: its first ones again
        n = len(order)
        yield from self._position.run(order[p % n] for p in self._share(self._position.items))

    def _epoch(self) -> int:
        return self.epoch

    def __len__(self) -> int:
        return len(self._share(self._position.items))

    def _begin_pass(self, epoch: int, start: object, items: int, names: tuple[str, str]) -> None:
        epoch = check_int("epoch", epoch, minimum=0)
        items = check_at_most(names[1], items, self.global_size(), ITEMS)
        start = check_at_most(names[0], start, len(self._share(items)), LENGTH)
        self.epoch = epoch
        self._position.reset(start, items=items)

    def split_state(self, yielded: int) -> dict[str, Any]:
        """`{"sampler", "world_size", "items"}` once this rank has yielded `yielded` elements
        of its pass: the items of the global order handed out by then over all ranks."""
        size, world = self.global_size(), self.num_replicas
        items = handed_out(size, self._position.items, yielded, world)
        return {"sampler": self.order, "world_size": world, "items": items}


class Wrapper(Positioned):
    """A sampler that yields what the sampler it wraps yields, reading ahead of it
    (`vidload.prefetch`'s `ReadAheadSampler` and `FetchAheadSampler`): the one copy of their
    wrapping and position both use.

    The wrapped sampler has handed out more than the wrapper has (the elements read ahead),
    so the wrapper counts its own: `state_dict()` -> `{"epoch", "yielded"}` is the wrapped
    sampler's epoch (None if it has none) and the elements the wrapper yielded, with its
    `"begin"` when the wrapped one is one of vidload's whose pass began after item c.
    `load_state_dict(state)` and `set_epoch(epoch, start=k)` make the next pass skip the
    first k elements of the wrapped sampler's pass for that epoch (a subclass's `_ahead(k)`
    reads `islice(self.sampler, k, None)`), so a resumed loader gets what the uninterrupted
    pass yielded next, provided the wrapped order is a function of its epoch (every sampler
    vidload builds). `set_epoch(epoch, items=c)` and `split_state` are passed on to a wrapped
    sampler of vidload's (another wrapper included): a sampler without `set_epoch` is given
    no epoch."""

    def __init__(self, sampler: Iterable[Any]) -> None:
        if not isinstance(sampler, Iterable):
            raise TypeError(f"sampler must be iterable, got {type(sampler).__name__}")
        self.sampler = sampler
        self._position = Position()

    def __iter__(self) -> Iterator[Any]:
        yield from self._position.run(self._ahead(self._position.start), skipped=True)

    def _ahead(self, start: int) -> Iterator[Any]:
        """What this wrapper yields of the wrapped sampler's pass from its element `start` on."""
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self.sampler)  # type: ignore[arg-type]

    def _begin_pass(self, epoch: int, start: object, items: int, names: tuple[str, str]) -> None:
        inner = self.sampler
        if items and not isinstance(inner, Positioned):
            raise TypeError(
                f"items ({items}) needs one of vidload's samplers inside the "
                f"{type(self).__name__}, got {type(inner).__name__}"
            )
        set_sampler_epoch(inner, epoch, items=items)
        self._position.reset(check_at_most(names[0], start, len(self), LENGTH))

    @property
    def begin(self) -> int:
        """The item of the wrapped order the latest (or next) pass begins at (0 for a
        sampler that is not vidload's)."""
        inner = self.sampler
        return inner.begin if isinstance(inner, Positioned) else 0

    def _epoch(self) -> int | None:
        return getattr(self.sampler, "epoch", None)

    def split_state(self, yielded: int) -> dict[str, Any] | None:
        """The wrapped sampler's `split_state` (None if it is not one of vidload's)."""
        inner = self.sampler
        return inner.split_state(yielded) if isinstance(inner, (Resumable, Wrapper)) else None

    def load_state_dict(self, state: dict[str, int | None]) -> None:
        if isinstance(state, dict) and state.get("epoch", 0) is None:
            state = {**state, "epoch": 0}  # a sampler without epochs
        super().load_state_dict(state)


def set_sampler_epoch(sampler: object, epoch: int, *, start: int = 0, items: int = 0) -> None:
    """`epoch` on `sampler`: with the next pass's `start` and `items` for one of vidload's
    samplers, the epoch alone for another that has `set_epoch` (a DistributedSampler, a
    BatchSampler of yours), nothing for one without."""
    if isinstance(sampler, Positioned):
        sampler.set_epoch(epoch, start=start, items=items)
        return
    set_epoch = getattr(sampler, "set_epoch", None)
    if set_epoch is not None:
        set_epoch(epoch)


def innermost(sampler: object) -> object:
    """The sampler inside any `Wrapper`s."""
    while isinstance(sampler, Wrapper):
        sampler = sampler.sampler
    return sampler
