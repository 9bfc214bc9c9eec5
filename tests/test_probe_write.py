"""`vidload probe --write DIR/counts.csv` never replaces a file it did not write (issue 31):
a `classes.txt` of the user's in DIR, or a --write path that is not a vidload manifest, is
refused naming the file and `--overwrite`; with `--overwrite`, or when the file holds what
probe would write, it is written."""

from __future__ import annotations

import pytest
from media import make_video

from vidload.cli import main
from vidload.manifest import read_manifest


@pytest.fixture
def tree(tmp_path):
    for cls, name in (("b_class", "x1"), ("a_class", "y1")):
        make_video(tmp_path / "videos" / cls / f"{name}.mp4", 3, width=32, height=32)
    (tmp_path / "out").mkdir()
    return tmp_path


def _probe(tree, *extra) -> int:
    return main(["probe", str(tree / "videos"), "--write", str(tree / "out/counts.csv"), "-q",
                 "--workers", "1", *extra])  # fmt: skip


def test_a_classes_txt_of_the_users_is_not_replaced(tree, capsys):
    mine = tree / "out/classes.txt"
    mine.write_text("my notes about the classes\n")
    assert _probe(tree) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"{mine} exists and names other classes than this INPUT's" in err
    assert "pass --overwrite to replace it, or --write elsewhere" in err
    assert mine.read_text() == "my notes about the classes\n"
    assert not (tree / "out/counts.csv").exists()  # nothing written: the run was refused
    assert _probe(tree, "--overwrite") == 0
    assert mine.read_text() == "a_class\nb_class\n"
    assert [(r.video_id, r.label) for r in read_manifest(tree / "out/counts.csv")] == [
        ("a_class/y1.mp4", 0),
        ("b_class/x1.mp4", 1),
    ]


def test_what_probe_wrote_is_written_again(tree, capsys):
    assert _probe(tree) == 0
    first = (tree / "out/classes.txt").read_bytes()
    assert _probe(tree) == 0  # its own classes.txt and manifest: a rerun replaces them
    assert (tree / "out/classes.txt").read_bytes() == first


def test_a_write_path_that_is_not_a_manifest_is_refused(tree, capsys):
    listed = tree / "out/counts.csv"
    listed.write_text("a_class/y1.mp4 0\nb_class/x1.mp4 1\n")  # the user's annotation list
    assert _probe(tree) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"{listed} exists and is not a vidload manifest: pass --overwrite" in err
    assert listed.read_text() == "a_class/y1.mp4 0\nb_class/x1.mp4 1\n"
    assert _probe(tree, "--overwrite") == 0
    assert len(read_manifest(listed)) == 2
