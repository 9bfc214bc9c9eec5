"""Display rotation: VideoSource applies the display matrix (90/180/270 and mirrors) by
default, frame-exact against a sequential decode turned by numpy; convert stores upright frames
and records the rotation; probe shows it."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
from media import frame_number, paint, sequential_decode

from vidload.cli import main
from vidload.convert import convert
from vidload.manifest import read_manifest
from vidload.sources._orientation import IDENTITY, Orientation, parse_orientation
from vidload.sources.hdf5 import Hdf5Source
from vidload.sources.jpeg import JpegSource
from vidload.sources.npy import NpySource
from vidload.sources.video import VideoSource

W, H, N = 64, 48, 12
# (degrees counter-clockwise, mirror after rotating): all eight orientations
ORIENTATIONS = [(d, f) for d in (0, 90, 180, 270) for f in (False, True)]


def make_rotated(path: Path, degrees: int, hflip: bool, *, codec: str = "libx264") -> Path:
    """N painted W x H frames (B-frames, GOP 6) with a display matrix set by PyAV."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as out:
        stream = out.add_stream(codec, rate=Fraction(25))
        stream.width, stream.height, stream.pix_fmt = W, H, "yuv420p"
        stream.options = {"g": "6", "bf": "2"} if codec == "libx264" else {}
        if degrees or hflip:
            stream.set_display_rotation(degrees, hflip=hflip)
        for i in range(N):
            frame = av.VideoFrame.from_ndarray(paint(i, W, H), format="rgb24")
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return path


