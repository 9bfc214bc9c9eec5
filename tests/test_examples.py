"""Smoke runs of the examples that test_train_example.py does not cover (in this process)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
from media import make_video

EXAMPLES = Path(__file__).parents[1] / "examples"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_video_folder_batches_videos_of_different_sizes(tmp_path, capsys):
    # "any folder of videos": sizes differ (as in ../shared/videos), classes are folders
    make_video(tmp_path / "a" / "x.mp4", 12, width=64, height=48)
    make_video(tmp_path / "b" / "y.mp4", 12, width=48, height=64)
    argv = [str(tmp_path), "--workers", "0", "--num-frames", "4", "--short-side", "40"]
    assert _load("video_folder").main([*argv, "--crop", "32"]) == 0
    out = capsys.readouterr().out
    assert "batch (2, 4, 3, 32, 32) torch.uint8 labels" in out
    assert "2 clips in" in out


def test_ray_example_says_what_it_needs_without_ray(tmp_path):
    if importlib.util.find_spec("ray") is not None:
        pytest.skip("ray is installed")
    with pytest.raises(SystemExit, match=r"needs Ray \(`pip install ray`\)"):
        _load("ray_executor").main([str(tmp_path), str(tmp_path / "out"), "--to", "hdf5"])


@pytest.mark.slow
def test_quickstart_reads_the_same_clips_from_videos_and_hdf5(tmp_path, capsys):
    argv = ["--data", str(tmp_path), "--num-videos", "1", "--workers", "0"]
    assert _load("quickstart").main(argv) == 0
    out = capsys.readouterr().out
    assert "1 converted, 0 already done, 0 failed" in out
    assert out.count("batch: clip (1, 8, 3, 240, 320) torch.uint8, label (1,)") == 2
