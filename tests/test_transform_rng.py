"""A random transform written against torch's global generator is reproducible per item."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vidload import ClipDataset, make_loader, set_epoch
from vidload.sources.jpeg_decode import encode_jpeg
from vidload.sources.npy import NpySource, write_npy

NUM_VIDEOS = 6
H, W = 24, 32


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """Six npy videos of 10 frames with a horizontal ramp (so crops and flips show)."""
    root = tmp_path_factory.mktemp("npy")
    ramp = np.broadcast_to(np.linspace(0, 240, W, dtype=np.uint8)[None, :, None], (H, W, 3))
    for k in range(NUM_VIDEOS):
        frames = [np.ascontiguousarray(ramp) // (k + 1) + i for i in range(10)]
        write_npy(root / f"v{k}.npy", [encode_jpeg(f, quality=100) for f in frames])
    return root


class RandomCropFlipJitter:
    """A torchvision-v2-style random transform in plain torch, drawing from torch's global
    generator: a random 16x16 crop, a horizontal flip with p = 0.5, a random brightness."""

    def __call__(self, clip: torch.Tensor) -> torch.Tensor:
        top = int(torch.randint(0, H - 16 + 1, ()))
        left = int(torch.randint(0, W - 16 + 1, ()))
        out = clip[..., top : top + 16, left : left + 16].float()
        if torch.rand(()) < 0.5:
            out = out.flip(-1)
        return out * (0.8 + 0.4 * torch.rand(()))


def _dataset(root) -> ClipDataset:
    videos = [(f"v{k}.mp4", k) for k in range(NUM_VIDEOS)]
    return ClipDataset(
        videos, NpySource(root), num_frames=3, seed=5, transform=RandomCropFlipJitter()
    )


def _epochs(loader, n: int = 2) -> list[tuple[list[int], torch.Tensor]]:
    out = []
    for epoch in range(n):
        set_epoch(loader, epoch)
        labels, clips = [], []
        for clip, label in loader:
            labels += label.tolist()
            clips.append(clip)
        out.append((labels, torch.cat(clips)))
    return out


def test_same_clips_with_0_and_2_workers(root):
    torch.manual_seed(0)  # the main process's generator differs from the workers' ...
    zero = _epochs(make_loader(_dataset(root), batch_size=2, num_workers=0))
    torch.manual_seed(99)  # ... and between the two runs: results must not care
    two = _epochs(make_loader(_dataset(root), batch_size=2, num_workers=2))
    for (labels0, clips0), (labels2, clips2) in zip(zero, two, strict=True):
        assert labels0 == labels2 and sorted(labels0) == list(range(NUM_VIDEOS))
        assert torch.equal(clips0, clips2)
    # the transform really is random: items differ in their draws, and so do epochs
    clips = zero[0][1]
    assert clips.shape == (NUM_VIDEOS, 3, 3, 16, 16)
    assert not torch.equal(zero[0][1], zero[1][1][_order(zero[0][0], zero[1][0])])


def _order(first: list[int], second: list[int]) -> list[int]:
    """Positions in `second` of the labels in `first` (to compare the same videos)."""
    return [second.index(label) for label in first]


def test_an_item_is_a_function_of_seed_epoch_index(root):
    ds = _dataset(root)
    first = ds[3][0]
    for i in (0, 5, 2):  # other items in between: the global stream would have moved on
        ds[i]
    assert torch.equal(ds[3][0], first)
    draws = {tuple(ds[i][0][0, 0, 0, :2].tolist()) for i in range(NUM_VIDEOS)}
    assert len(draws) > 1
    ds.set_epoch(1)
    assert not torch.equal(ds[3][0], first)


def test_the_callers_generator_is_untouched(root):
    ds = _dataset(root)
    torch.manual_seed(1234)
    state = torch.get_rng_state()
    for i in range(NUM_VIDEOS):
        ds[i]
    assert torch.equal(torch.get_rng_state(), state)
    expected = torch.rand(4)
    torch.set_rng_state(state)
    assert torch.equal(torch.rand(4), expected)
