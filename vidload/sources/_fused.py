"""Decode JPEG frames straight to a clip's geometry: the fused path of the container sources.

The clip's plan is resolved against the first frame's JPEG header (H, W). Each distinct frame
is decoded at the largest DCT scale 1/s (s in 1, 2, 4, 8) whose box is still at least the output
size in both dimensions (so decoding never leaves less detail than the output needs, and
nothing is upsampled after a reduced decode), then its box is cut, resized and flipped straight
into the (k, out_h, out_w, 3) output. The scaling skips most of the inverse DCT and colour
conversion work a full-size decode followed by a resize would do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from vidload._scratch import Scratch
from vidload.sources.jpeg_decode import decode_clip, jpeg_size
from vidload.transforms import ClipGeometry, Resolved, resize_into, scale_box

__all__ = ["decode_geometry", "decode_size_for", "empty_clip"]

#: Where `decode_geometry` decodes before resizing (per process and thread; see `_scratch`).
_DECODED = Scratch()


def empty_clip(height: int, width: int, geometry: ClipGeometry | None) -> np.ndarray:
    """uint8 (0, h, w, 3): what reading no frames of a `height` x `width` video returns."""
    if geometry is not None and height and width:
        height, width = geometry.resolve(height, width).out
    return np.empty((0, height, width, 3), np.uint8)


def decode_size_for(height: int, width: int, resolved: Resolved) -> tuple[int, int]:
    """The minimum decode size (for `decode_jpeg(size=)`) that keeps `resolved.box` at least
    `resolved.out` in both dimensions: a frame of H' >= ceil(H * out_h / box_h) rows has a box
    of box_h * H' / H >= out_h rows (likewise for the width)."""
    _, _, box_h, box_w = resolved.box
    out_h, out_w = resolved.out
    return (
        min(height, math.ceil(out_h * height / box_h)),
        min(width, math.ceil(out_w * width / box_w)),
    )


def decode_geometry(
    buffers: Sequence[bytes | bytearray | memoryview | np.ndarray],
    geometry: ClipGeometry,
    *,
    order: Sequence[int] | np.ndarray,
    paths: Sequence[str] | str,
    indices: Sequence[int] | np.ndarray,
    scratch: Scratch | None = None,
) -> np.ndarray:
    """Decode `buffers[order[j]]` for every j, with `geometry` applied, into one array.

    Args:
        buffers: the encoded frames (complete JPEGs, all of one size).
        geometry: the clip's plan, resolved against the first ordered buffer's header size.
        order: output frame j is `buffers[order[j]]`; a buffer named twice is decoded once.
        paths: the file of each buffer (or one file for all), for errors.
        indices: the frame index of each buffer, for errors.
        scratch: put the result in this thread's buffer of a `vidload._scratch.Scratch`
            (overwritten by its next use) instead of a new array.

    Returns:
        uint8 (k, out_h, out_w, 3) RGB. The reduced-scale decode before the resize is only an
        intermediate, so it always goes into this module's own `Scratch` (`_DECODED`).

    Raises:
        VideoReadError: a bad buffer (see `decode_jpeg`), or frames of differing sizes.
    """
    order_list = order if isinstance(order, list) else np.asarray(order).tolist()
    first = order_list[0]
    path = paths if isinstance(paths, str) else paths[first]
    height, width = jpeg_size(buffers[first], path=path, index=int(indices[first]))
    resolved = geometry.resolve(height, width)
    # every named buffer once, in the order of first use, at the reduced scale, straight into
    # one array (`decode_clip` checks that all frames have one size; the arguments are a
    # source's `EncodedFrames`, checked); then cut, resize and flip into the output
    size = decode_size_for(height, width, resolved)
    once = list(dict.fromkeys(order_list))
    decoded = decode_clip(buffers, once, paths, indices, size, _DECODED)
    box = scale_box(resolved.box, (height, width), decoded.shape[1:3])
    shape = (len(order_list), *resolved.out, 3)
    out = np.empty(shape, np.uint8) if scratch is None else scratch.array(shape)
    first_at: dict[int, int] = {}
    for j, b in enumerate(order_list):
        seen = first_at.setdefault(b, j)
        if seen != j:  # a buffer named again: copy its output frame
            out[j] = out[seen]
        else:  # the len(first_at)-th buffer of first use: its slot of `decoded`
            resize_into(decoded[len(first_at) - 1], box, resolved, out[j])
    return out
