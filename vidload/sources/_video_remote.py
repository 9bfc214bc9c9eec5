"""A video file as a read opens it (`VideoFile`), written once against its `Location`: a local
file (`Location.local_file()`) is opened by FFmpeg by path; a video object at a URL is read by
byte ranges: its header once per process, then only the packets a clip needs, through a file
object FFmpeg reads from.

A video with a persisted frame index of format 2 or 3 (`_video_persist`: what `vidload convert --to
video` writes beside each file, and `vidload probe --write-index` beside originals) says where
its bytes lie (`_video_ranges.ByteLayout`). Read over a URL, a clip of a video never opened in
this process costs two rounds of requests:

1. the sidecar (`<url>.vidload-index`, one GET);
2. in one round of concurrent range requests (`Location.read_ranges`): the bytes FFmpeg reads
   to open the file (an MP4's `ftyp` and `moov`, and the first 32 KiB), and the packets the
   clip's frames need (`_video_ranges.clip_ranges`: from the keyframe before each frame to the
   frame). The sidecar holds a digest of the object's size and those opening bytes, checked
   before anything is decoded: an object rewritten since (another `moov`) is not read through
   it.

Where the root has a sidecar of heads (`vidload.sources._heads`: `vidload convert --to video`
writes every video's persisted index into `manifest-heads.npz` beside the manifest, read once per
process), round 1 is not needed: `from_record` builds the video from its record, and the round
of step 2 also fetches the record's check spans (its first and last 4 KiB), so a batch of
never-opened videos is one round (`VideoSource.prepare`). The object must show the record's size
and digest there and then the index's own digest; one rewritten since the sidecar was written
is opened from its own index instead (`VideoFile.fetch`), so a stale record never meets new
bytes.

The header's bytes are kept for the process (`VideoFile`, in the source's per-process cache),
so a later clip of the same video is one round: its packets. FFmpeg reads the object through a
`RangeReader`, a read-only file object that serves reads from the bytes held; a read of bytes
not held (a file whose demuxer reads more than was recorded, a sequential decode of the whole
video: `iter_frames`) is fetched there and then as one range request of at least `MISS_FETCH`
bytes, counted (`VideoFile.misses`, and `vidload._storage.STATS` as every request), never a
silent download of the whole object.

Where this cannot be used (no sidecar, a format 1 sidecar without byte positions, one that does
not describe the object: rewritten since), `VideoSource` downloads the object whole, as before,
and says so in a warning (`warn_whole`).

An object rewritten while a process holds its header (a dataset re-converted in place) is
noticed by the next read that fetches its bytes: the video's reads go through a versioned
location (`Location.versioned`), whose GETs report the object's version (ETag) and must all
report the one its header came with; another one (`faults.CHANGED`) makes the video open again
(`VideoFile.reopen`: sidecar, then header, checked as the first time) and fetch the clip
from the new object, so an old header never meets new bytes. Its `stat` changes with it, so
the source's caches of that video (open handles, frame counts) start again. (A read that
fetches nothing, all its bytes held from the last clip, sees the video as it was.)
"""

from __future__ import annotations

import collections
import warnings
from typing import Any

from vidload._layout import INDEX_SUFFIX
from vidload._storage import Location, coalesce
from vidload._storage.cache import RangeFile
from vidload._storage.faults import CHANGED
from vidload._storage.ranges import Block, cut
from vidload.errors import VideoReadError, VidloadError
from vidload.sources._heads import HeadRecord, check_spans, head_record
from vidload.sources._video_persist import PersistedIndex, UnusableIndex, load_index, parse_index
from vidload.sources._video_ranges import SHORT_GAP, ByteLayout, clip_ranges, span_digest
from vidload.sources.base import check_regular_file

__all__ = [
    "MISS_FETCH",
    "RangeReader",
    "VideoFile",
    "from_record",
    "load_remote",
    "record_of",
    "warn_whole",
]

Ranges = list[tuple[int, int]]

