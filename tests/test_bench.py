"""`vidload bench` and the sample-video generator: a fast smoke test on tiny data.

No timing is asserted: only that every row runs, reads the same pixels as its reference, and
that the report, JSON and error paths say what they should.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import time
from pathlib import Path

import av
import numpy as np
import pytest
from media import make_video

from vidload import bench
from vidload._bench import report
from vidload._bench.geometry import geometry_sources
from vidload._measure.timing import RoundRobin, row_pass
from vidload._measure.videos import UserVideos
from vidload.synth import SPEC_FILE, SynthSpec, make_sample_videos

SOURCES = {"video", "jpeg", "hdf5", "npy-mmap", "npy-read"}
TINY = ["--min-time", "0", "--repeats", "1", "--no-progress"]
QUICK_CLIPS = 4


def _decode(path: Path) -> tuple[list[np.ndarray], bool]:
    """All frames of `path`, and whether any packet has pts != dts (B-frames reorder)."""
    with av.open(str(path)) as c:
        stream = c.streams.video[0]
        reordered = any(p.pts != p.dts for p in c.demux(stream) if p.size)
    with av.open(str(path)) as c:
        frames = [f.to_ndarray(format="rgb24", threads=1) for f in c.decode(c.streams.video[0])]
    return frames, reordered


def test_sample_videos_are_moving_h264_with_b_frames_and_reused(tmp_path):
    spec = SynthSpec(num_videos=5, width=96, height=64, seconds=1.6)
    ids = make_sample_videos(tmp_path, spec, progress=False)
    assert len(set(ids)) == 5
    # what a later run finds is what was made: reusable
    assert UserVideos(tmp_path).find("", ValueError).ids == ids
    assert all(v.endswith(".mp4") and "/" in v for v in ids)
    for vid in ids:
        frames, reordered = _decode(tmp_path / vid)
        assert len(frames) == spec.num_frames == 40
        assert frames[0].shape == (64, 96, 3)
        assert reordered, f"{vid}: no B-frames"
        first, last = frames[0].astype(np.int16), frames[-1].astype(np.int16)
        assert first.std() > 10  # content, not a flat colour
        assert np.abs(first - last).mean() > 5  # it moves
    a, _ = _decode(tmp_path / ids[0])
    b, _ = _decode(tmp_path / ids[1])
    assert np.abs(a[0].astype(np.int16) - b[0]).mean() > 5  # videos differ from each other

    stamps = {v: (tmp_path / v).stat().st_mtime_ns for v in ids}
    assert make_sample_videos(tmp_path, spec, progress=False) == ids
    assert {v: (tmp_path / v).stat().st_mtime_ns for v in ids} == stamps  # reused, not rewritten
    longer = SynthSpec(num_videos=5, width=96, height=64, seconds=2.0)
    make_sample_videos(tmp_path, longer, progress=False)
    assert len(_decode(tmp_path / ids[0])[0]) == 50
    assert json.loads((tmp_path / SPEC_FILE).read_text())["seconds"] == 2.0


def test_an_interrupted_sample_video_leaves_no_file(tmp_path, monkeypatch):
    import vidload.synth as synth

    real = synth.render_frames

    def interrupted(spec, rng):
        yield next(iter(real(spec, rng)))
        raise KeyboardInterrupt

    monkeypatch.setattr(synth, "render_frames", interrupted)
    with pytest.raises(KeyboardInterrupt):
        make_sample_videos(tmp_path, SynthSpec(num_videos=1, width=32, height=32), progress=False)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []  # no partial video to find


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"num_videos": 0}, r"num_videos \(0\) must be >= 1"),
        ({"width": 95}, r"must be even and >= 16"),
        ({"seconds": 0.01}, r"seconds \(0.01\) must give at least one frame"),
        ({"fps": 0}, r"fps \(0\) must be >= 1"),
    ],
)
def test_synth_spec_rejects_bad_values(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SynthSpec(**kwargs)


def test_synth_spec_checks_types_and_keeps_plain_values():
    spec = SynthSpec(num_videos=np.int64(2), width=np.int32(64), seconds=np.float32(0.5))
    assert (type(spec.num_videos), type(spec.width), type(spec.seconds)) == (int, int, float)
    for kwargs, match in (
        ({"width": 64.0}, "width must be an int, got 64.0"),
        ({"actions": 1}, "actions must be a bool, got 1"),
        ({"seconds": "7"}, "seconds must be a number, got '7'"),
    ):
        with pytest.raises(TypeError, match=match):
            SynthSpec(**kwargs)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """One --quick run with every row, the DataLoader (1 worker) and --cold, run here so that
    every test using it sees the same finished run whatever the order: (tmp, argv, json, stdout)."""
    tmp = tmp_path_factory.mktemp("bench")
    out = tmp / "result.json"
    argv = ["--quick", "--work", str(tmp / "work"), "--workers", "1", "--clips", str(QUICK_CLIPS)]
    argv += ["--batch-size", "2", "--cold", "--json", str(out), *TINY]
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(io.StringIO()):
        assert bench.main(argv) == 0
    return tmp, argv, out, stdout.getvalue()


@pytest.mark.slow
def test_quick_run_measures_every_source_on_the_same_clips(quick_run):
    tmp, argv, out, text = quick_run
    result = json.loads(out.read_text())
    rows = result["loaders"]
    assert SOURCES | {"memory", "pil", "pyav-from-start"} <= set(rows)
    frames = rows["memory"]["frames_per_s"] / rows["memory"]["clips_per_s"]
    assert frames == pytest.approx(round(frames)) and round(frames) >= 1
    for name, row in rows.items():
        # the speed is the clips over the best repeat's time, and own time never exceeds wall
        totals, walls = row["times_s"]["total"], row["times_s"]["wall"]
        assert row["clips_per_s"] == pytest.approx(QUICK_CLIPS / min(totals)), name
        assert row["frames_per_s"] == pytest.approx(row["clips_per_s"] * frames), name
        assert all(t <= w * (1 + 1e-9) for t, w in zip(totals, walls, strict=True)), name
        assert row["vs_memory"] == pytest.approx(row["clips_per_s"] / rows["memory"]["clips_per_s"])
        assert name in text
    for name in SOURCES:
        assert rows[name]["check"] == "identical", (name, rows[name]["check"])
        split = rows[name]["split_ms_per_clip"]
        assert split["read"] > 0 and split["decode"] > 0
        assert split["total"] == pytest.approx(1000 / rows[name]["clips_per_s"])
        # a negative rest (parts timed apart: noise) is shown as 0, the measured one kept
        rest = split.get("rest_measured", split["rest"])
        assert rest == pytest.approx(split["total"] - split["read"] - split["decode"])
        assert split["rest"] == max(rest, 0.0)
        dl = rows[name]["dataloader"]
        assert dl["clips_per_s"] == pytest.approx(QUICK_CLIPS / min(dl["times_s"]))
        assert dl["vs_one_process"] == pytest.approx(dl["clips_per_s"] / rows[name]["clips_per_s"])
        assert rows[name]["cold"]["cold_s"] > 0 and rows[name]["cold"]["warm_s"] > 0
    assert rows["video"]["disk_vs_video"] == pytest.approx(1.0)
    assert rows["jpeg"]["disk_vs_video"] > 1.5  # JPEG frames take more room than H.264
    # npy "read" reads the whole file, "mmap" only the clip's rows
    assert rows["npy-read"]["bytes_read_per_clip"] > rows["npy-mmap"]["bytes_read_per_clip"]
    assert rows["memory"]["vs_memory"] == pytest.approx(1.0)
    # the HDF5 row says that its few files stay open from clip to clip (its handle cache)
    held = [n for n in result["notes"] if n.startswith("hdf5: its ")]
    assert len(held) == 1 and "cache_size=32" in held[0], result["notes"]
    assert result["data"]["num_videos"] == 2
    assert set(result["data"]["frames_per_video"].values()) == {50}
    assert result["dataloader_settings"]["workers"] == 1
    assert "× in-memory" in text and "rest ms" in text
    # geometry rows: fused resize vs full-size read + cv2.resize, on the videos and a larger
    # sample (640x360 in --quick), the same output within resampling differences
    geometry = result["geometry"]
    assert [sorted(g["rows"]) for g in geometry] == [sorted(geometry_sources())] * 2
    assert geometry[0]["input"] == [160, 120] and geometry[0]["output"] == [171, 128]
    assert geometry[1]["input"] == [640, 360] and geometry[1]["output"] == [228, 128]
    for g in geometry:
        for name, row in g["rows"].items():
            assert row["fused_ms_per_clip"] > 0 and row["speedup"] > 0, name
            assert row["mean_abs_diff"] < 3, (name, row["mean_abs_diff"])
    assert text.count("Fused resize") == 2

    markdown = report.render(result, markdown=True)
    table_lines = [ln for ln in markdown.splitlines() if ln.startswith("|")]
    assert len(table_lines) >= 2 * (len(rows) + 2)
    assert table_lines[1].startswith("|:---|---:")


def test_second_run_reuses_the_work_folder(quick_run, capsys):
    tmp, argv, _, _ = quick_run
    work = tmp / "work"
    stamp = (work / "npy").stat().st_mtime_ns
    argv = ["--quick", "--work", str(work), "--only", "npy-mmap,memory", "--no-dataloader"]
    argv += ["--no-geometry-hd"]
    assert bench.main([*argv, "--clips", "2", *TINY]) == 0
    err = capsys.readouterr().err
    assert "reusing" in err and "converting" not in err
    assert (work / "npy").stat().st_mtime_ns == stamp


def test_user_videos_are_linked_and_benchmarked(tmp_path, capsys):
    data = tmp_path / "data"
    make_video(data / "a" / "one.mp4", 30, width=64, height=48)
    make_video(data / "a" / "one.avi", 24, codec="mpeg4", width=80, height=48)  # another size
    (data / "a" / "notes.txt").write_text("not a video")
    out = tmp_path / "r.json"
    rows = "video,jpeg,hdf5,npy-mmap,memory,pyav-from-start"
    argv = [str(data), "--quick", "--work", str(tmp_path / "work"), "--only", rows]
    argv += ["--workers", "0", "--clips", "3", "--json", str(out), *TINY]
    argv += ["--geometry-short-side", "0"]  # the geometry rows are the quick run's business
    assert bench.main(argv) == 0
    result = json.loads(out.read_text())
    assert result["data"]["origin"] == str(data.resolve())
    assert result["geometry"] is None
    # one.mp4 and one.avi differ only by extension: both kept, each read from its own container
    # (the first clip of every video is compared, and their frame sizes differ)
    assert result["data"]["frames_per_video"] == {"a/one.avi": 24, "a/one.mp4": 30}
    assert set(result["loaders"]) == set(rows.split(","))
    for name in ("video", "jpeg", "hdf5", "npy-mmap"):
        assert result["loaders"][name]["check"] == "identical", name
    assert (tmp_path / "work" / "videos" / "a" / "one.avi").is_symlink()

    stale = tmp_path / "work" / "hdf5" / "a" / "gone.h5"  # e.g. a video since removed
    stale.write_bytes(b"stale")
    argv[argv.index("--clips") + 1] = "2"
    assert bench.main([*argv, "--num-videos", "1"]) == 0  # first video by path only
    result = json.loads(out.read_text())
    assert list(result["data"]["frames_per_video"]) == ["a/one.avi"]
    assert not stale.exists()  # a rebuilt format starts from an empty folder


class _FakeClock:
    """A clock that only the fakes below move: each part of a row costs a known time."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _recording_row(clock: _FakeClock, calls: list):
    """read (5 s), raw (1 s) and decode (3 s) halves that record what they are asked for."""

    def read(video_id, indices):
        calls.append(("read", video_id, indices.tolist()))
        clock.now += 5.0
        return np.zeros((len(indices), 4, 6, 3), np.uint8)

    def raw(video_id, indices):
        calls.append(("raw", video_id, indices.tolist()))
        clock.now += 1.0
        return (video_id, indices.tolist())

    def decode(payload):
        calls.append(("decode", *payload))
        clock.now += 3.0

    return read, raw, decode


