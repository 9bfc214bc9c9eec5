"""A class folder tree converted without `--labels` warns, naming `--labels`, when its sorted
folder names may not be the numbering the user expects (issue 31): a class list file in the
folder, beside it or in a folder beside it (UCF101's `ucfTrainTestlist/classInd.txt`) numbers
the classes otherwise, or the raw character order differs from a case-insensitive one
(`HammerThrow` before `Hammering`). A class list that agrees, or another dataset's, is silent."""

from __future__ import annotations

import warnings

import pytest
from media import make_video

from vidload.convert import convert
from vidload.manifest import read_manifest
from vidload.probe import probe


def _tree(root, classes):
    for cls in classes:
        make_video(root / "UCF-101" / cls / f"v_{cls}_g01_c01.mp4", 2, width=32, height=32)
    return root / "UCF-101"


def _convert(tree, out, **kw):
    return convert(tree, out, to="npy", workers=1, progress=False, **kw)


def _labels(out) -> dict[str, int]:
    return {r.video_id.split("/")[0]: r.label for r in read_manifest(out / "manifest.csv")}


def test_class_ind_beside_the_tree_that_numbers_otherwise_warns(tmp_path):
    tree = _tree(tmp_path, ["Hammering", "HammerThrow", "Archery"])
    (tmp_path / "ucfTrainTestlist").mkdir()
    ind = tmp_path / "ucfTrainTestlist/classInd.txt"
    ind.write_text("1 Archery\r\n2 Hammering\r\n3 HammerThrow\r\n")  # case-insensitive order
    with pytest.warns(UserWarning, match=r"INPUT \('.*UCF-101'\): its 3 class folders are "
                      r"labelled by their sorted names, but .*classInd.txt numbers them "
                      r"otherwise \('HammerThrow' is 2 there, 1 here\): pass --labels "
                      r".*classInd.txt") as said:  # fmt: skip
        _convert(tree, tmp_path / "out")
    assert any("'HammerThrow' comes before 'Hammering'" in str(w.message) for w in said)
    labels = _labels(tmp_path / "out")
    assert labels == {"Archery": 0, "HammerThrow": 1, "Hammering": 2}  # as before: a warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # --labels given: nothing to say
        _convert(tree, tmp_path / "pinned", labels=ind)
    labels = _labels(tmp_path / "pinned")
    assert labels == {"Archery": 0, "Hammering": 1, "HammerThrow": 2}


def test_the_raw_and_case_insensitive_orders_differ_without_a_class_file(tmp_path):
    tree = _tree(tmp_path, ["Hammering", "HammerThrow"])
    with pytest.warns(UserWarning, match=r"sorted by raw character order, 'HammerThrow' comes "
                      r"before 'Hammering' \(upper case first\).*pass --labels FILE"):  # fmt: skip
        probe(tree, workers=1, progress=False)


@pytest.mark.parametrize("where", ["in", "beside"])
def test_a_class_file_that_agrees_or_names_other_classes_is_silent(tmp_path, where):
    tree = _tree(tmp_path, ["abseiling", "juggling"])
    folder = tree if where == "in" else tmp_path
    (folder / "classes.txt").write_text("abseiling\njuggling\n")  # the same numbering
    (folder / "other.txt").write_text("1 cat\n2 dog\n")  # another dataset's classes
    (folder / "trainlist01.txt").write_text("abseiling/v_abseiling_g01_c01.mp4 1\n")  # a list
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _convert(tree, tmp_path / "out")


def test_a_numbered_txt_of_any_name_counts(tmp_path):
    tree = _tree(tmp_path, ["abseiling", "juggling"])
    (tmp_path / "my_classes_v2.txt").write_text("0 juggling\n1 abseiling\n")
    with pytest.warns(UserWarning, match=r"my_classes_v2.txt numbers them otherwise "
                      r"\('abseiling' is 1 there, 0 here\)"):  # fmt: skip
        _convert(tree, tmp_path / "out")


def test_a_class_file_that_cannot_be_read_is_skipped(tmp_path, monkeypatch):
    import vidload.labels as labels
    from vidload.errors import VideoReadError

    tree = _tree(tmp_path, ["Archery", "Bowling"])
    (tmp_path / "classInd.txt").write_text("1 Bowling\n2 Archery\n")
    read = labels.read_class_map

    def unreadable(path, *args, **kwargs):  # as a file of another user's reads (EACCES)
        if str(path).endswith("classInd.txt"):
            raise VideoReadError(path, "cannot open: [Errno 13] Permission denied")
        return read(path, *args, **kwargs)

    monkeypatch.setattr(labels, "read_class_map", unreadable)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # skipped: nothing to say, nothing raised
        _convert(tree, tmp_path / "out")
    assert _labels(tmp_path / "out") == {"Archery": 0, "Bowling": 1}
