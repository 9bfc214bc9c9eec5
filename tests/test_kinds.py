"""The table of storage kinds (`vidload._kinds`): a kind registered there, a reader and a
writer and no other change, is what convert, probe, bench, choose and the CLI offer."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from dummy_kind import DummySource
from media import make_video

from vidload import _kinds
from vidload._kinds import BenchRow, StorageKind, get_kind, kind_names, register

DUMMY = StorageKind(
    "dummy",
    ".dmy",
    "dummy_kind:DummySource",
    "dummy_kind:write_dummy",
    ".dmy files",
    bench=(BenchRow("dummy", "DummySource: an npy by another name"),),
    choose_qualities=(90,),
)


@pytest.fixture
def dummy():
    register(DUMMY)
    try:
        yield DUMMY
    finally:
        _kinds.unregister("dummy")


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    folder = tmp_path_factory.mktemp("kinds") / "videos"
    make_video(folder / "a/x1.mp4", 8, width=64, height=48)
    make_video(folder / "b/x2.mp4", 6, width=64, height=48)
    return folder


def test_the_table_names_the_four_kinds():
    assert kind_names() == ("jpeg", "hdf5", "npy", "video")
    assert [get_kind(k).folder for k in kind_names()] == [True, False, False, False]
    assert [get_kind(k).holds_jpeg for k in kind_names()] == [True, True, True, False]
    with pytest.raises(ValueError, match=r"storage \('nope'\) must be one of 'jpeg', 'hdf5'"):
        get_kind("nope")


def test_register_refuses_a_taken_name_or_suffix(dummy):
    with pytest.raises(ValueError, match="'dummy' is already registered"):
        register(DUMMY)
    with pytest.raises(ValueError, match="suffix '.h5' is taken by 'hdf5'"):
        register(StorageKind("other", ".h5", "x:Y", "x:y", "x"))
    assert "other" not in kind_names()


def test_a_registered_kind_is_converted_probed_and_offered_by_the_cli(dummy, videos, tmp_path):
    from vidload.cli import build_parser, main
    from vidload.probe import probe

    choices = next(a for a in build_parser()._actions if a.dest == "command").choices
    to = next(a for a in choices["convert"]._actions if a.dest == "to")
    assert "dummy" in to.choices

    out = tmp_path / "out"
    argv = ["convert", str(videos), str(out), "--to", "dummy", "--workers", "1", "-q"]
    assert main(argv) == 0
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.dmy")) == [
        "a/x1.dmy",
        "b/x2.dmy",
    ]
    src = DummySource(out)
    assert src.read("a/x1.mp4", [0, 7]).shape == (2, 48, 64, 3)
    assert main(argv) == 0  # a rerun verifies what is there through the table's source

    rows = probe(out, workers=1, progress=False)
    assert [(r.video_id, r.actual_frames, r.status) for r in rows] == [
        ("a/x1", 8, "ok"),
        ("b/x2", 6, "ok"),
    ]


@pytest.mark.slow
def test_a_registered_kind_is_a_bench_row(dummy, tmp_path):
    pytest.importorskip("torch")
    from vidload import bench

    out = tmp_path / "b.json"
    argv = ["--quick", "--work", str(tmp_path / "w"), "--workers", "0", "--clips", "2"]
    argv += ["--only", "dummy,npy-mmap", "--json", str(out), "--min-time", "0", "--repeats", "1"]
    argv += ["--no-geometry-hd"]  # the geometry rows are not what this test is about
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert bench.main([*argv, "--no-progress"]) == 0
    rows = json.loads(out.read_text())["loaders"]
    assert set(rows) == {"dummy", "npy-mmap"}
    assert rows["dummy"]["disk_bytes_per_video"] == rows["npy-mmap"]["disk_bytes_per_video"]


def test_a_registered_kind_is_a_choose_candidate(dummy, videos, tmp_path):
    pytest.importorskip("torch")
    from vidload._choose.storages import StorageSpec, default_storages
    from vidload.cli import main

    assert StorageSpec("dummy", quality=90) in default_storages()
    js = tmp_path / "r.json"
    argv = ["choose", str(videos), "--quick", "--storages", "original,dummy:q90,npy:q90"]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main([*argv, "--json", str(js), "-q"]) == 0
    rows = {r["storage"]: r for r in json.loads(js.read_text())["rows"]}
    assert list(rows) == ["original", "dummy:q90", "npy:q90"]
    assert rows["dummy:q90"]["bytes_per_video"] == rows["npy:q90"]["bytes_per_video"]
    assert rows["dummy:q90"]["psnr_db"] == pytest.approx(rows["npy:q90"]["psnr_db"])