def displayed(stored: np.ndarray, degrees: int, hflip: bool) -> np.ndarray:
    """What a player shows: np.rot90 turns counter-clockwise, then the mirror."""
    out = np.rot90(stored, degrees // 90)
    return out[:, ::-1] if hflip else out


def upright_number(rgb: np.ndarray, degrees: int, hflip: bool) -> int:
    """The painted number of a displayed frame, read after undoing the display transform."""
    stored = rgb[:, ::-1] if hflip else rgb
    return frame_number(np.rot90(stored, -(degrees // 90)))


def name(degrees: int, hflip: bool) -> str:
    return f"{degrees}+hflip" if hflip else str(degrees)


@pytest.fixture(scope="module")
def rotated(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("rotated")
    for degrees, hflip in ORIENTATIONS:
        make_rotated(folder / f"r{name(degrees, hflip)}.mp4", degrees, hflip)
    make_rotated(folder / "mov/r270.mov", 270, False)
    make_rotated(folder / "mkv/r90.mkv", 90, True)
    return folder


@pytest.mark.parametrize(("degrees", "hflip"), ORIENTATIONS)
def test_read_is_frame_exact_after_rotation(rotated, degrees, hflip):
    vid = f"r{name(degrees, hflip)}.mp4"
    stored = sequential_decode(rotated / vid)
    assert stored[0].shape == (H, W, 3)
    src = VideoSource(rotated)
    assert str(src.orientation(vid)) == name(degrees, hflip)
    idx = [7, 0, 11, 3, 3, 10]
    got = src.read(vid, idx)
    shape = (W, H) if degrees % 180 else (H, W)
    assert got.shape == (len(idx), *shape, 3) and got.flags.c_contiguous
    for k, i in enumerate(idx):
        np.testing.assert_array_equal(got[k], displayed(stored[i], degrees, hflip))
        assert upright_number(got[k], degrees, hflip) == i
    assert src.read(vid, []).shape == (0, *shape, 3)
    frames = list(src.iter_frames(vid))
    assert len(frames) == N
    np.testing.assert_array_equal(frames[5], displayed(stored[5], degrees, hflip))
    # counts do not depend on the rotation; "ignore" gives the stored pixels
    plain = VideoSource(rotated, rotation="ignore")
    assert plain.actual_frames(vid) == src.actual_frames(vid) == N
    assert plain.reported_frames(vid) == src.reported_frames(vid) == N
    np.testing.assert_array_equal(plain.read(vid, idx), np.stack([stored[i] for i in idx]))


def test_a_portrait_phone_video_comes_back_portrait(rotated):
    src = VideoSource(rotated)
    # a phone held upright records landscape pixels and a display matrix of -90 degrees
    # (ffprobe's "rotation of -90.00 degrees"; ffmpeg turns it with transpose=clock)
    frames = src.read("mov/r270.mov", [4, 9])
    assert frames.shape == (2, W, H, 3)
    np.testing.assert_array_equal(frames[0], np.rot90(paint_like(src, "mov/r270.mov", 4), -1))
    assert [upright_number(f, 270, False) for f in frames] == [4, 9]
    mkv = src.read("mkv/r90.mkv", [11, 2])  # Matroska carries the matrix too
    assert [upright_number(f, 90, True) for f in mkv] == [11, 2]
    assert "rotation='auto'" in repr(src)
    with pytest.raises(ValueError, match=r"rotation \('upright'\) must be one of"):
        VideoSource(rotated, rotation="upright")


def paint_like(src: VideoSource, vid: str, i: int) -> np.ndarray:
    """Frame i as stored (rotation="ignore")."""
    return VideoSource(src.root, rotation="ignore").read(vid, [i])[0]


def test_orientation_names_round_trip():
    names = {str(Orientation(t, r, c)) for t in (0, 1) for r in (0, 1) for c in (0, 1)}
    assert names == {name(d, f) for d, f in ORIENTATIONS}
    for text in names:
        assert str(parse_orientation(text)) == text
    assert parse_orientation("0") is not None and parse_orientation("0") == IDENTITY
    with pytest.raises(ValueError, match=r"rotation \('45'\) must be one of"):
        parse_orientation("45")


@pytest.mark.parametrize("to", ["jpeg", "hdf5", "npy"])
def test_convert_stores_upright_frames_and_the_rotation(rotated, tmp_path, to):
    out = tmp_path / to
    report = convert(rotated, out, to=to, workers=1, progress=False)
    assert report.ok
    rows = {r.video_id: r for r in read_manifest(out / "manifest.csv")}
    src = {"jpeg": JpegSource, "hdf5": Hdf5Source, "npy": NpySource}[to](out)
    video = VideoSource(rotated)
    for degrees, hflip in [(90, False), (270, True), (180, False)]:
        vid = f"r{name(degrees, hflip)}.mp4"
        row = rows[vid]
        shape = (W, H) if degrees % 180 else (H, W)
        assert (row.rotation, (row.height, row.width), row.actual_frames) == (
            name(degrees, hflip),
            shape,
            N,
        )
        got = src.read(vid, list(range(N)))
        want = video.read(vid, list(range(N)))
        assert got.shape == want.shape == (N, *shape, 3)
        for i in range(N):
            assert upright_number(got[i], degrees, hflip) == i
            err = np.abs(got[i].astype(int) - want[i].astype(int)).mean()
            assert err < 3, f"{vid} frame {i}: mean abs error {err:.1f}"  # JPEG q95
    assert rows["mov/r270.mov"].rotation == "270"
    assert rows["r0.mp4"].rotation == "0"


def test_probe_shows_the_rotation(rotated, capsys):
    assert main(["probe", str(rotated / "r270.mp4"), "-q"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[-2:] == ["rotation", "status"]
    assert lines[1].split()[:6] == ["r270.mp4", str(N), str(N), f"{H}x{W}", "25.00", "270"]


def test_a_matrix_that_is_not_a_right_angle_is_an_error(tmp_path):
    from vidload.errors import VideoReadError

    path = tmp_path / "r45.mp4"
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=Fraction(25))
        stream.width, stream.height, stream.pix_fmt = W, H, "yuv420p"
        c = s = int(round(65536 * np.sqrt(0.5)))
        stream.set_display_matrix([c, -s, 0, s, c, 0, 0, 0, 1 << 30])
        for i in range(3):
            for packet in stream.encode(av.VideoFrame.from_ndarray(paint(i, W, H), "rgb24")):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    with pytest.raises(VideoReadError, match=r"r45.mp4.*not a multiple of 90.*rotation='ignore'"):
        VideoSource(tmp_path).read("r45.mp4", [1])
    assert frame_number(VideoSource(tmp_path, rotation="ignore").read("r45.mp4", [1])[0]) == 1


@pytest.mark.parametrize(("degrees", "hflip"), [(90, False), (270, True), (180, False)])
def test_geometry_resolves_against_the_displayed_frame(rotated, degrees, hflip):
    from vidload.transforms import apply_geometry, plan_geometry

    vid = f"r{name(degrees, hflip)}.mp4"
    src = VideoSource(rotated)
    idx = [2, 9, 2]
    full = src.read(vid, idx)  # upright, (W, H) for 90/270
    dh, dw = full.shape[1:3]
    for seed in range(3):  # crop only: no scaling, so exactly the displayed box
        plan = plan_geometry(crop=(20, 16), flip=True, train=True, rng=np.random.default_rng(seed))
        top, left, bh, bw = plan.resolve(dh, dw).box
        want = full[:, top : top + bh, left : left + bw]
        want = want[:, :, ::-1] if plan.flip else want
        np.testing.assert_array_equal(src.read(vid, idx, geometry=plan), want)
    # scaled in the YUV -> RGB pass in the stored orientation, then turned: still upright
    plan = plan_geometry(short_side=36, train=False, rng=None)
    got = src.read(vid, idx, geometry=plan)
    ref = apply_geometry(full, plan)
    assert got.shape == ref.shape and got.shape[1:3] == ((48, 36) if degrees % 180 else (36, 48))
    assert [upright_number(f, degrees, hflip) for f in got] == idx
    assert np.abs(got.astype(int) - ref.astype(int)).mean() < 4
    assert src.read(vid, [], geometry=plan).shape == (0, *got.shape[1:])
