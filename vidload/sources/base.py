"""The FrameSource protocol, the base class that declares what a dataset may ask of a source
(`FrameSourceBase`), and helpers shared by every source."""

from __future__ import annotations

import os
import stat
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from vidload._ids import VIDEO_EXTENSIONS, normalize_video_id, strip_video_ext
from vidload._storage.local import file_kind as _file_kind
from vidload._storage.ranges import coalesce
from vidload.errors import FrameCountError, VideoReadError

if TYPE_CHECKING:
    from vidload._storage import Location, SourceRoot
    from vidload._storage.batch import Request
    from vidload.transforms import ClipGeometry

# VIDEO_EXTENSIONS, normalize_video_id and strip_video_ext live in vidload._ids (below the
# sources: the container names of vidload._layout need them too); this module re-exports them.
__all__ = [
    "SMALL_CLIP",
    "FrameSource",
    "FrameSourceBase",
    "Indices",
    "VIDEO_EXTENSIONS",
    "as_index_array",
    "check_in_range",
    "check_regular_file",
    "hints_of",
    "normalize_video_id",
    "open_regular",
    "open_regular_file",
    "strip_video_ext",
]

#: Frame indices as a source takes them: 0-based, any order, duplicates allowed; checked and
#: made an int64 array by `as_index_array`.
Indices = Sequence[int] | np.ndarray


@runtime_checkable
class FrameSource(Protocol):
    """Where a video's frames come from: the three calls every source answers. Every source
    is picklable and holds only paths until it is used; handles are opened lazily in the
    process that reads.

    This is the type a `ClipDataset` takes: any object with these three methods. What a
    dataset may ask beyond them (timestamps, which videos are missing, a batch's reads
    planned at once, read-ahead hints, a geometry applied while decoding) is declared, with
    its default, by `FrameSourceBase`, which vidload's sources subclass; a source that does
    not subclass it is adapted once, when the dataset is built (`vidload.sources._adapted`).
    """

    def reported_frames(self, video_id: str) -> int | None:
        """Frame count the metadata claims, found cheaply (no decoding); None if unknown."""
        ...

    def actual_frames(self, video_id: str) -> int:
        """Frames that really exist (decode), found once and cached."""
        ...

    def read(self, video_id: str, indices: Indices) -> np.ndarray:
        """Frames `indices` (0-based, any order, duplicates allowed) as uint8 (k, H, W, 3) RGB,
        in the order asked. An index >= the actual count raises FrameCountError.

        Optional: `read(video_id, indices, *, geometry=None)`. A source whose `read` takes a
        keyword `geometry` (a `vidload.transforms.ClipGeometry`, or None for full frames)
        returns the frames with it applied, uint8 (k, out_h, out_w, 3), where
        `geometry.resolve(H, W)` of the displayed frame size gives the box, the output size and
        the flip; it should equal `apply_geometry` on full frames up to resampling differences,
        and do it more cheaply inside the decode (all of vidload's sources do). `ClipDataset`
        passes one to a `FrameSourceBase` (whose `read` takes it by contract) and to another
        source whose `read` has the parameter (found once, when the dataset is built); it
        calls `apply_geometry` itself otherwise.
        """
        ...


