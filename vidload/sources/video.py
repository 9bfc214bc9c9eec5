"""VideoSource: frame-exact random access into video files with PyAV (seek, then decode).

Frame i of a video is the i-th frame a full sequential decode of the chosen stream outputs.
`read` finds it without decoding from the start:

1. An index of the stream (`_video_index.FrameIndex`: each frame's timestamp in output order,
   and the keyframes) is built once per process and file. Where the container stores pts
   (MP4/MOV, Matroska/WebM, MPEG-TS) a demux-only packet scan suffices (no decoding); elsewhere
   (AVI, elementary streams: pts guessed) the index comes from one full decode.
2. A read sorts the wanted frames and, for each, seeks to the last keyframe before it only if
   that keyframe lies past the decoder's current position; otherwise it keeps decoding forward.
   Packets of unwanted frames are decoded with skip_frame=NONREF (dropped when nothing refers to
   them), which leaves the wanted frames' pixels untouched.
3. Decoded frames are matched to the index by timestamp, never by counting from the seek, and
   each is checked against it. Where they disagree the decoder wins: the index is rebuilt from
   a full decode, and a stream whose seeks still disagree is read by sequential decoding.

Damaged files. The frames of a video are those a single-threaded sequential decode gives, up
to where it stops: the decoder's own error concealment included, stopping at a corrupt packet,
a demux error or a decode error. `read`, `iter_frames` and `actual_frames` all give these frames,
whatever `threads`:

* Seek-and-decode reads run the decoder with `err_detect=explode`, so that any error (also one
  the decoder would conceal) stops them; a read that meets one marks the file damaged, and
  every read of it from then on is a single-threaded sequential decode (no seeking, no skipped
  frames: concealment depends on the frames decoded before). Without an error the two modes
  give the same pixels.
* A sequential decode with threads (`threads` 0 or > 1) also runs with `err_detect=explode`:
  threaded decoders stop at a different frame than a single-threaded one (frames in flight,
  errors reported late). At an error it carries on from a single-threaded decode of the file,
  so the frames and the count are those of the single-threaded decode.

Open files and forks. A decoder opened with threads (`threads` 0 or > 1) must never be freed in
a forked child: its worker threads exist only in the parent, and `avcodec_free_context` in the
child waits forever for them (`pthread_cond_destroy`): a DataLoader worker would hang. Two
rules keep every decoder freed in the process that opened it:

* In the opening process a file is closed explicitly (`_Handle.close`) whenever it is dropped:
  evicted from the cache, replaced, closed by `VideoSource.close`, or left behind by a source
  that is garbage collected (`_Handle.__del__`). An unclosed PyAV container is cyclic garbage
  (container <-> stream) that only the garbage collector frees, perhaps in a child forked later;
  a closed one is freed at once, its threads joined, before any fork.
* In any other process (a fork child) a handle inherited from the parent is never freed nor
  used: dropping it moves it to `_Handle.inherited`, a list never cleared. This is a
  deliberate, bounded leak: at most `cache_size` handles per source (memory and file
  descriptors of the child, no I/O). The child opens files of its own.

Handles are not closed before a fork (`os.register_at_fork`): another thread may be reading
through them. Frames are converted to RGB on one thread (`_rgb`), so no swscale threads
outlive a conversion either.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import ClassVar, Literal, get_args

import av
import av.error
import numpy as np

from vidload._checks import check_choice, check_int, check_optional_int
from vidload._lru import ProcessLRU
from vidload.errors import VideoReadError
from vidload.sources._docs import shared_docs
from vidload.sources._orientation import IDENTITY, Orientation, frame_orientation
from vidload.sources._video_index import (
    BadData,
    FrameIndex,
    IndexRecorder,
    decode_packets,
    frame_key,
    index_from_packets,
    packet_key,
)
from vidload.sources.base import (
    as_index_array,
    check_in_range,
    check_regular_file,
    normalize_video_id,
)
from vidload.transforms import ClipGeometry

Rotation = Literal["auto", "ignore"]
ROTATIONS: tuple[str, ...] = get_args(Rotation)

__all__ = ["VideoInfo", "VideoSource"]

#: Frame indexes kept per process (int64 arrays, ~24 bytes a frame: ~7 KB for 300 frames).
_INDEX_CACHE_SIZE = 4096
#: Seek attempts per stretch before decoding from a freshly opened file instead.
_MAX_SEEK_TRIES = 4
#: Containers that store each packet's pts. Elsewhere (AVI, elementary streams) pts are
#: guessed, frames may come out of the decoder in another order than the guessed pts (packed
#: B-frames, open GOPs), and only an index from a full decode is trusted.
_PTS_CONTAINERS = frozenset({"mov", "matroska", "mpegts"})
#: Decoders that honour skip_frame=NONREF frame by frame (libdav1d reads it once, at open).
_SKIP_NONREF_CODECS = frozenset({"h264", "hevc", "vp8", "vp9", "mpeg4", "mpeg1video", "mpeg2video"})
#: A file version in the per-process caches: (path, (st_mtime_ns, st_size)).
FileKey = tuple[str, tuple[int, int]]


@dataclass(frozen=True)
class VideoInfo:
    """What a video's header says about the chosen stream (nothing is decoded).

    Attributes:
        reported_frames: frame count from the header (see `VideoSource.reported_frames`).
        fps: average frame rate, None when the header has none.
        width, height: coded frame size in pixels.
        codec: decoder name, e.g. "h264".
        stream_index: index of the chosen stream among the file's video streams.
        duration_s: stream (else container) duration in seconds, None when unknown.
    """

    reported_frames: int | None
    fps: float | None
    width: int
    height: int
    codec: str
    stream_index: int
    duration_s: float | None


class _Mismatch(Exception):
    """Decoding after a seek did not reproduce the index (internal; triggers a fallback)."""


@dataclass(eq=False)
class _Handle:
    """One open file: the container, the chosen stream and the file's (mtime, size).

    Closed in the process that opened it (`pid`), kept forever in any other (see the module
    docstring): `close` runs however the handle is dropped, garbage collection included.
    """

    container: av.container.InputContainer
    stream: av.VideoStream
    stat: tuple[int, int]
    at_start: bool = True  # nothing demuxed yet
    pid: int = field(default_factory=os.getpid)
    closed: bool = False

    #: Handles inherited through a fork and dropped in the child: never freed (a decoder with
    #: threads cannot be freed outside the process that opened it).
    inherited: ClassVar[list[_Handle]] = []
    # bound here so that __del__ still finds them while the interpreter shuts down
    _getpid: ClassVar = staticmethod(os.getpid)

    @property
    def stores_pts(self) -> bool:
        """Whether the container stores real pts, so that a packet scan may stand in for a
        full decode (frame i = the packet with the i-th smallest pts)."""
        return self.container.format.name.split(",")[0] in _PTS_CONTAINERS

    @property
    def can_skip_nonref(self) -> bool:
        return self.stream.codec_context.name in _SKIP_NONREF_CODECS

    def close(self) -> None:
        """Close the file (its decoder threads are joined); in a process other than the one
        that opened it, keep it in `_Handle.inherited` instead, untouched."""
        if self.closed:
            return
        self.closed = True
        if self._getpid() == self.pid:
            self.container.close()  # breaks the container <-> stream cycle: freed right away
        else:
            self.inherited.append(self)

    def __del__(self) -> None:
        self.close()


@shared_docs
class VideoSource:
    """Frames of the video files under `root`, read by seek-and-decode, frame-exact.

    Args:
        root: folder of video files; a video id is a path relative to it, extension included.
        threads: decoder threads per open file; 1 (default) suits DataLoader workers, 0 lets
            FFmpeg choose.
        stream: which video stream to use, as an index among the file's video streams; None
            (default) takes FFmpeg's best video stream. The same stream is counted and decoded.
        cache_size: open files kept per process (0 closes each file after every call).
        rotation: "auto" (default) returns frames as they are meant to be displayed: each
            decoded frame's display matrix (a phone video's 90/180/270 degree rotation, or a
            mirror; see `orientation`) is applied to its pixels, as players, decord and the
            `ffmpeg` command line do, so a portrait phone video comes back portrait. "ignore"
            returns the stored pixels. Frame counts are the same either way.
        frame_index: how a file's frames are located before the first read in a process.
            "packets" (default): a demux-only packet scan where the container stores pts,
            checked against the decoder on every read; on a damaged file a read of a frame past
            the point where sequential decoding stops (a corrupt GOP before it) can still
            return a frame, until `actual_frames` is known. "decode": a full sequential decode
            of the file first (`actual_frames`), so every read relies on the true count and
            gives the same result in any call order; costs one full decode per file and
            process (mma_test.mp4, 300 frames: 148 ms of CPU, against 77 ms for one 8-frame
            seek-and-decode read).

    Picklable: it holds only paths and settings. Open files and indexes live per process and
    are dropped when the process id changes (a fork) and left out of pickles. Safe to use
    before forking DataLoader workers, with any `threads`: files open in the parent are never
    used nor freed in a child (see the module docstring).
    """

    def __init__(
        self,
        root: str | os.PathLike,
        *,
        threads: int = 1,
        stream: int | None = None,
        cache_size: int = 8,
        rotation: Rotation = "auto",
        frame_index: Literal["packets", "decode"] = "packets",
    ) -> None:
        self.threads = check_int("threads", threads, minimum=0)
        self.cache_size = check_int("cache_size", cache_size, minimum=0)
        self.stream = check_optional_int("stream", stream, minimum=0)
        self.rotation: Rotation = check_choice("rotation", rotation, ROTATIONS)
        self.frame_index: Literal["packets", "decode"] = check_choice(
            "frame_index", frame_index, ("packets", "decode")
        )
        self.root = Path(root)
        self._skip_nonref = True  # measured: ~1.5x on long GOPs; results stay frame-exact
        self._reset_caches()

    # ------------------------------------------------------------------ per-process state

    def _reset_caches(self) -> None:
        """Per-process state (`vidload._lru.ProcessLRU`: empty again after a fork, where
        `_Handle.close` parks the parent's handles, unused and unfreed: they share file offsets
        with the parent and their decoders' threads are not here)."""
        self._handles: ProcessLRU[str, _Handle] = ProcessLRU(
            self.cache_size, _Handle.close, inherited=_Handle.close
        )
        self._indexes: ProcessLRU[FileKey, FrameIndex] = ProcessLRU(_INDEX_CACHE_SIZE)
        self._actual: ProcessLRU[FileKey, int] = ProcessLRU(None)
        self._orientations: ProcessLRU[FileKey, Orientation] = ProcessLRU(None)

    def __getstate__(self) -> dict:
        return {
            "root": self.root,
            "threads": self.threads,
            "stream": self.stream,
            "cache_size": self.cache_size,
            "rotation": self.rotation,
            "frame_index": self.frame_index,
            "_skip_nonref": self._skip_nonref,
        }

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._reset_caches()

    def __repr__(self) -> str:
        return (
            f"VideoSource({str(self.root)!r}, threads={self.threads}, stream={self.stream}, "
            f"cache_size={self.cache_size}, rotation={self.rotation!r}, "
            f"frame_index={self.frame_index!r})"
        )

    def close(self) -> None:
        """Close the files this process keeps open (they reopen on demand)."""
        self._handles.clear()

    # ------------------------------------------------------------------ opening files

    def path(self, video_id: str) -> Path:
        """The file of `video_id`: root / video_id (the id keeps its extension)."""
        return self.root / normalize_video_id(video_id)

    def files(self, video_id: str) -> list[Path]:
        """The files a read of `video_id` opens: its video file (for read-ahead hints)."""
        return [self.path(video_id)]

    def _stat(self, path: Path) -> tuple[int, int]:
        st = check_regular_file(path)  # a FIFO would block av.open forever
        return (st.st_mtime_ns, st.st_size)

    def _open(
        self, path: Path, stat: tuple[int, int], *, threads: int | None = None, explode: bool
    ) -> _Handle:
        """Open `path` and pick its video stream; errors become VideoReadError.

        `threads` defaults to the source's; `explode` makes every decode error stop decoding
        (FFmpeg's err_detect=explode) instead of being concealed.
        """
        threads = self.threads if threads is None else threads
        try:
            container = av.open(str(path), "r")
        except av.error.FFmpegError as e:
            reason = "empty file (0 bytes)" if stat[1] == 0 else f"not a readable video: {e}"
            raise VideoReadError(path, reason) from e
        except OSError as e:
            raise VideoReadError(path, f"cannot open file: {e}") from e
        try:
            stream = self._choose_stream(path, container)
            ctx = stream.codec_context
            if ctx is None:
                raise VideoReadError(path, f"no decoder for video codec of stream {stream.index}")
            ctx.thread_count = threads
            if threads != 1:
                ctx.thread_type = "AUTO"
            if explode:
                ctx.options = {**ctx.options, "err_detect": "explode"}
        except BaseException:
            container.close()
            raise
        return _Handle(container, stream, stat)

    def _choose_stream(self, path: Path, container) -> av.VideoStream:
        videos = list(container.streams.video)
        if not videos:
            raise VideoReadError(path, "no video stream")
        if self.stream is None:
            try:
                return container.streams.best("video") or videos[0]
            except av.error.FFmpegError:
                return videos[0]
        if self.stream >= len(videos):
            raise VideoReadError(
                path, f"video stream {self.stream} requested but the file has {len(videos)}"
            )
        return videos[self.stream]

    def _handle(self, path: Path) -> _Handle:
        """An open handle on `path` from this process's cache (reopened if the file changed)."""
        key = str(path)
        stat = self._stat(path)
        handle = self._handles.get(key)
        if handle is not None and handle.stat != stat:
            self._handles.discard(key)
            handle = None
        if handle is None:
            handle = self._open(path, stat, explode=True)  # seek reads must see every error
            self._handles.put(key, handle)  # not kept with cache_size=0: `_release` closes it
        return handle

    def _release(self, handle: _Handle) -> None:
        if self.cache_size == 0:
            handle.close()

    def _fresh(self, path: Path, *, threads: int | None = None, explode: bool) -> _Handle:
        """A handle of its own (not cached), positioned at the start of the file."""
        return self._open(path, self._stat(path), threads=threads, explode=explode)

    # ------------------------------------------------------------------ header

    def info(self, video_id: str) -> VideoInfo:
        """What the header says about the chosen stream; nothing is decoded."""
        path = self.path(video_id)
        handle = self._handle(path)
        try:
            return _info(handle)
        finally:
            self._release(handle)

    def reported_frames(self, video_id: str) -> int | None:
        """Frame count the header claims: the stream's frame count, else duration x frame
        rate (rounded), else None. No decoding; may be wrong."""
        return self.info(video_id).reported_frames

    def orientation(self, video_id: str) -> Orientation:
        """The display orientation of the chosen stream, from its first decoded frame's
        display matrix (IDENTITY when it has none; PyAV exposes the matrix only on decoded
        frames). Decodes one frame, once per process and file version. With
        rotation="ignore" this is still what the file says; `read` just does not apply it.

        Raises:
            VideoReadError: no frame decodes, or the matrix is not a right-angle rotation or
                mirror (VideoSource cannot apply it; pass rotation="ignore").
        """
        path = self.path(video_id)
        key = (str(path), self._stat(path))
        found = self._orientations.get(key)
        if found is None:
            for frame in self._decode_all(path):
                found = _orientation_of(path, frame)
                break
            else:
                raise VideoReadError(path, "no frame of the video stream decodes")
            self._orientations.put(key, found)
        return found

    def _converter(
        self, path: Path, geometry: ClipGeometry | None = None
    ) -> Callable[[av.VideoFrame], np.ndarray]:
        """frame -> uint8 RGB: as displayed (rotation="auto": the frame's own display matrix,
        `_orientation_of`) or as stored, at full size or with `geometry` (`_scaled_rgb`)."""
        auto = self.rotation == "auto"

        def convert(frame: av.VideoFrame) -> np.ndarray:
            orientation = _orientation_of(path, frame) if auto else IDENTITY
            if geometry is not None:
                return _scaled_rgb(frame, geometry, orientation)
            return orientation.apply(_rgb(frame))

        return convert

    def timestamps(self, video_id: str) -> np.ndarray:
        """float64 (n,) presentation time in seconds of each frame of the chosen stream, frame
        i being frame i of `read` (pts x time base, as the container stores them; a stream
        with a non-zero start time starts there). Variable-frame-rate video keeps its real
        timing.

        From the frame index, so nothing is decoded where the container stores pts (MP4/MOV,
        Matroska, MPEG-TS: the packet scan that `read` builds anyway); elsewhere (AVI,
        elementary streams) from the full decode `actual_frames` does. n is
        `actual_frames(video_id)`; the one exception is a file whose data goes bad part-way
        and that has not been counted yet: its packets promise more frames than decode, and
        n is that larger count until `actual_frames` or a read past the end finds the truth
        (`ClipDataset` then learns the count and keeps the first n times). Frames without any
        timestamp (never seen in MP4/MKV/TS) get i / fps.
        """
        path = self.path(video_id)
        handle = self._handle(path)
        try:
            index = self._guess_index(path, handle)
            known = self._actual.get((str(path), handle.stat))
            if known is not None and known != index.num_frames:
                index = self._exact_index(path)
            time_base = handle.stream.time_base
            fps = _info(handle).fps
        finally:
            self._release(handle)
        n = index.num_frames
        if index.keys is not None and time_base is not None:
            keys = np.sort(np.frombuffer(index.keys, dtype=np.int64)[:n])
            return keys.astype(np.float64) * float(time_base)
        if not fps:
            raise VideoReadError(path, "frames carry no timestamps and the stream no frame rate")
        return np.arange(n, dtype=np.float64) / fps

    # ------------------------------------------------------------------ counting

    def actual_frames(self, video_id: str) -> int:
        """Frames that really decode from the chosen stream: a full decode, once per process
        and file version; equals the number of frames `iter_frames` yields. A file whose data
        goes bad part-way counts the frames decoded before; one where no frame decodes raises
        VideoReadError."""
        path = self.path(video_id)
        stat = self._stat(path)
        count = self._actual.get((str(path), stat))
        if count is None:
            count = self._exact_index(path).num_frames
        return count

    def _exact_index(self, path: Path) -> FrameIndex:
        """Index built from a full sequential decode (cached)."""
        key = (str(path), self._stat(path))
        index = self._indexes.get(key)
        if index is None or not index.exact:
            recorder = IndexRecorder()
            for _ in self._decode_all(path, recorder):
                pass
            index = self._store_exact(key, recorder.index())
        if index.num_frames == 0:
            raise VideoReadError(path, "no frame of the video stream decodes")
        return index

    def _store_exact(self, key: FileKey, index: FrameIndex) -> FrameIndex:
        if index.num_frames:
            self._actual.put(key, index.num_frames)
        self._indexes.put(key, index)
        return index

    def _guess_index(self, path: Path, handle: _Handle) -> FrameIndex:
        """The cached index of `path`, else one from a packet scan where the container
        stores pts, else one from a full decode."""
        key = (str(path), handle.stat)
        index = self._indexes.get(key)
        if index is not None:
            return index
        if not handle.stores_pts or self.frame_index == "decode":
            return self._exact_index(path)
        scan = handle if handle.at_start else self._fresh(path, explode=True)
        scan.at_start = False
        try:
            index = index_from_packets(scan.container, scan.stream)
        finally:
            if scan is not handle:
                scan.close()
        if index is None:
            return self._exact_index(path)
        self._indexes.put(key, index)
        return index

    # ------------------------------------------------------------------ decoding

    def _decode_all(self, path: Path, recorder: IndexRecorder | None = None):
        """Every frame of the chosen stream that a single-threaded sequential decode gives,
        from freshly opened files, in output order (see "Damaged files" in the module
        docstring); `recorder` sees every packet decoded and every frame."""
        yielded = 0
        if self.threads != 1:
            fast = IndexRecorder()
            frames = self._decode_file(path, self.threads, fast, on_error="stop")
            try:  # a plain loop, to get the return value; closed with this generator
                while True:
                    try:
                        frame = next(frames)
                    except StopIteration as stop:
                        went_bad = stop.value
                        break
                    yielded += 1
                    yield frame
            finally:
                frames.close()
            if not went_bad:
                if recorder is not None:
                    recorder.packets, recorder.keys = fast.packets, fast.keys
                return
        frames = self._decode_file(path, 1, recorder, on_error="flush")
        try:
            for pos, frame in enumerate(frames):
                if pos >= yielded:
                    yield frame
        finally:
            frames.close()
        if recorder is not None and len(recorder.keys) < yielded:
            raise VideoReadError(
                path,
                f"a {self.threads}-thread decode gave {yielded} frames before it met bad data, "
                f"a single-threaded one only {len(recorder.keys)}",
            )

    def _decode_file(self, path: Path, threads: int, recorder: IndexRecorder | None, on_error):
        """decode_packets on a fresh handle with `threads` (explode unless single-threaded);
        returns whether the data went bad."""
        handle = self._fresh(path, threads=threads, explode=threads != 1)
        try:
            on_packet = recorder.on_packet if recorder is not None else None
            packets = handle.container.demux(handle.stream)
            ctx = handle.stream.codec_context
            frames = decode_packets(ctx, packets, on_packet, on_error=on_error)
            try:
                while True:
                    try:
                        frame = next(frames)
                    except StopIteration as stop:
                        return stop.value
                    if recorder is not None:
                        recorder.on_frame(frame)
                    yield frame
            finally:
                frames.close()
        except av.error.FFmpegError as e:
            raise VideoReadError(path, f"decoding failed: {e}") from e
        finally:
            handle.close()

    def iter_frames(self, video_id: str) -> Iterator[np.ndarray]:
        """Sequential decode of the chosen stream: uint8 (H, W, 3) RGB frames in order.

        Stops where the data goes bad (truncated or corrupt file); yields exactly
        `actual_frames(video_id)` frames.
        """
        path = self.path(video_id)
        key = (str(path), self._stat(path))
        recorder = IndexRecorder()
        convert = self._converter(path)
        for frame in self._decode_all(path, recorder):
            yield convert(frame)
        self._store_exact(key, recorder.index())
        if not recorder.keys:
            raise VideoReadError(path, "no frame of the video stream decodes")

    def read(
        self,
        video_id: str,
        indices: Sequence[int] | np.ndarray,
        *,
        geometry: ClipGeometry | None = None,
    ) -> np.ndarray:
        """<<read>>
        Equal pixel for pixel to those of a sequential decode.

        With a `geometry` the frames come back as uint8 (k, out_h, out_w, 3): each frame is
        scaled in its one swscale pass from YUV to RGB, to the size at which the plan's box
        becomes the output size, then the box is sliced out and flipped (`_scaled_rgb`).

        Raises:
            IndexError: a negative index.
            FrameCountError: an index >= `actual_frames(video_id)`.
            VideoReadError: the file is missing or cannot be decoded.
        """
        idx = as_index_array(indices)
        path = self.path(video_id)
        handle = self._handle(path)
        convert = self._converter(path, geometry)
        try:
            if idx.size == 0:
                h, w = handle.stream.codec_context.height, handle.stream.codec_context.width
                if self.rotation == "auto":
                    h, w = self.orientation(video_id).displayed_size(h, w)
                if geometry is not None:
                    h, w = geometry.resolve(h, w).out
                return np.empty((0, h, w, 3), np.uint8)
            frames = self._read_frames(video_id, path, handle, idx, convert)
        except av.error.FFmpegError as e:
            raise VideoReadError(path, f"decoding failed: {e}") from e
        finally:
            self._release(handle)
        try:
            return np.stack([frames[int(i)] for i in idx])
        except ValueError as e:
            raise VideoReadError(path, f"frame size changes within the stream: {e}") from e

    def _read_frames(
        self,
        video_id: str,
        path: Path,
        handle: _Handle,
        idx: np.ndarray,
        convert: Callable[[av.VideoFrame], np.ndarray],
    ) -> dict[int, np.ndarray]:
        wanted = sorted(set(idx.tolist()))
        known = self._actual.get((str(path), handle.stat))
        if known is not None and wanted[-1] >= known:
            self._raise_if_beyond(video_id, handle, known, idx)
        index = self._guess_index(path, handle)
        for _ in range(3):  # packet guess -> exact index -> sequential decode
            if wanted[-1] >= index.num_frames:
                index = self._exact_index(path)
                self._raise_if_beyond(video_id, handle, index.num_frames, idx)
            if not index.seekable:
                return self._read_sequential(video_id, path, handle, index, idx, wanted, convert)
            try:
                return self._read_seeking(handle, index, wanted, convert)
            except _Mismatch:
                if index.exact:
                    index.seekable = False
                else:
                    index = self._exact_index(path)
            except BadData:
                # damaged: from now on only a single-threaded sequential decode of this file
                index = self._exact_index(path)
                index.seekable = False
        raise AssertionError("unreachable")  # pragma: no cover

    def _raise_if_beyond(self, video_id: str, handle: _Handle, actual: int, idx) -> None:
        check_in_range(video_id, idx, actual, lambda: _info(handle).reported_frames)

    def _read_sequential(self, video_id, path, handle, index, idx, wanted, convert) -> dict:
        """Decode from the start of a fresh file up to the last wanted frame."""
        self._raise_if_beyond(video_id, handle, index.num_frames, idx)
        out: dict[int, np.ndarray] = {}
        targets = set(wanted)
        for pos, frame in enumerate(self._decode_all(path)):
            if pos in targets:
                out[pos] = convert(frame)
                if len(out) == len(targets):
                    return out
        # the file decoded fewer frames than its exact index said: it changed under us
        raise VideoReadError(path, f"decoded fewer frames than the {index.num_frames} counted")

    def _read_seeking(
        self,
        handle: _Handle,
        index: FrameIndex,
        wanted: list[int],
        convert: Callable[[av.VideoFrame], np.ndarray],
    ) -> dict:
        """Seek to the keyframe before each stretch of wanted frames and decode forward."""
        out: dict[int, np.ndarray] = {}
        wanted_set = set(wanted)
        stretch: Generator[tuple[int, av.VideoFrame], None, None] | None = None
        next_pos = -1  # output position the current stretch yields next
        try:
            for target in wanted:
                sp = index.seek_point(index.seek_point_before(target))
                if stretch is None or sp.pos > next_pos:
                    if stretch is not None:
                        stretch.close()
                    stretch = self._seek(handle, index, target, wanted_set)
                for pos, frame in stretch:
                    next_pos = pos + 1
                    if pos == target:
                        out[pos] = convert(frame)
                        break
                    if pos > target:
                        raise _Mismatch(f"frame {target} was not decoded")
                else:
                    raise _Mismatch(f"stream ended before frame {target}")
        finally:
            if stretch is not None:
                stretch.close()
        return out

    def _seek(
        self, handle: _Handle, index: FrameIndex, target: int, wanted: set[int]
    ) -> Generator[tuple[int, av.VideoFrame], None, None]:
        """Seek so decoding resumes at or before `target`; returns the checked frame stream.

        Demuxers land only roughly (MPEG-PS/TS) or on an earlier keyframe (Matroska with
        B-frames), so after the seek packets are skipped, undecoded, up to the first one that
        starts a seek point; one past `target` means the seek overshot: try an earlier one.
        """
        container, stream = handle.container, handle.stream
        ctx = stream.codec_context
        handle.at_start = False
        first_sp = index.seek_point_before(target)
        tries = 0
        for sp_i in range(first_sp, -1, -1):
            for ts in index.seek_point(sp_i).seek_targets():
                tries += 1
                if tries > _MAX_SEEK_TRIES:
                    raise _Mismatch("seeking does not land on a known keyframe")
                try:
                    container.seek(ts, backward=True, stream=stream)
                except av.error.FFmpegError:
                    continue
                packets = container.demux(stream)
                landed = _first_seek_point(packets, index)
                if landed is None or landed[0] > target:
                    continue
                start, packet = landed
                packets = chain([packet], packets)
                # Skipping is safe only where frames carry their own packet's pts in order:
                # in packed or guessed-pts streams it changes which packet a frame is decoded
                # from, hence its timestamp.
                skip = self._skip_nonref and handle.can_skip_nonref and index.keys_in_order
                return _checked(ctx, index, start, packets, wanted, skip)
        raise _Mismatch("seeking does not land on a known keyframe")


def _first_seek_point(packets: Iterator[av.Packet], index: FrameIndex):
    """Skip (without decoding) to the first packet that starts a seek point of `index`.

    Returns (position decoding resumes at, that packet), or None when the data ends or goes
    bad first.
    """
    try:
        for packet in packets:
            if packet.is_corrupt:
                return None
            start = index.landing_pos(packet_key(packet.pts, packet.dts))
            if start is not None:
                return start, packet
    except av.error.FFmpegError:
        return None
    return None


def _checked(
    ctx, index: FrameIndex, start: int, packets, wanted: set[int], skip_nonref: bool
) -> Generator[tuple[int, av.VideoFrame], None, None]:
    """(position, frame) pairs decoded from `packets`, which begin at position `start`.

    Frames of the index placed before `start` (leading frames of an open GOP) are skipped;
    every other frame must carry the key of the next position, or the index is wrong:
    _Mismatch. With `skip_nonref`, packets of unwanted frames go to the decoder with
    skip_frame=NONREF: it drops them if no other frame refers to them, and only their positions
    may be missing from the output.
    """
    droppable: set[int] = set()
    skipping = False
    ctx.skip_frame = "DEFAULT"

    def on_packet(packet: av.Packet) -> None:
        nonlocal skipping
        pos = index.pos_of(packet_key(packet.pts, packet.dts))
        skip = False
        if pos is not None and pos not in wanted:
            droppable.add(pos)
            skip = True
        if skip != skipping:
            ctx.skip_frame = "NONREF" if skip else "DEFAULT"
            skipping = skip

    expected = start
    try:
        packet_hook = on_packet if skip_nonref else None
        for frame in decode_packets(ctx, packets, packet_hook, on_error="raise"):
            pos = index.pos_of(frame_key(frame))
            if expected == start and pos is not None and pos < start:
                continue
            if pos is None or pos < expected or not droppable.issuperset(range(expected, pos)):
                raise _Mismatch(f"decoded frame at position {pos}, expected {expected}")
            yield pos, frame
            expected = pos + 1
    finally:
        if skipping:
            ctx.skip_frame = "DEFAULT"


def _rgb(frame: av.VideoFrame) -> np.ndarray:
    """uint8 (H, W, 3) RGB pixels of `frame`, converted on this thread.

    PyAV's default (threads=0) gives every frame its own swscale context with slice threads:
    ~1 ms a frame to start and join them (measured: 96x64 to 1280x720, 5-35x slower than one
    thread), and a frame freed in a forked child would wait forever for threads left behind
    in the parent.
    """
    return frame.to_ndarray(format="rgb24", threads=1)


def _scaled_rgb(
    frame: av.VideoFrame, geometry: ClipGeometry, orientation: Orientation = IDENTITY
) -> np.ndarray:
    """uint8 (out_h, out_w, 3) RGB: `frame` turned by `orientation`, with `geometry` applied,
    scaled in the YUV -> RGB conversion.

    The geometry resolves against the displayed (turned) size H x W. The whole frame is
    converted at the size (H * out_h / box_h, W * out_w / box_w), where the plan's box is
    exactly the output size, so it is scaled once, by swscale, on the way to RGB (never
    converted at full size and resized again): in the stored orientation, i.e. with width and
    height swapped for a 90/270 degree rotation. Then it is turned, the box sliced out and
    flipped by numpy (views), and copied once. swscale uses its area filter when shrinking and
    bilinear when growing.
    """
    height, width = orientation.displayed_size(frame.height, frame.width)
    resolved = geometry.resolve(height, width)
    top, left, box_h, box_w = resolved.box
    out_h, out_w = resolved.out
    scaled_h = max(out_h, round(height * out_h / box_h))
    scaled_w = max(out_w, round(width * out_w / box_w))
    grow = scaled_h > height or scaled_w > width
    stored_h, stored_w = orientation.displayed_size(scaled_h, scaled_w)  # its own inverse
    rgb = frame.to_ndarray(
        width=stored_w,
        height=stored_h,
        format="rgb24",
        interpolation="BILINEAR" if grow else "AREA",
        threads=1,
    )
    rgb = orientation.view(rgb)
    y = min(scaled_h - out_h, round(top * scaled_h / height))
    x = min(scaled_w - out_w, round(left * scaled_w / width))
    region = rgb[y : y + out_h, x : x + out_w]
    return np.ascontiguousarray(region[:, ::-1] if resolved.flip else region)


def _orientation_of(path: Path, frame: av.VideoFrame) -> Orientation:
    found = frame_orientation(frame)
    if found is None:
        raise VideoReadError(
            path,
            f"display matrix rotates by {frame.rotation} degrees, not a multiple of 90: "
            f"VideoSource cannot apply it (pass rotation='ignore' for the stored pixels)",
        )
    return found


def _info(handle: _Handle) -> VideoInfo:
    stream = handle.stream
    ctx = stream.codec_context
    rate = stream.average_rate or stream.guessed_rate
    fps = float(rate) if rate else None
    duration_s: float | None = None
    if stream.duration is not None and stream.time_base is not None:
        duration_s = float(stream.duration * stream.time_base)
    elif handle.container.duration is not None:
        duration_s = handle.container.duration / av.time_base
    reported: int | None = stream.frames or None
    if reported is None and duration_s is not None and fps:
        reported = int(round(duration_s * fps)) or None
    videos = list(handle.container.streams.video)
    return VideoInfo(
        reported_frames=reported,
        fps=fps,
        width=ctx.width,
        height=ctx.height,
        codec=ctx.name,
        stream_index=videos.index(stream),
        duration_s=duration_s,
    )
