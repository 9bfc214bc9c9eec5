"""A DataLoader recipe for ClipDataset: worker count, threads, shuffling by epoch, read-ahead.

`make_loader(ds)` returns a plain `torch.utils.data.DataLoader` whose settings were measured on
a 2-core machine (see the docs' "DataLoader recipe"). Each epoch draws new clips and a new
order only when told which epoch it is: call `set_epoch(loader, epoch)` (or loop over
`epochs(loader, n)`) before iterating. Both the dataset's clips and the shuffle order are
functions of (seed, epoch), so a run resumed at epoch k sees what an uninterrupted run saw.

Under torch.distributed (a process group initialised before `make_loader` is called) each rank
gets its share of the items: a seeded `DistributedSampler` when training, a `ShardSampler`
(every item exactly once over all ranks) when evaluating. Either deals out one global order
per epoch step by step, so a run can continue from the items it handed out on another number
of ranks (`set_epoch(epoch, items=c)` on the samplers; a stateful loader's `load_state_dict`).
"""

from __future__ import annotations

import functools
import gc
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence, Sized
from typing import Any

import numpy as np
import torch
from torch.utils.data import (
    DataLoader,
    Dataset,
    DistributedSampler,
    Sampler,
    SequentialSampler,
)

from vidload._checks import check_bool, check_int, check_optional_bool
from vidload._cpus import default_workers
from vidload._dist import process_group, shared_seed
from vidload._loader.epochs import set_epoch, unwrap
from vidload._loader.position import Position, Resumable, share
from vidload.collate import collate_clips
from vidload.dataset import ClipDataset
from vidload.prefetch import FetchAheadSampler, ReadAheadSampler
from vidload.sources.jpeg import JpegSource

__all__ = [
    "EpochShuffleSampler",
    "ResumableDistributedSampler",
    "ShardSampler",
    "epochs",
    "make_loader",
    "set_epoch",
]

_log = logging.getLogger(__name__)
_said_distributed = False

#: Measured defaults (the docs' "DataLoader recipe").
DEFAULT_PREFETCH_FACTOR = 2
DEFAULT_LOOKAHEAD_BATCHES = 1


class ShardSampler(Resumable, Sampler[int]):
    """Items `rank, rank + num_replicas, ...` of range(n), in order: every item exactly once
    over all ranks, nothing padded or dropped (for evaluation).

    `DistributedSampler(shuffle=False)` pads the last round with repeated items so that every
    rank gets the same count, which counts those videos twice in an accuracy. Here the ranks'
    lengths differ by at most one, so an evaluation loop must not run a collective per batch
    (sum correct and total on each rank, then one `all_reduce` at the end), and a DDP-wrapped
    model should be evaluated through `model.module`. `set_epoch` changes no order (it is
    fixed) but is kept, with the position, in `state_dict()` (as `EpochShuffleSampler`'s).
    With `num_replicas=1` it is a sequential sampler that can resume (`make_loader(...,
    stateful=True)` uses it so). `set_epoch(epoch, items=c)`: items `c + rank, c + rank +
    num_replicas, ...`, this rank's share of the rest after c items handed out on any number
    of ranks (`vidload._loader.position.share`).
    """

    def __init__(self, n: int, *, num_replicas: int, rank: int) -> None:
        self.n = check_int("n", n, minimum=0)
        self.num_replicas = check_int("num_replicas", num_replicas, minimum=1)
        self.rank = check_int("rank", rank, minimum=0)
        if rank >= num_replicas:
            raise ValueError(f"rank ({rank}) must be < num_replicas ({num_replicas})")
        self.epoch = 0
        self._position = Position()

    def global_size(self) -> int:
        return self.n

    def _share(self, items: int) -> range:
        return share(self.n, items, self.rank, self.num_replicas, pad=False, drop=False)

    def _order(self) -> Sequence[int]:
        return range(self.n)

    def __repr__(self) -> str:
        return f"ShardSampler({self.n}, num_replicas={self.num_replicas}, rank={self.rank})"


