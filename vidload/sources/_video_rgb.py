"""Decoded video frames to uint8 RGB pixels: as displayed or as stored, at full size or scaled
to a clip's geometry in the one swscale pass from YUV, always converted on the calling thread.
"""

from __future__ import annotations

from collections.abc import Callable

import av
import numpy as np

from vidload.errors import VideoReadError
from vidload.sources._orientation import IDENTITY, Orientation, frame_orientation
from vidload.transforms import ClipGeometry

__all__ = ["converter", "orientation_of", "rgb", "scaled_rgb"]


def converter(
    path: object, *, displayed: bool, geometry: ClipGeometry | None = None
) -> Callable[[av.VideoFrame], np.ndarray]:
    """frame -> uint8 RGB: as displayed (`displayed`: the frame's own display matrix,
    `orientation_of`) or as stored, at full size or with `geometry` (`scaled_rgb`)."""

    def convert(frame: av.VideoFrame) -> np.ndarray:
        orientation = orientation_of(path, frame) if displayed else IDENTITY
        if geometry is not None:
            return scaled_rgb(frame, geometry, orientation)
        return orientation.apply(rgb(frame))

    return convert


def rgb(frame: av.VideoFrame) -> np.ndarray:
    """uint8 (H, W, 3) RGB pixels of `frame`, converted on this thread.

    PyAV's default (threads=0) gives every frame its own swscale context with slice threads,
    started and joined per frame: 48 us of CPU a 340x256 frame against 28 us on this thread
    (`python tools/read_paths.py --only video`), and a frame freed in a forked child would
    wait forever for threads left behind in the parent.
    """
    return frame.to_ndarray(format="rgb24", threads=1)


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
