"""`convert` into a bucket (moto on 127.0.0.1, `tests/servers.py`): the objects are the bytes a
local run writes, nothing temporary is ever left in the bucket, the lock is an object created
with If-None-Match, and a killed run resumes. Skipped without moto[server]/s3fs."""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from media import make_video
from test_shards import FRAMES, H, W, make_inputs, output_files

from vidload.cli import main
from vidload.convert import convert
from vidload.errors import OutputLockedError, UsageError
from vidload.manifest import read_manifest

# minutes of servers and subprocesses: the full tier only (`pytest -m "not slow"` skips it)
pytestmark = pytest.mark.slow

pytest.importorskip("s3fs")

FORMATS = ["jpeg", "hdf5", "npy"]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    return make_inputs(tmp_path_factory.mktemp("bucket") / "in")


@pytest.fixture(scope="module")
def local_outputs(inputs, tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("bucket_local")
    for to in FORMATS:
        convert(inputs, base / to, to=to, workers=1, progress=False)
    return {to: base / to for to in FORMATS}


def bucket_files(bucket, prefix: str) -> dict[str, bytes]:
    """Every object under `prefix/` but the manifest, by key relative to the prefix."""
    return {
        k[len(prefix) + 1 :]: bucket.get(k)
        for k in bucket.keys(prefix + "/")
        if not k.endswith("/manifest.csv")
    }


def manifest_rows(bucket, key: str, tmp_path: Path):
    path = tmp_path / "m.csv"
    path.write_bytes(bucket.get(key))
    return read_manifest(path)


@pytest.mark.parametrize("to", FORMATS)
def test_convert_into_a_bucket_gives_the_local_objects(
    s3_bucket, inputs, local_outputs, tmp_path, to
):
    out = f"{s3_bucket.url}/out"
    report = convert(
        inputs, out, to=to, workers=1, progress=False, storage_options=s3_bucket.storage_options
    )
    assert [r.video_id for r in report.failed] == ["b/broken.mp4"]
    assert sorted(report.converted) == sorted(FRAMES)
    assert str(report.output) == out and str(report.manifest_path) == f"{out}/manifest.csv"
    local = local_outputs[to]
    assert bucket_files(s3_bucket, "out") == output_files(local)  # no lock, parts, temporaries
    assert s3_bucket.multipart_uploads() == []
    rows = manifest_rows(s3_bucket, "out/manifest.csv", tmp_path)
    assert rows == read_manifest(local / "manifest.csv")
    assert not list(Path(tempfile.gettempdir()).glob(f"vidload-staging-{os.getpid()}-*"))

    again = convert(
        inputs, out, to=to, workers=1, progress=False, storage_options=s3_bucket.storage_options
    )  # resume: nothing left to do, and nothing uploaded
    assert again.converted == () and sorted(again.skipped) == sorted(FRAMES)
    puts = [r.path for r in s3_bucket.faults.requests("PUT") if "/out/" in r.path]
    if to != "jpeg":  # a file container: its timestamps, itself, and a part row per video
        stored = [p for p in puts if p.endswith((".h5", ".npy", ".timestamps"))]
        assert len(stored) == 2 * len(FRAMES)
        parts = [p for p in puts if "/.vidload-convert.parts/" in p]
        assert len(parts) == len(FRAMES) + 2  # + the broken video, in both runs
    s3_bucket.faults.clear_log()
    convert(inputs, out, to=to, workers=1, progress=False,
            storage_options=s3_bucket.storage_options)  # fmt: skip
    put_keys = sorted(r.path.split("/out/", 1)[1] for r in s3_bucket.faults.requests("PUT"))
    # only the lock, the manifest and the part of the one video retried (the broken one),
    # and the containers' heads beside the manifest (`vidload.sources._heads`)
    assert [k.split("/")[0] for k in put_keys] == [
        ".vidload-convert.lock",
        ".vidload-convert.parts",
        "classes.txt",
        "manifest-heads.npz",
        "manifest.csv",
    ]
    assert puts  # (the first runs did upload)


def test_a_url_output_is_never_a_local_folder(s3_bucket, inputs, tmp_path, monkeypatch):
    """The bug of issue 17: `vidload convert IN s3://bucket/x --to npy` wrote a folder `s3:`."""
    monkeypatch.chdir(tmp_path)
    for k, v in s3_bucket.env().items():
        monkeypatch.setenv(k, v)  # the standard AWS configuration, as a user has it
    argv = ["convert", str(inputs), f"{s3_bucket.url}/x", "--to", "npy", "-q", "--workers", "1"]
    assert main(argv) == 1
    assert list(tmp_path.iterdir()) == []  # (1: the broken input failed, reported)
    assert "x/a/v0.npy" in s3_bucket.keys()
    assert "x/manifest.csv" in s3_bucket.keys()


def test_a_scheme_without_its_filesystem_names_the_extra(inputs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ImportError, match=r"vidload\[|install"):
        convert(inputs, "nosuchscheme://bucket/x", to="npy", workers=1, progress=False)
    assert list(tmp_path.iterdir()) == []


def test_the_lock_is_an_object_and_a_live_holder_refuses(s3_bucket, inputs):
    from vidload._lock import OutputLock
    from vidload._storage import Location

    out = Location(f"{s3_bucket.url}/out", s3_bucket.storage_options)
    lock = OutputLock(out)
    lock.acquire()
    holder = json.loads(s3_bucket.get("out/.vidload-convert.lock"))
    assert holder["pid"] == os.getpid() and holder["token"]
    with pytest.raises(OutputLockedError, match=r"out/\.vidload-convert\.lock.*another run"):
        convert(inputs, str(out.url), to="npy", workers=1, progress=False,
                storage_options=s3_bucket.storage_options)  # fmt: skip
    second = OutputLock(out)
    with pytest.raises(OutputLockedError):
        second.acquire()
    lock.release()
    assert s3_bucket.keys("out/") == []


def test_a_stale_lock_is_taken_over_once(s3_bucket):
    from vidload._lock import OutputLock
    from vidload._storage import Location

    out = Location(f"{s3_bucket.url}/out", s3_bucket.storage_options)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    stale = {"pid": int(dead.stdout), "host": os.uname().nodename, "token": "deadbeef"}
    import socket

    stale["host"] = socket.gethostname()
    s3_bucket.put("out/.vidload-convert.lock", json.dumps(stale).encode())
    lock = OutputLock(out)
    lock.acquire()
    assert json.loads(s3_bucket.get("out/.vidload-convert.lock"))["token"] != "deadbeef"
    assert "out/.vidload-convert.lock.takeover-deadbeef" in s3_bucket.keys()
    with pytest.raises(OutputLockedError):
        OutputLock(out).acquire()  # the new holder is alive
    lock.release()
    assert s3_bucket.keys("out/") == []

    stale["host"] = "another-host"  # cannot be checked from here: refused, naming the URL
    s3_bucket.put("out/.vidload-convert.lock", json.dumps(stale).encode())
    with pytest.raises(OutputLockedError, match=r"s3://.*/out/\.vidload-convert\.lock"):
        OutputLock(out).acquire()


def test_an_unfinished_jpeg_folder_is_converted_again(s3_bucket, inputs, local_outputs):
    """A frame folder is many objects: the manifest row is its commit point. A folder without
    a row (a run killed while uploading it) is deleted and converted again, extra frames too."""
    out = f"{s3_bucket.url}/out"
    s3_bucket.upload(local_outputs["jpeg"] / "a/v0", "out/a/v0")
    s3_bucket.put("out/a/v0/img_00099.jpg", b"stale frame")
    report = convert(inputs, out, to="jpeg", workers=1, progress=False,
                     storage_options=s3_bucket.storage_options)  # fmt: skip
    assert "a/v0" + ".mp4" in report.converted
    assert bucket_files(s3_bucket, "out") == output_files(local_outputs["jpeg"])


def test_a_file_container_without_a_row_is_verified_not_uploaded_again(
    s3_bucket, inputs, local_outputs
):
    out = f"{s3_bucket.url}/out"
    s3_bucket.upload(local_outputs["hdf5"] / "a/v0.h5", "out/a")
    report = convert(inputs, out, to="hdf5", workers=1, progress=False,
                     storage_options=s3_bucket.storage_options)  # fmt: skip
    assert "a/v0.mp4" in report.skipped and "a/v0.mp4" not in report.converted
    assert bucket_files(s3_bucket, "out") == output_files(local_outputs["hdf5"])


def test_a_refused_bucket_stops_with_the_url_and_no_credential(s3_bucket, inputs, capsys):
    """Access denied (injected: moto accepts any key) on the lock: the CLI names the URL and
    the reason, and neither the key nor the secret (from the environment or the options)."""
    env = s3_bucket.env()
    s3_bucket.faults.fail_next(20, "403", match="/out/")
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        code = main(["convert", str(inputs), f"{s3_bucket.url}/out", "--to", "npy", "-q",
                     "--workers", "1"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1 and f"{s3_bucket.url}/out/.vidload-convert.lock" in err
    assert "denied" in err.lower()
    assert env["AWS_SECRET_ACCESS_KEY"] not in err and env["AWS_ACCESS_KEY_ID"] not in err
    assert s3_bucket.keys() == []


def test_an_upload_refused_midway_stops_the_run_and_the_rerun_finishes(
    s3_bucket, inputs, local_outputs, tmp_path
):
    out = f"{s3_bucket.url}/out"
    options = {**s3_bucket.storage_options, "secret": "a-secret-not-to-show-" + "x" * 16}
    s3_bucket.faults.fail_next(1, "403", match="/out/b/")  # the first upload into b/
    report = convert(inputs, out, to="npy", workers=1, progress=False, shard_size=2,
                     storage_options=options)  # fmt: skip
    assert report.stopped is not None and f"{out}/b/" in report.stopped
    assert "a-secret-not-to-show" not in report.stopped
    assert report.unfinished
    rows = manifest_rows(s3_bucket, "out/manifest.csv", tmp_path)
    assert {r.video_id for r in rows} == {r.video_id for r in report.rows}  # what finished
    assert "a-secret-not-to-show" not in s3_bucket.get("out/manifest.csv").decode()
    again = convert(inputs, out, to="npy", workers=1, progress=False, storage_options=options)
    assert [r.video_id for r in again.failed] == ["b/broken.mp4"] and not again.unfinished
    assert bucket_files(s3_bucket, "out") == output_files(local_outputs["npy"])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and kill -9 are Linux's")
def test_kill_9_of_a_conversion_into_a_bucket_and_resume(s3_bucket, tmp_path, monkeypatch):
    src = tmp_path / "in"
    for i in range(12):
        make_video(src / f"v{i:02d}.mp4", 60, width=W * 2, height=H * 2)
    out = f"{s3_bucket.url}/out"
    env = {**os.environ, **s3_bucket.env(), "PYTHONPATH": os.getcwd()}
    cmd = [sys.executable, "-m", "vidload", "convert", str(src), out, "--to", "hdf5"]
    cli = subprocess.Popen([*cmd, "--workers", "2", "--shard-size", "1", "-q"],
                           env=env, start_new_session=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(
            k.endswith(".h5") for k in s3_bucket.keys("out/")
        ):
            time.sleep(0.05)
        assert cli.poll() is None, "the conversion finished before the kill"
        os.killpg(cli.pid, signal.SIGKILL)
        cli.wait()
    finally:
        try:
            os.killpg(cli.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert "out/.vidload-convert.lock" in s3_bucket.keys()  # the killed run's, stale now
    for k, v in s3_bucket.env().items():
        monkeypatch.setenv(k, v)
    report = convert(src, out, to="hdf5", workers=1, progress=False)
    assert report.ok and len(report.rows) == 12 and report.converted and report.skipped
    keys = s3_bucket.keys("out/")
    assert sorted(k for k in keys if k.endswith(".h5")) == [f"out/v{i:02d}.h5" for i in range(12)]
    assert [k for k in keys if "/." in k] == []  # no lock, parts or temporaries
    assert s3_bucket.multipart_uploads() == []


# --------------------------------------------------------------------------- INPUT URLs


def test_convert_from_a_bucket_folder_to_local_and_to_a_bucket(
    s3_bucket, inputs, local_outputs, tmp_path
):
    url = s3_bucket.upload(inputs, "videos")
    opts = s3_bucket.storage_options
    report = convert(url, tmp_path / "out", to="npy", workers=1, progress=False,
                     storage_options=opts)  # fmt: skip
    assert sorted(report.converted) == sorted(FRAMES)
    failed = {r.video_id: r.error or "" for r in report.failed}
    assert list(failed) == ["b/broken.mp4"] and f"{url}/b/broken.mp4" in failed["b/broken.mp4"]
    assert output_files(tmp_path / "out") == output_files(local_outputs["npy"])  # + classes.txt
    rows = read_manifest(tmp_path / "out/manifest.csv")
    expected = read_manifest(local_outputs["npy"] / "manifest.csv")
    assert [r for r in rows if r.status != "failed"] == [
        r for r in expected if r.status != "failed"
    ]
    convert(
        url, f"{s3_bucket.url}/jpeg", to="jpeg", workers=1, progress=False, storage_options=opts
    )  # fmt: skip  (bucket to bucket)
    assert bucket_files(s3_bucket, "jpeg") == output_files(local_outputs["jpeg"])
    # and a JPEG folder INPUT in a bucket: repacked byte for byte
    again = convert(f"{s3_bucket.url}/jpeg", tmp_path / "h5", to="hdf5", workers=1,
                    progress=False, storage_options=opts)  # fmt: skip
    assert sorted(again.converted) == sorted(v.rsplit(".", 1)[0] for v in FRAMES)


def test_convert_and_probe_from_a_list_url(s3_bucket, inputs, tmp_path):
    from vidload.probe import probe

    s3_bucket.upload(inputs, "videos")
    s3_bucket.put("videos/train.txt", b"a/v0.mp4 3\nb/v2.mkv 1\nmissing.mp4 0\n")
    opts = s3_bucket.storage_options
    rows = probe(f"{s3_bucket.url}/videos/train.txt", workers=1, progress=False,
                 storage_options=opts)  # fmt: skip
    assert [(r.video_id, r.label, r.actual_frames) for r in rows[:2]] == [
        ("a/v0.mp4", 3, FRAMES["a/v0.mp4"]),
        ("b/v2.mkv", 1, FRAMES["b/v2.mkv"]),
    ]
    assert rows[2].status == "failed" and "missing.mp4" in (rows[2].error or "")
    assert "/tmp" not in (rows[2].error or "")
    local = probe(inputs, workers=1, progress=False)
    folder = probe(f"{s3_bucket.url}/videos", workers=1, progress=False, storage_options=opts)
    assert [r for r in folder if r.status != "failed"] == [r for r in local if r.status != "failed"]
    assert [r.video_id for r in folder if r.status == "failed"] == ["b/broken.mp4"]
    report = convert(f"{s3_bucket.url}/videos/train.txt", tmp_path / "o", to="hdf5", workers=1,
                     progress=False, storage_options=opts)  # fmt: skip
    assert sorted(report.converted) == ["a/v0.mp4", "b/v2.mkv"]
    # a list carries its own labels: probe refuses labels= there as convert does (one search)
    (tmp_path / "classes.txt").write_text("a\nb\n")
    for run in (probe, functools.partial(convert, output=tmp_path / "p", to="npy")):
        with pytest.raises(UsageError, match="applies to a folder INPUT only"):
            run(f"{s3_bucket.url}/videos/train.txt", labels=tmp_path / "classes.txt",
                workers=1, progress=False, storage_options=opts)  # fmt: skip


def test_a_missing_input_url_names_it(s3_bucket, tmp_path, capsys):
    with pytest.MonkeyPatch.context() as mp:
        for k, v in s3_bucket.env().items():
            mp.setenv(k, v)
        code = main(["convert", f"{s3_bucket.url}/nothing", str(tmp_path / "o"), "--to", "npy"])
    assert code == 1
    assert f"{s3_bucket.url}/nothing" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_overlapping_input_and_output_urls_are_refused(s3_bucket, inputs):
    url = s3_bucket.upload(inputs, "videos")
    before = s3_bucket.keys()
    for out in (f"{url}/h5", url, s3_bucket.url):
        with pytest.raises(ValueError, match="overlap"):
            convert(url, out, to="hdf5", workers=1, progress=False,
                    storage_options=s3_bucket.storage_options)  # fmt: skip
    assert s3_bucket.keys() == before


def test_storage_option_flags_reach_the_filesystem(s3_bucket, inputs, monkeypatch, capsys):
    """`--storage-option KEY=VALUE` (JSON values, dotted keys nested) for convert and probe:
    with no AWS configuration in the environment, the options alone reach the bucket."""
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    opts = s3_bucket.storage_options
    flags = [
        "--storage-option",
        f"key={opts['key']}",
        "--storage-option",
        f"secret={opts['secret']}",
        "--storage-option",
        f"client_kwargs.endpoint_url={opts['client_kwargs']['endpoint_url']}",
        "--storage-option",
        'client_kwargs.region_name="us-east-1"',
    ]
    out = f"{s3_bucket.url}/flags"
    assert main(["convert", str(inputs), out, "--to", "npy", "--workers", "1", "-q", *flags]) == 1
    assert "a/v0.npy" in bucket_files(s3_bucket, "flags")  # converted, but for b/broken.mp4
    capsys.readouterr()
    assert main(["probe", out, "--workers", "1", "-q", *flags]) == 0
    assert "a/v0" in capsys.readouterr().out
    assert main(["probe", out, "--storage-option", "novalue", "-q"]) == 2
    assert "'novalue' is not KEY=VALUE" in capsys.readouterr().err


def test_storage_option_values():
    from vidload._commands.args import storage_option, storage_options

    def parse(*texts):
        return storage_options([storage_option(t) for t in texts])

    assert storage_options(None) is None
    assert parse("anon=true", "a.b=1", "a.c=x y", 'd={"e": 2}') == {
        "anon": True,
        "a": {"b": 1, "c": "x y"},
        "d": {"e": 2},
    }