#: The least a reader fetches for a read of bytes it does not hold.
MISS_FETCH = 256 << 10
#: A range past the end of any sidecar: the whole object in one GET.
_WHOLE = 1 << 40
#: Blocks fetched on a miss that a video keeps (older ones are dropped: a sequential decode
#: of a long video must not keep it all in memory).
_MISS_BLOCKS = 8


class VideoFile:
    """A video file at `location` as a read opens it, asking the location for a local file
    (`local_file()`: under a local root, or an object's copy in the cache): FFmpeg opens
    that path, and its persisted index is the sidecar beside it (`_video_persist.load_index`,
    checked when asked for). Elsewhere the video is read by byte ranges (module docstring),
    through `persisted`, its index of format 2 or 3, the object being `size` bytes.

    Read by ranges, it holds the bytes fetched so far: the header (what opening the file
    reads; kept), the last clip's packets (replaced by the next clip's) and the last few
    blocks fetched on a miss. `str()` is the path or the URL (without credentials), for error
    messages and the source's caches. Per process: never pickled, dropped after a fork with
    the source's caches.
    """

    def __init__(
        self,
        location: Location,
        persisted: PersistedIndex | None = None,
        size: int = 0,
        check: HeadRecord | None = None,
    ) -> None:
        #: The local file FFmpeg opens, None: read by byte ranges.
        self.path = location.local_file()
        self._missed: collections.deque[Block] = collections.deque(maxlen=_MISS_BLOCKS)
        self._opened(location.versioned(), persisted, size)
        #: Requests sent for reads of bytes not held (see the module docstring).
        self.misses = 0
        #: Times this video was opened again after its object changed (`reopen`).
        self.generation = 0
        #: The index came from the sidecar of heads (`from_record`): its `_heads.HeadRecord`,
        #: whose check spans the header's round also fetches (None once verified or opened
        #: from the object's own index).
        self.check = check

    def _opened(self, location: Location, persisted: PersistedIndex | None, size: int) -> None:
        """Read `location` (`size` bytes) through `persisted`, holding no byte yet."""
        self.location, self.persisted, self.size = location, persisted, size
        self.verified = False
        #: A read met another version of the object: open it again before the next one.
        self._stale = False
        self._header: list[Block] = []
        self._clip: list[Block] = []
        self._missed.clear()

    def __str__(self) -> str:
        return str(self.location)

    @property
    def layout(self) -> ByteLayout:
        """Where the bytes lie (a video read by ranges: `load_remote` checked it has one)."""
        assert self.persisted is not None and self.persisted.layout is not None
        return self.persisted.layout

    @property
    def stat(self) -> tuple[int, int]:
        """(st_mtime_ns, st_size) of a local file (VideoReadError for a missing or irregular
        one: a FIFO would block av.open forever); read by ranges, what stands for it in the
        source's caches: it changes when the video is opened again on a changed object
        (`reopen`)."""
        if self.path is not None:
            st = check_regular_file(self.path)
            return (st.st_mtime_ns, st.st_size)
        return (self.generation, self.size)

    def persisted_index(self, stream_index: int) -> PersistedIndex | None:
        """The persisted index of the video, where it is for `stream_index` (a local file's
        is checked against the file now; one read by ranges had its digest checked when the
        header was fetched), else None, said in a warning."""
        if self.path is not None:
            return load_index(self.path, stream_index)
        assert self.persisted is not None
        return self.persisted.for_stream(stream_index, f"{self}{INDEX_SUFFIX}")

    # -- fetching

    def fetch(self, wanted: Any = ()) -> bool:
        """Hold the bytes a read of the `wanted` frames needs (and, the first time, the header),
        fetching what is not held in one round of concurrent range requests. Returns whether
        its record in the sidecar of heads was stale (it was opened from its own index then).

        Raises:
            UnusableIndex: the first time (or after the object changed), when the digest of
                the object's size and opening bytes is not the one the sidecar describes (the
                object was rewritten since), or the changed object has no usable sidecar.
            VideoReadError: a request failed (naming the URL).
        """
        if self._stale:
            self.reopen()
        try:
            self._fetch(wanted)
        except (UnusableIndex, VideoReadError) as e:
            # from the sidecar of heads, which is stale: open it from the object's own index
            from_sidecar, self.check = self.check is not None, None
            if not from_sidecar and (isinstance(e, UnusableIndex) or e.reason != CHANGED):
                raise
            self.reopen()
            self._fetch(wanted)
            return from_sidecar
        return False

    def reopen(self) -> None:
        """Open the video again from its sidecar as it is now, dropping every byte held: its
        object changed since its header was read (see the module docstring).

        Raises:
            UnusableIndex: the object has no usable sidecar now (the caller downloads it).
        """
        found = load_remote(self.location)
        if isinstance(found, str):
            raise UnusableIndex(f"it was rewritten since it was opened, and {found}")
        self._opened(found.location, found.persisted, found.size)
        self.generation += 1

    def _fetch(self, wanted: Any) -> None:
        header, kept, missing, needed = self._plan(wanted)
        got = self.location.read_ranges(needed) if needed else []  # all held: no request
        blocks = [(a, a + len(data), data) for (a, _), data in zip(needed, got, strict=True)]
        if not self.verified:
            self._verify(blocks)
            self._header = sorted(b for b in blocks if any(_overlaps(b, r) for r in header))
        self._clip = sorted(kept + [b for b in blocks if any(_overlaps(b, r) for r in missing)])

    def needed(self, wanted: Any = ()) -> list[tuple[int, int]]:
        """The [start, stop) ranges `fetch(wanted)` would request now (none when all is held):
        what a batch fetches ahead for it (`VideoSource.fetch_plan`); none while it must be
        opened again (its own read does that)."""
        return [] if self._stale else self._plan(wanted)[3]

    def _plan(self, wanted: Any) -> tuple[Ranges, list[Block], Ranges, Ranges]:
        """(header ranges to fetch, clip blocks kept, clip ranges missing, ranges to request)."""
        assert self.persisted is not None
        clip = clip_ranges(self.layout, self.persisted.index, wanted) or []
        header = [] if self.verified else coalesce(self.layout.opened + self._check_spans(), 0)
        kept = [b for b in self._clip if any(_overlaps(b, r) for r in clip)]
        missing = [r for r in clip if cut(self._header + kept, *r) is None]
        return header, kept, missing, coalesce(missing + header, SHORT_GAP)

    def _check_spans(self) -> Ranges:
        return [] if self.check is None else check_spans(self.check.size)

    def _verify(self, blocks: list[Block]) -> None:
        if self.check is not None:  # the sidecar of heads' check: size and both ends
            ends = [cut(blocks, a, b) for a, b in self._check_spans()]
            if any(e is None for e in ends) or not self.check.checks([e or b"" for e in ends]):
                raise UnusableIndex("the sidecar of heads describes another file: rewritten since")
            self.check = None
        spans = [cut(blocks, a, b) for a, b in self.layout.opened]
        if any(span is None for span in spans):  # the object ends before them
            found = f"{self.location.name} is shorter now"
        else:
            digest = span_digest(self.size, [span or b"" for span in spans])
            found = f"{self.location.name} now has {digest[:12]} there"
            if digest == self.layout.digest:
                self.verified = True
                return
        raise UnusableIndex(
            f"it describes another file (size {self.size}, opening bytes "
            f"{self.layout.digest[:12]}; {found}): rewritten since"
        )

    # -- reading

    def reader(self) -> RangeReader | None:
        """A new file object over this video read by ranges (the header fetched first if it
        is not held); None for a local file: FFmpeg opens the path itself."""
        if self.path is not None:
            return None
        if not self.verified:
            self.fetch()
        return RangeReader(self)

    def bytes_at(self, pos: int, stop: int) -> bytes:
        """Bytes [pos, stop): up to `stop` of the held block that contains `pos` (short at
        its end), else of a range of at least `MISS_FETCH` bytes fetched now."""
        n = stop - pos
        for blocks in (self._clip, self._header, self._missed):
            for start, end, data in blocks:
                if start <= pos < end:
                    return data[pos - start : pos - start + n]
        self.misses += 1
        try:
            data = self.location.read_range(pos, min(self.size, pos + max(n, MISS_FETCH)))
        except VideoReadError as e:
            if e.reason == CHANGED:  # this read fails; the next one opens the video again
                self._stale = True
            raise
        if data:
            self._missed.append((pos, pos + len(data), data))
        return data[:n]


