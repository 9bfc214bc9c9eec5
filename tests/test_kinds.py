"""The table of storage kinds (`vidload._kinds`): a kind's name to its one class. A kind
registered there, its one class and no other change, is what convert, bench, choose and the
CLI offer; `tests/raw_kind.py` is one that is not JPEG bytes (raw uint8 frames)."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest
from media import frame_number, make_video
from raw_kind import RawFormat, RawSource

from vidload import _kinds
from vidload._kinds import get_kind, input_kinds, kind_names, register
from vidload._storage.filesystems import MissingExtraError
from vidload.sources._format import StorageFormat

BUILT_IN = ("jpeg", "hdf5", "npy", "video")


@pytest.fixture
def raw():
    register("raw", "raw_kind:RawFormat")
    try:
        yield get_kind("raw")
    finally:
        _kinds.unregister("raw")


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    folder = tmp_path_factory.mktemp("kinds") / "videos"
    make_video(folder / "a/x1.mp4", 8, width=64, height=48)
    make_video(folder / "b/x2.mp4", 6, width=64, height=48)
    return folder


def test_the_table_names_each_kind_and_its_one_class():
    assert kind_names()[: len(BUILT_IN)] == BUILT_IN
    kinds = [get_kind(k) for k in BUILT_IN]
    assert [k.name for k in kinds] == list(BUILT_IN)
    assert [k.folder for k in kinds] == [True, False, False, False]
    assert [k.suffix for k in kinds] == ["", ".h5", ".npy", ".mp4"]
    assert [k.source.__name__ for k in kinds] == [
        "JpegSource",
        "Hdf5Source",
        "NpySource",
        "VideoSource",
    ]
    # each kind's own options: the JPEG kinds' quality, video's GOP/CRF/preset/tune
    assert [k.option_names for k in kinds] == [("quality", "subsampling")] * 3 + [
        ("gop", "crf", "preset", "tune")
    ]
    assert [k.heads_kind for k in kinds] == list(BUILT_IN)  # each source's sidecar record
    assert [k.name for k in input_kinds()] == ["jpeg", "hdf5", "npy"]
    assert get_kind("hdf5") is get_kind("hdf5")  # made once per process
    with pytest.raises(ValueError, match=r"storage \('nope'\) must be one of 'jpeg', 'hdf5'"):
        get_kind("nope")


def test_register_refuses_a_taken_name_or_suffix(raw):
    with pytest.raises(ValueError, match="'raw' is already registered"):
        register("raw", RawFormat)

    class Other(RawFormat):
        name = "other"
        suffix = ".h5"

    with pytest.raises(ValueError, match="suffix '.h5' is taken by 'hdf5'"):
        register("other", Other)
    assert "other" not in kind_names()
    with pytest.raises(ValueError, match="'misnamed': its class calls itself 'raw'"):
        register("misnamed", RawFormat)
    assert "misnamed" not in kind_names()


def test_a_kind_whose_module_cannot_import_names_its_extra():
    register("absent", "vidload_no_such_module:Format", extra="absent")
    try:
        assert "absent" in kind_names()  # named, as the CLI's choices name it
        with pytest.raises(MissingExtraError, match=r"pip install 'vidload\[absent\]'"):
            get_kind("absent")
        assert "absent" not in [k.name for k in _kinds.formats()]  # bench, choose: left out
    finally:
        _kinds.unregister("absent")


def test_a_kind_that_is_not_jpeg_bytes_is_converted_and_read(raw, videos, tmp_path):
    from vidload.cli import build_parser, main

    assert isinstance(raw, StorageFormat) and raw.option_names == ()
    choices = next(a for a in build_parser()._actions if a.dest == "command").choices
    to = next(a for a in choices["convert"]._actions if a.dest == "to")
    assert "raw" in to.choices

    out = tmp_path / "out"
    argv = ["convert", str(videos), str(out), "--to", "raw", "--workers", "1", "-q"]
    assert main(argv) == 0
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.rgb")) == [
        "a/x1.rgb",
        "b/x2.rgb",
    ]
    src = RawSource(out)
    frames = src.read("a/x1.mp4", [7, 0, 3])
    assert frames.shape == (3, 48, 64, 3) and frames.dtype == np.uint8
    assert [frame_number(f) for f in frames] == [7, 0, 3]  # the painted numbers, raw
    assert src.timestamps("b/x2.mp4").shape == (6,)  # written beside it, as convert keeps them
    assert main(argv) == 0  # a rerun finds both done
    stored = (out / "a/x1.rgb").read_bytes()
    (out / "manifest.csv").unlink()  # a run killed before its manifest: verified, not redone
    from vidload.convert import convert

    report = convert(videos, out, to="raw", workers=1, progress=False)
    assert sorted(report.skipped) == ["a/x1.mp4", "b/x2.mp4"] and not report.converted
    assert (out / "a/x1.rgb").read_bytes() == stored


@pytest.mark.slow
def test_a_registered_kind_is_a_bench_row(raw, tmp_path):
    pytest.importorskip("torch")
    from vidload import bench

    out = tmp_path / "b.json"
    argv = ["--quick", "--work", str(tmp_path / "w"), "--workers", "0", "--clips", "2"]
    argv += ["--only", "raw,npy-mmap", "--json", str(out), "--min-time", "0", "--repeats", "1"]
    argv += ["--no-geometry-hd"]  # the geometry rows are not what this test is about
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert bench.main([*argv, "--no-progress"]) == 0
    rows = json.loads(out.read_text())["loaders"]
    assert set(rows) == {"raw", "npy-mmap"}
    # raw frames take more room than their JPEGs
    assert rows["raw"]["disk_bytes_per_video"] > rows["npy-mmap"]["disk_bytes_per_video"]


def test_a_registered_kind_is_a_choose_candidate(raw, videos, tmp_path):
    pytest.importorskip("torch")
    from vidload._choose.measure import PSNR_CAP_DB
    from vidload._choose.storages import StorageSpec, default_storages
    from vidload.cli import main

    assert StorageSpec("raw") in default_storages()
    assert StorageSpec.parse("raw").name == "raw"
    jpegs = "/".join(k.name for k in _kinds.formats() if "quality" in k.option_names)
    assert jpegs.startswith("jpeg/hdf5/npy")
    with pytest.raises(ValueError, match=f"quality applies to {jpegs}, not 'raw'"):
        StorageSpec("raw", quality=90)
    js = tmp_path / "r.json"
    argv = ["choose", str(videos), "--quick", "--storages", "original,raw,npy:q90"]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main([*argv, "--json", str(js), "-q"]) == 0
    rows = {r["storage"]: r for r in json.loads(js.read_text())["rows"]}
    assert list(rows) == ["original", "raw", "npy:q90"]
    assert rows["raw"]["bytes_per_video"] > rows["npy:q90"]["bytes_per_video"]
    assert rows["raw"]["psnr_db"] == pytest.approx(PSNR_CAP_DB)  # the decoded frames, exactly
