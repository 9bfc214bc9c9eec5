"""Where each frame of one video stream is, and the one decode loop every read goes through.

A `FrameIndex` lists the frames of a stream in the order a sequential decode outputs them, each
identified by a *key* (its pts, or its dts when it has no pts), plus the keyframe packets a
decode can restart from (`SeekPoint`). It is built one of two ways:

* `index_from_packets`: a demux-only scan, no decoding. Frame i is taken to be the packet with
  the i-th smallest pts. Cheap, but a guess: it is checked against the decoder on every read.
* `IndexRecorder`: records a full sequential decode. Its count is the truth (`exact=True`).

`decode_packets` is the single decode loop shared by sequential decoding (`decode_all`) and
seek-and-decode (`_video_seek`), so both stop at the same place when the data goes bad.
`frame_digest` is what an index written to disk records of each frame.

Damaged files. The frames of a video are those a single-threaded sequential decode gives, up
to where it stops: the decoder's own error concealment included, stopping at a corrupt packet,
a demux error or a decode error. `read`, `iter_frames` and `actual_frames` all give these frames,
whatever `threads`:

* Seek-and-decode reads run the decoder with `err_detect=explode`, so that any error (also one
  the decoder would conceal) stops them (where a persisted index has each frame's digest, the
  digests check every frame returned instead: `frame_digest`); a read that meets one marks
  the file damaged, and every read of it from then on is a single-threaded sequential decode
  (no seeking, no skipped frames: concealment depends on the frames decoded before). Without
  an error the two modes give the same pixels.
* A sequential decode with threads (`threads` 0 or > 1) also runs with `err_detect=explode`:
  threaded decoders stop at a different frame than a single-threaded one (frames in flight,
  errors reported late). At an error it carries on from a single-threaded decode of the file,
  so the frames and the count are those of the single-threaded decode (`decode_all`).
"""

from __future__ import annotations

import bisect
import zlib
from array import array
from collections.abc import Generator, Iterable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from itertools import islice, pairwise
from typing import Any, Literal, Protocol

import av
import av.error
import numpy as np

from vidload.errors import VideoReadError
from vidload.sources._video_file import VideoHandle, ffmpeg_words


def frame_digest(frame: av.VideoFrame) -> int:
    """CRC-32 of the visible bytes of `frame`'s planes, so that a seek read can tell a picture
    the sequential decode never gave: damage the decoder conceals without a word.

    FFmpeg's `err_detect=explode` stops a seek read at every error the decoder reports
    (module docstring), but some damage is reported by nothing: bytes changed inside a frame's
    slice data decode to other pixels, silently concealed, and the concealment after a seek
    (which starts at a keyframe, with no earlier frames to borrow from) differs from the
    sequential decode's. An exact frame index written to disk (`_video_persist`: `vidload
    probe --write-index`, `vidload convert --to video`) therefore records the digest of every
    frame of the single-threaded sequential decode, and a seek read compares each frame it
    returns with it (`_video_seek.read_seeking`): a frame that differs marks the file damaged,
    and the read is redone sequentially.

    The digest is the CRC-32 of every plane's visible bytes (row padding left out: it holds
    whatever the buffer pool left there), chained over the planes: the same decoder on the
    same bytes gives the same pixels, hence the same digest, and any pixel that differs
    changes it (missed with probability 2**-32). 4 bytes a frame. It costs 0.055 ms a
    frame at 340x256, 0.095 ms at 640x360, 0.4 ms at 1280x720, against 0.7, 0.7 and 1.6-3.4
    ms to decode such a frame (H.264, VP8; `python tools/damage_check_cost.py` measures these
    and a read's share). A seek read pays it only for the frames it returns; recording pays it
    for every frame, once, when the index is written.
    """
    components = frame.format.components
    sample = 2 if any(c.bits > 8 for c in components) else 1
    crc = 0
    for p, plane in enumerate(frame.planes):
        per_pixel = sample * max(1, sum(1 for c in components if c.plane == p))
        height, line = plane.height, plane.line_size
        row = min(plane.width * per_pixel, line)
        data = memoryview(plane)[: height * line]
        if row < line:  # the padding at the end of each row left out
            data = memoryview(np.frombuffer(data, np.uint8).reshape(height, line)[:, :row].copy())
        crc = zlib.crc32(data, crc)
    return crc


