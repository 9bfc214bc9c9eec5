"""vidload.augment.ClipAugment: one draw per clip, from (seed, epoch, index), tested by content."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
import torch

from vidload import normalize
from vidload.augment import ClipAugment
from vidload.normalization import KINETICS_MEAN, KINETICS_STD

MEAN, STD = KINETICS_MEAN, KINETICS_STD


def _batch(b: int = 6, t: int = 4, seed: int = 0) -> torch.Tensor:
    """Normalised float (b, t, 3, 20, 24) of smooth colour ramps plus noise (blur shows)."""
    g = torch.Generator().manual_seed(seed)
    clips = torch.randint(0, 256, (b, t, 3, 20, 24), generator=g, dtype=torch.uint8)
    return normalize(clips, MEAN, STD)


def _aug(**kwargs) -> ClipAugment:
    return ClipAugment(MEAN, STD, seed=kwargs.pop("seed", 7), **kwargs)


def _pixels(x: torch.Tensor) -> torch.Tensor:
    return x * torch.tensor(STD).view(1, 1, 3, 1, 1) + torch.tensor(MEAN).view(1, 1, 3, 1, 1)


def test_same_seed_same_result_other_seed_or_epoch_differs():
    x = _batch()
    idx = torch.arange(10, 16)
    a = _aug()(x, idx, epoch=2)
    assert torch.equal(a, _aug()(x, idx, epoch=2))
    assert a.shape == x.shape and a.dtype == x.dtype
    assert not torch.allclose(a, _aug(seed=8)(x, idx, epoch=2))
    assert not torch.allclose(a, _aug()(x, idx, epoch=3))
    assert not torch.allclose(a, x)


def test_clips_of_a_batch_differ_and_a_clip_does_not_depend_on_its_batch():
    one = _batch(b=1)
    x = one.expand(6, -1, -1, -1, -1).contiguous()  # the same clip six times
    out = _aug()(x, [0, 1, 2, 3, 4, 5], epoch=0)
    for i in range(6):
        for j in range(i):
            assert not torch.allclose(out[i], out[j]), (i, j)
        alone = _aug()(one, [i], epoch=0)[0]  # the item augmented in a batch of its own
        torch.testing.assert_close(out[i], alone)


def test_every_frame_of_a_clip_gets_the_same_parameters():
    x = _batch(b=6, t=2)
    aug = _aug(grayscale=0.5, blur=0.5)
    p = aug.params(range(6), epoch=1)
    assert p.grey.any() and not p.grey.all() and p.blurred.any() and not p.blurred.all()
    out = aug(x, range(6), epoch=1)
    # a clip made of one frame repeated comes out as one frame repeated
    still = x[:, :1].expand(-1, 4, -1, -1, -1).contiguous()
    out_still = aug(still, range(6), epoch=1)
    for t in range(1, 4):
        torch.testing.assert_close(out_still[:, t], out_still[:, 0])
    # frame t of a clip is what that frame alone, repeated, turns into: nothing else is shared
    for t in range(2):
        frame_t = x[:, t : t + 1].expand(-1, 2, -1, -1, -1).contiguous()
        torch.testing.assert_close(out[:, t], aug(frame_t, range(6), epoch=1)[:, 0])


def test_grayscale_blur_and_identity_by_content():
    x = _batch()
    colour_off = dict(brightness=0, contrast=0, saturation=0, hue=0)
    grey = _pixels(_aug(**colour_off, grayscale=1, blur=0)(x, range(6), epoch=0))
    assert torch.allclose(grey[:, :, 0], grey[:, :, 1], atol=1e-5)
    assert torch.allclose(grey[:, :, 1], grey[:, :, 2], atol=1e-5)
    off = _aug(**colour_off, grayscale=0, blur=0)
    torch.testing.assert_close(off(x, range(6), epoch=0), x, atol=1e-5, rtol=1e-5)
    blur = _aug(**colour_off, grayscale=0, blur=1, blur_sigma=(1.0, 2.0))
    blurred, sharp = _pixels(blur(x, range(6), epoch=0)), _pixels(x)
    # noise loses most of its variance under a blur; the mean stays
    assert (blurred.std((3, 4)) < 0.6 * sharp.std((3, 4))).all()
    torch.testing.assert_close(blurred.mean((3, 4)), sharp.mean((3, 4)), atol=0.02, rtol=0)


def test_layout_ctHW_and_dtype():
    x = _batch()
    tchw = _aug()(x, range(6), epoch=0)
    cthw = _aug(layout="CTHW")(x.transpose(1, 2).contiguous(), range(6), epoch=0)
    torch.testing.assert_close(cthw.transpose(1, 2), tchw)
    half = _aug()(x.to(torch.bfloat16), range(6), epoch=0)
    assert half.dtype == torch.bfloat16
    torch.testing.assert_close(half.float(), tchw, atol=0.1, rtol=0.05)


def test_bad_input():
    aug = _aug()
    with pytest.raises(TypeError, match="float tensor"):
        aug(torch.zeros(1, 2, 3, 4, 4, dtype=torch.uint8), [0], epoch=0)
    with pytest.raises(ValueError, match=r"\(B, T, 3, H, W\)"):
        aug(torch.zeros(1, 3, 4, 4), [0], epoch=0)
    with pytest.raises(ValueError, match="2 indices for a batch of 1"):
        aug(torch.zeros(1, 2, 3, 4, 4), [0, 1], epoch=0)
    with pytest.raises(ValueError, match=r"hue \(0.7\) must be a number in \[0, 0.5\]"):
        _aug(hue=0.7)
    with pytest.raises(ValueError, match="blur_sigma"):
        _aug(blur_sigma=(2.0, 1.0))


@pytest.mark.slow
def test_augment_bench_quick_run(monkeypatch, tmp_path, capsys):
    """tools/augment_bench.py (the guide's figures) runs end to end and prints every row."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "tools"))
    tool = importlib.import_module("augment_bench")
    assert tool.main(["--quick", "--work", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for row in ("none", "batch, main process", "per clip, workers"):
        assert re.search(rf"^{row} +[\d.]+ +[\d.]+ +[\d.]+$", out, flags=re.M), row
    assert "ClipAugment alone" in out
