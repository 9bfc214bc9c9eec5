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

The pieces: `_video_file` (an open file, and why a decoder is never freed in a forked child),
`_video_index` (the frame index), `_video_seek` (seek-and-decode), `_video_rgb` (pixels),
`_video_persist` (the index persisted beside a file), `_video_ranges` and `_video_remote` (a
video at a URL read by byte ranges: the header once per process, then each clip's packets).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, get_args

import av
import av.error
import numpy as np

from vidload._checks import check_choice, check_int, check_optional_int
from vidload._kinds import get_kind
from vidload._layout import INDEX_SUFFIX, container_name, container_path, index_path
from vidload._lru import ProcessLRU
from vidload._storage import Location, SourceRoot
from vidload._storage.batch import Request, run_concurrently
from vidload.errors import VideoReadError, VidloadError
from vidload.sources._docs import shared_docs
from vidload.sources._listing import missing_names
from vidload.sources._orientation import Orientation
from vidload.sources._video_file import VideoHandle, VideoInfo, open_video, video_info
from vidload.sources._video_index import (
    BadData,
    FrameIndex,
    IndexRecorder,
    decode_packets,
    index_from_packets,
)
from vidload.sources._video_persist import PersistedIndex, UnusableIndex, load_index, write_index
from vidload.sources._video_remote import RemoteVideo, load_remote, warn_whole
from vidload.sources._video_rgb import converter, orientation_of
from vidload.sources._video_seek import Mismatch, read_seeking
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
#: Videos at a URL whose header bytes a process keeps (`_video_remote.RemoteVideo`: what
#: FFmpeg reads to open the file, an MP4's `moov` (~8 bytes a frame) and its first 32 KiB).
_REMOTE_CACHE_SIZE = 256
#: A file version in the per-process caches: (path, (st_mtime_ns, st_size)).
FileKey = tuple[str, tuple[int, int]]
#: A video file: a local path, or an object at a URL read by byte ranges.
VideoFile = Path | RemoteVideo


@shared_docs
class VideoSource:
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
            the point where sequential decoding stops (a corrupt GOP before it) can still
            return a frame, until `actual_frames` is known. "decode": a full sequential decode
            of the file first (`actual_frames`), so every read relies on the true count and
            gives the same result in any call order; costs one full decode per file and
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
        #: The root folder: a `Path`, or for a URL root its `vidload._storage.Location`.
        self.root: Path | Location = (
            self.store.location.local_path if self.store.is_local else self.store.location
        )
        self._skip_nonref = True  # 1.55x on mma_test.mp4 (_video_seek); frame-exact
        self._reset_caches()

    # ------------------------------------------------------------------ per-process state

    def _reset_caches(self) -> None:
        """Per-process state (`vidload._lru.ProcessLRU`: empty again after a fork, where
        `VideoHandle.close` parks the parent's handles, unused and unfreed: they share file offsets
        with the parent and their decoders' threads are not here)."""
        self._handles: ProcessLRU[str, VideoHandle] = ProcessLRU(
            self.cache_size, VideoHandle.close, inherited=VideoHandle.close
        )
        self._indexes: ProcessLRU[FileKey, FrameIndex] = ProcessLRU(_INDEX_CACHE_SIZE)
        self._actual: ProcessLRU[FileKey, int] = ProcessLRU(None)
        self._orientations: ProcessLRU[FileKey, Orientation] = ProcessLRU(None)
        # whether each file version's persisted index was looked for (and used)
        self._persisted: ProcessLRU[FileKey, bool] = ProcessLRU(_INDEX_CACHE_SIZE)
        # URL root: each video read by ranges, or why it is downloaded whole
        self._remote: ProcessLRU[str, RemoteVideo | str] = ProcessLRU(_REMOTE_CACHE_SIZE)
        self._said_whole = False
        # URL root: the object each id names (`_object_name`), and each folder's listing
        self._names: ProcessLRU[str, str] = ProcessLRU(None)
        self._listings: ProcessLRU[str, tuple[frozenset[str] | None]] = ProcessLRU(
            _REMOTE_CACHE_SIZE
        )

    def __getstate__(self) -> dict:
        return {
            "root": self.root,
            "store": self.store,
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
        """The file of `video_id`: root / video_id (the id keeps its extension) when it exists,
        else the file `vidload convert --to video` made of it (`a/x1.avi` -> `a/x1.mp4`, or
        `a/x1.avi.mp4` where two ids shared a stem: `vidload._layout`), so a converted folder
        is read with the originals' ids; else root / video_id (reading it then fails). For a
        URL root, the local copy of root / video_id (fetched on first use, see `root`)."""
        root = self.root
        vid = normalize_video_id(video_id)
        if not isinstance(root, Path):
            return self.store.local_copy(self._object_name(vid))
        direct = root / vid
        if direct.exists():
            return direct
        converted = container_path(root, vid, get_kind("video").suffix)
        return converted if converted.exists() else direct

    def _file(self, video_id: str, wanted: Sequence[int] | np.ndarray = ()) -> VideoFile:
        """The file a read of `video_id` opens: `path(video_id)` for a local root (or with
        `cache_dir`); for a URL root, the object read by byte ranges, with the bytes a read of
        `wanted` needs fetched (the first time, its header too: `_video_remote`), or where it
        cannot be read so (no usable index), its local copy, downloaded whole and said so."""
        if not self.store.reads_by_ranges:
            return self.path(video_id)
        vid = self._object_name(normalize_video_id(video_id))
        found = self._remote.get(vid)
        if found is None:
            found = self._keep_remote(vid, load_remote(self.store.remote(vid)))
        if isinstance(found, RemoteVideo):
            try:
                found.fetch(wanted)
                return found
            except UnusableIndex as e:
                self._remote.put(vid, str(e))
                warn_whole(found, f"its frame index is not used: {e}")
        return self.store.local_copy(vid)

    def _object_name(self, vid: str) -> str:
        """The object a URL root reads for the id `vid`, by the rule `path` follows on local
        disk: the id's own file, else the one `vidload convert --to video` made of it (the
        full id's name `a/x1.avi.mp4`, then `a/x1.mp4`), found in one listing of the folder
        per process (a bucket prefix). A store that cannot list (HTTP) reads the id's own
        file. Kept per process."""
        known = self._names.get(vid)
        if known is not None:
            return known
        suffix = get_kind("video").suffix
        candidates = dict.fromkeys(
            (vid, container_name(vid, suffix, keep_extension=True), container_name(vid, suffix))
        )
        name = vid
        if len(candidates) > 1:
            folder, _, _ = vid.rpartition("/")
            entry = self._listings.get(folder)
            if entry is None:
                where = self.store.location / folder if folder else self.store.location
                entry = (None,)
                if where.can_list:
                    try:
                        entry = (frozenset(where.list_dir()),)
                    except VideoReadError:
                        entry = (frozenset(),)  # no such folder: the id's own read says so
                self._listings.put(folder, entry)
            listed = entry[0]
            if listed is not None:
                name = next((c for c in candidates if c.rsplit("/", 1)[-1] in listed), vid)
        self._names.put(vid, name)
        return name

    def missing_videos(self, video_ids: Sequence[str]) -> list[str]:
        """The ids of `video_ids` with no file under the root, in list order: neither the id's
        own file nor the video `vidload convert --to video` made of it (`path`; a root that
        cannot list, HTTP, by the id's own file only);
        one directory listing per folder (per prefix in a bucket), not a stat per video
        (`vidload.sources._listing`)."""
        suffix = get_kind("video").suffix
        rule = self.store.location.can_list  # where `_object_name` can follow it

        def names(vid: str) -> Iterator[str]:
            yield vid
            if rule:
                yield container_name(vid, suffix, keep_extension=True)
                yield container_name(vid, suffix)

        return missing_names(self.store.location, video_ids, names)

    def _keep_remote(self, vid: str, found: RemoteVideo | str) -> RemoteVideo | str:
        self._remote.put(vid, found)
        if isinstance(found, str) and not self._said_whole:
            self._said_whole = True  # once per source and process: all may lack one
            warn_whole(self.store.remote(vid), f"{found} (nor may other videos here)")
        return found

    # ------------------------------------------------------------------ a batch in one round

    def prepare(self, video_ids: Sequence[str]) -> None:
        """Fetch the persisted indexes of the videos of `video_ids` this process has not looked
        up yet, all at once: one concurrent round for a batch instead of one per video
        (`ClipDataset.__getitems__`, `vidload._dataset.batch`). Nothing to do where reads do not
        wait on a network (a local root, `cache_dir`). A failure is left for the video's own
        read."""
        if not self.store.reads_by_ranges:
            return
        ids = dict.fromkeys(self._object_name(normalize_video_id(v)) for v in video_ids)
        todo = [v for v in ids if self._remote.get(v) is None]
        found = run_concurrently(self._try_load_remote, todo)
        for vid, got in zip(todo, found, strict=True):
            if got is not None:
                self._keep_remote(vid, got)

    def _try_load_remote(self, vid: str) -> RemoteVideo | str | None:
        try:
            return load_remote(self.store.remote(vid))
        except VidloadError:
            return None

    def fetch_plan(self, video_id: str, indices: Sequence[int] | np.ndarray) -> list[Request]:
        """The storage requests `read(video_id, indices)` will make, as `(location, [(start,
        stop), ...])`: the video's header the first time, and the packets of the frames not
        held, once its index is known (`prepare`) and it is read by byte ranges; else []."""
        if not self.store.reads_by_ranges:
            return []
        found = self._remote.get(self._object_name(normalize_video_id(video_id)))
        if not isinstance(found, RemoteVideo):
            return []
        needed = found.needed(as_index_array(indices))
        return [(found.location, needed)] if needed else []

    def files(self, video_id: str) -> list[Path]:
        """The files a read of `video_id` opens: its video file and, where one was written,
        its persisted frame index (`vidload._layout.index_path`), for read-ahead hints and the
        bytes a storage takes; none for a URL root."""
        if not self.store.is_local:
            return []
        path = self.path(video_id)
        index = index_path(path)
        return [path, index] if index.is_file() else [path]

    def _stat(self, path: VideoFile) -> tuple[int, int]:
        if isinstance(path, RemoteVideo):
            return path.stat
        st = check_regular_file(path)  # a FIFO would block av.open forever
        return (st.st_mtime_ns, st.st_size)

    def _open(
        self, path: VideoFile, stat: tuple[int, int], *, threads: int | None = None, explode: bool
    ) -> VideoHandle:
        """`open_video` with this source's stream and (by default) threads."""
        threads = self.threads if threads is None else threads
        file = path.reader() if isinstance(path, RemoteVideo) else None
        return open_video(
            path, stat, stream=self.stream, threads=threads, explode=explode, file=file
        )

    def _handle(self, path: VideoFile) -> VideoHandle:
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

    def _release(self, handle: VideoHandle) -> None:
        if self.cache_size == 0:
            handle.close()

    def _fresh(self, path: VideoFile, *, threads: int | None = None, explode: bool) -> VideoHandle:
        """A handle of its own (not cached), positioned at the start of the file."""
        return self._open(path, self._stat(path), threads=threads, explode=explode)

    # ------------------------------------------------------------------ header

    def info(self, video_id: str) -> VideoInfo:
        """What the header says about the chosen stream; nothing is decoded."""
        path = self._file(video_id)
        handle = self._handle(path)
        try:
            return video_info(handle)
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
        path = self._file(video_id)
        key = (str(path), self._stat(path))
        found = self._orientations.get(key)
        if found is None and self._use_persisted(path):
            found = self._orientations.get(key)
        if found is None:
            for frame in self._decode_all(path):
                found = orientation_of(path, frame)
                break
            else:
                raise VideoReadError(path, "no frame of the video stream decodes")
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
        handle = self._handle(path)
        try:
            index = self._guess_index(path, handle)
            known = self._actual.get((str(path), handle.stat))
            if known is not None and known != index.num_frames:
                index = self._exact_index(path)
            time_base = handle.stream.time_base
            fps = video_info(handle).fps
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
        path = self._file(video_id)
        stat = self._stat(path)
        count = self._actual.get((str(path), stat))
        if count is None and self._use_persisted(path):
            count = self._actual.get((str(path), stat))
        if count is None:
            count = self._exact_index(path).num_frames
        return count

    # ------------------------------------------------------------------ persisted index

    def _use_persisted(self, path: VideoFile, handle: VideoHandle | None = None) -> bool:
        """Load `path`'s persisted frame index (`_video_persist`) into this process's caches,
        once per file version; whether one was found and matches the file."""
        stat = self._stat(path)
        key = (str(path), stat)
        done = self._persisted.get(key)
        if done is not None:
            return done
        own = handle is None
        if handle is None:
            handle = self._handle(path)
        try:
            stream_index = video_info(handle).stream_index
        finally:
            if own:
                self._release(handle)
        found = self._load_index(path, stream_index)
        if found is not None:
            self._store_exact(key, found.index)
            self._orientations.put(key, found.orientation)
        self._persisted.put(key, found is not None)
        return found is not None

    @staticmethod
    def _load_index(path: VideoFile, stream_index: int) -> PersistedIndex | None:
        if not isinstance(path, RemoteVideo):
            return load_index(path, stream_index)
        # the sidecar's digest was checked when the header was fetched (`_video_remote`)
        if path.persisted.stream_index != stream_index:
            warnings.warn(
                f"{path}{INDEX_SUFFIX}: frame index not used: it is for video stream "
                f"{path.persisted.stream_index}, not {stream_index}; building it from the video "
                f"instead (its bytes fetched as FFmpeg reads them)",
                stacklevel=4,
            )
            return None
        return path.persisted

    def exact_frame_index(self, video_id: str) -> PersistedIndex:
        """The exact frame index of `video_id`'s chosen stream (from a full sequential decode,
        `actual_frames`), with its display orientation: what `write_index` persists."""
        path = self._file(video_id)
        index = self._exact_index(path)
        orientation = self.orientation(video_id)
        return PersistedIndex(index, orientation, self.info(video_id).stream_index)

    def write_index(self, video_id: str) -> Path:
        """Persist `video_id`'s frame index beside its file (`<file>.vidload-index`,
        `vidload.sources._video_persist`), so that a fresh process reads it without a scan or
        a decode; costs one full decode now. Returns the index file's path."""
        return write_index(self.path(video_id), self.exact_frame_index(video_id))

    def _exact_index(self, path: VideoFile) -> FrameIndex:
        """Index built from a full sequential decode (cached)."""
        key = (str(path), self._stat(path))
        index = self._indexes.get(key)
        if (index is None or not index.exact) and self._use_persisted(path):
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

    def _guess_index(self, path: VideoFile, handle: VideoHandle) -> FrameIndex:
        """The cached index of `path`, else one from a packet scan where the container
        stores pts, else one from a full decode."""
        key = (str(path), handle.stat)
        index = self._indexes.get(key)
        if index is not None:
            return index
        if self._use_persisted(path, handle):
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

    def _decode_all(self, path: VideoFile, recorder: IndexRecorder | None = None):
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

    def _decode_file(self, path: VideoFile, threads: int, recorder: IndexRecorder | None, on_error):
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
        path = self._file(video_id)
        key = (str(path), self._stat(path))
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
        indices: Sequence[int] | np.ndarray,
        *,
        geometry: ClipGeometry | None = None,
    ) -> np.ndarray:
        """<<read>>
        Equal pixel for pixel to those of a sequential decode.

        With a `geometry` the frames come back as uint8 (k, out_h, out_w, 3): each frame is
        scaled in its one swscale pass from YUV to RGB, to the size at which the plan's box
        becomes the output size, then the box is sliced out and flipped (`_video_rgb.scaled_rgb`).

        Raises:
            IndexError: a negative index.
            FrameCountError: an index >= `actual_frames(video_id)`.
            VideoReadError: the file is missing or cannot be decoded.
        """
        idx = as_index_array(indices)
        path = self._file(video_id, idx)
        handle = self._handle(path)
        convert = converter(path, displayed=self.rotation == "auto", geometry=geometry)
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
                return self._read_sequential(video_id, path, handle, index, idx, wanted, convert)
            try:
                return read_seeking(handle, index, wanted, convert, skip_nonref=self._skip_nonref)
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
