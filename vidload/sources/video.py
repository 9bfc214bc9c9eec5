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

Damaged files: the frames of a video are those a single-threaded sequential decode gives, up
to where it stops; `read`, `iter_frames` and `actual_frames` all give these frames, whatever
`threads` (`_video_index` says how); a persisted index's frame digests catch what no decode
error reports (`_video_index.frame_digest`).

The pieces: `_video_root` (the base: the file an id names, what a read opens, the open
handles), `_video_file` (an open file, and why a decoder is never freed in a forked child),
`_video_index` (the frame index, and sequential decode), `_video_seek` (seek-and-decode, and
the pixels a read returns), `_video_persist` (the index persisted beside a file), `_video_ranges`
and `_video_remote` (a video at a URL read by byte ranges: the header once per process, then
each clip's packets).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Literal, get_args

import av
import av.error
import numpy as np

from vidload._checks import check_choice, check_int, check_optional_int
from vidload._lru import ProcessLRU
from vidload._storage import Location, SourceRoot
from vidload._storage.batch import Request, run_concurrently
from vidload.errors import VideoReadError, VidloadError
from vidload.sources._docs import shared_docs
from vidload.sources._fused import empty_clip
from vidload.sources._orientation import Orientation
from vidload.sources._video_file import VideoHandle, VideoInfo, ffmpeg_words, video_info
from vidload.sources._video_index import (
    BadData,
    FrameIndex,
    IndexRecorder,
    decode_all,
    frame_digest,
    index_from_packets,
)
from vidload.sources._video_persist import PersistedIndex, write_index
from vidload.sources._video_remote import VideoFile, from_record, load_remote
from vidload.sources._video_root import VideoRoot
from vidload.sources._video_seek import Mismatch, converter, orientation_of, read_seeking
from vidload.sources.base import (
    Indices,
    as_index_array,
    check_in_range,
    normalize_video_id,
)
from vidload.transforms import ClipGeometry

Rotation = Literal["auto", "ignore"]
ROTATIONS: tuple[str, ...] = get_args(Rotation)

__all__ = ["VideoInfo", "VideoSource"]

#: Frame indexes kept per process (int64 arrays, ~24 bytes a frame: ~7 KB for 300 frames).
_INDEX_CACHE_SIZE = 4096
#: A file version in the per-process caches: (path, (st_mtime_ns, st_size)).
FileKey = tuple[str, tuple[int, int]]


@shared_docs
class VideoSource(VideoRoot):
    """Frames of the video files under `root`, read by seek-and-decode, frame-exact.

    Args:
        root: folder of video files, or a URL (`s3://bucket/videos`); a video id is a path
            relative to it, extension included. Over a URL, a video with a persisted frame
            index (`vidload convert --to video` writes one beside each file, `vidload probe
            --write-index` beside originals) is read by byte ranges: its index and header once
            per process, then only the packets of each clip's frames
            (`vidload.sources._video_remote`). Other videos, and every video when `cache_dir`
            is given, are copied whole into a local cache when a process first opens them (one
            GET; said in a warning where an index is missing or stale): `cache_dir`, else a
            bounded temporary cache (`vidload._storage.temporary_cache`).
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
            the point where sequential decoding stops (a corrupt GOP before it) can still return
            a frame until `actual_frames` is known (a persisted index knows it). "decode": a
            full sequential decode of the file first (`actual_frames`), so every read relies on
            the true count, the same in any call order; costs one full decode per file and
            process (mma_test.mp4, 300 frames: 142 ms of CPU, against 71 ms for one 8-frame
            seek-and-decode read; `python tools/read_paths.py --only video`).
        <<storage>>

    Picklable: it holds only paths and settings. Open files and indexes live per process and
    are dropped when the process id changes (a fork) and left out of pickles. Safe to use
    before forking DataLoader workers, with any `threads`: files open in the parent are never
    used nor freed in a child (`vidload.sources._video_file` says why).
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
        storage_options: Mapping[str, Any] | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        cache_max_bytes: int | None = None,
    ) -> None:
        self.threads = check_int("threads", threads, minimum=0)
        self.cache_size = check_int("cache_size", cache_size, minimum=0)
        self.stream = check_optional_int("stream", stream, minimum=0)
        self.rotation: Rotation = check_choice("rotation", rotation, ROTATIONS)
        self.frame_index: Literal["packets", "decode"] = check_choice(
            "frame_index", frame_index, ("packets", "decode")
        )
        self.store = SourceRoot(root, storage_options, cache_dir, cache_max_bytes)
        #: The root folder or URL (a local one is path-like: `vidload._storage.LocalLocation`).
        self.root: Location = self.store.location
        self._skip_nonref = True  # 1.55x on mma_test.mp4 (_video_seek); frame-exact
        self._check_corrupt = True  # a frame the decoder flags corrupt: damaged (_video_seek)
        # per-process state (`vidload._lru.ProcessLRU`: empty again after a fork or in a
        # pickle): what is known of each file version, and the files' own (`_init_files`)
        self._indexes: ProcessLRU[FileKey, FrameIndex] = ProcessLRU(_INDEX_CACHE_SIZE)
        self._actual: ProcessLRU[FileKey, int] = ProcessLRU(None)
        self._orientations: ProcessLRU[FileKey, Orientation] = ProcessLRU(None)
        # the file versions whose persisted index was looked for (and used where found:
        # `_known`), kept as long as their counts: a version's entry never asks its file again
        self._persisted: ProcessLRU[FileKey, bool] = ProcessLRU(None)
        self._init_files()

    def __repr__(self) -> str:
        return (
            f"VideoSource({str(self.root)!r}, threads={self.threads}, stream={self.stream}, "
            f"cache_size={self.cache_size}, rotation={self.rotation!r}, "
            f"frame_index={self.frame_index!r})"
        )

    # ------------------------------------------------------------------ a batch in one round

    def prepare(self, video_ids: Sequence[str]) -> None:
        """Find the persisted indexes of the videos of `video_ids` this process has not looked
        up yet: from the root's sidecar of heads (`_heads`, written by `vidload convert --to
        video`; fetched once per machine) where it lists them, so their header and packets are
        the batch's one round (with the sidecar's check spans: a video rewritten since is
        opened from its own index, `VideoFile.fetch`); the others' own indexes all at once,
        one concurrent round for the batch instead of one per video (`ClipDataset.
        __getitems__`, `vidload._dataset.batch`). Nothing to do where reads do not wait on a
        network (a local root, `cache_dir`). A failure is left for the video's own read."""
        if not self.store.reads_wait:  # nothing to open ahead
            return
        ids = dict.fromkeys(self._object_name(normalize_video_id(v)) for v in video_ids)
        todo = [v for v in ids if self._remote.get(v) is None]
        if not todo:
            return
        heads = self._video_heads()
        if heads is not None:
            for vid in list(todo):
                record = heads.get(vid)
                known = None if record is None else from_record(self.store.location_of(vid), record)
                if known is not None:
                    self._keep_remote(vid, known)
                    todo.remove(vid)
            if todo:  # listed nowhere in it: the sidecar may be older than the data
                heads.suspect()
        found = run_concurrently(self._try_load_remote, todo)
        for vid, got in zip(todo, found, strict=True):
            if got is not None:
                self._keep_remote(vid, got)

    def _try_load_remote(self, vid: str) -> VideoFile | str | None:
        try:
            return load_remote(self.store.location_of(vid))
        except VidloadError:
            return None

    def fetch_plan(self, video_id: str, indices: Indices) -> list[Request]:
        """The storage requests `read(video_id, indices)` will make, as `(location, [(start,
        stop), ...])`: the video's header the first time, and the packets of the frames not
        held, once its index is known (`prepare`) and it is read by byte ranges; else []."""
        if not self.store.reads_wait:
            return []
        found = self._remote.get(self._object_name(normalize_video_id(video_id)))
        if found is None or isinstance(found, str):
            return []
        needed = found.needed(as_index_array(indices))
        return [(found.location, needed)] if needed else []

    # ------------------------------------------------------------------ header

    def info(self, video_id: str) -> VideoInfo:
        """What the header says about the chosen stream; nothing is decoded."""
        return self._info(self._file(video_id))

    def _info(self, path: VideoFile) -> VideoInfo:
        with self._handle(path) as handle:
            return video_info(handle)

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
        path = self._file(video_id)
        key = self._known(path)
        found = self._orientations.get(key)
        if found is None:
            first = next(self._decode_all(path), None)  # the decode closes as it is dropped
            if first is None:
                raise VideoReadError(path, "no frame of the video stream decodes")
            found = orientation_of(path, first)
            self._orientations.put(key, found)
        return found

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
        path = self._file(video_id)
        with self._handle(path) as handle:
            index = self._guess_index(path, handle)
            known = self._actual.get((str(path), handle.stat))
            if known is not None and known != index.num_frames:
                index = self._exact_index(path)
            info = video_info(handle)
        n = index.num_frames
        if index.keys is not None and info.time_base is not None:
            keys = np.sort(np.frombuffer(index.keys, dtype=np.int64)[:n])
            return keys.astype(np.float64) * float(info.time_base)
        if not info.fps:
            raise VideoReadError(path, "frames carry no timestamps and the stream no frame rate")
        return np.arange(n, dtype=np.float64) / info.fps

    # ------------------------------------------------------------------ counting

    def actual_frames(self, video_id: str) -> int:
        """Frames that really decode from the chosen stream: a full decode, once per process
        and file version; equals the number of frames `iter_frames` yields. A file whose data
        goes bad part-way counts the frames decoded before; one where no frame decodes raises
        VideoReadError."""
        path = self._file(video_id)
        count = self._actual.get(self._known(path))
        return self._exact_index(path).num_frames if count is None else count

    # ------------------------------------------------------------------ persisted index

    def _known(self, path: VideoFile, handle: VideoHandle | None = None) -> FileKey:
        """The key of `path`'s version (`handle`'s, where it is open) in this process's caches,
        into which its persisted frame index (`_video_persist`), where one is found and
        matches the file, is loaded first, once per file version."""
        key = (str(path), path.stat if handle is None else handle.stat)
        if self._persisted.get(key) is None:
            info = self._info(path) if handle is None else video_info(handle)
            found = path.persisted_index(info.stream_index)
            if found is not None:
                self._store_exact(key, found.index)
                self._orientations.put(key, found.orientation)
            self._persisted.put(key, found is not None)
        return key

    def _has_digests(self, path: VideoFile) -> bool:
        """Whether `path`'s exact index (persisted, else written in this process) records each
        frame's digest: seek reads then check every frame they return, and need no
        `err_detect=explode` (`VideoRoot._handle`)."""
        found = self._indexes.get(self._known(path))
        return found is not None and found.digests is not None

    def exact_frame_index(self, video_id: str) -> PersistedIndex:
        """The exact frame index of `video_id`'s chosen stream (from a full sequential decode,
        `actual_frames`), with its display orientation and each frame's digest (the decode is
        single-threaded then: `_video_index.frame_digest`): what `write_index` persists."""
        path = self._file(video_id)
        index = self._exact_index(path, digests=True)
        orientation = self.orientation(video_id)
        return PersistedIndex(index, orientation, self.info(video_id).stream_index)

    def write_index(self, video_id: str) -> Path:
        """Persist `video_id`'s frame index beside its file (`<file>.vidload-index`,
        `vidload.sources._video_persist`), so that a fresh process reads it without a scan or
        a decode; costs one full decode now. Returns the index file's path."""
        return write_index(self.path(video_id), self.exact_frame_index(video_id))

    def _exact_index(self, path: VideoFile, *, digests: bool = False) -> FrameIndex:
        """Index built from a full sequential decode (cached); with `digests`, one that has
        each frame's digest (`_video_index.frame_digest`)."""
        key = self._known(path)
        index = self._indexes.get(key)
        if index is None or not index.exact or (digests and index.digests is None):
            recorder = IndexRecorder(digests=digests)
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

    def _guess_index(self, path: VideoFile, handle: VideoHandle) -> FrameIndex:
        """The cached index of `path`, else one from a packet scan where the container
        stores pts, else one from a full decode."""
        key = self._known(path, handle)
        index = self._indexes.get(key)
        if index is None and handle.stores_pts and self.frame_index == "packets":
            scan = handle if handle.at_start else self._fresh(path, explode=True)
            scan.at_start = False
            try:
                index = index_from_packets(scan.container, scan.stream)
            finally:
                if scan is not handle:
                    scan.close()
            if index is not None:
                self._indexes.put(key, index)
        return self._exact_index(path) if index is None else index

    # ------------------------------------------------------------------ decoding

    def _decode_all(
        self, path: VideoFile, recorder: IndexRecorder | None = None
    ) -> Iterator[av.VideoFrame]:
        """Every frame of the chosen stream that a single-threaded sequential decode gives
        (`_video_index.decode_all`); `recorder` sees every packet decoded and every frame."""
        return decode_all(partial(self._fresh, path), path, self.threads, recorder)

    def iter_frames(self, video_id: str) -> Iterator[np.ndarray]:
        """Sequential decode of the chosen stream: uint8 (H, W, 3) RGB frames in order.

        Stops where the data goes bad (truncated or corrupt file); yields exactly
        `actual_frames(video_id)` frames.
        """
        path = self._file(video_id)
        key = (str(path), path.stat)
        recorder = IndexRecorder()
        convert = converter(path, displayed=self.rotation == "auto")
        for frame in self._decode_all(path, recorder):
            yield convert(frame)
        self._store_exact(key, recorder.index())
        if not recorder.keys:
            raise VideoReadError(path, "no frame of the video stream decodes")

    def read(
        self,
        video_id: str,
        indices: Indices,
        *,
        geometry: ClipGeometry | None = None,
    ) -> np.ndarray:
        """<<read>>
        Equal pixel for pixel to those of a sequential decode.

        With a `geometry` the frames come back as uint8 (k, out_h, out_w, 3): each frame is
        scaled in its one swscale pass from YUV to RGB, to the size at which the plan's box
        becomes the output size, then the box is sliced out and flipped (`_video_seek.scaled_rgb`).

        Raises:
            IndexError: a negative index.
            FrameCountError: an index >= `actual_frames(video_id)`.
            VideoReadError: the file is missing or cannot be decoded.
        """
        idx = as_index_array(indices)
        path = self._file(video_id, idx)
        convert = converter(path, displayed=self.rotation == "auto", geometry=geometry)
        with self._handle(path, explode=not self._has_digests(path)) as handle:
            try:
                if idx.size == 0:
                    h, w = handle.stream.codec_context.height, handle.stream.codec_context.width
                    if self.rotation == "auto":
                        h, w = self.orientation(video_id).displayed_size(h, w)
                    return empty_clip(h, w, geometry)
                frames = self._read_frames(video_id, path, handle, idx, convert)
            except av.error.FFmpegError as e:
                raise VideoReadError(path, f"decoding failed: {ffmpeg_words(e)}") from e
        try:
            return np.stack([frames[int(i)] for i in idx])
        except ValueError as e:
            raise VideoReadError(path, f"frame size changes within the stream: {e}") from e

    def _read_frames(
        self,
        video_id: str,
        path: VideoFile,
        handle: VideoHandle,
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
                return self._read_sequential(path, index, wanted, convert)
            try:
                checks = {"skip_nonref": self._skip_nonref, "check_corrupt": self._check_corrupt}
                return read_seeking(handle, index, wanted, convert, **checks)
            except Mismatch:
                if index.exact:
                    index.seekable = False
                else:
                    index = self._exact_index(path)
            except BadData:
                # damaged: from now on only a single-threaded sequential decode of this file
                index = self._exact_index(path)
                index.seekable = False
        raise AssertionError("unreachable")  # pragma: no cover

    def _raise_if_beyond(self, video_id: str, handle: VideoHandle, actual: int, idx) -> None:
        check_in_range(video_id, idx, actual, lambda: video_info(handle).reported_frames)

    def _read_sequential(self, path, index, wanted, convert) -> dict:
        """Decode from the start of a fresh file up to the last wanted frame (each before the
        exact index's count: `_read_frames` checked). Where the index has digests, the frames
        are checked against them: a threaded decode that differs is redone single-threaded; a
        single-threaded one that differs means the file is not the one the index was written
        from."""
        targets = set(wanted)
        for threads in dict.fromkeys((self.threads, 1)):
            out: dict[int, np.ndarray] = {}
            frames = decode_all(partial(self._fresh, path), path, threads)
            for pos, frame in enumerate(frames):
                if pos in targets:
                    if index.digests is not None and frame_digest(frame) != index.digests[pos]:
                        break
                    out[pos] = convert(frame)
                    if len(out) == len(targets):
                        return out
            else:  # fewer frames than its exact index said: it changed under us
                raise VideoReadError(
                    path, f"decoded fewer frames than the {index.num_frames} counted"
                )
        raise VideoReadError(
            path,
            f"frame {pos} decodes to other pixels than when its frame index was written: the "
            "file changed since (rewrite it with `vidload probe --write-index`)",
        )
