"""Every way of reading a clip that the benchmark compares, behind one small interface, and
the rows of a run made of them (`build_loaders`: every vidload source, then the references that
can run here).

A `Loader` makes a reader (`make()`, an object with `read(video_id, indices) -> uint8 (k, H, W, 3)`)
and, for the vidload sources, the two halves of what `read` does, so time can be split:

* `raw(video_id, indices)`: the storage work alone. For the container sources this is the
  source's own raw read, `read_encoded` (per-frame files for JPEG folders, the frames' byte
  ranges of the HDF5 file, the npy rows), on an instance that keeps its files open as the row's
  reader does; for a video, the whole file read (seek-and-decode cannot be split: see
  `read_video_file`).
* `decode(payload) -> uint8 (k, H, W, 3)`: those bytes, already in memory, decoded by the
  library's own decode (`EncodedFrames.decode`, what every container source's `read` runs), or
  for a video the same `VideoSource.read` on a RAM copy of the files.

The benchmark carries no copy of a source's read path: both halves call the library.

The references are not vidload sources: JPEG bytes preloaded into memory and decoded by the
fastest decoder known (simplejpeg into a preallocated array; the limit for the JPEG-family
sources), a naive PIL-per-file loader, PyAV decoding from the start, and torchcodec and
decord when they can be imported.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import av
import numpy as np
import simplejpeg

from vidload._bench.config import VIDEO_ROW
from vidload._bench.workdir import ORIGINAL, WorkDir
from vidload._convert.inputs import frame_folder_kind
from vidload._dataset.containers import manifest_names
from vidload._kinds import formats
from vidload._layout import FRAME_TEMPLATE, MANIFEST_NAME, container_path
from vidload._measure.clips import why
from vidload._storage import Location
from vidload.sources._adapted import adapt_source
from vidload.sources._format import BenchRow, StorageFormat
from vidload.sources.encoded import EncodedFrames, distinct_frames
from vidload.sources.jpeg import JpegSource
from vidload.sources.video import VideoSource

__all__ = ["Loader", "MemoryJpeg", "build_loaders"]


@dataclass
class VideoPayload:
    """What `read_video_file` read for one clip: its size (the bytes are not kept) and the clip."""

    nbytes_read: int
    video_id: str
    indices: np.ndarray


@dataclass
class Loader:
    """One row of the benchmark: a vidload source (named in `source_names()`) or a reference.

    Attributes:
        name: row label, e.g. "hdf5".
        storage: files it reads: "original" (the video files), a storage kind's name
            (`vidload._kinds`), or "memory".
        description: one line for the table's notes.
        make: a fresh reader (a FrameSource for sources); must be picklable for the DataLoader.
        raw, decode: the two halves of a read (sources and the in-memory reference; None
            for the other references). `raw`'s result has `nbytes_read`.
    """

    name: str
    storage: str
    description: str
    make: Callable[[], Any]
    raw: Callable[[str, np.ndarray], Any] | None = None
    decode: Callable[[Any], np.ndarray] | None = None


def read_video_file(root: Path, video_id: str, indices: np.ndarray) -> VideoPayload:
    """Raw half of the video row: reads the whole video file under `root` (the bytes a
    seek-and-decode reader may touch); the payload keeps only its size, not the bytes. Not a
    copy of `VideoSource`'s read, which cannot be split from its decode: a stand-in for its
    storage work."""
    data = (root / video_id).read_bytes()
    return VideoPayload(len(data), video_id, indices)


def fastest_decode(payload: EncodedFrames) -> np.ndarray:
    """The clip's JPEG bytes decoded the fastest way known, independent of vidload's own path:
    simplejpeg (libjpeg-turbo) straight into a preallocated uint8 (k, H, W, 3) array, each
    distinct frame once, duplicates copied. No checks beyond simplejpeg's own (strict) ones."""
    bufs, order = payload.buffers, payload.order.tolist()
    h, w, _, _ = simplejpeg.decode_jpeg_header(bufs[order[0]])
    out = np.empty((len(order), h, w, 3), np.uint8)
    first: dict[int, int] = {}
    for j, b in enumerate(order):
        seen = first.get(b)
        if seen is not None:
            out[j] = out[seen]
        else:
            first[b] = j
            simplejpeg.decode_jpeg(bufs[b], colorspace="RGB", buffer=out[j])
    return out


