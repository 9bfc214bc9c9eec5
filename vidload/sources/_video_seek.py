"""Seek-and-decode: the wanted frames of a stream, decoded forward from the keyframe before each
stretch of them, every decoded frame checked against the stream's frame index.

Demuxers land only roughly after a seek (MPEG-PS/TS) or on an earlier keyframe (Matroska with
B-frames), so packets are skipped, undecoded, up to the first that starts a known seek point;
frames are matched to the index by timestamp, never by counting from the seek. Packets of
unwanted frames go to the decoder with skip_frame=NONREF where that is safe (it drops them when
nothing refers to them; the wanted frames' pixels are untouched): an 8-frame read of
mma_test.mp4 took 71 ms of CPU with it, 110 ms without (`python tools/read_paths.py --only
video`).
Any disagreement raises `Mismatch`; `VideoSource` then rebuilds the index from a full decode or
reads sequentially.

The frames a read returns (seeking or sequential) become uint8 RGB pixels here too
(`converter`): as displayed or as stored, at full size or scaled to a clip's geometry in the
one swscale pass from YUV, always converted on the calling thread.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from itertools import chain, islice

import av
import av.error
import numpy as np

from vidload.errors import VideoReadError
from vidload.sources._orientation import IDENTITY, Orientation, frame_orientation
from vidload.sources._video_file import VideoHandle
from vidload.sources._video_index import (
    BadData,
    FrameIndex,
    decode_packets,
    frame_digest,
    frame_key,
    packet_key,
    scanned_packets,
)
from vidload.transforms import ClipGeometry

__all__ = ["Mismatch", "converter", "orientation_of", "read_seeking", "scaled_rgb"]

#: Seek attempts per stretch before decoding from a freshly opened file instead.
_MAX_SEEK_TRIES = 4


class Mismatch(Exception):
    """Decoding after a seek did not reproduce the index (internal; triggers a fallback)."""


def read_seeking(
    handle: VideoHandle,
    index: FrameIndex,
    wanted: list[int],
    convert: Callable[[av.VideoFrame], np.ndarray],
    *,
    skip_nonref: bool,
    check_corrupt: bool = True,
) -> dict[int, np.ndarray]:
    """{frame: convert(frame)} for the `wanted` frames (sorted, distinct): seek to the
    keyframe before each stretch of wanted frames, only when it lies past the decoder's
    position, and decode forward. Raises Mismatch where the decoder disagrees with `index`,
    BadData where the data goes bad: an error the decoder reports, a frame it flags corrupt
    (with `check_corrupt`: it concealed damage it did not report as an error), or a frame that
    differs from the sequential decode's (where `index` has its digests:
    `_video_index.frame_digest`); the caller then falls back to a sequential decode."""
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
                stretch = _seek(handle, index, target, wanted_set, skip_nonref, check_corrupt)
            for pos, frame in stretch:
                next_pos = pos + 1
                if pos == target:
                    if index.digests is not None and frame_digest(frame) != index.digests[pos]:
                        raise BadData(f"frame {pos} decodes to other pixels after a seek")
                    out[pos] = convert(frame)
                    break
                if pos > target:
                    raise Mismatch(f"frame {target} was not decoded")
            else:
                raise Mismatch(f"stream ended before frame {target}")
    finally:
        if stretch is not None:
            stretch.close()
    return out


def _seek(
    handle: VideoHandle,
    index: FrameIndex,
    target: int,
    wanted: set[int],
    skip_nonref: bool,
    check_corrupt: bool,
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
    # each seek point's timestamps, from the one before `target` back to the stream start
    targets = (ts for i in range(first_sp, -1, -1) for ts in index.seek_point(i).seek_targets())
    for ts in islice(targets, _MAX_SEEK_TRIES):
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
        skip = skip_nonref and handle.can_skip_nonref and index.keys_in_order
        return _checked(ctx, index, start, packets, wanted, skip, check_corrupt)
    raise Mismatch("seeking does not land on a known keyframe")


def _first_seek_point(packets: Iterator[av.Packet], index: FrameIndex):
    """Skip (without decoding) to the first packet that starts a seek point of `index`.

    Returns (position decoding resumes at, that packet), or None when the data ends or goes
    bad first (`_video_index.scanned_packets`); `packets` then go on after that packet.
    """
    for packet in scanned_packets(packets):
        start = index.landing_pos(packet_key(packet.pts, packet.dts))
        if start is not None:
            return start, packet
    return None


def _checked(
    ctx,
    index: FrameIndex,
    start: int,
    packets,
    wanted: set[int],
    skip_nonref: bool,
    check_corrupt: bool,
) -> Generator[tuple[int, av.VideoFrame], None, None]:
    """(position, frame) pairs decoded from `packets`, which begin at position `start`.

    Frames of the index placed before `start` (leading frames of an open GOP) are skipped;
    every other frame must carry the key of the next position, or the index is wrong:
    Mismatch. With `check_corrupt`, a frame the decoder flags corrupt (`VideoFrame.is_corrupt`:
    FFmpeg concealed damage in it, which `err_detect=explode` does not always report) raises
    BadData: its concealment may depend on frames decoded before the seek. With `skip_nonref`,
    packets of unwanted frames go to the decoder with skip_frame=NONREF: it drops them if no
    other frame refers to them, and only their positions may be missing from the output.
    """
    droppable: set[int | None] = set()
    skipping = False
    ctx.skip_frame = "DEFAULT"

    def on_packet(packet: av.Packet) -> None:
        nonlocal skipping
        pos = index.pos_of(packet_key(packet.pts, packet.dts))
        skip = pos is not None and pos not in wanted
        if skip:
            droppable.add(pos)
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
                raise Mismatch(f"decoded frame at position {pos}, expected {expected}")
            if check_corrupt and frame.is_corrupt:
                raise BadData(f"the decoder flags frame {pos} corrupt (damage it concealed)")
            yield pos, frame
            expected = pos + 1
    finally:
        if skipping:
            ctx.skip_frame = "DEFAULT"


def converter(
    path: object, *, displayed: bool, geometry: ClipGeometry | None = None
) -> Callable[[av.VideoFrame], np.ndarray]:
    """frame -> uint8 RGB: as displayed (`displayed`: the frame's own display matrix,
    `orientation_of`) or as stored, at full size or with `geometry` (`scaled_rgb`).

    Converted on the calling thread (`threads=1`, here and in `scaled_rgb`). PyAV's default
    (threads=0) gives every frame its own swscale context with slice threads, started and
    joined per frame: 48 us of CPU a 340x256 frame against 28 us on this thread (`python
    tools/read_paths.py --only video`), and a frame freed in a forked child would wait forever
    for threads left behind in the parent.
    """

    def convert(frame: av.VideoFrame) -> np.ndarray:
        orientation = orientation_of(path, frame) if displayed else IDENTITY
        if geometry is not None:
            return scaled_rgb(frame, geometry, orientation)
        return orientation.apply(frame.to_ndarray(format="rgb24", threads=1))

    return convert


def scaled_rgb(
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


def orientation_of(path: object, frame: av.VideoFrame) -> Orientation:
    found = frame_orientation(frame)
    if found is None:
        raise VideoReadError(
            path,
            f"display matrix rotates by {frame.rotation} degrees, not a multiple of 90: "
            f"VideoSource cannot apply it (pass rotation='ignore' for the stored pixels)",
        )
    return found
