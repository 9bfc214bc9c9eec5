"""`vidload choose`: the frontier and the choice on hand-made rows, the storage names, the sample,
PSNR, and end-to-end smoke runs (tiny: one round, a few clips) on generated and real videos.

No timing is asserted: only that every row is measured, that the table shows what the JSON
holds, and that the error paths say what they should.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from media import make_video, paint, real_clip, shared_videos

from vidload._choose.measure import PSNR_CAP_DB, cut_to, psnr, spread
from vidload.choose import (
    DEFAULT_STORAGES,
    StorageSpec,
    beats,
    choose,
    frontier,
    pick_storage,
)
from vidload.cli import main

# --------------------------------------------------------------------------- frontier


@dataclass(frozen=True)
class Row:
    storage: str
    bytes_per_video: float
    clips_per_s_per_core: float
    psnr_db: float | None


def test_beats_needs_no_worse_in_all_three_and_better_in_one():
    a = Row("a", 100, 50, 40.0)
    assert beats(Row("b", 90, 50, 40.0), a)  # smaller, the rest equal
    assert beats(Row("b", 100, 51, 40.0), a)  # faster
    assert beats(Row("b", 100, 50, 40.5), a)  # better quality
    assert not beats(Row("b", 100, 50, 40.0), a)  # equal: no one beats
    assert not beats(Row("b", 90, 60, 39.9), a)  # worse in one: no
    assert not beats(a, Row("b", 90, 60, 39.9))
    original = Row("original", 100, 50, None)  # exact: better than any PSNR
    assert beats(original, a) and not beats(a, original)
    assert not beats(Row("orig2", 100, 50, None), original)


def test_frontier_on_hand_made_rows():
    rows = [
        Row("original", 1000, 10, None),  # exact: nothing matches its quality
        Row("video:gop8:crf23", 900, 40, 38.0),  # smallest
        Row("video:gop8:crf18", 1400, 30, 41.0),  # bigger than the originals, but faster
        Row("hdf5:q95", 11000, 230, 42.5),  # fastest
        Row("hdf5:q85", 12000, 220, 40.0),  # beaten by hdf5:q95 in all three
        Row("npy:q95", 11000, 230, 42.5),  # equal to hdf5:q95: both stay
        Row("video:gop1:crf18", 2700, 77, 38.0),
    ]
    assert frontier(rows) == [True, True, True, True, False, True, True]
    assert frontier([]) == []
    assert frontier([rows[0]]) == [True]


# --------------------------------------------------------------------------- the choice


ROWS = [
    Row("original", 1000, 10, None),
    Row("video:gop8:crf23", 900, 40, 38.0),
    Row("video:gop1:crf18", 2700, 77, 38.5),
    Row("hdf5:q95", 11000, 230, 42.5),
    Row("hdf5:q75", 6000, 250, 36.0),
]


@pytest.mark.parametrize(
    ("need", "cores", "min_psnr", "expected"),
    [
        (300, 8, None, "video:gop8:crf23"),  # 40 x 8 = 320 >= 300: the smallest storage
        (80, 2, None, "video:gop8:crf23"),  # 40 x 2 = 80: meeting it exactly counts
        (400, 8, None, "video:gop1:crf18"),  # 40 x 8 = 320 < 400; 77 x 8 = 616
        (1000, 4, None, "hdf5:q75"),  # only 250 x 4 = 1000 (>= counts)
        (1000, 4, 40, None),  # at >= 40 dB the fastest is hdf5:q95: 920 < 1000
        (900, 4, 40, "hdf5:q95"),
        (10, 1, 50, "original"),  # exact passes any PSNR floor
    ],
)
def test_pick_storage(need, cores, min_psnr, expected):
    pick = pick_storage(ROWS, need=need, cores=cores, min_psnr=min_psnr)
    assert pick.storage == expected
    if expected is None:
        assert "no storage at >= 40 dB meets 1000 clips/s per GPU on 4 cores" in pick.reason
        assert "hdf5:q95" in pick.reason and "5 cores per GPU" in pick.reason
    else:
        assert pick.reason.startswith(f"{expected} is the smallest storage")


def test_pick_storage_none_fast_enough_says_how_many_cores():
    pick = pick_storage(ROWS, need=2000, cores=4)
    assert pick.storage is None
    assert "the fastest, hdf5:q75, gives 250.0 clips/s per core x 4 = 1000.0" in pick.reason
    assert "8 cores per GPU" in pick.reason


def test_pick_storage_none_good_enough():
    pick = pick_storage(ROWS[1:], need=1, cores=1, min_psnr=60)
    assert pick.storage is None and "no storage reaches 60 dB" in pick.reason


def test_pick_storage_ties_go_to_the_faster():
    rows = [Row("a", 100, 50, 30.0), Row("b", 100, 60, 30.0)]
    assert pick_storage(rows, need=10, cores=1).storage == "b"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"need": 0, "cores": 1}, r"need \(0\) must be > 0"),
        ({"need": 5, "cores": 0}, r"cores \(0\) must be >= 1"),
    ],
)
def test_pick_storage_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        pick_storage(ROWS, **kwargs)
    with pytest.raises(ValueError, match="no rows"):
        pick_storage([], need=1, cores=1)


# --------------------------------------------------------------------------- storages


@pytest.mark.parametrize(
    "name",
    ["original", "video:gop8:crf23", "video:gop1:crf18:fast", "video", "hdf5:q95", "npy:q75"],
)
def test_storage_names_round_trip(name):
    assert StorageSpec.parse(name).name == name


def test_default_storages_cover_the_issue():
    kinds = [s.to for s in DEFAULT_STORAGES]
    assert kinds[0] == "original" and kinds.count("video") >= 3
    jpeg_qualities = {s.quality for s in DEFAULT_STORAGES if s.to == "hdf5"}
    assert len(jpeg_qualities) >= 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("hdf5", r"storage 'hdf5': unknown form; expected original"),
        ("hdf5:q101", r"quality \(101\) must be in \[1, 100\]"),
        ("video:gopx", r"'gopx' is not gopN, crfQ or a preset \(ultrafast"),
        ("mp4", r"storage 'mp4': .*expected original, video"),
        ("original:q9", r"storage 'original:q9'"),
    ],
)
def test_bad_storage_names(text, message):
    with pytest.raises(ValueError, match=message):
        StorageSpec.parse(text)


def test_spread_is_deterministic_and_across_the_folder():
    ids = [f"c{c}/v{i}.mp4" for c in range(4) for i in range(5)]
    picked = spread(ids, 4)
    assert picked == spread(ids, 4) and len(set(picked)) == 4
    assert {p.split("/")[0] for p in picked} == {"c0", "c1", "c2", "c3"}
    assert spread(ids[:3], 8) == ids[:3]


def test_psnr():
    ref = np.stack([paint(i) for i in range(3)])
    assert np.all(psnr(ref, ref, where="x") == PSNR_CAP_DB)
    noisy = ref.astype(np.int16)
    noisy[0] += 1  # MSE 1 except where clipped? paint values stay in [30, 220]
    noisy[1] += 4  # MSE 16
    db = psnr(np.clip(noisy, 0, 255).astype(np.uint8), ref, where="x")
    assert db[0] == pytest.approx(10 * math.log10(255**2), abs=0.2)
    assert db[1] == pytest.approx(10 * math.log10(255**2 / 16), abs=0.2)
    with pytest.raises(ValueError, match=r"hdf5, v: frames \(2, 96, 128, 3\) vs"):
        psnr(ref[:2], ref, where="hdf5, v")


def test_reference_cut_to_an_even_video_size():
    ref = np.zeros((2, 65, 85, 3), np.uint8)
    ref[:, -1, :] = ref[:, :, -1] = 255  # the row and column a video storage cuts off
    stored = np.zeros((2, 64, 84, 3), np.uint8)
    assert np.all(psnr(stored, cut_to(ref, stored), where="v") == PSNR_CAP_DB)
    assert cut_to(ref, ref) is ref
    with pytest.raises(ValueError, match="vs the original decode"):
        small = np.zeros((2, 60, 80, 3), np.uint8)
        psnr(small, cut_to(ref, small), where="v")


# --------------------------------------------------------------------------- end to end

QUICK_STORAGES = "original,video:gop8:crf23,hdf5:q95,hdf5:q75,npy:q95"


@pytest.fixture(scope="module")
def footage(tmp_path_factory) -> Path:
    """Six tiny painted videos in three class folders."""
    root = tmp_path_factory.mktemp("footage")
    for c in range(3):
        for i in range(2):
            make_video(root / f"class{c}" / f"v{i}.mp4", 24, options={"g": "12"})
    return root


def _table(text: str) -> list[tuple[bool, list[str]]]:
    """The table's rows: (frontier mark, cells), from the header line to the blank line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["storage", "MiB/video"])
    rows = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        rows.append((line[0] == "*", line[2:].split()))
    return rows


