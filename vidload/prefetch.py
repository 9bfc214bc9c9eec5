"""The samplers that read ahead of the one they wrap: `ReadAheadSampler` tells the kernel which
bytes the next items will read, before a worker reads them; `FetchAheadSampler` tells each
DataLoader worker which batch it reads next. Both yield what they wrap, their position counted
by what they yielded (`vidload._loader.position.Wrapper`), so exact resume is unchanged.

`ReadAheadSampler` wraps the sampler of a DataLoader. It runs in the main process; as it hands
out an index it looks `lookahead` positions further along the wrapped sampler and asks the
kernel to start reading what that item will read (`posix_fadvise(POSIX_FADV_WILLNEED)` per
byte range). The page cache is shared by every process, so a hint from the main process makes
the worker's later read a cache hit. The hints are issued by a background thread, so a slow
device never stalls the main process; the ranges an item reads are found in the sampler's own
thread, because sources are not thread-safe.

Which bytes: `ClipDataset.planned_reads(i)` gives the frame indices item `i` will read (the
same (seed, epoch, index) draw as `__getitem__`, nothing decoded), and a source with
`byte_ranges(video_id, indices) -> [(path, offset, length)]` (the `HasByteRanges` protocol)
names their bytes: HDF5 its metadata and the frames' bytes, npy (mmap mode) its header and the
frames' rows, JPEG folders the frames' files. Only those are hinted, so a dataset larger than
RAM is not pushed through the page cache (evicting what the workers need) by hints for whole
files of which a clip reads 8 frames. Other sources (VideoSource, whose decode reads from the
keyframe on) and npy in "read" mode (which reads the whole file) are hinted whole, from
`files(video_id)` (the `HasFiles` protocol), as is an item whose frame count is not known
without decoding. A range hinted a moment ago (another clip of the same video) is not hinted
again.

A hint is only a hint: a file that cannot be opened (missing, no permission) is counted in
`num_failed` and warned about once (`ReadAheadWarning`), never raised, because the worker's read
raises the proper `VideoReadError` for it. Where `os.posix_fadvise` does not exist (macOS,
Windows) the wrapper yields the same indices and hints nothing; it warns once per process.

What it gains (cold epochs against warm ones, with and without read-ahead, per format): the
docs' "DataLoader recipe", measured by `python tools/readahead_cold.py DIR --workers 2
--repeats 3`. The hints are issued from a thread because a WILLNEED hint on a cold file blocks
until the kernel has queued the read. `make_loader` leaves read-ahead off for JPEG folders,
where hinting means opening every frame file (the tool's jpeg rows show what it gives).

`FetchAheadSampler` (`make_loader(fetch_ahead=True)`): a worker of a bucket-backed
`ClipDataset` sends its next batch's round of requests before it decodes the current batch
(`vidload._dataset.batch`), so it has to know that batch while the DataLoader has not handed it
over yet. The sampler knows the order, and torch's DataLoader deals the batches to its W workers
in turn (`_try_put_index`: the next worker of `itertools.cycle(range(W))`, for torch's and
torchdata's loaders alike, with `in_order=True`), so the batch a worker reads after batch k is
batch k + W of the same pass (with no workers, k + 1). `FetchAheadSampler` wraps the item
sampler, reads W batches ahead of it, and yields each batch's first index as a
`vidload._dataset.batch.Lead`: an int naming the indices of that batch. The batch sampler, the
worker and collate see plain indices (an int subclass passes through `BatchSampler` unchanged
and is pickled to the worker with what it names); only `ClipDataset.__getitems__` reads it. A
guess that turns out wrong (a worker that got another batch, `in_order=False`, the pass
abandoned) only wastes the round sent ahead: what a batch takes from it is checked against the
batch's own plan (`vidload._dataset.batch`). The last W batches of a pass name none (the next
pass's order is not known before `set_epoch`).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import itertools
import operator
import os
import pickle
import threading
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import numpy as np
from torch.utils.data import Dataset, Sampler, Subset

from vidload._checks import check_bool, check_int
from vidload._dataset.batch import Lead
from vidload._loader.position import Wrapper
from vidload._lru import ProcessLRU
from vidload.errors import VideoReadError
from vidload.sources.base import FrameSourceBase, open_regular_file

if TYPE_CHECKING:
    from vidload.dataset import ClipDataset

__all__ = [
    "HasByteRanges",
    "HasFiles",
    "ReadAheadSampler",
    "ReadAheadWarning",
    "item_files",
    "item_ranges",
    "read_ahead_supported",
]

T = TypeVar("T")

#: (file, offset, length) of a read; length 0 means "to the end of the file" (as fadvise).
ByteRange = tuple[Path, int, int]


class ReadAheadWarning(UserWarning):
    """Read-ahead could not hint a file, or cannot hint at all on this platform."""


@runtime_checkable
class HasFiles(Protocol):
    """A source that can say which files a read of a video touches (`files`, declared by
    `vidload.sources.base.FrameSourceBase`, which read-ahead asks; None there: not offered)."""

    def files(self, video_id: str) -> list[Path]:
        """The files `read(video_id, ...)` may open (for JPEG folders: every frame file)."""
        ...


@runtime_checkable
class HasByteRanges(Protocol):
    """A source that can say which bytes a read of some frames touches (`byte_ranges`,
    declared by `vidload.sources.base.FrameSourceBase`; None there: whole files are hinted)."""

    def byte_ranges(self, video_id: str, indices: Sequence[int] | np.ndarray) -> list[ByteRange]:
        """`(path, offset, length)` of what `read(video_id, indices)` reads (length 0: to the
        end of the file)."""
        ...


def read_ahead_supported() -> bool:
    """Whether this platform has `os.posix_fadvise` (Linux and most Unix; not macOS/Windows)."""
    return hasattr(os, "posix_fadvise") and hasattr(os, "POSIX_FADV_WILLNEED")


@functools.cache
def _warn_unsupported() -> None:
    warnings.warn(
        "read-ahead is off: os.posix_fadvise is not available on this platform, so "
        "ReadAheadSampler yields the sampler's indices without hinting any file "
        "(warned once per process)",
        ReadAheadWarning,
        stacklevel=3,
    )


def _indices_of(element: object) -> list[Any]:
    """The dataset indices in one element of a sampler: a batch (BatchSampler: a list of
    indices) or one index."""
    if isinstance(element, Iterable):
        try:
            return list(element)
        except TypeError:  # iterable by type, yet one index (a 0-d tensor)
            pass
    return [element]


def _clip_dataset(dataset: Dataset) -> tuple[ClipDataset, list[int] | None]:
    """(ClipDataset, item map) for a ClipDataset or a (nested) Subset of one."""
    from vidload.dataset import ClipDataset  # torch-free import cycle guard

    mapping: list[int] | None = None
    while isinstance(dataset, Subset):
        inner = [int(i) for i in dataset.indices]
        mapping = inner if mapping is None else [inner[i] for i in mapping]
        dataset = dataset.dataset
    if not isinstance(dataset, ClipDataset):
        raise TypeError(
            f"read-ahead needs a ClipDataset or a torch Subset of one, got "
            f"{type(dataset).__name__}; pass read_ahead=False for other datasets"
        )
    return dataset, mapping


def _files_of(source: FrameSourceBase) -> Callable[[str], list[Path]]:
    """The function giving a video's files for `source` (as the dataset asks it: its
    declared `files`), or raise TypeError."""
    if source.files is not None:
        return source.files
    raise TypeError(
        f"read-ahead needs a source with files(video_id) -> list[Path] (the HasFiles protocol); "
        f"{source.source_name} has none. Add one, or pass read_ahead=False"
    )


def _lookup(
    ds: ClipDataset, mapping: list[int] | None, find: Callable[[int, str], T]
) -> Callable[[int], tuple[str, Callable[[], T]]]:
    """`index -> (video_id, lambda: find(item, video_id))` for the items of `ds` (through the
    item map of a Subset)."""
    per_video, videos = ds.items_per_video, ds.videos
    size = len(mapping) if mapping is not None else len(ds)

    def lookup(index: int) -> tuple[str, Callable[[], T]]:
        if not -size <= index < size:
            raise IndexError(f"index ({index}) must be in [{-size}, {size})")
        i = mapping[index] if mapping is not None else index % size
        video_id = videos[i // per_video].video_id
        return video_id, functools.partial(find, i, video_id)

    return lookup


def item_files(dataset: Dataset) -> Callable[[int], tuple[str, Callable[[], list[Path]]]]:
    """A function `index -> (video_id, files)` for the items of a ClipDataset (or a Subset).

    Raises TypeError when the dataset is not a ClipDataset or its source cannot say which
    files it reads.
    """
    ds, mapping = _clip_dataset(dataset)
    files = _files_of(ds.options.adapted)
    return _lookup(ds, mapping, lambda i, video_id: files(video_id))


def item_ranges(dataset: Dataset) -> Callable[[int], tuple[str, Callable[[], list[ByteRange]]]]:
    """A function `index -> (video_id, ranges)` for the items of a ClipDataset (or a Subset):
    `ranges()` gives the `(path, offset, length)` byte ranges the item will read, from
    `ClipDataset.planned_reads` and the source's `byte_ranges` where it has one, else the
    video's whole files (length 0). Finding the ranges may raise (a missing file: the read
    will report it). `ranges` uses its own copy of a ranged source, so one thread may call
    it while another reads through the dataset.

    Raises TypeError when the dataset is not a ClipDataset or its source cannot say which
    files it reads.
    """
    ds, mapping = _clip_dataset(dataset)
    files = _files_of(ds.options.adapted)
    ranged = None
    if ds.options.adapted.byte_ranges is not None:
        # `ranges` runs in the hint thread, where a cold open (HDF5 metadata, an npy header, a
        # directory listing) does not stall the sampler: it gets its own copy of the source
        # (sources are not thread-safe) in a shallow copy of the dataset, which shares the
        # dataset's shared-memory epoch and learned counts. With the opens in the sampler's
        # thread a cold HDF5 epoch with read-ahead took 2.15x a warm one, longer than without
        # read-ahead (1.95x) (`python tools/readahead_cold.py DIR --workers 0`, 128 files of
        # 2.6 MB, on the earlier version that opened them in the sampler's thread).
        try:
            source = pickle.loads(pickle.dumps(ds.source))
        except Exception as e:
            raise TypeError(
                f"read-ahead needs a picklable source (as DataLoader workers do); "
                f"{type(ds.source).__name__} is not: {e}. Pass read_ahead=False"
            ) from e
        ds = copy.copy(ds)
        ds.options = dataclasses.replace(ds.options, source=source)  # adapted again, once
        ranged = ds.options.adapted.byte_ranges
        files = _files_of(ds.options.adapted)

    def ranges(i: int, video_id: str) -> list[ByteRange]:
        if ranged is not None:
            try:
                plans = ds.planned_reads(i)
            except LookupError as e:
                if type(e) is not LookupError:  # an IndexError (FrameCountError) is a failure
                    raise
            else:
                return [r for vid, indices in plans for r in ranged(vid, indices)]
        # no ranges, or the count is not known without decoding: the whole files
        return [(path, 0, 0) for path in files(video_id)]

    return _lookup(ds, mapping, ranges)


class ReadAheadSampler(Wrapper, Sampler[T]):
    """Yields exactly what `sampler` yields, hinting the bytes upcoming items read to the kernel.

    Args:
        sampler: any sampler or iterable of indices: a Sampler (`RandomSampler`,
            `DistributedSampler`, ...) yielding item indices, or a `BatchSampler` yielding
            lists of them.
        dataset: the ClipDataset the indices refer to (or a torch `Subset` of one); its
            source must have `files(video_id)` (the `HasFiles` protocol; every vidload source
            has); with `byte_ranges(video_id, indices)` (`HasByteRanges`: HDF5, npy, JPEG
            folders) only the bytes of the frames each item reads are hinted.
        lookahead: how many of `sampler`'s elements (items, or batches for a BatchSampler)
            ahead of the one being yielded to hint (>= 0; 0 hints each element as it is
            yielded, which already leads a worker's read by the DataLoader's prefetch queue).

    Counters (main process, across iterations): `num_hinted` byte ranges hinted (a whole
    file is one range); `num_failed` hints that failed (a file that cannot be opened, a video
    whose files or frames cannot be found, an index out of range), warned about once per
    sampler (`ReadAheadWarning`), then only counted. Failures never raise here: the read of
    that item raises the proper error.
    `set_epoch(epoch)` is passed on to `sampler` (e.g. a DistributedSampler).

    Position (`vidload._loader.position.Wrapper`): `state_dict()` -> `{"epoch", "yielded"}`
    counts the elements this sampler has yielded (not the ones it read ahead of them), with
    `sampler`'s epoch; `load_state_dict(state)` and `set_epoch(epoch, start=k)` make the next
    pass skip the first k elements of `sampler`'s pass for that epoch, so a resumed loader
    gets the elements the uninterrupted pass yielded next; around one of vidload's samplers,
    `set_epoch(epoch, items=c)` and `split_state` are passed on to it.

    Raises:
        TypeError: `dataset` is not a ClipDataset, or its source cannot name its files.
    """

    def __init__(self, sampler: Iterable[T], dataset: Dataset, *, lookahead: int = 16) -> None:
        self.lookahead = check_int("lookahead", lookahead, minimum=0)
        super().__init__(sampler)
        self._lookup = item_ranges(dataset)
        self.num_hinted = 0
        self.num_failed = 0
        self._warned = False
        if not read_ahead_supported():
            _warn_unsupported()

    def __repr__(self) -> str:
        return f"ReadAheadSampler({self.sampler!r}, lookahead={self.lookahead})"

    def _ahead(self, start: int) -> Iterator[T]:
        """The sampler's elements from `start` on, hinting each `lookahead` elements ahead
        (none where the platform cannot hint).

        The hints are issued in order by one thread (`_hint_item`), the only one that counts
        and warns; this one only finds each item's video (`_queue`)."""
        if not read_ahead_supported():
            yield from itertools.islice(self.sampler, start, None)
            return
        hinter = ThreadPoolExecutor(1, initializer=_name_thread)
        # the ranges hinted a moment ago (another clip of the same video), not hinted again
        recent: ProcessLRU[ByteRange, bool] = ProcessLRU(16 * (2 * self.lookahead + 64))
        finished = False
        try:
            upcoming: deque[T] = deque()
            for element in itertools.islice(self.sampler, start, None):
                upcoming.append(element)
                self._queue(hinter, recent, element)
                if len(upcoming) > self.lookahead:
                    yield upcoming.popleft()
            while upcoming:
                yield upcoming.popleft()
            finished = True
        finally:  # the pending hints issued, or dropped when the iteration was abandoned
            hinter.shutdown(wait=True, cancel_futures=not finished)

    def _queue(self, hinter: Executor, recent: ProcessLRU[ByteRange, bool], element: T) -> None:
        """Find the video of each of `element`'s items (this thread) and hand the finding of
        its byte ranges to the hinter's thread."""
        for index in _indices_of(element):
            try:
                video_id, ranges = self._lookup(operator.index(index))
            except (TypeError, IndexError) as e:  # the DataLoader reports bad indices itself
                hinter.submit(self._failed, f"item {index!r}", e)
                continue
            hinter.submit(self._hint_item, video_id, ranges, recent)

    def _hint_item(
        self,
        video_id: str,
        find: Callable[[], list[ByteRange]],
        recent: ProcessLRU[ByteRange, bool],
    ) -> None:
        """Hint the byte ranges of one item, less those in `recent` (clips_per_video > 1,
        repeats)."""
        try:
            found = find()
        except Exception as e:  # noqa: BLE001 - the worker's read raises the real error
            self._failed(f"video {video_id!r}", e)
            return
        for r in found:
            if not recent.get(r):
                recent.put(r, True)
                self._hint(video_id, *r)

    def _hint(self, video_id: str, path: Path, offset: int, length: int) -> None:
        try:
            fd = open_regular_file(path)  # a FIFO would block the hinting thread
        except (VideoReadError, TypeError, ValueError) as e:  # missing, not a file, not a path
            self._failed(f"{str(path)!r} (video {video_id!r})", e)
            return
        try:
            os.posix_fadvise(fd, offset, length, os.POSIX_FADV_WILLNEED)
            self.num_hinted += 1
        except OSError as e:
            self._failed(f"{str(path)!r} (video {video_id!r})", e)
        finally:
            os.close(fd)

    def _failed(self, what: str, error: BaseException) -> None:
        self.num_failed += 1
        if not self._warned:
            self._warned = True
            warnings.warn(
                f"read-ahead could not hint {what}: {error}; the "
                f"read will report it. Further failures are only counted "
                f"(ReadAheadSampler.num_failed)",
                ReadAheadWarning,
                stacklevel=2,
            )


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
        super().__init__(sampler)
        self.batch_size = check_int("batch_size", batch_size, minimum=1)
        self.drop_last = check_bool("drop_last", drop_last)
        #: How many batches later the same worker's next batch is.
        self.stride = max(1, check_int("workers", workers, minimum=0))

    def __repr__(self) -> str:
        return (
            f"FetchAheadSampler({self.sampler!r}, batch_size={self.batch_size}, "
            f"drop_last={self.drop_last}, workers={self.stride})"
        )

    def _ahead(self, start: int) -> Iterator[Any]:
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


def _name_thread() -> None:
    """The hint thread's name (`vidload-read-ahead`), as a thread list or a profiler shows."""
    threading.current_thread().name = "vidload-read-ahead"