@dataclass(frozen=True)
class SeekPoint:
    """A packet a decode can start from.

    Attributes:
        pos: output position of the first frame a decode started here yields (0 for the first
            packet of the stream; the keyframe's own position for a keyframe).
        pts, dts: the packet's timestamps (stream time base); candidates for `container.seek`.
    A packet is recognised by its key (`packet_key`): demuxers do not always restore a
    packet's dts after a seek (Matroska), but its pts they do.
    """

    pos: int
    pts: int | None
    dts: int | None

    def seek_targets(self) -> list[int]:
        """Timestamps to try with a backward seek, most precise first (deduplicated)."""
        return list(dict.fromkeys(ts for ts in (self.pts, self.dts) if ts is not None))


_NONE = -(2**63)  # stands for a missing timestamp in the int64 arrays below


def _lookup(sorted_keys: array, values: array | None, key: int | None) -> int | None:
    """values[i] (or i) where sorted_keys[i] == key; None if key is absent."""
    if key is None:
        return None
    i = bisect.bisect_left(sorted_keys, key)
    if i < len(sorted_keys) and sorted_keys[i] == key:
        return i if values is None else values[i]
    return None


class FrameIndex:
    """Frames of one stream in sequential-decode output order, stored compactly (int64 arrays,
    about 24 bytes a frame) so that a process can keep thousands.

    Attributes:
        num_frames: frames in the index (the true count when `exact`).
        keys: key of each frame, in output order; None when the frames cannot be told apart by
            timestamps (missing or repeated), in which case only sequential decoding is exact.
        exact: built from a full decode (True) or guessed from a packet scan (False).
        seekable: False once seeking failed to reproduce sequential decoding for this stream.
        digests: `frame_digest` of each frame of the single-threaded sequential
            decode (uint32, in output order), where they were recorded (an index written to
            disk); a seek read checks the frames it returns against them. None elsewhere.
    """

    def __init__(
        self,
        num_frames: int,
        keys: Sequence[int] | None,
        exact: bool,
        seek_points: Sequence[SeekPoint],
        digests: Sequence[int] | None = None,
    ) -> None:
        self.num_frames = num_frames
        self.exact = exact
        if digests is not None and len(digests) != num_frames:
            raise ValueError(f"{len(digests)} digests for {num_frames} frames")
        self.digests = array("I", digests) if digests is not None else None
        self.keys = array("q", keys) if keys is not None else None
        if keys is not None and any(a >= b for a, b in pairwise(keys)):
            order = sorted(range(len(keys)), key=keys.__getitem__)
            self._sorted_keys = array("q", (keys[i] for i in order))
            self._key_pos: array | None = array("q", order)
        else:  # keys in output order are already sorted: position = rank
            self._sorted_keys, self._key_pos = self.keys or array("q"), None
        points = sorted(seek_points, key=lambda sp: sp.pos)
        self._seek_pos = array("q", (sp.pos for sp in points))
        self._seek_pts = array("q", (_NONE if sp.pts is None else sp.pts for sp in points))
        self._seek_dts = array("q", (_NONE if sp.dts is None else sp.dts for sp in points))
        landing = sorted(
            (key, sp.pos) for sp in points if (key := packet_key(sp.pts, sp.dts)) is not None
        )
        self._landing_keys = array("q", (k for k, _ in landing))
        self._landing_pos = array("q", (p for _, p in landing))
        self.seekable = self.keys is not None and len(points) > 0

    def __repr__(self) -> str:
        return (
            f"FrameIndex(num_frames={self.num_frames}, exact={self.exact}, "
            f"seekable={self.seekable}, seek_points={list(self._seek_pos)}, "
            f"digests={self.digests is not None})"
        )

    @property
    def seek_points(self) -> list[SeekPoint]:
        """Where a decode can restart, sorted by `pos`; the first is the stream start."""
        return [self.seek_point(i) for i in range(len(self._seek_pos))]

    def seek_point(self, i: int) -> SeekPoint:
        pts, dts = self._seek_pts[i], self._seek_dts[i]
        return SeekPoint(
            self._seek_pos[i], None if pts == _NONE else pts, None if dts == _NONE else dts
        )

    def seek_point_before(self, pos: int) -> int:
        """Number of the last seek point with `pos` <= the given position (0 if none)."""
        return max(bisect.bisect_right(self._seek_pos, pos) - 1, 0)

    @property
    def keys_in_order(self) -> bool:
        """Whether frames come out of the decoder in increasing key order. Not so where the
        container guesses pts (AVI with B-frames): there each frame carries the pts of the
        packet it was decoded from, in decode order."""
        return self._key_pos is None

    def pos_of(self, key: int | None) -> int | None:
        """Output position of the frame with this key; None if no frame has it."""
        return _lookup(self._sorted_keys, self._key_pos, key)

    def landing_pos(self, key: int | None) -> int | None:
        """If `key` is that of a seek point's packet: the position decoding from it resumes at."""
        return _lookup(self._landing_keys, self._landing_pos, key)


