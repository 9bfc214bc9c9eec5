"""vidload.datasets: the official UCF101, HMDB51, Kinetics and SSv2 layouts built in miniature
(CRLF, a byte-order mark, HMDB51's trailing spaces, Kinetics class names with spaces, apostrophes
and parentheses in every folder naming, missing videos, webm for SSv2). Each class's videos are
painted with their own frame numbers (class k: k * 16 + frame), so every label is checked against
the pixels that came with it, through VideoSource and through a converted container."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest
from media import encode_frames, frame_number

from vidload.cli import main
from vidload.convert import convert
from vidload.dataset import ClipDataset
from vidload.datasets import DatasetList, hmdb51, kinetics, ssv2, ucf101
from vidload.manifest import load_videos, read_manifest
from vidload.sources.hdf5 import Hdf5Source
from vidload.sources.npy import NpySource
from vidload.sources.video import VideoSource

W, H, F = 64, 48, 3  # frames per video
CODEC = {".avi": "mpeg4", ".mp4": "libx264", ".mkv": "libx264", ".webm": "libvpx-vp9"}


def video(path: Path, k: int) -> None:
    """A video of class k: its frames painted k * 16 + 0, 1, 2."""
    encode_frames(path, [k * 16 + j for j in range(F)], width=W, height=H,
                  codec=CODEC[path.suffix])  # fmt: skip


def check_pixels(entries, source) -> int:
    """Every item's label is the class painted into every one of its frames; the count."""
    ds = ClipDataset(entries, source, num_frames=2, train=False, seed=0)
    for i in range(len(ds)):
        clip, label = ds[i]
        painted = {frame_number(f.permute(1, 2, 0).numpy()) // 16 for f in clip}
        assert painted == {label}, (ds.videos[i].video_id, painted, label)
    return len(ds)


def converted(entries: DatasetList, root: Path, out: Path) -> Hdf5Source:
    """The documented two-line conversion: the list written, `convert` run on it."""
    entries.write(out.parent / f"{out.name}.txt")
    report = convert(out.parent / f"{out.name}.txt", out, root=root, to="hdf5", workers=1,
                     progress=False)  # fmt: skip
    assert report.ok
    return Hdf5Source(out)


# --------------------------------------------------------------------------- UCF101

UCF_CLASSES = ["YoYo", "ApplyEyeMakeup", "HandstandPushups"]  # classInd's order, not sorted


def ucf_name(cls: str, g: int) -> str:
    stem = "HandStandPushups" if cls == "HandstandPushups" else cls  # the real files' quirk
    return f"{cls}/v_{stem}_g{g:02d}_c01.avi"


@pytest.fixture(scope="module")
def ucf(tmp_path_factory):
    root = tmp_path_factory.mktemp("ucf")
    for k, cls in enumerate(UCF_CLASSES):
        for g in (1, 2, 8):
            video(root / "UCF-101" / ucf_name(cls, g), k)
    ann = root / "ucfTrainTestlist"
    ann.mkdir()
    index = "".join(f"{k + 1} {c}\r\n" for k, c in enumerate(UCF_CLASSES))
    (ann / "classInd.txt").write_bytes(("\ufeff" + index).encode())
    train = "".join(f"{ucf_name(c, 8)} {k + 1}\r\n" for k, c in enumerate(UCF_CLASSES))
    test = "".join(f"{ucf_name(c, g)}\r\n" for c in UCF_CLASSES for g in (1, 2))
    (ann / "trainlist01.txt").write_bytes(train.encode())
    (ann / "testlist01.txt").write_bytes(test.encode())
    return root


def test_ucf101_labels_are_classind_minus_one_and_match_the_pixels(ucf, tmp_path):
    train = ucf101(ucf / "ucfTrainTestlist", split=1, subset="train")
    test = ucf101(ucf / "ucfTrainTestlist", split=1, subset="test")
    assert train.classes == tuple(UCF_CLASSES) and train.missing == ()
    assert [(e.video_id, e.label) for e in train] == [(ucf_name(c, 8), k) for k, c in
                                                      enumerate(UCF_CLASSES)]  # fmt: skip
    assert [e.label for e in test] == [0, 0, 1, 1, 2, 2]  # testlist: by the class folder
    assert check_pixels(train, VideoSource(ucf / "UCF-101")) == 3
    assert check_pixels(test, VideoSource(ucf / "UCF-101")) == 6
    assert check_pixels(test, converted(test, ucf / "UCF-101", tmp_path / "h5")) == 6
    assert repr(train) == "DatasetList(3 videos, 3 classes)"


def test_ucf101_through_the_plain_list_path_is_refused_naming_the_reader(ucf, tmp_path):
    ann = ucf / "ucfTrainTestlist"
    with pytest.raises(ValueError, match=r"trainlist01.txt: labels run from 1 \(1..3, no 0\) "
                       r"and classInd.txt is beside it.*vidload.datasets.ucf101\(.*split=1, "
                       r"subset='train'\)"):  # fmt: skip
        ClipDataset(ann / "trainlist01.txt", VideoSource(ucf / "UCF-101"))
    with pytest.raises(ValueError, match=r"testlist01.txt:1: .* has no label. classInd.txt is "
                       r"beside it.*ucf101\(.*subset='test'\)"):  # fmt: skip
        ClipDataset(ann / "testlist01.txt", VideoSource(ucf / "UCF-101"), train=False)
    renamed = tmp_path / "my_train.txt"  # a copy away from classInd.txt: read, with a warning
    shutil.copy(ann / "trainlist01.txt", renamed)
    with pytest.warns(UserWarning, match=r"labels run from 1 to 3 with no 0"):
        entries = load_videos(renamed)
    assert [e.label for e in entries] == [1, 2, 3]
    with pytest.warns(UserWarning, match=r"videos: labels run from 1 to 2 with no 0"):
        load_videos([("a.mp4", 1), ("b.mp4", 2)])  # wherever they come from


def test_ucf101_errors_name_the_file_and_line(ucf, tmp_path):
    ann = tmp_path / "ann"
    shutil.copytree(ucf / "ucfTrainTestlist", ann)
    (ann / "trainlist02.txt").write_text(f"{ucf_name('YoYo', 1)} 1\n{ucf_name('YoYo', 2)} 3\n")
    with pytest.raises(ValueError, match=r"trainlist02.txt:2: .* has label 3, but classInd.txt "
                       r"numbers its class 'YoYo' 1"):  # fmt: skip
        ucf101(ann, split=2)
    (ann / "trainlist03.txt").write_text("Nope/v_Nope_g01_c01.avi 1\n")
    with pytest.raises(ValueError, match=r"trainlist03.txt:1: 'Nope/.*not in a class folder"):
        ucf101(ann, split=3)
    with pytest.raises(FileNotFoundError, match=r"testlist04.txt' is not a file"):
        ucf101(ann, split=4, subset="test")
    with pytest.raises(ValueError, match=r"subset \('val'\) must be one of \('train', 'test'\)"):
        ucf101(ann, subset="val")
    with pytest.raises(ValueError, match=r"split \(0\) must be an int >= 1"):
        ucf101(ann, split=0)
    (ann / "classInd.txt").write_text("1 YoYo\n3 ApplyEyeMakeup\n")
    with pytest.raises(ValueError, match=r"classInd.txt: class numbers .* without gaps"):
        ucf101(ann)


def test_ucf101_classes_pins_the_numbering(ucf):
    pinned = ["ApplyEyeMakeup", "HandstandPushups", "YoYo", "Other"]
    train = ucf101(ucf / "ucfTrainTestlist", classes=pinned)
    assert train.classes == tuple(pinned) and [e.label for e in train] == [2, 0, 1]
    with pytest.raises(ValueError, match=r"class\(es\) 'YoYo' are not in classes="):
        ucf101(ucf / "ucfTrainTestlist", classes=["ApplyEyeMakeup", "HandstandPushups"])


def test_labels_classind_for_convert_and_probe(ucf, tmp_path):
    index = ucf / "ucfTrainTestlist" / "classInd.txt"
    out = tmp_path / "npy"
    assert main(["convert", str(ucf / "UCF-101"), str(out), "--to", "npy", "--workers", "1",
                 "--labels", str(index)]) == 0  # fmt: skip
    rows = read_manifest(out / "manifest.csv")
    assert {r.video_id.split("/")[0]: r.label for r in rows} == {"YoYo": 0, "ApplyEyeMakeup": 1,
                                                                 "HandstandPushups": 2}  # fmt: skip
    assert (out / "classes.txt").read_text().split("\n")[:3] == UCF_CLASSES
    assert check_pixels(out / "manifest.csv", NpySource(out)) == 9
    written = tmp_path / "probe.csv"
    assert main(["probe", str(ucf / "UCF-101"), "--workers", "1", "--labels", str(index),
                 "--write", str(written)]) in (0, 1)  # fmt: skip
    assert [r.label for r in read_manifest(written)] == [r.label for r in rows]


# --------------------------------------------------------------------------- HMDB51

HMDB_CLASSES = ["brush_hair", "cartwheel", "pour"]  # sorted: labels 0, 1, 2


@pytest.fixture(scope="module")
def hmdb(tmp_path_factory):
    root = tmp_path_factory.mktemp("hmdb")
    splits = root / "testTrainMulti_7030_splits"
    splits.mkdir()
    for k, cls in enumerate(HMDB_CLASSES):
        tags = {f"{cls}_a_u_nm_np1_fr_goo_0.avi": 1, f"{cls}_b_u_nm_np1_fr_goo_1.avi": 2,
                f"{cls}_c_u_nm_np1_fr_goo_2.avi": 0}  # fmt: skip
        for name, tag in tags.items():
            if tag:  # the unused video is not even there
                video(root / "videos" / cls / name, k)
        # the official files: a trailing space on every line
        text = "".join(f"{name} {tag} \n" for name, tag in tags.items())
        (splits / f"{cls}_test_split1.txt").write_text(text)
        (splits / f"{cls}_test_split2.txt").write_text(text.replace(" 1 \n", " 9 \n"))
    return root


def test_hmdb51_reads_the_tags_as_subsets_and_the_sorted_classes_as_labels(hmdb, tmp_path):
    splits = hmdb / "testTrainMulti_7030_splits"
    train = hmdb51(splits, split=1, subset="train")
    test = hmdb51(splits, split=1, subset="test")
    assert train.classes == tuple(HMDB_CLASSES)
    assert [(e.video_id, e.label) for e in train] == [
        (f"{c}/{c}_a_u_nm_np1_fr_goo_0.avi", k) for k, c in enumerate(HMDB_CLASSES)
    ]
    assert [e.label for e in test] == [0, 1, 2] and all("_b_" in e.video_id for e in test)
    assert check_pixels(train, VideoSource(hmdb / "videos")) == 3
    assert check_pixels(test, converted(test, hmdb / "videos", tmp_path / "h5")) == 3


def test_hmdb51_split_file_through_the_plain_list_path_is_refused(hmdb):
    split = hmdb / "testTrainMulti_7030_splits" / "pour_test_split1.txt"
    for source in (VideoSource(hmdb / "videos"), VideoSource(hmdb / "videos" / "pour")):
        with pytest.raises(ValueError, match=r"pour_test_split1.txt: an HMDB51 split file "
                           r"\('pour', split 1\).*split tags.*vidload.datasets.hmdb51\(.*"
                           r"split=1, subset='train'\)"):  # fmt: skip
            ClipDataset(split, source)


def test_hmdb51_errors(hmdb, tmp_path):
    splits = hmdb / "testTrainMulti_7030_splits"
    with pytest.raises(
        ValueError, match=r"brush_hair_test_split2.txt:1: .* is not `<video> <tag>`"
    ):
        hmdb51(splits, split=2)
    with pytest.raises(FileNotFoundError, match=r"holds no <class>_test_split3.txt file"):
        hmdb51(splits, split=3)
    pinned = hmdb51(splits, classes=["pour", "cartwheel", "brush_hair"])
    assert [e.label for e in pinned] == [2, 1, 0]


# --------------------------------------------------------------------------- Kinetics

K_CLASSES = sorted(["air drumming", "passing American football (not in game)",
                    "massaging person's head", "tossing coin"])  # fmt: skip
NAMINGS = {  # how each layout names a class's folder (None: all videos in the root)
    "as in the CSV": lambda c: c,
    "spaces to _": lambda c: c.replace(" ", "_"),
    "mmaction2's renaming": lambda c: (
        c.replace(" ", "_").replace("'", "").replace("(", "").replace(")", "")
    ),
    "flat": None,
}


def k_rows(cls: str, k: int) -> list[tuple[str, int, int, bool]]:
    """(youtube_id, start, end, there) rows of class k: two there, one missing."""
    return [(f"-y{k}a_", 10, 20, True), (f"y{k}b", 0, 10, True), (f"y{k}gone", 5, 15, False)]


@pytest.fixture(scope="module")
def kin(tmp_path_factory):
    root = tmp_path_factory.mktemp("kinetics")
    made = root / "made"
    for k, cls in enumerate(K_CLASSES):
        for j, (yid, t0, t1, there) in enumerate(k_rows(cls, k)):
            if there:
                ext = ".mkv" if (k, j) == (0, 1) else ".mp4"  # any video extension
                video(made / f"{yid}_{t0:06d}_{t1:06d}{ext}", k)
    lines = ["label,youtube_id,time_start,time_end,split,is_cc"]
    for k, cls in enumerate(K_CLASSES):
        for yid, t0, t1, _ in k_rows(cls, k):
            name = f'"{cls}"' if "," in cls else cls
            lines.append(f"{name},{yid},{t0},{t1},train,0")
    (root / "train.csv").write_text("\ufeff" + "\r\n".join(lines) + "\r\n")
    for naming, folder in NAMINGS.items():
        for k, cls in enumerate(K_CLASSES):
            for f in made.glob(f"*y{k}*"):
                dest = root / naming / (folder(cls) if folder else "") / f.name
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(f, dest)
    return root


@pytest.mark.parametrize("naming", list(NAMINGS))
def test_kinetics_finds_every_naming_and_counts_the_missing(kin, naming, tmp_path):
    with pytest.warns(UserWarning, match=r"train.csv: 4 of the 12 listed videos are not under "
                      r".*left out, named in .missing"):  # fmt: skip
        train = kinetics(kin / "train.csv", root=kin / naming)
    assert train.classes == tuple(K_CLASSES)
    assert [e.label for e in train] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert sorted(train.missing) == sorted(f"{c}/y{k}gone_000005_000015"
                                           for k, c in enumerate(K_CLASSES))  # fmt: skip
    folder = NAMINGS[naming]
    for e in train:
        expected = folder(K_CLASSES[e.label]) + "/" if folder else ""
        assert e.video_id.startswith(expected) and "/" not in e.video_id[len(expected) :]
    assert check_pixels(train, VideoSource(kin / naming)) == 8
    if naming == "mmaction2's renaming":
        assert check_pixels(train, converted(train, kin / naming, tmp_path / "h5")) == 8


def test_kinetics_classes_pins_a_filtered_csv_and_a_test_csv_is_unlabelled(kin, tmp_path):
    rows = (kin / "train.csv").read_text().lstrip("\ufeff").splitlines()
    filtered = tmp_path / "tossing.csv"
    filtered.write_text("\n".join([rows[0]] + [r for r in rows if r.startswith("tossing")]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the missing row
        alone = kinetics(filtered, root=kin / "spaces to _")
        pinned = kinetics(filtered, root=kin / "spaces to _", classes=K_CLASSES)
    assert [e.label for e in alone] == [0, 0] and alone.classes == ("tossing coin",)
    assert [e.label for e in pinned] == [3, 3] and pinned.classes == tuple(K_CLASSES)
    (tmp_path / "classes.txt").write_text("\n".join(K_CLASSES) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from_file = kinetics(filtered, root=kin / "flat", classes=tmp_path / "classes.txt")
    assert [e.label for e in from_file] == [3, 3]
    check_pixels(pinned, VideoSource(kin / "spaces to _"))
    test_csv = tmp_path / "test.csv"
    test_csv.write_text("youtube_id,time_start,time_end,split\ny3b,0,10,test\n-y0a_,10,20,test\n")
    test = kinetics(test_csv, root=kin / "flat")
    assert [(e.video_id, e.label) for e in test] == [("y3b_000000_000010.mp4", -1),
                                                    ("-y0a__000010_000020.mp4", -1)]  # fmt: skip
    assert test.classes == () and test.missing == ()
    # rows are read as far as they go, as published files are: one without its trailing
    # split cell, one with a cell more than the header
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("youtube_id,time_start,time_end,split\ny3b,0,10\n-y0a_,10,20,test,0\n")
    assert [e.video_id for e in kinetics(ragged, root=kin / "flat")] == [
        "y3b_000000_000010.mp4",
        "-y0a__000010_000020.mp4",
    ]
    ds = ClipDataset(test, VideoSource(kin / "flat"), num_frames=2, train=True, seed=0)
    assert ds[0][1] == -1  # unlabelled training: self-supervised pretraining


def test_kinetics_errors(kin, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("label,youtube_id,start\nx,y,1\n")
    with pytest.raises(ValueError, match=r"bad.csv:1: a Kinetics CSV .* lacks \['time_start', "):
        kinetics(bad, root=kin / "flat")
    bad.write_text("label,youtube_id,time_start,time_end\nx,y,soon,2\n")
    with pytest.raises(ValueError, match=r"bad.csv:2: not a Kinetics row"):
        kinetics(bad, root=kin / "flat")
    bad.write_text("label,youtube_id,time_start,time_end,split\nx,y,1\n")  # no time_end
    with pytest.raises(ValueError, match=r"bad.csv:2: not a Kinetics row"):
        kinetics(bad, root=kin / "flat")
    with pytest.raises(ValueError, match=r"class\(es\) 'air drumming'.* are not in classes="):
        kinetics(kin / "train.csv", root=kin / "flat", classes=["tossing coin"])


# --------------------------------------------------------------------------- SSv2


@pytest.fixture(scope="module")
def sth(tmp_path_factory):
    root = tmp_path_factory.mktemp("ssv2")
    labels = {"Pushing something from left to right": "0", "Holding something next to "
              "something": "1", "Approaching something with your camera": "2"}  # fmt: skip
    (root / "something-something-v2-labels.json").write_text(json.dumps(labels))
    train = [
        {"id": "101", "label": "holding potato next to vicks vaporub bottle",
         "template": "Holding [something] next to [something]", "placeholders": ["potato", "x"]},
        {"id": "7", "label": "pushing pen from left to right",
         "template": "Pushing [something] from left to right", "placeholders": ["pen"]},
        {"id": "55", "label": "approaching a cup with your camera",
         "template": "Approaching [something] with your camera", "placeholders": ["a cup"]},
    ]  # fmt: skip
    (root / "something-something-v2-train.json").write_text(json.dumps(train))
    (root / "something-something-v2-test.json").write_text(json.dumps([{"id": "7"}]))
    for item, k in zip(train, (1, 0, 2), strict=True):
        video(root / "20bn-something-something-v2" / f"{item['id']}.webm", k)
    return root


def test_ssv2_labels_by_template_and_the_pixels(sth, tmp_path):
    labels = sth / "something-something-v2-labels.json"
    train = ssv2(labels, sth / "something-something-v2-train.json")
    assert [(e.video_id, e.label) for e in train] == [("101.webm", 1), ("7.webm", 0),
                                                     ("55.webm", 2)]  # fmt: skip
    assert train.classes[1] == "Holding something next to something"
    videos = sth / "20bn-something-something-v2"
    assert check_pixels(train, VideoSource(videos)) == 3
    assert check_pixels(train, converted(train, videos, tmp_path / "h5")) == 3
    test = ssv2(labels, sth / "something-something-v2-test.json")
    assert [(e.video_id, e.label) for e in test] == [("7.webm", -1)]


def test_ssv2_errors(sth, tmp_path):
    labels = sth / "something-something-v2-labels.json"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"id": "1", "template": "Dropping [something]"}]))
    with pytest.raises(ValueError, match=r"bad.json: entry 0: template 'Dropping something' is "
                       r"not in .*labels.json"):  # fmt: skip
        ssv2(labels, bad)
    bad.write_text(json.dumps([{"template": "x"}]))
    with pytest.raises(ValueError, match=r"bad.json: entry 0: .* has no 'id'"):
        ssv2(labels, bad)
    (tmp_path / "labels.json").write_text(json.dumps({"a": "0", "b": "2"}))
    with pytest.raises(ValueError, match=r"labels.json: the labels must be 0..1, each once"):
        ssv2(tmp_path / "labels.json", bad)
    with pytest.raises(FileNotFoundError, match=r"nope.json' is not a file"):
        ssv2(labels, tmp_path / "nope.json")


# --------------------------------------------------------------------------- plain lists


def test_paths_with_spaces_and_string_labels(tmp_path):
    lst = tmp_path / "train.txt"
    lst.write_text("air drumming/x 1.mp4 3\n  tossing  coin/y.mkv   0 \nrolling pin/frames 250 2\n"
                   "with offset/dir 10 250 1\n")  # fmt: skip
    entries = load_videos(lst)
    assert [(e.video_id, e.label, e.known_frames, e.offset) for e in entries] == [
        ("air drumming/x 1.mp4", 3, None, 0),
        ("tossing  coin/y.mkv", 0, None, 0),
        ("rolling pin/frames", 2, 250, 0),  # a rawframes path: what precedes the integers
        ("with offset/dir", 1, 250, 10),
    ]
    named = tmp_path / "named.txt"
    named.write_text("air drumming/x.mp4 air drumming\nb/y.mp4 tossing coin\n")
    classes = {"tossing coin": 0, "air drumming": 1}
    assert [e.label for e in load_videos(named, classes=classes)] == [1, 0]
    with pytest.raises(
        ValueError,
        match=r"named.txt:1: label \('air drumming'\) is not an integer \(a class name needs",
    ):
        load_videos(named)
    with pytest.raises(ValueError, match=r"named.txt:2: label 'tossing coin' is not an integer "
                       r"nor a class name"):  # fmt: skip
        load_videos(named, classes={"air drumming": 0})
    items = load_videos([("a/x.mp4", "air drumming")], classes=classes)
    assert items[0].label == 1
    with pytest.raises(ValueError, match=r"videos\[0\] .* label 'dog' is not a class name"):
        load_videos([("a/x.mp4", "dog")], classes=classes)


def test_numbered_class_files(tmp_path):
    from vidload.labels import read_class_map

    path = tmp_path / "classInd.txt"
    path.write_text("1 air drumming\r\n2 tossing coin\r\n")
    assert read_class_map(path) == {"air drumming": 0, "tossing coin": 1}
    path.write_text("0 a\n1 b\n")
    assert read_class_map(path) == {"a": 0, "b": 1}
    path.write_text("1 a\n1 b\n")
    with pytest.raises(ValueError, match=r"classInd.txt.*number 1 is given twice"):
        read_class_map(path)


def test_a_dataset_list_round_trips_through_write(tmp_path):
    windows = DatasetList(
        [load_videos([("a/x.mp4", 0, 1.5, 3.0)])[0], load_videos([("b/y.mp4", 1)])[0]], ["a", "b"]
    )
    windows.write(tmp_path / "w.csv")
    back = load_videos(tmp_path / "w.csv")
    assert [(e.video_id, e.label, e.start, e.end) for e in back] == [
        ("a/x.mp4", 0, 1.5, 3.0),
        ("b/y.mp4", 1, None, None),
    ]


def test_kinetics_and_ssv2_files_through_the_plain_list_path_name_their_reader(kin, sth):
    with pytest.raises(ValueError, match=r"train.csv: a Kinetics CSV .*vidload.datasets.kinetics"):
        ClipDataset(kin / "train.csv", VideoSource(kin / "flat"))
    for name in ("train", "test"):
        with pytest.raises(ValueError, match=r"entry 0: has neither 'filename' nor 'frame_dir'.*"
                           r"Something-Something v2 .*vidload.datasets.ssv2"):  # fmt: skip
            ClipDataset(sth / f"something-something-v2-{name}.json", VideoSource(sth))
    with pytest.raises(ValueError, match=r"is a list, got dict. A JSON object.*datasets.ssv2"):
        ClipDataset(sth / "something-something-v2-labels.json", VideoSource(sth))
