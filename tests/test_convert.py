"""`vidload.convert.convert`: videos and JPEG folders into containers, read back through the
sources; manifests, resume after interruption, failures, and the input left untouched."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
import simplejpeg
from media import frame_number, make_video, real_clip, shared_videos, truncate_copy

import vidload._convert.frames as frames_mod
from vidload._atomic import temp_path
from vidload._kinds import get_kind
from vidload.convert import convert, find_inputs, resize_short_side
from vidload.manifest import read_manifest
from vidload.probe import probe
from vidload.sources.hdf5 import Hdf5Source
from vidload.sources.jpeg import JpegSource
from vidload.sources.npy import NpySource, read_npy_frame_bytes
from vidload.sources.video import VideoSource

W, H = 96, 64


def container_path(out: Path, video_id: str, to: str) -> Path:
    """Where `convert` writes `video_id`'s `to` container (its kind's rule)."""
    return out / get_kind(to).container_name(video_id)


SOURCES = {"jpeg": JpegSource, "hdf5": Hdf5Source, "npy": NpySource}
GOOD = {"a/x1.mp4": 24, "a/x2.avi": 16, "b/x3.mkv": 20}
TRUNCATED = "b/trunc.mp4"  # header says 60 frames, fewer decode


def make_dataset(folder: Path) -> Path:
    make_video(folder / "a/x1.mp4", 24, width=W, height=H, options={"g": "12", "bf": "2"})
    make_video(folder / "a/x2.avi", 16, codec="mpeg4", width=W, height=H, options={"g": "8"})
    make_video(folder / "b/x3.mkv", 20, width=W, height=H, options={"g": "10"})
    full = make_video(
        folder / "_full.mp4",
        60,
        width=W,
        height=H,
        options={"g": "12"},
        container_options={"movflags": "faststart"},
    )
    truncate_copy(full, folder / TRUNCATED, 0.5)
    full.unlink()
    return folder


def make_header_only(path: Path) -> Path:
    """An MP4 whose header (moov first) promises 30 frames but whose data is cut off."""
    full = make_video(path.with_name("_h.mp4"), 30, width=W, height=H,
                      container_options={"movflags": "faststart"})  # fmt: skip
    data = full.read_bytes()
    path.write_bytes(data[: data.index(b"mdat") + 4 + 50])
    full.unlink()
    return path


def tree_digest(folder: Path) -> dict[str, str]:
    """{relative path: sha256} of every file, plus folders (mapped to "dir")."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder).as_posix()
        out[rel] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return make_dataset(tmp_path_factory.mktemp("convert") / "videos")


@pytest.fixture(scope="module")
def reference(dataset) -> dict[str, list[np.ndarray]]:
    """Every frame of every input video, decoded sequentially by VideoSource."""
    src = VideoSource(dataset)
    return {vid: list(src.iter_frames(vid)) for vid in [*GOOD, TRUNCATED]}