def read_from_memory(ram_source: VideoSource, payload: VideoPayload) -> np.ndarray:
    """Decode half of `VideoSource.read`: `ram_source`, the same reader on copies of the videos
    in a RAM-backed folder (tmpfs, e.g. /dev/shm), so no byte comes from disk. Demuxing and
    seeking cannot be separated from decoding, so for video "decode" includes them."""
    return ram_source.read(payload.video_id, payload.indices)


# --------------------------------------------------------------------------- references


class MemoryJpeg:
    """Reference: the clip's JPEG bytes already in memory, decoded by `fastest_decode` (not
    vidload's path: this row is the limit the container sources are measured against).

    `preload(video_id, indices)` must be called (untimed) for every clip before `read`; it
    reads the bytes through `JpegSource.read_encoded`.
    """

    def __init__(self, jpeg_root: Path) -> None:
        self._source = JpegSource(jpeg_root)
        self._bytes: dict[tuple[str, int], bytes | np.ndarray] = {}

    def preload(self, video_id: str, indices: np.ndarray) -> None:
        missing = [i for i in np.unique(indices).tolist() if (video_id, i) not in self._bytes]
        if missing:
            encoded = self._source.read_encoded(video_id, missing)
            for i, buf in zip(encoded.frames.tolist(), encoded.buffers, strict=True):
                self._bytes[(video_id, i)] = buf

    def buffers(self) -> list[bytes | np.ndarray]:
        """Every preloaded frame's bytes."""
        return list(self._bytes.values())

    def payload(self, video_id: str, indices: np.ndarray) -> EncodedFrames:
        """The preloaded bytes of a clip (the "read" of this row costs only a lookup)."""
        frames, order = distinct_frames(indices, 1)
        bufs = [self._bytes[(video_id, i)] for i in frames.tolist()]
        return EncodedFrames(bufs, frames, order, video_id, 0)

    def read(self, video_id: str, indices: np.ndarray) -> np.ndarray:
        return fastest_decode(self.payload(video_id, indices))


class PilPerFile:
    """Reference: the naive loader, `np.asarray(PIL.Image.open(path).convert("RGB"))` per frame."""

    def __init__(self, jpeg_root: Path, template: str = FRAME_TEMPLATE) -> None:
        self.root, self.template = jpeg_root, template

    def read(self, video_id: str, indices: np.ndarray) -> np.ndarray:
        from PIL import Image

        folder = container_path(self.root, video_id, "")
        frames = []
        for i in indices.tolist():
            with Image.open(folder / self.template.format(i + 1)) as img:
                frames.append(np.asarray(img.convert("RGB")))
        return np.stack(frames)


