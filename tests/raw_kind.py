"""A storage kind that is not JPEG bytes, for `tests/test_kinds.py`: each video's decoded frames
as raw uint8 RGB, one `.rgb` file per video (an npy of shape (T, H, W, 3)), written and read by
the small classes here and registered in the table by the test and nowhere else. It proves that
a kind is one class: `convert`, the CLI, `bench` and `choose` take it with no other file changed.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from vidload._atomic import replace_durably, temp_path
from vidload._layout import container_path
from vidload.errors import VideoReadError
from vidload.sources._format import BenchRow, StorageFormat, Written
from vidload.sources._timestamps import container_timestamps, write_timestamps
from vidload.sources.base import as_index_array, check_in_range

__all__ = ["RawFormat", "RawSource"]

SUFFIX = ".rgb"


class RawSource:
    """Reads `<id>.rgb`: uint8 (T, H, W, 3) frames, mapped per read (no handle kept)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def path(self, video_id: str) -> Path:
        return container_path(self.root, video_id, SUFFIX)

    def _frames(self, video_id: str) -> np.ndarray:
        path = self.path(video_id)
        try:
            frames = np.load(path, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as e:
            raise VideoReadError(path, f"cannot load the raw frames: {e}") from e
        if frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[3] != 3:
            raise VideoReadError(path, f"not raw RGB frames: {frames.dtype} {frames.shape}")
        return frames

    def files(self, video_id: str) -> list[Path]:
        """The file a read opens (for read-ahead hints and cold reads)."""
        return [self.path(video_id)]

    def actual_frames(self, video_id: str) -> int:
        return int(self._frames(video_id).shape[0])

    def reported_frames(self, video_id: str) -> int | None:
        return None

    def read(self, video_id: str, indices) -> np.ndarray:
        idx = as_index_array(indices)
        frames = self._frames(video_id)
        check_in_range(video_id, idx, frames.shape[0], None)
        return np.array(frames[idx])

    def timestamps(self, video_id: str) -> np.ndarray:
        from vidload._storage import Location

        count = self.actual_frames(video_id)
        return container_timestamps(Location(self.path(video_id)), count, None, "raw frames")


class RawFormat(StorageFormat):
    """`raw`: decoded frames as they are, no encoding at all."""

    name = "raw"
    suffix = SUFFIX
    described = ".rgb files of raw frames"
    source = RawSource
    bench = (BenchRow("raw", "RawSource: raw uint8 frames, one npy per video"),)
    choose_options = ({},)

    def write(self, container: Path, frames, options) -> Written:
        rgb = list(frames.rgb())  # the test's videos are small: held whole
        stack = np.stack(rgb)
        container.parent.mkdir(parents=True, exist_ok=True)
        tmp = temp_path(container)
        try:
            with open(tmp, "wb") as f:
                np.save(f, stack, allow_pickle=False)
            replace_durably(tmp, container)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        write_timestamps(container, frames.timestamps(len(rgb)))
        return Written(len(rgb), (int(stack.shape[1]), int(stack.shape[2])))
