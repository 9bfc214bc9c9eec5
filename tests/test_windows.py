"""Windows of long videos: `(video_id, label, start, end)` entries, seconds from the video's first
frame, [start, end). Checked on a variable-frame-rate video whose stream starts at a non-zero
time, by the frame numbers painted into the pixels: every frame of every clip, in every sampling
mode, lies inside its window; two windows of one file learn their counts apart."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
import torch
from media import encode_frames, frame_number

from vidload.convert import convert
from vidload.dataset import ClipDataset
from vidload.errors import VideoReadError
from vidload.manifest import load_videos
from vidload.sources.hdf5 import Hdf5Source
from vidload.sources.video import VideoSource

W, H, N = 64, 48, 60
GAPS_MS = [20, 40, 60, 100]  # a very uneven variable frame rate
START_MS = 1400  # the stream's first pts: a non-zero start time


def times_ms(n: int) -> list[int]:
    out, t = [], START_MS
    for i in range(n):
        out.append(t)
        t += GAPS_MS[i % len(GAPS_MS)]
    return out


#: frame i's time from the first frame, as windows count
REL_S = (np.array(times_ms(N)) - START_MS) / 1000.0
WINDOWS = [(0.5, 1.3), (1.3, 2.2), (2.9, 3.0)]


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    root = tmp_path_factory.mktemp("windows")
    encode_frames(root / "in/long.mp4", range(N), pts=times_ms(N),
                  time_base=Fraction(1, 1000), width=W, height=H)  # fmt: skip
    assert convert(root / "in", root / "h5", to="hdf5", workers=1, progress=False).ok
    return {"video": VideoSource(root / "in"), "hdf5": Hdf5Source(root / "h5")}


def numbers(clip: torch.Tensor) -> list[int]:
    return [frame_number(f.permute(1, 2, 0).numpy()) for f in clip]


def inside(start: float, end: float) -> list[int]:
    return [i for i in range(N) if start - 1e-9 <= REL_S[i] < end - 1e-9]


MODES = [
    {"sampling": "segment", "train": True},
    {"sampling": "segment", "train": False, "clips_per_video": 3},
    {"sampling": "consecutive", "train": True, "stride": 2},
    {"sampling": "consecutive", "train": False, "clips_per_video": 2},
    {"fps": 10.0, "train": True},
    {"fps": 10.0, "train": False, "clips_per_video": 2},
    {"clip_seconds": 0.4, "train": True},
    {"clip_seconds": 0.4, "train": False, "clips_per_video": 3},
    {"train": False, "crop": 32, "spatial_views": 3, "stack_views": True},
]


@pytest.mark.parametrize("kind", ["video", "hdf5"])
@pytest.mark.parametrize("mode", MODES, ids=lambda m: ",".join(f"{k}={v}" for k, v in m.items()))
def test_every_frame_lies_in_its_window(sources, kind, mode):
    videos = [("long.mp4", k, start, end) for k, (start, end) in enumerate(WINDOWS)]
    for seed in (0, 1):
        ds = ClipDataset(videos, sources[kind], num_frames=4, seed=seed, return_info=True,
                         **mode)  # fmt: skip
        for i in range(len(ds)):
            clip, label, info = ds[i]
            start, end = WINDOWS[label]
            clips = clip if mode.get("stack_views") else clip[None]
            stamps = info["timestamps"].reshape(len(clips), -1).numpy()
            indices = info["indices"].reshape(len(clips), -1).tolist()
            for c, ts, idx in zip(clips, stamps, indices, strict=True):
                # a crop cuts the painted grid: the views' indices are checked instead
                got = idx if "crop" in mode else numbers(c)
                assert got == idx
                assert set(got) <= set(inside(start, end)), (label, got, mode)
                np.testing.assert_allclose(ts, REL_S[got], atol=1e-6)
                assert (ts >= start - 1e-9).all() and (ts < end).all()


def test_two_windows_of_one_file_learn_their_counts_apart(sources):
    videos = [("long.mp4", 0, *WINDOWS[0]), ("long.mp4", 1, *WINDOWS[1]), ("long.mp4", 2)]
    ds = ClipDataset(videos, sources["video"], num_frames=2, seed=0)
    for i in range(len(ds)):
        ds[i]
    learned = ds.learned_frames
    assert learned["long.mp4 [0.5, 1.3) s"] == len(inside(*WINDOWS[0]))
    assert learned["long.mp4 [1.3, 2.2) s"] == len(inside(*WINDOWS[1]))
    assert "long.mp4" not in learned  # the whole file: its reported count was right
    state = ds.learned_state()
    assert sorted(state["learned"]) == sorted([
        ["long.mp4", 0, len(inside(*WINDOWS[0])), *WINDOWS[0]],
        ["long.mp4", 0, len(inside(*WINDOWS[1])), *WINDOWS[1]],
    ])  # fmt: skip
    fresh = ClipDataset(videos, sources["video"], num_frames=2, seed=0)
    fresh.load_learned_state(state)
    assert fresh.learned_frames == learned
    with pytest.raises(ValueError, match=r"window \[9, 10\) s.*not in this dataset's video list"):
        fresh.load_learned_state({"learned": [["long.mp4", 0, 3, 9.0, 10.0]]})


def test_open_windows_and_a_window_with_no_frame(sources):
    ds = ClipDataset([("long.mp4", 0, None, 0.3), ("long.mp4", 1, 3.0, None)], sources["video"],
                     num_frames=3, train=False, clips_per_video=2)  # fmt: skip
    assert set(numbers(ds[0][0]) + numbers(ds[1][0])) <= set(inside(0, 0.3))
    assert set(numbers(ds[2][0]) + numbers(ds[3][0])) <= set(inside(3.0, 99))
    empty = ClipDataset([("long.mp4", 0, 50.0, 60.0)], sources["video"], num_frames=2)
    with pytest.raises(VideoReadError, match=r"long.mp4.*no frame in the window \[50, 60\) s"):
        empty[0]


def test_windows_from_csv_and_json_lists(sources, tmp_path):
    csv = tmp_path / "windows.csv"  # the manifest's columns, found by name, plus start/end
    csv.write_text("video_id,label,start,end,note\nlong.mp4,0,0.5,1.3,a\nlong.mp4,1,1.3,,b\n")
    entries = load_videos(csv)
    assert [(e.video_id, e.label, e.start, e.end) for e in entries] == [
        ("long.mp4", 0, 0.5, 1.3),
        ("long.mp4", 1, 1.3, None),
    ]
    assert entries[0].extra == {"note": "a"}
    js = tmp_path / "windows.json"
    js.write_text(json.dumps([{"filename": "long.mp4", "label": 0, "start": 0.5, "end": 1.3}]))
    (entry,) = load_videos(js)
    assert (entry.start, entry.end) == (0.5, 1.3)
    ds = ClipDataset(js, sources["hdf5"], num_frames=3, seed=0)
    assert set(numbers(ds[0][0])) <= set(inside(0.5, 1.3))


def test_bad_windows_are_refused(sources, tmp_path):
    src = sources["video"]
    with pytest.raises(ValueError, match=r"videos\[0\].*window \[2.0, 1.0\) is empty"):
        ClipDataset([("long.mp4", 0, 2.0, 1.0)], src)
    with pytest.raises(ValueError, match=r"window start \(-1.0\) must be finite and >= 0"):
        ClipDataset([("long.mp4", 0, -1.0, 1.0)], src)
    with pytest.raises(TypeError, match=r"window end \('2'\) must be a number"):
        ClipDataset([("long.mp4", 0, 1.0, "2")], src)
    js = tmp_path / "bad.json"
    js.write_text(json.dumps([{"filename": "long.mp4", "label": 0, "start": "x"}]))
    with pytest.raises(ValueError, match=r"bad.json: entry 0: window start \('x'\) must be"):
        load_videos(js)
    csv = tmp_path / "bad.csv"
    csv.write_text("video_id,label,start,end\nlong.mp4,0,soon,\n")
    with pytest.raises(ValueError, match=r"bad.csv: video 'long.mp4': window start \('soon'\)"):
        load_videos(csv)


class NoTimes:
    """A FrameSource without timestamps."""

    def reported_frames(self, video_id):
        return 10

    def actual_frames(self, video_id):
        return 10

    def read(self, video_id, indices):
        return np.zeros((len(indices), 4, 4, 3), np.uint8)


def test_a_window_needs_timestamps_and_no_offset(sources):
    with pytest.raises(TypeError, match=r"window \[0, 1\) s, and NoTimes has no timestamps"):
        ClipDataset([("x.mp4", 0, 0, 1)], NoTimes())
    from vidload.manifest import VideoEntry

    both = VideoEntry("long", 0, offset=3, start=0.5, end=1.0)
    with pytest.raises(ValueError, match=r"'long' has both an offset \(3\) and a window"):
        ClipDataset([both], sources["hdf5"])


def test_windows_of_one_file_share_its_open_handle(sources, monkeypatch):
    import vidload.sources._video_root as root_module  # where VideoSource opens its files

    opened = []
    real = root_module.open_video

    def counted(*args, **kwargs):
        opened.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(root_module, "open_video", counted)
    source = VideoSource(sources["video"].root)  # a fresh source: nothing cached yet
    videos = [("long.mp4", k, start, end) for k, (start, end) in enumerate(WINDOWS)]
    ds = ClipDataset(videos, source, num_frames=4, train=False, clips_per_video=2)
    for i in range(len(ds)):
        ds[i]
    assert len(opened) == 1, opened  # six clips of three windows: one open file
