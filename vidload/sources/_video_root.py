"""The files under a `VideoSource`'s root: which file a video id names (`VideoNames`), what a
read opens (a local path, or at a URL the object read by byte ranges: `_video_remote`, else its
local copy), and this process's open handles on them (`_video_file`).

The naming rule: the id's own file (the id keeps its extension), else the video `vidload convert
--to video` made of it (`a/x1.avi` -> `a/x1.mp4`, or `a/x1.avi.mp4` where two ids shared a stem:
`vidload._layout`), so a converted folder is read with the originals' ids. On local disk by a
stat per candidate; at a URL by one listing of each folder (a bucket prefix) per process, kept
with each id's answer; a store that cannot list (HTTP) reads the id's own file.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from vidload._kinds import get_kind
from vidload._layout import INDEX_SUFFIX, container_name, container_path, index_path
from vidload._lru import ProcessLRU
from vidload._storage import Location, SourceRoot
from vidload.errors import VideoReadError
from vidload.sources._listing import missing_names
from vidload.sources._video_file import VideoHandle, open_video
from vidload.sources._video_persist import PersistedIndex, UnusableIndex, load_index
from vidload.sources._video_remote import RemoteVideo, load_remote, warn_whole
from vidload.sources.base import check_regular_file, normalize_video_id

__all__ = ["VideoFile", "VideoNames", "VideoRoot"]

#: Videos at a URL whose header bytes a process keeps (`_video_remote.RemoteVideo`: what
#: FFmpeg reads to open the file, an MP4's `moov` (~8 bytes a frame) and its first 32 KiB).
_REMOTE_CACHE_SIZE = 256
#: A video file: a local path, or an object at a URL read by byte ranges.
VideoFile = Path | RemoteVideo


#: Folders of a URL root whose listing a process keeps.
_LISTINGS = 256


class VideoNames:
    """The rule of the module docstring for the root of `store`, with this process's answers
    (`ProcessLRU`s: empty again after a fork)."""

    def __init__(self, store: SourceRoot) -> None:
        self.store = store
        self._names: ProcessLRU[str, str] = ProcessLRU(None)
        self._listings: ProcessLRU[str, tuple[frozenset[str] | None]] = ProcessLRU(_LISTINGS)

    @staticmethod
    def local_path(root: Path, vid: str) -> Path:
        """The file of the id `vid` under the local folder `root`; root / vid where none
        exists (reading it then fails)."""
        direct = root / vid
        if direct.exists():
            return direct
        converted = container_path(root, vid, get_kind("video").suffix)
        return converted if converted.exists() else direct

    def object_name(self, vid: str) -> str:
        """The object a URL root reads for the id `vid`: the id's own file, else the one
        `vidload convert --to video` made of it (the full id's name `a/x1.avi.mp4`, then
        `a/x1.mp4`), found in one listing of the folder per process (a bucket prefix). A store
        that cannot list (HTTP) reads the id's own file. Kept per process."""
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

    def missing(self, video_ids: Sequence[str]) -> list[str]:
        """The ids of `video_ids` with no file under the root by the rule (a root that cannot
        list, HTTP, by the id's own file only), in list order; one directory listing per
        folder (per prefix in a bucket), not a stat per video (`vidload.sources._listing`)."""
        suffix = get_kind("video").suffix
        rule = self.store.location.can_list  # where `object_name` can follow it

        def names(vid: str) -> Iterator[str]:
            yield vid
            if rule:
                yield container_name(vid, suffix, keep_extension=True)
                yield container_name(vid, suffix)

        return missing_names(self.store.location, video_ids, names)


class VideoRoot:
    """What `VideoSource` reads its frames from (see the module docstring): its base, holding
    the root, the settings that open a file, and the per-process state of its files
    (`_reset_files`)."""

    store: SourceRoot
    root: Path | Location
    threads: int
    stream: int | None
    cache_size: int

    def _reset_files(self) -> None:
        """Per-process state (`vidload._lru.ProcessLRU`: empty again after a fork, where
        `VideoHandle.close` parks the parent's handles, unused and unfreed: they share file
        offsets with the parent and their decoders' threads are not here)."""
        self._handles: ProcessLRU[str, VideoHandle] = ProcessLRU(
            self.cache_size, VideoHandle.close, inherited=VideoHandle.close
        )
        # URL root: each video read by ranges, or why it is downloaded whole
        self._remote: ProcessLRU[str, RemoteVideo | str] = ProcessLRU(_REMOTE_CACHE_SIZE)
        self._said_whole = False
        self._names = VideoNames(self.store)  # the file each id names

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
        return self._names.local_path(root, vid)

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
        """The object a URL root reads for the id `vid` (`VideoNames`)."""
        return self._names.object_name(vid)

    def missing_videos(self, video_ids: Sequence[str]) -> list[str]:
        """The ids of `video_ids` with no file under the root, in list order: neither the id's
        own file nor the video `vidload convert --to video` made of it (`path`; a root that
        cannot list, HTTP, by the id's own file only);
        one directory listing per folder (per prefix in a bucket), not a stat per video
        (`vidload.sources._listing`)."""
        return self._names.missing(video_ids)

    def _keep_remote(self, vid: str, found: RemoteVideo | str) -> RemoteVideo | str:
        self._remote.put(vid, found)
        if isinstance(found, str) and not self._said_whole:
            self._said_whole = True  # once per source and process: all may lack one
            warn_whole(self.store.remote(vid), f"{found} (nor may other videos here)")
        return found

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