class EpochShuffleSampler(ShardSampler):
    """A permutation of range(n) drawn from (seed, epoch): the same epoch gives the same order.

    `set_epoch(epoch)` picks the epoch; `make_loader` uses this sampler when shuffling, and
    `set_epoch(loader, epoch)` sets it together with the dataset's epoch.
    `state_dict()` -> `{"epoch", "yielded"}` and `load_state_dict` save and restore the
    position in the epoch (`vidload._loader.position`); `set_epoch(epoch, start=k)` starts the
    next pass at its k-th index, `set_epoch(epoch, items=c)` at the permutation's element c
    (the items a run with another batch size handed out; `split_state` counts them): a
    `ShardSampler` of one rank over the permutation. One process's order: a run under
    torch.distributed shuffles with `DistributedSampler`.
    """

    def __init__(self, n: int, *, seed: int) -> None:
        super().__init__(n, num_replicas=1, rank=0)
        self.seed = check_int("seed", seed, minimum=0)

    def _order(self) -> Sequence[int]:
        # spawn_key keeps this stream apart from the items' np.random.default_rng([seed, e, i])
        seq = np.random.SeedSequence([self.seed, self.epoch], spawn_key=(1,))
        return np.random.default_rng(seq).permutation(self.n).tolist()

    def __repr__(self) -> str:
        return f"EpochShuffleSampler({self.n}, seed={self.seed}, epoch={self.epoch})"


class ResumableDistributedSampler(Resumable, DistributedSampler):
    """torch's `DistributedSampler` (the same indices, in the same order, for every epoch)
    that also saves and restores its position: `state_dict()` -> `{"epoch", "yielded"}`,
    `load_state_dict`, `set_epoch(epoch, start=k)` (see `EpochShuffleSampler`).
    `make_loader` picks it under torch.distributed when training.

    Its ranks' order is one permutation from (seed, epoch) whatever their number: rank r
    yields its elements r, r + W, ... (padded with the permutation's first ones to a multiple
    of W). `set_epoch(epoch, items=c)` yields this rank's share of the permutation's rest
    after element c the same way, padded with at most W - 1 repeats: a run stopped after c
    items on other ranks continues with every item once (`vidload._loader.position.share`).
    """

    def __init__(self, dataset: Sized, **kwargs: Any) -> None:
        super().__init__(dataset, **kwargs)  # type: ignore[arg-type]
        self._position = Position()

    @property
    def order(self) -> str:
        return f"DistributedSampler(shuffle={self.shuffle}, drop_last={self.drop_last})"

    def global_size(self) -> int:
        return len(self.dataset)  # type: ignore[arg-type]

    def _share(self, items: int) -> range:
        n, pad, drop = self.global_size(), not self.drop_last, self.drop_last
        return share(n, items, self.rank, self.num_replicas, pad=pad, drop=drop)

    def _order(self) -> Sequence[int]:
        """`DistributedSampler.__iter__`'s order: a randperm seeded seed + epoch (at item 0
        its pass is torch's, bit for bit)."""
        n = self.global_size()
        if not self.shuffle:
            return range(n)
        generator = torch.Generator()
        generator.manual_seed(self.seed + self.epoch)
        return torch.randperm(n, generator=generator).tolist()


def _init_worker(user_fn: Callable[[int], None] | None, worker_id: int) -> None:
    """Freeze the objects the worker inherited, one torch and one OpenCV thread per worker,
    then the caller's init function.

    `gc.freeze()` first: a forked worker's full garbage collection writes the header of every
    object it inherited (torch's, numpy's, the script's), copying each page that holds one;
    frozen objects are never traversed (the freeze only relinks the lists, touching none). At
    650,000 entries (`python tools/entries_memory.py`, 2 workers, batch 512) a worker's
    unique memory went from ~9 MiB after its first batch to ~48 MiB after the epoch, the jump
    at its first full collection two thirds of the way through; frozen, 11 MiB. Objects the
    worker inherited are then never collected in it, which costs nothing: they are the
    parent's, alive there.

    Workers are as many as the cores, and a clip's decode is single-threaded anyway; extra
    threads only contend (OpenCV's default is one per core). Torch stays at 1 (PyTorch's own
    worker default): more can deadlock a forked worker whose parent already used OpenMP (seen
    here: `torch.set_num_threads(2)` in a worker hangs in libgomp's barrier).
    """
    from vidload._cv2 import cv2

    gc.freeze()

    torch.set_num_threads(1)
    cv2.setNumThreads(1)
    if user_fn is not None:
        user_fn(worker_id)


