"""The `vidload` command line: exit codes 0/1/2, summaries and tables, bench forwarding, and the
progress bar it draws."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from media import make_video, truncate_copy

import vidload
from vidload.cli import main
from vidload.manifest import load_videos, read_manifest
from vidload.progress import Progress, format_bytes, format_duration

W, H = 96, 64


@pytest.fixture(scope="module")
def videos(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("cli") / "videos"
    make_video(folder / "a/x1.mp4", 12, width=W, height=H, options={"g": "6", "bf": "2"})
    make_video(folder / "b/x2.mkv", 10, width=W, height=H)
    full = make_video(folder / "_full.mp4", 40, width=W, height=H, options={"g": "8"},
                      container_options={"movflags": "faststart"})  # fmt: skip
    truncate_copy(full, folder / "b/trunc.mp4", 0.5)
    full.unlink()
    return folder


@pytest.fixture
def broken(videos, tmp_path) -> Path:
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "x1.mp4").write_bytes((videos / "a/x1.mp4").read_bytes())
    (folder / "empty.mp4").write_bytes(b"")
    # a header that promises 40 frames, and no frame data
    data = (videos / "b/trunc.mp4").read_bytes()
    (folder / "stub.mp4").write_bytes(data[: data.index(b"mdat") + 54])
    return folder


@pytest.mark.parametrize(
    ("inputs", "to", "code", "made", "lines"),
    [
        (
            "videos",
            "hdf5",
            0,
            "a/x1.h5",
            [
                "converted 3, skipped 0 (already done), failed 0 of 3 videos",
                "size ratio",
                "frame counts: 1 of 3 videos: reported != actual",
                "! b/trunc.mp4: reported 40, actual",
            ],
        ),
        (
            "broken",
            "npy",
            1,
            "x1.npy",
            [
                "converted 1, skipped 0 (already done), failed 2 of 3 videos",
                "x empty.mp4: empty file (0 bytes)",
                "x stub.mp4: no frame",
            ],
        ),
    ],
)
def test_convert_summary_and_exit_status(request, tmp_path, capsys, inputs, to, code, made, lines):
    """0 when every video converted, 1 listing the reasons when some failed (a resume through
    the CLI: `test_user_columns_survive_a_resume_probe_write_and_convert`)."""
    out = tmp_path / "out"
    folder = request.getfixturevalue(inputs)
    assert main(["convert", str(folder), str(out), "--to", to, "--workers", "1", "-q"]) == code
    text = capsys.readouterr().out
    for line in [*lines, f"manifest: {out / 'manifest.csv'}"]:
        assert line in text
    assert (out / made).is_file()


def test_convert_draws_progress_on_stderr(broken, tmp_path, capsys):
    assert (
        main(["convert", str(broken), str(tmp_path / "o"), "--to", "jpeg", "--workers", "1"]) == 1
    )
    err = capsys.readouterr().err
    assert "convert" in err and "3/3" in err and "video/s" in err


@pytest.mark.parametrize(
    "args, message",
    [
        (["convert", "{v}", "{o}"], "the following arguments are required: --to"),
        (["convert", "{v}", "{o}", "--to", "png"], "invalid choice: 'png'"),
        (["convert", "{v}", "{o}", "--to", "npy", "--quality", "0"], "0 must be in [1, 100]"),
        (["convert", "{v}", "{o}", "--to", "npy", "--quality", "101"], "101 must be in [1, 100]"),
        (["convert", "{v}", "{o}", "--to", "npy", "--quality", "hi"], "'hi' is not an integer"),
        (["convert", "{v}", "{o}", "--to", "npy", "--workers", "0"], "0 must be >= 1"),
        (["convert", "{v}", "{o}", "--to", "npy", "--short-side", "-3"], "-3 must be >= 1"),
        (["convert", "{o}/missing", "{o}", "--to", "npy"], "does not exist"),
        (["convert", "{v}", "{v}/out", "--to", "npy"], "must not be inside one another"),
        (["convert", "{v}", "{o}", "--to", "npy", "--root", "{v}"], "applies only to an annot"),
        (["convert", "{v}", "{o}", "--to", "npy", "--root", "{o}/nope"], "is not a folder"),
        (["convert", "{v}", "{o}", "--to", "npy", "--labels", "{o}/nope"], "is not a file"),
        (["convert", "{v}"], "the following arguments are required"),
        (["probe", "{o}/missing"], "does not exist"),
        (["probe", "{v}", "--workers", "x"], "'x' is not an integer"),
        ([], "the following arguments are required: COMMAND"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
)
def test_bad_arguments_exit_2(videos, tmp_path, capsys, args, message):
    argv = [a.format(v=videos, o=tmp_path) for a in args]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "error:" in err and message in err
    # the command's usage line, whether argparse or vidload found the problem
    command = args[0] if args and args[0] in ("convert", "probe") else "[-h]"
    assert f"usage: vidload {command}" in err and "Traceback" not in err
    assert not (videos / "out").exists()


def test_resuming_with_other_options_is_a_usage_error(videos, tmp_path, capsys):
    out = str(tmp_path / "out")
    assert main(["convert", str(videos), out, "--to", "npy", "--workers", "1", "-q"]) == 0
    capsys.readouterr()
    assert main(["convert", str(videos), out, "--to", "npy", "--quality", "80", "-q"]) == 2
    err = capsys.readouterr().err
    assert "usage: vidload convert" in err and "converted with other options" in err


def test_unreadable_manifest_is_a_failure_not_a_usage_error(videos, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["convert", str(videos), str(out), "--to", "npy", "--workers", "1", "-q"]) == 0
    (out / "manifest.csv").write_text("garbage\n")
    capsys.readouterr()
    assert main(["convert", str(videos), str(out), "--to", "npy", "--workers", "1", "-q"]) == 1
    err = capsys.readouterr().err
    assert "vidload convert: error: ValueError:" in err and "cannot be resumed from" in err
    assert "usage:" not in err and "Traceback" not in err and "-v shows the traceback" in err


@pytest.mark.parametrize("command", ["convert", "probe"])
@pytest.mark.parametrize("error", [ValueError, TypeError, FileNotFoundError, RuntimeError])
def test_errors_raised_while_working_are_failures(videos, tmp_path, capsys, monkeypatch, command,
                                                  error):  # fmt: skip
    """A ValueError deep inside convert()/probe() is a failure (1) naming the problem, not
    "bad arguments"; -v prints where it came from."""

    def deep(*args, **kwargs):
        raise error("frame 7 of a/x1.mp4 went wrong deep inside")

    import vidload.convert
    import vidload.probe

    monkeypatch.setattr(vidload.convert, "convert", deep)
    monkeypatch.setattr(vidload.convert, "run_convert", deep)  # what `vidload convert` calls
    monkeypatch.setattr(vidload.probe, "probe", deep)
    argv = [command, str(videos)] + (["-o", "--to", "npy"] if command == "convert" else [])
    argv = [str(tmp_path / "o") if a == "-o" else a for a in argv]
    assert main([*argv, "-q"]) == 1
    err = capsys.readouterr().err
    line = f"vidload {command}: error: {error.__name__}: frame 7 of a/x1.mp4 went wrong"
    assert line in err and "usage:" not in err and "Traceback" not in err
    assert main([*argv, "-q", "-v"]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "in deep" in err and line in err


def test_version_and_help(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"vidload {vidload.__version__}"
    assert main(["convert", "--help"]) == 0
    assert "--short-side S" in capsys.readouterr().out


def test_python_dash_m_vidload():
    done = subprocess.run(
        [sys.executable, "-m", "vidload", "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.startswith("vidload ")


def test_probe_table_marks_mismatches_and_writes_a_manifest(videos, tmp_path, capsys):
    manifest = tmp_path / "probe.csv"
    assert main(["probe", str(videos), "--write", str(manifest), "--workers", "1", "-q"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == [
        "video_id",
        "reported",
        "actual",
        "size",
        "fps",
        "rotation",
        "status",
    ]
    (trunc,) = [ln for ln in lines if "b/trunc.mp4" in ln]
    assert trunc.startswith("!") and trunc.split()[2] == "40" and "mismatch" in trunc
    (x1,) = [ln for ln in lines if "a/x1.mp4" in ln]
    assert x1.split()[:4] == ["a/x1.mp4", "12", "12", f"{W}x{H}"]
    assert "1 of 3 videos: reported != actual" in lines
    rows = {r.video_id: r for r in read_manifest(manifest)}
    assert (rows["b/x2.mkv"].actual_frames, rows["b/x2.mkv"].status) == (10, "ok")
    assert rows["b/trunc.mp4"].status == "mismatch" and rows["b/trunc.mp4"].reported_frames == 40
    assert 0 < rows["b/trunc.mp4"].actual_frames < 40
    assert [e.video_id for e in load_videos(manifest)] == ["a/x1.mp4", "b/trunc.mp4", "b/x2.mkv"]


def test_probe_failure_exits_1(broken, capsys):
    assert main(["probe", str(broken), "-q"]) == 1
    text = capsys.readouterr().out
    assert "failed: 2 of 3 videos" in text
    assert "x empty.mp4: empty file (0 bytes)" in text
    (empty,) = [ln for ln in text.splitlines() if ln.startswith("x  empty.mp4")]
    assert empty.split()[2:4] == ["-", "-"]
    (stub,) = [ln for ln in text.splitlines() if ln.startswith("x  stub.mp4")]
    assert stub.split()[2:5] == ["40", "-", f"{W}x{H}"] and "failed: no frame" in stub


def test_probe_containers_with_two_workers(videos, tmp_path, capsys):
    out = tmp_path / "npy"
    assert main(["convert", str(videos), str(out), "--to", "npy", "--workers", "1", "-q"]) == 0
    capsys.readouterr()
    assert main(["probe", str(out), "--workers", "2", "-q"]) == 0
    lines = capsys.readouterr().out.splitlines()
    (x2,) = [ln for ln in lines if ln.split()[:1] == ["b/x2"]]
    assert x2.split()[:4] == ["b/x2", "10", "10", f"{W}x{H}"]
    assert "0 of 3 videos: reported != actual" in lines


def test_probe_annotation_list_against_containers(videos, tmp_path, capsys):
    out = tmp_path / "h5"
    assert main(["convert", str(videos), str(out), "--to", "hdf5", "--workers", "1", "-q"]) == 0
    lst = tmp_path / "val.txt"
    lst.write_text("a/x1.mp4 4\nb/x2.mkv 7\n")
    capsys.readouterr()
    write = tmp_path / "m.csv"
    assert main(["probe", str(lst), "--root", str(out), "--write", str(write), "-q"]) == 0
    rows = read_manifest(write)
    assert [(r.video_id, r.label, r.actual_frames, r.fps) for r in rows] == [
        ("a/x1.mp4", 4, 12, 25.0),
        ("b/x2.mkv", 7, 10, 25.0),
    ]


def test_user_columns_survive_a_resume_probe_write_and_convert(videos, tmp_path, capsys):
    out = tmp_path / "h5"
    convert = ["convert", str(videos), str(out), "--to", "hdf5", "--workers", "1", "-q"]
    assert main(convert) == 0
    manifest = out / "manifest.csv"
    lines = manifest.read_text().splitlines()
    split = {"a/x1.mp4": "train", "b/trunc.mp4": "", "b/x2.mkv": "val, held out"}
    manifest.write_text(  # the user's own column, one cell empty, one quoted
        "\n".join([lines[0] + ",split"] + [f'{ln},"{split[ln.split(",")[0]]}"' for ln in lines[1:]])
    )
    (out / "b/x2.h5").unlink()  # converted again: its new row keeps the user's cell
    assert main(convert) == 0
    assert "converted 1, skipped 2 (already done)" in capsys.readouterr().out
    rows = read_manifest(manifest)
    assert {r.video_id: r.extra for r in rows} == {v: {"split": c} for v, c in split.items()}
    assert manifest.read_text().splitlines()[0].endswith(",rotation,container,split")
    write = tmp_path / "probed.csv"
    assert main(["probe", str(manifest), "--write", str(write), "-q"]) == 0
    probed = read_manifest(write)
    assert {r.video_id: r.extra for r in probed} == {v: {"split": c} for v, c in split.items()}
    assert [r.actual_frames for r in probed] == [r.actual_frames for r in rows]
    again = tmp_path / "npy"  # the manifest as a convert INPUT: its columns reach OUTPUT's
    root = ["--root", str(videos), "--workers", "1", "-q"]
    assert main(["convert", str(manifest), str(again), "--to", "npy", *root]) == 0
    converted = read_manifest(again / "manifest.csv")
    assert {r.video_id: r.extra for r in converted} == {v: {"split": c} for v, c in split.items()}


def test_bench_main_forwards_every_argument(monkeypatch):
    """`vidload.bench.main(argv)` is `vidload bench ARGV`: every argument, as given."""
    from vidload import bench, cli

    seen = {}

    def fake_main(argv=None):
        seen["argv"] = argv
        return 7

    monkeypatch.setattr(cli, "main", fake_main)
    assert bench.main(["DATA", "--help", "--workers", "3", "--", "-x"]) == 7
    assert seen["argv"] == ["bench", "DATA", "--help", "--workers", "3", "--", "-x"]


def test_bench_every_argument_reaches_the_run(monkeypatch, tmp_path, capsys):
    """Every option of `vidload bench` reaches the run's settings (`BenchConfig`)."""
    from vidload._bench import run as bench_run
    from vidload._bench.config import BenchConfig

    seen = {}

    def fake_run(cfg):
        seen["cfg"] = cfg
        raise RuntimeError("stopped here")

    monkeypatch.setattr(bench_run, "run_benchmark", fake_run)
    argv = ["bench", str(tmp_path / "data"), "--work", str(tmp_path / "w"), "--num-videos", "3"]
    argv += ["--clips", "5", "--repeats", "2", "--frames", "4", "--batch-size", "6"]
    argv += ["--workers", "3", "--seed", "9", "--quality", "80", "--short-side", "64"]
    argv += ["--min-time", "0.5", "--cold", "--bucket", "s3://b/x", "--no-dataloader"]
    argv += ["--only", "jpeg, pil", "--no-progress", "--geometry-short-side", "0"]
    argv += ["--no-geometry-hd", "--quick", "--json", str(tmp_path / "r.json"), "--markdown"]
    assert main(argv) == 1
    assert "vidload bench: error: RuntimeError: stopped here" in capsys.readouterr().err
    assert seen["cfg"] == BenchConfig(
        data=tmp_path / "data",
        work=tmp_path / "w",
        num_videos=3,
        clips=5,
        repeats=2,
        frames=4,
        batch_size=6,
        workers=3,
        seed=9,
        quality=80,
        short_side=64,
        min_time=0.5,
        cold=True,
        bucket="s3://b/x",
        dataloader=False,
        only=("jpeg", "pil"),
        synth_seconds=2.0,
        synth_size=(160, 120),
        convert_workers=1,
        progress=False,
        geometry_short_side=None,
        geometry_hd=None,
        geometry_hd_seconds=0.6,
    )
    assert main([*argv, "-v"]) == 1
    assert "Traceback" in capsys.readouterr().err


