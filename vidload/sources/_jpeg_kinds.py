"""The kinds whose containers hold encoded JPEG frames: a frame folder (`jpeg`), one HDF5 file
(`hdf5`) or one padded npy (`npy`) per video, and what they share (`JpegFramesFormat`: the
JPEG options, writing a container from the input's JPEG bytes with its timestamps beside it).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from vidload._checks import check_choice
from vidload._layout import sidecar_path
from vidload.sources._format import BenchRow, Frames, StorageFormat, Written
from vidload.sources._timestamps import write_timestamps
from vidload.sources.hdf5 import Hdf5Source, stored_fps, write_hdf5
from vidload.sources.jpeg import JpegSource, write_jpeg_folder
from vidload.sources.jpeg_decode import SUBSAMPLINGS, Subsampling, check_quality, jpeg_size
from vidload.sources.npy import NpySource, write_npy

__all__ = [
    "DEFAULT_QUALITY",
    "DEFAULT_SUBSAMPLING",
    "Hdf5Format",
    "JpegFolderFormat",
    "JpegFramesFormat",
    "JpegOptions",
    "NpyFormat",
]

#: The defaults of `convert`, `plan_convert` and `vidload convert` (the docs'
#: "JPEG quality and subsampling" benchmark says why).
DEFAULT_QUALITY = 95
DEFAULT_SUBSAMPLING: Subsampling = "420"


@dataclass(frozen=True)
class JpegOptions:
    """The options of a kind of JPEG frames: JPEG `quality` in [1, 100] and chroma
    `subsampling` (`jpeg_decode.SUBSAMPLINGS`), checked when made.

    Raises:
        TypeError: quality is not an int.
        ValueError: quality out of [1, 100], or subsampling not one of the choices.
    """

    quality: int = DEFAULT_QUALITY
    subsampling: Subsampling = DEFAULT_SUBSAMPLING

    #: An options file without `subsampling` (written before it existed) means "420".
    RECORDED_BEFORE: ClassVar[Mapping[str, Any]] = {"subsampling": "420"}
    SPEC_FORM: ClassVar[str] = ":qQ"
    SPEC_REQUIRED: ClassVar[tuple[str, ...]] = ("quality",)

    def __post_init__(self) -> None:
        object.__setattr__(self, "quality", check_quality(self.quality))
        check_choice("subsampling", self.subsampling, SUBSAMPLINGS)

    @classmethod
    def spec_parts(cls, values: Mapping[str, Any]) -> list[str]:
        return [f"q{values['quality']}"]

    @classmethod
    def spec_value(cls, part: str) -> tuple[str, Any]:
        if part[:1] == "q" and part[1:].isdigit():
            return "quality", int(part[1:])
        raise ValueError(f"{part!r} is not qQ")


class JpegFramesFormat(StorageFormat):
    """A kind of container of encoded JPEG frames: `write_frames` stores the input's JPEG
    bytes; the frames' timestamps go beside the container (`sources._timestamps`)."""

    options = JpegOptions
    encoded_reads = True
    takes_input = True

    def write_frames(self, path: Path, frames: Iterable[bytes], attrs: Mapping[str, Any]) -> int:
        """Write complete JPEGs as one container at `path`, atomically; the frames written.
        `attrs` is what the input says of itself, for a format that keeps it."""
        raise NotImplementedError

    @staticmethod
    def attrs(frames: Frames, options: Any) -> dict[str, Any]:
        """What the input says of itself and how it was encoded: what a format that keeps
        attributes stores (HDF5's root attributes, LMDB's meta key)."""
        return {
            "fps": frames.fps,
            "reported_frames": frames.reported,
            "source": frames.video_id,
            "quality": options.quality if frames.encodes else None,
            "subsampling": options.subsampling if frames.encodes else None,
            "short_side": frames.short_side,
        }

    def write(self, container: Path, frames: Frames, options: Any) -> Written:
        encoded = frames.jpeg(options.quality, options.subsampling)
        first = next(encoded)  # streamed from here: the writers spill frames to disk
        attrs = self.attrs(frames, options)
        count = self.write_frames(container, itertools.chain([first], encoded), attrs)
        write_timestamps(container, frames.timestamps(count))
        return Written(count, jpeg_size(first, path=str(container), index=0))

    def verify(self, container: Path, frames: Frames) -> Written:
        written = super().verify(container, frames)
        if not sidecar_path(container).exists():  # killed between the container and these
            timestamps = frames.timestamps(written.count)
            if timestamps is not None:
                write_timestamps(container, timestamps)
        return written


class JpegFolderFormat(JpegFramesFormat):
    """`jpeg`: a folder of JPEG frame files per video (`img_00001.jpg`, ...), `JpegSource`."""

    name = "jpeg"
    suffix = ""
    described = "JPEG frame folders"
    source = JpegSource
    heads_kind = JpegSource.heads_kind
    bench = (BenchRow("jpeg", "JpegSource: one file per frame"),)

    def write_frames(self, path: Path, frames: Iterable[bytes], attrs: Mapping[str, Any]) -> int:
        return write_jpeg_folder(path, frames)

    def input_source(self, root: Path, listed_frames: Mapping[str, int] | None) -> Any:
        """The list's count, not the files', where a list gives one."""
        return self.open(root, **self.open_options, frame_counts=listed_frames)


class Hdf5Format(JpegFramesFormat):
    """`hdf5`: one `.h5` of encoded JPEG frames per video, with the input's attributes,
    `Hdf5Source`."""

    name = "hdf5"
    suffix = Hdf5Source.suffix
    described = ".h5 files"
    source = Hdf5Source
    open_options = {"cache_size": 0}
    heads_kind = Hdf5Source.heads_kind
    bench = (BenchRow("hdf5", "Hdf5Source: one HDF5 file of JPEG bytes per video"),)
    choose_options = tuple({"quality": q} for q in (95, 85, 75))

    def write_frames(self, path: Path, frames: Iterable[bytes], attrs: Mapping[str, Any]) -> int:
        return write_hdf5(path, frames, attrs=attrs)

    def stored_fps(self, container: Path) -> float | None:
        return stored_fps(container)


class NpyFormat(JpegFramesFormat):
    """`npy`: one padded `.npy` of encoded JPEG frames per video, `NpySource`."""

    name = "npy"
    suffix = NpySource.suffix
    described = ".npy files"
    source = NpySource
    heads_kind = NpySource.heads_kind
    bench = (
        BenchRow(
            "npy-mmap",
            'NpySource(mode="mmap"): decode the clip\'s rows of a padded npy where they are '
            "mapped (read = mapping the file; the pages come in during the decode)",
            {"mode": "mmap"},
        ),
        BenchRow(
            "npy-read", 'NpySource(mode="read"): read the whole npy per clip', {"mode": "read"}
        ),
    )
    choose_options = ({"quality": 95},)  # its bytes are HDF5's plus padding: one point says enough

    def write_frames(self, path: Path, frames: Iterable[bytes], attrs: Mapping[str, Any]) -> int:
        return write_npy(path, frames)
