"""Batching clips of different sizes: make_loader's collate and `vidload.collate_clips` name the
fix (crop= / short_side=) instead of torch's bare "stack expects each tensor to be equal size"."""

from __future__ import annotations

import pytest
import torch
from media import make_video
from torch.utils.data import DataLoader

import vidload
from vidload import ClipDataset, VideoSource, make_loader


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    root = tmp_path_factory.mktemp("mixed")
    make_video(root / "small.mp4", 6, width=64, height=48)
    make_video(root / "large.mp4", 6, width=96, height=64)
    return root


MATCH = r"clips of different sizes cannot be batched .*\(2, 3, 48, 64\).*crop=224.*short_side="


@pytest.mark.parametrize("workers", [0, 1])
def test_mixed_sizes_name_crop_and_short_side(mixed, workers):
    ds = ClipDataset([("small.mp4", 0), ("large.mp4", 1)], VideoSource(mixed), num_frames=2,
                     train=False)  # fmt: skip
    with pytest.raises(ValueError, match=MATCH):
        next(iter(make_loader(ds, batch_size=2, num_workers=workers)))
    with pytest.raises(ValueError, match=MATCH):
        next(iter(DataLoader(ds, batch_size=2, collate_fn=vidload.collate_clips)))
    cropped = ClipDataset([("small.mp4", 0), ("large.mp4", 1)], VideoSource(mixed),
                          num_frames=2, train=False, short_side=48, crop=48)  # fmt: skip
    clips, labels = next(iter(make_loader(cropped, batch_size=2, num_workers=workers)))
    assert clips.shape == (2, 2, 3, 48, 48) and labels.tolist() == [0, 1]


def test_other_collate_errors_pass_through():
    with pytest.raises(TypeError):
        vidload.collate_clips([(object(), 0), (object(), 1)])
    batch = [(torch.zeros(2, 3), 0), (torch.zeros(2, 3), 1)]
    clips, labels = vidload.collate_clips(batch)
    assert clips.shape == (2, 2, 3) and labels.tolist() == [0, 1]
