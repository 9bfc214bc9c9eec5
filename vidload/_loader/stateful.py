"""The loader `make_loader(..., stateful=True)` returns: torchdata's StatefulDataLoader, plus the
epoch, the split of the epoch's order across ranks, and what the dataset learned.

torchdata saves and restores the position inside a pass: the sampler's state (every vidload
sampler has `state_dict`/`load_state_dict`, see `vidload._loader.position`), taken in the main
process when each batch's indices go to a worker, so a state after batch k holds the sampler as
it was for batch k, not for the batches prefetched after it. What it cannot know, added here:

- the epoch: vidload's epoch is set from outside (`set_epoch(loader, e)`), on the dataset (which
  draws the clips) and on the sampler (which draws the order). The state keeps the epoch of the
  pass it describes, and `load_state_dict` sets it on both at once, so a resumed worker draws the
  clips of that epoch before the training loop calls `set_epoch` again;
- the epoch boundary: a state saved after an epoch's last batch (or after the pass ended)
  resumes at the start of the next epoch (`resume_epoch`), not with an empty rest of the old
  one, so `for epoch in epochs(loader, n)` continues as the uninterrupted loop did;
- the split: the ranks' order is one global order from (seed, epoch), and after k batches of B
  items on W ranks the first `items` = min(c + k·B·W, n) of it are handed out (c: where the pass
  began, 0 but after such a resume). The state records W, B and that count, so rank 0's state
  resumes on any number of ranks and with any batch size: each rank takes its share of the rest
  (`vidload._loader.position.share`); the same W, B and worker count restore through torchdata
  as before;
- what the dataset learned (`ClipDataset.learned_state()`: frame counts from short reads,
  broken videos), read from the main process, where the shared-memory arrays hold what every
  worker learned, and under torch.distributed gathered from every rank and merged
  (`vidload._dataset.counts.merge_learned`: `state_dict()` is then a collective, called on
  every rank after the same step); loaded before any worker starts, so a resumed run decodes
  none of them again. It may hold a little more than the batches up to k needed (prefetched
  items): that changes no clip (see `ClipDataset.load_learned_state`).

torchdata's part of the state is laid out per worker and holds only for the same `num_workers`;
vidload's clips and order do not depend on it, so a state loaded into a loader with another
worker count (or world size, or batch size) restarts the pass at the saved item count through
the samplers (`set_pass`) instead.
"""

from __future__ import annotations

import warnings
from typing import Any

from torchdata.stateful_dataloader import StatefulDataLoader

from vidload._dataset.counts import merge_learned
from vidload._dist import gather_objects, process_group
from vidload._loader.epochs import loader_epoch, set_epoch, set_pass, unwrap
from vidload._loader.position import Resumable, handed_out, innermost
from vidload.dataset import ClipDataset

__all__ = ["StatefulLoader"]

#: The state's format tag; a state without it is refused by name.
FORMAT = "vidload.StatefulLoader/1"
#: The keys describing the pass (handed on unchanged by a loaded loader not iterated yet); the
#: last four are absent from states saved before vidload recorded the split.
_PASS_KEYS = ("epoch", "batches", "finished", "num_workers", "loader")
_SPLIT_KEYS = ("batch_size", "sampler", "world_size", "items")


