"""ClipDataset's argument checks: every option checked (and normalised) in one place.

`check_options` returns the options as ClipDataset stores them (plain ints and floats, the seed
drawn when None); `check_video_list` checks the loaded video list against them. The messages
name the value and the rule (STYLE.md); the int/bool/number rules are `vidload._checks`'.
"""

from __future__ import annotations

import inspect
from typing import Any, Literal, get_args

import numpy as np

from vidload._checks import (
    check_bool,
    check_choice,
    check_optional_int,
    check_positive_int,
    check_positive_number,
)
from vidload._dist import shared_seed
from vidload._entries import VideoEntries
from vidload._windows import describe
from vidload.manifest import UNLABELLED
from vidload.sampling import SAMPLING_MODES, SHORT_POLICIES
from vidload.sources.base import FrameSource
from vidload.transforms import Crop, ShortSide, check_geometry

OnMismatch = Literal["resample", "error"]
OnError = Literal["raise", "skip"]
Layout = Literal["TCHW", "CTHW"]
Missing = Literal["error", "skip"]


def check_options(
    source: object,
    *,
    num_frames: object,
    sampling: object,
    train: bool,
    clips_per_video: object,
    stride: object,
    transform: object,
    on_mismatch: object,
    on_error: object,
    seed: object,
    short_policy: object,
    max_attempts: object,
    short_side: ShortSide | None,
    crop: Crop | None,
    crop_scale: tuple[float, float] | None,
    flip: bool,
    layout: object,
    spatial_views: int,
    stack_views: object,
    multi_label: object,
    num_classes: object,
    fps: object,
    clip_seconds: object,
    return_info: object,
    missing: object = "error",
) -> dict[str, Any]:
    """ClipDataset's options, checked, by attribute name (see ClipDataset for their meaning),
    plus `_geometry` (the checked geometry options, which plan each clip's geometry) and
    `_fused` (whether `source.read` takes a `geometry`). `seed=None` draws a seed: under
    torch.distributed a collective, so it comes last, after every check that may raise.

    Raises:
        TypeError, ValueError: an option of the wrong type or value, or options that do not go
            together; the message names the value and the rule.
    """
    if not isinstance(source, FrameSource):
        raise TypeError(
            f"source must provide reported_frames, actual_frames and read (a FrameSource), "
            f"got {type(source).__name__}"
        )
    num_frames = check_positive_int("num_frames", num_frames)
    clips_per_video = check_positive_int("clips_per_video", clips_per_video)
    stride = check_positive_int("stride", stride)
    max_attempts = check_positive_int("max_attempts", max_attempts)
    if isinstance(sampling, str):
        check_choice("sampling", sampling, SAMPLING_MODES)
        if sampling == "segment" and stride != 1:
            raise ValueError(f"stride ({stride}) must be 1 for sampling='segment'")
    elif not callable(sampling):
        raise TypeError(f"sampling must be one of {SAMPLING_MODES} or a callable")
    elif stride != 1:
        raise ValueError(f"stride ({stride}) must be 1 with a sampling function")
    check_bool("train", train)
    if transform is not None and not callable(transform):
        raise TypeError(f"transform must be callable or None, got {transform!r}")
    check_choice("on_mismatch", on_mismatch, get_args(OnMismatch))
    check_choice("on_error", on_error, get_args(OnError))
    check_choice("short_policy", short_policy, SHORT_POLICIES)
    check_choice("layout", layout, get_args(Layout))
    check_bool("stack_views", stack_views)
    geometry = check_geometry(
        short_side=short_side,
        crop=crop,
        crop_scale=crop_scale,
        flip=flip,
        num_views=spatial_views,
        train=train,
    )
    spatial_views = geometry.num_views  # checked there: an int >= 1
    seed = check_optional_int("seed", seed, minimum=0)
    check_bool("multi_label", multi_label)
    if multi_label:
        num_classes = check_positive_int("num_classes", num_classes)
    elif num_classes is not None:
        raise ValueError(f"num_classes ({num_classes}) applies only with multi_label=True")
    if fps is not None:
        fps = check_positive_number("fps", fps)
    if clip_seconds is not None:
        clip_seconds = check_positive_number("clip_seconds", clip_seconds)
    if fps is not None and clip_seconds is not None:
        raise ValueError(
            f"fps ({fps}) and clip_seconds ({clip_seconds}) are alternatives: fps resamples "
            f"the video for `sampling`, clip_seconds spreads num_frames over a time window"
        )
    if clip_seconds is not None and not isinstance(sampling, str):
        raise ValueError("clip_seconds replaces `sampling`; a sampling function cannot be used")
    check_bool("return_info", return_info)
    check_choice("missing", missing, get_args(Missing))
    return {
        "source": source,
        "num_frames": num_frames,
        "sampling": sampling,
        "train": train,
        "clips_per_video": clips_per_video,
        "stride": stride,
        "transform": transform,
        "on_mismatch": on_mismatch,
        "on_error": on_error,
        "seed": shared_seed() if seed is None else seed,
        "short_policy": short_policy,
        "max_attempts": max_attempts,
        "short_side": short_side,
        "crop": crop,
        "crop_scale": crop_scale,
        "flip": flip,
        "layout": layout,
        "spatial_views": spatial_views,
        "stack_views": stack_views,
        "multi_label": multi_label,
        "num_classes": num_classes,
        "fps": fps,
        "clip_seconds": clip_seconds,
        "return_info": return_info,
        "missing": missing,
        "_geometry": geometry,
        "_fused": takes_geometry(source),
    }


def check_video_list(
    entries: VideoEntries, videos: object, *, source: object, num_classes: int | None
) -> None:
    """A loaded video list that the options can use: not empty; windows only with a source
    that has `timestamps` and without a rawframes offset; every label below `num_classes`
    (multi_label).

    Unlabelled videos (label -1) are allowed, also when training: self-supervised pretraining
    (VideoMAE-style masked pretraining) ignores labels; a supervised loss given -1 fails
    loudly ("Target -1 is out of bounds"), never silently.
    """
    if not entries:
        raise ValueError(f"videos ({videos!r}) lists no videos")
    windows = entries.windows()
    if windows is not None:
        start, end = windows
        windowed = ~(np.isnan(start) & np.isnan(end))
        first = entries[int(np.flatnonzero(windowed)[0])]
        if getattr(source, "timestamps", None) is None:
            raise TypeError(
                f"video {first.video_id!r} is a window {describe(first.start, first.end)}, and "
                f"{type(source).__name__} has no timestamps(video_id) method to find it by"
            )
        offsets = entries.offsets()
        both = np.flatnonzero(windowed & (offsets != 0)) if offsets is not None else np.zeros(0)
        if len(both):
            with_offset = entries[int(both[0])]
            raise ValueError(
                f"video {with_offset.video_id!r} has both an offset ({with_offset.offset}) and "
                f"a window: give one of them"
            )
    if num_classes is None:
        return
    labels, owners = entries.all_labels()  # every entry's `labels or (label,)`, in order
    bad = np.flatnonzero((labels != UNLABELLED) & ((labels < 0) | (labels >= num_classes)))
    if len(bad):
        vid, k = entries.video_id(int(owners[bad[0]])), int(labels[bad[0]])
        raise ValueError(f"video {vid!r} has label {k}, outside [0, num_classes={num_classes})")


def takes_geometry(source: FrameSource) -> bool:
    """Whether `source.read` accepts a `geometry` keyword (the fused decode path)."""
    try:
        params = inspect.signature(source.read).parameters
    except (TypeError, ValueError):
        return False
    return "geometry" in params or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()
    )
