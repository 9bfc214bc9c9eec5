"""The epoch of a loader: setting it on the dataset and the samplers, and reading it back.

Apart from `vidload.loader` so that `vidload._loader.stateful` (imported by `make_loader` only when
asked for) can use it without importing the loader module back.
"""

from __future__ import annotations

from torch.utils.data import DataLoader, Dataset, Subset

from vidload._checks import check_int
from vidload._loader.position import Positioned, set_sampler_epoch

__all__ = ["loader_epoch", "set_epoch", "set_pass", "unwrap"]


def set_epoch(loader: DataLoader, epoch: int, *, start_batch: int = 0) -> None:
    """Tell the loader's dataset and sampler that `epoch` begins; call before iterating it.

    Sets the dataset's epoch (new clips; shared with persistent workers) when it has
    `set_epoch` (a ClipDataset, also inside a Subset), and the sampler's (new order) when it
    has one (EpochShuffleSampler, DistributedSampler, through a ReadAheadSampler too).

    `start_batch=k` makes the next pass begin with the epoch's batch k (a plain DataLoader's
    resume: the same batches the uninterrupted pass yielded from its k-th on, as long as the
    batch size and drop_last are the same). It needs a vidload sampler (any `make_loader`
    builds); a `make_loader(..., stateful=True)` loader resumes by `load_state_dict` instead.

    For a loader given a state by `load_state_dict` and not iterated since, setting the
    state's epoch changes nothing (the state already set it, and the position in it).

    Raises:
        ValueError: `start_batch` beyond the epoch (the epoch is set all the same, from its
            first batch); or a state given to the loader by `load_state_dict` is waiting for
            its epoch, and `epoch` is another one.
        TypeError: `start_batch` with a sampler that cannot start mid-epoch.
    """
    epoch = check_int("epoch", epoch, minimum=0)
    start_batch = check_int("start_batch", start_batch, minimum=0)
    pending = getattr(loader, "pending_epoch", None)
    if pending is not None:
        if epoch != pending or start_batch:
            raise ValueError(
                f"set_epoch(loader, {epoch}, start_batch={start_batch}): the loader was given "
                f"a state of epoch {pending} by load_state_dict, which it resumes when "
                f"iterated; set epoch {pending} (epochs(loader, stop) does), or drop the state "
                f"with loader.load_state_dict({{}})"
            )
        return  # load_state_dict set the epoch and the position already
    if start_batch and not isinstance(loader.sampler, Positioned):
        raise TypeError(
            f"start_batch needs one of vidload's samplers (make_loader builds them), got "
            f"{type(loader.sampler).__name__}"
        )
    set_pass(loader, epoch)  # the epoch's whole pass: len(loader) counts its batches
    if start_batch:
        if loader.batch_size is None or start_batch > len(loader):
            raise ValueError(
                f"start_batch ({start_batch}) must be <= the loader's batches per epoch "
                f"({len(loader) if loader.batch_size is not None else 'none: no batch_size'})"
            )
        start = min(start_batch * loader.batch_size, len(loader.sampler))  # type: ignore[arg-type]
        set_pass(loader, epoch, start=start)


def set_pass(loader: DataLoader, epoch: int, *, start: int = 0, items: int = 0) -> None:
    """`epoch` on the dataset and every sampler of the loader; vidload's samplers also get
    the next pass's `start` and `items` (`items`: this rank's share of the rest of the epoch's
    global order after its first `items` items, a state from another world size or batch size:
    `vidload._loader.position`; the loader's sampler is then one of vidload's)."""
    clips = unwrap(loader.dataset)
    if hasattr(clips, "set_epoch"):
        clips.set_epoch(epoch)
    batch_sampler = loader.batch_sampler
    samplers = [loader.sampler, batch_sampler, getattr(batch_sampler, "sampler", None)]
    for sampler in {id(s): s for s in samplers}.values():  # each once
        set_sampler_epoch(sampler, epoch, start=start, items=items)


def loader_epoch(loader: DataLoader) -> int:
    """The epoch the loader's dataset is at (its `epoch`), else its sampler's, else 0."""
    for owner in (unwrap(loader.dataset), loader.sampler):
        epoch = getattr(owner, "epoch", None)
        if isinstance(epoch, int):
            return epoch
    return 0


def unwrap(dataset: Dataset) -> Dataset:
    while isinstance(dataset, Subset):
        dataset = dataset.dataset
    return dataset