def _close(cell: str, value: float | None, scale: float = 1.0, digits: int = 1) -> bool:
    if value is None:
        return cell in ("-", "exact")
    return abs(float(cell) - value / scale) <= 0.5 * 10**-digits + 1e-9


def _check_table_is_json(stdout: str, data: dict) -> None:
    table = _table(stdout)
    assert len(table) == len(data["rows"])
    for (mark, cells), row in zip(table, data["rows"], strict=True):
        name, mib, ratio, gib, rate, cold, db, min_db, conv, core_h = cells
        assert name == row["storage"] and mark == row["frontier"]
        assert _close(mib, row["bytes_per_video"], 2**20, 3)
        assert _close(ratio, row["size_ratio"], digits=2)
        assert _close(gib, row["data_bytes"], 2**30, 3)
        assert _close(rate, row["clips_per_s_per_core"])
        assert _close(cold, row["cold_clips_per_s"])
        assert (db == "exact") == (row["psnr_db"] is None) and _close(db, row["psnr_db"])
        assert _close(min_db, row["psnr_min_db"])
        assert _close(conv, row["convert_cpu_s_per_video"], digits=2)
        assert _close(core_h, row["data_convert_core_h"], digits=2)


def _run(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(["choose", *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.mark.slow
def test_choose_on_generated_videos_table_is_the_json(footage, tmp_path, capsys):
    js = tmp_path / "r.json"
    rc, out, err = _run(
        capsys, str(footage), "--quick", "--sample", "3", "--storages", QUICK_STORAGES,
        "--need", "5", "--cores", "2", "--json", str(js),
    )  # fmt: skip
    assert rc == 0, err
    data = json.loads(js.read_text())
    rows = data["rows"]
    expected = [s.name for s in _supported(map(StorageSpec.parse, QUICK_STORAGES.split(",")))]
    assert [r["storage"] for r in rows] == expected
    for r in rows:
        for key in ("storage", "bytes_per_video", "size_ratio", "clips_per_s_per_core"):
            assert r[key] is not None
        assert r["bytes_per_video"] > 0 and r["clips_per_s_per_core"] > 0
        assert (r["psnr_db"] is None) == (r["storage"] == "original")
    original = rows[0]
    assert original["size_ratio"] == 1.0 and original["convert_cpu_s_per_video"] is None
    by_name = {r["storage"]: r for r in rows}
    hdf5_95, hdf5_75, npy_95 = by_name["hdf5:q95"], by_name["hdf5:q75"], by_name["npy:q95"]
    assert hdf5_95["psnr_db"] > hdf5_75["psnr_db"] > 25  # painted frames survive JPEG
    assert npy_95["psnr_db"] == pytest.approx(hdf5_95["psnr_db"])  # the same JPEG bytes
    assert hdf5_95["bytes_per_video"] > hdf5_75["bytes_per_video"]
    assert [r["frontier"] for r in rows] == frontier(
        [Row(r["storage"], r["bytes_per_video"], r["clips_per_s_per_core"], r["psnr_db"])
         for r in rows]
    )  # fmt: skip
    assert data["sample"] == ["class0/v1.mp4", "class1/v1.mp4", "class2/v1.mp4"]
    assert data["data"]["videos"] == 6
    pick = data["recommendation"]
    assert pick["need"] == 5 and pick["cores"] == 2
    assert f"choice for 5 clips/s per GPU, 2 cores per GPU: {pick['storage']}" in out
    _check_table_is_json(out, data)
    assert "[choose" in err  # progress on stderr


def test_choose_leaves_out_a_damaged_video_and_names_it(footage, tmp_path, capsys):
    data = tmp_path / "data"
    for p in sorted(footage.rglob("*.mp4"))[:2]:
        (data / p.parent.name).mkdir(parents=True, exist_ok=True)
        (data / p.parent.name / p.name).write_bytes(p.read_bytes())
    (data / "class0" / "v0.mp4").write_bytes(b"")  # zero bytes: cannot be decoded
    js = tmp_path / "r.json"
    rc, out, _ = _run(
        capsys, str(data), "--quick", "--storages", "original,hdf5:q90", "--json", str(js), "-q"
    )
    assert rc == 0
    result = json.loads(js.read_text())
    assert result["sample"] == ["class0/v1.mp4"]
    assert "class0/v0.mp4" in result["left_out"]
    assert re.search(r"left out class0/v0.mp4: cannot be decoded: \w+", out)


def test_choose_library_errors(tmp_path, footage):
    with pytest.raises(FileNotFoundError, match=r"DATA \('.*nope'\) does not exist"):
        choose(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("no videos here")
    with pytest.raises(ValueError, match=r"no video files \(.*\.mp4.*\) found under DATA"):
        choose(tmp_path / "empty")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "a.mp4").write_bytes(b"")
    (bad / "b.mp4").write_bytes(b"not a video at all")
    with pytest.raises(ValueError, match=r"no video of the sample can be decoded: a.mp4: .*b.mp4"):
        choose(bad, progress=False, jobs=1)
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("")
    with pytest.raises(ValueError, match=r"workdir \(.*full'\) must be a new or empty folder"):
        choose(footage, workdir=full)
    with pytest.raises(ValueError, match="need and cores go together"):
        choose(footage, need=10)
    with pytest.raises(ValueError, match=r"storages named twice: \['hdf5:q95'\]"):
        choose(footage, storages=[StorageSpec("hdf5", quality=95)] * 2)


def test_choose_keeps_its_workdir_only_when_asked(footage, tmp_path):
    kept = choose(
        footage, sample=1, storages=[StorageSpec("hdf5", quality=80)], clips=2, rounds=1,
        min_time=0, psnr_frames=2, cold=False, jobs=1, progress=False,
        workdir=tmp_path / "w", keep=True,
    )  # fmt: skip
    assert kept.workdir == str(tmp_path / "w")
    assert (tmp_path / "w" / "sample").is_dir() and (tmp_path / "w" / "hdf5-q80").is_dir()
    assert kept.rows[0].cold_clips_per_s is None  # cold=False
    (tmp_path / "w2").mkdir()
    gone = choose(
        footage, sample=1, storages=[StorageSpec("hdf5", quality=80)], clips=2, rounds=1,
        min_time=0, psnr_frames=2, cold=False, jobs=1, progress=False, workdir=tmp_path / "w2",
    )  # fmt: skip
    assert gone.workdir is None and list((tmp_path / "w2").iterdir()) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{t}/nope"], r"DATA \('.*nope'\) does not exist"),
        (["{f}", "--need", "10"], "--need and --cores go together"),
        (["{f}", "--min-psnr", "30"], "--min-psnr applies to the choice"),
        (["{f}", "--storages", "hdf5:q999"], r"quality \(999\) must be in \[1, 100\]"),
        (["{f}", "--need", "-1", "--cores", "2"], "must be > 0"),
    ],
)
def test_choose_bad_arguments_exit_2(footage, tmp_path, capsys, args, message):
    argv = [a.format(t=tmp_path, f=footage) for a in args]
    rc, _, err = _run(capsys, *argv)
    assert rc == 2
    assert re.search(message, err) and "usage: vidload choose" in err


def test_choose_no_videos_exits_1(tmp_path, capsys):
    rc, _, err = _run(capsys, str(tmp_path), "-q")
    assert rc == 1 and "vidload choose: error: ValueError: no video files" in err


def test_choose_plot(footage, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    png = tmp_path / "f.png"
    rc, _, err = _run(
        capsys, str(footage), "--quick", "--storages", "original,hdf5:q90", "--no-cold",
        "--plot", str(png), "-q",
    )  # fmt: skip
    assert rc == 0, err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_choose_plot_without_matplotlib_is_a_usage_error(footage, tmp_path, capsys, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.split(".")[0] == "matplotlib":
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    rc, _, err = _run(capsys, str(footage), "--quick", "--plot", str(tmp_path / "f.png"))
    assert rc == 2 and "pip install 'vidload[plot]'" in err
    assert not (tmp_path / "f.png").exists()


@pytest.mark.slow
@real_clip("mma_test.mp4")
@real_clip("mma_test.avi")
def test_choose_on_the_real_clips_smoke(tmp_path, capsys):
    js = tmp_path / "r.json"
    rc, out, err = _run(
        capsys, str(shared_videos()), "--sample", "2", "--quick", "--short-side", "64",
        "--json", str(js), "-q",
    )  # fmt: skip
    assert rc == 0, err
    data = json.loads(js.read_text())
    assert sorted(data["sample"]) == ["mma_test.avi", "mma_test.mp4"] and not data["left_out"]
    assert [r["storage"] for r in data["rows"]] == [s.name for s in _supported(DEFAULT_STORAGES)]
    for r in data["rows"][1:]:
        assert r["psnr_db"] > 25, r
    assert any(r["frontier"] for r in data["rows"])
    _check_table_is_json(out, data)


def _supported(storages):
    from vidload.convert import CONVERT_FORMATS

    return [s for s in storages if s.to == "original" or s.to in CONVERT_FORMATS]


def test_render_says_when_no_storage_meets_the_need():
    from vidload._choose.report import render

    row = {
        "storage": "original", "frontier": True, "bytes_per_video": 2**20, "size_ratio": 1.0,
        "data_bytes": 2**30, "clips_per_s_per_core": 10.0, "cold_clips_per_s": None,
        "psnr_db": None, "psnr_min_db": None, "convert_cpu_s_per_video": None,
        "data_convert_core_h": None,
    }  # fmt: skip
    pick = pick_storage([Row("original", 2**20, 10.0, None)], need=100, cores=2)
    text = render(
        {
            "rows": [row],
            "recommendation": {"need": 100.0, "cores": 2, "storage": None, "reason": pick.reason},
            "data": {"path": "d", "videos": 10, "bytes": 2**30},
            "sample": ["a.mp4"],
            "left_out": {"b.mp4": "cannot be decoded: VideoReadError: x"},
            "config": {"short_side": None},
            "notes": ["n"],
        }
    )
    assert "choice for 100 clips/s per GPU, 2 cores per GPU: none" in text
    assert "it would need 10 cores per GPU" in text
    assert "left out b.mp4: cannot be decoded" in text
    assert re.search(r"^\* original\s+1\.000\s+1\.00\s+1\.000\s+10\.0\s+-\s+exact", text, re.M)
