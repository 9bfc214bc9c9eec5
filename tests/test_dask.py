"""`convert(executor=...)` on a Dask LocalCluster (2 worker processes, 1 thread each): the same
containers and manifest as a local run, and a worker killed mid-run changes nothing. Skipped when
Dask's `distributed` is not installed (`pip install "vidload[dask]"`; the test extra has it)."""

from __future__ import annotations

import dataclasses
import os
from concurrent.futures import Executor
from pathlib import Path

import numpy as np
import pytest
from test_shards import FRAMES, make_inputs, output_files, temporaries

from vidload.convert import convert
from vidload.manifest import read_manifest
from vidload.probe import probe

# minutes of servers and subprocesses: the full tier only (`pytest -m "not slow"` skips it)
pytestmark = pytest.mark.slow

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    )
    with cluster, distributed.Client(cluster) as client:
        yield client


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    return make_inputs(tmp_path_factory.mktemp("dask") / "in")


@pytest.mark.parametrize("to", ["jpeg", "hdf5", "npy", "video"])
def test_a_dask_cluster_gives_the_local_output(client, inputs, tmp_path, to):
    local = convert(inputs, tmp_path / "local", to=to, workers=1, progress=False)
    report = convert(
        inputs, tmp_path / "dask", to=to, executor=client.get_executor(), shard_size=2,
        progress=False,
    )  # fmt: skip
    assert [r.video_id for r in report.failed] == ["b/broken.mp4"]
    assert sorted(report.converted) == sorted(FRAMES) == sorted(local.converted)
    if to == "video":  # x264's bytes are not reproducible across processes: compare content
        _same_videos(tmp_path / "dask", tmp_path / "local", report.rows, local.rows)
    else:
        assert report.rows == local.rows
        assert output_files(tmp_path / "dask") == output_files(tmp_path / "local")
        rows = read_manifest(tmp_path / "dask/manifest.csv")
        assert rows == read_manifest(tmp_path / "local/manifest.csv")
    rows = read_manifest(tmp_path / "dask/manifest.csv")
    assert {r.video_id: r.status for r in rows}["b/broken.mp4"] == "failed"
    assert temporaries(tmp_path / "dask") == []


def _same_videos(a: Path, b: Path, rows_a, rows_b) -> None:
    """Two `--to video` outputs of one input hold the same videos: the same files, manifest rows
    (but the encoded sizes), frame counts, timestamps, keyframes and painted frames."""
    from media import frame_number, video_packets

    from vidload.sources.video import VideoSource

    def no_bytes(rows):
        return [dataclasses.replace(r, bytes=None) for r in rows]

    assert no_bytes(rows_a) == no_bytes(rows_b)
    assert no_bytes(read_manifest(a / "manifest.csv")) == no_bytes(
        read_manifest(b / "manifest.csv")
    )
    assert sorted(output_files(a)) == sorted(output_files(b))
    src_a, src_b = VideoSource(a), VideoSource(b)
    for row in rows_a:
        if row.status == "failed":
            continue
        vid, n = row.video_id, row.actual_frames
        assert src_a.actual_frames(vid) == src_b.actual_frames(vid) == n
        assert np.array_equal(src_a.timestamps(vid), src_b.timestamps(vid))
        keys = [[k for *_, k in video_packets(s.path(vid))] for s in (src_a, src_b)]
        assert keys[0] == keys[1]
        numbers = [[frame_number(f) for f in s.read(vid, np.arange(n))] for s in (src_a, src_b)]
        assert numbers[0] == numbers[1] == list(range(n))


def test_probe_on_a_dask_cluster(client, inputs):
    rows = probe(inputs, executor=client.get_executor(), shard_size=2, progress=False)
    assert rows == probe(inputs, workers=1, progress=False)