def test_bench_help_is_bench_own(capsys):
    assert main(["bench", "--help"]) == 0
    assert "usage: vidload bench" in capsys.readouterr().out


def test_progress_lines_off_a_terminal():
    stream = io.StringIO()
    # an hour between log lines: the test does not depend on the default or the machine's speed
    with Progress(3, desc="convert", unit="video", stream=stream, log_interval=3600) as bar:
        for _ in range(3):
            bar.update()
        bar.set_postfix("99 frames/s")
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("convert  1/3   33%") and "ETA" in lines[0]
    assert len(lines) == 2  # no redraw within log_interval, one final line
    assert lines[-1].startswith("convert  3/3  100%") and "in 0:00" in lines[-1]
    assert lines[-1].endswith("99 frames/s") and "video/s" in lines[-1]


def test_progress_quiet_and_terminal():
    quiet = io.StringIO()
    with Progress(2, stream=quiet, enabled=False) as bar:
        bar.update(2)
    assert quiet.getvalue() == ""

    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty = Tty()
    with Progress(2, stream=tty, tty_interval=0.0) as bar:
        bar.update()
        bar.update()
    text = tty.getvalue()
    assert text.count("\r") == 3 and text.endswith("\n") and "\n" not in text[:-1]
    with pytest.raises(ValueError, match=r"total \(-1\) must be >= 0"):
        Progress(-1)