class FrameSourceBase(ABC):
    """The base class of vidload's sources: the three calls of `FrameSource`, and every
    optional capability a dataset (or read-ahead, or convert) may ask, declared here with its
    default, so that a caller reads an attribute instead of probing the source.

    Why a base class and not more Protocols: a caller must learn *before* calling whether a
    source offers something (a window list needs `timestamps` when the dataset is built,
    not at the first read; a batch is planned only for a source that plans), and an optional
    Protocol answers that only by `hasattr`. Here each optional method is declared as an
    attribute whose default is None, "not offered"; a subclass offers it by defining the
    method (with a mixin that defines them, the base goes after it among the bases, so that
    these Nones do not hide its methods), and a caller asks `source.timestamps is None`.
    `FrameSource` stays the Protocol (the type `ClipDataset` takes), so a class that does not
    subclass this one still type-checks and still works: it is wrapped once, when the dataset
    is built, by an adapter that answers these defaults (`vidload.sources._adapted`).

    Required (abstract): `reported_frames`, `actual_frames`, and `read`, which takes
    `geometry` (None: full frames): a source that cannot apply a `ClipGeometry` while
    decoding returns `vidload.transforms.apply_geometry(frames, geometry)`.

    Optional (None by default; define the method to offer it):

    - `timestamps(video_id) -> float64 (n,)`: seconds of every frame. Needed by windows
      (`start`/`end` in the list: checked when the dataset is built), `fps=` and
      `clip_seconds=`; `return_info` gives NaN times without it.
    - `missing_videos(video_ids) -> list[str]`: the ids the source does not hold, asked once
      when the dataset is built (`missing=`); without it nothing is checked (said once).
    - `prepare(video_ids)`, `fetch_plan(video_id, indices) -> list[Request]`,
      `settle(video_ids)`: a batch's storage reads in one concurrent round
      (`vidload._dataset.batch`); a batch is planned only where `prepare` and `fetch_plan`
      are both offered (`settle` is then called if offered).
    - `files(video_id) -> list[Path]`, `byte_ranges(video_id, indices) -> list[(path,
      offset, length)]`: what a read touches, for read-ahead hints (`vidload.prefetch`);
      without `files` there is no read-ahead; without `byte_ranges` whole files are hinted.
    - `use_containers(names) -> bool`: read each video of `names` ({video id: container
      name relative to the root}, as the root's manifest records them: its `container`
      column) by that name, with no name guessed or probed (`vidload._layout`); False when
      the names are not this source's kind. `ClipDataset` hands over the names of the
      root's `manifest.csv` (`vidload._dataset.containers`); without it the source finds
      its containers by its own rules.

    Attributes (None by default): `root`, the folder or URL read (messages name it);
    `store`, the `vidload._storage.SourceRoot` behind it (a list at a URL is read with its
    `storage_options`); `heads_kind`, the sidecar of heads convert writes for this source's
    containers (`vidload.sources._heads`).

    `read_transient` is `read` by default; a source may return frames in memory it reuses
    (`ContainerSource`), for a caller that only copies them out (`ClipDataset`).
    """

    #: The folder or URL the source reads (a local `Location` is path-like); None for none.
    root: Location | None = None
    #: Where the source's containers are (`vidload._storage.SourceRoot`); None for none.
    store: SourceRoot | None = None
    #: The kind of sidecar of heads convert writes for this source (`_heads`); None: none.
    heads_kind: str | None = None

    timestamps: Callable[[str], np.ndarray] | None = None
    missing_videos: Callable[[Sequence[str]], list[str]] | None = None
    prepare: Callable[[Sequence[str]], None] | None = None
    fetch_plan: Callable[[str, Indices], list[Request]] | None = None
    settle: Callable[[Sequence[str]], None] | None = None
    files: Callable[[str], list[Path]] | None = None
    use_containers: Callable[[Mapping[str, str]], bool] | None = None
    byte_ranges: Callable[[str, Indices], list[tuple[Path, int, int]]] | None = None

    @abstractmethod
    def reported_frames(self, video_id: str) -> int | None:
        """Frame count the metadata claims, found cheaply (no decoding); None if unknown."""

    @abstractmethod
    def actual_frames(self, video_id: str) -> int:
        """Frames that really exist (decode), found once and cached."""

    @abstractmethod
    def read(
        self, video_id: str, indices: Indices, *, geometry: ClipGeometry | None = None
    ) -> np.ndarray:
        """Frames `indices` as uint8 (k, H, W, 3) RGB in the order asked, with `geometry`
        applied (uint8 (k, out_h, out_w, 3)) when one is given (`FrameSource.read`)."""

    def read_transient(
        self, video_id: str, indices: Indices, *, geometry: ClipGeometry | None = None
    ) -> np.ndarray:
        """`read`, for a caller that only copies the frames out before its next read
        (`ClipDataset`): a source may return them in memory it reuses; by default `read`
        (given `geometry` only when there is one: a subclass's `read` that predates the
        keyword still reads full frames)."""
        if geometry is None:
            return self.read(video_id, indices)
        return self.read(video_id, indices, geometry=geometry)

    @property
    def source_name(self) -> str:
        """What messages call this source: its class's name (an adapted source's, the class
        of the object it wraps)."""
        return type(self).__name__


#: Clips up to this many frames take pure-Python paths (`as_index_array`'s minimum,
#: `encoded.distinct_frames`): a list beats numpy's per-call cost after a decode.
SMALL_CLIP = 64


