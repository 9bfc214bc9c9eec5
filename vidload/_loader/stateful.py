"""The loader `make_loader(..., stateful=True)` returns: torchdata's StatefulDataLoader, plus the
epoch and what the dataset learned.

torchdata saves and restores the position inside a pass: the sampler's state (every vidload
sampler has `state_dict`/`load_state_dict`, see `vidload._loader.position`), taken in the main
process when each batch's indices go to a worker, so a state after batch k holds the sampler as
it was for batch k, not for the batches prefetched after it. Three things it cannot know, added
here:

- the epoch: vidload's epoch is set from outside (`set_epoch(loader, e)`), on the dataset (which
  draws the clips) and on the sampler (which draws the order). The state keeps the epoch of the
  pass it describes, and `load_state_dict` sets it on both at once, so a resumed worker draws the
  clips of that epoch before the training loop calls `set_epoch` again;
- the epoch boundary: a state saved after an epoch's last batch (or after the pass ended)
  resumes at the start of the next epoch (`resume_epoch`), not with an empty rest of the old
  one, so `for epoch in epochs(loader, n)` continues as the uninterrupted loop did;
- what the dataset learned (`ClipDataset.learned_state()`: frame counts from short reads,
  broken videos), read from the main process, where the shared-memory arrays hold what every
  worker learned; loaded before any worker starts, so a resumed run decodes none of them again.
  It may hold a little more than the batches up to k needed (prefetched items): that changes
  no clip (see `ClipDataset.load_learned_state`).

torchdata's part of the state is laid out per worker and holds only for the same `num_workers`;
vidload's clips and order do not depend on it, so a state loaded into a loader with another
worker count restarts the pass at the saved batch through the samplers (`set_epoch(loader,
epoch, start_batch=k)`) instead.
"""

from __future__ import annotations

import warnings
from typing import Any

from torchdata.stateful_dataloader import StatefulDataLoader

from vidload._loader.epochs import loader_epoch, set_epoch, unwrap

__all__ = ["StatefulLoader"]

#: The state's format tag; a state without it is refused by name.
FORMAT = "vidload.StatefulLoader/1"
#: The keys describing the pass (handed on unchanged by a loaded loader not iterated yet).
_PASS_KEYS = ("epoch", "batches", "finished", "num_workers", "loader")


class StatefulLoader(StatefulDataLoader):
    """A `torchdata.stateful_dataloader.StatefulDataLoader` that also keeps vidload's epoch and
    the dataset's learned state in `state_dict()` (see the module's docstring).

    `state_dict()` -> `{"format", "epoch", "batches", "finished", "num_workers", "dataset",
    "loader"}`: the epoch of the latest pass, the batches it yielded, whether it reached its
    end, the loader's worker count, the dataset's `learned_state()` (None for other
    datasets), torchdata's own state (`{}` when the pass ended: nothing is left in it).

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

    def __iter__(self):  # torchdata's iterator type
        self.pending_epoch = None
        self._pass_epoch = loader_epoch(self)
        return super().__iter__()

    def state_dict(self) -> dict[str, Any]:
        clips = unwrap(self.dataset)
        learned = getattr(clips, "learned_state", None)
        state: dict[str, Any] = {
            "format": FORMAT,
            "num_workers": self.num_workers,
            "dataset": learned() if learned is not None else None,
        }
        if self.pending_epoch is not None:  # loaded, not iterated yet: hand it on unchanged
            return {**state, **self._loaded}
        iterator = self._iterator
        if iterator is None or self._pass_epoch is None:  # never iterated
            return {**state, "epoch": loader_epoch(self), "batches": 0, "finished": False,
                    "loader": {}}  # fmt: skip
        batches = int(iterator._num_yielded)
        finished = bool(iterator._finished) or batches >= len(self)
        return {
            **state,
            "epoch": self._pass_epoch,
            "batches": batches,
            "finished": finished,
            "loader": {} if finished else super().state_dict(),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Resume from `state_dict()` of a loader over the same dataset (same video list,
        seed, batch size and sampler options; any num_workers); `{}` drops a loaded state.
        Call before iterating; then iterate with `epochs(loader, n)` (or `set_epoch(loader,
        loader.resume_epoch)`)."""
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
        epoch, start_batch = int(state_dict["epoch"]), 0
        if state_dict["finished"]:
            epoch += 1
            super().load_state_dict({})
        elif state_dict["num_workers"] != self.num_workers:
            # torchdata's state is per worker layout; vidload's order is not: restart the
            # pass at the saved batch through the samplers instead
            start_batch = int(state_dict["batches"])
            super().load_state_dict({})
        else:
            super().load_state_dict(state_dict["loader"])
        learned = state_dict["dataset"]
        if learned is not None:
            unwrap(self.dataset).load_learned_state(learned)  # type: ignore[attr-defined]
        self._loaded = {k: state_dict[k] for k in _PASS_KEYS}
        self.pending_epoch = None
        # the dataset's epoch (shared with the workers to come) and the samplers'
        set_epoch(self, epoch, start_batch=start_batch)
        self.resume_epoch = self.pending_epoch = epoch
