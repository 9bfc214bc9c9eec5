"""The files under a `VideoSource`'s root: which file a video id names (`_object_name`), what a
read opens (a local path, or at a URL the object read by byte ranges: `_video_remote`, else its
local copy), and this process's open handles on them (`_video_file`).

Where the root's manifest names the videos (`vidload convert --to video`'s `container` column,
handed over by `use_containers`), a listed id reads the file it names: nothing guessed, nothing
listed. Otherwise the naming rule: the id's own file (the id keeps its extension), else the
video `vidload convert --to video` made of it (`a/x1.avi` -> `a/x1.mp4`, or `a/x1.avi.mp4`
where two ids shared a stem: `vidload._layout`), so a converted folder is read with the
originals' ids. The root finds it (`vidload._storage.SourceRoot.first_existing`): on local disk
by a stat per candidate; at a URL by one listing of each folder (a bucket prefix) per process,
kept with each id's answer; a store that cannot list (HTTP) reads the id's own file. Where a
process read the root's sidecar of heads (`_heads`, a URL root's batches:
`VideoSource.prepare`), the first candidate it lists is taken without a listing: convert
recorded the name this rule found.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import islice
from pathlib import Path

from vidload._layout import ContainerNames, container_name, index_path
from vidload._lru import ProcessLRU
from vidload._storage import Location, SourceRoot
from vidload.sources._heads import HeadRecord, Heads, RootHeads
from vidload.sources._listing import missing_names
from vidload.sources._video_file import VideoHandle, open_video
from vidload.sources._video_persist import UnusableIndex
from vidload.sources._video_remote import VideoFile, load_remote, record_of, warn_whole
from vidload.sources.base import FrameSourceBase, Indices, normalize_video_id

__all__ = ["CONVERTED_SUFFIX", "VideoRoot"]

#: What `vidload convert --to video` adds to a video's stem: MP4, whose pts are exact in the
#: stream's own time base, read by a packet scan.
CONVERTED_SUFFIX = ".mp4"

#: Videos at a URL whose header bytes a process keeps (`_video_remote.VideoFile`: what
#: FFmpeg reads to open the file, an MP4's `moov` (~8 bytes a frame) and its first 32 KiB).
_REMOTE_CACHE_SIZE = 256


class VideoRoot(FrameSourceBase):
    """What `VideoSource` reads its frames from (see the module docstring): its base, holding
    the root, the settings that open a file, and the per-process state of its files
    (`_init_files`)."""

    store: SourceRoot
    root: Location
    threads: int
    stream: int | None
    cache_size: int

    def _init_files(self) -> None:
        """Per-process state (`vidload._lru.ProcessLRU`: empty again after a fork, where
        `VideoHandle.close` parks the parent's handles, unused and unfreed: they share file
        offsets with the parent and their decoders' threads are not here; and in a pickle)."""
        self._handles: ProcessLRU[str, VideoHandle] = ProcessLRU(
            self.cache_size, VideoHandle.close, inherited=VideoHandle.close
        )
        # URL root: each video read by ranges, or why it is downloaded whole
        self._remote: ProcessLRU[str, VideoFile | str] = ProcessLRU(_REMOTE_CACHE_SIZE)
        self._said_whole: ProcessLRU[str, bool] = ProcessLRU(1)
        # URL root: the sidecar of heads (`_heads`: every video's persisted index), once
        self._root_heads = RootHeads()

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
        return self.store.local_copy(self._object_name(normalize_video_id(video_id)))

    def _file(self, video_id: str, wanted: Indices = ()) -> VideoFile:
        """The file a read of `video_id` opens: where the root has a local file for it (a
        local root, or `cache_dir`'s copy), that file; else the object read by byte ranges,
        with the bytes a read of `wanted` needs fetched (the first time, its header too:
        `_video_remote`), or where it cannot be read so (no usable index), its local copy,
        downloaded whole and said so."""
        vid = self._object_name(normalize_video_id(video_id))
        local = self.store.local(vid)
        if local is not None:
            return VideoFile(Location(local))
        found = self._remote.get(vid)
        if found is None:
            found = self._keep_remote(vid, load_remote(self.store.location_of(vid)))
        if not isinstance(found, str):
            try:
                if found.fetch(wanted):  # its record in the sidecar of heads was stale
                    self._root_heads.suspect()  # (`_heads.Heads.suspect`)
                return found
            except UnusableIndex as e:
                self._remote.put(vid, str(e))
                warn_whole(found.location, f"its frame index is not used: {e}")
        return VideoFile(Location(self.store.local_copy(vid)))

    def _object_name(self, vid: str) -> str:
        """The file or object the root reads for the id `vid`: the name the root's manifest
        records (`use_containers`), else the first of `_names(vid)` that exists (where this
        process read a sidecar of heads, the first it lists)."""
        recorded = self.store.named(vid)
        if recorded is not None:
            return recorded
        candidates = list(dict.fromkeys(self._names(vid)))
        heads = self._root_heads.held()
        listed = None if heads is None else next((n for n in candidates if n in heads), None)
        return self.store.first_existing(candidates) if listed is None else listed

    @staticmethod
    def _names(vid: str) -> Iterator[str]:
        """The names the naming rule gives the file of the id `vid` (module docstring), in
        the order they are looked for (lazily: `missing_videos` computes the later ones only
        for ids not found)."""
        yield vid
        yield container_name(vid, CONVERTED_SUFFIX, keep_extension=True)
        yield container_name(vid, CONVERTED_SUFFIX)

    # -- the sidecar of heads (`_heads`, kind "video": each video's persisted index)

    #: The kind of sidecar of heads this source reads and `_heads.write_heads` writes.
    heads_kind = "video"

    def _video_heads(self) -> Heads | None:
        """This process's sidecar of heads of the root (this machine's copy: `_heads.
        read_heads`), None where there is none. Only asked where reads wait on a network
        (`prepare`)."""
        return self._root_heads.get(self.store.location, self.heads_kind, self.store.cache)

    def head_record(self, video_id: str) -> tuple[str, HeadRecord] | None:
        """(object name relative to the root, its record: the persisted index's bytes) for
        the sidecar of heads (`_heads.write_heads`), None where it has no usable index."""
        vid = self._object_name(normalize_video_id(video_id))
        record = record_of(self.store.location_of(vid))
        return None if record is None else (vid, record)

    def use_containers(self, names: Mapping[str, str]) -> bool:
        """Read each video of `names` ({video id: file name relative to the root}, as the
        root's manifest records them: `vidload convert --to video`'s `container` column)
        from that file, with no name guessed or probed on any root, and take the manifest as
        the check of `missing_videos` for them. False (nothing changed) when the names are
        not `--to video`'s (`vidload._layout.ContainerNames.of`). `ClipDataset` calls it
        with the root's manifest."""
        known = ContainerNames.of(names, CONVERTED_SUFFIX)
        if known is not None:
            self.store.use_names(known)
        return known is not None

    def missing_videos(self, video_ids: Sequence[str]) -> list[str]:
        """The ids of `video_ids` with no file under the root, in list order: neither the name
        the root's manifest records (`use_containers`), nor the id's own file nor the video
        `vidload convert --to video` made of it (`path`; a root that cannot list, HTTP, by
        the manifest's word, else the id's own file only); one directory listing per folder
        (per prefix in a bucket), not a stat per video (`vidload.sources._listing`)."""
        rule = self.store.location.can_list  # where `first_existing` can follow it
        names = self._names if rule else lambda vid: islice(self._names(vid), 1)
        return missing_names(self.store.location, video_ids, names, recorded=self.store.named)

    def _keep_remote(self, vid: str, found: VideoFile | str) -> VideoFile | str:
        self._remote.put(vid, found)
        if isinstance(found, str) and not self._said_whole.get("said"):
            self._said_whole.put("said", True)  # once per source and process: all may lack one
            warn_whole(self.store.location_of(vid), f"{found} (nor may other videos here)")
        return found

    def files(self, video_id: str) -> list[Path]:
        """The files a read of `video_id` opens: its video file and, where one was written,
        its persisted frame index (`vidload._layout.index_path`), for read-ahead hints and the
        bytes a storage takes; none for a URL root."""

        def files() -> list[Path]:
            path = self.path(video_id)
            index = index_path(path)
            return [path, index] if index.is_file() else [path]

        return self.store.hints(files)

    @contextmanager
    def _handle(self, path: VideoFile, *, explode: bool = True) -> Iterator[VideoHandle]:
        """An open handle on `path` from this process's cache (reopened if the file changed),
        closed on exit where the cache keeps none (`cache_size=0`).
        Seek reads must see every error the decoder reports (`explode`), except where each
        frame they return is checked against the sequential decode's digest (a persisted
        index of format 3: `_video_index.frame_digest`): that file's handle is reopened once without
        (`explode=False`) and kept so, which spares healthy open GOPs the errors a seek to
        their recovery point reports (a reference list naming frames before the seek)."""
        key = str(path)
        handle = self._handles.get(key)
        if handle is None or handle.stat != path.stat or (handle.explode and not explode):
            handle = self._fresh(path, explode=explode)
            # closes the handle it replaces; not kept with cache_size=0: closed on exit
            self._handles.put(key, handle)
        try:
            yield handle
        finally:
            if self.cache_size == 0:
                handle.close()

    def _fresh(self, path: VideoFile, *, threads: int | None = None, explode: bool) -> VideoHandle:
        """A handle of its own (not cached), positioned at the start of the file: `open_video`
        with this source's stream and (by default) threads."""
        return open_video(
            path.location,
            path.stat,  # before `reader()`, which may fetch the header
            stream=self.stream,
            threads=self.threads if threads is None else threads,
            explode=explode,
            file=path.reader(),
        )