def as_index_array(indices: Indices) -> np.ndarray:
    """Indices as a 1-D int64 array; negative or non-integer indices raise IndexError/TypeError."""
    arr = np.asarray(indices)
    if arr.ndim != 1:
        raise ValueError(f"indices must be 1-D, got shape {arr.shape}")
    if arr.dtype != np.int64:
        if arr.size and arr.dtype.kind not in "iu":  # np.issubdtype(.., np.integer), ~10x cheaper
            raise TypeError(f"indices must be integers, got dtype {arr.dtype}")
        arr = arr.astype(np.int64)
    # a clip's few indices: min of a list, ~10 us less than a numpy reduction after a decode
    low = (min(arr.tolist()) if arr.size <= SMALL_CLIP else int(arr.min())) if arr.size else 0
    if low < 0:
        raise IndexError(f"frame indices must be >= 0, got {low}")
    return arr


def check_regular_file(path: Path) -> os.stat_result:
    """The stat of `path` (symlinks followed); VideoReadError unless it is a regular file.

    Decoders open whatever they are given: a FIFO named `x.mp4` blocks `av.open` (and any
    `open`) until a writer appears, forever in a DataLoader worker; a directory named `x.npy`
    fails later with an error naming a file descriptor. Only regular files are read as videos
    or containers.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError as e:
        raise VideoReadError(path, "file not found") from e
    except OSError as e:
        raise VideoReadError(path, f"cannot stat file: {e}") from e
    if not stat.S_ISREG(st.st_mode):
        raise VideoReadError(path, f"not a regular file: {_file_kind(st.st_mode)}")
    return st


def open_regular_file(path: str | os.PathLike[str], *, index: int | None = None) -> int:
    """A read-only file descriptor on `path`, which must be a regular file (see
    `check_regular_file`); opened non-blocking so that a FIFO never blocks, then checked. The
    flag stays: POSIX gives it no effect on a regular file (two fcntl calls a frame file less).
    `index` (a frame index) goes into the errors."""
    return open_regular(path, index=index)[0]


_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def open_regular(
    path: str | os.PathLike[str], *, index: int | None = None
) -> tuple[int, os.stat_result]:
    """`open_regular_file`, with the stat of the opened file (the one fstat that checked it:
    a reader that needs the size or a change stamp takes it from here, not from a second
    fstat)."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError as e:
        raise VideoReadError(path, "file not found", index) from e
    except OSError as e:
        raise VideoReadError(path, f"cannot open: {e}", index) from e
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise VideoReadError(path, f"not a regular file: {_file_kind(st.st_mode)}", index)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def hints_of(requests: Sequence[Request]) -> list[tuple[Path, int, int]]:
    """Storage requests of local files (`(location, [(start, stop), ...] or None for the
    whole file)`, what a bucket batch fetches) as read-ahead hints `(path, offset, length)`
    (length 0: the whole file): each file's spans sorted and merged where they touch or
    overlap (adjacent frames of a clip become one hint), by `vidload._storage.coalesce` with
    no gap, the one range-merging function; empty spans left out."""
    spans: dict[Path, list[tuple[int, int]] | None] = {}
    for location, asked in requests:
        path = location.local_file()
        assert path is not None, f"{location}: read-ahead hints are of local files"
        known = spans.setdefault(path, [])
        if asked is None or known is None:
            spans[path] = None
        else:
            known.extend((a, b) for a, b in asked if b > a)
    return [
        hint
        for path, got in spans.items()
        for hint in (
            [(path, 0, 0)] if got is None else [(path, a, b - a) for a, b in coalesce(got, 0)]
        )
    ]


def check_in_range(
    video_id: str,
    indices: np.ndarray,
    actual: int,
    reported: int | None | Callable[[], int | None],
) -> None:
    """FrameCountError naming the first of `indices` (in the order asked) that is >= `actual`,
    the frames that exist; `reported` is the count the metadata claims (or a function giving
    it, called only then), carried by the error. The one "index past the end" rule of every
    source."""
    if indices.size and int(indices.max()) >= actual:
        bad = int(indices[indices >= actual][0])
        claimed = reported() if callable(reported) else reported
        raise FrameCountError(video_id, claimed, actual, bad)
