"""A clip's encoded frames, as a container source's raw read returns them, and their decode.

Every container source (`JpegSource`, `Hdf5Source`, `NpySource`: a `ContainerSource`) reads a
clip in two steps: `read_encoded(video_id, indices)` does all the storage work and returns an
`EncodedFrames` (the stored JPEG bytes of each distinct frame), and `read` is that followed by
`EncodedFrames.decode`, the one decode they share (`jpeg_decode.decode_clip`, or the fused
geometry path `_fused.decode_geometry`). `vidload bench` times the two steps apart by calling
these same functions.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from vidload._checks import check_positive_number
from vidload._layout import ContainerNames, container_name
from vidload._lru import ProcessLRU
from vidload._scratch import Scratch
from vidload._storage import Location, SourceRoot
from vidload._storage.batch import Request, run_concurrently
from vidload.errors import VideoReadError, VidloadError
from vidload.sources._docs import shared_docs
from vidload.sources._fused import decode_geometry, empty_clip
from vidload.sources._heads import HeadRecord, Heads, RootHeads, check_spans, head_record
from vidload.sources._listing import missing_names
from vidload.sources._timestamps import container_timestamps
from vidload.sources.base import (
    SMALL_CLIP,
    FrameSourceBase,
    Indices,
    as_index_array,
    check_in_range,
    hints_of,
)
from vidload.sources.jpeg_decode import check_size, decode_clip, jpeg_size
from vidload.transforms import ClipGeometry

__all__ = ["ContainerSource", "EncodedFrames", "distinct_frames", "read_spans"]

Buffer = bytes | np.ndarray
T = TypeVar("T")

#: Where `ContainerSource.read_transient` decodes (per process and thread; see `_scratch`).
_CLIP = Scratch()


@dataclass(frozen=True, eq=False)
class EncodedFrames:
    """The stored bytes of a clip's frames, nothing decoded.

    Attributes:
        buffers: one complete JPEG per distinct frame, in increasing frame order: `bytes`, or a
            read-only uint8 (n,) view of the file (`NpySource`: its rows are decoded where they
            lie, never copied).
        frames: int64 (n,) the frame index of each buffer.
        order: int64 (k,) the clip in the order asked: frame j is `buffers[order[j]]`. An empty
            clip (k = 0) of a video with frames still carries frame 0 in `buffers`, whose header
            gives the frame size of the empty result.
        paths: the file of each buffer, or one file for all (errors name it).
        nbytes_read: bytes the read took from storage: the buffers, or more where the layout
            reads more (the whole file for `NpySource(mode="read")`).
    """

    buffers: Sequence[Buffer]
    frames: np.ndarray
    order: np.ndarray
    paths: Sequence[str] | str
    nbytes_read: int

    def clip_bytes(self) -> list[bytes]:
        """The clip's frames as `bytes`, in the order asked (a copy of each)."""
        return [bytes(self.buffers[b]) for b in self.order.tolist()]

    def decode(
        self,
        *,
        geometry: ClipGeometry | None = None,
        size: tuple[int, int] | None = None,
        scratch: Scratch | None = None,
    ) -> np.ndarray:
        """The clip decoded: uint8 (k, H, W, 3) RGB in the order asked, at `size` (a minimum
        (height, width) reached by DCT scaling, `jpeg_decode.reduced_size`); with a
        `geometry`, uint8 (k, out_h, out_w, 3) by the fused path and `size` is not used.
        With a `scratch` (`vidload._scratch.Scratch`) the result lies in its buffer and is
        overwritten by its next use; else it is a new array, the caller's.

        Raises:
            VideoReadError: a buffer that is not a complete, decodable JPEG, or frames of
                differing sizes (naming the file and frame).
        """
        order = self.order.tolist()  # a list, tested and passed on: ~10 us a clip less
        if not order:
            if not self.buffers:
                return np.empty((0, 0, 0, 3), np.uint8)
            path = self.paths if isinstance(self.paths, str) else self.paths[0]
            h, w = jpeg_size(self.buffers[0], path=path, index=int(self.frames[0]))
            return empty_clip(h, w, geometry)
        if geometry is not None:
            buffers, paths = self.buffers, self.paths
            return decode_geometry(
                buffers, geometry, order=order, paths=paths, indices=self.frames, scratch=scratch
            )
        if size is not None:
            check_size("size", size)
        return decode_clip(self.buffers, order, self.paths, self.frames, size, scratch)


