"""Sharded conversion (`vidload.shards`, `convert(executor=...)`): the same output as a local run,
retries that do no video twice, durable writes, one run per output folder, workers that die with
their parent, and a full disk."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from media import make_video

import vidload._convert.job as job_mod
from vidload._lock import LOCK_NAME, OutputLock
from vidload._storage import Location
from vidload.convert import convert
from vidload.errors import DiskFullError, OutputLockedError
from vidload.manifest import read_manifest
from vidload.shards import PARTS_DIR, convert_shard, plan_convert

W, H = 64, 48
FRAMES = {"a/v0.mp4": 12, "a/v1.mp4": 10, "b/v2.mkv": 8, "b/v3.mp4": 11, "c/v4.avi": 9}


def make_inputs(folder: Path, broken: bool = True) -> Path:
    for vid, n in FRAMES.items():
        codec = "mpeg4" if vid.endswith(".avi") else "libx264"
        make_video(folder / vid, n, codec=codec, width=W, height=H, options={"g": "4"})
    if broken:
        (folder / "b/broken.mp4").write_bytes(b"not a video\n" * 20)
    return folder


def output_files(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` but the manifest (compared row by row), by relative path."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != "manifest.csv"
    }


def temporaries(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob(".*") if p.name != "vidload-convert.json"]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    return make_inputs(tmp_path_factory.mktemp("shards") / "in")


@pytest.fixture(scope="module")
def local_hdf5(inputs, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("shards") / "local"
    convert(inputs, out, to="hdf5", workers=1, progress=False)
    return out


def test_an_executor_gives_the_local_output(inputs, local_hdf5, tmp_path):
    out = tmp_path / "pool"
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        report = convert(inputs, out, to="hdf5", executor=pool, shard_size=2, progress=False)
    assert [r.video_id for r in report.failed] == ["b/broken.mp4"]
    assert sorted(report.converted) == sorted(FRAMES)
    assert output_files(out) == output_files(local_hdf5)
    assert read_manifest(out / "manifest.csv") == read_manifest(local_hdf5 / "manifest.csv")
    assert temporaries(out) == []  # no lock, no parts, no temporaries


def test_executor_and_workers_are_exclusive(inputs, tmp_path):
    with ProcessPoolExecutor(1) as pool:
        with pytest.raises(ValueError, match="workers applies to the local pool"):
            convert(inputs, tmp_path / "o", to="npy", executor=pool, workers=2, progress=False)
    with pytest.raises(TypeError, match="executor must be a concurrent.futures.Executor"):
        convert(inputs, tmp_path / "o", to="npy", executor=object(), progress=False)
    with pytest.raises(ValueError, match=r"shard_size \(0\) must be >= 1"):
        convert(inputs, tmp_path / "o", to="npy", shard_size=0, progress=False)


def test_a_retried_shard_converts_no_video_twice(inputs, local_hdf5, tmp_path, monkeypatch):
    out = tmp_path / "out"
    calls: list[str] = []
    real = job_mod._convert_video

    def counting(job, frames):
        calls.append(job.item.video_id)
        if len(calls) == 2:  # the task dies part-way through its second video
            raise KeyboardInterrupt
        return real(job, frames)

    monkeypatch.setattr(job_mod, "_convert_video", counting)
    with plan_convert(inputs, out, to="hdf5", shard_size=3) as plan:
        first = plan.shards[0]
        with pytest.raises(KeyboardInterrupt):
            convert_shard(first)
        assert (out / PARTS_DIR).is_dir()
        results = [convert_shard(shard) for shard in plan.shards]  # the retry, then the rest
        again = convert_shard(first)  # a duplicate of a finished task does nothing
        report = plan.finish(results)
    assert again.outcomes == results[0].outcomes
    assert calls.count(calls[0]) == 1  # the first attempt's finished video was not redone
    assert calls.count(calls[1]) == 2  # the interrupted one was, once
    assert len(calls) == len(set(calls)) + 1
    assert sorted(report.converted) == sorted(FRAMES)
    assert output_files(out) == output_files(local_hdf5)
    assert read_manifest(out / "manifest.csv") == read_manifest(local_hdf5 / "manifest.csv")
    assert temporaries(out) == []


def test_finish_lists_videos_of_shards_that_never_ran(inputs, tmp_path):
    out = tmp_path / "out"
    with plan_convert(inputs, out, to="npy", shard_size=2) as plan:
        result = convert_shard(plan.shards[0])
        report = plan.finish([result])
    handled = {o.row.video_id for o in result.outcomes}
    assert set(report.unfinished) == {i.video_id for i in plan.items} - handled
    assert not report.ok
    assert {r.video_id for r in read_manifest(out / "manifest.csv")} == handled
    rerun = convert(inputs, out, to="npy", workers=1, progress=False)
    assert set(rerun.converted) | {r.video_id for r in rerun.failed} == set(report.unfinished)


def test_a_killed_runs_parts_are_kept_and_overwrite_clears_them(inputs, tmp_path, monkeypatch):
    out = tmp_path / "out"
    plan = plan_convert(inputs, out, to="npy", shard_size=2)
    convert_shard(plan.shards[0])
    plan.close()  # the driver died before finish: no manifest, a part on disk
    assert not (out / "manifest.csv").exists()
    calls: list[str] = []
    real = job_mod._convert_video
    monkeypatch.setattr(
        job_mod,
        "_convert_video",
        lambda j, *rest: calls.append(j.item.video_id) or real(j, *rest),
    )
    report = convert(inputs, out, to="npy", workers=1, progress=False)
    first = set(plan.shards[0].video_ids)
    assert first.isdisjoint(calls) and first <= set(report.skipped)
    assert not (out / PARTS_DIR).exists()

    (out / PARTS_DIR).mkdir()  # an old part must not leak into an overwrite run
    (out / PARTS_DIR / "part-000000-deadbeef.json").write_text("[]")
    calls.clear()
    forced = convert(inputs, out, to="npy", workers=1, progress=False, overwrite=True)
    assert sorted(calls) == sorted(FRAMES)  # all again (the broken one fails before decoding)
    assert sorted(forced.converted) == sorted(FRAMES)
    assert not (out / PARTS_DIR).exists()


def test_containers_and_manifests_are_fsynced_before_rename(inputs, tmp_path, monkeypatch):
    synced: list[str] = []
    renamed: list[tuple[str, str, bool]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        return real_fsync(fd)

    def replace(src, dst):
        renamed.append((str(src), str(dst), str(src) in synced))
        return real_replace(src, dst)

    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to name file descriptors")
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    out = tmp_path / "out"
    convert(inputs, out, to="jpeg", workers=1, progress=False, shard_size=1)
    monkeypatch.undo()
    into = {Path(dst).name: ok for _, dst, ok in renamed}
    assert into["manifest.csv"] and into["v0"] and into["vidload-convert.json"]
    assert all(ok for _, _, ok in renamed), [r for r in renamed if not r[2]]
    frames = [p for p in synced if "/.v0.tmp-" in p and p.endswith(".jpg")]
    assert len(frames) == FRAMES["a/v0.mp4"]  # every frame file of the folder
    assert str(out / "a") in synced and str(out) in synced  # the folders after the renames


# --------------------------------------------------------------------------- one run per output


def test_a_second_run_into_the_same_output_is_refused(inputs, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    with OutputLock(Location(out)):
        with pytest.raises(OutputLockedError, match=r"being written by another run \(pid \d+"):
            convert(inputs, out, to="npy", workers=1, progress=False)
        holder = json.loads((out / LOCK_NAME).read_text())
        assert holder["pid"] == os.getpid() and holder["host"] == socket.gethostname()
    assert not (out / LOCK_NAME).exists()
    assert not (out / "manifest.csv").exists()


def test_a_dead_runs_lock_is_taken_over(inputs, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = {"pid": dead.pid, "host": socket.gethostname(), "started": "then", "token": "x"}
    (out / LOCK_NAME).write_text(json.dumps(stale))
    (out / "a").mkdir()
    orphan = out / "a/.v0.npy.tmp-999999-deadbeef"  # what the dead run was writing
    orphan.write_bytes(b"partial")
    report = convert(inputs, out, to="npy", workers=1, progress=False)
    assert len(report.converted) == len(FRAMES)
    assert not orphan.exists() and not (out / LOCK_NAME).exists()


def test_a_lock_from_another_host_is_not_taken(inputs, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    other = {"pid": 1, "host": "not-" + socket.gethostname(), "started": "now", "token": "x"}
    (out / LOCK_NAME).write_text(json.dumps(other))
    with pytest.raises(OutputLockedError, match="remove the lock file if that run is dead"):
        convert(inputs, out, to="npy", workers=1, progress=False)


def test_an_unreadable_lock_is_refused_naming_it(inputs, tmp_path):
    """A lock is complete once it exists (a complete file linked into place): a garbled one is
    no run still writing it, and is refused, as in a bucket."""
    out = tmp_path / "out"
    out.mkdir()
    (out / LOCK_NAME).write_text("{garbled")
    with pytest.raises(OutputLockedError, match=r"\.vidload-convert\.lock: an unreadable lock"):
        convert(inputs, out, to="npy", workers=1, progress=False)
    assert (out / LOCK_NAME).read_text() == "{garbled"
    assert sorted(p.name for p in out.iterdir()) == [LOCK_NAME]  # no temporary left


def test_two_drivers_at_once_one_refuses(inputs, tmp_path):
    out = tmp_path / "out"
    code = (
        "import sys; from vidload.convert import convert\n"
        "from vidload.errors import OutputLockedError\n"
        "try:\n"
        f"    r = convert({str(inputs)!r}, {str(out)!r}, to='hdf5', workers=1, progress=False)\n"
        "    print('done', len(r.converted))\n"
        "except OutputLockedError as e:\n"
        "    print('refused', e)\n"
    )
    runs = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    said = sorted(p.communicate(timeout=120)[0].strip() for p in runs)
    done = [s for s in said if s.startswith("done")]
    refused = [s for s in said if s.startswith("refused")]
    assert done and len(done) + len(refused) == 2
    for text in refused:
        assert "being written by another run" in text
    rows = {r.video_id: r for r in read_manifest(out / "manifest.csv")}
    assert set(rows) == {*FRAMES, "b/broken.mp4"}
    assert all(rows[v].actual_frames == n for v, n in FRAMES.items())
    assert temporaries(out) == []


# --------------------------------------------------------------------------- kill -9


def _session_processes(sid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if int(fields[3]) == sid and fields[0] != "Z":
            pids.append(int(entry.name))
    return pids


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl and /proc are Linux's")
def test_kill_9_of_the_cli_leaves_no_process(tmp_path):
    src = tmp_path / "in"
    for i in range(24):  # ~80 ms of CPU each: ~1 s for two workers, so the kill lands mid-run
        make_video(src / f"v{i:02d}.mp4", 120, width=128, height=96)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "vidload", "convert", str(src), str(out), "--to", "jpeg"]
    cli = subprocess.Popen(
        [*cmd, "--workers", "2", "--shard-size", "1", "-q"],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not list(out.glob("v[0-9]*")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert list(out.glob("v[0-9]*")), "the conversion never started"
        assert len(_session_processes(cli.pid)) >= 3  # the CLI and its workers
        assert cli.poll() is None, "the conversion finished before the kill"
        os.kill(cli.pid, signal.SIGKILL)
        cli.wait()
        time.sleep(0.5)
        containers = sorted(p.name for p in out.glob("v[0-9]*"))
        time.sleep(1.5)
        assert _session_processes(cli.pid) == []
        assert sorted(p.name for p in out.glob("v[0-9]*")) == containers  # nothing new started
    finally:
        for pid in _session_processes(cli.pid):
            os.kill(pid, signal.SIGKILL)
    report = convert(src, out, to="jpeg", workers=1, progress=False)  # the rerun resumes
    assert report.ok and len(report.rows) == 24 and report.converted
    assert temporaries(out) == []


# --------------------------------------------------------------------------- disk full


@pytest.fixture
def small_disk(tmp_path):
    """A 512 KiB tmpfs, or a skip where mounting one is not allowed."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mnt)],
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"cannot mount a tmpfs: {e}")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, timeout=10)