def make_loader(
    dataset: Dataset,
    batch_size: int = 16,
    *,
    shuffle: bool | None = None,
    sampler: Sampler | Iterable | None = None,
    drop_last: bool = False,
    seed: int | None = None,
    num_workers: int | None = None,
    prefetch_factor: int = DEFAULT_PREFETCH_FACTOR,
    persistent_workers: bool = True,
    pin_memory: bool | None = None,
    worker_init_fn: Callable[[int], None] | None = None,
    read_ahead: bool | None = None,
    lookahead: int | None = None,
    fetch_ahead: bool | None = None,
    stateful: bool = False,
    **loader_kwargs: Any,
) -> DataLoader:
    """A DataLoader over `dataset` (a ClipDataset, or a Subset of one) with measured defaults.

    Batches are `(clips, labels)`: clips uint8 (B, T, C, H, W), labels int64 (B,) with the
    default collate function, `vidload.collate_clips` (torch's `default_collate`, whose error
    for clips of different sizes names `ClipDataset`'s `crop=` / `short_side=`).

    Args:
        dataset: a ClipDataset (or any map-style dataset with `read_ahead=False`).
        batch_size: clips per batch.
        shuffle: shuffle with an `EpochShuffleSampler` (order from (seed, epoch)). None: the
            ClipDataset's `train` flag (True for other datasets). Must not be True with
            `sampler`.
        sampler: an item sampler to use instead (e.g. a `DistributedSampler`); its
            `set_epoch` is called by `set_epoch(loader, epoch)`. None under torch.distributed
            (a default process group initialised): shuffling gives
            `DistributedSampler(shuffle=True, seed=<from seed>, drop_last=False)`, which pads
            the last round with a few repeated items so that every rank runs the same number
            of steps (DDP needs that); no shuffling gives a `ShardSampler`, every item exactly
            once over all ranks (evaluation: nothing counted twice, ranks' lengths differ by
            at most one). Logged once per process (logger "vidload.loader", rank 0).
        drop_last: drop a last batch smaller than `batch_size`.
        seed: shuffle seed; None uses the ClipDataset's `seed` (a fresh one for other datasets,
            the same on every rank under torch.distributed: rank 0's, broadcast).
        num_workers: worker processes; None means this process's share of the CPUs it may use
            (`vidload._cpus.default_workers()`: the affinity mask divided by torchrun's
            `LOCAL_WORLD_SIZE`, at least 1); 0 loads in this process.
        prefetch_factor: batches each worker keeps ready (ignored with 0 workers).
        persistent_workers: keep workers (and their open files) between epochs (ignored with 0
            workers).
        pin_memory: None means `torch.cuda.is_available()`.
        worker_init_fn: called in each worker with its id, after the worker is limited to
            one torch and one OpenCV thread (with 0 workers this process is left alone).
        read_ahead: wrap the sampler in a `ReadAheadSampler`, which hints the bytes upcoming
            items read to the kernel (True needs a ClipDataset whose source names its files).
            None: on when it can name them (`HasFiles` sources, VideoSource), except for a
            JpegSource, where hinting opens every frame file a clip reads: with whole-folder
            hints that cost more than the cold reads it saved (see `vidload.prefetch`;
            `python tools/readahead_cold.py DIR --formats jpeg` measures it), and except at a
            URL root without a `cache_dir` (no local file to hint).
        lookahead: items to hint ahead of the one handed out; None means `batch_size`.
        fetch_ahead: each worker sends its next batch's round of storage requests before it
            decodes the current batch, so that round is on the wire while it decodes
            (`vidload.prefetch.FetchAheadSampler` tells each worker its next batch;
            `vidload._dataset.batch` checks what a batch takes from that round against its
            own plan: a changed plan wastes those bytes, never gives a wrong frame). At most
            one batch ahead per worker. True needs a ClipDataset (not a Subset, whose
            `__getitems__` hands on plain indices). None: on for a ClipDataset whose source
            plans its batches at a URL root without a `cache_dir` (off with
            `in_order=False`, where torch no longer deals the batches to workers in turn);
            local disk has nothing to fetch. Measured: docs/guides/buckets.md.
        stateful: return a torchdata `StatefulDataLoader`
            (`vidload._loader.stateful.StatefulLoader`, the optional extra `vidload[stateful]`)
            whose `state_dict()` holds the epoch, the position in it and what the dataset
            learned (frame counts, broken videos), so that `load_state_dict` in a new process
            continues with exactly the batches the uninterrupted run would have yielded next;
            rank 0's state resumes on any number of ranks and with any batch size, the rest
            of the epoch dealt out to the new ranks (docs/guides/resuming.md). Without a
            sampler and without shuffling it loads in order through a `ShardSampler` (one
            that can resume) instead of torch's `SequentialSampler`.
        **loader_kwargs: passed on to `DataLoader` (collate_fn, timeout,
            multiprocessing_context, ...; `snapshot_every_n_steps` with stateful=True: keep
            its default 1, or a state taken between snapshots replays batches to catch up).

    Raises:
        ValueError / TypeError: a bad argument (the value and the rule are in the message).
        ModuleNotFoundError: stateful=True without torchdata installed (the message names the
            extra).
    """
    batch_size = check_int("batch_size", batch_size, minimum=1)
    if num_workers is None:
        num_workers = default_workers()
    # plain ints from here on: torch's BatchSampler takes no NumPy integers
    num_workers = check_int("num_workers", num_workers, minimum=0)
    prefetch_factor = check_int("prefetch_factor", prefetch_factor, minimum=1)
    check_bool("drop_last", drop_last)
    check_bool("persistent_workers", persistent_workers)
    shuffle = check_optional_bool("shuffle", shuffle)
    pin_memory = check_optional_bool("pin_memory", pin_memory)
    read_ahead = check_optional_bool("read_ahead", read_ahead)
    fetch_ahead = check_optional_bool("fetch_ahead", fetch_ahead)
    check_bool("stateful", stateful)
    loader_class = _stateful_class() if stateful else DataLoader
    if worker_init_fn is not None and not callable(worker_init_fn):
        raise TypeError(f"worker_init_fn must be callable or None, got {worker_init_fn!r}")
    for name in ("batch_sampler", "sampler", "shuffle", "batch_size", "worker_init_fn"):
        if name in loader_kwargs:
            raise TypeError(f"make_loader got {name!r} twice")
    if lookahead is None:
        lookahead = DEFAULT_LOOKAHEAD_BATCHES * batch_size
    lookahead = check_int("lookahead", lookahead, minimum=0)

    clips = unwrap(dataset)
    if sampler is not None:
        if shuffle:
            raise ValueError(
                "shuffle (True) must be False or None with a sampler: the sampler decides "
                "the order (use DistributedSampler(shuffle=True) to shuffle across ranks)"
            )
        item_sampler = sampler
    else:
        if shuffle is None:
            shuffle = clips.train if isinstance(clips, ClipDataset) else True
        group = process_group()
        shuffle_seed = 0  # used only when shuffling
        if shuffle:
            if seed is None and isinstance(clips, ClipDataset):
                seed = clips.seed
            # without a process group shared_seed() is just a fresh seed
            shuffle_seed = shared_seed() if seed is None else seed
        if group is not None:
            item_sampler = _distributed_sampler(dataset, shuffle, shuffle_seed, *group)
        elif shuffle:
            item_sampler = EpochShuffleSampler(_length(dataset), seed=shuffle_seed)
        elif stateful:
            item_sampler = ShardSampler(_length(dataset), num_replicas=1, rank=0)
        else:
            item_sampler = SequentialSampler(range(_length(dataset)))
    read_default, fetch_default = _ahead_defaults(dataset)
    if read_ahead is None:
        read_ahead = read_default
    if read_ahead:
        item_sampler = ReadAheadSampler(item_sampler, dataset, lookahead=lookahead)
    if fetch_ahead is None:
        fetch_ahead = fetch_default and loader_kwargs.get("in_order", True) is not False
    elif fetch_ahead and not isinstance(dataset, ClipDataset):
        raise TypeError(
            f"fetch_ahead=True needs a ClipDataset, got {type(dataset).__name__} (a Subset "
            f"hands plain indices on to the dataset's __getitems__); pass fetch_ahead=None"
        )
    if fetch_ahead:
        item_sampler = FetchAheadSampler(
            item_sampler, batch_size=batch_size, drop_last=drop_last, workers=num_workers
        )
    if pin_memory is None:
        pin_memory = torch.cuda.is_available()

    workers: dict[str, Any] = {}
    if num_workers > 0:
        workers = {
            "prefetch_factor": prefetch_factor,
            "persistent_workers": persistent_workers,
            "worker_init_fn": functools.partial(_init_worker, worker_init_fn),
        }
    elif worker_init_fn is not None:
        raise ValueError("worker_init_fn is never called with num_workers (0)")
    return loader_class(
        dataset,
        batch_size=batch_size,
        sampler=item_sampler,
        drop_last=drop_last,
        num_workers=num_workers,
        pin_memory=pin_memory,
        **workers,
        **{"collate_fn": collate_clips, **loader_kwargs},
    )


