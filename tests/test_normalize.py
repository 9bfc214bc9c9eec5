"""vidload.normalize against a plain float computation, for every layout and batch shape."""

from __future__ import annotations

import pytest
import torch

import vidload
from vidload.normalization import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    KINETICS_MEAN,
    KINETICS_STD,
    KINETICS_TORCHVISION_MEAN,
    KINETICS_TORCHVISION_STD,
    normalize,
)

MEAN = (0.1, 0.5, 0.9)
STD = (0.2, 0.25, 0.5)


def _plain(batch: torch.Tensor, mean, std, channel_dim: int) -> torch.Tensor:
    """The reference: channel c of every element, (x / 255 - mean[c]) / std[c], in float64."""
    x = batch.to(torch.float64) / 255
    out = torch.empty_like(x)
    for c in range(3):
        index = [slice(None)] * x.dim()
        index[channel_dim] = c
        out[tuple(index)] = (x[tuple(index)] - mean[c]) / std[c]
    return out


@pytest.mark.parametrize(
    ("shape", "layout", "channel_dim"),
    [
        ((2, 4, 3, 5, 6), "TCHW", 2),  # (B, T, C, H, W)
        ((4, 3, 5, 6), "TCHW", 1),  # one clip (T, C, H, W)
        ((2, 3, 4, 3, 5, 6), "TCHW", 3),  # stacked views (B, V, T, C, H, W)
        ((2, 3, 4, 5, 6), "CTHW", 1),  # (B, C, T, H, W)
        ((3, 4, 5, 6), "CTHW", 0),  # one clip (C, T, H, W)
        ((2, 3, 3, 4, 5, 6), "CTHW", 2),  # stacked views (B, V, C, T, H, W)
    ],
)
def test_matches_a_plain_float_computation(shape, layout, channel_dim):
    batch = torch.randint(
        0, 256, shape, dtype=torch.uint8, generator=torch.Generator().manual_seed(0)
    )
    # T (or C) = 3 too in some shapes: a wrong axis would give different numbers
    batch.select(channel_dim, 0).fill_(255)
    out = normalize(batch, MEAN, STD, layout=layout)
    assert out.dtype == torch.float32 and out.shape == batch.shape
    expected = _plain(batch, MEAN, STD, channel_dim)
    torch.testing.assert_close(out.to(torch.float64), expected, rtol=1e-6, atol=1e-5)
    assert batch.dtype == torch.uint8  # input untouched


def test_channel_axis_is_the_layouts_not_any_axis_of_size_three():
    # (T=3, C=3): TCHW normalises along dim 1, CTHW along dim 0 -- different results
    batch = torch.arange(3 * 3 * 2 * 2, dtype=torch.uint8).reshape(3, 3, 2, 2)
    tchw = normalize(batch, MEAN, STD, layout="TCHW")
    cthw = normalize(batch, MEAN, STD, layout="CTHW")
    torch.testing.assert_close(tchw.double(), _plain(batch, MEAN, STD, 1), rtol=1e-6, atol=1e-5)
    torch.testing.assert_close(cthw.double(), _plain(batch, MEAN, STD, 0), rtol=1e-6, atol=1e-5)
    assert not torch.allclose(tchw, cthw)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16])
def test_dtype_and_device(dtype):
    batch = torch.randint(0, 256, (2, 4, 3, 5, 6), dtype=torch.uint8)
    # std as a float32 tensor (as users pass it): float64 results agree to float32 precision
    out = normalize(batch, IMAGENET_MEAN, torch.tensor(IMAGENET_STD), device="cpu", dtype=dtype)
    assert out.dtype == dtype and out.device == torch.device("cpu")
    expected = _plain(batch, IMAGENET_MEAN, IMAGENET_STD, 2)
    tol = {torch.float64: 1e-6, torch.float16: 1e-2, torch.bfloat16: 2e-2}[dtype]
    torch.testing.assert_close(out.double(), expected, rtol=tol, atol=tol)


def test_constants():
    assert IMAGENET_MEAN == (0.485, 0.456, 0.406) and IMAGENET_STD == (0.229, 0.224, 0.225)
    assert KINETICS_MEAN == (0.45,) * 3 and KINETICS_STD == (0.225,) * 3
    assert len(KINETICS_TORCHVISION_MEAN) == len(KINETICS_TORCHVISION_STD) == 3
    assert vidload.normalize is normalize


def test_bad_arguments():
    batch = torch.zeros((2, 4, 3, 5, 6), dtype=torch.uint8)
    with pytest.raises(TypeError, match="must be uint8"):
        normalize(batch.float(), MEAN, STD)
    with pytest.raises(TypeError, match="must be a torch.Tensor"):
        normalize(batch.numpy(), MEAN, STD)
    with pytest.raises(TypeError, match="floating torch.dtype"):
        normalize(batch, MEAN, STD, dtype=torch.int32)
    with pytest.raises(ValueError, match="layout .'THWC'. must be one of"):
        normalize(batch, MEAN, STD, layout="THWC")
    with pytest.raises(ValueError, match="mean has 2 values but the batch .* has 3 channels"):
        normalize(batch, MEAN[:2], STD)
    with pytest.raises(ValueError, match="std has 3 values but the batch .* has 4 channels"):
        normalize(batch, (0.5,) * 4, STD, layout="CTHW")
    with pytest.raises(ValueError, match=r"std \(\[0.2, 0.0, 0.5\]\) must be > 0"):
        normalize(batch, MEAN, (0.2, 0.0, 0.5))
    with pytest.raises(ValueError, match="at least 4 dimensions"):
        normalize(batch[0, 0], MEAN, STD)
    with pytest.raises(TypeError, match="mean must be a sequence of floats"):
        normalize(batch, "abc", STD)
