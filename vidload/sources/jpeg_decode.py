"""The JPEG decode and encode shared by the container sources (JPEG folders, HDF5, npy).

Decoder: OpenCV's `cv2.imdecode` (libjpeg-turbo), straight to RGB with `IMREAD_COLOR_RGB`.
Measured on the project's 2-core machine (340x256 frames, q95, one process): PIL
`np.asarray(Image.open(...).convert("RGB"))` ~990 frames/s, `cv2.imdecode(IMREAD_COLOR_RGB)`
~1,660-1,700 frames/s, simplejpeg ~1,655 (the same libjpeg-turbo, identical pixels), and at 1/2
DCT scale (`size=`) ~2,700 frames/s. So OpenCV: no extra dependency, no loss. OpenCV decodes a
JPEG on one thread, so `cv2.setNumThreads` (1 or 2) made no measurable difference; vidload
sets it to 1 anyway, for fork safety (`vidload/_cv2.py`). EXIF orientation is ignored
(`IMREAD_IGNORE_ORIENTATION`): frames are stored pixels.

Every buffer is checked before decoding: it must start with the SOI marker (FF D8) and, after
any trailing zero bytes, end with the EOI marker (FF D9). libjpeg-turbo otherwise "decodes" a
truncated file into a grey lower half with only a warning on stderr; here a truncated, empty or
corrupt buffer raises `VideoReadError` instead, and no grey frame is ever returned.

Reduced-size decode (`size=(min_height, min_width)`): libjpeg scales by 1/1, 1/2, 1/4 or 1/8 in
the DCT. The largest factor s whose output is still at least `size` in both dimensions is used,
and the output is `(ceil(H / s), ceil(W / s))` for a stored frame of H x W. A `size` larger than
the stored frame decodes at full size (it never upsamples).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from vidload._cv2 import cv2
from vidload.errors import VideoReadError

__all__ = [
    "check_jpeg_markers",
    "decode_jpeg",
    "decode_many",
    "encode_jpeg",
    "jpeg_size",
    "reduced_size",
]

_SOI = b"\xff\xd8"

# IMREAD_COLOR_RGB exists from OpenCV 4.10; older versions decode BGR and convert.
_RGB_FLAG: int | None = getattr(cv2, "IMREAD_COLOR_RGB", None)
_IGNORE_ORIENTATION = cv2.IMREAD_IGNORE_ORIENTATION  # frames are stored pixels, not photos
# REDUCED_GRAYSCALE_s is the bare "scale by 1/s" bit; OR-ing a colour flag selects the output.
_SCALE_BITS = {
    1: 0,
    2: cv2.IMREAD_REDUCED_GRAYSCALE_2,
    4: cv2.IMREAD_REDUCED_GRAYSCALE_4,
    8: cv2.IMREAD_REDUCED_GRAYSCALE_8,
}
# Start-of-frame markers carry the image size: C0-CF except DHT (C4), JPG (C8) and DAC (CC).
_SOF_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
# Markers without a length field.
_STANDALONE = frozenset(range(0xD0, 0xDA)) | {0x01}


def _as_buffer(data: bytes | bytearray | memoryview | np.ndarray) -> np.ndarray:
    """A 1-D uint8 view of `data` (no copy)."""
    if isinstance(data, np.ndarray):
        if data.dtype != np.uint8:
            raise TypeError(f"JPEG data must be a uint8 array, got dtype {data.dtype}")
        return data.reshape(-1)
    if isinstance(data, (bytes, bytearray, memoryview)):
        return np.frombuffer(data, dtype=np.uint8)
    raise TypeError(
        "JPEG data must be bytes, bytearray, memoryview or a uint8 array, "
        f"got {type(data).__name__}"
    )


def _marker_problem(buf: np.ndarray) -> str | None:
    """Why `buf` is not a complete JPEG (None when SOI and EOI are in place)."""
    n = buf.shape[0]
    if n == 0:
        return "empty JPEG data (0 bytes)"
    if n < 4 or buf[0] != 0xFF or buf[1] != 0xD8:
        head = bytes(buf[:4]).hex(" ")
        return f"not a JPEG: does not start with the SOI marker FF D8 (starts with {head})"
    end = n
    if buf[-1] == 0:  # zero padding (e.g. an npy row): find the last non-zero byte
        end = n - int(np.argmax(buf[::-1] != 0))  # buf[0] is 0xFF, so one exists
    if end < 4 or buf[end - 2] != 0xFF or buf[end - 1] != 0xD9:
        tail = bytes(buf[max(0, end - 4) : end]).hex(" ")
        return (
            f"truncated or corrupt JPEG: no EOI marker FF D9 at the end of its {end} bytes "
            f"(ends with {tail})"
        )
    return None


def check_jpeg_markers(
    data: bytes | bytearray | memoryview | np.ndarray,
    *,
    path: str | None = None,
    index: int | None = None,
) -> None:
    """Raise VideoReadError unless `data` starts with SOI (FF D8) and ends with EOI (FF D9),
    trailing zero bytes allowed after the EOI."""
    problem = _marker_problem(_as_buffer(data))
    if problem is not None:
        raise VideoReadError(path if path is not None else "<jpeg bytes>", problem, index)


def jpeg_size(
    data: bytes | bytearray | memoryview | np.ndarray,
    *,
    path: str | None = None,
    index: int | None = None,
) -> tuple[int, int]:
    """(height, width) of a JPEG, read from its start-of-frame header (no decoding)."""
    buf = _as_buffer(data)
    where = path if path is not None else "<jpeg bytes>"
    try:
        head = bytes(buf[: min(buf.shape[0], 65536)])
        if head[:2] != _SOI:
            raise ValueError("no SOI marker")
        pos = 2
        while True:
            while head[pos] != 0xFF:  # tolerate garbage between segments, as libjpeg does
                pos += 1
            while head[pos] == 0xFF:  # fill bytes
                pos += 1
            marker = head[pos]
            pos += 1
            if marker in _STANDALONE:
                continue
            if marker == 0xD9 or marker == 0xDA:
                raise ValueError("no start-of-frame header before the image data")
            seg_len = int.from_bytes(head[pos : pos + 2], "big")
            if marker in _SOF_MARKERS:
                height = int.from_bytes(head[pos + 3 : pos + 5], "big")
                width = int.from_bytes(head[pos + 5 : pos + 7], "big")
                if height == 0 or width == 0:
                    raise ValueError(f"start-of-frame header gives size {width}x{height}")
                return height, width
            if seg_len < 2:
                raise ValueError(f"segment length {seg_len} < 2 at byte {pos}")
            pos += seg_len
    except (IndexError, ValueError) as e:
        raise VideoReadError(where, f"cannot read the JPEG header: {e}", index) from e


def _scale_for(height: int, width: int, size: tuple[int, int] | None) -> int:
    """Largest DCT scale denominator s in {1, 2, 4, 8} with ceil(dim / s) >= size."""
    if size is None:
        return 1
    min_h, min_w = size
    for s in (8, 4, 2):
        if math.ceil(height / s) >= min_h and math.ceil(width / s) >= min_w:
            return s
    return 1


def reduced_size(height: int, width: int, size: tuple[int, int] | None) -> tuple[int, int]:
    """The (height, width) `decode_jpeg(..., size=size)` returns for a stored H x W frame."""
    check_size("size", size)
    s = _scale_for(height, width, size)
    return math.ceil(height / s), math.ceil(width / s)


def check_size(name: str, size: tuple[int, int] | None) -> None:
    """ValueError unless `size` is None or a (min_height, min_width) pair of ints >= 1."""
    if size is None:
        return
    if (
        not isinstance(size, (tuple, list))
        or len(size) != 2
        or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in size)
        or min(size) < 1
    ):
        raise ValueError(f"{name} ({size!r}) must be a (min_height, min_width) pair of ints >= 1")


def _flags(scale: int) -> tuple[int, bool]:
    """imdecode flags for scale 1/`scale`, and whether the result is BGR and needs converting."""
    if _RGB_FLAG is not None:
        return _SCALE_BITS[scale] | _RGB_FLAG | _IGNORE_ORIENTATION, False
    return _SCALE_BITS[scale] | cv2.IMREAD_COLOR | _IGNORE_ORIENTATION, True


def decode_jpeg(
    data: bytes | bytearray | memoryview | np.ndarray,
    *,
    path: str | None = None,
    index: int | None = None,
    size: tuple[int, int] | None = None,
) -> np.ndarray:
    """Decode one JPEG to uint8 (H, W, 3) RGB.

    Args:
        data: the encoded bytes; trailing zero bytes after the EOI marker are allowed.
        path, index: name the file and frame in errors.
        size: optional minimum (height, width); the frame is decoded at the smallest DCT scale
            (1/1, 1/2, 1/4, 1/8) that is at least this big, i.e. (ceil(H/s), ceil(W/s)).

    Raises:
        VideoReadError: empty, truncated (no EOI), not a JPEG (no SOI) or undecodable data.
    """
    check_size("size", size)
    buf = _as_buffer(data)
    where = path if path is not None else "<jpeg bytes>"
    problem = _marker_problem(buf)
    if problem is not None:
        raise VideoReadError(where, problem, index)
    scale = 1
    if size is not None:
        height, width = jpeg_size(buf, path=path, index=index)
        scale = _scale_for(height, width, size)
    flags, to_rgb = _flags(scale)
    try:
        img = cv2.imdecode(buf, flags)
    except cv2.error as e:
        raise VideoReadError(where, f"JPEG decode failed: {e}", index) from e
    if img is None:
        raise VideoReadError(where, "JPEG decode failed (corrupt data)", index)
    if img.ndim != 3 or img.shape[2] != 3:
        raise VideoReadError(where, f"JPEG decoded to shape {img.shape}, not (H, W, 3)", index)
    if to_rgb:
        img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
    return img


def decode_many(
    buffers: Sequence[bytes | bytearray | memoryview | np.ndarray],
    *,
    order: Sequence[int] | np.ndarray | None = None,
    paths: Sequence[str | None] | str | None = None,
    indices: Sequence[int] | np.ndarray | None = None,
    size: tuple[int, int] | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Decode JPEGs of one size straight into a single uint8 (k, H, W, 3) RGB array.

    Args:
        buffers: encoded frames.
        order: output frame j is `buffers[order[j]]` (default: every buffer, in order); a
            buffer named several times is decoded once and copied, one never named is skipped.
        paths: the file of each buffer (or one path for all), for errors.
        indices: the frame index of each buffer, for errors.
        size: minimum (height, width) for reduced-size decoding, as in `decode_jpeg`.
        out: optional C-contiguous uint8 (k, H, W, 3) array to fill and return.

    Raises:
        VideoReadError: a bad buffer (see `decode_jpeg`), or frames of differing sizes.
    """
    n = len(buffers)
    order_arr = np.arange(n) if order is None else np.asarray(order, dtype=np.int64).reshape(-1)
    k = order_arr.shape[0]
    if k == 0:
        raise ValueError("decode_many needs at least one frame to decode (got 0)")
    if order_arr.min() < 0 or order_arr.max() >= n:
        raise ValueError(f"order must index into the {n} buffers, got values outside [0, {n})")
    if isinstance(paths, str) or paths is None:
        path_of: list[str | None] = [paths] * n
    else:
        if len(paths) != n:
            raise ValueError(f"paths has {len(paths)} entries for {n} buffers")
        path_of = list(paths)
    if indices is not None and len(indices) != n:
        raise ValueError(f"indices has {len(indices)} entries for {n} buffers")
    index_of = [int(i) for i in indices] if indices is not None else [None] * n
    given_out = out is not None
    if out is not None and (
        out.dtype != np.uint8
        or out.ndim != 4
        or out.shape[0] != k
        or out.shape[3] != 3
        or not out.flags.c_contiguous
    ):
        raise ValueError(
            f"out must be a C-contiguous uint8 ({k}, H, W, 3) array, "
            f"got {out.dtype} {tuple(out.shape)}"
        )
    first_at: dict[int, int] = {}
    for j, b in enumerate(order_arr.tolist()):
        if b in first_at:
            out[j] = out[first_at[b]]
            continue
        first_at[b] = j
        img = decode_jpeg(buffers[b], path=path_of[b], index=index_of[b], size=size)
        if out is None:
            out = np.empty((k, *img.shape), np.uint8)
        elif img.shape != out.shape[1:]:
            if given_out and j == 0:
                raise ValueError(f"out has frames of shape {out.shape[1:]}, decoded {img.shape}")
            raise VideoReadError(
                path_of[b] if path_of[b] is not None else "<jpeg bytes>",
                f"frame size {img.shape[1]}x{img.shape[0]} differs from the other frames' "
                f"{out.shape[2]}x{out.shape[1]}",
                index_of[b],
            )
        out[j] = img
    return out


def encode_jpeg(rgb: np.ndarray, quality: int = 95) -> bytes:
    """Encode uint8 (H, W, 3) RGB as a baseline JPEG (4:2:0, libjpeg-turbo via OpenCV)."""
    if not isinstance(rgb, np.ndarray) or rgb.dtype != np.uint8:
        raise TypeError(
            f"rgb must be a uint8 numpy array, got {type(rgb).__name__}"
            f"{'' if not isinstance(rgb, np.ndarray) else ' of ' + str(rgb.dtype)}"
        )
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.shape[0] == 0 or rgb.shape[1] == 0:
        raise ValueError(f"rgb must have shape (H, W, 3) with H, W >= 1, got {rgb.shape}")
    if isinstance(quality, bool) or not isinstance(quality, (int, np.integer)):
        raise TypeError(f"quality must be an int, got {type(quality).__name__}")
    if not 1 <= quality <= 100:
        raise ValueError(f"quality ({quality}) must be in [1, 100]")
    bgr = cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR)
    ok, buf = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise RuntimeError(f"OpenCV failed to encode a {rgb.shape} frame as JPEG")
    return buf.tobytes()
