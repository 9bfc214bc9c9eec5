"""The learnable sample classes (SynthSpec(actions=True)) and a smoke run of examples/train.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import av
import numpy as np
import pytest

from vidload.synth import (
    ACTIONS,
    SPEC_FILE,
    SynthSpec,
    _with_action,
    make_sample_videos,
    render_frames,
)

# minutes of servers and subprocesses: the full tier only (`pytest -m "not slow"` skips it)
pytestmark = pytest.mark.slow

TRAIN_PY = Path(__file__).parents[1] / "examples" / "train.py"


def _disc(plain: np.ndarray, marked: np.ndarray) -> tuple[float, int]:
    """(centre row, area) of the disc: the pixels where the marked frame differs from the same
    frame rendered without it."""
    rows = np.nonzero(np.any(plain != marked, axis=2))[0]
    assert rows.size > 0, "no disc drawn"
    return float(rows.mean()), int(rows.size)


@pytest.mark.parametrize("action", ACTIONS)
def test_action_discs_move_as_their_class_says(action):
    spec = SynthSpec(width=96, height=80, fps=10, seconds=1.2, actions=True)
    plain = list(render_frames(spec, np.random.default_rng(1)))
    marked = list(render_frames(spec, np.random.default_rng(1)))
    marked = list(_with_action(marked, spec, action, np.random.default_rng(2)))
    assert len(marked) == spec.num_frames == 12
    (y0, a0), (y1, a1) = _disc(plain[0], marked[0]), _disc(plain[-1], marked[-1])
    if action == "Falling":
        assert y1 - y0 > 0.35 * spec.height and abs(a1 - a0) < 0.2 * a0
    elif action == "Rising":
        assert y0 - y1 > 0.35 * spec.height and abs(a1 - a0) < 0.2 * a0
    elif action == "Growing":
        assert a1 > 8 * a0 and abs(y1 - y0) < 0.05 * spec.height
    else:
        assert a0 > 8 * a1 and abs(y1 - y0) < 0.05 * spec.height


def test_action_videos_are_named_by_action(tmp_path):
    spec = SynthSpec(num_videos=4, width=48, height=32, fps=10, seconds=0.5, actions=True)
    ids = make_sample_videos(tmp_path, spec, progress=False)
    assert [v.split("/")[0] for v in ids] == list(ACTIONS)
    assert json.loads((tmp_path / SPEC_FILE).read_text())["actions"] is True
    with av.open(str(tmp_path / ids[0])) as c:
        assert sum(1 for _ in c.decode(video=0)) == 5


def test_plain_sample_videos_keep_their_spec_file(tmp_path):
    """Folders written before `actions` existed are still recognised: the field is recorded
    only when set."""
    make_sample_videos(tmp_path, SynthSpec(num_videos=1, width=32, height=32, seconds=0.2))
    assert "actions" not in json.loads((tmp_path / SPEC_FILE).read_text())


@pytest.mark.parametrize("augment", ["none", "device"])
def test_train_example_quick_run(tmp_path, augment):
    """Run as a user runs it, in its own process (training's torch threads stay out of the
    test process, which later tests fork DataLoader workers from), with this checkout's
    vidload first on the path."""
    cmd = [sys.executable, str(TRAIN_PY), "--quick", "--data", str(tmp_path), "--workers", "0"]
    cmd += ["--augment", augment]
    repo = str(TRAIN_PY.parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([repo, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    assert "epoch 1/1: loss" in out.stdout and "test accuracy" in out.stdout
    assert "x 6 views" in out.stdout  # clips_per_video=2 x spatial_views=3, stacked
    assert ("augmenting on cpu: ClipAugment(" in out.stdout) == (augment == "device")
