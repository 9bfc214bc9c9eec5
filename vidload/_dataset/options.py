"""ClipDataset's argument checks: every option checked (and normalised) in one place.

`ClipOptions` holds the options as ClipDataset keeps them (checked once, plain ints and floats,
the seed drawn when None) and draws a clip's frame indices from them (pure: the options, a frame
count, a clip number and an rng in, int64 indices out; the dataset adds the entry's offset, the
geometry and the read); `check_video_list` checks the loaded video list against them. The
messages name the value and the rule (STYLE.md); the int/bool/number rules are
`vidload._checks`'.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Generic, Literal, TypeVar, get_args, overload

import numpy as np
import torch

from vidload._checks import (
    check_bool,
    check_choice,
    check_optional_int,
    check_positive_int,
    check_positive_number,
)
from vidload._dataset.entries import VideoEntries
from vidload._dist import shared_seed
from vidload._windows import describe
from vidload.manifest import UNLABELLED
from vidload.sampling import (
    SAMPLING_MODES,
    SamplingFn,
    SamplingMode,
    ShortPolicy,
    resampled_indices,
    sample_clip,
    window_indices,
)
from vidload.sources._adapted import adapt_source
from vidload.sources.base import FrameSource, FrameSourceBase
from vidload.transforms import Crop, GeometryOptions, ShortSide, check_geometry

OnMismatch = Literal["resample", "error"]
OnError = Literal["raise", "skip"]
Layout = Literal["TCHW", "CTHW"]
Missing = Literal["error", "skip"]


@dataclass(frozen=True)
class ClipOptions:
    """ClipDataset's options, checked and normalised once: its parameters after `videos`, by
    name (ClipDataset's signature lists them for users, with their defaults and meaning, and
    passes each by name; `OptionAttributes` makes each an attribute of the dataset), plus
    `geometry` (the checked geometry options, which plan each clip's geometry) and `adapted`
    (the source as the dataset asks it: itself when it subclasses `FrameSourceBase`, else
    wrapped once, here, by `vidload.sources._adapted.adapt_source`), derived from them.

    Values are normalised as ClipDataset holds them (plain ints and floats, `spatial_views`
    from the geometry); `seed=None` draws a seed: under torch.distributed a collective, so it
    comes last, after every check that may raise.

    Raises:
        TypeError, ValueError: an option of the wrong type or value, or options that do not go
            together; the message names the value and the rule.
    """

    source: FrameSource
    num_frames: int
    sampling: SamplingMode | SamplingFn
    train: bool
    clips_per_video: int
    stride: int
    transform: Callable[[torch.Tensor], object] | None
    on_mismatch: OnMismatch
    on_error: OnError
    seed: int | None  # None draws one here: an int once made
    short_policy: ShortPolicy
    max_attempts: int
    short_side: ShortSide | None
    crop: Crop | None
    crop_scale: tuple[float, float] | None
    flip: bool
    layout: Layout
    spatial_views: int
    stack_views: bool
    multi_label: bool
    num_classes: int | None
    fps: float | None
    clip_seconds: float | None
    return_info: bool
    missing: Missing
    geometry: GeometryOptions = field(init=False, repr=False)
    adapted: FrameSourceBase = field(init=False, repr=False)

    def __post_init__(self) -> None:
        put = functools.partial(object.__setattr__, self)  # frozen: set once, here
        sampling, train = self.sampling, self.train
        put("adapted", adapt_source(self.source))  # TypeError unless a FrameSource
        put("num_frames", check_positive_int("num_frames", self.num_frames))
        put("clips_per_video", check_positive_int("clips_per_video", self.clips_per_video))
        put("stride", check_positive_int("stride", self.stride))
        put("max_attempts", check_positive_int("max_attempts", self.max_attempts))
        check_bool("train", train)
        check_bool("stack_views", self.stack_views)
        check_bool("multi_label", self.multi_label)
        check_bool("return_info", self.return_info)
        check_choice("on_mismatch", self.on_mismatch, get_args(OnMismatch))
        check_choice("on_error", self.on_error, get_args(OnError))
        check_choice("short_policy", self.short_policy, get_args(ShortPolicy))
        check_choice("layout", self.layout, get_args(Layout))
        check_choice("missing", self.missing, get_args(Missing))
        if self.fps is not None:
            put("fps", check_positive_number("fps", self.fps))
        if self.clip_seconds is not None:
            put("clip_seconds", check_positive_number("clip_seconds", self.clip_seconds))
        if isinstance(sampling, str):
            check_choice("sampling", sampling, SAMPLING_MODES)
            if sampling == "segment" and self.stride != 1:
                raise ValueError(f"stride ({self.stride}) must be 1 for sampling='segment'")
        elif not callable(sampling):
            raise TypeError(f"sampling must be one of {SAMPLING_MODES} or a callable")
        elif self.stride != 1:
            raise ValueError(f"stride ({self.stride}) must be 1 with a sampling function")
        if self.transform is not None and not callable(self.transform):
            raise TypeError(f"transform must be callable or None, got {self.transform!r}")
        geometry = check_geometry(
            short_side=self.short_side,
            crop=self.crop,
            crop_scale=self.crop_scale,
            flip=self.flip,
            num_views=self.spatial_views,
            train=train,
        )
        put("geometry", geometry)
        put("spatial_views", geometry.num_views)  # checked there: an int >= 1
        seed = check_optional_int("seed", self.seed, minimum=0)
        if self.multi_label:
            if self.num_classes is None:
                raise TypeError(
                    "num_classes must be an int, got None: multi_label=True needs it (the "
                    "number of classes, the length of each multi-hot label)"
                )
            put("num_classes", check_positive_int("num_classes", self.num_classes))
        elif self.num_classes is not None:
            raise ValueError(f"num_classes ({self.num_classes}) applies only with multi_label=True")
        fps, clip_seconds = self.fps, self.clip_seconds
        if fps is not None and clip_seconds is not None:
            raise ValueError(
                f"fps ({fps}) and clip_seconds ({clip_seconds}) are alternatives: fps resamples "
                f"the video for `sampling`, clip_seconds spreads num_frames over a time window"
            )
        if clip_seconds is not None and not isinstance(sampling, str):
            raise ValueError("clip_seconds replaces `sampling`; a sampling function cannot be used")
        put("seed", shared_seed() if seed is None else seed)

    def clip_indices(
        self, count: int, c: int, rng: np.random.Generator, timestamps: Callable[[], np.ndarray]
    ) -> np.ndarray:
        """Clip `c` of an entry of `count` frames: int64 (num_frames,) indices from the
        entry's start, by the sampling options (the one place they meet `vidload.sampling`'s
        pure functions): the sampling mode (`sample_clip`) over the `count` frames, or with fps
        over the frames on screen every 1/fps s (`resampled_indices`); with clip_seconds
        `window_indices`. fps / clip_seconds use the frames' times (`timestamps()`, asked only
        then: float64 seconds of the entry's `count` frames), so every mode samples inside the
        entry."""
        if self.clip_seconds is not None:
            return window_indices(
                timestamps(),
                self.num_frames,
                self.clip_seconds,
                train=self.train,
                rng=rng,
                clip_index=c,
                num_clips=self.clips_per_video,
            )
        grid = resampled_indices(timestamps(), self.fps) if self.fps is not None else None
        indices = sample_clip(
            self.sampling,
            count if grid is None else len(grid),
            self.num_frames,
            train=self.train,
            rng=rng,
            clip_index=c,
            num_clips=self.clips_per_video,
            stride=self.stride,
            short_policy=self.short_policy,
        )
        return indices if grid is None else grid[indices]


#: ClipDataset's option names (its parameters after `videos`), readable as its attributes
OPTION_NAMES = frozenset(f.name for f in fields(ClipOptions) if f.init)

T = TypeVar("T")


class Option(Generic[T]):
    """A dataset attribute that is its option of the same name: `ds.num_frames` is
    `ds.options.num_frames`. Read-only: the options are checked together once, when the
    dataset is built (make another dataset to change one)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type) -> Option[T]: ...
    @overload
    def __get__(self, instance: OptionAttributes, owner: type) -> T: ...
    def __get__(self, instance: OptionAttributes | None, owner: type) -> Option[T] | T:
        if instance is None:
            return self
        return getattr(instance.options, self.name)  # a field of ClipOptions, by its name

    def __set__(self, instance: OptionAttributes, value: object) -> None:
        raise AttributeError(
            f"{self.name} is an option of the dataset, fixed when it is built; make another "
            f"ClipDataset to change it"
        )


