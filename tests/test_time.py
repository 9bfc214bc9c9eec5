"""Time: frame timestamps from every source (packet index; stored at convert time), and
ClipDataset's fps= / clip_seconds= / return_info=, checked on a variable-frame-rate video by
the frame numbers painted into the pixels (each maps to the time it was encoded at)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import torch
from media import encode_frames, frame_number

from vidload.convert import convert
from vidload.dataset import ClipDataset
from vidload.errors import VideoReadError
from vidload.sampling import resampled_indices, shown_at, window_indices
from vidload.sources.hdf5 import Hdf5Source
from vidload.sources.jpeg import JpegSource
from vidload.sources.npy import NpySource
from vidload.sources.video import VideoSource

W, H, N = 64, 48, 40
GAPS_MS = [20, 40, 60, 100]  # a very uneven variable frame rate


def vfr_times_ms(n: int) -> list[int]:
    out, t = [], 0
    for i in range(n):
        out.append(t)
        t += GAPS_MS[i % len(GAPS_MS)]
    return out


TRUE_S = np.array(vfr_times_ms(N)) / 1000.0  # what frame i was encoded at


@pytest.fixture(scope="module")
def vfr(tmp_path_factory):
    root = tmp_path_factory.mktemp("time")
    encode_frames(root / "in/vfr.mp4", range(N), pts=vfr_times_ms(N),
                  time_base=Fraction(1, 1000), width=W, height=H)  # fmt: skip
    sources = {"video": VideoSource(root / "in")}
    for to, cls in (("jpeg", JpegSource), ("hdf5", Hdf5Source), ("npy", NpySource)):
        assert convert(root / "in", root / to, to=to, workers=1, progress=False).ok
        sources[to] = cls(root / to)
    return root, sources


KINDS = ["video", "jpeg", "hdf5", "npy"]


def numbers(clip: torch.Tensor) -> list[int]:
    return [frame_number(f.permute(1, 2, 0).numpy()) for f in clip]


@pytest.mark.parametrize("kind", KINDS)
def test_timestamps_are_the_encoded_times(vfr, kind):
    _, sources = vfr
    ts = sources[kind].timestamps("vfr.mp4")
    assert ts.dtype == np.float64 and ts.shape == (N,)
    np.testing.assert_allclose(ts, TRUE_S, atol=1e-9)


@pytest.mark.parametrize("kind", KINDS)
def test_clip_seconds_gives_evenly_timed_frames(vfr, kind):
    _, sources = vfr
    d, t = 1.2, 6
    end = TRUE_S[-1] + (TRUE_S[-1] - TRUE_S[-2])
    for train, seed in ((False, 0), (True, 1), (True, 2)):
        ds = ClipDataset([("vfr.mp4", 0)], sources[kind], num_frames=t, clip_seconds=d,
                         train=train, seed=seed, return_info=True)  # fmt: skip
        clip, _, info = ds[0]
        got = numbers(clip)
        assert got == info["indices"].tolist()
        # the frames on screen at start + (k + 0.5) * d / t, for one start in the video
        start = TRUE_S[got[0]]  # the first target lies within frame got[0]'s display time
        lo = max(TRUE_S[0], start - d / t / 2)
        hi = min(end - d, TRUE_S[got[0] + 1] - d / t / 2)
        starts = np.linspace(lo, hi, 200)
        ok = [
            (np.searchsorted(TRUE_S, s + (np.arange(t) + 0.5) * d / t, "right") - 1).tolist() == got
            for s in starts
        ]
        assert any(ok), (got, lo, hi)
        if not train:  # the test window sits in the middle
            s = TRUE_S[0] + (end - TRUE_S[0] - d) / 2
            want = np.searchsorted(TRUE_S, s + (np.arange(t) + 0.5) * d / t, "right") - 1
            assert got == want.tolist()
        np.testing.assert_allclose(info["timestamps"].numpy(), TRUE_S[got], atol=1e-9)
        # evenly timed: frame times stay within one frame gap of the even targets
        assert np.abs(np.diff(TRUE_S[got]) - d / t).max() <= max(GAPS_MS) / 1000


@pytest.mark.parametrize("kind", KINDS)
def test_fps_samples_as_if_resampled(vfr, kind):
    _, sources = vfr
    fps = 10.0
    end = TRUE_S[-1] + (TRUE_S[-1] - TRUE_S[-2])
    grid_times = TRUE_S[0] + np.arange(int(np.ceil((end - TRUE_S[0]) * fps))) / fps
    grid = (np.searchsorted(TRUE_S, grid_times, "right") - 1).tolist()  # computed here, apart
    for seed in range(3):
        ds = ClipDataset([("vfr.mp4", 0)], sources[kind], num_frames=4, sampling="consecutive",
                         fps=fps, seed=seed)  # fmt: skip
        got = numbers(ds[0][0])
        # four consecutive frames of the 10 fps grid: 100 ms apart on screen
        starts = [s for s in range(len(grid) - 3) if grid[s : s + 4] == got]
        assert starts, (got, grid)


def test_return_info_batches_with_the_default_collate(vfr):
    _, sources = vfr
    ds = ClipDataset([("vfr.mp4", 0), ("vfr.mp4", 1)], sources["hdf5"], num_frames=3,
                     clips_per_video=2, train=False, return_info=True)  # fmt: skip
    batch = torch.utils.data.default_collate([ds[i] for i in range(len(ds))])
    clips, labels, info = batch
    assert clips.shape == (4, 3, 3, H, W) and labels.tolist() == [0, 0, 1, 1]
    assert info["video_id"] == ["vfr.mp4"] * 4
    assert info["indices"].shape == (4, 3) and info["timestamps"].dtype == torch.float64
    assert info["clip"].tolist() == [0, 1, 0, 1] and info["view"].tolist() == [0, 0, 0, 0]
    stacked = ClipDataset([("vfr.mp4", 0)], sources["video"], num_frames=3, clips_per_video=2,
                          stack_views=True, train=False, return_info=True)  # fmt: skip
    clip, _, info = stacked[0]
    assert clip.shape[0] == 2 and info["indices"].shape == (2, 3)
    assert info["clip"].tolist() == [0, 1]
    assert [numbers(c) for c in clip] == info["indices"].tolist()


def test_missing_stored_times(vfr, tmp_path):
    root, _ = vfr
    (root / "npy" / "vfr.npy.timestamps").rename(tmp_path / "kept")
    try:
        with pytest.raises(VideoReadError, match=r"no stored timestamps.*pass fps="):
            NpySource(root / "npy").timestamps("vfr.mp4")
        assert NpySource(root / "npy", fps=25).timestamps("vfr.mp4")[1] == 1 / 25
    finally:
        (tmp_path / "kept").rename(root / "npy" / "vfr.npy.timestamps")
    # a frame folder from elsewhere: the given or default frame rate
    assert JpegSource(root / "jpeg", fps=50).timestamps("vfr.mp4")[3] == pytest.approx(
        TRUE_S[3]
    )  # the stored times win over fps
    with pytest.raises(ValueError, match="fps and clip_seconds are alternatives|alternatives"):
        ClipDataset([("vfr.mp4", 0)], VideoSource(root / "in"), fps=5, clip_seconds=1.0)
    with pytest.raises(ValueError, match=r"clip_seconds \(0\) must be a finite number > 0"):
        ClipDataset([("vfr.mp4", 0)], VideoSource(root / "in"), clip_seconds=0)


def test_sampling_functions():
    ts = np.array([0.0, 0.1, 0.2, 0.5, 1.0])
    assert shown_at(ts, [-1.0, 0.0, 0.15, 0.49, 0.5, 9.0]).tolist() == [0, 0, 1, 2, 3, 4]
    # end = 1.0 + 0.5: a 2 fps grid at 0, 0.5, 1.0
    assert resampled_indices(ts, 2.0).tolist() == [0, 3, 4]
    rng = np.random.default_rng(0)
    a = window_indices(ts, 3, 0.6, train=True, rng=np.random.default_rng(5))
    b = window_indices(ts, 3, 0.6, train=True, rng=np.random.default_rng(5))
    assert a.tolist() == b.tolist()
    assert window_indices(ts, 2, 10.0, train=False, rng=None).tolist() == [4, 4]  # too short
    with pytest.raises(ValueError, match="strictly increasing"):
        resampled_indices(np.array([0.0, 0.0]), 1.0)
    with pytest.raises(ValueError, match=r"fps \(0\) must be a finite number > 0"):
        resampled_indices(ts, 0)
    with pytest.raises(ValueError, match=r"clip_index \(2\) must be in \[0, num_clips=2\)"):
        window_indices(ts, 2, 0.5, train=False, rng=rng, clip_index=2, num_clips=2)