class _DyingOnce(Executor):
    """Submits `fn(shard)` wrapped so that the worker running shard 1 dies (os._exit) on the
    first attempt, part-way through writing its second video; every attempt logs the videos
    it starts converting."""

    def __init__(self, inner: Executor, marks: Path) -> None:
        self.inner, self.marks = inner, str(marks)

    def submit(self, fn, shard):
        marks = self.marks

        def dying_once(shard):  # a closure: cloudpickle sends it by value to the worker
            import vidload._convert.frames as fm
            import vidload._convert.job as jm

            first = not os.path.exists(os.path.join(marks, "died"))
            real_video, real_encode = jm._convert_video, fm.encode_jpeg
            started, encoded = [], [0]

            def encode(rgb, quality=95, **options):  # options: e.g. subsampling
                encoded[0] += 1
                if first and shard.index == 1 and len(started) == 2 and encoded[0] == 3:
                    open(os.path.join(marks, "died"), "w").close()
                    os._exit(1)  # a worker lost mid-write: a temporary folder stays behind
                return real_encode(rgb, quality, **options)

            def video(job, *rest):  # rest: the input's frames (InputFrames)
                started.append(job.item.video_id)
                encoded[0] = 0
                with open(os.path.join(marks, "log"), "a") as f:
                    f.write(job.item.video_id + "\n")
                return real_video(job, *rest)

            jm._convert_video, fm.encode_jpeg = video, encode
            try:
                return fn(shard)
            finally:
                jm._convert_video, fm.encode_jpeg = real_video, real_encode

        return self.inner.submit(dying_once, shard)


def test_a_worker_killed_mid_run_changes_nothing(client, inputs, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    local = convert(inputs, tmp_path / "local", to="jpeg", workers=1, progress=False)
    executor = _DyingOnce(client.get_executor(), marks)
    report = convert(
        inputs, tmp_path / "dask", to="jpeg", executor=executor, shard_size=3, progress=False
    )
    assert (marks / "died").exists(), "the worker was never killed"
    assert report.rows == local.rows and report.ok is False  # the broken video only
    assert sorted(report.converted) == sorted(FRAMES)
    assert output_files(tmp_path / "dask") == output_files(tmp_path / "local")
    assert read_manifest(tmp_path / "dask/manifest.csv") == read_manifest(
        tmp_path / "local/manifest.csv"
    )
    assert temporaries(tmp_path / "dask") == []
    log = (marks / "log").read_text().split()
    killed = [v for v in set(log) if log.count(v) > 1]
    assert len(killed) == 1  # only the video being written when the worker died ran twice
    assert sorted(set(log)) == sorted(FRAMES)


def test_cli_dask_address(client, inputs, tmp_path, capsys):
    from vidload.cli import main

    address = client.scheduler.address
    out = tmp_path / "cli"
    args = ["convert", str(inputs), str(out), "--to", "npy", "-q", "--shard-size", "2"]
    assert main([*args, "--dask", address]) == 1  # the broken video
    printed = capsys.readouterr().out
    assert f"converted {len(FRAMES)}, skipped 0 (already done), failed 1 of 6 videos" in printed
    assert "x b/broken.mp4" in printed
    assert main([*args, "--dask", address, "--workers", "2"]) == 2
    assert "--workers applies to the local pool" in capsys.readouterr().err
    assert main(["probe", str(inputs), "-q", "--dask", address]) == 1


def test_a_dask_cluster_converts_into_a_bucket(client, inputs, tmp_path, s3_bucket):
    """The workers write in their own staging folders and upload; the bucket holds what a
    local run writes, and nothing else."""
    local = convert(inputs, tmp_path / "local", to="hdf5", workers=1, progress=False)
    out = f"{s3_bucket.url}/dask"
    report = convert(
        inputs, out, to="hdf5", executor=client.get_executor(), shard_size=2, progress=False,
        storage_options=s3_bucket.storage_options,
    )  # fmt: skip
    assert report.rows == local.rows
    objects = {
        k[len("dask/") :]: s3_bucket.get(k)
        for k in s3_bucket.keys("dask/")
        if not k.endswith("manifest.csv")
    }
    assert objects == output_files(tmp_path / "local")  # no lock, no parts, no temporaries
    path = tmp_path / "m.csv"
    path.write_bytes(s3_bucket.get("dask/manifest.csv"))
    assert read_manifest(path) == read_manifest(tmp_path / "local/manifest.csv")