def _overlaps(block: Block, r: tuple[int, int]) -> bool:
    return block[0] < r[1] and r[0] < block[1]


class RangeReader(RangeFile):
    """A `RangeFile` over a `VideoFile`, for `av.open`: each read is served from the bytes the
    video holds (possibly short: up to the end of a held block; FFmpeg asks again), and bytes
    not held are fetched then (`VideoFile.bytes_at`)."""

    def __init__(self, video: VideoFile) -> None:
        super().__init__(video.location, video.size, [])
        self.video = video

    def _bytes(self, start: int, stop: int) -> bytes:
        return self.video.bytes_at(start, stop)


def load_remote(location: Location) -> VideoFile | str:
    """The `VideoFile` of the object at `location`, from its sidecar (one GET), or the
    reason it cannot be read by byte ranges (no sidecar, format 1, unreadable).

    Raises:
        VideoReadError: the sidecar could not be read for another reason than its absence.
    """
    sidecar = location.with_name(location.name + INDEX_SUFFIX)
    try:
        # as a range: s3fs sends a HEAD (the size) before a whole-object GET, a second round
        raw = sidecar.read_range(0, _WHOLE)
    except VideoReadError as e:
        if e.reason == "not found":
            return "it has no persisted frame index"
        raise
    return _ranged(location, raw)