def test_row_pass_times_read_and_decode_of_the_clips_the_whole_read_reads():
    clock, calls = _FakeClock(), []
    read, raw, decode = _recording_row(clock, calls)
    clips = [("a.mp4", np.array([0, 2])), ("b.avi", np.array([1, 1])), ("a.mp4", np.array([3]))]
    parts = row_pass(read, clips, 2, raw, decode, clock=clock)
    # each clip: its whole read, then the raw read and decode of the same (video, indices)
    expected = [(part, v, i.tolist()) for v, i in clips for part in ("read", "raw", "decode")]
    assert calls == expected
    assert parts == {"total": 15.0, "read": 3.0, "decode": 9.0}  # rest = total - read - decode

    calls.clear()
    assert row_pass(read, clips, 2, clock=clock) == {"total": 15.0, "read": 0.0, "decode": 0.0}
    assert [c[0] for c in calls] == ["read"] * 3  # a reference row: whole reads only


@pytest.mark.slow
def test_round_robin_warms_up_and_keeps_each_rounds_parts_together():
    clock, calls = _FakeClock(), []
    read, raw, decode = _recording_row(clock, calls)
    clips = [("a.mp4", np.array([0])), ("b.avi", np.array([1]))]
    rr = RoundRobin(0.0, clock)
    warm = rr.add("row/x", lambda: row_pass(read, clips, 4, raw, decode, clock))
    # the warm-up is a whole pass: every video of the row is opened (indexes built) untimed
    assert [(c[0], c[1]) for c in calls] == [
        (p, v) for v, _ in clips for p in ("read", "raw", "decode")
    ]
    assert warm["total"] == 10.0 and warm["decode"] == 6.0 and warm["wall"] >= 0
    # a row whose second round is fastest overall but reads slower: its parts are not mixed
    # with the first round's (the split must add up to the total it reports)
    rounds = iter(
        [{"total": 9.0, "read": 1.0, "decode": 5.0}] * 2
        + [{"total": 8.0, "read": 2.0, "decode": 5.5}]
    )
    rr.add("row/y", lambda: next(rounds))
    calls.clear()
    rr.run(2)
    assert len(calls) == 2 * 3 * len(clips)
    assert rr.times["row/x"] == [10.0, 10.0]
    best = rr.best_round("row/y")
    assert (best["total"], best["read"], best["decode"]) == (8.0, 2.0, 5.5)