class PyAvFromStart:
    """Reference: open the file, decode (one thread) from the start up to the last wanted frame,
    of the video stream `VideoSource` picks (FFmpeg's best: counting one stream and decoding
    another gives frames that do not exist)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._streams: dict[str, int] = {}

    def _stream_index(self, video_id: str) -> int:
        if video_id not in self._streams:
            info = VideoSource(self.root, cache_size=0).info(video_id)
            self._streams[video_id] = info.stream_index
        return self._streams[video_id]

    def read(self, video_id: str, indices: np.ndarray) -> np.ndarray:
        wanted = set(indices.tolist())
        last = max(wanted)
        out: dict[int, np.ndarray] = {}
        k = self._stream_index(video_id)
        with av.open(str(self.root / video_id)) as c:
            stream = c.streams.video[k]
            stream.codec_context.thread_count = 1
            for pos, frame in enumerate(c.decode(stream)):
                if pos in wanted:
                    out[pos] = frame.to_ndarray(format="rgb24", threads=1)
                if pos >= last:
                    break
        missing = sorted(wanted - out.keys())
        if missing:
            raise RuntimeError(f"{video_id}: the decode ended before frame {missing[0]}")
        return np.stack([out[i] for i in indices.tolist()])


class TorchcodecExact:
    """Reference: torchcodec `VideoDecoder(path, seek_mode="exact").get_frames_at(indices)`.
    Its row (as `DecordBatch`'s): `name`, `description`, and `module`, which must import."""

    name = "torchcodec"
    module = "torchcodec.decoders"
    description = (
        'torchcodec VideoDecoder(seek_mode="exact", 1 thread).get_frames_at '
        "(FFmpeg's best video stream, as VideoSource)"
    )

    def __init__(self, root: Path) -> None:
        self.root = root

    def read(self, video_id: str, indices: np.ndarray) -> np.ndarray:
        from torchcodec.decoders import VideoDecoder

        decoder = VideoDecoder(str(self.root / video_id), seek_mode="exact", num_ffmpeg_threads=1)
        batch = decoder.get_frames_at(indices=indices.tolist())
        return batch.data.permute(0, 2, 3, 1).numpy()


class DecordBatch:
    """Reference: decord `VideoReader(path, num_threads=1).get_batch(indices)`."""

    name = module = "decord"
    description = (
        "decord VideoReader(num_threads=1).get_batch (FFmpeg's best video stream, as VideoSource)"
    )

    def __init__(self, root: Path) -> None:
        self.root = root

    def read(self, video_id: str, indices: np.ndarray) -> np.ndarray:
        import decord

        reader = decord.VideoReader(str(self.root / video_id), num_threads=1)
        return reader.get_batch(indices.tolist()).asnumpy()


def optional_import(module: str) -> str | None:
    """None when `module` imports; else why not (one line)."""
    try:
        importlib.import_module(module)
    except Exception as e:  # ImportError, or OSError/RuntimeError from a native library
        return why(e)
    return None


# --------------------------------------------------------------------------- the rows


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
            "memory",
            "the clip's JPEG bytes already in memory, simplejpeg straight into a preallocated "
            "array, not vidload's code (the JPEG-family limit)",
            lambda: memory,
            memory.payload,
            fastest_decode,
        ),
        Loader(
            "pil",
            jpeg,
            'naive loader: np.asarray(PIL.Image.open(path).convert("RGB")) per frame file',
            lambda: PilPerFile(conv[jpeg]),
        ),
        Loader(
            "pyav-from-start",
            ORIGINAL,
            "PyAV, one thread, decode from the start up to the last wanted frame "
            "(the stream VideoSource picks)",
            lambda: PyAvFromStart(vids),
        ),
    ]
    for reader in (TorchcodecExact, DecordBatch):
        cannot = optional_import(reader.module)
        if cannot is None:
            make = functools.partial(reader, vids)
            loaders.append(Loader(reader.name, ORIGINAL, reader.description, make))
        else:
            notes.append(f"{reader.name} skipped: cannot import it here ({cannot})")
    if only is not None:
        loaders = [ld for ld in loaders if ld.name in only]
    return loaders


def _as_dataset_reads(kind: StorageFormat, root: Path, options: Mapping[str, Any]) -> Any:
    """A source of `kind` under `root` as `ClipDataset("<root>/manifest.csv", source)` reads
    it (README's use of a converted folder): given the container names its manifest records
    (`vidload._dataset.containers`; a folder without one: found by the rules), so no container
    name is looked for per clip."""
    source = kind.open(root, **options)
    names = manifest_names(Location(root / MANIFEST_NAME))
    use = adapt_source(source).use_containers  # a kind's own source class: as the dataset does
    if names and use is not None:
        use(names)
    return source


def _kind_row(row: BenchRow, kind: StorageFormat, converted: dict[str, Path]) -> Loader:
    """A storage kind's row: `read` on a fresh source of its converted folder; for a kind whose
    read is the source's raw read then the shared JPEG decode (`encoded_reads`), split into
    `read_encoded` (on an instance of its own that keeps its files open as the row's does) and
    the decode of those bytes (`EncodedFrames.decode`)."""
    root = converted[kind.name]
    make = functools.partial(_as_dataset_reads, kind, root, row.options)
    if not kind.encoded_reads:
        return Loader(row.name, kind.name, row.description, make)
    decode = EncodedFrames.decode  # what the source's read runs on them (default size)
    return Loader(row.name, kind.name, row.description, make, make().read_encoded, decode)
