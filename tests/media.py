"""Test media generated with PyAV: each frame has its own index painted into its pixels.

The index is written as 12 bits, one bit per cell of a 4 x 3 grid covering the frame
(bright cell = 1, dark cell = 0), so it survives lossy codecs and chroma subsampling and
`frame_number(rgb)` reads it back from any decoded frame.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np

GRID_COLS, GRID_ROWS = 4, 3
BITS = GRID_COLS * GRID_ROWS


def paint(index: int, width: int = 128, height: int = 96) -> np.ndarray:
    """uint8 (height, width, 3) RGB frame whose grid encodes `index` (0 <= index < 4096)."""
    if not 0 <= index < 2**BITS:
        raise ValueError(f"index ({index}) must be in [0, {2**BITS})")
    img = np.empty((height, width, 3), np.uint8)
    ch, cw = height // GRID_ROWS, width // GRID_COLS
    for bit in range(BITS):
        r, c = divmod(bit, GRID_COLS)
        on = (index >> bit) & 1
        img[r * ch : (r + 1) * ch, c * cw : (c + 1) * cw] = (220, 200, 180) if on else (30, 50, 70)
    # a little index-dependent texture in the bottom rows so consecutive frames differ in detail
    img[GRID_ROWS * ch :, :] = (index * 7) % 256
    return img


def frame_number(rgb: np.ndarray) -> int:
    """Read back the index painted by `paint` from a decoded uint8 (H, W, 3) frame."""
    h, w = rgb.shape[:2]
    ch, cw = h // GRID_ROWS, w // GRID_COLS
    value = 0
    for bit in range(BITS):
        r, c = divmod(bit, GRID_COLS)
        cell = rgb[r * ch + ch // 4 : (r + 1) * ch - ch // 4, c * cw + cw // 4 : (c + 1) * cw - cw // 4]
        if cell.mean() > 125:
            value |= 1 << bit
    return value


def make_video(
    path: str | Path,
    num_frames: int,
    *,
    codec: str = "libx264",
    width: int = 128,
    height: int = 96,
    fps: int = 25,
    pix_fmt: str = "yuv420p",
    options: dict[str, str] | None = None,
) -> Path:
    """Encode `num_frames` painted frames with `codec` into `path` (container from the suffix)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as out:
        stream = out.add_stream(codec, rate=Fraction(fps))
        stream.width, stream.height, stream.pix_fmt = width, height, pix_fmt
        if options:
            stream.options = dict(options)
        for i in range(num_frames):
            frame = av.VideoFrame.from_ndarray(paint(i, width, height), format="rgb24")
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return path


def sequential_decode(path: str | Path, stream_index: int = 0) -> list[np.ndarray]:
    """Every frame of video stream `stream_index`, decoded in order, as uint8 (H, W, 3) RGB."""
    with av.open(str(path)) as container:
        stream = container.streams.video[stream_index]
        return [f.to_ndarray(format="rgb24") for f in container.decode(stream)]
