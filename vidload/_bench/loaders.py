"""Every way of reading a clip that the benchmark compares, behind one small interface.

A `Loader` makes a reader (`make()`, an object with `read(video_id, indices) -> uint8 (k, H, W, 3)`)
and, for the vidload sources, two halves of what `read` does, so time can be split:

* `raw(video_id, indices) -> Payload`: read the bytes the source would read for the clip and
  nothing else (per-frame files for JPEG folders, the frames' byte ranges of the HDF5 file, the
  npy rows, the whole file for a video), keeping files open the way the source does;
* `decode(payload) -> uint8 (k, H, W, 3)`: decode those bytes, already in memory, with the
  decoder the source uses.

The references are not vidload sources: JPEG bytes preloaded into memory and decoded by the
fastest decoder known (simplejpeg into a preallocated array; the limit for the JPEG-family
sources), a naive PIL-per-file loader, PyAV decoding from the start, and torchcodec and
decord when they can be imported.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import av
import h5py
import numpy as np
import simplejpeg

from vidload._layout import container_path
from vidload.sources.jpeg_decode import decode_many
from vidload.sources.video import VideoSource

Read = Callable[[str, np.ndarray], np.ndarray]


@dataclass
class Payload:
    """Bytes read for one clip: `buffers` (one per distinct frame, `order` maps the clip's
    frames to them) for JPEG storage; for a video only the clip (the bytes are not kept)."""

    nbytes: int
    buffers: list[np.ndarray] | None = None
    order: np.ndarray | None = None
    video_id: str = ""
    indices: np.ndarray | None = None

    def jpeg_parts(self) -> tuple[list[np.ndarray], np.ndarray]:
        """(buffers, order) of JPEG storage's payload."""
        if self.buffers is None or self.order is None:
            raise ValueError(f"payload of {self.video_id!r} holds no JPEG buffers")
        return self.buffers, self.order

    def clip_indices(self) -> np.ndarray:
        """The clip's frame indices, of a video's payload."""
        if self.indices is None:
            raise ValueError(f"payload of {self.video_id!r} names no clip")
        return self.indices


@dataclass
class Loader:
    """One row of the benchmark.

    Attributes:
        name: row label, e.g. "hdf5".
        kind: "source" (a vidload FrameSource) or "reference".
        storage: files it reads: "video", "jpeg", "hdf5", "npy" or "memory".
        description: one line for the table's notes.
        make: a fresh reader (a FrameSource for sources); must be picklable for the DataLoader.
        raw, decode: the two halves of a read (sources and the in-memory reference; None
            for the other references).
    """

    name: str
    kind: str
    storage: str
    description: str
    make: Callable[[], Any]
    raw: Callable[[str, np.ndarray], Payload] | None = None
    decode: Callable[[Payload], np.ndarray] | None = None
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- raw readers