class StatefulLoader(StatefulDataLoader):
    """A `torchdata.stateful_dataloader.StatefulDataLoader` that also keeps vidload's epoch,
    the split of the epoch's order and the dataset's learned state in `state_dict()` (see the
    module's docstring).

    `state_dict()` -> `{"format", "epoch", "batches", "finished", "num_workers", "batch_size",
    "sampler", "world_size", "items", "dataset", "loader"}`: the epoch of the latest pass, the
    batches it yielded, whether it reached its end, the loader's worker count and batch size,
    the order its sampler splits (None for a sampler that is not vidload's) across how many
    ranks, the items of that order handed out over all ranks, the dataset's `learned_state()`
    (of every rank under torch.distributed; None for other datasets), torchdata's own state
    (`{}` when the pass ended: nothing is left in it).

    After `load_state_dict(state)`, `resume_epoch` is the epoch the next pass belongs to
    (`epochs(loader, n)` starts there) and `pending_epoch` is that epoch until the pass
    begins (`set_epoch` refuses another one meanwhile, which would mix two epochs).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        with warnings.catch_warnings():
            # torchdata 0.11 calls torch.set_vital, deprecated in torch 2.x: its warning says
            # nothing to a vidload user (every construction gave it)
            warnings.filterwarnings("ignore", "'set_vital' is deprecated", UserWarning)
            super().__init__(*args, **kwargs)
        self.resume_epoch = 0
        self.pending_epoch: int | None = None
        self._pass_epoch: int | None = None
        self._loaded: dict[str, Any] = {}

    def __iter__(self):  # torchdata's iterator type
        self.pending_epoch = None
        self._pass_epoch = loader_epoch(self)
        return super().__iter__()

    def state_dict(self) -> dict[str, Any]:
        """The state after the batch the loop last received (see the class's docstring).

        Under torch.distributed, with the epoch split across the group's ranks, this is a
        collective (the ranks' learned states are gathered): call it on every rank after the
        same step, also when only rank 0 saves it."""
        state: dict[str, Any] = {"format": FORMAT, "dataset": self._learned()}
        if self.pending_epoch is not None:  # loaded, not iterated yet: hand it on unchanged
            return {**state, **self._loaded}
        state |= {"num_workers": self.num_workers, "batch_size": self.batch_size}
        iterator = self._iterator
        if iterator is None or self._pass_epoch is None:  # never iterated
            return {**state, "epoch": loader_epoch(self), "batches": 0, "finished": False,
                    "loader": {}, **self._split(0)}  # fmt: skip
        batches = int(iterator._num_yielded)
        finished = bool(iterator._finished) or batches >= len(self)
        return {
            **state,
            "epoch": self._pass_epoch,
            "batches": batches,
            "finished": finished,
            "loader": {} if finished else super().state_dict(),
            **self._split(batches),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Resume from `state_dict()` of a loader over the same dataset (same video list,
        seed and sampler options; any num_workers; from rank 0 of any number of ranks, with
        any batch size: the rest of the epoch's order is dealt out again); `{}` drops a
        loaded state. Call before iterating; then iterate with `epochs(loader, n)` (or
        `set_epoch(loader, loader.resume_epoch)`).

        Raises:
            ValueError: not such a state; a state of another order (a run without
                torch.distributed, say, resumed under it); counts that do not fit this
                loader's dataset.
        """
        if state_dict == {}:
            super().load_state_dict({})
            self.pending_epoch, self.resume_epoch = None, loader_epoch(self)
            return
        if not isinstance(state_dict, dict) or state_dict.get("format") != FORMAT:
            raise ValueError(
                f"load_state_dict needs the state_dict() of a make_loader(..., stateful=True) "
                f"loader (format {FORMAT!r}), got "
                f"{state_dict.get('format') if isinstance(state_dict, dict) else state_dict!r}"
            )
        epoch = int(state_dict["epoch"])
        self.pending_epoch = None
        if state_dict["finished"]:
            epoch += 1
            super().load_state_dict({})
            set_epoch(self, epoch)
        else:
            self._resume(state_dict, epoch)
        clips, learned = unwrap(self.dataset), state_dict["dataset"]
        if learned is not None:
            if not isinstance(clips, ClipDataset):  # never silently dropped
                raise ValueError(
                    "this state holds a ClipDataset's learned frame counts, but this loader's "
                    f"dataset is a {type(clips).__name__}: resume it over the ClipDataset it "
                    "was saved from"
                )
            clips.load_learned_state(learned)
        keys = (*_PASS_KEYS, *_SPLIT_KEYS)
        self._loaded = {k: state_dict[k] for k in keys if k in state_dict}
        self.resume_epoch = self.pending_epoch = epoch

    def _resume(self, state: dict[str, Any], epoch: int) -> None:
        """Inside the state's epoch: torchdata's restore where the state's layout is this
        loader's (the world size, batch size and worker count), else the rest of the order
        from the state's item count. A state without its split (an older vidload's, or a
        sampler of yours) is of this world size and batch size, as it always was: it does
        not say, so one whose batches this loader's epoch does not have is refused, and only
        its worker count is compared."""
        split = state.get("world_size") is not None
        if split:
            here = self._split(0)
            if state["sampler"] != here["sampler"]:
                mine = here["sampler"] or f"{type(self.sampler).__name__}, not one of vidload's"
                raise ValueError(
                    f"load_state_dict: the state's order is {state['sampler']!r}, this loader's "
                    f"sampler's is {mine!r}; resume with the sampler the state was saved with "
                    f"(a run without torch.distributed shuffles with EpochShuffleSampler, one "
                    f"under it with DistributedSampler)"
                )
            saved = (state["world_size"], state["batch_size"], state["num_workers"])
            same = saved == (here["world_size"], self.batch_size, self.num_workers)
        else:
            set_epoch(self, epoch)  # the epoch's whole pass: len(self) counts its batches
            if self._splitter() is not None and int(state["batches"]) >= len(self):
                raise ValueError(
                    f"load_state_dict: the state is after batch {state['batches']} of its "
                    f"epoch, which has only {len(self)} batches here: a state saved on another "
                    f"number of ranks (or with another batch size)? This one does not record "
                    f"them (saved by an older vidload), so it resumes only as it was saved"
                )
            same = state["num_workers"] == self.num_workers
        if same:
            super().load_state_dict(state["loader"])
            set_epoch(self, epoch)
            return
        # torchdata's state is per worker layout; vidload's order is not: restart the pass
        super().load_state_dict({})
        splits = self._splitter()
        if split:
            items = state["items"]
        elif splits is None:
            set_epoch(self, epoch, start_batch=int(state["batches"]))
            return
        else:
            yielded = int(state["batches"]) * int(self.batch_size)
            items = handed_out(splits.global_size(), 0, yielded, splits.num_replicas)
        set_pass(self, epoch, items=items)  # the sampler is vidload's: it splits the order

    def _splitter(self) -> Resumable | None:
        """The vidload sampler whose order this loader's sampler splits, if it is one."""
        sampler = innermost(self.sampler)  # inside a ReadAheadSampler, a FetchAheadSampler
        return sampler if isinstance(sampler, Resumable) and self.batch_size else None

    def _split(self, batches: int) -> dict[str, Any]:
        """`{"sampler", "world_size", "items"}` after this loader's first `batches` batches
        of the pass (None each for a sampler that is not vidload's)."""
        if self._splitter() is None:
            return dict.fromkeys(_SPLIT_KEYS[1:])  # None each
        return self.sampler.split_state(batches * self.batch_size)

    def _learned(self) -> dict[str, list] | None:
        """The dataset's learned state; under torch.distributed, with the epoch split across
        the group's ranks, every rank's, merged (a collective)."""
        clips = unwrap(self.dataset)
        if not isinstance(clips, ClipDataset):
            return None
        state = clips.learned_state()
        splits, group = self._splitter(), process_group()
        if splits is None or group is None or splits.num_replicas != group[1] or group[1] == 1:
            return state
        return merge_learned(gather_objects(state))  # type: ignore[arg-type]
