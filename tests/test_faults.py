"""Fault injection: damaged files, foreign exceptions and odd inputs, generated in the tests.

Each test names the cause of issue 10 it covers (A: foreign exceptions from container sources,
B: damaged video vs sequential decode, C: errors through DataLoader workers, G: non-regular
files, H: manifest and list edges, I: bench on damaged folders).
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import sys
import threading
import warnings

import h5py
import numpy as np
import pytest
import torch
from media import (
    damage_copy,
    decode_until_bad,
    frame_number,
    make_video,
    paint,
    truncate_copy,
    video_packets,
)
from torch.utils.data import DataLoader, Dataset

from vidload import (
    ClipDataset,
    Hdf5Source,
    JpegSource,
    NpySource,
    SkippedVideoWarning,
    VideoSource,
    bench,
)
from vidload._bench import report
from vidload._bench.run import BenchConfig, usable_clips
from vidload._bench.workdir import WorkDir
from vidload.convert import convert
from vidload.errors import FrameCountError, VideoReadError, VidloadError
from vidload.manifest import MANIFEST_FIELDS, load_videos
from vidload.probe import probe
from vidload.sources._timestamps import sidecar_path
from vidload.sources.hdf5 import write_hdf5
from vidload.sources.jpeg_decode import encode_jpeg
from vidload.sources.npy import write_npy

W, H = 64, 48
#: Attributes cross a worker boundary in an exception note (Python >= 3.11); the type always.
NOTES = sys.version_info >= (3, 11)


@pytest.fixture(scope="module")
def small_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("faults")
    make_video(folder / "good.mp4", 12, width=W, height=H, options={"g": "4"})
    (folder / "broken.mp4").write_bytes(b"this is not a video\n" * 30)
    return folder


class _ReadPastTheEnd(Dataset):
    """Reads frame 50 of a 12-frame video: a FrameCountError raised inside the worker."""

    def __init__(self, root):
        self.source = VideoSource(root)

    def __len__(self):
        return 1

    def __getitem__(self, i):
        return torch.from_numpy(self.source.read("good.mp4", [0, 50]))


def first_error(loader) -> Exception:
    """The exception the first batch raises, its traceback dropped so that the loader's
    workers shut down now (a traceback kept alive holds the iterator and its workers)."""
    it = iter(loader)
    try:
        next(it)
    except Exception as e:
        return e.with_traceback(None)
    finally:
        del it
    raise AssertionError("the loader raised nothing")


# --------------------------------------------------------------- C: worker boundary


@pytest.mark.parametrize("workers", [0, 1, 2])
def test_c_video_read_error_keeps_type_and_attributes_through_workers(small_dir, workers):
    ds = ClipDataset([("broken.mp4", 0)], VideoSource(small_dir), num_frames=2)
    loader = DataLoader(ds, batch_size=1, num_workers=workers)
    err = first_error(loader)
    assert type(err) is VideoReadError, err
    assert "not a readable video" in str(err)
    if workers and not NOTES:
        return
    assert err.path == str(small_dir / "broken.mp4")
    assert "not a readable video" in err.reason
    assert err.index is None


@pytest.mark.parametrize("workers", [0, 1, 2])
def test_c_frame_count_error_keeps_type_and_attributes_through_workers(small_dir, workers):
    loader = DataLoader(_ReadPastTheEnd(small_dir), batch_size=1, num_workers=workers)
    err = first_error(loader)
    assert type(err) is FrameCountError, err
    assert "frame 50" in str(err)
    assert isinstance(err, IndexError)
    if workers and not NOTES:
        return
    assert (err.video_id, err.actual, err.index) == ("good.mp4", 12, 50)


def test_c_one_argument_form_and_pickling():
    plain = VideoReadError("a message without a record")
    assert str(plain) == "a message without a record"
    assert (plain.path, plain.reason, plain.index) == (None, None, None)
    for err in (
        VideoReadError("x.mp4", "corrupt", 3),
        FrameCountError("x.mp4", 10, 8, 9),
        FrameCountError("x.mp4", None, 8, 9, message="custom"),
        plain,
    ):
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err) and str(back) == str(err)
        assert vars(back) == vars(err)
    assert issubclass(VideoReadError, VidloadError)
    noted = FrameCountError("x.mp4", 10, 8, 9)
    noted.__notes__ = ["while reading batch 3"]  # what add_note sets (3.11+), set later
    assert pickle.loads(pickle.dumps(noted)).__notes__ == ["while reading batch 3"]


# --------------------------------------------------------------- A: container damage


def _jpegs(n: int = 4) -> list[bytes]:
    return [encode_jpeg(paint(i, W, H), quality=90) for i in range(n)]


def _h5_group_for(name: str):
    def damage(f):
        data = f[name][()]
        del f[name]
        f.create_group(name).create_dataset("inside", data=data)

    return damage


def _h5_attr(name: str, value):
    def damage(f):
        f.attrs[name] = value

    return damage


H5_DAMAGE = {
    "frames_group": (_h5_group_for("frames"), "'frames' must be a dataset"),
    "offsets_group": (_h5_group_for("offsets"), "'offsets' must be a dataset"),
    "num_frames_text": (_h5_attr("num_frames", "abc"), "attribute 'num_frames'"),
    "num_frames_array": (_h5_attr("num_frames", np.arange(3)), "attribute 'num_frames'"),
    "width_text": (_h5_attr("width", "wide"), "attribute 'width'"),
    "version_array": (_h5_attr("format_version", np.ones(2)), "attribute 'format_version'"),
}


def _write_h5(root, name: str) -> None:
    write_hdf5(root / f"{name}.h5", _jpegs())


@pytest.fixture(scope="module")
def h5_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("h5_damage")
    _write_h5(root, "good")
    for name, (damage, _) in H5_DAMAGE.items():
        _write_h5(root, name)
        with h5py.File(root / f"{name}.h5", "r+") as f:
            damage(f)
    # overwritten metadata: h5py raises RuntimeError / OSError / KeyError depending on the bytes
    for seed in range(6):
        _write_h5(root, f"meta_bytes{seed}")
        path = root / f"meta_bytes{seed}.h5"
        data = bytearray(path.read_bytes())
        rng = np.random.default_rng(seed)
        at = int(rng.integers(48, 2048))
        data[at : at + 64] = rng.integers(0, 256, 64, dtype=np.uint8).tobytes()
        path.write_bytes(bytes(data))
    return root


@pytest.mark.parametrize("name", sorted(H5_DAMAGE))
def test_a_hdf5_structure_damage_is_a_read_error_naming_file(h5_root, name):
    src = Hdf5Source(h5_root, cache_size=0)
    match = H5_DAMAGE[name][1]
    for call in (src.reported_frames, src.actual_frames, lambda v: src.read(v, [0])):
        with pytest.raises(VideoReadError, match=match) as info:
            call(name)
        assert info.value.path == str(h5_root / f"{name}.h5")
        assert name in str(info.value)


def test_a_hdf5_overwritten_metadata_is_a_read_error_or_reads_right(h5_root):
    src = Hdf5Source(h5_root, cache_size=0)
    for seed in range(6):
        vid = f"meta_bytes{seed}"
        try:
            frames = src.read(vid, [0, 3])
        except VideoReadError as e:
            assert e.path.endswith(f"{vid}.h5") and e.__cause__ is not None or "HDF5" in str(e)
        else:  # the bytes hit something unused: then the frames must be the right ones
            assert [frame_number(f) for f in frames] == [0, 3]


NPY_HEADERS = {
    "tokenize": b"{'descr': '|u1', 'fortran_order': False, 'shape': (4, (((",
    "not_a_dict": b"[1, 2, 3]",
    "bad_descr": b"{'descr': 'zz', 'fortran_order': False, 'shape': (4, 10), }",
    "bad_shape": b"{'descr': '|u1', 'fortran_order': False, 'shape': 'abc', }",
    "huge_shape": b"{'descr': '|u1', 'fortran_order': False, 'shape': (2**62, 2**62), }",
}


@pytest.fixture(scope="module")
def npy_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("npy_damage")
    write_npy(root / "good.npy", _jpegs())
    good = (root / "good.npy").read_bytes()
    header_len = int.from_bytes(good[8:10], "little")
    for name, text in NPY_HEADERS.items():
        header = text.ljust(header_len - 1) + b"\n"
        (root / f"{name}.npy").write_bytes(
            good[:10] + header[:header_len] + good[10 + header_len :]
        )
    (root / "folder.npy").mkdir()
    return root


@pytest.mark.parametrize("mode", ["mmap", "read"])
@pytest.mark.parametrize("name", [*sorted(NPY_HEADERS), "folder"])
def test_a_npy_damage_is_a_read_error_naming_file(npy_root, name, mode):
    src = NpySource(npy_root, mode=mode)
    assert [frame_number(f) for f in src.read("good", [3, 0])] == [3, 0]
    for call in (src.reported_frames, src.actual_frames, lambda v: src.read(v, [0])):
        with pytest.raises(VideoReadError, match="not a regular file|npy") as info:
            call(name)
        assert info.value.path == str(npy_root / f"{name}.npy")


def test_a_on_error_skip_through_two_workers_fills_broken_videos(h5_root):
    videos = [("good", 0), ("frames_group", 1), ("meta_bytes0", 2), ("good", 3)]
    videos += [(name, 4) for name in H5_DAMAGE]
    ds = ClipDataset(videos, Hdf5Source(h5_root), num_frames=2, on_error="skip", seed=0)
    loader = DataLoader(ds, batch_size=2, num_workers=2, persistent_workers=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SkippedVideoWarning)
        labels = torch.cat([label for _, label in loader]).tolist()
    assert len(labels) == len(videos)
    assert set(H5_DAMAGE) <= set(ds.broken_videos)
    assert "good" not in ds.broken_videos


def test_a_probe_marks_damaged_containers_and_goes_on(h5_root, npy_root, tmp_path):
    for root in (h5_root, npy_root):
        rows = {row.video_id: row for row in probe(root, workers=1, progress=False)}
        good = [vid for vid in rows if vid.startswith("good")]
        assert good and all(rows[vid].status == "ok" for vid in good)
        failed = {vid for vid, row in rows.items() if row.status == "failed"}
        assert failed, rows
        for vid in failed:
            assert rows[vid].error


# --------------------------------------------------------------- G: non-regular files


def _within(seconds: float, fn):
    """fn()'s exception (or None), failing the test if fn is still blocked after `seconds`."""
    outcome: list[BaseException | None] = []

    def run():
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            outcome.append(e)
        else:
            outcome.append(None)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{fn} still blocked after {seconds} s"
    return outcome[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
def test_g_fifo_among_frame_files_fails_that_video_in_convert_without_blocking(tmp_path):
    root = tmp_path / "rawframes"
    for name in ("good", "piped"):
        (root / name).mkdir(parents=True)
        for i in range(3):
            if name == "piped" and i == 1:
                os.mkfifo(root / name / "img_00002.jpg")
            else:
                (root / name / f"img_{i + 1:05d}.jpg").write_bytes(encode_jpeg(paint(i, W, H)))
    reports = []
    err = _within(
        60,
        lambda: reports.append(
            convert(root, tmp_path / "out", to="npy", workers=1, progress=False)
        ),
    )
    assert err is None, err
    (report,) = reports
    assert report.converted == ("good",)
    (failed,) = report.failed
    assert failed.video_id == "piped"
    assert "img_00002.jpg" in failed.error and "not a regular file: a FIFO" in failed.error


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
def test_g_fifo_named_like_a_video_or_container_fails_fast(tmp_path):
    os.mkfifo(tmp_path / "pipe.mp4")
    os.mkfifo(tmp_path / "pipe.h5")
    os.mkfifo(tmp_path / "pipe.npy")
    (tmp_path / "frames").mkdir()
    (tmp_path / "frames" / "img_00001.jpg").write_bytes(encode_jpeg(paint(0, W, H)))
    os.mkfifo(tmp_path / "frames" / "img_00002.jpg")
    (tmp_path / "frames" / "img_00003.jpg").write_bytes(encode_jpeg(paint(2, W, H)))
    (tmp_path / "link.mp4").symlink_to(tmp_path / "pipe.mp4")
    (tmp_path / "dir.mp4").mkdir()
    cases = [
        (VideoSource(tmp_path), "pipe.mp4", "a FIFO"),
        (VideoSource(tmp_path), "link.mp4", "a FIFO"),
        (VideoSource(tmp_path), "dir.mp4", "a directory"),
        (Hdf5Source(tmp_path), "pipe", "a FIFO"),
        (NpySource(tmp_path), "pipe", "a FIFO"),
        (JpegSource(tmp_path), "frames", "a FIFO"),
    ]
    for src, vid, kind in cases:
        err = _within(10, lambda src=src, vid=vid: src.read(vid, [0, 1]))
        assert isinstance(err, VideoReadError), (vid, err)
        assert f"not a regular file: {kind}" in str(err) and vid.split(".")[0] in err.path
    # through a DataLoader worker with on_error="skip": skipped, not hung
    make_video(tmp_path / "good.mp4", 12, width=W, height=H)
    ds = ClipDataset(
        [("pipe.mp4", 0), ("good.mp4", 1)], VideoSource(tmp_path), num_frames=2, on_error="skip"
    )
    loader = DataLoader(ds, batch_size=2, num_workers=1, timeout=30)  # a hang is an error
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SkippedVideoWarning)
        _, labels = next(iter(loader))
    assert labels.tolist() == [1, 1]