@pytest.fixture(scope="module")
def jpeg_root(dataset, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("convert") / "jpeg"
    report = convert(dataset, out, to="jpeg", workers=1, progress=False)
    assert report.ok and len(report.converted) == 4
    return out


def test_reference_has_a_truncated_video(reference):
    assert {v: len(reference[v]) for v in GOOD} == GOOD
    assert 0 < len(reference[TRUNCATED]) < 60


@pytest.mark.parametrize("to", ["jpeg", "hdf5", "npy"])
def test_convert_videos_reads_back_through_the_source(dataset, reference, tmp_path, to):
    before = tree_digest(dataset)
    out = tmp_path / "out"
    report = convert(dataset, out, to=to, workers=1, progress=False)
    assert tree_digest(dataset) == before  # the input is never modified

    ids = [*GOOD, TRUNCATED]
    assert sorted(report.converted) == sorted(ids)
    assert report.skipped == () and report.failed == ()
    assert report.frames == sum(len(f) for f in reference.values())
    assert report.bytes_in == sum((dataset / v).stat().st_size for v in ids)
    assert report.bytes_out > 0 and report.size_ratio == report.bytes_out / report.bytes_in
    assert [r.video_id for r in report.mismatches] == [TRUNCATED]

    src = SOURCES[to](out)
    for vid in ids:
        assert container_path(out, vid, to).exists()
        frames = reference[vid]
        assert src.actual_frames(vid) == len(frames)
        got = src.read(vid, list(range(len(frames))))
        assert got.shape == (len(frames), H, W, 3)
        for i, (a, b) in enumerate(zip(got, frames, strict=True)):
            assert frame_number(a) == i
            assert psnr(a, b) >= 35, f"{vid} frame {i}: {psnr(a, b):.1f} dB"

    rows = {r.video_id: r for r in read_manifest(out / "manifest.csv")}
    assert set(rows) == set(ids)
    for vid, n in GOOD.items():
        r = rows[vid]
        assert (r.reported_frames, r.actual_frames, r.status) == (n, n, "ok")
        assert (r.width, r.height, r.fps) == (W, H, 25.0)
        assert r.label == {"a": 0, "b": 1}[vid.split("/")[0]]  # class folders, sorted
    trunc = rows[TRUNCATED]
    assert trunc.reported_frames == 60
    assert trunc.actual_frames == len(reference[TRUNCATED])
    assert trunc.status == "mismatch" and trunc.error is None


def test_manifest_bytes_are_the_container_sizes(dataset, tmp_path):
    out = tmp_path / "out"
    report = convert(dataset, out, to="npy", workers=1, progress=False)
    for row in report.rows:
        assert row.bytes == container_path(out, row.video_id, "npy").stat().st_size
    assert report.bytes_out == sum(r.bytes for r in report.rows)


def test_clip_dataset_accepts_the_manifest(dataset, tmp_path):
    from vidload.dataset import ClipDataset

    out = tmp_path / "out"
    convert(dataset, out, to="hdf5", workers=1, progress=False)
    ds = ClipDataset(out / "manifest.csv", Hdf5Source(out), num_frames=4, train=True, seed=0)
    assert len(ds) == 4
    for i in range(len(ds)):
        clip, label = ds[i]
        assert tuple(clip.shape) == (4, 3, H, W)
        assert label == {"a": 0, "b": 1}[ds.videos[i].video_id.split("/")[0]]


@pytest.mark.parametrize("to", ["hdf5", "npy"])
def test_repack_jpeg_root_is_byte_identical(jpeg_root, tmp_path, to):
    before = tree_digest(jpeg_root)
    base, items = find_inputs(jpeg_root)
    assert {it.kind for it in items} == {"jpeg"}
    assert sorted(it.video_id for it in items) == ["a/x1", "a/x2", "b/trunc", "b/x3"]
    out = tmp_path / to
    report = convert(jpeg_root, out, to=to, workers=1, progress=False)
    assert report.ok and len(report.converted) == 4
    assert tree_digest(jpeg_root) == before
    for item in items:
        files = sorted(item.path.glob("img_*.jpg"))
        expected = [f.read_bytes() for f in files]
        path = container_path(out, item.video_id, to)
        if to == "npy":
            stored = read_npy_frame_bytes(path)
        else:
            with h5py.File(path, "r") as f:
                data, offsets = f["frames"][()], f["offsets"][()]
            stored = [data[offsets[i] : offsets[i + 1]].tobytes() for i in range(len(offsets) - 1)]
        assert stored == expected
    assert report.bytes_in == sum(f.stat().st_size for f in jpeg_root.rglob("img_*.jpg"))
    # the jpeg root's own counts: every file matches, reported == actual
    assert all(r.status == "ok" and r.fps is None for r in report.rows)


def test_short_side_resizes_keeping_aspect(dataset, reference, tmp_path):
    out = tmp_path / "small"
    report = convert(dataset, out, to="npy", short_side=32, workers=1, progress=False)
    assert report.ok
    assert {(r.width, r.height) for r in report.rows} == {(48, 32)}
    src = NpySource(out)
    got = src.read("a/x1.mp4", range(24))
    assert got.shape == (24, 32, 48, 3)
    for i, frame in enumerate(got):
        expected = resize_short_side(reference["a/x1.mp4"][i], 32)
        assert expected.shape == (32, 48, 3)
        assert psnr(frame, expected) >= 35
        assert frame_number(frame) == i


def test_short_side_of_a_jpeg_root_reencodes(jpeg_root, tmp_path):
    out = tmp_path / "small"
    report = convert(jpeg_root, out, to="hdf5", short_side=40, workers=1, progress=False)
    assert {(r.width, r.height) for r in report.rows} == {(60, 40)}
    assert [frame_number(f) for f in Hdf5Source(out).read("a/x2", range(16))] == list(range(16))


def test_resize_short_side_portrait_and_noop():
    img = np.zeros((100, 50, 3), np.uint8)
    assert resize_short_side(img, 20).shape == (40, 20, 3)
    assert resize_short_side(img, 50) is img


def test_resume_after_interruption_converts_only_what_is_missing(dataset, tmp_path):
    out = tmp_path / "out"
    first = convert(dataset, out, to="npy", workers=1, progress=False)
    assert len(first.converted) == 4

    # an interrupted rerun: one container gone, a writer's temporary file left behind
    (out / "a/x2.npy").unlink()
    stale = out / "a/.x2.npy.tmp-12345-deadbeef"
    stale.write_bytes(b"partial")
    second = convert(dataset, out, to="npy", workers=1, progress=False)
    assert second.converted == ("a/x2.avi",)
    assert sorted(second.skipped) == sorted(set(GOOD) - {"a/x2.avi"} | {TRUNCATED})
    assert not stale.exists()
    assert NpySource(out).actual_frames("a/x2.avi") == 16

    third = convert(dataset, out, to="npy", workers=1, progress=False)
    assert third.converted == () and len(third.skipped) == 4 and third.ok
    assert third.rows == second.rows

    forced = convert(dataset, out, to="npy", workers=1, progress=False, overwrite=True)
    assert len(forced.converted) == 4


def test_resume_without_a_manifest_validates_containers(dataset, tmp_path):
    out = tmp_path / "out"
    first = convert(dataset, out, to="hdf5", workers=1, progress=False)
    # killed before the manifest was written; one container is damaged
    (out / "manifest.csv").unlink()
    bad = out / "b/x3.h5"
    damaged = bad.read_bytes()[:100]
    bad.write_bytes(damaged)
    second = convert(dataset, out, to="hdf5", workers=1, progress=False)
    # what fails validation is not replaced without overwrite: it may not be vidload's
    assert second.converted == () and len(second.skipped) == 3
    (failed,) = second.failed
    assert failed.video_id == "b/x3.mkv"
    assert "x3.h5" in failed.error and "not a valid hdf5 container" in failed.error
    assert "--overwrite" in failed.error and bad.read_bytes() == damaged
    bad.unlink()  # the user moves it away: the rerun converts the video again
    third = convert(dataset, out, to="hdf5", workers=1, progress=False)
    assert third.converted == ("b/x3.mkv",) and third.ok
    rows = {r.video_id: r for r in read_manifest(out / "manifest.csv")}
    assert rows == {r.video_id: r for r in first.rows}


def test_a_list_converted_into_its_own_root_never_deletes_the_users_files(tmp_path):
    root = tmp_path / "data"
    make_video(root / "a.mp4", 12, width=64, height=48)
    user = root / "a"  # where the JPEG folder of a.mp4 would go: the user's own files
    user.mkdir()
    (user / "notes.txt").write_text("mine")
    (user / "img_00001.jpg").write_bytes(b"not a frame")
    (root / "list.txt").write_text("a.mp4 0\n")
    report = convert(root / "list.txt", root, to="jpeg", workers=1, progress=False)
    (failed,) = report.failed
    assert "not a valid jpeg container" in failed.error and "--overwrite" in failed.error
    assert (user / "notes.txt").read_text() == "mine"
    assert (user / "img_00001.jpg").read_bytes() == b"not a frame"


def test_killed_mid_write_leaves_no_partial_container(dataset, tmp_path, monkeypatch):
    out = tmp_path / "out"
    real_encode = frames_mod.encode_jpeg
    calls = {"n": 0}

    def dying_encode(rgb, quality=95, **options):
        calls["n"] += 1
        if calls["n"] == 30:  # part-way through the second video
            raise KeyboardInterrupt
        return real_encode(rgb, quality, **options)

    monkeypatch.setattr(frames_mod, "encode_jpeg", dying_encode)
    with pytest.raises(KeyboardInterrupt):
        convert(dataset, out, to="jpeg", workers=1, progress=False)
    monkeypatch.undo()

    # the first video is complete and in the manifest; nothing else looks done
    rows = read_manifest(out / "manifest.csv")
    assert [r.video_id for r in rows] == ["a/x1.mp4"]
    assert sorted(p.name for p in (out / "a").iterdir()) == ["x1", "x1.timestamps"]
    assert len(list((out / "a/x1").iterdir())) == 24

    report = convert(dataset, out, to="jpeg", workers=1, progress=False)
    assert report.skipped == ("a/x1.mp4",)
    assert len(report.converted) == 3 and report.ok


def test_corrupt_inputs_are_reported_and_the_rest_converted(dataset, tmp_path):
    folder = tmp_path / "mixed"
    shutil.copytree(dataset / "a", folder / "a")
    (folder / "empty.mp4").write_bytes(b"")
    (folder / "not_a_video.mp4").write_text("hello\n" * 50)
    truncate_copy(dataset / "a/x1.mp4", folder / "cut.mp4", 0.02)  # no header
    make_header_only(folder / "stub.mp4")  # a header, no frame decodes
    report = convert(folder, tmp_path / "out", to="hdf5", workers=1, progress=False)
    assert sorted(report.converted) == ["a/x1.mp4", "a/x2.avi"]
    failed = {r.video_id: r.error for r in report.failed}
    assert set(failed) == {"cut.mp4", "empty.mp4", "not_a_video.mp4", "stub.mp4"}
    assert "empty file" in failed["empty.mp4"]
    assert "not a readable video" in failed["not_a_video.mp4"]
    assert "not a readable video" in failed["cut.mp4"]
    assert "no frame" in failed["stub.mp4"] and "decodes" in failed["stub.mp4"]
    rows = {r.video_id: r for r in read_manifest(tmp_path / "out/manifest.csv")}
    assert rows["empty.mp4"].status == "failed" and "empty file" in rows["empty.mp4"].error
    stub = rows["stub.mp4"]
    assert (stub.status, stub.reported_frames, stub.fps) == ("failed", 30, 25.0)
    assert not (tmp_path / "out/empty.h5").exists()
    # a rerun retries the failures only
    again = convert(folder, tmp_path / "out", to="hdf5", workers=1, progress=False)
    assert again.converted == () and len(again.failed) == 4 and len(again.skipped) == 2


def test_annotation_list_labels_and_root(dataset, tmp_path):
    lst = tmp_path / "lists/train.txt"
    lst.parent.mkdir()
    lst.write_text("a/x1.mp4 3\nb/x3.mkv 5\n")
    out = tmp_path / "out"
    report = convert(lst, out, to="npy", root=dataset, workers=1, progress=False)
    assert [(r.video_id, r.label) for r in report.rows] == [("a/x1.mp4", 3), ("b/x3.mkv", 5)]
    assert sorted(p.name for p in out.rglob("*.npy")) == ["x1.npy", "x3.npy"]
    rows = read_manifest(out / "manifest.csv")
    assert [(r.video_id, r.label, r.actual_frames) for r in rows] == [
        ("a/x1.mp4", 3, 24),
        ("b/x3.mkv", 5, 20),
    ]
    with pytest.raises(FileNotFoundError, match="root"):
        convert(lst, tmp_path / "o2", to="npy", root=tmp_path / "nope", progress=False)


def test_two_workers(dataset, tmp_path):
    out = tmp_path / "out"
    report = convert(dataset, out, to="jpeg", workers=2, progress=False)
    assert sorted(report.converted) == sorted([*GOOD, TRUNCATED])
    assert [r.video_id for r in report.rows] == sorted([*GOOD, TRUNCATED])  # input order
    for vid, n in GOOD.items():
        assert JpegSource(out).actual_frames(vid) == n


def test_bad_arguments(dataset, tmp_path):
    with pytest.raises(ValueError, match="to"):
        convert(dataset, tmp_path / "o", to="png", progress=False)
    with pytest.raises(ValueError, match=r"quality \(0\) must be in \[1, 100\]"):
        convert(dataset, tmp_path / "o", to="npy", quality=0, progress=False)
    with pytest.raises(ValueError, match=r"workers \(0\) must be >= 1"):
        convert(dataset, tmp_path / "o", to="npy", workers=0, progress=False)
    with pytest.raises(ValueError, match=r"short_side \(0\) must be >= 1"):
        convert(dataset, tmp_path / "o", to="npy", short_side=0, progress=False)
    with pytest.raises(TypeError, match="quality must be an int"):
        convert(dataset, tmp_path / "o", to="npy", quality=9.5, progress=False)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        convert(tmp_path / "missing", tmp_path / "o", to="npy", progress=False)
    with pytest.raises(ValueError, match="must not be inside one another"):
        convert(dataset, dataset / "out", to="npy", progress=False)
    with pytest.raises(ValueError, match="must not be inside one another"):
        convert(dataset, dataset.parent, to="npy", progress=False)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no video files"):
        convert(tmp_path / "empty", tmp_path / "o", to="npy", progress=False)
    assert not (dataset / "out").exists()


def test_numpy_integers_are_ints_and_bools_are_not(dataset, tmp_path):
    """Every integer argument goes through `vidload._checks`: a NumPy integer counts as an
    int (and is recorded as a plain one), a bool is refused, whatever the argument."""
    out = tmp_path / "out"
    n = np.int64
    report = convert(
        dataset,
        out,
        to="npy",
        workers=n(2),
        short_side=n(32),
        quality=n(90),
        shard_size=n(2),
        progress=False,
    )
    assert sorted(report.converted) == sorted([*GOOD, TRUNCATED])
    options = json.loads((out / "vidload-convert.json").read_text())
    assert options == {"to": "npy", "short_side": 32, "quality": 90, "subsampling": "420"}
    assert min(NpySource(out).read("a/x1.mp4", [0]).shape[1:3]) == 32
    for name in ("workers", "short_side", "quality", "shard_size"):
        with pytest.raises(TypeError, match=f"{name} must be an int"):
            convert(dataset, tmp_path / "o", to="npy", progress=False, **{name: True})
    for name in ("overwrite", "progress"):
        with pytest.raises(TypeError, match=f"{name} must be a bool, got 1"):
            convert(dataset, tmp_path / "o", to="npy", **{"progress": False, name: 1})
    assert not (tmp_path / "o").exists()  # refused before anything is written
    assert [r.video_id for r in probe(out, workers=n(1), shard_size=n(3), progress=False)] == [
        "a/x1",
        "a/x2",
        "b/trunc",
        "b/x3",
    ]
    with pytest.raises(TypeError, match="workers must be an int"):
        probe(out, workers=True, progress=False)
    with pytest.raises(TypeError, match="shard_size must be an int"):
        probe(out, shard_size=True, progress=False)


def test_an_options_file_that_is_not_a_mapping_is_refused(dataset, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "vidload-convert.json").write_text("[95]\n")
    with pytest.raises(ValueError, match=r"other options \(recorded \[95\];"):
        convert(dataset, out, to="npy", workers=1, progress=False)
    with pytest.raises(ValueError, match=r"each of kinds \('gif'\) must be one of"):
        find_inputs(dataset, kinds=("video", "gif"))


def test_resume_with_other_options_is_refused(dataset, tmp_path):
    out = tmp_path / "out"
    convert(dataset, out, to="npy", workers=1, progress=False)
    with pytest.raises(ValueError, match="was converted with"):
        convert(dataset, out, to="npy", quality=80, workers=1, progress=False)
    report = convert(dataset, out, to="npy", quality=80, overwrite=True, progress=False, workers=1)
    assert len(report.converted) == 4


@pytest.mark.parametrize("subsampling", ["420", "422", "444"])
def test_subsampling_round_trips_and_is_recorded(dataset, tmp_path, subsampling):
    out = tmp_path / "out"
    report = convert(dataset, out, to="hdf5", subsampling=subsampling, workers=1, progress=False)
    assert report.ok and len(report.converted) == 4
    options = json.loads((out / "vidload-convert.json").read_text())
    assert options["subsampling"] == subsampling
    for h5 in sorted(out.rglob("*.h5")):
        with h5py.File(h5, "r") as f:
            assert f.attrs["subsampling"] == subsampling
            first = f["frames"][: f["offsets"][1]].tobytes()
        assert simplejpeg.decode_jpeg_header(first)[3] == subsampling
    other = "444" if subsampling != "444" else "420"
    with pytest.raises(ValueError, match=f"--subsampling {subsampling} before, {other} now"):
        convert(dataset, out, to="hdf5", subsampling=other, workers=1, progress=False)


def test_options_file_without_subsampling_resumes_as_420(dataset, tmp_path):
    out = tmp_path / "out"
    convert(dataset, out, to="npy", workers=1, progress=False)
    path = out / "vidload-convert.json"
    old = json.loads(path.read_text())
    del old["subsampling"]  # written before the option existed
    path.write_text(json.dumps(old))
    report = convert(dataset, out, to="npy", workers=1, progress=False)
    assert len(report.skipped) == 4
    with pytest.raises(ValueError, match="--subsampling 420 before, 444 now"):
        convert(dataset, out, to="npy", subsampling="444", workers=1, progress=False)
    with pytest.raises(ValueError, match=r"subsampling \('411'\) must be one of"):
        convert(dataset, tmp_path / "o2", to="npy", subsampling="411", progress=False)


@pytest.mark.parametrize("to", ["jpeg", "hdf5", "npy"])
def test_ids_differing_only_in_extension_keep_it_in_the_container_name(tmp_path, to):
    make_video(tmp_path / "in/x.mp4", 3, width=W, height=H)
    make_video(tmp_path / "in/x.mkv", 5, width=W, height=H)
    make_video(tmp_path / "in/y.mp4", 4, width=W, height=H)
    out = tmp_path / "out"
    report = convert(tmp_path / "in", out, to=to, workers=1, progress=False)
    assert report.ok and len(report.converted) == 3
    suffix = {"jpeg": "", "hdf5": ".h5", "npy": ".npy"}[to]
    assert (out / f"x.mp4{suffix}").exists() and (out / f"x.mkv{suffix}").exists()
    assert (out / f"y{suffix}").exists() and not (out / f"x{suffix}").exists()
    source = {"jpeg": JpegSource, "hdf5": Hdf5Source, "npy": NpySource}[to](out)
    for vid, n in [("x.mp4", 3), ("x.mkv", 5), ("y.mp4", 4)]:
        assert source.actual_frames(vid) == n
        assert [frame_number(f) for f in source.read(vid, [n - 1, 0])] == [n - 1, 0]
    assert convert(tmp_path / "in", out, to=to, workers=1, progress=False).converted == ()
    # an annotation list naming the videos finds the same containers (as the sources do)
    listed = tmp_path / "list.txt"
    listed.write_text("x.mp4 0\nx.mkv 1\ny.mp4 2\n")
    rows = probe(listed, root=out, workers=1, progress=False)
    assert [(r.video_id, r.label, r.status, r.actual_frames) for r in rows] == [
        ("x.mp4", 0, "ok", 3),
        ("x.mkv", 1, "ok", 5),
        ("y.mp4", 2, "ok", 4),
    ]


def test_find_inputs_skips_hidden_and_other_files(dataset, tmp_path):
    folder = tmp_path / "in"
    shutil.copytree(dataset / "a", folder / "a")
    (folder / "notes.txt").write_text("x")
    (folder / "a/.x9.mp4.tmp-1-abcdef12").write_bytes(b"")
    (folder / ".hidden").mkdir()
    shutil.copy(dataset / "a/x1.mp4", folder / ".hidden/x.mp4")
    base, items = find_inputs(folder)
    assert base == folder
    assert [(it.video_id, it.kind) for it in items] == [
        ("a/x1.mp4", "video"),
        ("a/x2.avi", "video"),
    ]
    assert os.path.samefile(items[0].path, folder / "a/x1.mp4")


REAL = shared_videos()


@real_clip("mma_test.mp4")
def test_real_clip_smoke(tmp_path):
    lst = tmp_path / "list.txt"
    lst.write_text("mma_test.mp4 2\n")
    out = tmp_path / "out"
    report = convert(lst, out, to="npy", root=REAL, workers=1, progress=False)
    (row,) = report.rows
    assert (row.label, row.reported_frames, row.actual_frames, row.status) == (2, 300, 300, "ok")
    assert (row.width, row.height) == (340, 256)
    picks = [0, 77, 150, 299]
    got = NpySource(out).read("mma_test.mp4", picks)
    want = VideoSource(REAL).read("mma_test.mp4", picks)
    assert min(psnr(a, b) for a, b in zip(got, want, strict=True)) >= 35


@real_clip("mma_test.avi")
def test_real_folder_with_two_clips_of_one_name(tmp_path):
    report = convert(REAL, tmp_path / "out", to="hdf5", workers=2, progress=False)
    assert report.ok
    counts = {r.video_id: (r.reported_frames, r.actual_frames) for r in report.rows}
    assert counts == {"mma_test.avi": (164, 164), "mma_test.mp4": (300, 300)}
    source, video = Hdf5Source(tmp_path / "out"), VideoSource(REAL)
    for vid, n in [("mma_test.avi", 164), ("mma_test.mp4", 300)]:
        picks = [n - 1, 0, n // 2]
        got, want = source.read(vid, picks), video.read(vid, picks)
        assert min(psnr(a, b) for a, b in zip(got, want, strict=True)) >= 35


@pytest.mark.parametrize("to", ["jpeg", "hdf5", "npy"])
def test_clip_dataset_over_containers_gives_the_videos_clips(dataset, tmp_path, to):
    """One video list, one seed: the same frames (by painted number) as from the videos, and
    pixels within JPEG q95 loss, epoch after epoch; the truncated video's real count is used."""
    import warnings

    from vidload.dataset import ClipDataset

    out = tmp_path / "out"
    convert(dataset, out, to=to, workers=1, progress=False)
    videos = [(vid, k) for k, vid in enumerate([*GOOD, TRUNCATED])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the truncated video's count warning, once per source
        from_videos = ClipDataset(videos, VideoSource(dataset), num_frames=6, seed=11)
        from_containers = ClipDataset(videos, SOURCES[to](out), num_frames=6, seed=11)
        for epoch in range(2):
            from_videos.set_epoch(epoch)
            from_containers.set_epoch(epoch)
            for i in range(len(videos)):
                (a, la), (b, lb) = from_videos[i], from_containers[i]
                assert la == lb == i and a.shape == b.shape
                frames_a = a.permute(0, 2, 3, 1).numpy()
                frames_b = b.permute(0, 2, 3, 1).numpy()
                assert [frame_number(f) for f in frames_a] == [frame_number(f) for f in frames_b]
                assert min(psnr(x, y) for x, y in zip(frames_a, frames_b, strict=True)) >= 35


# ------------------------------------------------------------------ guards


def test_list_input_refuses_containers_on_or_around_its_inputs(tmp_path):
    from media import paint

    from vidload.sources.jpeg import write_jpeg_folder
    from vidload.sources.jpeg_decode import encode_jpeg

    root = tmp_path / "data"
    make_video(root / "a" / "x.mp4", 6, width=64, height=48)
    write_jpeg_folder(root / "imgs", [encode_jpeg(paint(i, 64, 48)) for i in range(4)])
    make_video(root / "a.mp4", 4, width=64, height=48)
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    frames_list = tmp_path / "frames.txt"
    frames_list.write_text("imgs 4 0\n")
    both = tmp_path / "both.txt"
    both.write_text("a.mp4 0\na/x.mp4 1\n")  # a.mp4's frame folder would be root/a, above a/x.mp4
    cases = [
        (frames_list, root, "jpeg", r"'imgs'.*would overwrite or sit inside the input"),
        (both, root, "jpeg", r"'a.mp4'.*would overwrite or sit inside the input"),
    ]
    for lst, out, to, match in cases:
        with pytest.raises(ValueError, match=match):
            convert(lst, out, to=to, root=root, workers=1, progress=False)
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before
    # a list's OUTPUT may sit inside its root as long as no container lands on an input
    report = convert(both, root / "out", to="npy", root=root, workers=1, progress=False)
    assert report.ok and NpySource(root / "out").actual_frames("a/x.mp4") == 6
    assert sorted(p.relative_to(root) for p in root.rglob("*") if "out" not in p.parts) == before


def test_stale_temporary_folders_and_manifests_are_removed(dataset, tmp_path):
    out = tmp_path / "out"
    assert convert(dataset, out, to="jpeg", workers=1, progress=False).ok
    (out / "a/x2").rename(out / "a/.x2.tmp-12345-deadbeef")  # a writer killed mid-folder
    (out / ".manifest.csv.4242.tmp").write_text("half a manifest")  # an older write_manifest
    made = [temp_path(out / "b/x3", "old"), temp_path(out / "b/x3.timestamps")]  # the writers'
    made[0].mkdir()
    made[1].write_bytes(b"")
    keep = out / "a/.hidden-but-mine"  # not a temporary name: left alone
    keep.write_text("x")
    again = convert(dataset, out, to="jpeg", workers=1, progress=False)
    assert again.converted == ("a/x2.avi",)
    assert not (out / "a/.x2.tmp-12345-deadbeef").exists()
    assert not (out / ".manifest.csv.4242.tmp").exists()
    assert not any(path.exists() for path in made)
    assert keep.read_text() == "x"
    assert JpegSource(out).actual_frames("a/x2.avi") == 16


def test_resume_with_an_unreadable_manifest_is_refused_unless_overwrite(dataset, tmp_path):
    out = tmp_path / "out"
    assert convert(dataset, out, to="npy", workers=1, progress=False).ok
    manifest = out / "manifest.csv"
    manifest.write_text("not,a,manifest\n1,2\n")
    with pytest.raises(ValueError, match=r"manifest\.csv cannot be resumed from .*overwrite"):
        convert(dataset, out, to="npy", workers=1, progress=False)
    assert manifest.read_text() == "not,a,manifest\n1,2\n"  # untouched by the refusal
    forced = convert(dataset, out, to="npy", workers=1, progress=False, overwrite=True)
    assert len(forced.converted) == 4
    assert {r.video_id for r in read_manifest(manifest)} == set(GOOD) | {TRUNCATED}