def _length(dataset: Dataset) -> int:
    """len(dataset); TypeError naming the rule for a dataset without one."""
    if not isinstance(dataset, Sized):
        raise TypeError(f"dataset ({type(dataset).__name__}) must have a length (__len__)")
    return len(dataset)


def _distributed_sampler(
    dataset: Dataset, shuffle: bool, seed: int, rank: int, world_size: int
) -> Sampler[int]:
    global _said_distributed
    if shuffle:
        check_int("seed", seed, minimum=0)
        # DistributedSampler seeds a torch.Generator with seed + epoch (< 2**64); ClipDataset
        # seeds can be 128-bit, so derive a 62-bit one (spawn_key apart from the items' streams)
        torch_seed = int(
            np.random.SeedSequence([seed], spawn_key=(3,)).generate_state(1, np.uint64)[0]
        )
        sampler: Sampler[int] = ResumableDistributedSampler(
            dataset,  # type: ignore[arg-type]
            num_replicas=world_size,
            rank=rank,
            shuffle=True,
            seed=torch_seed >> 2,
            drop_last=False,
        )
        what = "DistributedSampler(shuffle=True; the last round padded with repeated items)"
    else:
        sampler = ShardSampler(_length(dataset), num_replicas=world_size, rank=rank)
        what = "ShardSampler (every item once over all ranks, no padding)"
    if not _said_distributed and rank == 0:
        _said_distributed = True
        _log.warning(
            "vidload.make_loader: torch.distributed is initialised (world size %d) and no "
            "sampler was given: each rank loads its share through a %s",
            world_size,
            what,
        )
    return sampler


