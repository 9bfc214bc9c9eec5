"""The frames `convert` stores, as streams of JPEG bytes: a video's decoded frames encoded
(resized to one size when asked), or a JPEG folder's files repacked byte for byte (decoded,
resized and re-encoded only when a `short_side` asks for it).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from vidload._convert.inputs import InputItem
from vidload._cv2 import cv2
from vidload.errors import VideoReadError
from vidload.sources.jpeg import JpegSource, read_frame_file
from vidload.sources.jpeg_decode import (
    Subsampling,
    check_jpeg_markers,
    decode_jpeg,
    encode_jpeg,
    jpeg_size,
)
from vidload.transforms import scaled_size

__all__ = [
    "ByteCounter",
    "decoded_jpeg_folder",
    "encoded_frames",
    "jpeg_folder_bytes",
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
    first: tuple[int, int] | None, rgb: np.ndarray, path: Path, index: int
) -> tuple[int, int]:
    """The (height, width) of frame `index`, `rgb`, which must be `first` (the first frame's;
    None for the first frame): a container stores frames of one size, so a change is a
    VideoReadError naming `path` and the frame."""
    shape = (int(rgb.shape[0]), int(rgb.shape[1]))
    if first is not None and shape != first:
        why = f"frame size changes from {first[1]}x{first[0]} to {shape[1]}x{shape[0]}"
        raise VideoReadError(path, why, index)
    return shape


def encoded_frames(
    path: Path,
    frames: Iterable[np.ndarray],
    short_side: int | None,
    quality: int,
    subsampling: Subsampling,
) -> Iterator[bytes]:
    """JPEG bytes of decoded uint8 (H, W, 3) frames, all of one size, each resized by
    `resize_short_side` when a `short_side` is asked for."""
    first: tuple[int, int] | None = None
    for i, rgb in enumerate(frames):
        first = one_size(first, rgb, path, i)
        if short_side is not None:
            rgb = resize_short_side(rgb, short_side)
        yield encode_jpeg(rgb, quality, subsampling=subsampling)


def jpeg_folder_bytes(item: InputItem) -> Iterator[bytes]:
    """The stored bytes of a frame folder's contiguous frames, checked to be one size."""
    src = JpegSource(item.path.parent)
    name = item.path.name
    count = src.actual_frames(name)
    size: tuple[int, int] | None = None
    for i in range(count):
        path = src.frame_path(name, i)
        data = read_frame_file(path, i)  # a regular file only: a FIFO would block
        check_jpeg_markers(data, path=str(path), index=i)
        this = jpeg_size(data, path=str(path), index=i)
        if size is None:
            size = this
        elif this != size:
            raise VideoReadError(
                path,
                f"frame size {this[1]}x{this[0]} differs from the first frame's "
                f"{size[1]}x{size[0]}",
                i,
            )
        yield data


def decoded_jpeg_folder(folder: Path, frames: Iterable[bytes]) -> Iterator[np.ndarray]:
    """uint8 (H, W, 3) RGB of each JPEG of `frames` (errors name `folder` and the index)."""
    for i, data in enumerate(frames):
        yield decode_jpeg(data, path=str(folder), index=i)


class ByteCounter:
    """Iterates over byte strings, adding up their lengths."""

    def __init__(self, it: Iterable[bytes]) -> None:
        self._it = iter(it)
        self.bytes = 0

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        data = next(self._it)
        self.bytes += len(data)
        return data