@pytest.mark.parametrize("to", ["jpeg", "hdf5", "npy"])
def test_disk_full_stops_with_the_manifest_of_what_finished(small_disk, tmp_path, to, capsys):
    from vidload.cli import main

    src = tmp_path / "in"
    for i in range(12):  # ~40 KB of frames each at q95: a few fit in 512 KiB
        make_video(src / f"v{i}.mp4", 30, width=96, height=64)
    out = small_disk / "out"
    code = main(["convert", str(src), str(out), "--to", to, "--workers", "1", "-q"])
    err = capsys.readouterr().err
    assert code == 1
    assert "no space left on device writing" in err and str(out) in err
    rows = read_manifest(out / "manifest.csv")
    assert rows and all(r.status == "ok" for r in rows)
    assert len(rows) < 12
    assert temporaries(out) == []
    for row in rows:  # what the manifest lists is complete
        assert row.actual_frames == 30


def test_disk_full_at_start_leaves_nothing(small_disk, tmp_path, capsys):
    from vidload.cli import main

    src = make_inputs(tmp_path / "in", broken=False)
    filler = small_disk / "filler"
    fd = os.open(filler, os.O_CREAT | os.O_WRONLY)
    try:  # fill the disk
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    out = small_disk / "out"
    code = main(["convert", str(src), str(out), "--to", "npy", "--workers", "1", "-q"])
    err = capsys.readouterr().err
    assert code == 1 and "no space left on device" in err
    assert not out.exists() or list(out.iterdir()) == []  # no lock, options file, temporaries
    with pytest.raises(DiskFullError):
        convert(src, out, to="npy", workers=1, progress=False)


