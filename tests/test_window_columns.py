"""A window list is read exactly or refused (issue 31): its window columns are `start` and `end`,
both or neither; another window dataset's columns (EPIC-KITCHENS' `stop`, `start_timestamp`,
`start_frame`, ...; Charades' `actions`) are refused naming the reader or the rename, wherever a
list is read (a CSV, a JSON list, `convert` and `probe` INPUTs) and wherever a manifest is
written, so vidload never writes a manifest it would refuse."""

from __future__ import annotations

import json

import pytest
from media import make_video

from vidload.cli import main
from vidload.convert import convert
from vidload.manifest import ManifestRow, load_videos, read_manifest, write_manifest
from vidload.probe import probe

EPIC_HEADER = (
    "narration_id,participant_id,video_id,narration_timestamp,start_timestamp,stop_timestamp,"
    "start_frame,stop_frame,narration,verb,verb_class,noun,noun_class,all_nouns,"
    "all_noun_classes"
)
CHARADES_HEADER = (
    "id,subject,scene,quality,relevance,verified,script,objects,descriptions,actions,length"
)

#: (header, a row, what the error says)
REFUSED = [
    ("video_id,label,start,stop", "a.mp4,0,0.5,1.6",
     r"column 'stop' is not read as a window.*rename it to `end`.*"
     r"vidload\.datasets\.epic_kitchens\(CSV\)"),
    ("video_id,label,start_frame,stop_frame", "a.mp4,0,11,80",
     r"column 'start_frame' is not read as a window.*1-based frame numbers.*"
     r"epic_kitchens\(CSV, window='frames'\)"),
    ("video_id,label,stop_frame", "a.mp4,0,80", r"column 'stop_frame'.*epic_kitchens"),
    ("video_id,label,start_timestamp,stop_timestamp", "a.mp4,0,00:00:00.20,00:00:01.60",
     r"column 'start_timestamp'.*HH:MM:SS\.ff.*epic_kitchens\(CSV\)"),
    ("video_id,label,stop_timestamp", "a.mp4,0,00:00:01.60", r"column 'stop_timestamp'"),
    ("video_id,label,narration_timestamp", "a.mp4,0,00:00:00.50",
     r"column 'narration_timestamp'.*epic_kitchens"),
    ("video_id,label,actions", "a.mp4,0,c092 11.90 21.20",
     r"column 'actions'.*Charades.*vidload\.datasets\.charades\(CSV\)"),
    ("video_id,label,start", "a.mp4,0,0.5",
     r"column 'start' without 'end': a window list has both `start` and `end`"),
    ("video_id,label,end", "a.mp4,0,1.5", r"column 'end' without 'start'"),
    (EPIC_HEADER, "P01_01_0,P01,P01_01,00:00:00.50,00:00:00.20,00:00:01.60,11,80,open door,"
     'open,3,door,8,"[\'door\']",[8]', r"column 'start_timestamp'.*epic_kitchens"),
]  # fmt: skip


@pytest.mark.parametrize("header,row,match", REFUSED, ids=[r[0][:40] for r in REFUSED])
def test_a_csv_with_another_datasets_window_columns_is_refused(tmp_path, header, row, match):
    path = tmp_path / "windows.csv"
    path.write_text(f"{header}\n{row}\n")
    with pytest.raises(ValueError, match=r"windows\.csv:1: " + match):
        load_videos(path)
    with pytest.raises(ValueError, match=match):
        read_manifest(path)


def test_charades_csv_through_the_plain_list_path_names_its_reader(tmp_path):
    path = tmp_path / "Charades_v1_train.csv"  # no video_id: not a manifest, read as a text list
    path.write_text(f"{CHARADES_HEADER}\n46GP8,HR43,Kitchen,6,7,Yes,x,y,z,c092 11.90 21.20,24.8\n")
    with pytest.raises(ValueError, match=r"Charades_v1_train.csv:1: column 'actions'.*charades"):
        load_videos(path)


