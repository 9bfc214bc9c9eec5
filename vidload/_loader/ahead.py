"""Telling each DataLoader worker which batch it reads next (`make_loader(fetch_ahead=True)`).

A worker of a bucket-backed `ClipDataset` sends its next batch's round of requests before it
decodes the current batch (`vidload._dataset.ahead`), so it has to know that batch while the
DataLoader has not handed it over yet. The sampler knows the order, and torch's DataLoader
deals the batches to its W workers in turn (`_try_put_index`: the next worker of
`itertools.cycle(range(W))`, for torch's and torchdata's loaders alike, with `in_order=True`),
so the batch a worker reads after batch k is batch k + W of the same pass (with no workers,
k + 1). `FetchAheadSampler` wraps the item sampler, reads W batches ahead of it, and yields
each batch's first index as a `vidload._dataset.ahead.Lead`: an int naming the indices of that
batch. The batch sampler, the worker and collate see plain indices (an int subclass passes
through `BatchSampler` unchanged and is pickled to the worker with what it names); only
`ClipDataset.__getitems__` reads it.

A guess that turns out wrong (a worker that got another batch, `in_order=False`, the pass
abandoned) only wastes the round sent ahead: what a batch takes from it is checked against
the batch's own plan (`vidload._dataset.ahead`). The last W batches of a pass name none (the
next pass's order is not known before `set_epoch`).

Position and state are the wrapped sampler's, counted by what this sampler has yielded
(`vidload._loader.position.Wrapper`), so exact resume is unchanged.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Iterator
from typing import Any

from torch.utils.data import Sampler

from vidload._checks import check_bool, check_int
from vidload._dataset.ahead import Lead
from vidload._loader.position import Position, Wrapper

__all__ = ["FetchAheadSampler"]


class FetchAheadSampler(Wrapper, Sampler[int]):
    """Yields what `sampler` yields, each batch's first index as a `Lead` naming the indices
    of the batch the same worker reads next (see the module docstring).

    Args:
        sampler: the item sampler (indices, one at a time) that the DataLoader batches.
        batch_size: the DataLoader's batch size.
        drop_last: the DataLoader's `drop_last` (a short last batch is then never named).
        workers: the DataLoader's `num_workers` (0: the next batch is the next one).
    """

    def __init__(
        self, sampler: Iterable[Any], *, batch_size: int, drop_last: bool, workers: int
    ) -> None:
        if not isinstance(sampler, Iterable):
            raise TypeError(f"sampler must be iterable, got {type(sampler).__name__}")
        self.sampler = sampler
        self.batch_size = check_int("batch_size", batch_size, minimum=1)
        self.drop_last = check_bool("drop_last", drop_last)
        #: How many batches later the same worker's next batch is.
        self.stride = max(1, check_int("workers", workers, minimum=0))
        self._position = Position()

    def __repr__(self) -> str:
        return (
            f"FetchAheadSampler({self.sampler!r}, batch_size={self.batch_size}, "
            f"drop_last={self.drop_last}, workers={self.stride})"
        )

    def __iter__(self) -> Iterator[int]:
        start = self._position.start
        yield from self._position.run(self._led(start), skipped=True)

    def _led(self, start: int) -> Iterator[Any]:
        """The wrapped pass from element `start` on, `stride` + 1 batches read at a time."""
        order = itertools.islice(self.sampler, start, None)
        batches = iter(lambda: list(itertools.islice(order, self.batch_size)), [])
        now, later = itertools.tee(batches)  # `later`: `stride` batches further on
        later = itertools.islice(later, self.stride, None)
        for batch in now:
            named = next(later, None)
            if named is not None and self.drop_last and len(named) < self.batch_size:
                named = None  # dropped by the batch sampler: never read
            yield _lead(batch[0], named)
            yield from batch[1:]


def _lead(first: Any, named: list[Any] | None) -> Any:
    """`first` as a `Lead` naming `named`, or `first` itself when there is nothing to name
    or an index is not an int (a sampler of other keys)."""
    if named is None:
        return first
    try:
        return Lead(operator.index(first), [operator.index(i) for i in named])
    except TypeError:
        return first
