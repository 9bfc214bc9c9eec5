"""Turn a uint8 batch into normalised floats on the device, after the DataLoader.

Workers hand over uint8 clips (4x less to copy between processes and to the GPU than float32);
the conversion to float and the normalisation run once per batch on the device that trains,
where they cost next to nothing. `normalize` is that step.

Mean/std constants are per RGB channel in [0, 1] units (torchvision's convention; mmaction2
writes the same values times 255).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch

from vidload._checks import check_choice

__all__ = [
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "KINETICS_MEAN",
    "KINETICS_STD",
    "KINETICS_TORCHVISION_MEAN",
    "KINETICS_TORCHVISION_STD",
    "normalize",
]

Layout = Literal["TCHW", "CTHW"]
LAYOUTS: tuple[str, ...] = ("TCHW", "CTHW")

#: ImageNet RGB mean/std: what image-pretrained 2D backbones (TSN, TSM) and mmaction2's
#: default `data_preprocessor` (123.675, 116.28, 103.53 / 58.395, 57.12, 57.375) use.
IMAGENET_MEAN: tuple[float, float, float] = (0.485, 0.456, 0.406)
IMAGENET_STD: tuple[float, float, float] = (0.229, 0.224, 0.225)
#: Kinetics mean/std as PyTorchVideo's and SlowFast's recipes use them (SlowFast, X3D, MViT;
#: mmaction2 writes them as 114.75 / 57.375 in its X3D configs).
KINETICS_MEAN: tuple[float, float, float] = (0.45, 0.45, 0.45)
KINETICS_STD: tuple[float, float, float] = (0.225, 0.225, 0.225)
#: Kinetics-400 mean/std of torchvision's video models (r3d_18, mc3_18, r2plus1d_18).
KINETICS_TORCHVISION_MEAN: tuple[float, float, float] = (0.43216, 0.394666, 0.37645)
KINETICS_TORCHVISION_STD: tuple[float, float, float] = (0.22803, 0.22145, 0.216989)

_LOW_PRECISION = (torch.float16, torch.bfloat16)


def normalize(
    batch: torch.Tensor,
    mean: Sequence[float] | torch.Tensor,
    std: Sequence[float] | torch.Tensor,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
    layout: Layout = "TCHW",
) -> torch.Tensor:
    """`(batch / 255 - mean) / std` per channel, as `dtype` on `device`.

    Args:
        batch: uint8 clips whose channel axis is where `layout` puts it, counted from the end:
            "TCHW" -> (..., T, C, H, W), e.g. a batch (B, T, C, H, W), one clip (T, C, H, W) or
            stacked views (B, V, T, C, H, W); "CTHW" -> (..., C, T, H, W), e.g. (B, C, T, H, W)
            or (B, V, C, T, H, W).
        mean: one value per channel in [0, 1] units (e.g. `IMAGENET_MEAN`).
        std: one value per channel in [0, 1] units (e.g. `IMAGENET_STD`), each > 0.
        device: where the result lives; None keeps the batch's device. The uint8 batch is
            copied there first (non_blocking when it is in pinned memory, as `make_loader`'s
            batches are when CUDA is available), so the float work runs on the device.
        dtype: a floating dtype for the result; float16/bfloat16 are computed in float32 and
            rounded once at the end.
        layout: "TCHW" or "CTHW" (ClipDataset's `layout`).

    Returns:
        `dtype` tensor of the batch's shape on `device`; a new tensor (the batch is unchanged).

    Raises:
        TypeError: batch is not a uint8 tensor, or dtype is not floating.
        ValueError: a bad layout, too few dimensions, a channel count that does not match
            mean/std, or std <= 0.
    """
    if not isinstance(batch, torch.Tensor):
        raise TypeError(f"batch must be a torch.Tensor, got {type(batch).__name__}")
    if batch.dtype != torch.uint8:
        raise TypeError(f"batch must be uint8 (as the DataLoader gives it), got {batch.dtype}")
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
    check_choice("layout", layout, LAYOUTS)
    if batch.dim() < 4:
        raise ValueError(
            f"batch ({tuple(batch.shape)}) must have at least 4 dimensions for layout "
            f"{layout!r} (one clip {'T, C, H, W' if layout == 'TCHW' else 'C, T, H, W'})"
        )
    channel_dim = -3 if layout == "TCHW" else -4
    channels = batch.shape[channel_dim]
    mean_t = _per_channel("mean", mean, channels, layout, batch.shape)
    std_t = _per_channel("std", std, channels, layout, batch.shape)
    if bool((std_t <= 0).any()):
        raise ValueError(f"std ({std_t.tolist()}) must be > 0 for every channel")

    if device is not None:  # a pinned batch copies asynchronously (to the CPU: it stays as is)
        batch = batch.to(device, non_blocking=batch.is_pinned())
    work = torch.float32 if dtype in _LOW_PRECISION else dtype
    # (x / 255 - m) / s == (x - 255 m) / (255 s): two in-place passes over one new tensor
    shape = (channels,) + (1,) * (-channel_dim - 1)
    offset = (mean_t * 255).to(device=batch.device, dtype=work).reshape(shape)
    scale = (1.0 / (std_t * 255)).to(device=batch.device, dtype=work).reshape(shape)
    out = batch.to(work).sub_(offset).mul_(scale)
    return out.to(dtype) if work != dtype else out


def _per_channel(name: str, value, channels: int, layout: str, shape) -> torch.Tensor:
    """`value` as a float64 CPU tensor (channels,); ValueError naming the mismatch."""
    try:
        t = torch.as_tensor(value, dtype=torch.float64).flatten().cpu()
    except (TypeError, ValueError, RuntimeError) as e:
        raise TypeError(f"{name} must be a sequence of floats, got {value!r}") from e
    if t.numel() != channels:
        raise ValueError(
            f"{name} has {t.numel()} values but the batch {tuple(shape)} has {channels} "
            f"channels on the axis layout {layout!r} puts them"
        )
    return t
