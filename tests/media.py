"""Test media generated with PyAV: each frame has its own index painted into its pixels.

The index is written as 12 bits, one bit per cell of a 4 x 3 grid covering the frame
(bright cell = 1, dark cell = 0), so it survives lossy codecs and chroma subsampling and
`frame_number(rgb)` reads it back from any decoded frame.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import av.error
import numpy as np

GRID_COLS, GRID_ROWS = 4, 3
BITS = GRID_COLS * GRID_ROWS

VIDEOS_ENV = "VIDLOAD_TEST_VIDEOS"


def shared_videos() -> Path:
    """The folder of real clips for the real-clip tests: $VIDLOAD_TEST_VIDEOS when set, else
    `../shared/videos` beside the repository. Use with `real_clip`, which skips when absent."""
    env = os.environ.get(VIDEOS_ENV)
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1].parent / "shared" / "videos"


def real_clip(name: str):
    """`pytest.mark.skipif` for a test that needs `shared_videos() / name`."""
    import pytest

    path = shared_videos() / name
    return pytest.mark.skipif(
        not path.is_file(), reason=f"{path} not present (set ${VIDEOS_ENV} to a folder with it)"
    )


def paint(index: int, width: int = 128, height: int = 96) -> np.ndarray:
    """uint8 (height, width, 3) RGB frame whose grid encodes `index` (0 <= index < 4096)."""
    if not 0 <= index < 2**BITS:
        raise ValueError(f"index ({index}) must be in [0, {2**BITS})")
    img = np.zeros((height, width, 3), np.uint8)  # zeros: the grid may not cover every column
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
        cell = rgb[
            r * ch + ch // 4 : (r + 1) * ch - ch // 4, c * cw + cw // 4 : (c + 1) * cw - cw // 4
        ]
        if cell.mean() > 125:
            value |= 1 << bit
    return value


def make_video(path: str | Path, num_frames: int, **options: Any) -> Path:
    """Encode `num_frames` painted frames into `path` (container from the suffix): frames 0 ..
    num_frames-1 of `encode_frames`, which takes the same keyword `options`."""
    return encode_frames(path, range(num_frames), **options)


def rgb(frame: av.VideoFrame) -> np.ndarray:
    """uint8 (H, W, 3) RGB pixels of a decoded frame, converted on one thread (PyAV's default
    starts swscale threads for every frame: slow, and they must not outlive a fork)."""
    return frame.to_ndarray(format="rgb24", threads=1)


def sequential_decode(path: str | Path, stream_index: int = 0) -> list[np.ndarray]:
    """Every frame of video stream `stream_index`, decoded in order, as uint8 (H, W, 3) RGB."""
    with av.open(str(path)) as container:
        stream = container.streams.video[stream_index]
        return [rgb(f) for f in container.decode(stream)]


def encode_frames(
    path: str | Path,
    indices: Sequence[int],
    *,
    pts: Sequence[int] | None = None,
    time_base: Fraction | None = None,
    codec: str = "libx264",
    width: int = 128,
    height: int = 96,
    fps: int = 25,
    pix_fmt: str = "yuv420p",
    options: dict[str, str] | None = None,
    container_options: dict[str, str] | None = None,
) -> Path:
    """Encode frames painted with `indices` into `path`, frame j at timestamp `pts[j]` in
    `time_base` (default: j / fps). Irregular `pts` make a variable-frame-rate video; a first
    pts > 0 makes a video with a non-zero start time."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if pts is not None and len(pts) != len(indices):
        raise ValueError(f"pts ({len(pts)}) and indices ({len(indices)}) differ in length")
    with av.open(str(path), "w", options=container_options or {}) as out:
        stream = _add_video_stream(out, codec, width, height, fps, pix_fmt, options, time_base)
        for j, index in enumerate(indices):
            frame = av.VideoFrame.from_ndarray(paint(index, width, height), format="rgb24")
            if pts is not None:
                frame.pts = int(pts[j])
                frame.time_base = stream.codec_context.time_base
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return path


def _add_video_stream(out, codec, width, height, fps, pix_fmt, options, time_base=None):
    stream = out.add_stream(codec, rate=Fraction(fps))
    stream.width, stream.height, stream.pix_fmt = width, height, pix_fmt
    if time_base is not None:
        stream.codec_context.time_base = time_base
        stream.time_base = time_base
    if options:
        stream.options = dict(options)
    return stream


def make_two_stream_video(
    path: str | Path,
    counts: tuple[int, int],
    *,
    sizes: tuple[tuple[int, int], tuple[int, int]] = ((96, 64), (128, 96)),
    offsets: tuple[int, int] = (0, 1000),
    codec: str = "libx264",
    fps: int = 25,
) -> Path:
    """A file with two video streams: stream s has counts[s] frames of size sizes[s]
    (width, height), frame i painted with offsets[s] + i."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as out:
        streams = [
            _add_video_stream(out, codec, w, h, fps, "yuv420p", {"g": "12"}) for w, h in sizes
        ]
        for i in range(max(counts)):
            for s, stream in enumerate(streams):
                if i < counts[s]:
                    w, h = sizes[s]
                    img = paint(offsets[s] + i, w, h)
                    frame = av.VideoFrame.from_ndarray(img, format="rgb24")
                    for packet in stream.encode(frame):
                        out.mux(packet)
        for stream in streams:
            for packet in stream.encode(None):
                out.mux(packet)
    return path


def make_audio_only(path: str | Path, seconds: float = 0.5, rate: int = 8000) -> Path:
    """A file with one audio stream (a sine tone) and no video stream."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as out:
        stream = out.add_stream("pcm_s16le", rate=rate, layout="mono")
        t = np.arange(int(seconds * rate)) / rate
        samples = (np.sin(2 * np.pi * 440 * t) * 8000).astype(np.int16)[None, :]
        frame = av.AudioFrame.from_ndarray(samples, format="s16", layout="mono")
        frame.sample_rate = rate
        for packet in stream.encode(frame):
            out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return path


