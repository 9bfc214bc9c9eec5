"""JPEG folder, HDF5 and npy sources with their writers: round trips, counts, errors, forks."""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable, Iterator
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch
from media import corrupt_middle, frame_number, paint
from torch.utils.data import DataLoader, Dataset

from vidload.errors import FrameCountError, VideoReadError
from vidload.sources.base import FrameSource
from vidload.sources.hdf5 import Hdf5Source, write_hdf5
from vidload.sources.jpeg import JpegSource, write_jpeg_folder
from vidload.sources.jpeg_decode import decode_jpeg, encode_jpeg
from vidload.sources.npy import NpySource, read_npy_frame_bytes, write_npy

N = 24
W, H = 96, 72
KINDS = ["jpeg", "hdf5", "npy-mmap", "npy-read"]


@pytest.fixture(scope="session")
def jpegs() -> list[bytes]:
    return [encode_jpeg(paint(i, W, H), quality=90) for i in range(N)]


def container_path(kind: str, root: Path, stem: str) -> Path:
    suffix = {"jpeg": "", "hdf5": ".h5"}.get(kind, ".npy")
    return root / (stem + suffix)


def write(kind: str, root: Path, stem: str, frames) -> int:
    path = container_path(kind, root, stem)
    if kind == "jpeg":
        return write_jpeg_folder(path, frames)
    if kind == "hdf5":
        return write_hdf5(path, frames, attrs={"fps": 25.0, "source": stem + ".mp4"})
    return write_npy(path, frames)


def make_source(kind: str, root: Path) -> FrameSource:
    if kind == "jpeg":
        return JpegSource(root)
    if kind == "hdf5":
        return Hdf5Source(root)
    return NpySource(root, mode=kind.split("-")[1])


@pytest.fixture(scope="session")
def built(tmp_path_factory, jpegs) -> dict[str, Path]:
    """One root per kind holding video `a/x1` with N frames."""
    roots = {}
    for kind in KINDS:
        root = tmp_path_factory.mktemp(kind)
        if kind != "npy-read":
            assert write(kind, root, "a/x1", jpegs) == N
        roots[kind] = root
    roots["npy-read"] = roots["npy-mmap"]
    return roots


# --- round trips -------------------------------------------------------------------------------