def epochs(loader: DataLoader, stop: int, *, start: int | None = None) -> Iterator[int]:
    """Epochs start, ..., stop - 1, calling `set_epoch(loader, epoch)` before yielding each.

    for epoch in epochs(loader, 10):
        for clips, labels in loader:
            ...

    `start` None: 0, or for a `make_loader(..., stateful=True)` loader given a state by
    `load_state_dict`, the epoch that state resumes (the next one when it was saved after
    an epoch's last batch).
    """
    stop = check_int("stop", stop, minimum=0)
    if start is None:
        start = getattr(loader, "resume_epoch", 0)
    start = check_int("start", start, minimum=0)
    for epoch in range(start, stop):
        set_epoch(loader, epoch)
        yield epoch


def _stateful_class() -> type[DataLoader]:
    """vidload's StatefulDataLoader subclass; ModuleNotFoundError naming the extra without
    torchdata."""
    try:
        from vidload._loader.stateful import StatefulLoader
    except ModuleNotFoundError as e:
        if e.name is None or not e.name.startswith("torchdata"):
            raise
        raise ModuleNotFoundError(
            "make_loader(stateful=True) needs torchdata's StatefulDataLoader: "
            "pip install 'vidload[stateful]' (or torchdata>=0.8)",
            name=e.name,
        ) from e
    return StatefulLoader


def _ahead_defaults(dataset: Dataset) -> tuple[bool, bool]:
    """(read_ahead, fetch_ahead) for None. Read-ahead where it can name `dataset`'s files (a
    ClipDataset or a Subset of one, what `item_files` takes) and it is worth it: not JPEG
    folders, not a URL root without a cache (no local file). Fetch-ahead for a ClipDataset
    whose source plans its batches' reads at a root whose reads wait on a network
    (`SourceRoot.reads_wait`: a URL without a cache)."""
    clips = unwrap(dataset)
    if not isinstance(clips, ClipDataset):
        return False, False
    source = clips.options.adapted
    waits = source.store is not None and source.store.reads_wait
    hints = source.files is not None and not isinstance(clips.source, JpegSource)
    plans = source.prepare is not None and source.fetch_plan is not None
    return hints and not waits, plans and waits and clips is dataset
