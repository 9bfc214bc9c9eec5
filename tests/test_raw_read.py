"""The container sources' raw read (`read_encoded`), the shared decode, and their argument
checks (one rule for every source: NumPy integers accepted, bools refused)."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
from media import frame_number, paint

from vidload.errors import FrameCountError
from vidload.sources.hdf5 import Hdf5Source, write_hdf5
from vidload.sources.jpeg import JpegSource, write_jpeg_folder
from vidload.sources.jpeg_decode import decode_jpeg, encode_jpeg
from vidload.sources.npy import NpySource, write_npy
from vidload.sources.video import VideoSource
from vidload.transforms import ClipGeometry

N, W, H = 12, 64, 48
KINDS = ["jpeg", "hdf5", "npy-mmap", "npy-read"]


@pytest.fixture(scope="module")
def jpegs() -> list[bytes]:
    # a trailing zero byte after EOI is stored and returned exactly
    return [encode_jpeg(paint(i, W, H), quality=90) + b"\0" * (i % 2) for i in range(N)]


@pytest.fixture(scope="module")
def roots(tmp_path_factory, jpegs) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("raw")
    write_jpeg_folder(base / "jpeg" / "v", jpegs)
    write_hdf5(base / "hdf5" / "v.h5", jpegs)
    write_npy(base / "npy" / "v.npy", jpegs)
    (base / "empty").mkdir()
    write_jpeg_folder(base / "empty" / "one", jpegs[:1])
    return {"jpeg": base / "jpeg", "hdf5": base / "hdf5", "npy": base / "npy"}


def source(kind: str, roots: dict[str, Path], **kwargs):
    if kind == "jpeg":
        return JpegSource(roots["jpeg"], **kwargs)
    if kind == "hdf5":
        return Hdf5Source(roots["hdf5"], **kwargs)
    return NpySource(roots["npy"], mode=kind.split("-")[1], **kwargs)


@pytest.mark.parametrize("kind", KINDS)
def test_read_encoded_gives_the_stored_bytes_in_the_order_asked(kind, roots, jpegs):
    src = source(kind, roots)
    asked = [7, 2, 7, 0, 11]
    enc = src.read_encoded("v.mp4", asked)
    assert enc.frames.tolist() == [0, 2, 7, 11]  # each distinct frame read once
    assert enc.frames[enc.order].tolist() == asked
    assert enc.clip_bytes() == [jpegs[i] for i in asked]
    assert len(enc.buffers) == 4
    stored = sum(len(jpegs[i]) for i in (0, 2, 7, 11))
    if kind == "npy-read":  # the whole file is read
        assert enc.nbytes_read == (roots["npy"] / "v.npy").stat().st_size
    elif kind == "npy-mmap":  # the rows' length prefixes too
        assert enc.nbytes_read == stored + 4 * 4
    else:
        assert enc.nbytes_read == stored


@pytest.mark.parametrize("kind", KINDS)
def test_read_is_the_raw_read_plus_the_shared_decode(kind, roots, jpegs):
    src = source(kind, roots)
    asked = [3, 9, 3]
    clip = src.read("v", asked)
    assert [frame_number(f) for f in clip] == asked
    expected = np.stack([decode_jpeg(jpegs[i]) for i in asked])
    assert np.array_equal(clip, expected)
    assert np.array_equal(src.read_encoded("v", asked).decode(), expected)
    geometry = ClipGeometry(32, (24, 32), None, None, (0.5, 0.25), True)
    fused = src.read("v", asked, geometry=geometry)
    assert fused.shape == (3, 24, 32, 3)
    assert np.array_equal(fused, src.read_encoded("v", asked).decode(geometry=geometry))
    small = source(kind, roots, decode_size=(H // 2, W // 2))
    assert small.read("v", [1]).shape == (1, H // 2, W // 2, 3)


@pytest.mark.parametrize("kind", KINDS)
def test_read_encoded_past_the_end_and_empty(kind, roots):
    src = source(kind, roots)
    with pytest.raises(FrameCountError, match="frame 12") as info:
        src.read_encoded("v", [0, 12, 13])
    assert (info.value.actual, info.value.index) == (N, 12)
    empty = src.read_encoded("v", [])
    assert empty.order.size == 0 and empty.clip_bytes() == []
    assert src.read("v", []).shape == (0, H, W, 3)


def test_raw_read_of_a_source_survives_pickling(roots):
    for kind in KINDS:
        src = source(kind, roots)
        src.read_encoded("v", [1])
        clone = pickle.loads(pickle.dumps(src))
        assert clone.read_encoded("v", [1]).clip_bytes() == src.read_encoded("v", [1]).clip_bytes()


# --- argument checks: one rule for every source ------------------------------------------------

INT_ARGS = [
    (VideoSource, "threads"),
    (VideoSource, "cache_size"),
    (VideoSource, "stream"),
    (Hdf5Source, "cache_size"),
    (JpegSource, "start_index"),
]


@pytest.mark.parametrize(("make", "name"), INT_ARGS)
def test_numpy_integers_are_accepted_as_plain_ints(make, name, tmp_path):
    src = make(tmp_path, **{name: np.int64(2)})
    assert getattr(src, name) == 2 and type(getattr(src, name)) is int
    src = make(tmp_path, **{name: np.uint8(1)})
    assert type(getattr(src, name)) is int


@pytest.mark.parametrize(("make", "name"), INT_ARGS)
@pytest.mark.parametrize("bad", [True, np.bool_(False), 1.0, "1"])
def test_bools_and_non_integers_are_refused(make, name, bad, tmp_path):
    with pytest.raises(TypeError, match=rf"{name} must be an int"):
        make(tmp_path, **{name: bad})


@pytest.mark.parametrize(("make", "name"), INT_ARGS)
def test_negative_integers_are_refused(make, name, tmp_path):
    with pytest.raises(ValueError, match=rf"{name} \(-1\) must be >= 0"):
        make(tmp_path, **{name: np.int64(-1)})


def test_frame_counts_follow_the_same_rule(tmp_path):
    src = JpegSource(tmp_path, frame_counts={"v": np.int32(5)})
    assert src.reported_frames("v") == 5 and type(src.frame_counts["v"]) is int
    with pytest.raises(TypeError, match=r"frame_counts\['v'\] must be an int"):
        JpegSource(tmp_path, frame_counts={"v": True})
    with pytest.raises(ValueError, match=r"frame_counts\['v'\] \(-1\) must be >= 0"):
        JpegSource(tmp_path, frame_counts={"v": np.int64(-1)})


@pytest.mark.parametrize("make", [JpegSource, Hdf5Source, NpySource])
def test_fps_follows_the_number_rule(make, tmp_path):
    assert make(tmp_path, fps=np.float32(12.5)).fps == 12.5
    assert type(make(tmp_path, fps=np.int64(25)).fps) is float
    with pytest.raises(TypeError, match="fps must be a number"):
        make(tmp_path, fps=True)
    with pytest.raises(ValueError, match=r"fps \(0\) must be a finite number > 0"):
        make(tmp_path, fps=0)


@pytest.mark.parametrize(
    ("make", "name", "bad"),
    [
        (VideoSource, "rotation", "auto2"),
        (VideoSource, "frame_index", "seek"),
        (NpySource, "mode", "mmap2"),
    ],
)
def test_modes_are_checked_against_their_choices(make, name, bad, tmp_path):
    with pytest.raises(ValueError, match=rf"{name} \('{bad}'\) must be one of"):
        make(tmp_path, **{name: bad})


@pytest.mark.slow
def test_the_read_paths_tool_runs_every_section(tmp_path, capsys, monkeypatch):
    """tools/read_paths.py reproduces the figures the sources' docstrings quote."""
    import importlib

    from media import make_video

    # importable by name: its `items` rows run in spawned processes, which import it again
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "tools"))
    module = importlib.import_module("read_paths")
    video = make_video(tmp_path / "v.mp4", 12)
    assert (
        module.main(
            [str(video), "--work", str(tmp_path / "work"), "--clips", "2", "--repeats", "1"]
        )
        == 0
    )
    out = capsys.readouterr().out
    for section in ("hdf5 (", "npy (", "jpeg (", "decode (", "items (", "video ("):
        assert section in out
    assert out.count(" us/") == 41  # every row printed
    assert out.count(" faults/item") == 12
