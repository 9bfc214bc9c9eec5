"""Frames spilled to disk while a container is written, so writing needs no memory per frame.

The HDF5 and npy layouts need every frame's length before the frame bytes are laid out (the
HDF5 dataset is one contiguous block of known size, read later by byte offset; an npy row is as
wide as the longest frame). Holding the frames in memory made a conversion's memory grow with
the video's length (an hour of 1080p q95 is gigabytes). Instead the frames are consumed one at a
time, checked, and appended to an anonymous temporary file beside the output (created and
unlinked at once, so not even a killed process leaves it behind), with their lengths kept
(8 bytes a frame); the writer then copies them into place in blocks of `BLOCK_BYTES`.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from vidload._atomic import temp_path, writing
from vidload.errors import VideoReadError
from vidload.sources.jpeg_decode import check_jpeg_markers, jpeg_size

__all__ = ["BLOCK_BYTES", "Spill", "spill_frames", "spilled_container"]

#: Bytes copied at a time from the spill file into the container.
BLOCK_BYTES = 8 << 20


class Spill:
    """The spilled frames: `lengths` (bytes of each, in order), `size` (height, width) of the
    first frame (of every frame, with `one_size`), and `read_into(buf)` to read them back in
    order."""

    def __init__(self, file, lengths: array, size: tuple[int, int]) -> None:
        self._file = file
        self.lengths = lengths
        self.size = size
        self.total = sum(lengths)
        file.seek(0)

    def read_into(self, buf: np.ndarray | memoryview) -> None:
        """Fill `buf` (contiguous uint8) with the next len(buf) spilled bytes."""
        view = (buf.data if isinstance(buf, np.ndarray) else buf).cast("B")
        done = 0
        while done < len(view):
            got = self._file.readinto(view[done:])
            if not got:
                raise OSError(f"spill file ended after {done} of {len(view)} bytes")
            done += got


@contextmanager
def spill_frames(path: Path, frames: Iterable[bytes], *, one_size: bool = False) -> Iterator[Spill]:
    """Consume `frames` into a temporary file beside `path` (the container they are for).

    Raises:
        ValueError: no frames, a frame that is not a complete JPEG (SOI ... EOI), or with
            `one_size`, a frame whose size differs from the first's.
    """
    tmp = temp_path(path)
    f = open(tmp, "w+b")  # noqa: SIM115 - closed below
    try:
        os.unlink(tmp)  # anonymous from now on: the data lives until `f` is closed
        lengths = array("q")
        size: tuple[int, int] | None = None
        for i, frame in enumerate(frames):
            where = f"frame {i} for {path}"
            try:
                check_jpeg_markers(frame, path=where, index=i)
                if size is None or one_size:
                    this = jpeg_size(frame, path=where, index=i)
            except VideoReadError as e:
                raise ValueError(f"not a complete JPEG: {e}") from e
            if size is None:
                size = this
            elif one_size and this != size:
                raise ValueError(
                    f"{path}: frame {i} differs in size from the frames before it "
                    f"({this[1]}x{this[0]} after {size[1]}x{size[0]}); all frames of a video "
                    f"must have one size"
                )
            view = memoryview(frame).cast("B")
            f.write(view)
            lengths.append(len(view))
        if size is None:
            raise ValueError(f"no frames to write to {path}")
        f.flush()
        yield Spill(f, lengths, size)
    finally:
        f.close()


@contextmanager
def spilled_container(
    path: Path, frames: Iterable[bytes], *, one_size: bool = False
) -> Iterator[tuple[Path, Spill]]:
    """(a temporary name beside `path`, `frames` spilled): the writer of a one-file container
    lays it out at the temporary name, which is renamed over `path` (durably: an existing
    file is replaced) when the block completes, and removed where it fails. Parent folders
    are made."""
    with writing(path) as tmp, spill_frames(path, frames, one_size=one_size) as spill:
        yield tmp, spill
