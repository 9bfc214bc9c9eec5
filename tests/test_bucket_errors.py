"""Errors about objects in a bucket read through a local cache (`cache_dir=`) name the
object's URL, never the cached copy's path (issue 23): every reader (HDF5, npy in both modes,
JPEG folders, video files), at open and at a frame, against moto."""

from __future__ import annotations

import re

import pytest
from media import paint

from vidload.errors import VideoReadError
from vidload.sources.hdf5 import Hdf5Source, write_hdf5
from vidload.sources.jpeg import JpegSource, write_jpeg_folder
from vidload.sources.jpeg_decode import encode_jpeg
from vidload.sources.npy import NpySource, write_npy
from vidload.sources.video import VideoSource

W, H = 48, 32
KINDS = ["hdf5", "npy-mmap", "npy-read", "jpeg", "video"]


def _source(kind: str, url: str, s3_bucket, cache):
    opts = {"storage_options": s3_bucket.storage_options, "cache_dir": cache}
    if kind == "hdf5":
        return Hdf5Source(url, **opts)
    if kind.startswith("npy"):
        return NpySource(url, mode=kind.split("-")[1], **opts)
    if kind == "jpeg":
        return JpegSource(url, **opts)
    return VideoSource(url, **opts)


def _bad_frame_tree(kind: str, root) -> None:
    """`a/x` whose frame 1 has lost its JPEG start marker (the container itself is sound)."""
    frames = [encode_jpeg(paint(i, W, H), quality=90) for i in range(3)]
    write = {"hdf5": write_hdf5, "npy": write_npy, "jpeg": write_jpeg_folder}[kind]
    path = root / ("a/x" + {"hdf5": ".h5", "npy": ".npy", "jpeg": ""}[kind])
    write(path, frames)
    file = path / "img_00002.jpg" if kind == "jpeg" else path
    data = bytearray(file.read_bytes())
    at = data.find(frames[1])
    assert at >= 0
    data[at : at + 2] = b"\0\0"
    file.write_bytes(bytes(data))


@pytest.mark.parametrize("kind", KINDS)
def test_a_corrupt_object_read_through_the_cache_is_named_by_its_url(kind, s3_bucket, tmp_path):
    name = {"hdf5": "a/x.h5", "jpeg": "a/x/img_00001.jpg", "video": "a/x.mp4"}.get(kind, "a/x.npy")
    s3_bucket.put(f"data/{name}", b"this is not what the reader expects\n" * 50)
    cache = tmp_path / "cache"
    src = _source(kind, f"{s3_bucket.url}/data", s3_bucket, cache)
    url = f"{s3_bucket.url}/data/{name}"
    with pytest.raises(VideoReadError, match=rf"^{re.escape(url)}\b") as got:
        src.read("a/x.mp4", [0])
    assert got.value.path == url
    assert str(cache) not in str(got.value)
    if kind != "jpeg":  # a JPEG folder's frames are read whole into memory, not cached
        assert any(p.is_file() for p in cache.rglob("*")), "not read through the cache"


@pytest.mark.parametrize("kind", ["hdf5", "npy-mmap", "npy-read", "jpeg"])
def test_a_corrupt_frame_read_through_the_cache_is_named_by_its_url(kind, s3_bucket, tmp_path):
    _bad_frame_tree(kind.split("-")[0], tmp_path / "tree")
    url = s3_bucket.upload(tmp_path / "tree", "data")
    cache = tmp_path / "cache"
    src = _source(kind, url, s3_bucket, cache)
    src.read("a/x.mp4", [0, 2])  # the container opens and its sound frames decode
    with pytest.raises(VideoReadError, match=rf"^{re.escape(url)}/a/x\S* \(frame 1\)") as got:
        src.read("a/x.mp4", [1])
    assert str(cache) not in str(got.value)


def test_a_copy_s_path_names_its_url_and_other_paths_stay(s3_bucket, tmp_path):
    from vidload._storage import LocalCache, Location

    s3_bucket.put("k/v.bin", b"x" * 10)
    loc = Location(f"{s3_bucket.url}/k/v.bin", s3_bucket.storage_options)
    copy = LocalCache(tmp_path / "c").get(loc)
    err = VideoReadError(copy, f"cannot decode {copy}: bad")
    assert (err.path, err.reason) == (f"{s3_bucket.url}/k/v.bin", f"cannot decode {loc}: bad")
    other = tmp_path / "c" / "elsewhere.bin"
    assert VideoReadError(other, "bad").path == str(other)