@pytest.mark.parametrize(
    "item,match",
    [
        ({"start": 0.5, "stop": 1.6}, r"entry 0: its keys: column 'stop' .*rename it to `end`"),
        ({"start_frame": 11, "stop_frame": 80}, r"entry 0: its keys: column 'start_frame'"),
        ({"start": 0.5}, r"entry 0: its keys: column 'start' without 'end'"),
        ({"end": 0.5}, r"entry 0: its keys: column 'end' without 'start'"),
        ({"actions": "c092 1 2"}, r"entry 0: its keys: column 'actions'.*charades"),
    ],
)
def test_a_json_list_with_another_datasets_window_keys_is_refused(tmp_path, item, match):
    path = tmp_path / "w.json"
    path.write_text(json.dumps([{"filename": "a.mp4", "label": 0, **item}]))
    with pytest.raises(ValueError, match=r"w\.json: " + match):
        load_videos(path)


def test_an_open_side_is_asked_for_with_both_columns_and_an_empty_cell(tmp_path):
    csv = tmp_path / "open.csv"
    csv.write_text("video_id,label,start,end\na.mp4,0,1.5,\nb.mp4,1,,2.5\nc.mp4,2,,\n")
    got = [(e.video_id, e.start, e.end) for e in load_videos(csv)]
    assert got == [("a.mp4", 1.5, None), ("b.mp4", None, 2.5), ("c.mp4", None, None)]
    js = tmp_path / "open.json"
    js.write_text(json.dumps([{"filename": "a.mp4", "label": 0, "start": 1.5, "end": None}]))
    assert [(e.start, e.end) for e in load_videos(js)] == [(1.5, None)]


def test_write_manifest_refuses_what_read_manifest_would(tmp_path):
    out = tmp_path / "manifest.csv"
    for extra, match in (
        ({"stop": "1.6"}, r"manifest.csv: column 'stop' is not read as a window"),
        ({"start": "0.5"}, r"manifest.csv: column 'start' without 'end'"),
        ({"start_frame": "11"}, r"column 'start_frame'"),
    ):
        with pytest.raises(ValueError, match=match):
            write_manifest(out, [ManifestRow("a.mp4", 0, extra=extra)])
        assert not out.exists()  # nothing written
    write_manifest(out, [ManifestRow("a.mp4", 0, extra={"start": "0.5", "end": ""})])
    assert [(e.start, e.end) for e in load_videos(out)] == [(0.5, None)]


@pytest.fixture
def listed(tmp_path):
    make_video(tmp_path / "videos" / "a.mp4", 8, width=64, height=48)
    path = tmp_path / "epic_like.csv"
    path.write_text("video_id,label,start,stop,note\na.mp4,0,0.04,0.2,x\n")
    return path


def test_convert_and_probe_refuse_such_a_list_before_writing_anything(listed, tmp_path, capsys):
    out = tmp_path / "out"
    with pytest.raises(ValueError, match=r"epic_like.csv:1: column 'stop' is not read as a window"):
        convert(listed, out, root=tmp_path / "videos", to="hdf5", workers=1, progress=False)
    assert not out.exists()
    with pytest.raises(ValueError, match=r"epic_like.csv:1: column 'stop'"):
        probe(listed, root=tmp_path / "videos", workers=1, progress=False)
    args = ["--root", str(tmp_path / "videos"), "--workers", "1"]
    assert main(["convert", str(listed), str(out), "--to", "hdf5", *args]) != 0
    assert "column 'stop' is not read as a window" in capsys.readouterr().err
    written = tmp_path / "probed.csv"
    assert main(["probe", str(listed), *args, "--write", str(written)]) != 0
    assert "column 'stop'" in capsys.readouterr().err
    assert not out.exists() and not written.exists()


def test_a_window_list_converts_and_its_manifest_reads_back(tmp_path):
    make_video(tmp_path / "videos" / "a.mp4", 8, width=64, height=48)
    listed = tmp_path / "w.csv"
    listed.write_text("video_id,label,start,end,note\na.mp4,0,0.04,0.2,x\n")
    out = tmp_path / "out"
    assert convert(listed, out, root=tmp_path / "videos", to="hdf5", workers=1, progress=False).ok
    rows = read_manifest(out / "manifest.csv")  # carries `note`, never a lone window column
    assert [(r.video_id, r.extra) for r in rows] == [("a.mp4", {"note": "x"})]
