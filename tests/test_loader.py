"""make_loader, set_epoch/epochs and EpochShuffleSampler, with 0 and 2 workers."""

from __future__ import annotations

import os

import cv2
import numpy as np
import pytest
import torch
from torch.utils.data import DistributedSampler, Subset, TensorDataset

from vidload._cpus import default_workers
from vidload.dataset import ClipDataset
from vidload.loader import EpochShuffleSampler, epochs, make_loader, set_epoch
from vidload.prefetch import ReadAheadSampler
from vidload.sources.jpeg import JpegSource, write_jpeg_folder
from vidload.sources.jpeg_decode import encode_jpeg
from vidload.sources.npy import NpySource, write_npy

NUM_VIDEOS = 6
NUM_FRAMES = 12
H, W = 16, 24


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """Six npy videos; frame i of video k is a flat grey of value 20 * k + i (JPEG-exact)."""
    root = tmp_path_factory.mktemp("npy")
    for k in range(NUM_VIDEOS):
        frames = [np.full((H, W, 3), 20 * k + i, np.uint8) for i in range(NUM_FRAMES)]
        write_npy(root / f"v{k}.npy", [encode_jpeg(f) for f in frames])
    return root


def _dataset(root, **kwargs) -> ClipDataset:
    videos = [(f"v{k}.mp4", k) for k in range(NUM_VIDEOS)]
    return ClipDataset(videos, NpySource(root), num_frames=4, seed=11, **kwargs)


def _epoch(loader) -> tuple[list[int], torch.Tensor]:
    labels, clips = [], []
    for clip, label in loader:
        assert clip.dtype == torch.uint8 and clip.shape[1:] == (4, 3, H, W)
        labels += label.tolist()
        clips.append(clip)
    return labels, torch.cat(clips)


@pytest.mark.parametrize("workers", [0, 2])
def test_epochs_do_not_depend_on_the_number_of_workers(root, workers):
    reference = make_loader(_dataset(root), batch_size=4, num_workers=0)
    loader = make_loader(_dataset(root), batch_size=4, num_workers=workers)
    assert isinstance(loader.sampler, ReadAheadSampler)
    assert loader.persistent_workers == (workers > 0)
    seen = []
    for epoch in epochs(loader, 3, start=1):
        set_epoch(reference, epoch)
        labels, clips = _epoch(loader)
        assert sorted(labels) == list(range(NUM_VIDEOS))
        # a clip of video k shows frames 20k + i, in increasing order
        grey = clips[:, :, 0, 0, 0].to(torch.int64)
        assert torch.equal(grey // 20, torch.tensor(labels)[:, None].expand(-1, 4))
        assert torch.all(grey.diff(dim=1) > 0)
        ref_labels, ref_clips = _epoch(reference)
        assert labels == ref_labels and torch.equal(clips, ref_clips)
        seen.append((labels, clips))
    assert seen[0][0] != seen[1][0] or not torch.equal(seen[0][1], seen[1][1])
    assert loader.dataset.epoch == 2 and loader.sampler.sampler.epoch == 2


def _thread_report(clip: torch.Tensor) -> torch.Tensor:
    """Transform: torch's and OpenCV's thread counts and the worker-init mark, in the worker."""
    mark = int(os.environ.get("VIDLOAD_TEST_INIT", "-1"))
    return torch.tensor([torch.get_num_threads(), cv2.getNumThreads(), mark])


def _mark_worker(worker_id: int) -> None:
    os.environ["VIDLOAD_TEST_INIT"] = str(100 + worker_id)


def test_workers_get_thread_limits_and_the_callers_init(root):
    ds = _dataset(root, transform=_thread_report)
    loader = make_loader(ds, batch_size=3, num_workers=2, worker_init_fn=_mark_worker)
    before = cv2.getNumThreads()
    cv2.setNumThreads(3)  # workers inherit this; make_loader must set 1
    try:
        reports = torch.cat([r for r, _ in loader])
    finally:
        cv2.setNumThreads(before)  # vidload runs OpenCV on one thread (vidload/_cv2.py)
    assert reports[:, 0].tolist() == [1] * NUM_VIDEOS
    assert reports[:, 1].tolist() == [1] * NUM_VIDEOS
    assert set(reports[:, 2].tolist()) <= {100, 101}
    assert os.environ.get("VIDLOAD_TEST_INIT") is None  # this process untouched


def test_distributed_sampler_splits_the_items(root):
    ds = _dataset(root)
    parts = []
    for rank in (0, 1):
        sampler = DistributedSampler(ds, num_replicas=2, rank=rank, shuffle=True, seed=3)
        loader = make_loader(ds, batch_size=2, sampler=sampler, num_workers=0)
        set_epoch(loader, 4)
        assert sampler.epoch == 4 and ds.epoch == 4
        parts.append(_epoch(loader)[0])
    assert sorted(parts[0] + parts[1]) == list(range(NUM_VIDEOS))


def test_shuffle_defaults_follow_train_and_a_subset_works(root):
    test_loader = make_loader(_dataset(root, train=False), batch_size=4, num_workers=0)
    assert _epoch(test_loader)[0] == list(range(NUM_VIDEOS))
    sub = Subset(_dataset(root), [5, 0, 2])
    loader = make_loader(sub, batch_size=2, num_workers=0, drop_last=True)
    set_epoch(loader, 1)
    assert sub.dataset.epoch == 1
    labels = _epoch(loader)[0]
    assert len(labels) == 2 and set(labels) <= {5, 0, 2}


def test_loader_settings(root):
    ds = _dataset(root)
    loader = make_loader(ds, num_workers=2, prefetch_factor=3, read_ahead=False)
    assert isinstance(loader.sampler, EpochShuffleSampler)
    assert loader.prefetch_factor == 3 and loader.num_workers == 2
    assert loader.pin_memory == torch.cuda.is_available()
    assert make_loader(ds, pin_memory=False, num_workers=0).pin_memory is False
    assert make_loader(ds).num_workers == default_workers()
    assert make_loader(ds, batch_size=5, num_workers=0).sampler.lookahead == 5
    numpy_ints = make_loader(ds, batch_size=np.int64(5), num_workers=np.int64(0))  # they pass
    assert numpy_ints.batch_size == 5 and numpy_ints.sampler.lookahead == 5
    assert len(next(iter(numpy_ints))[0]) == 5
    plain = make_loader(TensorDataset(torch.arange(5)), num_workers=0)  # auto: no read-ahead
    assert isinstance(plain.sampler, EpochShuffleSampler)
    assert sorted(torch.cat([b for (b,) in plain]).tolist()) == [0, 1, 2, 3, 4]


def test_read_ahead_is_off_by_default_for_jpeg_folders(tmp_path):
    write_jpeg_folder(tmp_path / "v0", [encode_jpeg(np.zeros((H, W, 3), np.uint8))] * 4)
    ds = ClipDataset([("v0", 0)], JpegSource(tmp_path), num_frames=2)
    assert not isinstance(make_loader(ds, num_workers=0).sampler, ReadAheadSampler)
    assert isinstance(make_loader(ds, num_workers=0, read_ahead=True).sampler, ReadAheadSampler)


def test_epoch_shuffle_sampler():
    a = EpochShuffleSampler(50, seed=1)
    b = EpochShuffleSampler(50, seed=1)
    assert sorted(a) == list(range(50)) and list(a) == list(b)
    b.set_epoch(1)
    assert list(a) != list(b)
    a.set_epoch(1)
    assert list(a) == list(b)
    assert list(EpochShuffleSampler(0, seed=0)) == []


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"batch_size": 0}, ValueError, r"batch_size \(0\) must be >= 1"),
        ({"num_workers": -1}, ValueError, r"num_workers \(-1\) must be >= 0"),
        ({"prefetch_factor": 0}, ValueError, r"prefetch_factor \(0\) must be >= 1"),
        ({"batch_size": 1.5}, TypeError, "batch_size must be an int"),
        ({"lookahead": -2}, ValueError, r"lookahead \(-2\) must be >= 0"),
        ({"shuffle": "yes"}, TypeError, "shuffle must be a bool or None"),
        ({"pin_memory": 1}, TypeError, "pin_memory must be a bool or None"),
        ({"read_ahead": 1}, TypeError, "read_ahead must be a bool or None"),
        ({"shuffle": True, "sampler": [0, 1]}, ValueError, r"shuffle \(True\) must be False"),
        ({"num_workers": 0, "worker_init_fn": print}, ValueError, "never called"),
        ({"batch_sampler": [[0]]}, TypeError, "got 'batch_sampler' twice"),
    ],
)
def test_bad_arguments(root, kwargs, error, match):
    with pytest.raises(error, match=match):
        make_loader(_dataset(root), **kwargs)