def _ranged(location: Location, raw: bytes, check: HeadRecord | None = None) -> VideoFile | str:
    """The `VideoFile` of the object at `location` read by byte ranges through the sidecar
    `raw` (the object's size the one it describes), or the reason it cannot be read so."""
    try:
        persisted, size, _ = parse_index(raw)
        if persisted.layout is None:
            return "its frame index (format 1) does not say where the packets lie"
    except UnusableIndex as e:
        return f"its frame index is not used: {e}"
    return VideoFile(location, persisted, size, check)


def record_of(location: Location) -> HeadRecord | None:
    """The record of the video at `location` for the sidecar of heads (`_heads.write_heads`,
    what `vidload convert --to video` writes): its persisted index's bytes (format 2 or 3), with the
    object's size and the digest of its ends read now; None where it has no such index or the
    index describes another size (what `from_record` refuses), or they cannot be read."""
    try:
        raw = location.with_name(location.name + INDEX_SUFFIX).read_bytes()
        record = head_record(location, {}, {})
    except VidloadError:
        return None
    record.raw = raw
    return record if from_record(location, record) is not None else None


def from_record(location: Location, record: HeadRecord) -> VideoFile | None:
    """The `VideoFile` of the object at `location` from its record in the sidecar of heads
    (no request), its check pending: the header's round fetches the record's check spans too,
    and a video whose object fails the check (or the index's own digest) is opened from its
    own index instead (`VideoFile.fetch`). None where the record holds no usable index."""
    found = None if record.raw is None else _ranged(location, record.raw, record)
    return found if isinstance(found, VideoFile) and found.size == record.size else None


def warn_whole(location: Location, reason: str) -> None:
    """Say that a video object is downloaded whole, and why."""
    warnings.warn(
        f"{location}: {reason}; the whole object is downloaded before its first frame "
        f"(write the index with `vidload probe --write-index`, or convert with --to video, "
        f"so that a clip fetches only its byte ranges)",
        stacklevel=4,
    )
