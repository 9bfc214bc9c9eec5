"""The FrameSource protocol and helpers shared by every source."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Protocol, runtime_checkable

import numpy as np

#: File extensions treated as videos (lower case, with the dot).
VIDEO_EXTENSIONS: frozenset[str] = frozenset(
    {
        ".mp4",
        ".avi",
        ".mkv",
        ".webm",
        ".mov",
        ".m4v",
        ".mpg",
        ".mpeg",
        ".flv",
        ".wmv",
        ".ts",
        ".3gp",
    }
)


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
        in the order asked. An index >= the actual count raises FrameCountError."""
        ...


def strip_video_ext(video_id: str) -> str:
    """`abseiling/x1.mp4` -> `abseiling/x1`; ids without a video extension are unchanged."""
    p = PurePosixPath(video_id)
    if p.suffix.lower() in VIDEO_EXTENSIONS:
        return str(p.with_suffix(""))
    return video_id


def normalize_video_id(video_id: str) -> str:
    """Validate a video id (relative, `/`-separated) and return it in canonical form."""
    if not isinstance(video_id, str) or not video_id:
        raise TypeError(f"video_id must be a non-empty str, got {video_id!r}")
    vid = video_id.replace(os.sep, "/") if os.sep != "/" else video_id
    p = PurePosixPath(vid)
    if p.is_absolute() or ".." in p.parts:
        raise ValueError(f"video_id ({video_id!r}) must be a relative path inside the source root")
    return str(p)


def as_index_array(indices: Sequence[int] | np.ndarray) -> np.ndarray:
    """Indices as a 1-D int64 array; negative or non-integer indices raise IndexError/TypeError."""
    arr = np.asarray(indices)
    if arr.ndim != 1:
        raise ValueError(f"indices must be 1-D, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"indices must be integers, got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if arr.size and arr.min() < 0:
        raise IndexError(f"frame indices must be >= 0, got {int(arr.min())}")
    return arr


def container_path(root: Path, video_id: str, suffix: str) -> Path:
    """Where a container source finds `video_id`: `root/<id without video extension><suffix>`.

    `vidload convert` keeps the extension in the name (`x.mp4.h5`, `x.avi.h5`) only for videos
    whose ids differ by nothing else; so a container named with the full id, when it exists,
    is taken first. `suffix` is ".h5", ".npy", or "" for a JPEG folder.
    """
    vid = normalize_video_id(video_id)
    stem = strip_video_ext(vid)
    if stem != vid:
        full = root / (vid + suffix)
        if os.path.exists(full):
            return full
    return root / (stem + suffix)