def test_numpy_ints_pass_and_bools_do_not(root):
    ds = _dataset(root)
    loader = make_loader(
        ds,
        batch_size=np.int64(2),
        num_workers=np.int64(0),
        prefetch_factor=np.int32(3),
        lookahead=np.int64(4),
        seed=np.int64(9),
    )
    assert loader.batch_size == 2 and type(loader.batch_size) is int
    assert loader.sampler.lookahead == 4 and loader.sampler.sampler.seed == 9
    for epoch in epochs(loader, np.int64(2), start=np.int64(1)):
        assert epoch == 1 and ds.epoch == 1
    for name in ("batch_size", "num_workers", "prefetch_factor", "lookahead", "seed"):
        with pytest.raises(TypeError, match=f"{name} must be an int"):
            make_loader(ds, **{name: True})
    for name in ("drop_last", "persistent_workers", "shuffle", "pin_memory", "read_ahead"):
        with pytest.raises(TypeError, match=f"{name} must be a bool"):
            make_loader(ds, num_workers=0, **{name: np.True_})
    with pytest.raises(TypeError, match="epoch must be an int"):
        set_epoch(loader, True)


def test_bad_epochs(root):
    loader = make_loader(_dataset(root), num_workers=0)
    with pytest.raises(ValueError, match=r"epoch \(-1\) must be >= 0"):
        set_epoch(loader, -1)
    with pytest.raises(TypeError, match="stop must be an int"):
        list(epochs(loader, 2.0))
    with pytest.raises(TypeError, match="needs a ClipDataset"):
        make_loader(TensorDataset(torch.arange(3)), num_workers=0, read_ahead=True)


def test_vidload_sets_opencv_to_one_thread_for_fork_safety():
    # A pool thread that has run in the parent hangs a forked worker touching the pool
    # (pthread_cond_destroy); vidload keeps OpenCV at one thread so none exists.
    import subprocess
    import sys

    code = "import vidload, cv2; print(cv2.getNumThreads())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1"