def test_one_process_rows_take_turns_batch_by_batch(monkeypatch):
    """The rows are timed batch by batch in turn (not a whole pass each), so a drift in the
    machine's speed lands on every row alike; the warm-up runs in the same order."""
    from types import SimpleNamespace

    from vidload._bench import measure
    from vidload._bench.loaders import Loader

    calls: list[tuple[str, str]] = []

    def reader(name):
        def read(video_id, indices):
            calls.append((name, video_id))
            return np.zeros((len(indices), 2, 2, 3), np.uint8)

        return SimpleNamespace(read=read)

    def no_reduced(memory, rr):
        rr.add("reduced/full+resize", lambda: None)
        rr.add("reduced/dct", lambda: None)
        return {"frames": 1}

    monkeypatch.setattr(measure, "_reduced_decode_tasks", no_reduced)
    loaders = [Loader(n, "memory", "", lambda: None) for n in ("x", "y")]
    clips = [(f"v{k}", np.array([0])) for k in range(4)]
    cfg = SimpleNamespace(min_time=1.0, repeats=2, batch_size=2, frames=1)
    readers = {n: reader(n) for n in ("x", "y")}
    results, _ = measure.measure_one_process(loaders, readers, None, clips, cfg, [], {})
    one_round = [("x", "v0"), ("x", "v1"), ("y", "v0"), ("y", "v1")]
    one_round += [("x", "v2"), ("x", "v3"), ("y", "v2"), ("y", "v3")]
    # the warm-up, then two rounds (the second backwards): one pass each, min_time aside
    backwards = [("y", "v2"), ("y", "v3"), ("x", "v2"), ("x", "v3")]
    backwards += [("y", "v0"), ("y", "v1"), ("x", "v0"), ("x", "v1")]
    assert calls == one_round * 2 + backwards
    assert [len(results[n]["times_s"]["total"]) for n in ("x", "y")] == [2, 2]