def packet_key(pts: int | None, dts: int | None) -> int | None:
    """The timestamp that identifies a frame: pts, else dts, else None."""
    return pts if pts is not None else dts


def frame_key(frame: av.VideoFrame) -> int | None:
    """The key of a decoded frame (see `packet_key`)."""
    return packet_key(frame.pts, frame.dts)


def _seek_points(
    packets: list[tuple[int | None, int | None, bool]], keys: Sequence[int]
) -> list[SeekPoint]:
    """Stream start plus every keyframe packet whose frame is in the index (`keys`, in output
    order), sorted by position."""
    if not packets:
        return []
    key_to_pos: dict[int | None, int] = {k: i for i, k in enumerate(keys)}
    first_pts, first_dts, _ = packets[0]
    points = {0: SeekPoint(0, first_pts, first_dts)}
    for pts, dts, is_key in packets[1:]:
        if not is_key:
            continue
        pos = key_to_pos.get(packet_key(pts, dts))
        if pos is not None and pos > 0 and pos not in points:
            points[pos] = SeekPoint(pos, pts, dts)
    return [points[p] for p in sorted(points)]


def scanned_packets(packets: Iterable[av.Packet]) -> Iterator[av.Packet]:
    """The packets of a stream's demux (`container.demux(stream)`) that carry data for the
    decoder (not the demuxer's empty flush packet), without decoding, up to the first corrupt
    packet or demux error: where the data goes bad, and decoding stops at the same place."""
    try:
        for packet in packets:
            if packet.is_corrupt:
                return
            if packet.size > 0:
                yield packet
    except av.error.FFmpegError:
        return


def index_from_packets(container: av.container.InputContainer, stream) -> FrameIndex | None:
    """Guess the index from a demux-only scan (no decoding); None if it cannot be guessed.

    Frame i is the packet with the i-th smallest pts. Needs every packet to carry a distinct
    pts; the scan stops at the first corrupt packet or demux error, as decoding does.
    """
    scan = IndexRecorder()
    for packet in scanned_packets(container.demux(stream)):
        scan.on_packet(packet)
        if not packet.is_discard:  # decoded for reference, output dropped
            scan.keys.append(packet.pts)
    index = scan.index(exact=False)
    return index if index.keys is not None and index.num_frames else None


def _flush(ctx) -> list[av.VideoFrame]:
    try:
        return ctx.decode(None)
    except av.error.FFmpegError:
        return []


class BadData(Exception):
    """Decoding met bad data (internal: `decode_packets(..., on_error="raise")`)."""


def decode_packets(
    ctx,
    packets: Iterable[av.Packet],
    on_packet=None,
    *,
    on_error: Literal["flush", "stop", "raise"] = "flush",
) -> Generator[av.VideoFrame, None, bool]:
    """Frames decoded from `packets`, in output order, until the data ends or goes bad.

    The data goes bad at a packet flagged corrupt, a demux error or a decode error. Then, by
    `on_error`: "flush" stops there and flushes out the frames already decoded (sequential
    decoding: every read agrees on where a file ends); "stop" stops without flushing (frames
    still in a threaded decoder's pipeline may be damaged); "raise" raises BadData.
    `on_packet(packet)` is called on each packet that is decoded. Returns (as a generator's
    return value) whether the data went bad.
    """
    it = iter(packets)
    while True:
        reason = None
        try:
            packet = next(it)
        except StopIteration:
            yield from _flush(ctx)  # a no-op when the demuxer's flush packet came last
            return False
        except av.error.FFmpegError as e:
            reason = f"demux error: {ffmpeg_words(e)}"
        else:
            if packet.is_corrupt:
                reason = "corrupt packet"
        if reason is None:
            if on_packet is not None:
                on_packet(packet)
            try:
                frames = ctx.decode(packet)
            except av.error.EOFError:
                return False  # the decoder was already drained
            except av.error.FFmpegError as e:
                reason = f"decode error: {ffmpeg_words(e)}"
        if reason is not None:
            if on_error == "raise":
                raise BadData(reason)
            if on_error == "flush":
                yield from _flush(ctx)
            return True
        yield from frames