# --------------------------------------------------------------------------- allocator


@pytest.mark.parametrize(
    "env, expected",
    [
        ({}, []),
        ({"MALLOC_TRIM_THRESHOLD_": "65536"}, [(-3, 32 << 20), (-1, 64 << 20)]),
        ({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=65536"}, [(-3, 32 << 20), (-1, 64 << 20)]),
    ],
)
def test_tasks_undo_a_low_malloc_trim_threshold(monkeypatch, env, expected):
    import vidload._parallel as par

    calls: list[tuple[int, int]] = []

    class FakeLibc:
        def mallopt(self, param, value):
            calls.append((param, value))
            return 1

    for name in ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(par, "_libc", lambda: FakeLibc())
    par.prepare_task_process.cache_clear()  # once per process: again here, for each case
    par.prepare_task_process()
    assert calls == expected


def test_a_failed_task_stops_the_run_with_what_finished(inputs, tmp_path):
    from concurrent.futures import Executor, Future

    class FailingSecond(Executor):
        """Runs shards in this process; the second one's future fails, as a lost worker's."""

        def __init__(self):
            self.n = 0

        def submit(self, fn, shard):
            self.n += 1
            future: Future = Future()
            if self.n == 2:
                future.set_exception(RuntimeError("worker lost"))
            else:
                future.set_result(fn(shard))
            return future

    out = tmp_path / "out"
    report = convert(inputs, out, to="npy", executor=FailingSecond(), shard_size=2, progress=False)
    assert report.stopped == "a conversion task failed (RuntimeError: worker lost)"
    assert not report.ok and report.unfinished
    handled = {r.video_id for r in read_manifest(out / "manifest.csv")}
    assert handled == {r.video_id for r in report.rows} and handled.isdisjoint(report.unfinished)
    assert temporaries(out) == []
    rerun = convert(inputs, out, to="npy", workers=1, progress=False)
    assert set(rerun.converted) | {r.video_id for r in rerun.failed} == set(report.unfinished)


def test_numpy_integers_are_accepted_like_ints(tmp_path):
    # one int check for convert, probe and the planner: NumPy integers pass everywhere
    import numpy as np

    from vidload._parallel import resolve_workers, shard_size_for

    workers = resolve_workers(np.int64(2), None)[0]
    assert workers == 2 and type(workers) is int
    assert resolve_workers(np.int64(1), None)[0] == 1
    assert shard_size_for(np.int32(3), 100, 16) == 3
    with pytest.raises(ValueError, match=r"shard_size \(0\) must be >= 1"):
        shard_size_for(0, 100, 16)
    with pytest.raises(TypeError, match="workers must be an int"):
        resolve_workers(2.0, None)


def test_plan_convert_takes_the_keywords_or_one_convert_options(inputs, tmp_path):
    # one checked object behind the keywords: the plan and its jobs carry it
    from vidload.shards import ConvertOptions

    options = ConvertOptions(to="npy", shard_size=2, short_side=np.int64(32))
    assert options.short_side == 32 and type(options.short_side) is int
    with plan_convert(inputs, tmp_path / "a", options=options) as plan:
        assert plan.options is options and plan.to == "npy"
        assert {job.options for shard in plan.shards for job in shard.jobs} == {options}
    with plan_convert(inputs, tmp_path / "b", to="npy", shard_size=2, short_side=32) as plan:
        assert plan.options == options
    with pytest.raises(TypeError, match=r"not both \(to, quality given\)"):
        plan_convert(inputs, tmp_path / "c", to="npy", quality=90, options=options)
    with pytest.raises(TypeError, match="to= is required"):
        plan_convert(inputs, tmp_path / "c")
    with pytest.raises(TypeError, match="options must be a ConvertOptions"):
        plan_convert(inputs, tmp_path / "c", options={"to": "npy"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"quality \(0\) must be in \[1, 100\]"):
        ConvertOptions(to="npy", quality=0)
    assert not (tmp_path / "c").exists()  # nothing planned, no lock taken
