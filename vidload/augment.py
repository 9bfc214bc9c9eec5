"""Clip-consistent colour augmentation on a normalised batch, on its device.

Colour jitter is the augmentation users call the slowest when it runs per clip in the
DataLoader workers; on the device it runs once per batch, in the batch's dtype (float16 on a
GPU). `ClipAugment` takes the float batch `vidload.normalize` made and returns one of the same
shape, dtype and device:

    aug = ClipAugment(KINETICS_MEAN, KINETICS_STD, seed=ds.seed)
    x = normalize(clips, KINETICS_MEAN, KINETICS_STD, device="cuda", dtype=torch.float16)
    x = aug(x, info["index"], epoch=ds.epoch)     # info: ClipDataset(return_info=True)

Each clip gets one draw of parameters, the same for all its frames: brightness, contrast,
saturation and hue factors (torchvision's `ColorJitter` ranges), grayscale with probability
`grayscale`, a Gaussian blur with probability `blur` and sigma in `blur_sigma`. The draw comes
from `np.random.default_rng` seeded from (seed, epoch, item index) (its own stream, spawn_key 4,
apart from the clip's sampling and geometry), on the CPU, so the result depends on the item
only: not on the batch it lands in, the number of workers, the rank, or the device, and a
resumed run augments each item as the uninterrupted run did.

The colour operations are, in this order: brightness `x * b`; contrast `m + c (x - m)` with m
the frame's mean grey (per frame, as torchvision, with one factor c per clip); saturation and
hue as one 3x3 matrix per clip (saturation: `g + s (x - g)`, g the pixel's grey; hue: a rotation
by `h` turns in the YIQ chroma plane, the linear approximation of an HSV hue shift that keeps
this a matrix product). Values are clamped to [0, 1] once, after the colour matrix (torchvision
clamps after each step; here a bright pixel pushed above 1 by `b` can come back with c < 1).
Then grayscale, then the blur (separable, reflect-padded, one kernel per clip). Pixel values
are `batch * std + mean` inside, normalised again on the way out.

Speed (examples and figures: docs/guides/device-augmentation.md, `python
tools/augment_bench.py`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass

import numpy as np
import torch
import torch.nn.functional as F

from vidload._checks import check_choice, check_int
from vidload.normalization import LAYOUTS, Layout

__all__ = ["AugmentParams", "ClipAugment"]

#: ITU-R 601 luma weights (torchvision's `rgb_to_grayscale`).
_GREY = (0.299, 0.587, 0.114)
#: RGB -> YIQ.
_YIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.322], [0.211, -0.523, 0.312]])
_IYQ = np.linalg.inv(_YIQ)


@dataclass(frozen=True)
class AugmentParams:
    """One draw per clip, float64 / bool arrays of shape (B,): the factors (1 = unchanged),
    the hue shift in turns, and sigma (pixels) where `blurred`."""

    brightness: np.ndarray
    contrast: np.ndarray
    saturation: np.ndarray
    hue: np.ndarray
    grey: np.ndarray
    blurred: np.ndarray
    sigma: np.ndarray

    def colour_matrices(self) -> np.ndarray:
        """float64 (B, 3, 3): saturation, then hue rotation, as one RGB -> RGB matrix."""
        grey = np.array(_GREY)
        s = self.saturation[:, None, None]
        sat = s * np.eye(3) + (1 - s) * np.outer(np.ones(3), grey)  # g + s (x - g)
        turn = 2 * math.pi * self.hue
        rot = np.zeros((len(turn), 3, 3))
        rot[:, 0, 0] = 1
        rot[:, 1, 1] = rot[:, 2, 2] = np.cos(turn)
        rot[:, 1, 2], rot[:, 2, 1] = -np.sin(turn), np.sin(turn)
        return _IYQ @ rot @ _YIQ @ sat


@dataclass(eq=False)
class ClipAugment:
    """Colour jitter, grayscale and blur, one parameter draw per clip (see the module).

    Args:
        mean: the per-channel mean (in [0, 1] units) the batch was normalised with
            (`vidload.normalize`'s).
        std: the per-channel std the batch was normalised with.
        seed: the draws' base seed: the dataset's `seed`, so every rank and a resumed run
            draw the same parameters for the same item.
        brightness: factor drawn from [1 - a, 1 + a] (a >= 0; 0 off).
        contrast: factor drawn from [1 - a, 1 + a] (a >= 0; 0 off).
        saturation: factor drawn from [1 - a, 1 + a] (a >= 0; 0 off).
        hue: shift drawn from [-a, a] turns (0 <= a <= 0.5; 0 off).
        grayscale: probability of turning a clip grey.
        blur: probability of blurring a clip; sigma drawn from `blur_sigma` (pixels).
        layout: "TCHW" for (B, T, C, H, W) batches, "CTHW" for (B, C, T, H, W).

    Call: `aug(batch, indices, *, epoch)`: batch float (B, T, 3, H, W) (or CTHW) on any
    device; indices the items' dataset indices (B,) (`info["index"]`, a tensor or ints);
    epoch the dataset's epoch. Returns a new tensor of the batch's shape, dtype and device.
    """

    mean: Sequence[float]
    std: Sequence[float]
    _: KW_ONLY
    seed: int
    brightness: float = 0.4
    contrast: float = 0.4
    saturation: float = 0.4
    hue: float = 0.1
    grayscale: float = 0.2
    blur: float = 0.5
    blur_sigma: tuple[float, float] = (0.1, 2.0)
    layout: Layout = "TCHW"

    def __post_init__(self) -> None:
        self.mean = _three("mean", self.mean)
        std = _three("std", self.std)
        if min(std) <= 0:
            raise ValueError(f"std ({self.std}) must be > 0 in every channel")
        self.std = std
        self.seed = check_int("seed", self.seed, minimum=0)
        for name, top in [
            ("brightness", math.inf),
            ("contrast", math.inf),
            ("saturation", math.inf),
            ("hue", 0.5),
            ("grayscale", 1.0),
            ("blur", 1.0),
        ]:
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0 <= value <= top:
                raise ValueError(f"{name} ({value!r}) must be a number in [0, {top}]")
        lo, hi = self.blur_sigma
        if not 0 < lo <= hi:
            raise ValueError(f"blur_sigma ({self.blur_sigma}) must be (lo, hi) with 0 < lo <= hi")
        self.blur_sigma = (float(lo), float(hi))
        check_choice("layout", self.layout, LAYOUTS)

    def params(
        self, indices: Sequence[int] | torch.Tensor | np.ndarray, *, epoch: int
    ) -> AugmentParams:
        """The draws for items `indices` in `epoch`: one rng per item, seeded from
        (seed, epoch, index), seven uniforms in a fixed order (so turning an augmentation off
        leaves the others' draws as they were)."""
        epoch = check_int("epoch", epoch, minimum=0)
        flat = torch.as_tensor(indices).reshape(-1).tolist()  # any device, any int sequence
        items = [check_int("index", int(i), minimum=0) for i in flat]
        seeds = (np.random.SeedSequence([self.seed, epoch, i], spawn_key=(4,)) for i in items)
        u = np.array([np.random.default_rng(s).random(7) for s in seeds]).reshape(len(items), 7)
        lo, hi = self.blur_sigma
        return AugmentParams(
            brightness=1 + self.brightness * (2 * u[:, 0] - 1),
            contrast=1 + self.contrast * (2 * u[:, 1] - 1),
            saturation=1 + self.saturation * (2 * u[:, 2] - 1),
            hue=self.hue * (2 * u[:, 3] - 1),
            grey=u[:, 4] < self.grayscale,
            blurred=u[:, 5] < self.blur,
            sigma=lo + (hi - lo) * u[:, 6],
        )

    def __call__(
        self, batch: torch.Tensor, indices: Sequence[int] | torch.Tensor | np.ndarray, *, epoch: int
    ) -> torch.Tensor:
        if not isinstance(batch, torch.Tensor) or not batch.is_floating_point():
            raise TypeError(
                f"batch must be a float tensor (vidload.normalize's output), got "
                f"{getattr(batch, 'dtype', type(batch).__name__)}"
            )
        channel_dim = 2 if self.layout == "TCHW" else 1
        if batch.ndim != 5 or batch.shape[channel_dim] != 3:
            raise ValueError(
                f"batch must be (B, T, 3, H, W) (layout {self.layout!r}: "
                f"{'(B, 3, T, H, W)' if self.layout == 'CTHW' else 'as given'}), got "
                f"{tuple(batch.shape)}"
            )
        p = self.params(indices, epoch=epoch)
        if len(p.brightness) != batch.shape[0]:
            raise ValueError(f"{len(p.brightness)} indices for a batch of {batch.shape[0]} clips")
        x = batch if self.layout == "TCHW" else batch.transpose(1, 2)
        out = self._apply(x, p)
        return out if self.layout == "TCHW" else out.transpose(1, 2)

    def _apply(self, x: torch.Tensor, p: AugmentParams) -> torch.Tensor:
        """x float (B, T, 3, H, W) normalised -> the same, augmented."""
        dev, dt = x.device, x.dtype

        def per_clip(a: np.ndarray) -> torch.Tensor:
            return torch.as_tensor(a, device=dev).to(dt).view(-1, 1, 1, 1, 1)

        mean = torch.tensor(self.mean, device=dev, dtype=dt).view(1, 1, 3, 1, 1)
        std = torch.tensor(self.std, device=dev, dtype=dt).view(1, 1, 3, 1, 1)
        grey_w = torch.tensor(_GREY, device=dev, dtype=dt).view(1, 1, 3, 1, 1)
        img = torch.addcmul(mean, x, std)  # pixels in [0, 1]
        img.mul_(per_clip(p.brightness))
        m = (img * grey_w).sum(2, keepdim=True).mean((3, 4), keepdim=True)
        img = torch.lerp(m, img, per_clip(p.contrast))  # m + c (img - m)
        matrices = torch.as_tensor(p.colour_matrices(), device=dev).to(dt)
        img = torch.einsum("bij,btjhw->btihw", matrices, img).clamp_(0, 1)
        if p.grey.any():
            grey = (img * grey_w).sum(2, keepdim=True).expand_as(img)
            img = torch.where(per_clip(p.grey).bool(), grey, img)
        if p.blurred.any():
            which = torch.as_tensor(np.flatnonzero(p.blurred), device=dev)
            img[which] = _blur(img[which], p.sigma[p.blurred], self.blur_sigma[1])
        return img.sub_(mean).div_(std)


def _blur(clips: torch.Tensor, sigma: np.ndarray, max_sigma: float) -> torch.Tensor:
    """Gaussian blur of each clip (n, T, 3, H, W) with its sigma (n,): separable, reflect-padded,
    kernel radius ceil(3 * max_sigma) (capped below the frame size) for every clip, so one
    grouped convolution per direction serves the whole batch."""
    n, t, c, h, w = clips.shape
    radius = min(math.ceil(3 * max_sigma), h - 1, w - 1)
    offsets = np.arange(-radius, radius + 1)
    kernels = np.exp(-(offsets[None, :] ** 2) / (2 * sigma[:, None] ** 2))
    kernels /= kernels.sum(1, keepdims=True)
    k = torch.as_tensor(kernels, device=clips.device).to(clips.dtype)
    k = k.repeat_interleave(c, 0)  # (n * 3, K): one kernel per clip, for each channel
    y = clips.permute(1, 0, 2, 3, 4).reshape(t, n * c, h, w)
    for pad, kernel in [((radius, radius, 0, 0), (1, -1)), ((0, 0, radius, radius), (-1, 1))]:
        y = F.conv2d(F.pad(y, pad, mode="reflect"), k.view(n * c, 1, *kernel), groups=n * c)
    return y.reshape(t, n, c, h, w).permute(1, 0, 2, 3, 4)


def _three(name: str, values: Sequence[float]) -> tuple[float, float, float]:
    out = tuple(float(v) for v in values)
    if len(out) != 3:
        raise ValueError(f"{name} ({values!r}) must have 3 values (R, G, B)")
    return out
