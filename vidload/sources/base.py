"""The FrameSource protocol and helpers shared by every source."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from vidload._ids import VIDEO_EXTENSIONS, normalize_video_id, strip_video_ext
from vidload._storage.local import file_kind as _file_kind
from vidload._storage.ranges import coalesce
from vidload.errors import FrameCountError, VideoReadError

# VIDEO_EXTENSIONS, normalize_video_id and strip_video_ext live in vidload._ids (below the
# sources: the container names of vidload._layout need them too); this module re-exports them.
__all__ = [
    "FrameSource",
    "VIDEO_EXTENSIONS",
    "as_index_array",
    "check_in_range",
    "check_regular_file",
    "frame_ranges",
    "normalize_video_id",
    "open_regular",
    "open_regular_file",
    "strip_video_ext",
]


@runtime_checkable
class FrameSource(Protocol):
    """Where a video's frames come from. Every source is picklable and holds only paths
    until it is used; handles are opened lazily in the process that reads."""

    def reported_frames(self, video_id: str) -> int | None:
        """Frame count the metadata claims, found cheaply (no decoding); None if unknown."""
        ...

    def actual_frames(self, video_id: str) -> int:
        """Frames that really exist (decode), found once and cached."""
        ...

    def read(self, video_id: str, indices: Sequence[int] | np.ndarray) -> np.ndarray:
        """Frames `indices` (0-based, any order, duplicates allowed) as uint8 (k, H, W, 3) RGB,
        in the order asked. An index >= the actual count raises FrameCountError.

        Optional: `read(video_id, indices, *, geometry=None)`. A source whose `read` takes a
        keyword `geometry` (a `vidload.transforms.ClipGeometry`, or None for full frames)
        returns the frames with it applied, uint8 (k, out_h, out_w, 3), where
        `geometry.resolve(H, W)` of the displayed frame size gives the box, the output size and
        the flip; it should equal `apply_geometry` on full frames up to resampling differences,
        and do it more cheaply inside the decode (all of vidload's sources do). `ClipDataset`
        passes one when the parameter exists and calls `apply_geometry` itself otherwise.
        """
        ...


def as_index_array(indices: Sequence[int] | np.ndarray) -> np.ndarray:
    """Indices as a 1-D int64 array; negative or non-integer indices raise IndexError/TypeError."""
    arr = np.asarray(indices)
    if arr.ndim != 1:
        raise ValueError(f"indices must be 1-D, got shape {arr.shape}")
    if arr.size and arr.dtype.kind not in "iu":  # np.issubdtype(.., np.integer), ~10x cheaper
        raise TypeError(f"indices must be integers, got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if arr.size and arr.min() < 0:
        raise IndexError(f"frame indices must be >= 0, got {int(arr.min())}")
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
    `check_regular_file`); opened non-blocking so that a FIFO never blocks, then checked.
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
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def frame_ranges(
    path: Path, base: int, starts: np.ndarray, lengths: np.ndarray
) -> list[tuple[Path, int, int]]:
    """`(path, offset, length)` byte ranges for frames stored at `base + starts[k]` with
    `lengths[k]` bytes, sorted and merged where they touch or overlap (adjacent frames of a
    clip become one range: one hint instead of several); the merging is
    `vidload._storage.coalesce` with no gap, the one range-merging function."""
    spans = [
        (a + base, a + base + n) for a, n in zip(starts.tolist(), lengths.tolist(), strict=True)
    ]
    return [(path, a, b - a) for a, b in coalesce(spans, 0)]


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
