"""The shared JPEG decode/encode: marker checks, reduced-size decode, decode_many."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import simplejpeg
from media import corrupt_middle, frame_number, paint

from vidload.errors import VideoReadError
from vidload.sources.hdf5 import Hdf5Source
from vidload.sources.jpeg import JpegSource
from vidload.sources.jpeg_decode import (
    check_jpeg_markers,
    decode_jpeg,
    decode_many,
    encode_jpeg,
    jpeg_size,
    reduced_size,
)
from vidload.sources.npy import NpySource

W, H = 170, 123  # odd sizes exercise the ceil() in reduced decoding


@pytest.fixture(scope="module")
def jpegs() -> list[bytes]:
    return [encode_jpeg(paint(i, W, H)) for i in range(6)]


def test_decode_is_rgb_and_matches_opencv_bgr(jpegs):
    img = decode_jpeg(jpegs[3])
    assert img.dtype == np.uint8 and img.shape == (H, W, 3)
    assert frame_number(img) == 3
    bgr = cv2.imdecode(np.frombuffer(jpegs[3], np.uint8), cv2.IMREAD_COLOR)
    np.testing.assert_array_equal(img, bgr[..., ::-1])


def test_encode_keeps_colour_order():
    rgb = np.zeros((32, 32, 3), np.uint8)
    rgb[..., 0] = 250  # pure red
    out = decode_jpeg(encode_jpeg(rgb))
    assert out[..., 0].min() > 230 and out[..., 2].max() < 20


def test_input_types_are_equivalent(jpegs):
    ref = decode_jpeg(jpegs[1])
    for data in (bytearray(jpegs[1]), memoryview(jpegs[1]), np.frombuffer(jpegs[1], np.uint8)):
        np.testing.assert_array_equal(decode_jpeg(data), ref)


def test_trailing_zero_padding_is_allowed(jpegs):
    padded = jpegs[2] + bytes(1000)
    np.testing.assert_array_equal(decode_jpeg(padded), decode_jpeg(jpegs[2]))
    check_jpeg_markers(padded)


@pytest.mark.parametrize(
    ("mangle", "match"),
    [
        (lambda b: b"", "empty JPEG data"),
        (lambda b: b[: len(b) // 2], "no EOI marker"),
        (lambda b: b[:-2], "no EOI marker"),
        (lambda b: b[: len(b) // 2] + bytes(len(b) // 2), "no EOI marker"),  # zero-filled tail
        (lambda b: b + b"garbage", "no EOI marker"),
        (lambda b: b"GIF89a" + b[6:], "does not start with the SOI marker"),
        (lambda b: b"\xff\xd8\xff\xd9", "decode failed"),
        (lambda b: b[:2] + bytes(200) + b[-2:], "decode failed"),
    ],
)
def test_bad_data_raises_naming_file_and_frame(jpegs, mangle, match):
    with pytest.raises(VideoReadError, match=match) as info:
        decode_jpeg(mangle(jpegs[0]), path="clip/img_00004.jpg", index=3)
    assert info.value.path == "clip/img_00004.jpg" and info.value.index == 3
    assert "clip/img_00004.jpg (frame 3)" in str(info.value)


def test_bad_types():
    with pytest.raises(TypeError, match="must be bytes"):
        decode_jpeg("not bytes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="uint8 array"):
        decode_jpeg(np.zeros(10, np.float32))


def test_jpeg_size_baseline_progressive_and_grey(jpegs):
    assert jpeg_size(jpegs[0]) == (H, W)
    bgr = paint(5, W, H)[..., ::-1].copy()
    ok, prog = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_PROGRESSIVE, 1])
    assert ok
    assert jpeg_size(prog) == (H, W)
    assert frame_number(decode_jpeg(prog)) == 5
    ok, grey = cv2.imencode(".jpg", cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY))
    assert ok
    img = decode_jpeg(grey)
    assert img.shape == (H, W, 3)
    np.testing.assert_array_equal(img[..., 0], img[..., 1])
    with pytest.raises(VideoReadError, match="cannot read the JPEG header"):
        jpeg_size(jpegs[0][:20], path="x.jpg")


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        (None, (H, W)),
        ((1, 1), (16, 22)),  # 1/8: ceil(123/8), ceil(170/8)
        ((16, 22), (16, 22)),
        ((17, 22), (31, 43)),  # 1/4
        ((31, 43), (31, 43)),
        ((32, 1), (62, 85)),  # 1/2
        ((62, 85), (62, 85)),
        ((62, 86), (H, W)),  # 1/1
        ((1000, 1000), (H, W)),  # never upsamples
    ],
)
def test_reduced_size_rule(jpegs, size, expected):
    assert reduced_size(H, W, size) == expected
    img = decode_jpeg(jpegs[4], size=size)
    assert img.shape == (*expected, 3)
    if expected[0] >= 31:
        assert frame_number(img) == 4


def test_reduced_decode_is_rgb(jpegs):
    half = decode_jpeg(jpegs[4], size=(62, 85))
    bgr = cv2.imdecode(np.frombuffer(jpegs[4], np.uint8), cv2.IMREAD_REDUCED_COLOR_2)
    np.testing.assert_array_equal(half, bgr[..., ::-1])


@pytest.mark.parametrize(
    "size, error",
    [
        ((0, 5), ValueError),
        ((5,), TypeError),
        ("big", TypeError),
        ((1.5, 2), TypeError),
        ((True, 3), TypeError),
    ],
)
def test_bad_size(jpegs, tmp_path, size, error):
    """One rule for a decode size, in the decoder and in every container source."""
    with pytest.raises(error, match="must be a \\(min_height, min_width\\) pair"):
        decode_jpeg(jpegs[0], size=size)
    for make in (JpegSource, Hdf5Source, NpySource):
        with pytest.raises(error, match=r"decode_size .* must be a \(min_height, min_width\)"):
            make(tmp_path, decode_size=size)


def test_corrupt_middle_is_an_error_not_a_garbage_frame(jpegs):
    bad = corrupt_middle(jpegs[3])
    # OpenCV (the previous decoder) returns an image for these bytes, with a warning on stderr
    assert cv2.imdecode(np.frombuffer(bad, np.uint8), cv2.IMREAD_COLOR) is not None
    with pytest.raises(VideoReadError, match="JPEG decode failed \\(corrupt data\\)") as info:
        decode_jpeg(bad, path="v.h5", index=7)
    assert info.value.path == "v.h5" and info.value.index == 7
    assert isinstance(info.value.__cause__, ValueError)
    with pytest.raises(VideoReadError, match=r"v\.npy \(frame 3\): JPEG decode failed"):
        decode_many(jpegs[:3] + [bad], paths="v.npy", indices=range(4), order=[0, 3])
    with pytest.raises(VideoReadError, match="JPEG decode failed"):
        decode_jpeg(bad, size=(H // 2, W // 2))


def test_decode_many_order_duplicates_and_out(jpegs):
    out = decode_many(jpegs, order=[4, 1, 4, 0])
    assert out.shape == (4, H, W, 3)
    assert [frame_number(f) for f in out] == [4, 1, 4, 0]
    np.testing.assert_array_equal(out[1], decode_jpeg(jpegs[1]))
    buf = np.empty((6, H, W, 3), np.uint8)
    got = decode_many(jpegs, out=buf)
    assert got is buf and [frame_number(f) for f in buf] == list(range(6))
    half = decode_many(jpegs, order=[2, 5], size=(H // 2, W // 2))
    assert half.shape == (2, *reduced_size(H, W, (H // 2, W // 2)), 3)
    np.testing.assert_array_equal(half[1], decode_jpeg(jpegs[5], size=(H // 2, W // 2)))


def test_decode_many_frame_of_another_size_at_reduced_scale(jpegs):
    small = encode_jpeg(paint(1, 64, 48))
    with pytest.raises(VideoReadError, match=r"frame size 64x48 differs from the other frames' "
                       r"\d+x\d+ or close, decoded at 1/\d to \d+x\d+"):  # fmt: skip
        decode_many([jpegs[0], small], size=(20, 20))
    with pytest.raises(VideoReadError, match="differs from the other frames"):
        decode_many([small, jpegs[0]])  # a bigger frame does not fit the output


def test_decode_many_errors(jpegs):
    other = encode_jpeg(paint(1, 64, 48))
    with pytest.raises(VideoReadError, match="differs from the other frames") as info:
        decode_many([jpegs[0], other], paths=["a.jpg", "b.jpg"], indices=[0, 7])
    assert info.value.path == "b.jpg" and info.value.index == 7
    with pytest.raises(VideoReadError, match=r"v\.h5 \(frame 9\): truncated"):
        decode_many([jpegs[0], jpegs[1][:50]], paths="v.h5", indices=[8, 9])
    with pytest.raises(ValueError, match="out must be a C-contiguous uint8"):
        decode_many(jpegs[:2], out=np.empty((2, H, W, 3), np.float32))
    with pytest.raises(ValueError, match="out has frames of shape"):
        decode_many(jpegs[:2], out=np.empty((2, 10, 10, 3), np.uint8))
    with pytest.raises(ValueError, match="order must index into the 6 buffers"):
        decode_many(jpegs, order=[6])
    with pytest.raises(ValueError, match="at least one frame"):
        decode_many([])


def test_encode_validation():
    with pytest.raises(TypeError, match="uint8"):
        encode_jpeg(np.zeros((8, 8, 3), np.float32))
    with pytest.raises(ValueError, match=r"shape \(H, W, 3\)"):
        encode_jpeg(np.zeros((8, 8), np.uint8))
    with pytest.raises(ValueError, match=r"quality \(0\) must be in \[1, 100\]"):
        encode_jpeg(np.zeros((8, 8, 3), np.uint8), quality=0)
    img = paint(9, W, H)
    assert len(encode_jpeg(img, quality=50)) < len(encode_jpeg(img, quality=95))
    with pytest.raises(ValueError, match=r"subsampling \('411'\) must be one of \('420', '422'"):
        encode_jpeg(img, subsampling="411")  # type: ignore[arg-type]
    # the one int rule (vidload._checks): NumPy integers accepted, bools refused
    assert encode_jpeg(img, quality=np.int64(50)) == encode_jpeg(img, quality=50)
    with pytest.raises(TypeError, match="quality must be an int"):
        encode_jpeg(img, quality=True)


@pytest.mark.parametrize("subsampling", ["420", "422", "444"])
def test_encode_subsampling_round_trips(subsampling):
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)
    img[:, ::2, 0] = 255  # fine colour detail that 4:2:0 / 4:2:2 cannot keep
    data = encode_jpeg(img, quality=100, subsampling=subsampling)
    assert simplejpeg.decode_jpeg_header(data)[3] == subsampling
    err = np.abs(decode_jpeg(data).astype(int) - img).mean()
    assert (err < 3) == (subsampling == "444"), err