def test_a_rows_figure_is_the_sum_of_each_batchs_fastest_round():
    from vidload._bench.measure import _row_rounds

    rr = RoundRobin(0.0)
    rr.rounds = {
        "row/x/0": [{"total": 5.0, "read": 1.0}, {"total": 3.0, "read": 2.0}],
        "row/x/1": [{"total": 2.0, "read": 0.5}, {"total": 4.0, "read": 1.0}],
    }
    rounds, best = _row_rounds(rr, "x", 2)
    assert rounds == [{"total": 7.0, "read": 1.5}, {"total": 7.0, "read": 3.0}]
    assert best == {"total": 5.0, "read": 2.5}  # 3 + 2: no whole round was that fast


def test_own_clock_falls_back_to_wall_time_without_schedstat(monkeypatch):
    from vidload._measure import clocks

    with clocks.OwnClock() as clock:
        a, b = clock(), clock()
        assert b >= a
        assert clock.available == Path("/proc/thread-self/schedstat").exists()
    monkeypatch.setattr(clocks, "_SCHEDSTAT", "/nonexistent/schedstat")
    with clocks.OwnClock() as clock:
        assert not clock.available
        before = time.perf_counter()
        assert before <= clock() <= time.perf_counter()


def test_own_clock_leaves_out_the_run_queue_delay(monkeypatch, tmp_path):
    """The second schedstat field (ns runnable but waiting for a CPU) is taken off the clock."""
    from vidload._measure import clocks

    fake = tmp_path / "schedstat"
    fake.write_text("5000 1000000000 7\n")
    monkeypatch.setattr(clocks, "_SCHEDSTAT", str(fake))
    with clocks.OwnClock() as clock:
        assert clock.available
        wall0, own0 = time.perf_counter(), clock()
        fake.write_text("9000 3500000000 9\n")  # 2.5 s more spent waiting for a CPU
        own1, wall1 = clock(), time.perf_counter()
    # each reading is perf_counter() at some moment within [wall0, wall1] less the delay so far
    assert wall0 - 1.0 <= own0 <= wall1 - 1.0
    assert wall0 - 3.5 <= own1 <= wall1 - 3.5
    assert own1 - own0 <= (wall1 - wall0) - 2.5


