"""Errors a user can fix say what to change (issue 31): a Kinetics `root=` one level too high
names the folder that would match; the command line's refusal of an official split file says
what to do from the shell (and that advice works); `DatasetList.write("x.json")` writes JSON."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import warnings

import pytest
from media import frame_number, make_video

from vidload._lists import VideoEntry
from vidload.cli import main
from vidload.datasets import DatasetList, kinetics, ucf101
from vidload.manifest import load_videos

# --------------------------------------------------------------------------- Kinetics root=


@pytest.fixture(scope="module")
def kin(tmp_path_factory):
    """kinetics/train.csv, the videos in kinetics/train/<class>/ (two classes, one each)."""
    root = tmp_path_factory.mktemp("kin") / "kinetics"
    rows = ["label,youtube_id,time_start,time_end,split"]
    for cls, yid in (("air drumming", "abc"), ("zumba", "xyz")):
        rows.append(f"{cls},{yid},10,20,train")
        make_video(root / "train" / cls.replace(" ", "_") / f"{yid}_000010_000020.mp4", 2,
                   width=32, height=32)  # fmt: skip
    (root / "val").mkdir()
    (root / "train.csv").write_text("\n".join(rows) + "\n")
    return root


def test_kinetics_root_one_level_too_high_names_the_folder_below(kin):
    with pytest.raises(ValueError, match=r"train.csv: none of its 2 videos is under root "
                       r"\('.*kinetics'\), but 2 of them are under '.*kinetics/train': pass "
                       r"that folder as root="):  # fmt: skip
        kinetics(kin / "train.csv", root=kin)
    train = kinetics(kin / "train.csv", root=kin / "train")  # the folder it names: read
    assert [(e.video_id, e.label) for e in train] == [
        ("air_drumming/abc_000010_000020.mp4", 0),
        ("zumba/xyz_000010_000020.mp4", 1),
    ]


def test_kinetics_root_with_none_of_the_videos_says_what_root_holds(kin):
    with pytest.raises(ValueError, match=r"none of its 2 videos is under root \('.*val'\): "
                       r"root= must be the folder holding the class folders or the videos "
                       r"\(e.g. 'air_drumming/abc_000010_000020.mp4' or "
                       r"'abc_000010_000020.mp4'"):  # fmt: skip
        kinetics(kin / "train.csv", root=kin / "val")


def test_a_partly_downloaded_kinetics_still_warns_and_reads(kin, tmp_path):
    csv = tmp_path / "more.csv"
    csv.write_text((kin / "train.csv").read_text() + "zumba,gone,0,10,train\n")
    with pytest.warns(UserWarning, match=r"1 of the 3 listed videos are not under"):
        got = kinetics(csv, root=kin / "train")
    assert len(got) == 2 and got.missing == ("zumba/gone_000000_000010",)


# --------------------------------------------------------------------------- official files


@pytest.fixture
def ucf(tmp_path, monkeypatch):
    """UCF101 as downloaded (two classes, painted frames) and its split lists, in the cwd."""
    monkeypatch.chdir(tmp_path)
    for cls in ("ApplyEyeMakeup", "Basketball"):
        for g in (1, 8):
            make_video(f"UCF-101/{cls}/v_{cls}_g{g:02d}_c01.avi", 4, width=64, height=48,
                       codec="mpeg4")  # fmt: skip
    ann = tmp_path / "ann"
    ann.mkdir()
    (ann / "classInd.txt").write_text("1 ApplyEyeMakeup\n2 Basketball\n")
    (ann / "trainlist01.txt").write_text(
        "ApplyEyeMakeup/v_ApplyEyeMakeup_g08_c01.avi 1\nBasketball/v_Basketball_g08_c01.avi 2\n"
    )
    (ann / "testlist01.txt").write_text(
        "ApplyEyeMakeup/v_ApplyEyeMakeup_g01_c01.avi\nBasketball/v_Basketball_g01_c01.avi\n"
    )
    return tmp_path


@pytest.mark.parametrize("command", ["convert", "probe"])
def test_the_cli_says_what_to_do_from_the_shell(ucf, command, capsys):
    out = ["out", "--to", "hdf5"] if command == "convert" else []
    argv = [command, "ann/trainlist01.txt", *out, "--root", "UCF-101", "-q"]
    assert main(argv) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "a UCF101 split list, whose labels are 1-based" in err
    assert "Read it with" not in err  # no Python call to make instead
    rest = " out --to hdf5" if command == "convert" else ""
    write = (
        'python -c "from vidload.datasets import ucf101; '
        "ucf101('ann', split=1, subset='train').write('trainlist01-ucf101.txt')\""
    )
    assert f"{write} && vidload {command} trainlist01-ucf101.txt{rest} --root UCF-101" in err
    assert f"vidload {command} UCF-101{rest} --labels ann/classInd.txt" in err


def test_the_shell_advice_works(ucf, capsys):
    """Run what the error says: the list written and converted gives ucf101()'s labels."""
    assert main(["convert", "ann/trainlist01.txt", "out", "--to", "npy", "--root", "UCF-101"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    write = err.split("From the shell: ", 1)[1].split(" && ")[0].split(": ")[-1]
    argv = shlex.split(write)
    assert argv[0] == "python"
    subprocess.run([sys.executable, *argv[1:]], check=True, timeout=120)
    assert main(["convert", "trainlist01-ucf101.txt", "out", "--to", "npy", "--root", "UCF-101",
                 "-q", "--workers", "1"]) == 0  # fmt: skip
    from vidload import NpySource

    rows = load_videos("out/manifest.csv")
    want = [(e.video_id, e.label) for e in ucf101("ann", split=1, subset="train")]
    assert [(e.video_id, e.label) for e in rows] == want
    assert want == [("ApplyEyeMakeup/v_ApplyEyeMakeup_g08_c01.avi", 0),
                    ("Basketball/v_Basketball_g08_c01.avi", 1)]  # fmt: skip
    src = NpySource("out")
    assert [frame_number(f) for f in src.read(rows[1].video_id, [3, 0])] == [3, 0]


@pytest.mark.parametrize(
    ("listed", "reader"),
    [
        ("ann/testlist01.txt", "ucf101('ann', split=1, subset='test')"),
        ("hmdb/brush_hair_test_split1.txt", "hmdb51('hmdb', split=1, subset='train')"),
        ("k.csv", "kinetics('k.csv', root='UCF-101')"),
        ("ssv2.json", "ssv2(LABELS_JSON, ANNOTATIONS_JSON)"),
    ],
)
def test_every_official_file_gets_shell_advice(ucf, listed, reader, capsys):
    (ucf / "hmdb").mkdir()
    (ucf / "hmdb/brush_hair_test_split1.txt").write_text("a.avi 1 \nb.avi 2 \nc.avi 0 \n")
    (ucf / "k.csv").write_text("label,youtube_id,time_start,time_end,split\nx,abc,0,10,train\n")
    (ucf / "ssv2.json").write_text(json.dumps([{"id": "1", "template": "Holding [x]"}]))
    assert main(["convert", listed, "out", "--to", "hdf5", "--root", "UCF-101", "-q"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"INPUT {listed}" in err and "From the shell: " in err
    assert f"{reader}.write(" in err and "Read it with" not in err


def test_python_keeps_the_reader_call(ucf):
    """From Python the same refusal names the reader to call (what a Python user does)."""
    with pytest.raises(ValueError, match=r"Read it with vidload.datasets.ucf101\('ann', "
                       r"split=1, subset='train'\), which numbers"):  # fmt: skip
        load_videos("ann/trainlist01.txt")


# --------------------------------------------------------------------------- DatasetList.write


def test_a_window_list_written_as_json_is_json_and_reads_back(tmp_path):
    entries = DatasetList(
        [
            VideoEntry("P01/P01_01.MP4", 3, start=0.2, end=1.6),
            VideoEntry("P01/P01_01.MP4", 0, start=1.9, end=None),
            VideoEntry("P02/P02_07.MP4", -1, start=None, end=4.25),
            VideoEntry("P02/P02_08.MP4", 1),
        ],
        ["a", "b", "c", "d"],
    )
    entries.write(tmp_path / "w.json")
    items = json.loads((tmp_path / "w.json").read_text())  # JSON, not CSV text
    assert items[0] == {"filename": "P01/P01_01.MP4", "label": 3, "start": 0.2, "end": 1.6}
    # unlabelled: no label; an open side written as null beside the other (a window list
    # with one of start/end is refused: only both keys say the window is open on purpose)
    assert items[2] == {"filename": "P02/P02_07.MP4", "start": None, "end": 4.25}
    back = load_videos(tmp_path / "w.json")
    assert [(e.video_id, e.label, e.start, e.end) for e in back] == [
        (e.video_id, e.label, e.start, e.end) for e in entries
    ]
    entries.write(tmp_path / "w.csv")  # other names: as before, the CSV list for windows
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = load_videos(tmp_path / "w.csv")
    assert [(e.video_id, e.label, e.start, e.end) for e in again] == [
        (e.video_id, e.label, e.start, e.end) for e in entries
    ]


# --------------------------------------------------------------------------- CLI arguments


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli_errors")
    make_video(root / "videos/a/x1.mp4", 2, width=32, height=32)
    (root / "list.txt").write_text("a/x1.mp4 0\n")
    return root


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["convert", "{v}", "{o}", "--to", "hdf5", "--crf", "20"],
         "crf apply to to='video' only (--crf with --to video), not to='hdf5': leave it out"),
        (["convert", "{v}", "{o}", "--to", "hdf5", "--gop", "4", "--tune", "film"],
         "gop, tune apply to to='video' only (--gop, --tune with --to video)"),
        (["convert", "{v}", "{o}", "--to", "video", "--quality", "50"],
         "--quality sets the stored JPEG frames; --to video stores none: leave it out"),
        (["convert", "{v}", "{o}", "--to", "video", "--subsampling", "444", "--quality", "9"],
         "--quality and --subsampling set the stored JPEG frames; --to video stores none"),
        (["convert", "{v}", "{o}", "--to", "video", "--crf", "60"],
         "argument --crf: 60.0 must be in [0, 51]"),
        (["convert", "{v}", "{o}", "--to", "hdf5", "--root", "{v}"],
         "root / --root ('{v}') applies only to an annotation list INPUT, not to a folder"),
        (["convert", "{l}", "{o}", "--to", "hdf5", "--labels", "{l}"],
         "labels / --labels ('{l}') applies to a folder INPUT only"),
        (["probe", "{v}", "--write", "{n}/counts.csv"],
         "--write ('{n}/counts.csv'): folder '{n}' does not exist"),
        (["convert", "{v}", "{o}", "--to", "npy", "--storage-option", "anon=true"],
         "--storage-option is for URLs (s3://bucket/videos); INPUT and OUTPUT are local paths"),
        (["probe", "{v}", "--storage-option", "anon=true"],
         "--storage-option is for URLs (s3://bucket/videos); INPUT is a local path"),
    ],
)  # fmt: skip
def test_a_cli_error_names_the_argument_to_change(folder, argv, said, capsys):
    names = {"v": folder / "videos", "o": folder / "out", "l": folder / "list.txt",
             "n": folder / "nowhere"}  # fmt: skip
    assert main([a.format(**names) for a in argv] + ["-q"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert said.format(**names) in err, err
    assert not (folder / "out").exists()  # refused before anything was written


def test_quality_left_out_with_video_is_not_refused(folder, tmp_path):
    assert main(["convert", str(folder / "videos"), str(tmp_path / "v"), "--to", "video",
                 "-q", "--workers", "1"]) == 0  # fmt: skip
    assert main(["convert", str(folder / "videos"), str(tmp_path / "h"), "--to", "hdf5",
                 "-q", "--workers", "1"]) == 0  # fmt: skip
    from vidload._convert.options import DEFAULT_QUALITY, DEFAULT_SUBSAMPLING

    options = json.loads((tmp_path / "h/vidload-convert.json").read_text())
    assert (options["quality"], options["subsampling"]) == (DEFAULT_QUALITY, DEFAULT_SUBSAMPLING)


def test_multi_label_without_num_classes_says_what_to_give(folder):
    from vidload import ClipDataset, VideoSource

    with pytest.raises(TypeError, match=r"num_classes must be an int, got None: "
                       r"multi_label=True needs it \(the number of classes"):  # fmt: skip
        ClipDataset([("a/x1.mp4", 0)], VideoSource(folder / "videos"), num_frames=2,
                    multi_label=True)  # fmt: skip


def test_choose_workdir_in_use_names_both_spellings(folder, tmp_path):
    pytest.importorskip("torch")
    from vidload.choose import choose

    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "mine.txt").write_text("mine\n")
    with pytest.raises(ValueError, match=r"workdir / --workdir \('.*busy'\) must be a new or "
                       r"empty folder"):  # fmt: skip
        choose(folder / "videos", workdir=tmp_path / "busy", sample=1, progress=False)
    assert (tmp_path / "busy" / "mine.txt").read_text() == "mine\n"
