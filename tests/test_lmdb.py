"""LMDB storage (`vidload.sources.lmdb`): `convert --to lmdb` writes every video's JPEG frames
into one environment, a transaction a video (atomic, resumable), and `LmdbSource` reads them
back lock-free in every process; a URL is refused. Skipped where `lmdb` is not installed
(`pip install 'vidload[lmdb]'`); the contract suite (`tests/test_source_contract.py`) and
`tests/test_kinds.py`'s table checks cover it too."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys

import numpy as np
import pytest
from media import frame_number, make_video

pytest.importorskip("lmdb")

import vidload._convert.frames as frames_mod  # noqa: E402
from vidload import LmdbSource  # noqa: E402
from vidload._kinds import get_kind  # noqa: E402
from vidload.cli import main  # noqa: E402
from vidload.convert import convert  # noqa: E402
from vidload.errors import FrameCountError, UsageError, VideoReadError  # noqa: E402
from vidload.manifest import read_manifest  # noqa: E402

COUNTS = {"a/x1.mp4": 12, "a/x1.avi": 7, "b/y2.mkv": 9}


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lmdb") / "videos"
    for vid, n in COUNTS.items():
        codec = "mpeg4" if vid.endswith(".avi") else "libx264"
        make_video(folder / vid, n, codec=codec, width=96, height=64)
    return folder


def test_convert_to_lmdb_reads_back_every_frame(videos, tmp_path):
    out = tmp_path / "out"
    assert main(["convert", str(videos), str(out), "--to", "lmdb", "--workers", "2", "-q"]) == 0
    assert sorted(p.name for p in (out / "frames.lmdb").iterdir()) == ["data.mdb", "lock.mdb"]
    src = LmdbSource(out)
    for vid, n in COUNTS.items():  # a/x1.mp4 and a/x1.avi share a stem: both kept apart
        assert src.actual_frames(vid) == src.reported_frames(vid) == n
        clip = [n - 1, 0, 3, 3]
        frames = src.read(vid, clip)
        assert frames.dtype == np.uint8 and frames.shape == (4, 64, 96, 3)
        assert [frame_number(f) for f in frames] == clip
        assert np.allclose(np.diff(src.timestamps(vid)), 1 / 25)
        with pytest.raises(FrameCountError, match=f"{n}"):
            src.read(vid, [n])
    assert src.missing_videos(["a/x1.mp4", "c/none.mp4"]) == ["c/none.mp4"]
    kind = get_kind("lmdb")
    rows = {r.video_id: r for r in read_manifest(out / "manifest.csv")}
    assert set(rows) == set(COUNTS) and all(r.status == "ok" for r in rows.values())
    # the class names each container: one name within the environment per video
    names = [kind.container_name(v, keep_extension=v.startswith("a/")) for v in sorted(COUNTS)]
    assert names == ["frames.lmdb#a/x1.avi", "frames.lmdb#a/x1.mp4", "frames.lmdb#b/y2"]
    assert rows["b/y2.mkv"].bytes == kind.nbytes(out / "frames.lmdb#b/y2") > 9 * 64


def test_a_killed_convert_keeps_whole_videos_and_resumes(videos, tmp_path, monkeypatch):
    out = tmp_path / "out"
    real_encode = frames_mod.encode_jpeg
    calls = {"n": 0}

    def dying_encode(rgb, quality=95, **options):
        calls["n"] += 1
        if calls["n"] == 15:  # part-way through the second video (the first has 7 frames)
            raise KeyboardInterrupt
        return real_encode(rgb, quality, **options)

    monkeypatch.setattr(frames_mod, "encode_jpeg", dying_encode)
    with pytest.raises(KeyboardInterrupt):
        convert(videos, out, to="lmdb", workers=1, progress=False)
    monkeypatch.undo()
    assert [r.video_id for r in read_manifest(out / "manifest.csv")] == ["a/x1.avi"]
    src = LmdbSource(out)
    assert src.missing_videos(list(COUNTS)) == ["a/x1.mp4", "b/y2.mkv"]  # nothing half-written
    report = convert(videos, out, to="lmdb", workers=1, progress=False)
    assert report.skipped == ("a/x1.avi",) and sorted(report.converted) == ["a/x1.mp4", "b/y2.mkv"]
    # killed after the transaction, before the manifest: found by its key and verified
    (out / "manifest.csv").unlink()
    report = convert(videos, out, to="lmdb", workers=1, progress=False)
    assert sorted(report.skipped) == sorted(COUNTS) and not report.converted
    assert [frame_number(f) for f in LmdbSource(out).read("b/y2.mkv", [8, 1])] == [8, 1]


def test_a_forked_dataloader_worker_opens_its_own_environment(videos, tmp_path):
    torch = pytest.importorskip("torch")
    out = tmp_path / "out"
    convert(videos, out, to="lmdb", workers=1, progress=False)
    src = LmdbSource(out)
    src.read("a/x1.mp4", [0])  # the parent has it open: a worker must not use its handle

    class Clips(torch.utils.data.Dataset):
        def __len__(self):
            return 6

        def __getitem__(self, i):
            vid = sorted(COUNTS)[i % 3]
            return torch.as_tensor(np.array([frame_number(f) for f in src.read(vid, [i])]))

    loader = torch.utils.data.DataLoader(
        Clips(), batch_size=None, num_workers=2, multiprocessing_context="fork"
    )
    assert [int(t[0]) for t in loader] == list(range(6))


def test_lmdb_is_local_only(videos, tmp_path):
    with pytest.raises(UsageError, match=r"'http://127.0.0.1:9/data' is a URL: LMDB is local only"):
        LmdbSource("http://127.0.0.1:9/data")
    with pytest.raises(UsageError, match=r"s3://bucket/out: storage 'lmdb' .* is local only"):
        convert(videos, "s3://bucket/out", to="lmdb", workers=1, progress=False)
    with pytest.raises(VideoReadError, match="frames.lmdb: no LMDB environment here"):
        LmdbSource(tmp_path).read("a/x1.mp4", [0])


def test_without_lmdb_the_kind_names_its_extra(tmp_path):
    code = (
        "import sys; sys.modules['lmdb'] = None\n"
        "from vidload._kinds import get_kind, kind_names, formats\n"
        "assert 'lmdb' in kind_names() and 'lmdb' not in [k.name for k in formats()]\n"
        "try:\n"
        "    get_kind('lmdb')\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "storage 'lmdb' needs lmdb: pip install 'vidload[lmdb]'" in out.stdout


def test_lmdb_is_a_bench_row_and_a_choose_candidate(videos, tmp_path):
    pytest.importorskip("torch")
    from vidload import bench
    from vidload._choose.storages import StorageSpec, default_storages

    js = tmp_path / "b.json"
    argv = ["--quick", "--work", str(tmp_path / "w"), "--workers", "0", "--clips", "2"]
    argv += ["--only", "lmdb,hdf5,memory", "--json", str(js), "--min-time", "0"]
    argv += ["--repeats", "1", "--no-geometry-hd", "--no-progress"]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert bench.main(argv) == 0
    rows = json.loads(js.read_text())["loaders"]
    assert set(rows) == {"lmdb", "hdf5", "memory"}
    assert 0 < rows["lmdb"]["disk_bytes_per_video"] and rows["lmdb"]["vs_memory"] > 0

    assert StorageSpec("lmdb", quality=95) in default_storages()
    out = tmp_path / "c.json"
    argv = ["choose", str(videos), "--quick", "--storages", "original,lmdb:q90,hdf5:q90"]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main([*argv, "--json", str(out), "-q"]) == 0
    got = {r["storage"]: r for r in json.loads(out.read_text())["rows"]}
    assert list(got) == ["original", "lmdb:q90", "hdf5:q90"]
    # the same JPEG bytes: the same pixels
    assert got["lmdb:q90"]["psnr_db"] == pytest.approx(got["hdf5:q90"]["psnr_db"])


def test_an_environment_removed_and_made_again_is_not_the_old_one(videos, tmp_path):
    import shutil

    out = tmp_path / "out"
    convert(videos, out, to="lmdb", workers=1, progress=False)  # this process has it open now
    assert LmdbSource(out).actual_frames("b/y2.mkv") == 9
    shutil.rmtree(out)
    report = convert(videos, out, to="lmdb", workers=1, progress=False)
    assert sorted(report.converted) == sorted(COUNTS) and not report.skipped
    # written into the new files, not the removed ones: another process reads them
    code = "import sys, vidload; print(vidload.LmdbSource(sys.argv[1]).actual_frames('a/x1.avi'))"
    got = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True)
    assert got.stdout.strip() == "7", got.stderr