# --------------------------------------------------------------- H: manifest and list edges

MANIFEST_HEADER = ",".join(MANIFEST_FIELDS) + "\n"


def _manifest_row(**cells) -> str:
    row = {"video_id": "a.mp4", "label": "0", "actual_frames": "12", "status": "ok", **cells}
    return ",".join(str(row.get(name, "")) for name in MANIFEST_FIELDS) + "\n"


MANIFEST_EDGES = {
    "huge_cell": (_manifest_row(error="x" * (200 * 1024)), "not a readable CSV row"),
    "count_1e30": (_manifest_row(actual_frames=10**30), r"actual_frames \(10+\) must be <="),
    "count_2_62": (_manifest_row(reported_frames=2**62), r"reported_frames \(\d+\) must be <="),
    "nul_id": (_manifest_row(video_id="a\0.mp4"), "NUL"),
    "label_2_70": (_manifest_row(label=2**70), r"label \(\d+\) must be <= 9223372036854775807"),
    "label_neg": (_manifest_row(label=-(2**70)), r"label \(-\d+\) must be >= -9223372036854775808"),
}


@pytest.mark.parametrize("name", sorted(MANIFEST_EDGES))
def test_h_manifest_edges_fail_at_load_naming_the_line(tmp_path, name):
    row, match = MANIFEST_EDGES[name]
    path = tmp_path / "manifest.csv"
    path.write_text(MANIFEST_HEADER + _manifest_row(video_id="ok.mp4") + row, encoding="utf-8")
    with pytest.raises(ValueError, match=match) as info:
        load_videos(path)
    assert str(info.value).startswith(f"{path}:3: ")


