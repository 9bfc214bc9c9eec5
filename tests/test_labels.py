"""Labels from class folders (`vidload.labels`), classes.txt, `--labels FILE`, and the
unlabelled-training error."""

from __future__ import annotations

from pathlib import Path

import pytest
from media import make_video

from vidload.cli import main
from vidload.convert import convert
from vidload.dataset import ClipDataset
from vidload.labels import folder_class_map, read_class_map, write_classes
from vidload.manifest import read_manifest
from vidload.probe import probe
from vidload.sources.hdf5 import Hdf5Source
from vidload.sources.video import VideoSource

W, H = 64, 48


def make_tree(folder: Path, classes: list[str], per_class: int = 1) -> Path:
    for name in classes:
        for k in range(per_class):
            make_video(folder / name / f"v{k}.mp4", 6, width=W, height=H)
    return folder


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    base = tmp_path_factory.mktemp("labels")
    train = make_tree(base / "train", ["zumba", "abseiling", "air drumming"])
    val = make_tree(base / "val", ["zumba", "abseiling"])  # a class is missing here
    return train, val


def test_folder_class_map_sorts_top_level_names():
    ids = ["b/x.mp4", "a/deep/y.mp4", "top.mp4", "b/z.mp4"]
    assert folder_class_map(ids) == {"a": 0, "b": 1}


def test_convert_labels_by_class_folder_and_labels_file_fixes_the_mapping(trees, tmp_path):
    train, val = trees
    out = tmp_path / "train_h5"
    convert(train, out, to="hdf5", workers=1, progress=False)
    classes = (out / "classes.txt").read_text().splitlines()
    assert classes == ["abseiling", "air drumming", "zumba"]
    ds = ClipDataset(out / "manifest.csv", Hdf5Source(out), num_frames=2, train=True, seed=0)
    got = {e.video_id: e.label for e in ds.videos}
    assert got == {"abseiling/v0.mp4": 0, "air drumming/v0.mp4": 1, "zumba/v0.mp4": 2}
    assert [ds[i][1] for i in range(len(ds))] == [0, 1, 2]

    # the val tree alone would number its two classes 0, 1; --labels keeps the train mapping
    alone = convert(val, tmp_path / "val_alone", to="npy", workers=1, progress=False)
    assert {r.video_id: r.label for r in alone.rows}["zumba/v0.mp4"] == 1
    val_out = tmp_path / "val_h5"
    code = main(["convert", str(val), str(val_out), "--to", "hdf5", "--workers", "1", "-q",
                 "--labels", str(out / "classes.txt")])  # fmt: skip
    assert code == 0
    rows = {r.video_id: r.label for r in read_manifest(val_out / "manifest.csv")}
    assert rows == {"abseiling/v0.mp4": 0, "zumba/v0.mp4": 2}
    assert (val_out / "classes.txt").read_text().splitlines() == classes

    # an annotation list works as the labels file too
    listing = tmp_path / "train.txt"
    listing.write_text("zumba/v0.mp4 7\nabseiling/v9.mp4 3\n")
    again = convert(val, tmp_path / "val_list", to="npy", workers=1, progress=False,
                    labels=listing)  # fmt: skip
    assert {r.video_id: r.label for r in again.rows} == {
        "abseiling/v0.mp4": 3,
        "zumba/v0.mp4": 7,
    }
    assert not (tmp_path / "val_list" / "classes.txt").exists()  # labels 3, 7: not 0..n-1


def test_labels_file_missing_a_class_is_an_error(trees, tmp_path):
    train, _ = trees
    labels = tmp_path / "classes.txt"
    labels.write_text("zumba\nabseiling\n")
    with pytest.raises(ValueError, match=r"'air drumming' are not in labels"):
        convert(train, tmp_path / "o", to="npy", workers=1, progress=False, labels=labels)


def test_probe_write_labels_and_classes_txt(trees, tmp_path, capsys):
    train, _ = trees
    manifest = tmp_path / "m" / "manifest.csv"
    manifest.parent.mkdir()
    assert main(["probe", str(train), "--write", str(manifest), "--workers", "1", "-q"]) == 0
    assert "classes:" in capsys.readouterr().out
    assert [r.label for r in read_manifest(manifest)] == [0, 1, 2]
    assert (manifest.parent / "classes.txt").read_text() == "abseiling\nair drumming\nzumba\n"
    ds = ClipDataset(manifest, VideoSource(train), num_frames=2, train=True, seed=0)
    assert ds[2][1] == 2
    rows = probe(train, workers=1, progress=False, labels=manifest.parent / "classes.txt")
    assert [r.label for r in rows] == [0, 1, 2]


def test_labels_refused_for_a_list_input(trees, tmp_path):
    train, _ = trees
    listing = train / "list.txt"
    listing.write_text("zumba/v0.mp4 0\n")
    try:
        with pytest.raises(ValueError, match="applies to a folder INPUT only"):
            probe(listing, workers=1, progress=False, labels=listing)
    finally:
        listing.unlink()


def test_read_class_map_formats(tmp_path):
    names = tmp_path / "label_map.txt"
    names.write_text("# kinetics\nabseiling\n\nair drumming\n")
    assert read_class_map(names) == {"abseiling": 0, "air drumming": 1}
    twice = tmp_path / "twice.txt"
    twice.write_text("a\na\n")
    with pytest.raises(ValueError, match="'a' is named twice"):
        read_class_map(twice)
    clash = tmp_path / "clash.txt"
    clash.write_text("a/x.mp4 0\na/y.mp4 1\n")
    with pytest.raises(ValueError, match="folder 'a' has labels 0 and 1"):
        read_class_map(clash)
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        read_class_map(tmp_path / "nope.txt")
    write_classes(tmp_path / "c.txt", {"b": 1, "a": 0})
    assert read_class_map(tmp_path / "c.txt") == {"a": 0, "b": 1}
    with pytest.raises(ValueError, match="must be 0..1"):
        write_classes(tmp_path / "c.txt", {"b": 3, "a": 0})


def test_training_on_unlabelled_videos_gives_label_minus_one(tmp_path):
    make_video(tmp_path / "x.mp4", 6, width=W, height=H)  # no class folder: unlabelled
    out = tmp_path / "out"
    convert(tmp_path / "x.mp4", out, to="npy", workers=1, progress=False)
    manifest = out / "manifest.csv"
    assert read_manifest(manifest)[0].label is None
    assert not (out / "classes.txt").exists()
    for train in (True, False):  # self-supervised pretraining trains on unlabelled videos
        ds = ClipDataset(manifest, VideoSource(tmp_path), num_frames=2, train=train, seed=0)
        clip, label = ds[0]
        assert label == -1 and clip.shape == (2, 3, H, W)
