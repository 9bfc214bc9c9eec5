"""Clip geometry on uint8 (k, H, W, 3) frames: plan a scale/crop/flip from an rng, apply it.

One plan per clip (`ClipGeometry`): the random draws are made once, from the item's rng, in a
form that does not depend on the frame size (short side, crop size, area fraction and aspect
ratio, crop position as fractions in [0, 1], flip). `ClipGeometry.resolve(height, width)` turns
it into pixels for a given frame: the box to take from the source frame and the size to resize
it to. Every frame of a clip gets the same box, size and flip.

What a plan does, for a source frame of H x W:

- `short_side=S`: the frame is scaled (aspect kept) so that its short side is S; `(lo, hi)`
  draws S uniformly from [lo, hi] per clip when training and uses `lo` at test time.
- `crop=(ch, cw)`: a ch x cw window of the scaled frame, at a random position when training, at
  the centre at test time (or, with `num_views` > 1 at test time, at evenly spaced positions along
  the long side: left/centre/right for 3, mmaction2's ThreeCrop). The crop must fit inside the
  scaled frame (ValueError otherwise, naming both sizes).
- `crop_scale=(a, b)` (training only, needs `crop`): a random-resized crop. The box covers an area
  fraction drawn uniformly from [a, b] of the frame, with aspect ratio w/h drawn log-uniformly
  from [3/4, 4/3], at a random position, and is resized to `crop`. A box wider or taller than the
  frame is clipped to it (its aspect then changes; torchvision retries 10 times and falls back to
  a centre crop instead, which needs the frame size at planning time). The area fraction does not
  depend on the scale, so `short_side` does not change a training clip here; it still sets the
  scale of the test-time centre crop.
- `flip=True` (training only): horizontal flip with probability 0.5.

The box is computed in the source frame's pixels, so a source may decode at a reduced size and
still cut the same region (`apply_geometry(..., frame_size=...)`), or scale while converting from
YUV (`VideoSource`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeGuard

import numpy as np

from vidload._checks import check_bool, check_int, check_positive_number
from vidload._cv2 import cv2

__all__ = [
    "ASPECT_RANGE",
    "ClipGeometry",
    "GeometryOptions",
    "Resolved",
    "apply_geometry",
    "check_geometry",
    "plan_geometry",
    "resize_into",
    "scale_box",
    "scaled_size",
]

#: Aspect ratios (w / h) a random-resized crop draws from, log-uniformly (as torchvision).
ASPECT_RANGE = (3 / 4, 4 / 3)

ShortSide = int | tuple[int, int]
Crop = int | tuple[int, int]


@dataclass(frozen=True)
class Resolved:
    """A plan resolved for one frame size.

    Attributes:
        box: (top, left, box_h, box_w) in the source frame's pixels; [top, top + box_h) x
            [left, left + box_w) lies inside the frame.
        out: (out_h, out_w) the box is resized to.
        flip: whether the result is flipped horizontally (after resizing).
    """

    box: tuple[int, int, int, int]
    out: tuple[int, int]
    flip: bool


@dataclass(frozen=True)
class ClipGeometry:
    """One clip's geometry, independent of the frame size (see the module docstring).

    Attributes:
        short_side: the short side S to scale to, or None (keep the size).
        crop: (h, w) of the output crop, or None (no crop).
        area: area fraction of a random-resized crop's box, or None (plain crop).
        aspect: aspect ratio w / h of a random-resized crop's box, or None.
        pos: (y, x) position of the box, as fractions in [0, 1] of the room left around it.
        flip: flip horizontally.
        view: which spatial view this is (0-based), for the record.
        num_views: spatial views along the long side (test time); 1 otherwise.
    """

    short_side: int | None
    crop: tuple[int, int] | None
    area: float | None
    aspect: float | None
    pos: tuple[float, float]
    flip: bool
    view: int = 0
    num_views: int = 1

    def resolve(self, height: int, width: int) -> Resolved:
        """The box, output size and flip for a source frame of `height` x `width` pixels.

        Raises:
            ValueError: the crop does not fit inside the (scaled) frame.
        """
        if height < 1 or width < 1:
            raise ValueError(f"frame size ({height}x{width}) must be at least 1x1")
        scale = 1.0 if self.short_side is None else self.short_side / min(height, width)
        scaled_h, scaled_w = scaled_size(height, width, self.short_side)
        if self.crop is None:
            return Resolved((0, 0, height, width), (scaled_h, scaled_w), self.flip)
        crop_h, crop_w = self.crop
        if self.area is not None:
            assert self.aspect is not None  # plan_geometry sets area and aspect together
            area = self.area * height * width
            box_h = min(height, max(1, round(math.sqrt(area / self.aspect))))
            box_w = min(width, max(1, round(math.sqrt(area * self.aspect))))
        else:
            if crop_h > scaled_h or crop_w > scaled_w:
                how = f"scaled to short side {self.short_side}: " if self.short_side else ""
                raise ValueError(
                    f"crop ({crop_h}x{crop_w}) does not fit in the frame ({height}x{width}, "
                    f"{how}{scaled_h}x{scaled_w}); set short_side >= the crop size"
                )
            box_h = min(height, max(1, round(crop_h / scale)))
            box_w = min(width, max(1, round(crop_w / scale)))
        pos_y, pos_x = self.pos
        if self.num_views > 1:  # evenly spaced along the long side, centred on the short one
            along = self.view / (self.num_views - 1)
            pos_y, pos_x = (along, 0.5) if height > width else (0.5, along)
        top = round(pos_y * (height - box_h))
        left = round(pos_x * (width - box_w))
        return Resolved((top, left, box_h, box_w), (crop_h, crop_w), self.flip)


def scaled_size(height: int, width: int, short_side: int | None) -> tuple[int, int]:
    """(height, width) with the short side scaled to `short_side` (aspect kept, rounded)."""
    if short_side is None:
        return height, width
    if height <= width:
        return short_side, max(1, round(width * short_side / height))
    return max(1, round(height * short_side / width)), short_side


def _is_pair(value: object) -> TypeGuard[Sequence[object]]:
    return isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 2


def _pair(name: str, value: object) -> tuple[int, int] | None:
    """None, an int v -> (v, v), or an (h, w) pair of ints >= 1."""
    if value is None:
        return None
    try:
        h, w = (check_int(name, v) for v in (value if _is_pair(value) else (value, value)))
    except TypeError as e:
        raise TypeError(
            f"{name} must be None, an int or an (h, w) pair of ints, got {value!r}"
        ) from e
    if min(h, w) < 1:
        raise ValueError(f"{name} ({value!r}) must be >= 1")
    return h, w


def _scale_range(value: object) -> tuple[float, float] | None:
    """None, or (a, b) with 0 < a <= b <= 1."""
    if value is None:
        return None
    rule = f"crop_scale ({value!r}) must be (a, b) with 0 < a <= b <= 1"
    kind = f"crop_scale must be None or an (a, b) pair of numbers, got {value!r}"
    if not _is_pair(value):
        raise TypeError(kind)
    try:
        a, b = (check_positive_number("crop_scale", v) for v in value)
    except TypeError as e:
        raise TypeError(kind) from e
    except ValueError as e:
        raise ValueError(rule) from e
    if not a <= b <= 1:
        raise ValueError(rule)
    return a, b


@dataclass(frozen=True)
class GeometryOptions:
    """Geometry options, checked once (`check_geometry`): what each clip's plan is drawn from.

    Attributes:
        short_side: (lo, hi) range of the short side S to scale to, or None (keep the size).
        crop: (h, w) of the output crop, or None.
        crop_scale: (a, b) area-fraction range of a random-resized crop, or None.
        flip: horizontal flip with probability 0.5 (training only).
        num_views: spatial views along the long side (test time); 1 otherwise.
        train: random plans (True) or the deterministic test-time plan.
    """

    short_side: tuple[int, int] | None
    crop: tuple[int, int] | None
    crop_scale: tuple[float, float] | None
    flip: bool
    num_views: int
    train: bool

    def plan(self, rng: np.random.Generator | None, view: int = 0) -> ClipGeometry | None:
        """Draw one clip's geometry from `rng`; None when no geometry was asked for.

        When training, draws (in this order, only those that apply): S from the short_side
        range, the area fraction and log-aspect of a random-resized crop, the crop position
        (y, x), the flip. At test time nothing is drawn (`rng` may be None): S is the range's
        low end, the crop is centred (or view `view` of `num_views` along the long side),
        crop_scale and flip are not used.
        """
        short, crop_hw, scale = self.short_side, self.crop, self.crop_scale
        if not 0 <= check_int("view", view) < self.num_views:
            raise ValueError(f"view ({view}) must be in [0, {self.num_views})")
        if short is None and crop_hw is None and not (self.flip and self.train):
            return None
        if not self.train:
            s = None if short is None else short[0]
            return ClipGeometry(s, crop_hw, None, None, (0.5, 0.5), False, view, self.num_views)
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a np.random.Generator when train=True, got {rng!r}")
        s = None if short is None else int(rng.integers(short[0], short[1] + 1))
        area = aspect = None
        pos = (0.5, 0.5)
        if crop_hw is not None:
            if scale is not None:
                area = float(rng.uniform(scale[0], scale[1]))
                lo, hi = math.log(ASPECT_RANGE[0]), math.log(ASPECT_RANGE[1])
                aspect = math.exp(float(rng.uniform(lo, hi)))
            pos = (float(rng.random()), float(rng.random()))
        do_flip = self.flip and bool(rng.random() < 0.5)
        return ClipGeometry(s, crop_hw, area, aspect, pos, do_flip)


def check_geometry(
    *,
    short_side: ShortSide | None,
    crop: Crop | None,
    crop_scale: tuple[float, float] | None,
    flip: bool,
    num_views: int = 1,
    train: bool = True,
) -> GeometryOptions:
    """The geometry options, checked (see the module docstring for their meaning).

    Raises:
        TypeError, ValueError: a value of the wrong type, or options that do not go together
            (crop_scale without crop; num_views > 1 without crop or while training).
    """
    short = _pair("short_side", short_side)  # S -> (S, S), or (lo, hi)
    if short is not None and short[0] > short[1]:
        raise ValueError(f"short_side ({short_side!r}) must be (lo, hi) with lo <= hi")
    crop_hw = _pair("crop", crop)
    scale = _scale_range(crop_scale)
    num_views = check_int("spatial_views", num_views, minimum=1)
    flip, train = check_bool("flip", flip), check_bool("train", train)
    if scale is not None and crop_hw is None:
        raise ValueError(
            f"crop_scale ({crop_scale!r}) needs crop: the random box is resized to the crop size"
        )
    if num_views > 1 and crop_hw is None:
        raise ValueError(
            f"spatial_views ({num_views}) needs crop: views are crops along the long side"
        )
    if num_views > 1 and train:
        raise ValueError(
            f"spatial_views ({num_views}) > 1 is for testing (train=False): training crops "
            "are drawn at random"
        )
    return GeometryOptions(short, crop_hw, scale, flip, num_views, train)


def plan_geometry(
    *,
    short_side: ShortSide | None = None,
    crop: Crop | None = None,
    crop_scale: tuple[float, float] | None = None,
    flip: bool = False,
    train: bool,
    rng: np.random.Generator | None,
    view: int = 0,
    num_views: int = 1,
) -> ClipGeometry | None:
    """One clip's geometry: `check_geometry(...).plan(rng, view)` (see `GeometryOptions.plan`).
    For many clips, check once and call `plan` per clip, as ClipDataset does."""
    options = check_geometry(
        short_side=short_side,
        crop=crop,
        crop_scale=crop_scale,
        flip=flip,
        num_views=num_views,
        train=train,
    )
    return options.plan(rng, view)


def resize_into(
    image: np.ndarray,
    box: tuple[float, float, float, float],
    resolved: Resolved,
    out: np.ndarray,
) -> None:
    """Crop `box` (top, left, h, w in `image`'s pixels, rounded here) from uint8 (H, W, 3)
    `image`, resize it to `out`'s (out_h, out_w) and flip it as `resolved` says, into `out`.

    Resize: cv2 INTER_AREA when shrinking by 2x or more in either dimension (it averages every
    source pixel: no aliasing), INTER_LINEAR otherwise (growing, or shrinking by less than 2x,
    where bilinear taps less than 2 pixels apart still reach every source pixel). On one
    320x240 -> 171x128 frame, one thread: INTER_AREA 235 us of CPU, INTER_LINEAR 32 us, mean
    |difference| 0.25 of 255 (`python tools/micro.py resize`); after a DCT-scaled decode the
    remaining factor is always below 2, so this is what the container sources' fused path pays.
    """
    h, w = image.shape[:2]
    top, left = min(h - 1, round(box[0])), min(w - 1, round(box[1]))
    bottom, right = (
        min(h, max(top + 1, round(box[0] + box[2]))),
        min(w, max(left + 1, round(box[1] + box[3]))),
    )
    region = image[top:bottom, left:right]
    out_h, out_w = out.shape[:2]
    if region.shape[:2] != (out_h, out_w):
        shrink = max(region.shape[0] / out_h, region.shape[1] / out_w)
        interp = cv2.INTER_AREA if shrink >= 2 else cv2.INTER_LINEAR
        if not resolved.flip:  # straight into `out`
            cv2.resize(region, (out_w, out_h), dst=out, interpolation=interp)
            return
        region = cv2.resize(region, (out_w, out_h), interpolation=interp)
    out[...] = region[:, ::-1] if resolved.flip else region


def frames_mismatch(frames: object, num_frames: int | None = None) -> str | None:
    """None when `frames` is uint8 (k, H, W, 3) RGB frames (k = `num_frames` when given), what
    a source's `read` returns and `apply_geometry` takes; else what it is instead, for a
    message (`int64 (3, 4)`, `list`)."""
    if not isinstance(frames, np.ndarray):
        return type(frames).__name__
    if frames.dtype == np.uint8 and frames.ndim == 4 and frames.shape[3] == 3:
        if num_frames is None or frames.shape[0] == num_frames:
            return None
    return f"{frames.dtype} {frames.shape}"


def apply_geometry(
    frames: np.ndarray,
    geometry: ClipGeometry | None,
    *,
    frame_size: tuple[int, int] | None = None,
) -> np.ndarray:
    """Apply one clip's geometry to every frame: crop the box, resize (see `resize_into`), flip.

    Args:
        frames: uint8 (k, H, W, 3) RGB.
        geometry: the clip's plan; None returns `frames` unchanged.
        frame_size: (H0, W0) of the source frames the plan is resolved against, when `frames`
            were decoded at a reduced size (JPEG DCT scaling); the box is scaled by H / H0 and
            W / W0. None: the frames' own size.

    Returns:
        uint8 (k, out_h, out_w, 3) RGB, a new C-contiguous array.

    The generic path for any source, and the reference the sources' fused paths are tested
    against.
    """
    if geometry is None:
        return frames
    got = frames_mismatch(frames)
    if got is not None:
        raise TypeError(f"frames must be a uint8 (k, H, W, 3) array, got {got}")
    k, height, width = frames.shape[:3]
    h0, w0 = (height, width) if frame_size is None else frame_size
    resolved = geometry.resolve(h0, w0)
    out = np.empty((k, *resolved.out, 3), np.uint8)
    box = scale_box(resolved.box, (h0, w0), (height, width))
    for j in range(k):
        resize_into(frames[j], box, resolved, out[j])
    return out


def scale_box(
    box: tuple[int, int, int, int], frame_size: tuple[int, int], decoded: tuple[int, int]
) -> tuple[float, float, float, float]:
    """`box` (top, left, h, w) in a frame of `frame_size` mapped onto a `decoded`-size frame."""
    fy, fx = decoded[0] / frame_size[0], decoded[1] / frame_size[1]
    return box[0] * fy, box[1] * fx, box[2] * fy, box[3] * fx