def test_formatting_helpers():
    assert format_duration(65) == "1:05"
    assert format_duration(3725) == "1:02:05"
    assert format_duration(float("inf")) == "?"
    assert format_bytes(1536) == "1.5 KiB"
    assert format_bytes(12) == "12 B"


def test_probe_a_single_video_or_container(videos, tmp_path, capsys):
    assert main(["probe", str(videos / "a/x1.mp4"), "-q"]) == 0
    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if "x1.mp4" in ln]
    assert line.split()[:4] == ["x1.mp4", "12", "12", f"{W}x{H}"]
    out = tmp_path / "h5"
    assert main(["convert", str(videos), str(out), "--to", "hdf5", "--workers", "1", "-q"]) == 0
    capsys.readouterr()
    assert main(["probe", str(out / "b/x2.h5"), "-q"]) == 0
    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if ln.split()[:1] == ["x2"]]
    assert line.split()[:4] == ["x2", "10", "10", f"{W}x{H}"]


def test_missing_list_entry_names_the_path_and_root(videos, tmp_path, capsys):
    lst = tmp_path / "val.txt"
    lst.write_text("a/x1.mp4 0\n")  # relative to the list's folder, where it is not
    assert main(["probe", str(lst), "-q"]) == 1
    text = capsys.readouterr().out
    assert f"file not found: {tmp_path / 'a/x1.mp4'}" in text and "--root DIR" in text
    assert main(["probe", str(lst), "--root", str(videos), "-q"]) == 0


def test_resume_with_other_options_names_the_option_and_overwrite(videos, tmp_path, capsys):
    out = tmp_path / "out"
    args = ["convert", str(videos), str(out), "--to", "npy", "--workers", "1", "-q"]
    assert main(args) == 0
    assert main([*args, "--quality", "80"]) == 2
    err = capsys.readouterr().err
    assert "--quality 95 before, 80 now" in err and "--overwrite" in err
