"""tools/loader_defaults.py (the docs' DataLoader-recipe figures) runs end to end."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest


@pytest.fixture
def tool(monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "tools"))
    return importlib.import_module("loader_defaults")


def test_quick_run_prints_every_row_and_ratio(tool, tmp_path, capsys):
    assert tool.main(["--quick", "--work", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for row in ("0 workers", r"default \(\d+ workers\)", "prefetch 4", "not persistent"):
        assert len(re.findall(rf"^{row} +(\d+ +){{3}}\d+$", out, flags=re.M)) == 1, row
    assert "load average" in out
    assert "/ 0 workers (steady, best):" in out
    assert "prefetch 4 / prefetch 2 (steady, best):" in out
    assert "restarting workers each epoch" in out
    assert (tmp_path / "npy" / "manifest.csv").is_file()  # built under --work, kept


def test_too_few_epochs_is_refused(tool, capsys):
    with pytest.raises(SystemExit):
        tool.main(["--epochs", "1"])
    assert "--epochs must be >= 2" in capsys.readouterr().err


def test_videos_dir_of_mixed_sizes_is_converted_and_cropped(tool, tmp_path, capsys):
    from media import make_video

    videos = tmp_path / "in"
    make_video(videos / "a.mp4", 12, width=64, height=48)
    make_video(videos / "b.mp4", 12, width=96, height=64)  # another size: batches need a crop
    work = tmp_path / "work"
    args = ["--quick", "--videos", str(videos), "--work", str(work)]
    assert tool.main(args) == 0
    out = capsys.readouterr().out
    assert f"2 videos from {videos} (64x48, 96x64), npy, short_side=128, crop=112;" in out
    for row in ("0 workers", r"default \(\d+ workers\)", "prefetch 4", "not persistent"):
        assert len(re.findall(rf"^{row} +(\d+ +){{3}}\d+$", out, flags=re.M)) == 1, row
    assert (work / "videos-npy" / "manifest.csv").is_file()
    assert not (work / "npy").exists()  # nothing generated


def test_videos_that_is_not_a_folder_is_refused(tool, tmp_path):
    with pytest.raises(SystemExit, match="not a folder"):
        tool.main(["--quick", "--videos", str(tmp_path / "missing")])
