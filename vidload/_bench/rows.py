"""The rows of a benchmark run: every vidload source, then the references that can run here.

A source's row reads through the source itself (`read`) and splits its time with the source's
own raw read and decode (`loaders.Loader`); no row carries a copy of a source's read path.
"""

from __future__ import annotations

import functools
from pathlib import Path

from vidload._bench.config import VIDEO_ROW
from vidload._bench.loaders import (
    DecordBatch,
    Loader,
    MemoryJpeg,
    PilPerFile,
    PyAvFromStart,
    TorchcodecExact,
    fastest_decode,
    optional_import,
    read_from_memory,
    read_video_file,
)
from vidload._bench.workdir import ORIGINAL, WorkDir
from vidload._convert.inputs import frame_folder_kind
from vidload._kinds import formats
from vidload.sources._format import BenchRow, StorageFormat
from vidload.sources.encoded import EncodedFrames
from vidload.sources.video import VideoSource

__all__ = ["build_loaders"]


def build_loaders(
    work: WorkDir, only: tuple[str, ...] | None, notes: list[str], ram_videos: Path | None
) -> list[Loader]:
    """The rows: the sources (the original videos, their `--to video` copy, the containers),
    then the references that can run here. `ram_videos` is a RAM-backed copy of the videos
    (for the video row's decode time), or None."""
    vids, conv = work.videos, work.converted
    loaders = [
        Loader(
            VIDEO_ROW,
            "source",
            ORIGINAL,
            "VideoSource(threads=1): seek to the keyframe before each stretch, decode forward",
            lambda: VideoSource(vids, threads=1),
            functools.partial(read_video_file, vids),
            None
            if ram_videos is None
            else functools.partial(read_from_memory, VideoSource(ram_videos, threads=1)),
        ),
        *(
            _kind_row(row, kind, conv)
            for kind in formats()
            for row in kind.bench
            if only is None or row.name in only
        ),
    ]
    jpeg = frame_folder_kind()  # the frame files the JPEG references read
    memory = MemoryJpeg(conv[jpeg])
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
            jpeg,
            'naive loader: np.asarray(PIL.Image.open(path).convert("RGB")) per frame file',
            lambda: PilPerFile(conv[jpeg]),
        ),
        Loader(
            "pyav-from-start",
            "reference",
            ORIGINAL,
            "PyAV, one thread, decode from the start up to the last wanted frame "
            "(the stream VideoSource picks)",
            lambda: PyAvFromStart(vids),
        ),
    ]
    for name, description, reader in (
        (
            "torchcodec",
            'torchcodec VideoDecoder(seek_mode="exact", 1 thread).get_frames_at '
            "(FFmpeg's best video stream, as VideoSource)",
            TorchcodecExact,
        ),
        (
            "decord",
            "decord VideoReader(num_threads=1).get_batch "
            "(FFmpeg's best video stream, as VideoSource)",
            DecordBatch,
        ),
    ):
        cannot = optional_import(name)
        if cannot is None:
            make = functools.partial(reader, vids)
            loaders.append(Loader(name, "reference", ORIGINAL, description, make))
        else:
            notes.append(f"{name} skipped: cannot import it here ({cannot})")
    if only is not None:
        loaders = [ld for ld in loaders if ld.name in only]
    return loaders


def _kind_row(row: BenchRow, kind: StorageFormat, converted: dict[str, Path]) -> Loader:
    """A storage kind's row: `read` on a fresh source of its converted folder; for a kind whose
    read is the source's raw read then the shared JPEG decode (`encoded_reads`), split into
    `read_encoded` (on an instance of its own that keeps its files open as the row's does) and
    the decode of those bytes (`EncodedFrames.decode`)."""
    root = converted[kind.name]
    make = functools.partial(kind.open, root, **row.options)
    if not kind.encoded_reads:
        return Loader(row.name, "source", kind.name, row.description, make)
    decode = EncodedFrames.decode  # what the source's read runs on them (default size)
    return Loader(row.name, "source", kind.name, row.description, make, make().read_encoded, decode)
