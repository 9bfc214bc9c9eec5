"""The rows of a benchmark run: every vidload source, then the references that can run here.

A source's row reads through the source itself (`read`) and splits its time with the source's
own raw read and decode (`loaders.Loader`); no row carries a copy of a source's read path.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vidload._bench.loaders import (
    DecordBatch,
    Loader,
    MemoryJpeg,
    PilPerFile,
    PyAvFromStart,
    TorchcodecExact,
    VideoFileRaw,
    VideoInMemory,
    decode_encoded,
    fastest_decode,
    optional_import,
)
from vidload._bench.workdir import REENCODED, WorkDir
from vidload._convert.options import DEFAULT_CRF, DEFAULT_GOP, DEFAULT_PRESET, DEFAULT_TUNE
from vidload._kinds import container_kinds
from vidload.sources.video import VideoSource

__all__ = ["REFERENCE_NAMES", "build_loaders", "container_rows", "source_names"]

REFERENCE_NAMES = ("memory", "pil", "pyav-from-start", "torchcodec", "decord")


def container_rows() -> tuple[str, ...]:
    """The rows of the containers of JPEG frames: each storage kind's bench rows
    (`vidload._kinds.StorageKind.bench`), in table order."""
    return tuple(row.name for kind in container_kinds() for row in kind.bench)


def source_names() -> tuple[str, ...]:
    """The rows that read through a vidload source: the videos, their `--to video` copy,
    then the containers' rows."""
    return ("video", REENCODED, *container_rows())


def build_loaders(
    work: WorkDir, only: tuple[str, ...] | None, notes: list[str], ram_videos: Path | None
) -> list[Loader]:
    """The rows: the sources (the original videos, their `--to video` copy, the containers),
    then the references that can run here. `ram_videos` is a RAM-backed copy of the videos
    (for the video row's decode time), or None."""
    vids, conv = work.videos, work.converted
    loaders = [
        Loader(
            "video",
            "source",
            "video",
            "VideoSource(threads=1): seek to the keyframe before each stretch, decode forward",
            lambda: VideoSource(vids, threads=1),
            VideoFileRaw(vids),
            VideoInMemory(ram_videos) if ram_videos is not None else None,
        ),
        Loader(
            REENCODED,
            "source",
            REENCODED,
            "VideoSource(threads=1) on `convert --to video` (H.264, a keyframe every "
            f"{DEFAULT_GOP} frames, no B-frames, CRF {DEFAULT_CRF:g}, preset {DEFAULT_PRESET}, "
            f"tune {DEFAULT_TUNE})",
            lambda: VideoSource(conv["video"], threads=1),
        ),
        *(
            _container_row(
                row.name,
                kind.name,
                row.description,
                functools.partial(kind.source_class(), **row.options),
                conv,
            )
            for kind in container_kinds()
            for row in kind.bench
        ),
    ]
    memory = MemoryJpeg(conv["jpeg"])
    loaders += [
        Loader(
            "memory",
            "reference",
            "memory",
            "the clip's JPEG bytes already in memory, simplejpeg straight into a preallocated "
            "array, not vidload's code (the JPEG-family limit)",
            lambda: memory,
            memory.payload,
            fastest_decode,
        ),
        Loader(
            "pil",
            "reference",
            "jpeg",
            'naive loader: np.asarray(PIL.Image.open(path).convert("RGB")) per frame file',
            lambda: PilPerFile(conv["jpeg"]),
        ),
        Loader(
            "pyav-from-start",
            "reference",
            "video",
            "PyAV, one thread, decode from the start up to the last wanted frame "
            "(the stream VideoSource picks)",
            lambda: PyAvFromStart(vids),
        ),
    ]
    why = optional_import("torchcodec")
    if why is None:
        loaders.append(
            Loader(
                "torchcodec",
                "reference",
                "video",
                'torchcodec VideoDecoder(seek_mode="exact", 1 thread).get_frames_at '
                "(FFmpeg's best video stream, as VideoSource)",
                lambda: TorchcodecExact(vids),
            )
        )
    else:
        notes.append(f"torchcodec skipped: cannot import it here ({why})")
    why = optional_import("decord")
    if why is None:
        loaders.append(
            Loader(
                "decord",
                "reference",
                "video",
                "decord VideoReader(num_threads=1).get_batch "
                "(FFmpeg's best video stream, as VideoSource)",
                lambda: DecordBatch(vids),
            )
        )
    else:
        notes.append(f"decord skipped: cannot import it here ({why})")
    if only is not None:
        loaders = [ld for ld in loaders if ld.name in only]
    return loaders


def _container_row(
    name: str,
    storage: str,
    description: str,
    make: Callable[[Path], Any],
    converted: dict[str, Path],
) -> Loader:
    """A container source's row: `read` on a fresh source; split into the source's own raw
    read (`read_encoded`, on an instance of its own that keeps its files open as the row's
    does) and the shared decode of those bytes (`EncodedFrames.decode`)."""
    root = converted[storage]
    return Loader(
        name,
        "source",
        storage,
        description,
        functools.partial(make, root),
        make(root).read_encoded,
        decode_encoded,
    )
