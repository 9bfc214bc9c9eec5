"""Annotation lists and manifests: reading, writing, load_videos."""

from __future__ import annotations

import stat
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from vidload.manifest import (
    MANIFEST_FIELDS,
    MAX_ERROR_CHARS,
    ManifestRow,
    VideoEntry,
    is_manifest,
    keep_extra,
    load_videos,
    read_annotation_list,
    read_manifest,
    write_manifest,
)

HEADER = ",".join(MANIFEST_FIELDS)


def test_video_list_with_comments_and_blank_lines(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text("# mmaction2 video list\n\nabseiling/x1.mp4 0\n  juggling/y 2.avi 3\n")
    # a video line's path ends at its video extension: spaces allowed
    assert read_annotation_list(path)[1] == VideoEntry("juggling/y 2.avi", 3, None, None)
    path.write_text("# mmaction2 video list\n\nabseiling/x1.mp4 0\n\n  juggling/y2.avi 3  \n")
    assert load_videos(path) == [
        VideoEntry("abseiling/x1.mp4", 0, None, None),
        VideoEntry("juggling/y2.avi", 3, None, None),
    ]


def test_rawframes_list(tmp_path):
    path = tmp_path / "val_rawframes.txt"
    path.write_text("abseiling/x1 250 0\r\njuggling/y2 17 5\r\n")
    assert load_videos(str(path)) == [
        VideoEntry("abseiling/x1", 0, 250, None),
        VideoEntry("juggling/y2", 5, 17, None),
    ]


def test_not_utf8_and_missing_file(tmp_path):
    path = tmp_path / "bin.txt"
    path.write_bytes(b"\xff\xfe\x00garbage\x80\n")
    with pytest.raises(ValueError, match=r"bin.txt: not a UTF-8 text file"):
        load_videos(path)
    with pytest.raises(FileNotFoundError, match=r"nope.txt.* is not a file"):
        load_videos(tmp_path / "nope.txt")


def _rows():
    return [
        ManifestRow("a/x1.mp4", 0, 50, 28, 320, 240, 29.97002997002997, 123456, "mismatch"),
        ManifestRow("a/x,2.mp4", None, 300, 300, 340, 256, 30.0, 99, "ok", container="a/x,2.h5"),
        ManifestRow("b/bad.mp4", 3, None, None, None, None, None, 0, "failed", 'empty, "0 B"'),
        ManifestRow("b/y.mkv", 1, None, 310, 64, 48, None, None, "skipped"),
    ]


def test_manifest_round_trip(tmp_path):
    path = tmp_path / "manifest.csv"
    write_manifest(path, _rows())
    lines = path.read_text().splitlines()
    assert lines[0] == HEADER
    assert lines[1] == "a/x1.mp4,0,50,28,320,240,29.97002997002997,123456,mismatch,,,"
    assert lines[3] == 'b/bad.mp4,3,,,,,,0,failed,"empty, ""0 B""",,'
    assert read_manifest(path) == _rows()
    assert is_manifest(path)
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.csv"]  # no temp file left


@pytest.mark.parametrize("bad", ["/abs/x.h5", "a/../x.h5", "a//x.h5", "./x.h5"])
def test_a_container_name_is_a_canonical_relative_path(bad, tmp_path):
    with pytest.raises(ValueError, match=r"container .* must be a relative"):
        ManifestRow("a/x.mp4", 0, container=bad)
    path = tmp_path / "manifest.csv"
    path.write_text(f"video_id,label,container\na/x.mp4,0,{bad}\n")
    with pytest.raises(ValueError, match=r"manifest.csv:2: container"):
        read_manifest(path)


def test_written_manifest_mode_follows_the_umask(tmp_path):
    """0o666 less the umask, as any new file (the umask is set in a child process: changing it
    here would race with other threads of the test run)."""
    script = (
        "import os, sys\n"
        "from vidload.manifest import ManifestRow, write_manifest\n"
        "for umask in (0o022, 0o077, 0o002):\n"
        "    os.umask(umask)\n"
        "    write_manifest(f'{sys.argv[1]}/{umask:o}.csv', [ManifestRow('a.mp4', 0)])\n"
    )
    subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=True, timeout=60)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()}
    assert modes == {"22.csv": 0o644, "77.csv": 0o600, "2.csv": 0o664}