@pytest.mark.parametrize(
    ("make_args", "match"),
    [
        (lambda tmp: [str(tmp / "missing")], r"DATA \(.*missing\) must be a folder of videos"),
        (lambda tmp: [str(tmp)], r"no video files .* found under"),
        (lambda tmp: ["--only", "video,bogus"], r"unknown loaders \['bogus'\]"),
        (lambda tmp: ["--clips", "0"], r"clips \(0\) must be > 0"),
        (lambda tmp: ["--bucket", "s3://b/x", "--plot", str(tmp / "p.png")], r"--bucket measures"),
    ],
)
def test_bad_arguments_fail_with_a_clear_message(tmp_path, capsys, make_args, match):
    argv = [*make_args(tmp_path), "--work", str(tmp_path / "work"), "--no-progress"]
    assert bench.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: vidload bench") and "\nvidload bench: error:" in err
    assert __import__("re").search(match, err), err


def test_error_while_running_is_a_failure_with_the_traceback_on_v(tmp_path, capsys, monkeypatch):
    def deep(cfg):
        raise RuntimeError("decoder exploded on clip 3")

    from vidload._bench import run  # where `vidload bench` runs it from

    monkeypatch.setattr(run, "run_benchmark", deep)
    argv = ["--quick", "--work", str(tmp_path / "w"), "--no-progress"]
    assert bench.main(argv) == 1
    err = capsys.readouterr().err
    assert "vidload bench: error: RuntimeError: decoder exploded on clip 3" in err
    assert "usage:" not in err and "Traceback" not in err
    assert bench.main([*argv, "-v"]) == 1
    assert "Traceback (most recent call last)" in capsys.readouterr().err


def test_foreign_work_folder_is_refused(tmp_path, capsys):
    (tmp_path / "mine.txt").write_text("precious")
    assert bench.main(["--quick", "--work", str(tmp_path), "--no-progress"]) == 2
    assert "not made by `vidload bench`" in capsys.readouterr().err
    assert (tmp_path / "mine.txt").read_text() == "precious"


