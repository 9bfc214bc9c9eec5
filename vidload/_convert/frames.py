"""The frames `convert` stores, as an input hands them to a format's writer (`InputFrames`,
`vidload.sources._format.Frames`): decoded frames (a video's, or a JPEG folder's decoded),
resized to one size when asked; or streams of JPEG bytes: a video's decoded frames encoded, or
a JPEG folder's files repacked byte for byte (decoded, resized and re-encoded only when a
`short_side` asks for it); and the input's timestamps.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from fractions import Fraction
from pathlib import Path

import numpy as np

from vidload._convert.inputs import InputItem
from vidload._cv2 import cv2
from vidload._layout import FIRST_FRAME_NAME
from vidload.errors import VideoReadError
from vidload.sources._format import path_bytes
from vidload.sources.jpeg import JpegSource, read_frame_file
from vidload.sources.jpeg_decode import (
    Subsampling,
    check_jpeg_markers,
    decode_jpeg,
    encode_jpeg,
    jpeg_size,
)
from vidload.sources.video import VideoSource
from vidload.transforms import scaled_size

__all__ = [
    "InputFrames",
    "NoFrames",
    "one_size",
    "resize_short_side",
]


def resize_short_side(rgb: np.ndarray, short_side: int) -> np.ndarray:
    """Resize uint8 (H, W, 3) so its shorter side is `short_side`, keeping the aspect ratio
    (longer side rounded; cv2.INTER_AREA). Returns `rgb` itself when the size already fits."""
    h, w = rgb.shape[:2]
    size = scaled_size(h, w, short_side)
    if size == (h, w):
        return rgb
    return cv2.resize(rgb, (size[1], size[0]), interpolation=cv2.INTER_AREA)


def one_size(
    first: tuple[int, int] | None, shape: tuple[int, int], path: Path, index: int
) -> tuple[int, int]:
    """`shape`, the (height, width) of frame `index`, which must be `first` (the first frame's;
    None for the first frame): a container stores frames of one size, so a change is a
    VideoReadError naming `path` and the frame."""
    if first is not None and shape != first:
        why = f"frame size changes from {first[1]}x{first[0]} to {shape[1]}x{shape[0]}"
        raise VideoReadError(path, why, index)
    return shape


class NoFrames(VideoReadError):
    """The input opened but not one frame decodes."""


class InputFrames:
    """One input's frames for `StorageFormat.write` (`vidload.sources._format.Frames`): a video
    file (decoded by `VideoSource`, one per input and process) or a JPEG frame folder."""

    def __init__(
        self,
        item: InputItem,
        root: Path,
        *,
        threads: int,
        short_side: int | None,
    ) -> None:
        self.path, self.video_id, self.short_side = item.path, item.video_id, short_side
        self._video = VideoSource(root, threads=threads, cache_size=0) if item.is_video else None
        #: the input's frame count and fps as its header (or its list) says, without decoding
        self.reported: int | None = item.listed_frames
        self.fps: float | None = None
        if self._video is not None:
            info = self._video.info(item.video_id)
            self.reported, self.fps = info.reported_frames, info.fps
        elif self.reported is None:
            self.reported = JpegSource(item.path.parent).reported_frames(item.path.name)
        #: the bytes of a frame folder's files read (`_frame_files`); None before, or a video
        self._read: int | None = None

    @property
    def encodes(self) -> bool:
        return self._video is not None or self.short_side is not None

    @property
    def bytes_read(self) -> int:
        """The input's bytes: the video file, or the frame files read."""
        return path_bytes(self.path) if self._read is None else self._read

    def rgb(self) -> Iterator[np.ndarray]:
        if self._video is not None:
            frames: Iterable[np.ndarray] = self._video.iter_frames(self.video_id)
        else:
            files = enumerate(self._frame_files())
            frames = (decode_jpeg(data, path=str(self.path), index=i) for i, data in files)
        return self._resized(frames)

    def jpeg(self, quality: int, subsampling: Subsampling) -> Iterator[bytes]:
        if self._video is None and self.short_side is None:
            return self._frame_files()
        return (encode_jpeg(rgb, quality, subsampling=subsampling) for rgb in self.rgb())

    def _frame_files(self) -> Iterator[bytes]:
        """The stored bytes of a frame folder's contiguous frames, checked to be one size,
        counted into `bytes_read`; NoFrames where there is none."""
        src, name = JpegSource(self.path.parent), self.path.name
        size: tuple[int, int] | None = None
        self._read = 0
        count = src.actual_frames(name)
        if count == 0:
            raise NoFrames(self.path, f"no frame files ({FIRST_FRAME_NAME}, ...)")
        for i in range(count):
            path = src.frame_path(name, i)
            data = read_frame_file(path, i)  # a regular file only: a FIFO would block
            check_jpeg_markers(data, path=str(path), index=i)
            size = one_size(size, jpeg_size(data, path=str(path), index=i), path, i)
            self._read += len(data)
            yield data

    def _resized(self, frames: Iterable[np.ndarray]) -> Iterator[np.ndarray]:
        """`frames` of one size, resized to `short_side`; NoFrames where there is none."""
        first: tuple[int, int] | None = None
        for i, rgb in enumerate(frames):
            first = one_size(first, (int(rgb.shape[0]), int(rgb.shape[1])), self.path, i)
            yield rgb if self.short_side is None else resize_short_side(rgb, self.short_side)
        if first is None:
            raise NoFrames(self.path, "no frame decodes")

    def rotation(self) -> str | None:
        """A video's display orientation, which `VideoSource` applied to its frames (one more
        decoded frame: PyAV shows the matrix on frames only); None for a frame folder."""
        return None if self._video is None else str(self._video.orientation(self.video_id))

    def planned_timestamps(self) -> tuple[np.ndarray, Fraction | None] | None:
        if self._video is None:
            return None
        return self._video.timestamps(self.video_id), self._video.info(self.video_id).time_base

    def timestamps(self, count: int) -> np.ndarray | None:
        if self._video is None:
            return None
        ts = self._video.timestamps(self.video_id)
        if ts.shape[0] != count:  # the packets promised more than decoded: count them, exactly
            self._video.actual_frames(self.video_id)
            ts = self._video.timestamps(self.video_id)
        if ts.shape[0] != count:
            raise VideoReadError(self.path, f"{ts.shape[0]} timestamps for {count} frames stored")
        return ts