LIST_EDGES = {
    "count_1e30": (f"a {10**30} 0\n", r"total_frames \(10+\) must be <="),
    "count_2_62": (f"a {2**62} 0\n", r"total_frames \(\d+\) must be <="),
    "nul_id": ("a\0b.mp4 0\n", "NUL"),
    "label_2_70": (f"a.mp4 {2**70}\n", r"label \(\d+\) must be <="),
}


@pytest.mark.parametrize("name", sorted(LIST_EDGES))
def test_h_list_edges_fail_at_load_naming_the_line(tmp_path, name):
    line, match = LIST_EDGES[name]
    first = "b 10 1\n" if name.startswith("count") else "b.mp4 1\n"
    path = tmp_path / "list.txt"
    path.write_text(first + line, encoding="utf-8")
    with pytest.raises(ValueError, match=match) as info:
        load_videos(path)
    assert str(info.value).startswith(f"{path}:2: ")


def test_h_sequence_edges_fail_at_construction():
    with pytest.raises(ValueError, match=r"videos\[1\].*label \(\d+\) must be <="):
        load_videos([("a.mp4", 0), ("b.mp4", 2**70)])
    with pytest.raises(ValueError, match=r"videos\[0\].*num_frames \(\d+\) must be <="):
        load_videos([("a.mp4", 0, 2**62)])
    with pytest.raises(ValueError, match="NUL"):
        load_videos([("a\0.mp4", 0)])
    with pytest.raises(ValueError, match="NUL"):
        VideoSource(".").read("a\0.mp4", [0])