def truncate_copy(src: str | Path, dst: str | Path, fraction: float) -> Path:
    """Copy the first `fraction` of the bytes of `src` to `dst` (a truncated download)."""
    data = Path(src).read_bytes()
    dst = Path(dst)
    dst.write_bytes(data[: int(len(data) * fraction)])
    return dst


def video_packets(path: str | Path) -> list[tuple[int, int, bool]]:
    """(byte position, size, is_keyframe) of every packet of the first video stream."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        return [(p.pos, p.size, p.is_keyframe) for p in container.demux(stream) if p.size]


def damage_copy(src: str | Path, dst: str | Path, packet: int, *, seed: int, nbytes: int = 64):
    """Copy `src` to `dst` with `nbytes` random bytes written over the middle of video packet
    `packet` (the damage of a partial download, inside the data: demuxing still works)."""
    pos, size, _ = video_packets(src)[packet]
    nbytes = min(nbytes, size // 2)
    at = pos + size // 4
    data = bytearray(Path(src).read_bytes())
    data[at : at + nbytes] = (
        np.random.default_rng(seed).integers(0, 256, nbytes, np.uint8).tobytes()
    )
    Path(dst).write_bytes(bytes(data))
    return Path(dst)


def decode_until_bad(path: str | Path, stream_index: int = 0) -> list[np.ndarray]:
    """Like `sequential_decode`, but stops where the data goes bad (a corrupt packet, a demux
    or decode error) and keeps the frames decoded before it: the frames of a truncated file.
    Single-threaded, with the decoder's own error concealment: the reference for damaged files."""
    frames: list[np.ndarray] = []
    with av.open(str(path)) as container:
        stream = container.streams.video[stream_index]
        stream.codec_context.thread_count = 1
        packets = container.demux(stream)
        while True:
            try:
                packet = next(packets)
                if packet.is_corrupt:
                    raise av.error.InvalidDataError(0, "corrupt packet")
                decoded = stream.codec_context.decode(packet)
            except StopIteration:
                break
            except av.error.FFmpegError:
                try:
                    decoded = stream.codec_context.decode(None)
                except av.error.FFmpegError:
                    decoded = []
                frames += [rgb(f) for f in decoded]
                break
            frames += [rgb(f) for f in decoded]
    return frames


def corrupt_middle(jpeg: bytes, span: int = 16) -> bytes:
    """`jpeg` with `span` bytes in the middle of its entropy-coded data XOR-ed with 0x5A: the
    SOI, headers and EOI are intact, so only a decoder that reports corrupt data notices."""
    sos = jpeg.index(b"\xff\xda")
    start = sos + 2 + int.from_bytes(jpeg[sos + 2 : sos + 4], "big")  # after the SOS header
    end = len(jpeg) - 2  # before the EOI
    if end - start < 2 * span:
        raise ValueError(f"entropy-coded data ({end - start} bytes) too short to corrupt")
    mid = (start + end) // 2 - span // 2
    bad = bytearray(jpeg)
    for k in range(mid, mid + span):
        bad[k] ^= 0x5A
    assert bad[:2] == b"\xff\xd8" and bad[-2:] == b"\xff\xd9"
    return bytes(bad)


def paint_gradient(index: int, width: int, height: int) -> np.ndarray:
    """uint8 (height, width, 3) RGB frame whose pixels say where they are: red rises with x
    from 0 (left column) to 255 (right column), green with y from 0 (top) to 255 (bottom), and
    blue is 40 + 12 * (index % 16) everywhere, so a crop, a scale and a flip can be checked
    from the pixels, and the frame too."""
    x = np.linspace(0, 255, width)
    y = np.linspace(0, 255, height)
    img = np.empty((height, width, 3), np.uint8)
    img[..., 0] = np.round(x)[None, :]
    img[..., 1] = np.round(y)[:, None]
    img[..., 2] = 40 + 12 * (index % 16)
    return img


def encode_rgb(
    path: str | Path,
    frames: Sequence[np.ndarray],
    *,
    codec: str = "ffv1",
    pix_fmt: str = "bgr0",
    fps: int = 25,
    options: dict[str, str] | None = None,
    display_rotation: int = 0,
) -> Path:
    """Encode uint8 (H, W, 3) RGB frames into `path`; ffv1 in bgr0 (the default) is lossless,
    so a decode gives back exactly these pixels. `display_rotation` (degrees counter-clockwise)
    adds a display matrix, as a phone does: the pixels stay as given, a player turns them."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    height, width = frames[0].shape[:2]
    with av.open(str(path), "w") as out:
        stream = _add_video_stream(out, codec, width, height, fps, pix_fmt, options)
        if display_rotation:
            stream.set_display_rotation(display_rotation)
        for img in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return path
