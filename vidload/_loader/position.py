"""Where a sampler's pass over an epoch starts and how far it got: the state of vidload's samplers.

Every sampler vidload builds (`EpochShuffleSampler`, `ShardSampler`,
`ResumableDistributedSampler`, `ReadAheadSampler`) yields an order that is a function of
(seed, epoch) alone, so its whole state is `{"epoch": e, "yielded": k}`: the epoch, and how many
elements of that epoch's order the latest pass has handed out. Restoring it skips the first k
elements of the same order (a list of ints: O(k), about 10 ms for a Kinetics epoch), so a resumed
loader continues with element k, whatever the number of workers.

torchdata's `StatefulDataLoader` saves a sampler's state when it has `state_dict` and
`load_state_dict`: in the main process, at the moment each batch's indices are handed to a
worker, and it keeps the state of the batch the training loop last received (not of the batches
prefetched after it). So a sampler must count what it has *yielded*, as it yields it; this is
the counter.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping
from typing import TypeVar

from vidload._checks import check_int

T = TypeVar("T")


def check_state(state: object, size: int, owner: str) -> tuple[int, int]:
    """(epoch, yielded) from a sampler state; ValueError / TypeError naming the rule."""
    if not isinstance(state, Mapping) or not {"epoch", "yielded"} <= state.keys():
        raise ValueError(
            f"{owner} state must be a dict with 'epoch' and 'yielded' (from its state_dict()), "
            f"got {state!r}"
        )
    epoch = check_int(f"{owner} state 'epoch'", state["epoch"], minimum=0)
    yielded = check_start(f"{owner} state 'yielded'", state["yielded"], size)
    return epoch, yielded


def check_start(name: str, start: object, size: int) -> int:
    """`start` as an int in [0, size]; ValueError naming `name` and the sampler's length."""
    start = check_int(name, start, minimum=0)
    if start > size:
        raise ValueError(f"{name} ({start}) must be <= the sampler's length ({size})")
    return start


class Position:
    """The next pass's start and the latest pass's count of elements yielded (both from the
    epoch's first element, so a resumed pass keeps counting where the saved one stopped)."""

    def __init__(self) -> None:
        self.start = 0
        self.yielded = 0

    def reset(self, start: int = 0) -> None:
        """The next pass starts at element `start` (checked by the caller)."""
        self.start = self.yielded = start

    def run(self, order: Iterable[T], *, skipped: bool = False) -> Iterator[T]:
        """`order` from the pending start on (`skipped`: `order` already begins there),
        counting each element before it is yielded; the pass after this one starts at 0 again
        (a second pass over the same epoch is whole)."""
        start, self.start = self.start, 0
        self.yielded = start
        for element in itertools.islice(order, 0 if skipped else start, None):
            self.yielded += 1
            yield element


def is_positioned(sampler: object) -> bool:
    """Whether `sampler` is one of vidload's, whose `set_epoch` takes `start`."""
    return isinstance(getattr(sampler, "_position", None), Position)