# --------------------------------------------------------------- B: damaged video


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    """{name: frames of a single-threaded sequential decode} for damaged H.264 MP4s: bytes
    overwritten mid-packet in keyframes and in other frames, and a truncated file."""
    root = tmp_path_factory.mktemp("damaged")
    orig = make_video(
        root / "orig.mp4",
        60,
        width=W,
        height=H,
        options={"g": "12", "bf": "2"},
        container_options={"movflags": "faststart"},  # the header first: a truncated copy opens
    )
    packets = video_packets(orig)
    keys = [i for i, (_, _, key) in enumerate(packets) if key]
    others = [i for i, (_, _, key) in enumerate(packets) if not key]
    chosen = [("key", keys[1]), ("key", keys[2]), ("key", keys[3])]
    chosen += [("inter", others[len(others) * q // 6]) for q in range(1, 6)]
    cases = {}
    for n, (kind, packet) in enumerate(chosen):
        name = f"{kind}{packet}_{n}.mp4"
        damage_copy(orig, root / name, packet, seed=n)
        cases[name] = decode_until_bad(root / name)
    truncate_copy(orig, root / "truncated.mp4", 0.8)
    cases["truncated.mp4"] = decode_until_bad(root / "truncated.mp4")
    clean = decode_until_bad(orig)
    # the damage must matter: some files stop early, others decode fully with concealment
    stops = [name for name, ref in cases.items() if len(ref) < 60]
    conceals = [
        name
        for name, ref in cases.items()
        if len(ref) == 60 and any(np.any(a != b) for a, b in zip(ref, clean, strict=True))
    ]
    assert len(stops) >= 2 and len(conceals) >= 2, (stops, conceals)
    assert all(len(ref) > 0 for ref in cases.values())
    return root, cases


def _same(a, b) -> bool:
    return a.shape == b.shape and bool(np.all(a == b))


@pytest.mark.parametrize("threads", [1, 2])
def test_b_damaged_reads_equal_single_threaded_sequential_decode(damaged, threads):
    root, cases = damaged
    shared = VideoSource(root, threads=threads)
    for name, ref in cases.items():
        rng = np.random.default_rng(len(name))
        order = rng.permutation(len(ref))[:12].tolist()
        for i in order:  # one frame at a time: fresh sources and one that saw earlier reads
            for src in (VideoSource(root, threads=threads), shared):
                assert _same(src.read(name, [i])[0], ref[i]), (name, i, threads)
        clip = sorted(rng.choice(len(ref), min(8, len(ref)), replace=False).tolist())
        got = VideoSource(root, threads=threads).read(name, clip[::-1] + clip[:2])
        for frame, i in zip(got, clip[::-1] + clip[:2], strict=True):
            assert _same(frame, ref[i]), (name, i)


def test_b_damaged_counts_and_iteration_do_not_depend_on_threads(damaged):
    root, cases = damaged
    for name, ref in cases.items():
        counts = {t: VideoSource(root, threads=t).actual_frames(name) for t in (0, 1, 2, 4)}
        assert set(counts.values()) == {len(ref)}, (name, counts)
        for threads in (0, 2):
            frames = list(VideoSource(root, threads=threads).iter_frames(name))
            assert len(frames) == len(ref)
            assert all(_same(a, b) for a, b in zip(frames, ref, strict=True)), name


def test_b_damaged_reads_do_not_depend_on_call_order(damaged):
    root, cases = damaged
    for name, ref in cases.items():
        n = len(ref)
        with pytest.raises(FrameCountError, match=f"only {n} frames"):
            VideoSource(root, frame_index="decode").read(name, [n])
        counted = VideoSource(root, frame_index="decode")
        assert counted.actual_frames(name) == n
        with pytest.raises(FrameCountError):
            counted.read(name, [n])
        for src in (VideoSource(root), VideoSource(root, frame_index="decode")):
            src.actual_frames(name)  # once the count is known, every read relies on it
            with pytest.raises(FrameCountError):
                src.read(name, [n, 0])
            assert _same(src.read(name, [n - 1])[0], ref[n - 1])


def test_b_probe_and_convert_agree_on_damaged_counts_for_any_worker_count(damaged, tmp_path):
    # workers=1 decodes in this process with threads = all CPUs; workers=2 with fewer threads
    root, cases = damaged
    expected = {name: len(ref) for name, ref in cases.items()}
    for workers in (1, 2):
        rows = {row.video_id: row for row in probe(root, workers=workers, progress=False)}
        assert {k: rows[k].actual_frames for k in expected} == expected, workers
    convert(root, tmp_path / "npy", to="npy", workers=1, progress=False)
    stored = NpySource(tmp_path / "npy")
    assert {k: stored.actual_frames(k) for k in expected} == expected


# --------------------------------------------------------------- I: bench on real folders


@pytest.mark.slow
def test_i_bench_drops_a_video_a_row_cannot_read_from_every_row(damaged, tmp_path):
    root, cases = damaged
    stops = sorted(name for name, ref in cases.items() if 0 < len(ref) < 40)
    data = tmp_path / "data"
    make_video(data / "good.mp4", 30, width=W, height=H)
    (data / "bad.mp4").symlink_to(root / stops[0])  # the PyAV reference stops on its error
    out = tmp_path / "r.json"
    rows = "video,hdf5,memory,pyav-from-start"
    argv = [str(data), "--quick", "--work", str(tmp_path / "work"), "--only", rows]
    argv += ["--workers", "0", "--clips", "4", "--json", str(out), "--plot", str(tmp_path / "p")]
    argv += ["--min-time", "0", "--repeats", "1", "--no-progress"]
    if bench_report_has_no_matplotlib():
        argv = argv[: argv.index("--plot")] + argv[argv.index("--plot") + 2 :]
    assert bench.main(argv) == 0
    result = json.loads(out.read_text())
    assert list(result["data"]["frames_per_video"]) == ["good.mp4"]
    left_out = [n for n in result["notes"] if n.startswith("left out bad.mp4 from every row")]
    assert left_out and "pyav-from-start" in left_out[0]
    for row in result["loaders"].values():
        split = row.get("split_ms_per_clip") or {}
        assert all(v is None or v >= 0 for k, v in split.items() if k != "rest_measured")
        assert row["clock"] in ("own", "wall")


def test_i_usable_clips_names_every_failure_and_keeps_rows_comparable(tmp_path):
    class Counts:
        def actual_frames(self, vid):
            if vid == "uncountable":
                raise VideoReadError(vid, "no frame decodes")
            return 20

    class Row:
        def __init__(self, bad):
            self.bad, self.seen = bad, set()

        def read(self, vid, idx):
            self.seen.add(vid)
            if vid == self.bad:
                raise RuntimeError(f"cannot decode {vid}")
            return np.zeros((len(idx), 2, 2, 3), np.uint8)

    ids = ["a", "b", "c", "uncountable"]
    work = WorkDir(tmp_path, tmp_path, ids, "test")
    readers = {"x": Row("b"), "y": Row("c")}
    cfg = BenchConfig(clips=12, frames=4)
    notes: list[str] = []
    kept, clips, counts, dropped = usable_clips(work, {"s": Counts()}, readers, cfg, notes)
    left_out = [f"left out {v} from every row (so that rows stay comparable): " for v in "bc"]
    assert [n[: len(s)] for n, s in zip(notes, left_out, strict=False)] == left_out
    assert len(notes) == 3 and notes[2].startswith("left out uncountable from every row")
    assert kept.video_ids == ["a"] and {v for v, _ in clips} == {"a"} and len(clips) == 12
    assert counts == {"a": 20}
    assert dropped["b"].startswith("row x: RuntimeError: cannot decode b")
    assert dropped["c"].startswith("row y: RuntimeError")
    assert "no frame decodes" in dropped["uncountable"]
    readers = {"x": Row("a")}
    with pytest.raises(ValueError, match="no video can be read by every row"):
        usable_clips(dataclasses.replace(work, video_ids=["a"]), {"s": Counts()}, readers, cfg, [])


def bench_report_has_no_matplotlib() -> bool:
    try:
        report.check_plotting()
    except RuntimeError:
        return True
    return False


def test_a_g_damaged_or_fifo_timestamps_sidecar_is_a_read_error(tmp_path):
    write_hdf5(tmp_path / "v.h5", _jpegs())
    src = Hdf5Source(tmp_path)
    sidecar = sidecar_path(tmp_path / "v.h5")
    good = np.arange(4, dtype="<f8")
    np.save(sidecar.with_suffix(".tmp.npy"), good)
    data = sidecar.with_suffix(".tmp.npy").read_bytes()
    sidecar.write_bytes(data[:10] + b"{'descr': '<f8', (((" + data[30:])  # garbage header
    with pytest.raises(VideoReadError, match="unreadable timestamps") as info:
        src.timestamps("v")
    assert info.value.path == str(sidecar)
    sidecar.unlink()
    if hasattr(os, "mkfifo"):
        os.mkfifo(sidecar)
        err = _within(10, lambda: src.timestamps("v"))
        assert isinstance(err, VideoReadError) and "not a regular file: a FIFO" in str(err)