def _with_decode_size(kind: str, root: Path, size) -> FrameSource:
    if kind == "jpeg":
        return JpegSource(root, decode_size=size)
    if kind == "hdf5":
        return Hdf5Source(root, decode_size=size)
    return NpySource(root, mode=kind.split("-")[1], decode_size=size)


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_decode_size_uses_dct_scaling(kind, built, jpegs):
    src = _with_decode_size(kind, built[kind], (H // 2, W // 2))
    indices = [5, 0, 23, 5]
    clip = src.read("a/x1", indices)
    assert clip.shape == (len(indices), H // 2, W // 2, 3)
    for frame, i in zip(clip, indices, strict=True):
        assert np.array_equal(frame, decode_jpeg(jpegs[i], size=(H // 2, W // 2)))
        assert frame_number(frame) == i
    # a size between scales rounds up to the next DCT scale; larger than stored: full size
    assert _with_decode_size(kind, built[kind], (H // 2 + 1, 10)).read("a/x1", [1]).shape == (
        1,
        H,
        W,
        3,
    )
    assert _with_decode_size(kind, built[kind], (10 * H, 10 * W)).read("a/x1", [1]).shape == (
        1,
        H,
        W,
        3,
    )


def test_decode_size_takes_numpy_ints(tmp_path):
    for make in (JpegSource, Hdf5Source, NpySource):
        assert make(tmp_path, decode_size=(np.int64(8), np.int32(6))).decode_size is not None


@pytest.mark.parametrize("kind", KINDS)
def test_round_trip_any_order_and_duplicates(kind, built, jpegs):
    src = make_source(kind, built[kind])
    assert isinstance(src, FrameSource)
    indices = [7, 0, 23, 7, 7, 12, 1]
    clip = src.read("a/x1", indices)
    assert clip.dtype == np.uint8 and clip.shape == (len(indices), H, W, 3)
    assert clip.flags.c_contiguous
    assert [frame_number(f) for f in clip] == indices
    for f, i in zip(clip, indices, strict=True):
        np.testing.assert_array_equal(f, decode_jpeg(jpegs[i]))
    np.testing.assert_array_equal(src.read("a/x1", np.array([12], np.int32)), clip[5:6])


@pytest.mark.parametrize("kind", KINDS)
def test_ids_with_and_without_video_extension(kind, built):
    src = make_source(kind, built[kind])
    for vid in ("a/x1", "a/x1.mp4", "a/x1.MKV"):
        assert src.reported_frames(vid) == N
        assert src.actual_frames(vid) == N
        assert [frame_number(f) for f in src.read(vid, [2, 5])] == [2, 5]
    assert src.read("a/x1.avi", []).shape == (0, H, W, 3)


def test_container_paths_drop_the_video_extension(tmp_path):
    assert Hdf5Source(tmp_path).path("a/x1.mp4") == tmp_path / "a" / "x1.h5"
    assert NpySource(tmp_path).path("a/x1.mp4") == tmp_path / "a" / "x1.npy"
    assert JpegSource(tmp_path).folder("a/x1.mp4") == tmp_path / "a" / "x1"
    assert JpegSource(tmp_path).frame_path("a/x1.webm", 0) == tmp_path / "a/x1/img_00001.jpg"
    with pytest.raises(ValueError, match="relative path inside the source root"):
        NpySource(tmp_path).path("../x1.mp4")


@pytest.mark.parametrize("kind", KINDS)
def test_index_past_the_end_raises_frame_count_error(kind, built):
    src = make_source(kind, built[kind])
    with pytest.raises(FrameCountError, match=f"frame {N} requested but only {N}") as info:
        src.read("a/x1.mp4", [3, N, N + 5])
    err = info.value
    assert isinstance(err, IndexError)
    assert (err.video_id, err.reported, err.actual, err.index) == ("a/x1.mp4", N, N, N)


@pytest.mark.parametrize("kind", KINDS)
def test_negative_and_bad_indices(kind, built):
    src = make_source(kind, built[kind])
    with pytest.raises(IndexError, match="must be >= 0") as info:
        src.read("a/x1", [2, -1])
    assert not isinstance(info.value, FrameCountError)
    with pytest.raises(TypeError, match="must be integers"):
        src.read("a/x1", [1.5])


@pytest.mark.parametrize("kind", KINDS)
def test_missing_container(kind, built):
    src = make_source(kind, built[kind])
    missing = str(container_path(kind, built[kind], "a/nope"))
    for call in (src.actual_frames, src.reported_frames, lambda v: src.read(v, [0])):
        with pytest.raises(VideoReadError, match="not found") as info:
            call("a/nope.mp4")
        assert info.value.path == missing


@pytest.mark.parametrize("kind", ["hdf5", "npy-mmap", "npy-read"])
def test_zero_byte_container(kind, tmp_path):
    path = container_path(kind, tmp_path, "z")
    path.write_bytes(b"")
    src = make_source(kind, tmp_path)
    with pytest.raises(VideoReadError, match=r"empty file \(0 bytes\)") as info:
        src.read("z.mp4", [0])
    assert info.value.path == str(path)


@pytest.mark.parametrize("kind", ["hdf5", "npy-mmap", "npy-read"])
def test_truncated_container(kind, built, tmp_path):
    data = container_path(kind, built[kind], "a/x1").read_bytes()
    path = container_path(kind, tmp_path, "t")
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(VideoReadError, match="truncated") as info:
        make_source(kind, tmp_path).read("t.mp4", [0])
    assert info.value.path == str(path)


@pytest.mark.parametrize("kind", ["hdf5", "npy-mmap"])
def test_not_a_container(kind, tmp_path):
    path = container_path(kind, tmp_path, "junk")
    path.write_bytes(b"this is not a container" * 50)
    with pytest.raises(VideoReadError, match="not a valid npy file|cannot open as HDF5"):
        make_source(kind, tmp_path).actual_frames("junk")


# --- byte-exact storage -----------------------------------------------------------------------


def test_stored_bytes_are_exact(tmp_path, jpegs):
    frames = list(jpegs[:5])
    frames[3] = frames[3] + b"\x00" * 7  # a JPEG with trailing zero bytes of its own
    write_jpeg_folder(tmp_path / "j", frames)
    assert [(tmp_path / "j" / f"img_{i:05d}.jpg").read_bytes() for i in range(1, 6)] == frames
    write_hdf5(tmp_path / "v.h5", frames, attrs={})
    with h5py.File(tmp_path / "v.h5", "r") as f:
        data, off = f["frames"][()], f["offsets"][()]
    assert [data[off[i] : off[i + 1]].tobytes() for i in range(5)] == frames
    write_npy(tmp_path / "v.npy", frames)
    assert read_npy_frame_bytes(tmp_path / "v.npy") == frames
    raw = np.load(tmp_path / "v.npy")  # plain numpy, as documented
    assert raw.dtype == np.uint8 and raw.shape == (5, 4 + max(map(len, frames)))
    n = int(raw[3, :4].view("<u4")[0])
    assert raw[3, 4 : 4 + n].tobytes() == frames[3]
    for mode in ("mmap", "read"):
        clip = NpySource(tmp_path, mode=mode).read("v", [3, 4])
        assert [frame_number(f) for f in clip] == [3, 4]


def test_hdf5_attributes(tmp_path, jpegs):
    write_hdf5(
        tmp_path / "v.h5", jpegs[:4], attrs={"fps": 29.97, "source": "a/v.mp4", "note": None}
    )
    with h5py.File(tmp_path / "v.h5", "r") as f:
        attrs = dict(f.attrs)
        assert f["frames"].chunks is None and f["frames"].compression is None
    assert attrs["num_frames"] == 4 and attrs["width"] == W and attrs["height"] == H
    assert attrs["fps"] == pytest.approx(29.97) and attrs["source"] == "a/v.mp4"
    assert attrs["format_version"] == 1 and "note" not in attrs


# --- JPEG folders ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["jpeg", "hdf5", "npy-mmap", "npy-read"])
def test_corrupt_bytes_inside_a_frame_raise_naming_it(kind, tmp_path, jpegs):
    """Bytes flipped in the middle of frame 5's entropy-coded data, its SOI and EOI intact,
    in the stored container: reading it raises VideoReadError naming the file and frame."""
    write(kind, tmp_path, "v", jpegs[:8])
    path = container_path(kind, tmp_path, "v")
    target = path / "img_00006.jpg" if kind == "jpeg" else path
    data = target.read_bytes()
    at = data.index(jpegs[5])
    target.write_bytes(data[:at] + corrupt_middle(jpegs[5]) + data[at + len(jpegs[5]) :])
    src = make_source(kind, tmp_path)
    with pytest.raises(VideoReadError, match="JPEG decode failed \\(corrupt data\\)") as info:
        src.read("v.mp4", [1, 5, 6])
    assert info.value.path == str(target) and info.value.index == 5
    assert f"{target} (frame 5)" in str(info.value)
    assert isinstance(info.value.__cause__, ValueError)
    assert [frame_number(f) for f in src.read("v", [4, 6])] == [4, 6]


@pytest.fixture
def folder(tmp_path, jpegs) -> Path:
    write_jpeg_folder(tmp_path / "a" / "v", jpegs)
    return tmp_path


def test_jpeg_truncated_frame_file_is_named_never_grey(folder):
    bad = folder / "a" / "v" / "img_00005.jpg"
    data = bad.read_bytes()
    bad.write_bytes(data[: len(data) // 2])
    src = JpegSource(folder)
    assert src.actual_frames("a/v") == N  # the file exists and is non-empty
    with pytest.raises(VideoReadError, match="no EOI marker") as info:
        src.read("a/v.mp4", [0, 4])
    assert info.value.path == str(bad) and info.value.index == 4
    bad.write_bytes(data[: len(data) // 2] + bytes(len(data) - len(data) // 2))
    with pytest.raises(VideoReadError, match="img_00005.jpg \\(frame 4\\): truncated"):
        src.read("a/v", [4])
    assert [frame_number(f) for f in src.read("a/v", [3, 5])] == [3, 5]


def test_jpeg_missing_file_ends_the_run(folder):
    (folder / "a" / "v" / "img_00010.jpg").unlink()
    src = JpegSource(folder)
    assert src.reported_frames("a/v") == N - 1  # files matching the template
    assert src.actual_frames("a/v") == 9
    assert [frame_number(f) for f in src.read("a/v", [8, 0])] == [8, 0]
    with pytest.raises(FrameCountError) as info:
        src.read("a/v", [15])  # exists on disk, but past the hole
    assert (info.value.reported, info.value.actual, info.value.index) == (N - 1, 9, 15)
    (folder / "a" / "v" / "img_00004.jpg").unlink()
    assert src.actual_frames("a/v") == 9  # cached per process, as documented
    assert JpegSource(folder).actual_frames("a/v") == 3


def test_jpeg_empty_files(folder):
    frames = folder / "a" / "v"
    (frames / "img_00004.jpg").write_bytes(b"")
    for i in (N - 1, N):
        (frames / f"img_{i:05d}.jpg").write_bytes(b"")
    src = JpegSource(folder)
    assert src.reported_frames("a/v") == N
    assert src.actual_frames("a/v") == N - 2  # empty files at the end do not count
    with pytest.raises(VideoReadError, match=r"empty JPEG data \(0 bytes\)") as info:
        src.read("a/v", [2, 3])  # an empty file inside the run is a corrupt frame
    assert info.value.path == str(frames / "img_00004.jpg") and info.value.index == 3
    with pytest.raises(FrameCountError):
        src.read("a/v", [N - 2])
    for i in range(1, N + 1):
        (frames / f"img_{i:05d}.jpg").write_bytes(b"")
    assert JpegSource(folder).actual_frames("a/v") == 0


def test_jpeg_reported_counts(folder):
    extra = folder / "a" / "v"
    for name in ("img_1.jpg", "img_00001.png", "flow_x_00001.jpg", "notes.txt", "img_-0001.jpg"):
        (extra / name).write_bytes(b"x")
    src = JpegSource(folder)
    assert src.reported_frames("a/v") == N
    counted = JpegSource(folder, frame_counts={"a/v.mp4": 30})
    assert counted.reported_frames("a/v") == 30 and counted.actual_frames("a/v") == N
    with pytest.raises(FrameCountError) as info:
        counted.read("a/v", [N])
    assert (info.value.reported, info.value.actual) == (30, N)


def test_jpeg_template_and_start_index(tmp_path, jpegs):
    write_jpeg_folder(tmp_path / "v", jpegs[:6], template="{:06d}.jpg", start_index=0)
    assert (tmp_path / "v" / "000000.jpg").read_bytes() == jpegs[0]
    src = JpegSource(tmp_path, template="{:06d}.jpg", start_index=0)
    assert src.actual_frames("v") == src.reported_frames("v") == 6
    assert [frame_number(f) for f in src.read("v", [5, 0])] == [5, 0]
    assert JpegSource(tmp_path).actual_frames("v") == 0


@pytest.mark.parametrize("template", ["img.jpg", "{}_{}.jpg", "{name}.jpg", "a/{:05d}.jpg", "{"])
def test_jpeg_bad_template(tmp_path, template):
    with pytest.raises(ValueError, match="template"):
        JpegSource(tmp_path, template=template)


def test_jpeg_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match=r"start_index \(-1\) must be >= 0"):
        JpegSource(tmp_path, start_index=-1)
    with pytest.raises(ValueError, match=r"frame_counts\['v'\] \(-3\) must be >= 0"):
        JpegSource(tmp_path, frame_counts={"v": -3})
    (tmp_path / "file").write_bytes(b"x")
    with pytest.raises(VideoReadError, match="not a folder of frames"):
        JpegSource(tmp_path).actual_frames("file")


# --- HDF5 --------------------------------------------------------------------------------------


def test_hdf5_count_attribute_disagreeing_with_data(tmp_path, jpegs):
    path = tmp_path / "v.h5"
    write_hdf5(path, jpegs[:10], attrs={})
    with h5py.File(path, "a") as f:
        f.attrs["num_frames"] = 12
    src = Hdf5Source(tmp_path)
    for call in (src.reported_frames, src.actual_frames, lambda v: src.read(v, [0])):
        with pytest.raises(VideoReadError, match="num_frames attribute says 12 .* holds 10") as e:
            call("v.mp4")
        assert e.value.path == str(path)


def test_hdf5_corrupt_structure(tmp_path, jpegs):
    path = tmp_path / "v.h5"
    write_hdf5(path, jpegs[:4], attrs={})
    with h5py.File(path, "a") as f:
        f["offsets"][2] = f["offsets"][1]
    with pytest.raises(VideoReadError, match="corrupt 'offsets'"):
        Hdf5Source(tmp_path).read("v", [0])
    with h5py.File(tmp_path / "w.h5", "w") as f:
        f["images"] = np.zeros(3)
    with pytest.raises(VideoReadError, match="needs datasets 'frames' and 'offsets'"):
        Hdf5Source(tmp_path).actual_frames("w")
    write_hdf5(tmp_path / "t.h5", jpegs[:4], attrs={})
    with h5py.File(tmp_path / "t.h5", "a") as f:
        f.attrs["format_version"] = 99
    with pytest.raises(VideoReadError, match="format_version 99 is newer"):
        Hdf5Source(tmp_path).actual_frames("t")


def test_hdf5_corrupt_frame_bytes(tmp_path, jpegs):
    path = tmp_path / "v.h5"
    write_hdf5(path, jpegs[:4], attrs={})
    with h5py.File(path, "a") as f:
        end = f["offsets"][3]
        f["frames"][end - 2 : end] = 0  # frame 2 loses its EOI marker
    with pytest.raises(VideoReadError, match=r"v\.h5 \(frame 2\): truncated or corrupt JPEG"):
        Hdf5Source(tmp_path).read("v", [1, 2])


def test_hdf5_chunked_frames_read_through_h5py(tmp_path, jpegs):
    """A file whose `frames` is chunked and compressed (another tool's writer) has no single
    byte offset: it is read through h5py slices and gives the same frames."""
    write_hdf5(tmp_path / "plain.h5", jpegs[:6], attrs={})
    with h5py.File(tmp_path / "plain.h5", "r") as f, h5py.File(tmp_path / "chunked.h5", "w") as g:
        g.create_dataset("frames", data=f["frames"][()], chunks=(4096,), compression="gzip")
        g.create_dataset("offsets", data=f["offsets"][()])
    src = Hdf5Source(tmp_path)
    plain, chunked = src._head("plain"), src._head("chunked")
    assert plain.data_offset is not None and chunked.data_offset is None
    np.testing.assert_array_equal(src.read("chunked", [5, 0, 3]), src.read("plain", [5, 0, 3]))
    assert [frame_number(f) for f in src.read("chunked", [5, 0, 3])] == [5, 0, 3]


def test_hdf5_handle_cache(tmp_path, jpegs):
    for name in ("p", "q"):
        write_hdf5(tmp_path / f"{name}.h5", jpegs[:3], attrs={})
    src = Hdf5Source(tmp_path, cache_size=1)
    src.read("p", [0])
    first = src._heads.get(str(tmp_path / "p.h5"))
    assert first is not None
    src.read("q", [1])
    assert list(src._heads) == [str(tmp_path / "q.h5")] and not first.file.id.valid
    inherited = src._heads.get(str(tmp_path / "q.h5"))
    src._heads._pid = -1  # as after a fork: the inherited handle must not be used or closed
    src.read("q", [2])
    assert inherited is not None and inherited.file.id.valid
    reopened = src._heads.get(str(tmp_path / "q.h5"))
    assert reopened is not None and reopened is not inherited
    src.close()
    assert not src._heads and not reopened.file.id.valid and inherited.file.id.valid
    uncached = Hdf5Source(tmp_path, cache_size=0)
    assert [frame_number(f) for f in uncached.read("p", [2, 0])] == [2, 0]
    assert not uncached._heads
    with pytest.raises(ValueError, match=r"cache_size \(-1\) must be >= 0"):
        Hdf5Source(tmp_path, cache_size=-1)


# --- npy ---------------------------------------------------------------------------------------


def test_npy_truncated_and_foreign_files(tmp_path, jpegs):
    path = tmp_path / "v.npy"
    write_npy(path, jpegs[:5])
    data = path.read_bytes()
    path.write_bytes(data[:-100])
    for mode in ("mmap", "read"):
        with pytest.raises(VideoReadError, match="truncated or corrupt") as info:
            NpySource(tmp_path, mode=mode).read("v", [0])
        assert info.value.path == str(path)
    np.save(tmp_path / "f.npy", np.zeros((3, 40), np.float32))
    with pytest.raises(VideoReadError, match="needs a 2-D C-order uint8 array"):
        NpySource(tmp_path).actual_frames("f")
    plain = np.zeros((2, 5000), np.uint8)  # rows holding JPEGs without the length prefix
    plain[0, : len(jpegs[0])] = np.frombuffer(jpegs[0], np.uint8)
    np.save(tmp_path / "p.npy", plain)
    with pytest.raises(VideoReadError, match=r"p\.npy \(frame 0\): corrupt row: length prefix"):
        NpySource(tmp_path).read("p", [0])


def test_npy_header_cache_follows_file_replacement(tmp_path, jpegs):
    src = NpySource(tmp_path)
    write_npy(tmp_path / "v.npy", jpegs[:4])
    assert src.actual_frames("v") == 4
    write_npy(tmp_path / "v.npy", [encode_jpeg(paint(i, 2 * W, 2 * H)) for i in range(7)])
    assert src.actual_frames("v") == 7
    assert src.read("v", [6]).shape == (1, 2 * H, 2 * W, 3)


def test_npy_headers_are_read_without_python_ast(tmp_path, jpegs, monkeypatch):
    """numpy's header parser builds an AST, which CPython 3.11 can fail with a spurious
    SystemError when two threads do it at once (the read-ahead thread and a 0-worker loader):
    vidload reads the headers numpy writes without it, and any other header still parses."""
    import ast

    write_npy(tmp_path / "v.npy", jpegs[:5])
    rows = np.load(tmp_path / "v.npy")
    with open(tmp_path / "v2.npy", "wb") as f:
        np.lib.format.write_array(f, rows, version=(2, 0))
    # the same array under a header numpy would not write (keys reordered, extra spaces)
    h, w = rows.shape
    text = f"{{'shape': ({h}, {w}), 'fortran_order': False, 'descr': '|u1'}}"
    header = (text + " " * (64 - (10 + len(text) + 1) % 64) + "\n").encode("latin1")
    odd = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + rows.tobytes()
    (tmp_path / "odd.npy").write_bytes(odd)

    def refuse(*args, **kwargs):
        raise SystemError("AST constructor recursion depth mismatch")

    with monkeypatch.context() as patch:
        patch.setattr(ast, "literal_eval", refuse)
        for vid in ("v", "v2"):
            src = NpySource(tmp_path)
            assert src.actual_frames(vid) == 5
            assert [frame_number(f) for f in src.read(vid, [4, 0])] == [4, 0]
        with pytest.raises(VideoReadError, match="not a valid npy file: SystemError"):
            NpySource(tmp_path).actual_frames("odd")  # proves the odd header takes numpy's path
    src = NpySource(tmp_path)
    assert src.actual_frames("odd") == 5
    assert [frame_number(f) for f in src.read("odd", [3])] == [3]


def test_npy_bad_mode(tmp_path):
    with pytest.raises(ValueError, match="mode \\('mmap2'\\) must be one of"):
        NpySource(tmp_path, mode="mmap2")  # type: ignore[arg-type]


# --- pickling and DataLoader workers -----------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_pickle_after_use(kind, built):
    src = make_source(kind, built[kind])
    src.read("a/x1", [1])  # opens handles / fills caches
    blob = pickle.dumps(src)
    assert len(blob) < 1000
    clone = pickle.loads(blob)
    assert [frame_number(f) for f in clone.read("a/x1", [4, 2])] == [4, 2]


class _Clips(Dataset):
    """Item i: the frame numbers of a 3-frame read, with the worker's pid."""

    def __init__(self, src: FrameSource, video_id: str) -> None:
        self.src, self.video_id = src, video_id

    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int):
        idx = [(i * 5 + k * 7) % N for k in range(3)]
        clip = self.src.read(self.video_id, idx)
        return torch.tensor([frame_number(f) for f in clip]), torch.tensor(idx), os.getpid()


@pytest.mark.parametrize("kind", ["hdf5", "npy-mmap", "jpeg"])
def test_fork_after_parent_read(kind, built):
    src = make_source(kind, built[kind])
    assert src.read("a/x1.mp4", [0]).shape == (1, H, W, 3)  # parent opens first
    loader = DataLoader(
        _Clips(src, "a/x1.mp4"),
        batch_size=2,
        num_workers=2,
        multiprocessing_context="fork",
    )
    pids = set()
    for got, want, pid in loader:
        assert torch.equal(got, want)
        pids.update(pid.tolist())
    assert os.getpid() not in pids and len(pids) == 2
    assert [frame_number(f) for f in src.read("a/x1", [9])] == [9]  # parent still fine


# --- atomic writers ----------------------------------------------------------------------------


def _failing(frames: list[bytes], after: int) -> Iterator[bytes]:
    for i, f in enumerate(frames):
        if i == after:
            raise RuntimeError("source video broke")
        yield f


WRITERS: dict[str, Callable[[Path, object], int]] = {
    "jpeg": lambda p, fr: write_jpeg_folder(p, fr),
    "hdf5": lambda p, fr: write_hdf5(p, fr, attrs={}),
    "npy": lambda p, fr: write_npy(p, fr),
}


@pytest.mark.parametrize("kind", list(WRITERS))
def test_failed_write_leaves_nothing(kind, tmp_path, jpegs):
    path = tmp_path / {"jpeg": "v", "hdf5": "v.h5", "npy": "v.npy"}[kind]
    with pytest.raises(RuntimeError, match="source video broke"):
        WRITERS[kind](path, _failing(jpegs, after=5))
    assert not path.exists()
    assert list(path.parent.iterdir()) == []  # temp cleaned up
    with pytest.raises(ValueError, match="not a complete JPEG"):
        WRITERS[kind](path, [jpegs[0], jpegs[1][:-10]])
    assert list(path.parent.iterdir()) == []
    with pytest.raises(ValueError, match="no frames to write"):
        WRITERS[kind](path, [])
    assert list(path.parent.iterdir()) == []


@pytest.mark.parametrize("kind", ["hdf5", "npy"])
def test_writers_stream_frames_in_bounded_memory(kind, tmp_path, jpegs, monkeypatch):
    """Memory while writing does not grow with the number of frames: 2,000 frames (~1.6 MB)
    written from a generator with 64 KiB copy blocks peak far below their total size."""
    import tracemalloc

    import vidload.sources._hdf5_write as hdf5_mod
    import vidload.sources.npy as npy_mod

    monkeypatch.setattr(hdf5_mod, "BLOCK_BYTES", 1 << 16)
    monkeypatch.setattr(npy_mod, "BLOCK_BYTES", 1 << 16)
    n = 2000
    total = sum(len(jpegs[i % 4]) for i in range(n))
    path = tmp_path / {"hdf5": "v.h5", "npy": "v.npy"}[kind]
    tracemalloc.start()
    try:
        assert WRITERS[kind](path, (jpegs[i % 4] for i in range(n))) == n
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert total > 1 << 20 and peak < total / 8, (peak, total)
    assert list(tmp_path.iterdir()) == [path]  # the spill file is gone
    src = make_source("hdf5" if kind == "hdf5" else "npy-mmap", tmp_path)
    got = src.read("v", [0, 1, 1998, 1999])
    assert [frame_number(f) for f in got] == [0, 1, 2, 3]


@pytest.mark.parametrize("kind", list(WRITERS))
def test_write_replaces_and_failed_rewrite_keeps_old(kind, tmp_path, jpegs):
    path = tmp_path / {"jpeg": "v", "hdf5": "v.h5", "npy": "v.npy"}[kind]
    assert WRITERS[kind](path, jpegs[:5]) == 5
    with pytest.raises(RuntimeError):
        WRITERS[kind](path, _failing(jpegs, after=2))
    src = {"jpeg": JpegSource, "hdf5": Hdf5Source, "npy": NpySource}[kind](tmp_path)
    assert src.actual_frames("v") == 5
    assert WRITERS[kind](path, jpegs[:3]) == 3
    src = {"jpeg": JpegSource, "hdf5": Hdf5Source, "npy": NpySource}[kind](tmp_path)
    assert src.actual_frames("v") == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_hdf5_writer_checks(tmp_path, jpegs):
    with pytest.raises(ValueError, match=r"attrs\['num_frames'\] \(9\) disagrees"):
        write_hdf5(tmp_path / "v.h5", jpegs[:3], attrs={"num_frames": 9})
    with pytest.raises(TypeError, match=r"attrs\['meta'\] must be str, int, float or bool"):
        write_hdf5(tmp_path / "v.h5", jpegs[:3], attrs={"meta": {"a": 1}})
    with pytest.raises(ValueError, match="all frames of a video must have one size"):
        write_hdf5(tmp_path / "v.h5", [jpegs[0], encode_jpeg(paint(1, 64, 48))], attrs={})
    assert write_hdf5(tmp_path / "v.h5", jpegs[:3], attrs={"num_frames": 3, "width": W}) == 3
    assert list(tmp_path.iterdir()) == [tmp_path / "v.h5"]