def distinct_frames(
    indices: np.ndarray,
    available: int,
    video_id: str | None = None,
    reported: int | None | Callable[[], int | None] = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(frames, order) of a clip: its distinct frame indices, increasing, and where each of
    `indices` is among them (`frames[order] == indices`). For an empty clip: frame 0 when the
    video has any (`available` > 0; see `EncodedFrames.order`), and an empty order. With a
    `video_id` (a source's per-clip call), first `check_in_range` of a video of `available`
    frames (`reported` as there), in the same pass over the indices."""
    wanted = indices.tolist()
    if video_id is not None and wanted and max(wanted) >= available:
        check_in_range(video_id, indices, available, reported)
    if len(wanted) > SMALL_CLIP:
        frames, order = np.unique(indices, return_inverse=True)
        return frames, order.reshape(-1)
    if not wanted:
        return np.arange(min(available, 1), dtype=np.int64), np.empty(0, np.int64)
    # a clip's few indices: sorted(set()) and a dict, ~3 us against ~9 us for np.unique
    distinct = sorted(set(wanted))
    position = {f: k for k, f in enumerate(distinct)}
    return (
        np.array(distinct, dtype=np.int64),
        np.array([position[f] for f in wanted], dtype=np.int64),
    )


def read_spans(location: Location, spans: list[tuple[int, int]], frames: list[int]) -> list[bytes]:
    """The stored bytes of `frames`, each the [start, stop) of `spans` in `location`, fetched
    in one round (`Location.read_ranges`); VideoReadError naming the frame whose span the
    object ends before."""
    got = location.read_ranges(spans)
    for i, data, (a, b) in zip(frames, got, spans, strict=True):
        if len(data) != b - a:
            raise VideoReadError(
                location, f"object ended after {len(data)} of the frame's {b - a} bytes", i
            )
    return got


@shared_docs
class ContainerSource(FrameSourceBase):
    """What the container sources share: where a video's container is, and `read` as
    `read_encoded` followed by the shared decode (one code path for all of them).

    A subclass sets `suffix` (".h5", ".npy"; "" for a frame folder), calls `__init__` with
    its root (`vidload._storage.SourceRoot`) and implements `read_encoded`.

    The root may be a URL: `store` (a `vidload._storage.SourceRoot`) finds a video's
    container and opens it by the local fast path (a local root, or the cached copy of a
    remote object) or by byte ranges (`_open_container`). A subclass never asks which.
    """

    suffix: str = ""

    def __init__(
        self, store: SourceRoot, *, decode_size: tuple[int, int] | None, fps: float | None
    ) -> None:
        check_size("decode_size", decode_size)
        self.decode_size = decode_size
        self.fps = None if fps is None else check_positive_number("fps", fps)
        #: Where the containers are (`SourceRoot(root, storage_options, cache_dir,
        #: cache_max_bytes)`, built by the subclass from its own arguments).
        self.store: SourceRoot = store
        #: The root folder or URL (a local one is path-like: `vidload._storage.LocalLocation`).
        self.root: Location = self.store.location
        #: This process's sidecar of heads of the root (`_sidecar`).
        self._root_heads = RootHeads()
        #: Heads from the sidecar waiting for their check (`settle`), by video id: those of
        #: the batch being read and of the next one planned before it decodes
        #: (`vidload._dataset.batch`); a batch's that is never read is dropped after
        #: `_PENDING` others (its videos are taken from the sidecar again when they come).
        self._pending_heads: ProcessLRU[str, tuple[Location, HeadRecord, object]] = ProcessLRU(
            _PENDING
        )

    def path(self, video_id: str) -> Path:
        """The container of `video_id`: `root/<id without video extension><suffix>` (see
        `vidload._layout.container_path`); a local root only (a URL root: `_open_container`;
        ValueError)."""
        return Path(self.store.local_name(video_id, self.suffix))

    def use_containers(self, names: Mapping[str, str]) -> bool:
        """Read each video of `names` ({video id: container name relative to the root}, as
        the root's manifest records them: `vidload.manifest.ManifestRow.container`) from
        its container by that name, with no name guessed or probed on any root, and take
        the manifest as the check of `missing_videos` for them. False (nothing changed)
        when the names are not this kind's containers (`vidload._layout.ContainerNames.of`).
        `ClipDataset` calls it with the root's manifest."""
        known = ContainerNames.of(names, self.suffix)
        if known is not None:
            self.store.use_names(known)
        return known is not None

    def missing_videos(self, video_ids: Sequence[str]) -> list[str]:
        """The ids of `video_ids` with no container under the root (by either name
        `vidload._layout` gives it: `a/x1.h5` or `a/x1.mp4.h5` for `a/x1.mp4`, or by the
        name the manifest records: `use_containers`), in list order; one directory listing
        per folder (per prefix in a bucket), not a stat per video
        (`vidload.sources._listing`); where the root cannot list (HTTP), the manifest's
        word for the videos it names."""
        return missing_names(
            self.store.location, video_ids, self._container_names, recorded=self.store.named
        )

    def _container_names(self, video_id: str) -> Iterator[str]:
        """The names `vidload._layout` gives `video_id`'s container, in the order they are
        looked for in a bucket: without the video extension (`a/x1.h5`), then with it
        (`a/x1.mp4.h5`, where two inputs share a stem); the second only when asked for."""
        short = container_name(video_id, self.suffix)
        yield short
        full = container_name(video_id, self.suffix, keep_extension=True)
        if full != short:
            yield full

    def files(self, video_id: str) -> list[Path]:
        """The files a read of `video_id` opens (for read-ahead hints): its container file;
        none for a URL root (nothing local to hint)."""
        return self.store.hints(lambda: [self.path(video_id)])

    def byte_ranges(self, video_id: str, indices: Indices) -> list[tuple[Path, int, int]]:
        """`(path, offset, length)` ranges of the files `read(video_id, indices)` touches, for
        read-ahead hints (length 0: a whole file): what a bucket batch would fetch for it
        (`_plan`, the one planner of a kind's reads) with what opening it reads
        (`_read_ahead`), merged where they touch (`hints_of`). Indices out of range are left
        out (the read reports them). None for a URL root (nothing local to hint)."""
        idx = as_index_array(indices)
        return self.store.hints(lambda: hints_of(self._read_ahead(video_id, idx)))

    def _read_ahead(self, video_id: str, idx: np.ndarray) -> list[Request]:
        """The requests a local read of `idx` makes, opening included: by default the whole
        files it opens (`files`); a kind that plans its reads adds its head's spans to
        `_plan`'s."""
        return [(Location(p), None) for p in self.files(video_id)]

    def _open_container(self, video_id: str, open_at: Callable[[Location], T]) -> T:
        """`open_at(location)` of `video_id`'s container: a local file (`local_file()`) under
        a local root or in the cache, else the object in the bucket
        (`vidload._storage.SourceRoot.open_container`: in a bucket the name without the video
        extension is tried first, a local root looks for the full id's name first)."""
        return self.store.open_container(video_id, self.suffix, open_at)

    def _container(self, video_id: str) -> Location:
        """Where `video_id`'s container is named: its local path, or its object in the bucket
        (the name found by the last open, else the name without the video extension); for
        its sidecar files (`_timestamps`)."""
        return self.store.container(video_id, self.suffix)

    # -- a batch in one round (`vidload._dataset.batch`)

    def prepare(self, video_ids: Sequence[str]) -> None:
        """Open what a read needs first (frame table, header, listing) for the videos of
        `video_ids` this process has not opened yet, all at once: one concurrent round for
        a batch instead of one per video (`ClipDataset.__getitems__`). A failure is left for
        the video's own read to raise. Nothing to do where reads do not wait on a network
        (a local root, a cached one).

        Where the root has a sidecar of heads (`vidload.sources._heads`, read once per
        process) that lists a video's container, its head is taken from there instead,
        pending the check its batch's round fetches with the frames (`settle`): no round
        before the frames."""
        if not self.store.reads_wait:  # nothing to open ahead
            return
        pending = self._pending_heads  # kept until settled: a next batch's may be planned
        ahead = dict.fromkeys(video_ids)
        todo = [v for v in ahead if not self._head_known(v) and pending.get(v) is None]
        if not todo:
            return
        heads = self._sidecar() if self.heads_kind is not None else None
        if heads is not None:
            todo = [v for v in todo if not self._pend_from(heads, v, pending)]
            if todo:  # listed nowhere in it: the sidecar may be older than the data
                heads.suspect()
        if not todo:
            return
        found = run_concurrently(self._try_fetch_head, todo)
        for vid, head in zip(todo, found, strict=True):
            if head is not None:
                self._keep_head(vid, head)

    def fetch_plan(self, video_id: str, indices: Indices) -> list[Request]:
        """The storage requests `read_encoded(video_id, indices)` will make, as
        `(location, [(start, stop), ...] or None for the whole object)`, when its head is
        open (`prepare`) and its reads wait on a network; else [] (the read finds its own).
        A head pending its check (from the sidecar) adds the check's spans. Indices past the
        end are left out: the read reports them."""
        return self._planned(video_id, as_index_array(indices)) if self.store.reads_wait else []

    def _planned(self, video_id: str, idx: np.ndarray) -> list[Request]:
        pending = self._pending_heads.get(video_id)
        if pending is not None:
            location, record, head = pending
            return [*self._plan(video_id, idx, head), (location, check_spans(record.size))]
        if not self._head_known(video_id):
            return []
        return self._plan(video_id, idx, None)

    def settle(self, video_ids: Sequence[str]) -> None:
        """Check the heads of `video_ids` taken from the sidecar against the bytes the batch's
        round fetched (`vidload._dataset.batch`: inside `holding`, so no request is sent): a
        container unchanged since the sidecar was written keeps its head, as if opened; one
        rewritten since is opened by its own read, as without a sidecar."""
        pending = self._pending_heads
        items = [(v, got) for v in dict.fromkeys(video_ids) if (got := pending.get(v))]
        for vid, (location, record, head) in items:
            pending.discard(vid)
            self._settle_one(vid, location, record, head)

    def _settle_one(
        self, video_id: str, location: Location, record: HeadRecord, head: object
    ) -> bool:
        """Keep `head`, `video_id`'s from the sidecar, as if opened where `location`'s bytes
        check `record` (`_head_checks`); else note the sidecar suspect (the container was
        rewritten since it was: it may be too, asked at the next batch). Whether kept."""
        if self._head_checks(location, record, head):
            self._keep_head(video_id, head)
            return True
        self._root_heads.suspect()
        return False

    def _head_checks(self, location: Location, record: HeadRecord, head: object) -> bool:
        """Whether the bytes fetched at `location`'s `check_spans` are the record's (`settle`;
        a failed read is left for the item's own read to meet)."""
        try:
            spans = location.read_ranges(check_spans(record.size))
        except VidloadError:
            return False
        return record.checks(spans)

    def _sidecar(self) -> Heads | None:
        """This process's sidecar of heads of the root (`_heads.RootHeads`: this machine's
        copy, fetched by the first process that needs it; asked again where this process
        noted it suspect), None where there is none."""
        assert self.heads_kind is not None
        return self._root_heads.get(self.store.location, self.heads_kind, self.store.cache)

    def _pend_from(self, heads: Heads, video_id: str, pending: ProcessLRU) -> bool:
        """Take `video_id`'s head from the sidecar, pending its check; False where the sidecar
        does not list its container (by the name the manifest records, else the short name
        first, as `_open_container`)."""
        full = container_name(video_id, self.suffix, keep_extension=True)
        recorded = self.store.named(video_id)
        for name in (recorded,) if recorded is not None else self._container_names(video_id):
            record = heads.get(name)
            if record is None:
                continue
            got = self._pending_of(video_id, name, record)
            if got is None:
                return False
            self.store.found_names[full] = name  # as an open that found it there
            pending.put(video_id, (got[0], record, got[1]))
            return True
        return False

    def _pending_of(
        self, video_id: str, name: str, record: HeadRecord
    ) -> tuple[Location, object] | None:
        """(the object whose `check_spans` check `record`, the head `_keep_head` keeps) for
        the container `name`, None where the record is not usable."""
        location = self.store.location / name
        head = self._head_of_record(location, record)
        return None if head is None else (location, head)

    def _head_of_record(self, location: Location, record: HeadRecord) -> object | None:
        """What `_keep_head` keeps, made from a sidecar's record (None: not usable)."""
        return None

    def head_record(self, video_id: str) -> tuple[str, HeadRecord] | None:
        """(container name relative to the root, its record) for the sidecar of heads
        (`_heads.write_heads`), None where the container does not open or has nothing to
        record. Opens the container as a read would (local or in a bucket)."""
        try:
            fields = self._head_fields(video_id)
            if fields is None:
                return None
            name = self.store.container_key(video_id, self.suffix, _opened)
            return name, head_record(self.store.location / name, *fields)
        except VidloadError:
            return None

    def _head_fields(self, video_id: str) -> tuple[dict, dict, np.ndarray | None] | None:
        """(int fields, float fields, frame lengths) of the head `_head_of_record` rebuilds."""
        return None

    def _try_fetch_head(self, video_id: str) -> object | None:
        try:
            return self._fetch_head(video_id)
        except VidloadError:
            return None

    # -- a container's head: what a read opens first
    #
    # A kind whose reads open a head sets `_open_head` and `_heads`, this process's heads of
    # the containers it opened (npy's header, HDF5's open file and frame table) by
    # `SourceRoot.handle_key`. A head tells its counts (`reported`, `actual`), the frame rate
    # the container stores (`fps`, None for none) and where frames lie (`spans(frames)`: their
    # [start, stop) in the container, None where they cannot be read as byte ranges).

    _heads: ProcessLRU[str, Any]

    def _open_head(self, location: Location) -> Any:
        """The head of the container at `location` (a local file, or an object), validated."""
        raise NotImplementedError

    def _close_head(self, head: Any) -> None:
        """Release what a head holds (an open file) when it leaves `_heads` or is not kept."""

    def _head(self, video_id: str) -> Any:
        """`video_id`'s head: this process's (`_heads`), else opened and kept (or, where
        `_heads` keeps none, released: its fields stay readable)."""
        key = self.store.handle_key(video_id, self.suffix)
        return self._heads.get(key) or self._open_container(video_id, partial(self._head_at, key))

    def _head_at(self, key: str, location: Location) -> Any:
        """The head kept under `key`, else that of the container at `location`, kept."""
        head = self._heads.get(key)
        if head is None:
            head = self._open_head(location)
            self._keep(key, head)
        return head

    def _keep(self, key: str, head: Any) -> None:
        if not self._heads.put(key, head):
            self._close_head(head)

    def _head_known(self, video_id: str) -> bool:
        return self._heads.get(self.store.handle_key(video_id, self.suffix)) is not None

    def _fetch_head(self, video_id: str) -> Any:
        """What `_keep_head` keeps, fetched from storage (run in a thread: no shared state)."""
        return self._open_container(video_id, self._open_head)

    def _keep_head(self, video_id: str, head: Any) -> None:
        self._keep(self.store.handle_key(video_id, self.suffix), head)

    def _plan(self, video_id: str, idx: np.ndarray, head: Any | None) -> list[Request]:
        """The requests of a read of `idx`, with `head` (pending its check) or the head kept:
        the spans of its distinct frames (`spans`); none where the head is not open."""
        head = head or self._heads.get(self.store.handle_key(video_id, self.suffix))
        if head is None:
            return []
        frames = distinct_frames(idx[idx < head.actual], head.actual)[0]
        spans = head.spans(frames) if frames.size else None
        return [(self._container(video_id), spans)] if spans else []

    def reported_frames(self, video_id: str) -> int | None:
        """The count the container's head claims (`_head`)."""
        return self._head(video_id).reported

    def actual_frames(self, video_id: str) -> int:
        """The frames the container holds (`_head`)."""
        return self._head(video_id).actual

    #: How to give the frame rate a container without stored times lacks (`timestamps`).
    _NO_FPS = "pass fps="

    def timestamps(self, video_id: str) -> np.ndarray:
        """float64 (actual_frames,) seconds: the times `vidload convert` stored beside the
        container (`<container>.timestamps`), else frame i at i / fps (`fps`, else the rate
        the container stores: its head's; a kind without heads takes an `fps` always)."""
        fps = self.fps if self.fps is not None else self._head(video_id).fps
        actual = self.actual_frames(video_id)
        return container_timestamps(self._container(video_id), actual, fps, self._NO_FPS)

    @abstractmethod
    def read_encoded(self, video_id: str, indices: Indices) -> EncodedFrames:
        """<<read_encoded>>"""

    def read(
        self, video_id: str, indices: Indices, *, geometry: ClipGeometry | None = None
    ) -> np.ndarray:
        """<<read_container>>"""
        encoded = self.read_encoded(video_id, indices)
        return encoded.decode(geometry=geometry, size=self.decode_size)

    def read_transient(
        self, video_id: str, indices: Indices, *, geometry: ClipGeometry | None = None
    ) -> np.ndarray:
        """`read`, but into memory reused by this process and thread (`_CLIP`, a
        `vidload._scratch.Scratch`): the same frames, overwritten by this thread's next
        `read_transient` of any container source. For a caller that only copies the frames
        out (`ClipDataset` builds its tensor from them), never to hand to a user. A subclass
        that overrides `read` is read by its own `read` (`FrameSourceBase.read_transient`)."""
        if type(self).read is not ContainerSource.read:
            return super().read_transient(video_id, indices, geometry=geometry)
        encoded = self.read_encoded(video_id, indices)
        return encoded.decode(geometry=geometry, size=self.decode_size, scratch=_CLIP)


#: Heads from the sidecar waiting for their check, at most (`_pending_heads`): many batches.
_PENDING = 4096


def _opened(name: str) -> None:
    """`SourceRoot.container_key`'s probe for a container already opened (its name is kept):
    never called there."""
