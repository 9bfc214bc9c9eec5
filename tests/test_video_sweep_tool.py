"""tools/video_sweep.py runs end to end on a tiny configuration (its figures are not checked:
speed is never a test's business); its JSON rows are the table it prints."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from media import make_video

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import video_sweep  # noqa: E402


@pytest.mark.slow
def test_tiny_sweep(tmp_path, capsys):
    make_video(tmp_path / "in/a/x.mp4", 20, options={"g": "20", "bf": "2"})
    make_video(tmp_path / "in/b/y.avi", 12, codec="mpeg4")
    out = tmp_path / "sweep.json"
    argv = ["--videos", str(tmp_path / "in"), "--grid", "libx264:4:20:ultrafast:none",
            "--clips", "4", "--rounds", "1", "--min-time", "0.01",
            "--json", str(out), "-q"]  # fmt: skip
    assert video_sweep.main(argv) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [r["storage"] for r in rows] == ["originals", "libx264 gop4 crf20 ultrafast"]
    conv = rows[1]
    assert conv["psnr_db"] > 30 and conv["bytes_ratio"] > 0 and conv["clips_per_s_per_core"] > 0
    assert conv["vs_originals"] == conv["clips_per_s_per_core"] / rows[0]["clips_per_s_per_core"]
    text = capsys.readouterr().out
    assert (
        f"| in | libx264 gop4 crf20 ultrafast | {conv['convert_frames_per_s_per_core']:.0f} |"
        in text
    )
