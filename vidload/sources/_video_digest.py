"""A digest of each decoded frame, so that a seek read can tell a picture the sequential decode
never gave: damage the decoder conceals without a word.

FFmpeg's `err_detect=explode` stops a seek read at every error the decoder reports
(`_video_decode`), but some damage is reported by nothing: bytes changed inside a frame's slice
data decode to other pixels, silently concealed, and the concealment after a seek (which starts
at a keyframe, with no earlier frames to borrow from) differs from the sequential decode's. An
exact frame index written to disk (`_video_persist`: `vidload probe --write-index`, `vidload
convert --to video`) therefore records `frame_digest` of every frame of the single-threaded
sequential decode, and a seek read compares each frame it returns with it
(`_video_seek.read_seeking`): a frame that differs marks the file damaged, and the read is
redone sequentially.

The digest is the CRC-32 of every plane's visible bytes (row padding left out: it holds
whatever the buffer pool left there), chained over the planes: the same decoder on the same
bytes gives the same pixels, hence the same digest, and any pixel that differs changes it
(missed with probability 2**-32). 4 bytes a frame. It costs 0.055 ms a frame at 340x256,
0.095 ms at 640x360, 0.4 ms at 1280x720, against 0.7, 0.7 and 1.6-3.4 ms to decode such a
frame (H.264, VP8; `python tools/damage_check_cost.py` measures these and a read's share).
A seek read pays it only for the frames it returns; recording pays it for every frame, once,
when the index is written.
"""

from __future__ import annotations

import zlib

import av
import numpy as np

__all__ = ["DIGEST_BYTES", "frame_digest"]

#: Bytes a frame's digest takes in an index.
DIGEST_BYTES = 4


def frame_digest(frame: av.VideoFrame) -> int:
    """CRC-32 of the visible bytes of `frame`'s planes (see the module docstring)."""
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