def test_extra_columns_are_kept_through_a_read_and_a_write(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text(
        "note,video_id,label,split\n"
        'hand-made,a.mp4,1,train\n"two\nlines",b.mp4,,\n'  # an empty extra cell stays ""
    )
    assert is_manifest(path)  # video_id need not come first
    lst = tmp_path / "l.txt"
    lst.write_text("video_id 10 0\n")  # a rawframes folder named video_id
    assert not is_manifest(lst) and load_videos(lst) == [VideoEntry("video_id", 0, 10, None)]
    rows = read_manifest(path)
    assert [r.extra for r in rows] == [
        {"note": "hand-made", "split": "train"},
        {"note": "two\nlines", "split": ""},
    ]
    rows.append(ManifestRow("c.mp4", 2, extra={"split": "val", "source": "web"}))
    write_manifest(path, rows)
    header = path.read_text().splitlines()[0]
    assert header == HEADER + ",note,split,source"  # after the known ones, first seen first
    columns = ("note", "split", "source")  # a row without one gets an empty cell: ""
    filled = [replace(r, extra={c: r.extra.get(c, "") for c in columns}) for r in rows]
    assert read_manifest(path) == filled


def test_keep_extra_and_bad_extra_cells():
    old = ManifestRow("a.mp4", 0, extra={"split": "train", "note": "x"})
    new = ManifestRow("a.mp4", 1, 10, 10, extra={"note": "y"})
    assert keep_extra(new, old) == replace(new, extra={"split": "train", "note": "y"})
    assert keep_extra(new, None) is new
    with pytest.raises(TypeError, match=r"extra \('split': 3\) must map a str column"):
        ManifestRow("a.mp4", extra={"split": 3})
    with pytest.raises(ValueError, match=r"extra column 'label' is a manifest column"):
        ManifestRow("a.mp4", extra={"label": "3"})
    with pytest.raises(TypeError, match="extra must be a mapping"):
        ManifestRow("a.mp4", extra=["split"])


def test_a_long_error_is_cut_so_the_manifest_stays_readable(tmp_path):
    path = tmp_path / "m.csv"
    error = "Traceback line\n" * 20_000  # 300,000 characters: over csv's 131,072 cell limit
    write_manifest(path, [ManifestRow("a.mp4", status="failed", error=error)])
    (row,) = read_manifest(path)
    assert len(row.error) == MAX_ERROR_CHARS
    assert row.error.endswith(f" ... [cut: {len(error)} characters in all]")
    assert error.startswith(row.error[: -len(" ... [cut: 300000 characters in all]")])
    short = "x" * MAX_ERROR_CHARS
    write_manifest(path, [ManifestRow("a.mp4", status="failed", error=short)])
    assert read_manifest(path)[0].error == short


def test_write_manifest_is_atomic_on_failure(tmp_path):
    path = tmp_path / "manifest.csv"
    write_manifest(path, _rows()[:1])
    before = path.read_bytes()
    with pytest.raises(TypeError, match="rows must be ManifestRow, got tuple"):
        write_manifest(path, [_rows()[1], ("a.mp4", 0)])
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.csv"]


def test_manifest_row_normalises_and_validates():
    row = ManifestRow("x.mp4", np.int64(2), np.int32(10), 9, fps=np.float32(25.0), bytes=0)
    assert (type(row.label), type(row.reported_frames), type(row.fps)) == (int, int, float)
    with pytest.raises(ValueError, match=r"status \('done'\) must be one of"):
        ManifestRow("x.mp4", status="done")
    with pytest.raises(ValueError, match=r"actual_frames \(-1\) must be >= 0"):
        ManifestRow("x.mp4", actual_frames=-1)
    with pytest.raises(TypeError, match="width must be an int, got 1.5"):
        ManifestRow("x.mp4", width=1.5)
    with pytest.raises(ValueError, match="must be a relative path"):
        ManifestRow("/x.mp4")


@pytest.mark.parametrize(
    ("name", "text", "match"),
    [
        (
            "list.txt",
            "a.mp4 0\nb.mp4 1 2 3\n",
            r"list.txt:2: 'b.mp4 1 2 3' has 3 labels.*multi_label=True",
        ),
        ("list.txt", "a.mp4\n", r"list.txt:1: 'a.mp4' has no label"),
        ("list.txt", "a 10 1 2 3\n", r"list.txt:1: .a 10 1 2 3. has 3 labels.*multi_label=True"),
        ("list.txt", "a -1 10 2\n", r"list.txt:1: offset \(-1\) must be >= 0"),
        ("list.txt", "# c\na.mp4 dog\n", r"list.txt:2: label \('dog'\) is not an integer"),
        # a rawframes path is what precedes the trailing integers: "a 1.5", 0 frames, no label
        ("list.txt", "a 1.5 0\n", r"list.txt:1: 'a 1.5 0' has no label"),
        ("list.txt", "a -3 0\n", r"list.txt:1: total_frames \(-3\) must be >= 0"),
        ("list.txt", "../a.mp4 0\n", r"list.txt:1: video_id .* must be a relative path"),
        ("m.csv", "video_id,label,label\n", r"m.csv:1: manifest header .* names \['label'\] twice"),
        ("m.csv", HEADER + "\na.mp4,0,1\n", r"m.csv:2: 3 cells, the header has 12"),
        (
            "m.csv",
            HEADER + "\na.mp4,0,1,1,2,2,25,9,fine,,,\n",
            r"m.csv:2: status \('fine'\) must be",
        ),
        (
            "m.csv",
            HEADER + "\n\na.mp4,0,x,1,2,2,25,9,ok,,,\n",
            r"m.csv:3: reported_frames \('x'\) is not",
        ),
        (
            "m.csv",
            HEADER + "\na.mp4,0,1,1,2,2,fast,9,ok,,,\n",
            r"m.csv:2: fps \('fast'\) is not a number",
        ),
        (
            "m.csv",
            HEADER + "\na.mp4,0,1,1,2,2,25,9,ok,,45,\n",
            r"m.csv:2: rotation \('45'\) must be one of",
        ),
    ],
)
def test_list_and_manifest_errors_name_file_and_line(tmp_path, name, text, match):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        load_videos(path)


def test_load_videos_from_manifest_skips_failed_rows_with_warning(tmp_path):
    path = tmp_path / "manifest.csv"
    write_manifest(path, _rows())
    with pytest.warns(UserWarning, match=r"manifest.csv: left out 1 video\(s\) .*b/bad.mp4"):
        entries = load_videos(path)
    assert entries == [
        VideoEntry("a/x1.mp4", 0, 28, 50),
        VideoEntry("a/x,2.mp4", -1, 300, 300),  # unlabelled -> -1
        VideoEntry("b/y.mkv", 1, 310, None),
    ]


def test_load_videos_from_sequences():
    entries = load_videos(
        [("a.mp4", 1), ["b/c.avi", np.int64(2), 40], VideoEntry("d", 0, 5, 6), ("e", 3, None)]
    )
    assert entries == [
        VideoEntry("a.mp4", 1, None, None),
        VideoEntry("b/c.avi", 2, 40, None),
        VideoEntry("d", 0, 5, 6),
        VideoEntry("e", 3, None, None),
    ]
    assert type(entries[1].label) is int
    assert load_videos([]) == []


@pytest.mark.parametrize(
    ("videos", "error", "match"),
    [
        ([("a.mp4",)], TypeError, r"videos\[0\] .* must be \(video_id, label\)"),
        ([("a.mp4", 1), ("b.mp4", "1")], TypeError, r"videos\[1\] .*label must be an int"),
        ([("a.mp4", 1.0)], TypeError, r"videos\[0\] .*label must be an int"),
        ([("a.mp4", 1, -2)], ValueError, r"videos\[0\] .*num_frames \(-2\) must be >= 0"),
        ([("", 1)], TypeError, r"videos\[0\] .*non-empty str"),
        ([("../a.mp4", 1)], ValueError, r"videos\[0\] .*relative path"),
        ({"a.mp4": 1}, TypeError, "videos must be a path or a sequence .* got dict"),
        (42, TypeError, "got int"),
    ],
)
def test_load_videos_sequence_errors(videos, error, match):
    with pytest.raises(error, match=match):
        load_videos(videos)


def test_manifest_columns_by_name_extra_and_missing_ones(tmp_path):
    old = tmp_path / "old.csv"  # an older version's manifest: no rotation column
    old.write_text(
        "video_id,label,reported_frames,actual_frames,width,height,fps,bytes,status,error\n"
        "a/x.mp4,2,10,10,64,48,25.0,99,ok,\n"
    )
    (row,) = read_manifest(old)
    assert (row.label, row.actual_frames, row.rotation) == (2, 10, None)
    extra = tmp_path / "extra.csv"  # columns in another order, plus one this version lacks
    extra.write_text("video_id,split,rotation,label\nb/y.mp4,train,90+hflip,1\n")
    (row,) = read_manifest(extra)
    assert (row.video_id, row.label, row.rotation, row.status) == ("b/y.mp4", 1, "90+hflip", "ok")
    assert row.extra == {"split": "train"}
    no_id = tmp_path / "no_id.csv"
    no_id.write_text("video,label\nb/y.mp4,1\n")
    with pytest.raises(ValueError, match=r"no_id.csv:1: .* lacks the required column 'video_id'"):
        read_manifest(no_id)
    assert [(e.label, e.extra) for e in load_videos(extra)] == [(1, {"split": "train"})]
