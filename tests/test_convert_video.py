"""`vidload convert --to video`: videos re-encoded for random access, read back by
`VideoSource(OUT)` with the originals' ids; hard inputs (B-frames and a long GOP, VFR, a rotated
phone video, a non-zero start time, two video streams, AVI, damage) checked by the painted frame
numbers, counts and timestamps; the persisted frame index; resume and kill -9."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from media import (
    encode_frames,
    frame_number,
    make_two_stream_video,
    make_video,
    real_clip,
    sequential_decode,
    shared_videos,
    truncate_copy,
    video_packets,
)
from test_rotation import make_rotated, upright_number

import vidload.sources.video as video_mod
from vidload import ClipDataset
from vidload._layout import index_path
from vidload.cli import main
from vidload.convert import convert
from vidload.errors import UsageError
from vidload.manifest import read_manifest
from vidload.sources._orientation import IDENTITY
from vidload.sources.video import VideoSource

W, H = 96, 64
GOP = 4
FAST = {"gop": GOP, "crf": 18, "preset": "ultrafast"}  # small and quick for the tests
VFR_PTS = [0, 40, 80, 200, 240, 260, 400, 440, 480, 520, 700, 740]  # ms: gaps and bursts
START_PTS = [50 + i for i in range(14)]  # 1/25 s: starts at 2.0 s


@pytest.fixture(scope="module")
def hard(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("hard") / "in"
    make_video(folder / "a/bframes.mp4", 30, width=W, height=H, options={"g": "30", "bf": "3"})
    encode_frames(
        folder / "a/vfr.mkv", range(len(VFR_PTS)), pts=VFR_PTS, time_base=Fraction(1, 1000),
        width=W, height=H,
    )  # fmt: skip
    encode_frames(
        folder / "b/start.mp4", range(len(START_PTS)), pts=START_PTS, time_base=Fraction(1, 25),
        width=W, height=H, options={"bf": "2"},
    )  # fmt: skip
    make_rotated(folder / "b/phone.mp4", 90, False)
    make_two_stream_video(folder / "b/two.mkv", (9, 13))
    make_video(folder / "c/x.avi", 18, codec="mpeg4", width=W, height=H, options={"g": "9"})
    full = make_video(
        folder / "_full.mp4", 40, width=W, height=H, options={"g": "8"},
        container_options={"movflags": "faststart"},
    )  # fmt: skip
    truncate_copy(full, folder / "c/cut.mp4", 0.6)
    full.unlink()
    (folder / "c/broken.mp4").write_bytes(b"not a video\n" * 40)
    return folder


@pytest.fixture(scope="module")
def converted(hard, tmp_path_factory):
    out = tmp_path_factory.mktemp("hard") / "out"
    report = convert(hard, out, to="video", workers=1, progress=False, **FAST)
    return out, report


GOOD = ["a/bframes.mp4", "a/vfr.mkv", "b/phone.mp4", "b/start.mp4", "b/two.mkv", "c/cut.mp4",
        "c/x.avi"]  # fmt: skip


def test_every_good_video_converts_and_the_damaged_one_fails(converted):
    out, report = converted
    assert sorted(report.converted) == GOOD
    assert [r.video_id for r in report.failed] == ["c/broken.mp4"]
    assert "not a readable video" in report.failed[0].error
    rows = {r.video_id: r for r in read_manifest(out / "manifest.csv")}
    assert rows["c/broken.mp4"].status == "failed"
    assert not (out / "c/broken.mp4").exists() and not list(out.rglob(".*tmp*"))
    # the output is named by the ids without their extension, .mp4, its frame index beside it
    names = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.mp4"))
    assert names == sorted(v.rsplit(".", 1)[0] + ".mp4" for v in GOOD)
    assert all(index_path(out / n).is_file() for n in names)
    assert json.loads((out / "vidload-convert.json").read_text()) == {
        "to": "video", "short_side": None, "gop": GOP, "crf": 18.0, "preset": "ultrafast",
        "tune": "fastdecode",
    }  # fmt: skip


def test_the_sidecar_of_heads_holds_every_videos_index(converted):
    """`manifest-heads.npz` (`vidload.sources._heads`, kind "video"): each converted video's
    persisted index, so that a cold batch in a bucket is one round (tests/test_video_heads.py)."""
    from vidload._storage import Location
    from vidload.sources._heads import read_heads

    out, _ = converted
    heads = read_heads(Location(out), "video")
    assert heads is not None and len(heads) == len(GOOD)
    for vid in GOOD:
        name = vid.rsplit(".", 1)[0] + ".mp4"
        record = heads.get(name)
        assert record is not None and record.raw == index_path(out / name).read_bytes()


@pytest.mark.parametrize("vid", GOOD)
def test_frames_counts_and_timestamps_are_the_sources(hard, converted, vid):
    out, _ = converted
    orig, conv = VideoSource(hard), VideoSource(out)
    n = orig.actual_frames(vid)
    row = {r.video_id: r for r in read_manifest(out / "manifest.csv")}[vid]
    assert conv.actual_frames(vid) == n == row.actual_frames
    assert conv.path(vid) == out / (vid.rsplit(".", 1)[0] + ".mp4")
    np.testing.assert_allclose(conv.timestamps(vid), orig.timestamps(vid), rtol=0, atol=1e-9)
    frames = conv.read(vid, np.arange(n)[::-1])[::-1]  # any order: seek-and-decode
    assert np.array_equal(frames, np.stack(sequential_decode(conv.path(vid))))  # frame-exact
    if vid == "b/phone.mp4":  # stored upright: portrait, no display matrix left
        assert frames.shape[1:3] == (orig.info(vid).width, orig.info(vid).height)
        assert conv.orientation(vid) == IDENTITY and row.rotation == "90"
        numbers = [upright_number(f, 90, False) for f in frames]
    else:
        assert frames.shape[1:3] == orig.read(vid, [0]).shape[1:3]
        numbers = [frame_number(f) for f in frames]
    first = numbers[0]  # 1000 + i for the second stream of two.mkv, were it the one chosen
    assert first in (0, 1000) and numbers == list(range(first, first + n))
    if vid == "b/two.mkv":  # the stream VideoSource counts and decodes in the original
        assert first == frame_number(orig.read(vid, [0])[0])


@pytest.mark.parametrize("vid", GOOD)
def test_random_access_layout(converted, vid):
    """A keyframe every GOP frames, no B-frames (decode order = presentation order), one
    stream."""
    out, _ = converted
    path = VideoSource(out).path(vid)
    packets = video_packets(path)
    keys = [i for i, (_, _, key) in enumerate(packets) if key]
    assert keys == list(range(0, len(packets), GOP))
    import av

    with av.open(str(path)) as c:
        assert len(c.streams) == 1
        stamps = [(p.pts, p.dts) for p in c.demux(c.streams.video[0]) if p.size]
    assert all(pts == dts for pts, dts in stamps) and stamps == sorted(stamps)


def test_vfr_and_start_time_are_kept(hard, converted):
    out, _ = converted
    conv = VideoSource(out)
    np.testing.assert_allclose(conv.timestamps("a/vfr.mkv"), np.array(VFR_PTS) / 1000, atol=1e-9)
    np.testing.assert_allclose(conv.timestamps("b/start.mp4"), np.array(START_PTS) / 25)


def test_a_truncated_video_keeps_the_frames_that_decode(hard, converted):
    out, _ = converted
    row = {r.video_id: r for r in read_manifest(out / "manifest.csv")}["c/cut.mp4"]
    assert row.reported_frames == 40 and 0 < row.actual_frames < 40 and row.status == "mismatch"


def test_a_fresh_source_reads_without_scanning_or_decoding(converted, monkeypatch):
    out, _ = converted
    calls = {"scan": 0, "decode": 0}
    real_scan, real_decode = video_mod.index_from_packets, VideoSource._decode_all

    def scan(*args, **kwargs):
        calls["scan"] += 1
        return real_scan(*args, **kwargs)

    def decode_all(self, *args, **kwargs):
        calls["decode"] += 1
        return real_decode(self, *args, **kwargs)

    monkeypatch.setattr(video_mod, "index_from_packets", scan)
    monkeypatch.setattr(VideoSource, "_decode_all", decode_all)
    for vid in ("c/x.avi", "a/bframes.mp4", "b/phone.mp4"):
        src = VideoSource(out)  # a fresh worker
        clip = src.read(vid, [5, 1, 2])
        assert [frame_number(f) for f in clip[:, :, :] if vid != "b/phone.mp4"] in ([5, 1, 2], [])
        assert src.actual_frames(vid) > 5 and src.timestamps(vid).shape == (src.actual_frames(vid),)
        assert src.orientation(vid) == IDENTITY
    assert calls == {"scan": 0, "decode": 0}


def test_files_name_the_video_and_its_index(hard, converted):
    """The bytes a storage takes (`vidload choose`, `vidload bench`) count the index sidecar;
    an original without one is its file alone."""
    out, _ = converted
    assert VideoSource(out).files("c/x.avi") == [out / "c/x.mp4", index_path(out / "c/x.mp4")]
    assert VideoSource(hard).files("c/x.avi") == [hard / "c/x.avi"]


def test_a_stale_index_is_not_used_and_says_why(hard, converted, tmp_path, monkeypatch):
    out, _ = converted
    folder = tmp_path / "copy"
    folder.mkdir()
    src_file = out / "c/x.mp4"
    (folder / "x.mp4").write_bytes(src_file.read_bytes())
    (folder / "x.mp4.vidload-index").write_bytes(index_path(src_file).read_bytes())
    assert VideoSource(folder).actual_frames("x.avi") == 18  # a copy keeps its index valid
    other = out / "a/bframes.mp4"
    (folder / "x.mp4").write_bytes(other.read_bytes())  # rewritten: the index is stale
    src = VideoSource(folder)
    with pytest.warns(UserWarning, match=r"frame index not used: it describes another file"):
        assert src.actual_frames("x.avi") == 30
    assert [frame_number(f) for f in src.read("x.avi", [29, 3])] == [29, 3]
    (folder / "x.mp4.vidload-index").write_text("{not json")
    with pytest.warns(UserWarning, match=r"frame index not used: unreadable"):
        assert VideoSource(folder).actual_frames("x.avi") == 30


def test_probe_write_index_for_original_videos(hard, tmp_path, monkeypatch):
    folder = tmp_path / "orig"
    folder.mkdir()
    (folder / "x.avi").write_bytes((hard / "c/x.avi").read_bytes())
    assert main(["probe", str(folder), "--write-index", "-q"]) == 0
    assert index_path(folder / "x.avi").is_file()
    monkeypatch.setattr(VideoSource, "_decode_all", None)  # any decode for the index would fail
    src = VideoSource(folder)
    assert src.actual_frames("x.avi") == 18
    monkeypatch.undo()
    assert [frame_number(f) for f in src.read("x.avi", [17, 0, 9])] == [17, 0, 9]


def test_clip_dataset_over_the_converted_folder_uses_the_same_list(hard, converted, tmp_path):
    out, _ = converted
    lst = tmp_path / "train.txt"
    lst.write_text("a/bframes.mp4 0\nc/x.avi 1\n")
    for root in (hard, out):
        ds = ClipDataset(lst, VideoSource(root), num_frames=4, train=False)
        clip, label = ds[1]
        assert tuple(clip.shape) == (4, 3, H, W) and label == 1


def test_short_side_and_odd_sizes(hard, tmp_path):
    """--short-side as the other formats; an odd side loses its last row/column (4:2:0)."""
    report = convert(
        hard / "c/x.avi", tmp_path / "o", to="video", short_side=33, workers=1, progress=False,
        **FAST,
    )  # fmt: skip
    row = report.rows[0]
    assert (row.height, row.width) == (32, 50)  # 33 x 50 (as the other formats), cut to even


def test_options_are_checked_and_recorded(hard, tmp_path):
    with pytest.raises(UsageError, match=r"gop, crf apply to to='video' only"):
        convert(hard, tmp_path / "h", to="hdf5", gop=8, crf=20, progress=False)
    with pytest.raises(ValueError, match=r"crf \(60.0\) must be in \[0, 51\]"):
        convert(hard, tmp_path / "v", to="video", crf=60, progress=False)
    with pytest.raises(ValueError, match=r"preset \('quick'\) must be one of"):
        convert(hard, tmp_path / "v", to="video", preset="quick", progress=False)
    one = hard / "c/x.avi"
    out = tmp_path / "v"
    assert convert(one, out, to="video", workers=1, progress=False, **FAST).ok
    with pytest.raises(UsageError, match=r"--crf 18.0 before, 30.0 now"):
        convert(one, out, to="video", workers=1, progress=False, **{**FAST, "crf": 30})
    again = convert(one, out, to="video", workers=1, progress=False, **FAST)
    assert again.skipped == ("x.avi",)
    (out / "manifest.csv").unlink()  # killed before the manifest: the file is validated
    index_path(out / "x.mp4").unlink()
    again = convert(one, out, to="video", workers=1, progress=False, **FAST)
    assert again.skipped == ("x.avi",) and again.rows[0].actual_frames == 18
    assert index_path(out / "x.mp4").is_file()


def test_cli_to_video(hard, tmp_path):
    out = tmp_path / "cli"
    code = main(["convert", str(hard / "a/vfr.mkv"), str(out), "--to", "video", "--gop", "3",
                 "--crf", "20", "--preset", "superfast", "--tune", "fastdecode", "-q"])  # fmt: skip
    assert code == 0
    assert json.loads((out / "vidload-convert.json").read_text())["tune"] == "fastdecode"
    keys = [i for i, (_, _, k) in enumerate(video_packets(out / "vfr.mp4")) if k]
    assert keys == [0, 3, 6, 9]


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="kill -9 of a process group")
def test_kill_9_and_resume(tmp_path):
    src = tmp_path / "in"
    for i in range(16):
        make_video(src / f"v{i:02d}.mp4", 60, width=128, height=96, options={"g": "30"})
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "vidload", "convert", str(src), str(out), "--to", "video",
           "--workers", "1", "--shard-size", "1", "--preset", "medium", "-q"]  # fmt: skip
    cli = subprocess.Popen(
        cmd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60
        while not list(out.glob("v*.mp4")) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert list(out.glob("v*.mp4")), "the conversion never started"
        assert cli.poll() is None, "the conversion finished before the kill"
    finally:
        os.killpg(cli.pid, signal.SIGKILL)
        cli.wait()
    report = convert(src, out, to="video", workers=1, progress=False, preset="medium")
    assert report.ok and len(report.rows) == 16 and report.converted
    assert not [p for p in out.rglob(".*") if p.name != "vidload-convert.json"]
    conv = VideoSource(out)
    for i in range(16):
        vid = f"v{i:02d}.mp4"
        assert [frame_number(f) for f in conv.read(vid, [59, 0, 31])] == [59, 0, 31]


@pytest.mark.slow
@real_clip("mma_test.avi")
def test_real_clips(tmp_path):
    report = convert(shared_videos(), tmp_path / "o", to="video", workers=1, progress=False)
    assert report.ok
    orig, conv = VideoSource(shared_videos()), VideoSource(tmp_path / "o")
    for row in report.rows:
        n = orig.actual_frames(row.video_id)
        assert row.actual_frames == n == conv.actual_frames(row.video_id)
        np.testing.assert_allclose(conv.timestamps(row.video_id), orig.timestamps(row.video_id))
        a = orig.read(row.video_id, [0, n // 2, n - 1]).astype(np.float64)
        b = conv.read(row.video_id, [0, n // 2, n - 1]).astype(np.float64)
        assert 10 * np.log10(255**2 / np.mean((a - b) ** 2)) > 30  # lossy, yet the same frames