class IndexRecorder:
    """Watches a full sequential decode and builds the exact `FrameIndex` from it; with
    `digests`, each frame's `frame_digest` too (a single-threaded decode's: what
    an index written to disk keeps)."""

    def __init__(self, *, digests: bool = False) -> None:
        self.packets: list[tuple[int | None, int | None, bool]] = []
        self.keys: list[int | None] = []
        self.digests: list[int] | None = [] if digests else None

    def on_packet(self, packet: av.Packet) -> None:
        if packet.size > 0:
            self.packets.append((packet.pts, packet.dts, packet.is_keyframe))

    def on_frame(self, frame: av.VideoFrame) -> None:
        self.keys.append(frame_key(frame))
        if self.digests is not None:
            self.digests.append(frame_digest(frame))

    def index(self, *, exact: bool = True) -> FrameIndex:
        """The index of the frames seen: a full decode's (`exact`: `keys` in output order),
        else a packet scan's (`keys` the packets' pts: frame i has the i-th smallest); without
        keys where a frame has none or two share one."""
        present = [k for k in self.keys if k is not None]
        if len(present) != len(self.keys) or len(set(present)) != len(present):
            return FrameIndex(len(self.keys), None, exact, [], self.digests)
        keys = present if exact else sorted(present)
        return FrameIndex(len(keys), keys, exact, _seek_points(self.packets, keys), self.digests)


class Fresh(Protocol):
    """Opens a handle of its own on the video, positioned at its start (`VideoSource._fresh`)."""

    def __call__(self, *, threads: int | None = None, explode: bool) -> VideoHandle: ...


def decode_all(
    fresh: Fresh, where: object, threads: int, recorder: IndexRecorder | None = None
) -> Iterator[av.VideoFrame]:
    """Every frame of the chosen stream that a single-threaded sequential decode gives, from
    freshly opened files (`fresh`; `where` names the file in errors), in output order (see the
    module docstring); `recorder` sees every packet decoded and every frame. A recorder of
    digests (`IndexRecorder(digests=True)`) is given a single-threaded decode: the digests are
    those of the frames a seek read must match."""
    recorder = IndexRecorder() if recorder is None else recorder  # the count checked below
    yielded = 0
    if threads != 1 and recorder.digests is None:
        fast = IndexRecorder()  # sees every frame yielded
        went_bad = yield from _decode_file(fresh, where, threads, fast, on_error="stop")
        yielded = len(fast.keys)
        if not went_bad:
            recorder.packets, recorder.keys = fast.packets, fast.keys
            return
    frames = _decode_file(fresh, where, 1, recorder, on_error="flush")
    with closing(frames):  # its file closed here, however this decode ends
        yield from islice(frames, yielded, None)  # past those the threaded decode gave
    if len(recorder.keys) < yielded:
        raise VideoReadError(
            where,
            f"a {threads}-thread decode gave {yielded} frames before it met bad data, "
            f"a single-threaded one only {len(recorder.keys)}",
        )


def _decode_file(
    fresh: Fresh, where: object, threads: int, recorder: IndexRecorder, on_error: Any
) -> Generator[av.VideoFrame, None, bool]:
    """decode_packets on a fresh handle with `threads` (explode unless single-threaded), each
    packet and frame shown to `recorder`; returns whether the data went bad."""
    handle = fresh(threads=threads, explode=threads != 1)
    try:
        packets = handle.container.demux(handle.stream)
        ctx = handle.stream.codec_context
        frames = decode_packets(ctx, packets, recorder.on_packet, on_error=on_error)
        try:
            while True:
                try:
                    frame = next(frames)
                except StopIteration as stop:
                    return stop.value
                recorder.on_frame(frame)
                yield frame
        finally:
            frames.close()
    except av.error.FFmpegError as e:
        raise VideoReadError(where, f"decoding failed: {ffmpeg_words(e)}") from e
    finally:
        handle.close()