def _unique(indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    uniq, inverse = np.unique(indices, return_inverse=True)
    return uniq, inverse


class JpegFolderRaw:
    """Reads each distinct frame file of a clip, as `JpegSource` does (`np.fromfile`)."""

    def __init__(self, root: Path, template: str = "img_{:05d}.jpg", start_index: int = 1):
        self.root, self.template, self.start = root, template, start_index

    def __call__(self, video_id: str, indices: np.ndarray) -> Payload:
        folder = container_path(self.root, video_id, "")
        uniq, inverse = _unique(indices)
        bufs = [
            np.fromfile(folder / self.template.format(self.start + i), dtype=np.uint8)
            for i in uniq.tolist()
        ]
        return Payload(sum(b.nbytes for b in bufs), buffers=bufs, order=inverse)


class Hdf5Raw:
    """Reads the frames' byte ranges from `root/<id>.h5` (layout of `vidload.sources.hdf5`),
    keeping each file open with its offsets, as `Hdf5Source` does."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._open: dict[str, tuple[h5py.File, h5py.Dataset, np.ndarray]] = {}

    def __call__(self, video_id: str, indices: np.ndarray) -> Payload:
        key = video_id
        entry = self._open.get(key)
        if entry is None:
            f = h5py.File(container_path(self.root, video_id, ".h5"), "r")
            entry = (f, f["frames"], f["offsets"][()].astype(np.int64))
            self._open[key] = entry
        _, frames, offsets = entry
        uniq, inverse = _unique(indices)
        bufs = [frames[offsets[i] : offsets[i + 1]] for i in uniq.tolist()]
        return Payload(sum(b.nbytes for b in bufs), buffers=bufs, order=inverse)

    def close(self) -> None:
        for f, _, _ in self._open.values():
            f.close()
        self._open.clear()


class VideoFileRaw:
    """Reads the whole video file (the bytes a seek-and-decode reader may touch); the payload
    keeps only its size, not the bytes."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def __call__(self, video_id: str, indices: np.ndarray) -> Payload:
        data = (self.root / video_id).read_bytes()
        return Payload(len(data), video_id=video_id, indices=indices)


def decode_jpeg_payload(payload: Payload) -> np.ndarray:
    """The clip's JPEG bytes, already in memory, decoded as the sources decode them."""
    buffers, order = payload.jpeg_parts()
    return decode_many(buffers, order=order)


def fastest_decode(payload: Payload) -> np.ndarray:
    """The clip's JPEG bytes decoded the fastest way known, independent of vidload's own path:
    simplejpeg (libjpeg-turbo) straight into a preallocated uint8 (k, H, W, 3) array, each
    distinct frame once, duplicates copied. No checks beyond simplejpeg's own (strict) ones."""
    bufs, order_array = payload.jpeg_parts()
    order = order_array.tolist()
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


class VideoInMemory:
    """Decode half of `VideoSource.read`: the same reader on copies of the videos in a RAM-backed
    folder (tmpfs, e.g. /dev/shm), so no byte comes from disk. Demuxing and seeking cannot be
    separated from decoding, so for video "decode" includes them."""

    def __init__(self, ram_root: Path) -> None:
        from vidload.sources.video import VideoSource

        self.source = VideoSource(ram_root, threads=1)

    def __call__(self, payload: Payload) -> np.ndarray:
        return self.source.read(payload.video_id, payload.clip_indices())


# --------------------------------------------------------------------------- references


class MemoryJpeg:
    """Reference: the clip's JPEG bytes already in memory, decoded by `fastest_decode` (not
    vidload's path: this row is the limit the container sources are measured against).

    `preload(video_id, indices)` must be called (untimed) for every clip before `read`.
    """

    def __init__(self, jpeg_root: Path) -> None:
        self._raw = JpegFolderRaw(jpeg_root)
        self._bytes: dict[tuple[str, int], np.ndarray] = {}

    def preload(self, video_id: str, indices: np.ndarray) -> None:
        for i in np.unique(indices).tolist():
            if (video_id, i) not in self._bytes:
                (buf,), _ = self._raw(video_id, np.array([i])).jpeg_parts()
                self._bytes[(video_id, i)] = buf

    def payload(self, video_id: str, indices: np.ndarray) -> Payload:
        """The preloaded bytes of a clip (the "read" of this row costs only a lookup)."""
        uniq, inverse = _unique(indices)
        bufs = [self._bytes[(video_id, i)] for i in uniq.tolist()]
        return Payload(sum(b.nbytes for b in bufs), buffers=bufs, order=inverse)

    def read(self, video_id: str, indices: np.ndarray) -> np.ndarray:
        return fastest_decode(self.payload(video_id, indices))


class PilPerFile:
    """Reference: the naive loader, `np.asarray(PIL.Image.open(path).convert("RGB"))` per frame."""

    def __init__(self, jpeg_root: Path, template: str = "img_{:05d}.jpg") -> None:
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
    """Reference: torchcodec `VideoDecoder(path, seek_mode="exact").get_frames_at(indices)`."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def read(self, video_id: str, indices: np.ndarray) -> np.ndarray:
        from torchcodec.decoders import VideoDecoder

        decoder = VideoDecoder(str(self.root / video_id), seek_mode="exact", num_ffmpeg_threads=1)
        batch = decoder.get_frames_at(indices=indices.tolist())
        return batch.data.permute(0, 2, 3, 1).numpy()


class DecordBatch:
    """Reference: decord `VideoReader(path, num_threads=1).get_batch(indices)`."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def read(self, video_id: str, indices: np.ndarray) -> np.ndarray:
        import decord

        reader = decord.VideoReader(str(self.root / video_id), num_threads=1)
        return reader.get_batch(indices.tolist()).asnumpy()


def optional_import(name: str) -> str | None:
    """None when module `name` imports; else why not (one line)."""
    try:
        if name == "torchcodec":
            from torchcodec.decoders import VideoDecoder  # noqa: F401
        else:
            __import__(name)
    except Exception as e:  # ImportError, or OSError/RuntimeError from a native library
        text = str(e).strip().splitlines()
        return f"{type(e).__name__}: {text[-1] if text else ''}"[:200]
    return None


class NpyRaw:
    """Reads the clip's rows from `root/<id>.npy` (layout of `vidload.sources.npy`) as
    `NpySource` does: "mmap" maps the file per call and copies the rows, "read" reads the
    whole file. The parsed header is cached, as the source caches it."""

    def __init__(self, root: Path, mode: str) -> None:
        self.root, self.mode = root, mode
        self._headers: dict[str, tuple[int, int, int]] = {}

    def _header(self, path: Path) -> tuple[int, int, int]:
        key = str(path)
        if key not in self._headers:
            with open(path, "rb") as f:
                version = np.lib.format.read_magic(f)
                shape, _, _ = (
                    np.lib.format.read_array_header_1_0(f)
                    if version == (1, 0)
                    else np.lib.format.read_array_header_2_0(f)
                )
                rows, cols = shape
                self._headers[key] = (f.tell(), rows, cols)
        return self._headers[key]

    def __call__(self, video_id: str, indices: np.ndarray) -> Payload:
        import mmap
        import os

        path = container_path(self.root, video_id, ".npy")
        offset, rows, cols = self._header(path)
        uniq, inverse = _unique(indices)
        size = offset + rows * cols
        fd = os.open(path, os.O_RDONLY)
        try:
            if self.mode == "read":
                whole = np.empty(size, np.uint8)
                view, done = whole.data, 0
                while done < size:
                    done += os.readv(fd, [view[done:]])
                data = whole[offset:].reshape(rows, cols)[uniq]
                nbytes = size
            else:
                with mmap.mmap(fd, size, access=mmap.ACCESS_READ) as mm:
                    mapped = np.frombuffer(mm, np.uint8, count=rows * cols, offset=offset)
                    data = mapped.reshape(rows, cols)[uniq]
                    del mapped
                nbytes = data.nbytes
        finally:
            os.close(fd)
        lengths = data[:, :4].copy().view("<u4")[:, 0]
        bufs = [row[4 : 4 + int(n)] for row, n in zip(data, lengths, strict=True)]
        return Payload(nbytes, buffers=bufs, order=inverse)