def test_plot_without_matplotlib_fails_before_running(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    argv = ["--quick", "--work", str(tmp_path / "w"), "--plot", str(tmp_path / "p.png")]
    assert bench.main(argv) == 2
    assert "--plot needs matplotlib" in capsys.readouterr().err
    assert not (tmp_path / "w").exists()


def test_plot_draws_a_png(quick_run, tmp_path):
    pytest.importorskip("matplotlib")
    _, argv, out, _ = quick_run
    png = tmp_path / "chart.png"
    report.plot(json.loads(out.read_text()), png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_other_load_measures_a_busy_cpu_fraction():
    if not Path("/proc/stat").exists():
        pytest.skip("needs Linux /proc")
    from vidload._measure.clocks import OtherLoad

    # /proc/stat counts in jiffies (10 ms): over a few ms of wall time one jiffy of rounding
    # alone exceeds the CPU count, so the phase runs long enough (~0.3 s) for it not to matter.
    with OtherLoad() as other:
        end = time.perf_counter() + 0.3
        while time.perf_counter() < end:
            sum(i * i for i in range(10_000))  # our own work is not counted as other load
    assert other.cpus is not None and 0.0 <= other.cpus <= (os.cpu_count() or 1) + 0.5


def test_bench_config_checks_its_numbers_like_every_other_function():
    from vidload._bench.run import BenchConfig

    cfg = BenchConfig(clips=np.int64(12), workers=np.int32(0), min_time=np.float32(0.5))
    assert (cfg.clips, cfg.workers, cfg.min_time) == (12, 0, 0.5)
    assert type(cfg.clips) is int and type(cfg.workers) is int and type(cfg.min_time) is float
    with pytest.raises(TypeError, match="repeats must be an int"):
        BenchConfig(repeats=True)
    with pytest.raises(ValueError, match=r"workers \(-1\) must be >= 0"):
        BenchConfig(workers=-1)
    with pytest.raises(ValueError, match=r"min_time \(nan\) must be >= 0"):
        BenchConfig(min_time=float("nan"))


def test_the_rows_read_through_the_sources_own_raw_read(tmp_path):
    """Habit 8: a container row's I/O half is the source's `read_encoded` and its decode half
    the shared `EncodedFrames.decode`; no copy of a read path in the benchmark."""
    from vidload._bench import loaders
    from vidload._bench.workdir import WorkDir
    from vidload.sources.encoded import ContainerSource, EncodedFrames

    converted = {storage: tmp_path / storage for storage in ("jpeg", "hdf5", "npy")}
    work = WorkDir(tmp_path, tmp_path / "videos", [], "synthetic", converted)
    built = loaders.build_loaders(work, ("jpeg", "hdf5", "npy-mmap", "npy-read"), [], None)
    assert [ld.name for ld in built] == ["jpeg", "hdf5", "npy-mmap", "npy-read"]
    for ld in built:
        raw_source = ld.raw.__self__
        assert (
            isinstance(raw_source, ContainerSource)
            and ld.raw.__func__ is type(raw_source).read_encoded
        )
        assert type(ld.make()) is type(raw_source)
        assert ld.decode is EncodedFrames.decode


def test_a_removed_user_video_leaves_a_dangling_link_that_is_relinked(tmp_path):
    from vidload._bench.config import BenchConfig
    from vidload._bench.workdir import prepare

    data, work = tmp_path / "data", tmp_path / "work"
    make_video(data / "a" / "one.mp4", 12, width=32, height=24)
    make_video(data / "a" / "two.mp4", 12, width=32, height=24)
    cfg = BenchConfig(num_videos=5, quality=90, short_side=None, convert_workers=1, progress=False)
    first = prepare(data, work, SynthSpec(), cfg)
    assert first.video_ids == ["a/one.mp4", "a/two.mp4"]
    (data / "a" / "two.mp4").unlink()  # its link in the work folder now dangles
    assert (work / "videos" / "a" / "two.mp4").is_symlink()
    again = prepare(data, work, SynthSpec(), cfg)
    assert again.video_ids == ["a/one.mp4"]
    assert not (work / "videos" / "a" / "two.mp4").is_symlink()
