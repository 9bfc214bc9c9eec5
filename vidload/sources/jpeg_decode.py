"""The JPEG decode and encode shared by the container sources (JPEG folders, HDF5, npy).

Decoder: simplejpeg (libjpeg-turbo's TurboJPEG API), strict, straight into the caller's array.
Measured on the shared 2-core machine (340x256 frames of `mma_test.mp4`, q95, one process, CPU
time per frame; `python tools/read_paths.py --only decode` reproduces every figure here):
`cv2.imdecode(IMREAD_COLOR_RGB)` 277 us, `simplejpeg.decode_jpeg` 270 us,
`simplejpeg.decode_jpeg(buffer=out[j])` into a reused (k, H, W, 3) array 272 us, `decode_many`
into a new clip array per call 273 us: the decoders cost the same, and decoding into the clip's
array saves the per-frame arrays and the copy into the clip (the decoders were chosen for
`strict`, below). Each decoded array is dropped before the next decode, as a read's is; the
earlier figures here (332 us for cv2.imdecode and simplejpeg, 387 us for decode_many) kept every
decoded array alive, so every decode wrote into newly faulted pages. Header reads
(`jpeg_size`) cost ~2 us. The pixels are identical to OpenCV's (the same libjpeg-turbo).

Why strict: libjpeg-turbo "decodes" corrupt entropy-coded data (flipped bytes in the middle of a
frame, SOI and EOI intact) into a garbage image with only a warning on stderr, which is what
OpenCV does. simplejpeg with `strict=True` turns every such warning into an error, and
vidload raises `VideoReadError` naming the file (or container) and frame, chained. Every buffer
is also checked before decoding: it must start with the SOI marker (FF D8) and, after any
trailing zero bytes, end with the EOI marker (FF D9), so a truncated, empty or over-long buffer
gets a message that says so. No grey or garbage frame is ever returned.

Reduced-size decode (`size=(min_height, min_width)`): libjpeg scales in the DCT. vidload uses
only the factors 1/1, 1/2, 1/4 and 1/8: the largest s whose output is still at least `size` in
both dimensions, giving `(ceil(H / s), ceil(W / s))` for a stored H x W frame (`reduced_size`).
TurboJPEG also offers the factors 7/8, 3/4, 5/8, 3/8, but they are slower than a full decode
(340x256 at 7/8: 459 us against 273 us at 1/1; at 1/2: 229 us), so simplejpeg is asked for
exactly 1/s (`min_factor=s`). A `size` larger than the stored frame decodes at full size (it
never upsamples). EXIF orientation is ignored: frames are stored pixels.

Encode: `simplejpeg.encode_jpeg` (TurboJPEG), from RGB with a chosen chroma subsampling; as fast
as `cv2.imencode` (214 us against 227 us per 340x256 frame at q95, 4:2:0, including the RGB to
BGR conversion OpenCV needs), so OpenCV is not needed here at all.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, NoReturn

import numpy as np
import simplejpeg

from vidload._checks import check_choice, check_int
from vidload._scratch import Scratch
from vidload.errors import VideoReadError

__all__ = [
    "SUBSAMPLINGS",
    "check_jpeg_markers",
    "check_quality",
    "check_size",
    "decode_jpeg",
    "decode_clip",
    "decode_many",
    "encode_jpeg",
    "jpeg_size",
    "reduced_size",
]

Subsampling = Literal["420", "422", "444"]
SUBSAMPLINGS: tuple[str, ...] = ("420", "422", "444")

_Data = bytes | bytearray | memoryview | np.ndarray


def _as_buffer(data: _Data) -> bytes | np.ndarray:
    """`data` as the decoder takes it: `bytes` as they are, anything else as a 1-D uint8 view
    (no copy)."""
    if isinstance(data, bytes):
        return data
    if isinstance(data, np.ndarray):
        if data.dtype != np.uint8:
            raise TypeError(f"JPEG data must be a uint8 array, got dtype {data.dtype}")
        return data if data.ndim == 1 else data.reshape(-1)
    if isinstance(data, (bytearray, memoryview)):
        return np.frombuffer(data, dtype=np.uint8)
    raise TypeError(
        "JPEG data must be bytes, bytearray, memoryview or a uint8 array, "
        f"got {type(data).__name__}"
    )


def _markers_ok(data: bytes | np.ndarray) -> bool:
    """True when `data` (bytes or a 1-D uint8 array, as `_as_buffer` gives) starts with SOI
    (FF D8) and ends with EOI (FF D9). False sends the caller to `_marker_problem`, which also
    allows trailing zero bytes and says what is wrong. Byte tests on `bytes` or a memoryview:
    ~0.3 us a frame, against ~1.5 us through numpy scalars (a clip checks every frame)."""
    m = data if isinstance(data, bytes) else data.data  # an ndarray's memoryview
    n = len(m)
    return n >= 4 and m[0] == 0xFF and m[1] == 0xD8 and m[n - 2] == 0xFF and m[n - 1] == 0xD9


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


def _where(path: str | None) -> str:
    return path if path is not None else "<jpeg bytes>"


def check_jpeg_markers(data: _Data, *, path: str | None = None, index: int | None = None) -> None:
    """Raise VideoReadError unless `data` starts with SOI (FF D8) and ends with EOI (FF D9),
    trailing zero bytes allowed after the EOI."""
    buf = _as_buffer(data)
    if not _markers_ok(buf):
        problem = _marker_problem(np.frombuffer(buf, np.uint8) if isinstance(buf, bytes) else buf)
        if problem is not None:
            raise VideoReadError(_where(path), problem, index)


def jpeg_size(data: _Data, *, path: str | None = None, index: int | None = None) -> tuple[int, int]:
    """(height, width) of a JPEG, read from its header (no decoding: ~2 us)."""
    return _stored_size(data, path, index, "cannot read the JPEG header")


def _stored_size(data: _Data, path: str | None, index, what: str) -> tuple[int, int]:
    try:
        height, width, _, _ = simplejpeg.decode_jpeg_header(_as_buffer(data))
    except ValueError as e:
        raise VideoReadError(_where(path), f"{what}: {e}", index) from e
    return int(height), int(width)


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
    """TypeError unless `size` is None or a pair of ints (not bools); ValueError unless both >= 1.

    A (min_height, min_width) pair: the same int rule as every other argument (`_checks`)."""
    if size is None:
        return
    rule = f"{name} ({size!r}) must be a (min_height, min_width) pair of ints >= 1"
    if not isinstance(size, (tuple, list)) or len(size) != 2:
        raise TypeError(rule)
    try:
        values = [check_int(name, v) for v in size]
    except TypeError as e:
        raise TypeError(rule) from e
    if min(values) < 1:
        raise ValueError(rule)


def _failed(buf, dst: np.ndarray, scale: int, path, index, got: Exception | tuple) -> NoReturn:
    """Raise the VideoReadError of a frame `decode_clip` could not decode into `dst` at the
    DCT scale 1/`scale` (`got`: simplejpeg's error, or the shape it decoded): a frame of
    another size says so. simplejpeg is given no minimum size at 1/1: it would pick a smaller
    scale for a frame twice the others' size, and fit it."""
    _check_frame_size(buf, dst, scale, path, index)
    where = _where(path)
    if isinstance(got, Exception):
        raise VideoReadError(where, f"JPEG decode failed (corrupt data): {got}", index) from got
    # unreachable unless the header lies
    raise VideoReadError(where, f"decoded to shape {got}, expected {dst.shape}", index)


def _check_frame_size(buf: bytes | np.ndarray, dst: np.ndarray, scale: int, path, index) -> None:
    """VideoReadError if `buf`'s frame decodes at 1/`scale` to another size than `dst`'s."""
    try:
        height, width = jpeg_size(buf, path=path, index=index)
    except VideoReadError:
        return  # not even a header: the caller reports the decode error
    h, w = dst.shape[:2]
    if (math.ceil(height / scale), math.ceil(width / scale)) != (h, w):
        others = (
            f"{w * scale}x{h * scale} or close, decoded at 1/{scale} to {w}x{h}"
            if scale > 1
            else f"{w}x{h}"
        )
        message = f"frame size {width}x{height} differs from the other frames' {others}"
        raise VideoReadError(_where(path), message, index)


def decode_jpeg(
    data: _Data,
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
        VideoReadError: empty, truncated (no EOI), not a JPEG (no SOI) or corrupt data (any
            libjpeg warning, e.g. bad entropy-coded data in the middle of the frame).
    """
    return decode_many([data], paths=path, indices=None if index is None else [index], size=size)[0]


def decode_many(
    buffers: Sequence[_Data],
    *,
    order: Sequence[int] | np.ndarray | None = None,
    paths: Sequence[str | None] | str | None = None,
    indices: Sequence[int] | np.ndarray | None = None,
    size: tuple[int, int] | None = None,
    out: np.ndarray | None = None,
    scratch: Scratch | None = None,
) -> np.ndarray:
    """Decode JPEGs of one size straight into a single uint8 (k, H, W, 3) RGB array.

    The size (and DCT scale, with `size`) comes from the first output frame's header; each
    frame is decoded by libjpeg-turbo directly into its slot of the output (no per-frame array,
    no copy), and a buffer named several times is decoded once and copied.

    Args:
        buffers: encoded frames.
        order: output frame j is `buffers[order[j]]` (default: every buffer, in order); a
            buffer never named is skipped.
        paths: the file of each buffer (or one path for all), for errors.
        indices: the frame index of each buffer, for errors.
        size: minimum (height, width) for reduced-size decoding, as in `decode_jpeg`.
        out: optional C-contiguous uint8 (k, H, W, 3) array to fill and return.
        scratch: decode into this thread's buffer of a `vidload._scratch.Scratch` instead of a
            new array (for a clip that is only copied or resized afterwards: the result is
            overwritten by the next decode into the same scratch). Not with `out`.

    Raises:
        VideoReadError: a bad buffer (see `decode_jpeg`), or frames of differing sizes.
    """
    check_size("size", size)
    n = len(buffers)
    # lists of plain ints (an int64 array of a source is not converted: a view's `tolist`)
    order_list = list(range(n)) if order is None else np.asarray(order, np.int64).ravel().tolist()
    if order_list and (min(order_list) < 0 or max(order_list) >= n):
        raise ValueError(f"order must index into the {n} buffers, got values outside [0, {n})")
    if not order_list:
        raise ValueError("decode_many needs at least one frame to decode (got 0)")
    for name, given in (("paths", paths), ("indices", indices)):
        if given is not None and not isinstance(given, str) and len(given) != n:
            raise ValueError(f"{name} has {len(given)} entries for {n} buffers")
    if out is not None and scratch is not None:
        raise ValueError("decode_many takes out or scratch, not both")
    if out is not None and (
        out.dtype != np.uint8
        or out.ndim != 4
        or out.shape[0] != len(order_list)
        or out.shape[3] != 3
        or not out.flags.c_contiguous
    ):
        raise ValueError(
            f"out must be a C-contiguous uint8 ({len(order_list)}, H, W, 3) array, "
            f"got {out.dtype} {tuple(out.shape)}"
        )
    return decode_clip(buffers, order_list, paths, indices, size, scratch if out is None else out)


def decode_clip(
    buffers: Sequence[_Data],
    order: list[int],
    paths: Sequence[str | None] | str | None,
    indices: Sequence[int] | np.ndarray | None,
    size: tuple[int, int] | None,
    into: np.ndarray | Scratch | None = None,
) -> np.ndarray:
    """`decode_many` of arguments already checked (`EncodedFrames.decode`'s, made by a
    source): `order` a non-empty list of ints into `buffers`, `into` an `out` array, a
    `scratch` or None. A buffer's path and index are looked up only for an error that names
    them (`_named`): building them per frame cost ~10 us a clip, after a decode."""
    b0 = order[0]
    head = _as_buffer(buffers[b0])
    where = _named(paths, b0), _named(indices, b0)
    if not _markers_ok(head):
        check_jpeg_markers(head, path=where[0], index=where[1])
    height, width = _stored_size(head, *where, "JPEG decode failed: cannot read its header")
    scale = _scale_for(height, width, size)
    shape = (len(order), math.ceil(height / scale), math.ceil(width / scale), 3)
    out = into.array(shape) if isinstance(into, Scratch) else into
    if out is None:
        out = np.empty(shape, np.uint8)
    elif out.shape != shape:  # a caller's `out`
        raise ValueError(f"out has frames of shape {out.shape[1:]}, decoded {shape[1:]}")
    kwargs: dict = {"colorspace": "RGB", "strict": True}  # at 1/1 no minimum: see `_failed`
    if scale > 1:
        kwargs.update(min_height=shape[1], min_width=shape[2], min_factor=scale)
    first_at: dict[int, int] = {}
    for j, b in enumerate(order):  # one frame's work inline: ~10 us a clip less than a call
        seen = first_at.setdefault(b, j)
        if seen != j:  # a buffer named again: copy its frame
            out[j] = out[seen]
            continue
        buf = _as_buffer(buffers[b])
        if not _markers_ok(buf):  # says why, where it is not a complete JPEG
            check_jpeg_markers(buf, path=_named(paths, b), index=_named(indices, b))
        try:
            img = simplejpeg.decode_jpeg(buf, buffer=out[j], **kwargs)
        except ValueError as e:
            _failed(buf, out[j], scale, _named(paths, b), _named(indices, b), e)
        if img.shape != shape[1:]:  # a smaller frame decodes into the start of the buffer
            _failed(buf, out[j], scale, _named(paths, b), _named(indices, b), img.shape)
    return out


def _named(given, b: int):
    """Entry `b` of `decode_many`'s `paths` or `indices` (or the one path for all, or None)."""
    item = given if given is None or isinstance(given, str) else given[b]
    return item if item is None or isinstance(item, str) else int(item)


def check_quality(quality: int) -> int:
    """`quality` as an int in [1, 100], the JPEG quality rule (TypeError / ValueError)."""
    q = check_int("quality", quality)
    if not 1 <= q <= 100:
        raise ValueError(f"quality ({q}) must be in [1, 100]")
    return q


def encode_jpeg(rgb: np.ndarray, quality: int = 95, *, subsampling: Subsampling = "420") -> bytes:
    """Encode uint8 (H, W, 3) RGB as a baseline JPEG (libjpeg-turbo via simplejpeg).

    `subsampling` is the chroma subsampling: "420" (colour at half resolution both ways, the
    smallest files), "422" (half horizontally) or "444" (full colour resolution).
    """
    if not isinstance(rgb, np.ndarray) or rgb.dtype != np.uint8:
        raise TypeError(
            f"rgb must be a uint8 numpy array, got {type(rgb).__name__}"
            f"{'' if not isinstance(rgb, np.ndarray) else ' of ' + str(rgb.dtype)}"
        )
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.shape[0] == 0 or rgb.shape[1] == 0:
        raise ValueError(f"rgb must have shape (H, W, 3) with H, W >= 1, got {rgb.shape}")
    quality = check_quality(quality)
    check_choice("subsampling", subsampling, SUBSAMPLINGS)
    rgb = np.ascontiguousarray(rgb)  # the array itself when it already is
    try:
        return simplejpeg.encode_jpeg(
            rgb, quality=quality, colorspace="RGB", colorsubsampling=subsampling
        )
    except ValueError as e:
        raise RuntimeError(f"libjpeg-turbo failed to encode a {rgb.shape} frame: {e}") from e