class OptionAttributes:
    """ClipDataset's options as its attributes, one declared per option (`Option`), so
    that readers, type checkers and the docs see them; the values live in `options`."""

    options: ClipOptions

    source = Option[FrameSource]()
    num_frames = Option[int]()
    sampling = Option[SamplingMode | SamplingFn]()
    train = Option[bool]()
    clips_per_video = Option[int]()
    stride = Option[int]()
    transform = Option[Callable[[torch.Tensor], object] | None]()
    on_mismatch = Option[OnMismatch]()
    on_error = Option[OnError]()
    seed = Option[int]()
    short_policy = Option[ShortPolicy]()
    max_attempts = Option[int]()
    short_side = Option[ShortSide | None]()
    crop = Option[Crop | None]()
    crop_scale = Option[tuple[float, float] | None]()
    flip = Option[bool]()
    layout = Option[Layout]()
    spatial_views = Option[int]()
    stack_views = Option[bool]()
    multi_label = Option[bool]()
    num_classes = Option[int | None]()
    fps = Option[float | None]()
    clip_seconds = Option[float | None]()
    return_info = Option[bool]()
    missing = Option[Missing]()


def check_video_list(
    entries: VideoEntries, videos: object, *, source: FrameSourceBase, num_classes: int | None
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
        if source.timestamps is None:
            raise TypeError(
                f"video {first.video_id!r} is a window {describe(first.start, first.end)}, and "
                f"{source.source_name} has no timestamps(video_id) method to find it by"
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
