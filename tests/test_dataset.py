"""ClipDataset: sampling, frame-count reconciliation, broken videos, DataLoader workers."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from media import frame_number, make_video, paint, truncate_copy
from torch.utils.data import DataLoader, DistributedSampler

from vidload._dataset.options import ClipOptions
from vidload.dataset import ClipDataset, FrameCountWarning, SkippedVideoWarning
from vidload.errors import FrameCountError, VideoReadError, VidloadError
from vidload.manifest import ManifestRow, write_manifest
from vidload.sampling import consecutive_indices, segment_indices
from vidload.sources.base import as_index_array

H, W = 24, 32


class FakeSource:
    """Painted frames, no files. Video `vid` has `actual[vid]` frames, frame i painted with
    `base[vid] + i`; its metadata claims `reported[vid]` (default: the actual count). Videos in
    `broken` raise VideoReadError on read. If `log` is a path, every read appends a line
    "<vid> <outcome>" to it, so reads in DataLoader workers can be counted."""

    def __init__(self, actual, reported=None, broken=(), log=None, stubborn=False):
        self.actual = dict(actual)
        self.reported = dict(reported or {})
        self.base = {vid: 100 * k for k, vid in enumerate(self.actual)}
        self.broken = set(broken)
        self.log = log
        self.stubborn = stubborn  # keep raising FrameCountError: an inconsistent source
        self.reads: list[str] = []

    def path(self, vid):
        return f"/data/{vid}"

    def reported_frames(self, vid):
        return self.reported.get(vid, self.actual[vid])

    def actual_frames(self, vid):
        return self.actual[vid]

    def _record(self, vid, outcome):
        self.reads.append(vid)
        if self.log is not None:
            with open(self.log, "a") as f:
                f.write(f"{vid} {outcome}\n")

    def read(self, vid, indices):
        idx = as_index_array(indices)
        if vid in self.broken:
            self._record(vid, "broken")
            raise VideoReadError(self.path(vid), "invalid data found when processing input")
        n = self.actual[vid]
        if self.stubborn or idx.max() >= n:
            self._record(vid, "beyond")
            bad = int(idx.max())
            raise FrameCountError(vid, self.reported.get(vid), n, bad)
        self._record(vid, "ok")
        return np.stack([paint(self.base[vid] + int(i), W, H) for i in idx])


def frames_of(clip: torch.Tensor) -> list[int]:
    """Painted numbers of a uint8 (T, C, H, W) clip."""
    return [frame_number(f.permute(1, 2, 0).numpy()) for f in clip]


def rng_of(seed, epoch, index):
    return np.random.default_rng([seed, epoch, index])


VIDEOS = [("a.mp4", 0), ("b.mp4", 1), ("c.mp4", 2)]
COUNTS = {"a.mp4": 40, "b.mp4": 17, "c.mp4": 60}


# ------------------------------------------------------------------ items and sampling


def test_item_is_uint8_tchw_of_the_sampled_frames():
    src = FakeSource(COUNTS)
    ds = ClipDataset(VIDEOS, src, num_frames=8, seed=3)
    assert len(ds) == 3
    clip, label = ds[1]
    assert clip.dtype == torch.uint8 and clip.shape == (8, 3, H, W) and clip.is_contiguous()
    assert label == 1 and type(label) is int
    expected = segment_indices(17, 8, train=True, rng=rng_of(3, 0, 1))
    assert frames_of(clip) == (100 + expected).tolist()
    np.testing.assert_array_equal(clip[0].permute(1, 2, 0).numpy(), paint(100 + expected[0], W, H))
    assert ds[-1][1] == 2
    assert [label for _, label in ds] == [0, 1, 2]
    assert repr(ds) == (
        "ClipDataset(3 videos x 1 clips, FakeSource, num_frames=8, sampling='segment', "
        "stride=1, train=True, on_mismatch='resample', on_error='raise', seed=3)"
    )
    with pytest.raises(IndexError, match=r"index \(3\) must be in \[0, 3\)"):
        ds[3]


def test_clips_per_video_test_mode_views():
    ds = ClipDataset(VIDEOS, FakeSource(COUNTS), num_frames=4, train=False, clips_per_video=3)
    assert len(ds) == 9
    for i in range(9):
        clip, label = ds[i]
        v, k = divmod(i, 3)
        assert label == v
        n = COUNTS[VIDEOS[v][0]]
        expected = segment_indices(n, 4, train=False, clip_index=k, num_clips=3)
        assert frames_of(clip) == (100 * v + expected).tolist()
    ds.set_epoch(5)  # test clips do not depend on the epoch or seed
    assert torch.equal(
        ds[4][0],
        ClipDataset(VIDEOS, FakeSource(COUNTS), 4, train=False, clips_per_video=3, seed=9)[4][0],
    )


def test_consecutive_sampling_with_stride_and_short_video():
    ds = ClipDataset(VIDEOS, FakeSource(COUNTS), 6, "consecutive", stride=3, seed=1)
    clip, _ = ds[2]
    expected = consecutive_indices(60, 6, stride=3, train=True, rng=rng_of(1, 0, 2))
    assert frames_of(clip) == (200 + expected).tolist()
    assert np.all(np.diff(expected) == 3)
    clip, _ = ds[1]  # 17 frames hold the span of 16
    assert np.all(np.diff(frames_of(clip)) == 3)
    short = ClipDataset([("b.mp4", 1)], FakeSource(COUNTS), 8, "consecutive", stride=3, seed=1)
    assert frames_of(short[0][0]) == [100, 103, 106, 109, 112, 115, 115, 115]
    loop = ClipDataset(
        [("b.mp4", 1)], FakeSource(COUNTS), 8, "consecutive", stride=3, short_policy="loop"
    )
    assert frames_of(loop[0][0]) == [100, 103, 106, 109, 112, 115, 100, 103]
    strict = ClipDataset(
        [("b.mp4", 1)], FakeSource(COUNTS), 8, "consecutive", stride=3, short_policy="error"
    )
    with pytest.raises(ValueError, match=r"item 0, video 'b.mp4' \(17 frames\).*too short"):
        strict[0]


def test_user_sampler_and_its_errors():
    def last_frames(num_available, num_frames, *, train, rng, clip_index, num_clips):
        return np.arange(num_available - num_frames, num_available)

    ds = ClipDataset(VIDEOS, FakeSource(COUNTS), 3, last_frames, seed=0)
    assert frames_of(ds[0][0]) == [37, 38, 39]

    def off_by_one(num_available, num_frames, *, train, rng, clip_index, num_clips):
        return np.arange(num_available - num_frames + 1, num_available + 1)

    bad = ClipDataset(VIDEOS, FakeSource(COUNTS), 3, off_by_one, seed=0)
    with pytest.raises(
        ValueError,
        match=r"video 'a.mp4' .*off_by_one returned indices in "
        r"\[38, 40\]; they must lie in \[0, 40\)",
    ):
        bad[0]


def test_transform_is_applied():
    ds = ClipDataset(VIDEOS, FakeSource(COUNTS), 4, seed=0, transform=lambda c: c.float() / 255)
    clip, label = ds[0]
    assert clip.dtype == torch.float32 and clip.shape == (4, 3, H, W) and clip.max() <= 1


def test_seed_epoch_and_pickling():
    src = FakeSource(COUNTS)
    a = ClipDataset(VIDEOS, src, 8, seed=11)
    b = ClipDataset(VIDEOS, src, 8, seed=11)
    c = ClipDataset(VIDEOS, src, 8, seed=12)
    clips = [a[i][0] for i in range(3)]
    assert all(torch.equal(x, b[i][0]) for i, x in enumerate(clips))
    assert not all(torch.equal(x, c[i][0]) for i, x in enumerate(clips))
    a.set_epoch(1)
    assert a.epoch == 1
    assert not all(torch.equal(x, a[i][0]) for i, x in enumerate(clips))
    expected = segment_indices(60, 8, train=True, rng=rng_of(11, 1, 2))
    assert frames_of(a[2][0]) == (200 + expected).tolist()
    a.set_epoch(0)
    assert all(torch.equal(x, a[i][0]) for i, x in enumerate(clips))

    drawn = ClipDataset(VIDEOS, src, 8)  # seed=None: drawn once, kept by copies
    copy = pickle.loads(pickle.dumps(drawn))
    assert copy.seed == drawn.seed
    assert torch.equal(copy[0][0], drawn[0][0])
    assert ClipDataset(VIDEOS, src, 8).seed != drawn.seed


# ------------------------------------------------------------------ frame counts


def test_mismatch_resamples_within_actual_and_warns_once(recwarn):
    src = FakeSource({"a.mp4": 28, "b.mp4": 30}, reported={"a.mp4": 50})
    ds = ClipDataset([("a.mp4", 0), ("b.mp4", 1)], src, 8, clips_per_video=3, seed=4)
    clip, label = ds[0]
    (w,) = recwarn.list
    assert w.category is FrameCountWarning
    assert "a.mp4: 50 frames reported by the source, but only 28 frames decode" in str(w.message)
    # resampled from the same (seed, epoch, index) stream: as if 28 had been known all along
    assert frames_of(clip) == segment_indices(28, 8, train=True, rng=rng_of(4, 0, 0)).tolist()
    assert ds.learned_frames == {"a.mp4": 28}
    recwarn.clear()
    src.reads.clear()
    for epoch in range(2):
        ds.set_epoch(epoch)
        for i in range(len(ds)):
            assert max(frames_of(ds[i][0])) < (28 if i < 3 else 130)
    assert recwarn.list == []
    assert src.reads.count("a.mp4") == 6  # one read per item: no more FrameCountErrors


def test_list_count_beats_reported_count_and_wrong_list_count_warns():
    src = FakeSource({"a.mp4": 28}, reported={"a.mp4": 50})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = ClipDataset([("a.mp4", 0, 28)], src, 8, seed=0)
        assert max(frames_of(ds[0][0])) < 28
    assert src.reads == ["a.mp4"]
    ds = ClipDataset([("a.mp4", 0, 40)], src, 8, seed=0)
    with pytest.warns(
        FrameCountWarning,
        match="a.mp4: 40 frames from the video list, but only 28 frames decode",
    ):
        ds[0]


def test_manifest_actual_frames_used(tmp_path):
    path = tmp_path / "m.csv"
    write_manifest(path, [ManifestRow("a.mp4", 0, 50, 28, status="mismatch")])
    src = FakeSource({"a.mp4": 28}, reported={"a.mp4": 50})
    ds = ClipDataset(path, src, 8, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert max(frames_of(ds[0][0])) < 28
    assert src.reads == ["a.mp4"]


@pytest.mark.parametrize("reported", [None, 0])
def test_no_reported_count_uses_actual_frames_and_publishes_it(reported):
    src = FakeSource({"a.mp4": 12}, reported={"a.mp4": reported})
    ds = ClipDataset([("a.mp4", 0)], src, 4, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert max(frames_of(ds[0][0])) < 12
    assert ds.learned_frames == {"a.mp4": 12}


def test_frame_count_error_without_actual_asks_the_source():
    class Vague(FakeSource):
        def read(self, vid, indices):
            try:
                return super().read(vid, indices)
            except FrameCountError as e:
                raise FrameCountError(vid, e.reported, None, e.index) from None

    ds = ClipDataset([("a.mp4", 0)], Vague({"a.mp4": 9}, reported={"a.mp4": 90}), 4, seed=0)
    with pytest.warns(
        FrameCountWarning, match="90 frames reported by the source, but only 9 frames decode"
    ):
        assert max(frames_of(ds[0][0])) < 9


def test_on_mismatch_error():
    src = FakeSource({"a.mp4": 28}, reported={"a.mp4": 50})
    ds = ClipDataset([("a.mp4", 0)], src, 8, on_mismatch="error", on_error="skip", seed=0)
    with pytest.raises(
        FrameCountError,
        match=r"a.mp4: clip sampled from 50 frames \(reported by the source"
        r"\) but only 28 frames exist",
    ) as info:
        ds[0]
    assert (info.value.video_id, info.value.reported, info.value.actual) == ("a.mp4", 50, 28)
    assert ds.learned_frames == {} and ds.broken_videos == []
    with pytest.raises(FrameCountError):  # an IndexError, yet it must not end a for loop quietly
        for _ in ds:
            pass


def test_recurring_frame_count_error_raises_instead_of_looping():
    src = FakeSource({"a.mp4": 28}, reported={"a.mp4": 50}, stubborn=True)
    ds = ClipDataset([("a.mp4", 0)], src, 8, seed=0)
    with (
        pytest.warns(FrameCountWarning),
        pytest.raises(
            FrameCountError, match="still out of range after resampling within the 28 frames"
        ),
    ):
        ds[0]
    assert src.reads == ["a.mp4", "a.mp4"]
    src = FakeSource({"a.mp4": 28}, stubborn=True)  # says 28 exist, refuses frame < 28
    with pytest.raises(
        FrameCountError,
        match="raised FrameCountError for frame .* although it says 28 frames exist",
    ):
        ClipDataset([("a.mp4", 0)], src, 8, seed=0)[0]


def test_empty_video_is_a_read_error():
    src = FakeSource({"a.mp4": 0}, reported={"a.mp4": None})
    with pytest.raises(VideoReadError, match="a.mp4.*no frames decode"):
        ClipDataset([("a.mp4", 0)], src, 4, seed=0)[0]
    with pytest.raises(VideoReadError, match="a.mp4.*no frames to sample"):
        ClipDataset([("a.mp4", 0, 0)], FakeSource({"a.mp4": 5}), 4, seed=0)[0]


# ------------------------------------------------------------------ broken videos


def test_on_error_raise_names_video_and_path():
    ds = ClipDataset(VIDEOS, FakeSource(COUNTS, broken={"b.mp4"}), 4, seed=0)
    ds[0]
    with pytest.raises(
        VideoReadError,
        match=r"/data/b.mp4: invalid data .*video 'b.mp4', "
        r"ClipDataset item 1",
    ):
        ds[1]


def test_on_error_skip_returns_next_video_counts_and_remembers(recwarn):
    src = FakeSource(COUNTS, broken={"b.mp4"})
    ds = ClipDataset(VIDEOS, src, 4, on_error="skip", seed=0)
    clip, label = ds[1]
    assert label == 2 and min(frames_of(clip)) >= 200  # c.mp4 instead of b.mp4
    (w,) = recwarn.list
    assert w.category is SkippedVideoWarning
    assert "item 1: skipping video 'b.mp4': /data/b.mp4: invalid data" in str(w.message)
    assert ds.num_skipped == 1 and ds.broken_videos == ["b.mp4"]
    recwarn.clear()
    src.reads.clear()
    ds.set_epoch(1)
    assert [ds[i][1] for i in range(3)] == [0, 2, 2]
    assert src.reads == ["a.mp4", "c.mp4", "c.mp4"]  # b.mp4 not decoded again
    assert ds.num_skipped == 2 and recwarn.list == []


def test_on_error_skip_is_bounded():
    src = FakeSource(COUNTS, broken=set(COUNTS))
    ds = ClipDataset(VIDEOS, src, 4, on_error="skip", seed=0)
    with pytest.warns(SkippedVideoWarning), pytest.raises(VidloadError, match="all 3 videos"):
        ds[0]
    ds = ClipDataset(
        VIDEOS, FakeSource(COUNTS, broken=set(COUNTS)), 4, on_error="skip", max_attempts=2
    )
    with (
        pytest.warns(SkippedVideoWarning),
        pytest.raises(VidloadError, match=r"item 2: 2 videos in a row failed .*last: 'a.mp4'"),
    ):
        ds[2]


def test_on_error_skip_does_not_hide_bugs():
    class Buggy(FakeSource):
        def read(self, vid, indices):
            raise TypeError("a bug in the source")

    ds = ClipDataset(VIDEOS, Buggy(COUNTS), 4, on_error="skip", seed=0)
    with pytest.raises(TypeError, match="a bug in the source"):
        ds[0]
    assert ds.num_skipped == 0

    class BadShape(FakeSource):
        def read(self, vid, indices):
            return super().read(vid, indices)[..., 0]

    with pytest.raises(
        TypeError,
        match=r"BadShape.read\('a.mp4', ...\) returned uint8 \(4, 24, "
        r"32\); expected uint8 \(4, H, W, 3\)",
    ):
        ClipDataset(VIDEOS, BadShape(COUNTS), 4, on_error="skip")[0]


# ------------------------------------------------------------------ arguments


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"num_frames": 0}, ValueError, r"num_frames \(0\) must be > 0"),
        ({"clips_per_video": -1}, ValueError, r"clips_per_video \(-1\) must be > 0"),
        ({"stride": 2}, ValueError, r"stride \(2\) must be 1 for sampling='segment'"),
        ({"sampling": "dense"}, ValueError, r"sampling \('dense'\) must be one of"),
        ({"sampling": 3}, TypeError, "sampling must be one of"),
        ({"sampling": np.sort, "stride": 2}, ValueError, "must be 1 with a sampling function"),
        (
            {"sampling": np.sort, "clip_seconds": 1.0},
            ValueError,
            "clip_seconds replaces `sampling`; a sampling function cannot be used",
        ),
        ({"train": 1}, TypeError, "train must be a bool"),
        ({"transform": "flip"}, TypeError, "transform must be callable"),
        ({"on_mismatch": "ignore"}, ValueError, r"on_mismatch \('ignore'\) must be one of"),
        ({"on_error": "warn"}, ValueError, r"on_error \('warn'\) must be one of"),
        ({"seed": -1}, ValueError, r"seed \(-1\) must be >= 0"),
        ({"seed": 1.5}, TypeError, "seed must be an int or None"),
        ({"short_policy": "pad"}, ValueError, r"short_policy \('pad'\) must be one of"),
        ({"max_attempts": 0}, ValueError, r"max_attempts \(0\) must be > 0"),
        ({"source": object()}, TypeError, "source must provide reported_frames"),
        ({"videos": []}, ValueError, r"videos \(\[\]\) lists no videos"),
    ],
)
def test_argument_errors(kwargs, error, match):
    args = {"videos": VIDEOS, "source": FakeSource(COUNTS), **kwargs}
    with pytest.raises(error, match=match):
        ClipDataset(**args)


def test_numpy_ints_are_ints_and_bools_are_not():
    """One rule for every int argument (vidload._checks): NumPy integers are accepted and
    stored as plain ints, bools (also NumPy's) are refused."""
    ints = {
        "num_frames": 4,
        "clips_per_video": 2,
        "stride": 3,
        "max_attempts": 5,
        "seed": 7,
        "spatial_views": 3,
    }
    kwargs = {k: np.int64(v) for k, v in ints.items()}
    ds = ClipDataset(
        VIDEOS, FakeSource(COUNTS), **kwargs, sampling="consecutive", train=False, crop=np.int32(8)
    )
    for name, value in ints.items():
        assert getattr(ds, name) == value and type(getattr(ds, name)) is int, name
    ds.set_epoch(np.int64(2))
    assert ds.epoch == 2 and ds[0][0].shape == (4, 3, 8, 8)
    assert ClipDataset(VIDEOS, FakeSource(COUNTS), fps=np.int64(5), seed=0).fps == 5.0
    for name in [*ints, "num_classes"]:
        with pytest.raises(TypeError, match=f"{name} must be an int"):
            ClipDataset(
                VIDEOS, FakeSource(COUNTS), multi_label=True, **{"num_classes": 3, name: True}
            )
    for name in ["train", "stack_views", "flip", "multi_label", "return_info"]:
        for bad in (1, np.True_):
            with pytest.raises(TypeError, match=f"{name} must be a bool"):
                ClipDataset(VIDEOS, FakeSource(COUNTS), **{name: bad})
    with pytest.raises(TypeError, match="crop must be None, an int or an"):
        ClipDataset(VIDEOS, FakeSource(COUNTS), crop=(8, True))
    with pytest.raises(TypeError, match="fps must be a number"):
        ClipDataset(VIDEOS, FakeSource(COUNTS), fps=True)


def test_the_checked_options_are_the_annotated_attributes():
    """ClipDataset holds its options, checked and normalised, in one frozen
    vidload._dataset.options.ClipOptions whose fields are exactly its parameters after `videos`
    (the signature users see and the dataclass cannot drift apart); each reads as an attribute
    of the dataset, and the dataset stores nothing else but its state."""
    ds = ClipDataset(VIDEOS, FakeSource(COUNTS), num_frames=np.int64(3), fps=25, crop=4, seed=0)
    params = list(inspect.signature(ClipDataset).parameters)[1:]
    assert params == [f.name for f in dataclasses.fields(ClipOptions) if f.init]
    assert set(vars(ds)) == {"options", "videos", "num_skipped", "_counts", "_epoch"}
    assert all(getattr(ds, name) is getattr(ds.options, name) for name in params)
    assert ds.num_frames == 3 and type(ds.fps) is float and ds.options.geometry.crop == (4, 4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ds.options.num_frames = 4  # type: ignore[misc]
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        ds.nonsense  # noqa: B018


def test_set_epoch_errors():
    ds = ClipDataset(VIDEOS, FakeSource(COUNTS))
    with pytest.raises(ValueError, match=r"epoch \(-1\) must be >= 0"):
        ds.set_epoch(-1)
    with pytest.raises(TypeError, match="epoch must be an int"):
        ds.set_epoch(1.0)


# ------------------------------------------------------------------ DataLoader


def _epoch_batches(loader, ds, epoch, log):
    with open(log, "a") as f:
        f.write(f"epoch {epoch}\n")
    ds.set_epoch(epoch)
    return [(clips.clone(), labels.clone()) for clips, labels in loader]


@pytest.mark.slow
def test_dataloader_workers_give_the_same_clips_and_share_learned_counts(tmp_path):
    """0 workers, 2 persistent workers with pin_memory, 2 workers re-created each epoch: the
    same clips in both epochs; a mismatch found by a worker is published to the main process
    and to every worker (no FrameCountError in the next epoch); set_epoch reaches persistent
    workers."""
    counts = {f"v{k}.mp4": 20 + k for k in range(8)}
    reported = {"v3.mp4": 60, "v6.mp4": 45}
    videos = [(vid, k) for k, vid in enumerate(counts)]
    results = []
    for workers, persistent in ((0, False), (2, True), (2, False)):
        log = tmp_path / f"reads{workers}{persistent}.log"
        src = FakeSource(counts, reported=reported, log=log)
        ds = ClipDataset(videos, src, 6, clips_per_video=2, seed=7)
        loader = DataLoader(
            ds,
            batch_size=3,
            num_workers=workers,
            shuffle=False,
            persistent_workers=persistent,
            pin_memory=persistent,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # FrameCountWarning; pin_memory without a GPU
            results.append([_epoch_batches(loader, ds, e, log) for e in range(2)])
        assert ds.learned_frames == {"v3.mp4": 23, "v6.mp4": 26}
        epoch0, epoch1 = (part.split("\n")[1:-1] for part in log.read_text().split("epoch 1"))
        beyond = [line for line in epoch0 if line.endswith("beyond")]
        # two items per mismatched video: one FrameCountError each (two if both items of a
        # video are read at the same moment by different workers), none in the next epoch
        assert sorted(set(beyond)) == ["v3.mp4 beyond", "v6.mp4 beyond"] and len(beyond) <= 4
        assert len(epoch0) == 16 + len(beyond)
        assert len(epoch1) == 16 and all(line.endswith(" ok") for line in epoch1)
    for other in results[1:]:
        for e in range(2):
            for (c0, l0), (c2, l2) in zip(results[0][e], other[e], strict=True):
                assert torch.equal(c0, c2) and torch.equal(l0, l2)
    clips = torch.cat([c for c, _ in results[1][0]])
    assert clips.shape == (16, 6, 3, H, W)
    assert not torch.equal(clips, torch.cat([c for c, _ in results[1][1]]))
    for i, clip in enumerate(clips):  # every clip within the frames that really exist
        v = i // 2
        assert max(frames_of(clip)) - 100 * v < counts[f"v{v}.mp4"]


def test_distributed_sampler_covers_the_dataset():
    ds = ClipDataset(VIDEOS, FakeSource(COUNTS), 4, clips_per_video=3, seed=2)
    seen = []
    for rank in range(2):
        sampler = DistributedSampler(ds, num_replicas=2, rank=rank, shuffle=True, seed=0)
        sampler.set_epoch(1)
        ds.set_epoch(1)
        order = list(sampler)
        loader = DataLoader(ds, batch_size=2, sampler=sampler, num_workers=0)
        clips = torch.cat([c for c, _ in loader])
        assert len(clips) == len(order) == 5  # 9 items padded to 10
        for idx, clip in zip(order, clips, strict=True):
            assert torch.equal(clip, ds[idx][0])
        seen += order
    assert set(seen) == set(range(9))


# ------------------------------------------------------------------ real videos


@pytest.fixture(scope="module")
def video_dir(tmp_path_factory) -> Path:
    """Three H.264 videos; `cut.mp4`'s header says 60 frames but only part of it decodes."""
    root = tmp_path_factory.mktemp("dataset_videos")
    make_video(root / "a.mp4", 30, width=64, height=48, options={"g": "8", "bf": "2"})
    make_video(root / "sub" / "b.mkv", 45, width=64, height=48, options={"g": "10"})
    full = make_video(
        root / "_full.mp4",
        60,
        width=64,
        height=48,
        options={"g": "6"},
        container_options={"movflags": "faststart"},
    )
    truncate_copy(full, root / "cut.mp4", 0.75)
    full.unlink()
    (root / "broken.mp4").write_bytes(b"not a video at all" * 10)
    return root


def test_real_videos_through_dataloader_with_two_workers(video_dir):
    from vidload.sources.video import VideoSource

    src = VideoSource(video_dir)
    assert src.reported_frames("cut.mp4") == 60
    actual = src.actual_frames("cut.mp4")
    assert 8 <= actual < 60
    videos = [("a.mp4", 0), ("sub/b.mkv", 1), ("cut.mp4", 2), ("broken.mp4", 3)]
    ds = ClipDataset(videos, VideoSource(video_dir), 8, clips_per_video=2, on_error="skip", seed=5)
    loader = DataLoader(ds, batch_size=4, num_workers=2, persistent_workers=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        batches = [(c, lab) for c, lab in loader]
    clips = torch.cat([c for c, _ in batches])
    labels = torch.cat([lab for _, lab in batches]).tolist()
    assert clips.shape == (8, 8, 3, 48, 64) and clips.dtype == torch.uint8
    assert ds.learned_frames["cut.mp4"] == actual
    assert ds.broken_videos == ["broken.mp4"]
    assert labels == [0, 0, 1, 1, 2, 2, 0, 0]  # broken.mp4's items fall back to a.mp4
    counts = {0: 30, 1: 45, 2: actual}
    for i, (clip, label) in enumerate(zip(clips, labels, strict=True)):
        numbers = frames_of(clip)
        if i < 6:  # the clips sampled for these items, from the true count
            expected = segment_indices(counts[label], 8, train=True, rng=rng_of(5, 0, i))
            assert numbers == expected.tolist()
        else:  # broken.mp4 -> the next video, a.mp4, sampled from the item's 2nd stream
            rng = np.random.default_rng([5, 0, i, 1])
            assert numbers == segment_indices(30, 8, train=True, rng=rng).tolist()


def test_frame_count_error_from_another_id_gets_the_item_in_its_message():
    """A source may name the video by something else than the dataset's id (a key): the
    error then gains the id and item, stays a FrameCountError with its fields, chained."""
    from vidload._dataset.items import in_context as _in_context

    e = FrameCountError("key-0007", 50, 28, 31)
    got = _in_context(e, "a.mp4", 7)
    assert type(got) is FrameCountError and got is not e
    assert (got.video_id, got.reported, got.actual, got.index) == ("key-0007", 50, 28, 31)
    assert "video 'a.mp4', ClipDataset item 7" in str(got) and str(e) in str(got)
    same = FrameCountError("a.mp4", 50, 28, 31)
    assert _in_context(same, "a.mp4", 7) is same  # already names the video
