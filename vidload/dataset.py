"""ClipDataset: samples frame indices, asks a frame source for them, reconciles frame counts.

Randomness: item `i` of epoch `e` draws from `np.random.default_rng([seed, e, i])`, so an item's
clip depends on (seed, epoch, index) only, never on the number of DataLoader workers or on
which worker loads it.

State shared across DataLoader workers and epochs lives in shared-memory tensors created in
`__init__` (the epoch, the frame counts learned from reads, the videos found broken), so a
count learned by one worker is used by every worker, in this epoch and later ones, including
non-persistent workers re-created each epoch. Two workers that discover the same video at the
same moment may both warn about it; otherwise each video is warned about once.
"""

from __future__ import annotations

import inspect
import operator
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Literal, get_args

import numpy as np
import torch
from torch.utils.data import Dataset

from vidload._checks import (
    check_bool,
    check_choice,
    check_int,
    check_optional_int,
    check_positive_int,
    check_positive_number,
    qualname,
)
from vidload._cv2 import cv2
from vidload._dist import shared_seed
from vidload.errors import FrameCountError, VideoReadError, VidloadError
from vidload.manifest import UNLABELLED, VideoEntry, load_videos
from vidload.sampling import (
    SAMPLING_MODES,
    SHORT_POLICIES,
    SamplingFn,
    SamplingMode,
    ShortPolicy,
    resampled_indices,
    sample_clip,
    window_indices,
)
from vidload.sources.base import FrameSource
from vidload.transforms import ClipGeometry, apply_geometry, check_geometry, plan_geometry

OnMismatch = Literal["resample", "error"]
OnError = Literal["raise", "skip"]
Layout = Literal["TCHW", "CTHW"]
#: One item: (clip, label), or (clip, label, info) with return_info=True. The clip is a uint8
#: tensor unless a transform returns something else; the label an int, or a float32 multi-hot
#: tensor with multi_label=True.
Item = tuple[object, int | torch.Tensor] | tuple[object, int | torch.Tensor, dict[str, object]]

_UNKNOWN = -1


class FrameCountWarning(UserWarning):
    """A video has fewer frames than the count its clips were sampled from (warned once)."""


class SkippedVideoWarning(UserWarning):
    """A broken video was skipped (on_error="skip"); warned when it is found broken."""


class ClipDataset(Dataset):
    """Clips of `num_frames` frames from every video of a frame source.

    `clip, label = ds[i]`: clip is a contiguous torch.uint8 tensor (T, C, H, W) (or (C, T, H, W)
    with layout="CTHW"), RGB, with T = num_frames and C = 3 (or whatever `transform` returns);
    label is an int.

    Items: with V = spatial_views and K = clips_per_video, item i is view i % V of clip
    (i // V) % K of video i // (K * V); `len(ds) == len(videos) * K * V`. With
    `stack_views=True` item i is video i, all its K * V clips stacked (clip-major, views
    inner) into (K * V, T, C, H, W) (or (K * V, C, T, H, W)); `len(ds) == len(videos)`.

    Args:
        videos: an mmaction2 annotation list (every shape mmaction2 reads: videos, rawframes
            with or without an offset column, multi-label, JSON; an offset is honoured:
            frame i of the entry is frame offset + i of the source), a manifest CSV from
            `vidload convert`/`vidload probe`, or a sequence of `(video_id, label)` /
            `(video_id, label, num_frames)` (see `load_videos`). A video listed twice is two
            items.
        source: where frames come from (`VideoSource`, `JpegSource`, ...); must be picklable.
        num_frames: frames per clip (T).
        sampling: "segment" (TSN: one frame per equal segment), "consecutive" (frames `stride`
            apart) or a `SamplingFn` callable `f(num_available, num_frames, *, train, rng,
            clip_index, num_clips) -> int indices (num_frames,) in [0, num_available)`.
        train: random clips (True) or deterministic, evenly spread test clips (False).
        clips_per_video: clips per video (K); at test time the K clips are spread evenly.
        stride: gap between frames for sampling="consecutive" (must be 1 for "segment").
        transform: called on each clip tensor; its result is returned instead. It runs with
            torch's CPU generator forked and seeded from the item's (seed, epoch, index) (the
            clip's, for spatial views and stacked items: see "Items" above), so a
            random transform written against torch's global generator (torchvision v2,
            kornia) gives the same result for the same item whatever the number of workers,
            and the caller's generator state is left as it was.
        on_mismatch: when a read shows fewer frames than the count sampled from: "resample"
            records the real count, resamples inside it and warns once per video
            (`FrameCountWarning`); "error" raises FrameCountError (never skipped).
        on_error: "raise" lets vidload errors (VideoReadError, ...) propagate with the video id
            and path; "skip" returns a clip of the next readable video instead, counts it in
            `num_skipped`, warns (`SkippedVideoWarning`) and skips that video without decoding
            it in later epochs. Only vidload's errors are skipped; any other exception
            propagates.
        seed: base seed; None draws one at construction (shared by every worker). Under
            torch.distributed (a default process group initialised) rank 0 draws it and
            broadcasts it, so every rank samples the same clip for the same item: a
            collective, so every rank must construct the dataset (or pass a seed).
        short_policy: what to do with videos shorter than a clip (see `vidload.sampling`).
        max_attempts: with on_error="skip", how many broken videos one item may try before
            raising VidloadError.
        short_side: int S scales every frame so that its short side is S (aspect kept);
            (lo, hi) draws S from [lo, hi] per clip when training and uses lo at test time.
        crop: int or (h, w): a crop of the scaled frame, at a random position per clip when
            training, centred at test time. The crop must fit in the scaled frame. With crop
            set every clip has the same shape whatever the videos' sizes.
        crop_scale: (a, b) with 0 < a <= b <= 1, training only: a random-resized crop (a box
            of area fraction in [a, b] of the frame, aspect in [3/4, 4/3], resized to `crop`).
            At test time the centre crop of the short_side-scaled frame is used instead.
        flip: horizontal flip with probability 0.5 per clip, training only.
        layout: "TCHW" (default) or "CTHW" (what 3D CNNs take).
        spatial_views: V crops per clip along the long side at test time (3: left, centre,
            right); needs `crop` and train=False.
        stack_views: one item per video holding all its clips_per_video x spatial_views
            clips, (V, T, C, H, W), so a DistributedSampler shards by video and the
            evaluation averages over dim 1 of a batch. Allowed when training too (K random
            clips per video, each with its own geometry).
        multi_label: the list gives each video one or more labels (mmaction2's multi-label
            lists, `path l1 l2 ...`); the label is then a float32 (num_classes,) multi-hot
            tensor (zeros for an unlabelled video), which the default collate stacks into
            (B, num_classes) for BCEWithLogitsLoss.
        num_classes: number of classes, required with multi_label (labels must be below it).

    Geometry (see `vidload.transforms`) is one plan per clip, drawn from the clip's rng right
    after its frame indices; the source applies it while decoding when its `read` takes a
    `geometry` argument (all of vidload's sources do), else the dataset reads full frames and
    calls `apply_geometry`.

    The count sampled from is the best one known: a count learned from an earlier read, else
    the video list's count (rawframes `total_frames`, manifest `actual_frames`), else
    `source.reported_frames(video_id)` (0 or None means unknown), else
    `source.actual_frames(video_id)`.
    """

    def __init__(
        self,
        videos: str | os.PathLike[str] | Sequence[tuple | VideoEntry],
        source: FrameSource,
        num_frames: int = 8,
        sampling: SamplingMode | SamplingFn = "segment",
        train: bool = True,
        clips_per_video: int = 1,
        stride: int = 1,
        transform: Callable[[torch.Tensor], object] | None = None,
        on_mismatch: OnMismatch = "resample",
        on_error: OnError = "raise",
        seed: int | None = None,
        *,
        short_policy: ShortPolicy = "repeat_last",
        max_attempts: int = 10,
        short_side: int | tuple[int, int] | None = None,
        crop: int | tuple[int, int] | None = None,
        crop_scale: tuple[float, float] | None = None,
        flip: bool = False,
        layout: Layout = "TCHW",
        spatial_views: int = 1,
        stack_views: bool = False,
        multi_label: bool = False,
        num_classes: int | None = None,
        fps: float | None = None,
        clip_seconds: float | None = None,
        return_info: bool = False,
    ) -> None:
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
            if sampling not in SAMPLING_MODES:
                raise ValueError(f"sampling ({sampling!r}) must be one of {SAMPLING_MODES}")
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
        _, crop_hw, _ = check_geometry(
            short_side=short_side,
            crop=crop,
            crop_scale=crop_scale,
            flip=flip,
            num_views=spatial_views,
            train=train,
        )
        seed = check_optional_int("seed", seed, minimum=0)
        if seed is None:
            seed = shared_seed()

        check_bool("multi_label", multi_label)
        if multi_label:
            num_classes = check_positive_int("num_classes", num_classes)
        elif num_classes is not None:
            raise ValueError(f"num_classes ({num_classes}) applies only with multi_label=True")
        self.videos: list[VideoEntry] = load_videos(videos, multi_label=multi_label)
        if not self.videos:
            raise ValueError(f"videos ({videos!r}) lists no videos")
        if train:
            _check_labelled(self.videos, videos)
        if multi_label:
            assert num_classes is not None  # checked above: multi_label needs num_classes
            _check_classes(self.videos, num_classes)
        self.multi_label = multi_label
        self.num_classes = num_classes
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
        self.fps = fps
        self.clip_seconds = clip_seconds
        self.return_info = return_info
        self.source = source
        self.num_frames = num_frames
        self.sampling = sampling
        self.train = train
        self.clips_per_video = clips_per_video
        self.stride = stride
        self.transform = transform
        self.on_mismatch = on_mismatch
        self.on_error = on_error
        self.seed = seed
        self.short_policy = short_policy
        self.max_attempts = max_attempts
        self.short_side = short_side
        self.crop = crop
        self.crop_scale = crop_scale
        self.flip = flip
        self.layout = layout
        self.spatial_views = int(spatial_views)
        self.stack_views = stack_views
        self._crop_hw = crop_hw
        self._fused = _takes_geometry(source)
        #: broken videos passed over by this process (on_error="skip"); per process.
        self.num_skipped = 0

        # one slot per (video, offset): a rawframes list may cut several videos from one folder
        keys = sorted({(e.video_id, e.offset) for e in self.videos})
        slot_of = {key: k for k, key in enumerate(keys)}
        ids = [vid for vid, _ in keys]
        self._ids = ids
        self._slot = [slot_of[(e.video_id, e.offset)] for e in self.videos]
        self._epoch = torch.zeros(1, dtype=torch.int64).share_memory_()
        self._learned = torch.full((len(ids),), _UNKNOWN, dtype=torch.int64).share_memory_()
        self._broken = torch.zeros(len(ids), dtype=torch.bool).share_memory_()

    # ---------------------------------------------------------------- public state

    def __len__(self) -> int:
        return len(self.videos) * self.items_per_video

    @property
    def items_per_video(self) -> int:
        """Items per video: 1 with stack_views, else clips_per_video x spatial_views; item i
        belongs to video i // items_per_video."""
        return 1 if self.stack_views else self.clips_per_video * self.spatial_views

    def __iter__(self) -> Iterator[Item]:
        """Items 0, 1, ... in order. Defined so that a FrameCountError (an IndexError) raised
        by an item propagates instead of silently ending a `for` loop over the dataset."""
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        sampling = self.sampling if isinstance(self.sampling, str) else qualname(self.sampling)
        views = f" x {self.spatial_views} views" if self.spatial_views > 1 else ""
        geometry = "".join(
            f", {name}={value!r}"
            for name, value, default in [
                ("short_side", self.short_side, None),
                ("crop", self.crop, None),
                ("crop_scale", self.crop_scale, None),
                ("flip", self.flip, False),
                ("layout", self.layout, "TCHW"),
                ("stack_views", self.stack_views, False),
            ]
            if value != default
        )
        return (
            f"ClipDataset({len(self.videos)} videos x {self.clips_per_video} clips{views}, "
            f"{type(self.source).__name__}, num_frames={self.num_frames}, "
            f"sampling={sampling!r}, stride={self.stride}, train={self.train}, "
            f"on_mismatch={self.on_mismatch!r}, on_error={self.on_error!r}, seed={self.seed}"
            f"{geometry})"
        )

    @property
    def epoch(self) -> int:
        """The epoch set by `set_epoch` (0 at first)."""
        return int(self._epoch[0])

    def set_epoch(self, epoch: int) -> None:
        """Draw the clips of `epoch` from now on; call before iterating each epoch.

        The epoch lives in shared memory, so persistent DataLoader workers see it too.
        """
        self._epoch[0] = check_int("epoch", epoch, minimum=0)

    @property
    def learned_frames(self) -> dict[str, int]:
        """Frame counts learned from reads so far, by video id, in any process."""
        return {
            vid: int(n) for vid, n in zip(self._ids, self._learned.tolist(), strict=True) if n >= 0
        }

    @property
    def broken_videos(self) -> list[str]:
        """Videos found broken and skipped so far (on_error="skip"), in any process."""
        return [vid for vid, bad in zip(self._ids, self._broken.tolist(), strict=True) if bad]

    # ---------------------------------------------------------------- items

    def __getitem__(self, index: int) -> Item:
        i = operator.index(index)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(f"index ({index}) must be in [0, {len(self)})")
        v = i // self.items_per_video
        if self.on_error == "skip":
            return self._item_or_skip(i, v)
        try:
            return self._item(i, v, attempt=0)
        except VidloadError as e:
            ctx = _in_context(e, self.videos[v].video_id, i)
            if ctx is e:
                raise
            raise ctx from e

    def planned_reads(self, index: int) -> list[tuple[str, np.ndarray]]:
        """The reads item `index` will make, without reading anything: one `(video_id,
        indices)` per clip, indices int64 (T,) source frame indices (the entry's offset
        included), exactly as `self[index]` draws them now (same (seed, epoch, clip) stream,
        same frame count: learned by a worker (the shared array), else the video list's, else
        the source's `reported_frames`). For read-ahead (`vidload.prefetch`), so a hint
        names only the bytes the item reads.

        With on_error="skip" the plan follows the item to the first video not yet found
        broken, like `self[index]`. A count learned later (a worker finding fewer frames)
        changes the plan; the item then reads a resampled clip.

        Raises:
            IndexError: `index` out of range.
            LookupError: the frame count is not known without decoding (no learned, listed
                or reported count).
        """
        i = operator.index(index)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(f"index ({index}) must be in [0, {len(self)})")
        v, attempt = i // self.items_per_video, 0
        if self.on_error == "skip":
            n = len(self.videos)
            alive = [s for s in range(n) if not self._broken[self._slot[(v + s) % n]]]
            if not alive:
                return []
            v, attempt = (v + alive[0]) % n, alive[0]
        entry = self.videos[v]
        learned = int(self._learned[self._slot[v]])
        if learned != _UNKNOWN:
            count = learned
        elif entry.known_frames is not None:
            count = entry.known_frames
        else:
            count = (self.source.reported_frames(entry.video_id) or 0) - entry.offset
            if count <= 0:
                raise LookupError(f"{entry.video_id}: frame count unknown without decoding")
        plans = []
        for j, c, _ in self._clips_of(i):
            key = [self.seed, self.epoch, j] + ([attempt] if attempt else [])
            indices, _ = self._sample(count, c, key, entry.video_id, i, [], entry)
            plans.append((entry.video_id, np.asarray(indices, np.int64) + entry.offset))
        return plans

    def _item_or_skip(self, i: int, v: int) -> Item:
        n = len(self.videos)
        failures = 0
        last: VidloadError | None = None
        for step in range(n):
            w = (v + step) % n
            if self._broken[self._slot[w]]:
                self.num_skipped += 1
                continue
            try:
                return self._item(i, w, attempt=step)
            except VidloadError as e:
                if isinstance(e, FrameCountError) and self.on_mismatch == "error":
                    raise
                vid = self.videos[w].video_id
                self._broken[self._slot[w]] = True
                self.num_skipped += 1
                failures += 1
                last = e
                warnings.warn(
                    f"ClipDataset item {i}: skipping video {vid!r}: {e} "
                    f"(on_error='skip'; later epochs skip it without decoding)",
                    SkippedVideoWarning,
                    stacklevel=3,
                )
                if failures >= self.max_attempts:
                    raise VidloadError(
                        f"ClipDataset item {i}: {failures} videos in a row failed to load "
                        f"(max_attempts={self.max_attempts}); last: {vid!r}: {e}"
                    ) from e
        raise VidloadError(
            f"ClipDataset item {i}: all {n} videos are broken; nothing left to return"
        ) from last

    def _clips_of(self, i: int) -> list[tuple[int, int, list[int]]]:
        """(clip number j, clip index c within its video, views) for each clip of item i.

        Clip j = video * clips_per_video + c; its frame indices and geometry come from the
        stream (seed, epoch, j), so the spatial views of one clip share its frames, and a
        stacked item holds exactly the clips the unstacked items would give.
        """
        k = self.clips_per_video
        if self.stack_views:
            return [(i * k + c, c, list(range(self.spatial_views))) for c in range(k)]
        j, view = divmod(i, self.spatial_views)
        return [(j, j % k, [view])]

    def _item(self, i: int, v: int, attempt: int) -> Item:
        entry = self.videos[v]
        clips = []
        read: list[tuple[int, int, np.ndarray]] = []  # (clip index, view, source indices)
        for j, c, views in self._clips_of(i):
            key = [self.seed, self.epoch, j] + ([attempt] if attempt else [])
            frames_per_view, indices = self._read_clip(entry, self._slot[v], c, key, i, views)
            for view, frames in zip(views, frames_per_view, strict=True):
                clip = self._to_tensor(frames)
                if self.transform is not None:
                    clip = _seeded_call(self.transform, clip, key)
                clips.append(clip)
                read.append((c, view, indices + entry.offset))
        label = self._label(entry)
        if not self.stack_views:
            if self.return_info:
                return clips[0], label, self._info(entry.video_id, read, stacked=False)
            return clips[0], label
        try:
            if self.return_info:
                info = self._info(entry.video_id, read, stacked=True)
                return torch.stack(clips), label, info
            return torch.stack(clips), label
        except (TypeError, RuntimeError) as e:
            raise TypeError(
                f"stack_views=True needs every clip (after transform) to be a tensor of one "
                f"shape; video {entry.video_id!r} gave "
                f"{[tuple(getattr(x, 'shape', ())) or type(x).__name__ for x in clips]}"
            ) from e

    def _info(
        self, vid: str, read: list[tuple[int, int, np.ndarray]], *, stacked: bool
    ) -> dict[str, object]:
        """What an item holds, as types the default collate batches: video_id (str), indices
        (int64 (T,) source frame indices), timestamps (float64 (T,) seconds; NaN when the
        source has no `timestamps`), clip and view (int). Stacked items give (V, T) arrays
        and (V,) clip/view tensors."""
        times = getattr(self.source, "timestamps", None)
        ts = np.asarray(times(vid), np.float64) if times is not None else None
        rows = []
        for c, view, idx in read:
            times_s = ts[idx] if ts is not None else np.full(len(idx), np.nan)
            rows.append(
                (c, view, torch.from_numpy(idx.astype(np.int64)), torch.from_numpy(times_s))
            )
        if not stacked:
            clip_n, view_n, indices_t, times_t = rows[0]
            return {
                "video_id": vid,
                "indices": indices_t,
                "timestamps": times_t,
                "clip": clip_n,
                "view": view_n,
            }
        return {
            "video_id": vid,
            "indices": torch.stack([r[2] for r in rows]),
            "timestamps": torch.stack([r[3] for r in rows]),
            "clip": torch.tensor([r[0] for r in rows]),
            "view": torch.tensor([r[1] for r in rows]),
        }

    def _label(self, entry: VideoEntry) -> int | torch.Tensor:
        """The int label, or with multi_label a float32 (num_classes,) multi-hot vector (all
        zeros for an unlabelled video)."""
        if not self.multi_label:
            return entry.label
        assert self.num_classes is not None  # __init__: multi_label needs num_classes
        hot = torch.zeros(self.num_classes, dtype=torch.float32)
        labels = [k for k in (entry.labels or (entry.label,)) if k != UNLABELLED]
        hot[labels] = 1.0
        return hot

    def _to_tensor(self, frames: np.ndarray) -> torch.Tensor:
        """uint8 (k, H, W, 3) -> contiguous uint8 (k, 3, H, W) or (3, k, H, W) tensor.

        Each frame's channels are split by `cv2.split` straight into their planes of the
        output: 55 us for 8 frames of 320x240, against 434 us for numpy's transposing copy
        (`np.array(frames.transpose(...), order="C")`, ~18% of a clip's decode) and 482 us for
        torch's permute().contiguous() (one thread; more threads double the CPU per clip).
        """
        k, h, w, _ = frames.shape
        if self.layout == "TCHW":
            out = np.empty((k, 3, h, w), np.uint8)
            planes = [[out[j, 0], out[j, 1], out[j, 2]] for j in range(k)]
        else:
            out = np.empty((3, k, h, w), np.uint8)
            planes = [[out[0, j], out[1, j], out[2, j]] for j in range(k)]
        if out.size:
            frames = np.ascontiguousarray(frames)
            for j in range(k):
                cv2.split(frames[j], planes[j])
        return torch.from_numpy(out)

    def _read_clip(
        self, entry: VideoEntry, slot: int, c: int, key: list[int], i: int, views: list[int]
    ) -> tuple[list[np.ndarray], np.ndarray]:
        """uint8 (k, H, W, 3) frames of one clip, one array per view in `views`.

        Sample from the best known count; on FrameCountError learn the real count and resample
        once, from the same (seed, epoch, clip) stream."""
        vid = entry.video_id
        count, origin = self._best_count(entry, slot)
        try:
            sampled = self._sample(count, c, key, vid, i, views, entry)
            return self._read(vid, *sampled, entry.offset)
        except FrameCountError as e:
            actual = e.actual if e.actual is not None else self.source.actual_frames(vid)
            actual -= entry.offset  # frames from the entry's start
            if self.on_mismatch == "error":
                raise FrameCountError(
                    vid,
                    count,
                    actual,
                    e.index,
                    message=f"{vid}: clip sampled from {count} frames ({origin}) but only "
                    f"{actual} frames exist (on_mismatch='error')",
                ) from e
            if actual >= count:
                raise FrameCountError(
                    vid,
                    count,
                    actual,
                    e.index,
                    message=f"{vid}: {type(self.source).__name__} raised FrameCountError for "
                    f"frame {e.index} although it says {actual} frames exist",
                ) from e
            self._learn(slot, actual, warn=f"{vid}: {count} frames {origin},")
        try:
            sampled = self._sample(actual, c, key, vid, i, views, entry)
            return self._read(vid, *sampled, entry.offset)
        except FrameCountError as e:
            raise FrameCountError(
                vid,
                count,
                e.actual,
                e.index,
                message=f"{vid}: frame {e.index} is still out of range after resampling "
                f"within the {actual} frames the source reported: {e}",
            ) from e

    def _best_count(self, entry: VideoEntry, slot: int) -> tuple[int, str]:
        learned = int(self._learned[slot])
        if learned != _UNKNOWN:
            count, origin = learned, "learned from an earlier read"
        elif entry.known_frames is not None:
            count, origin = entry.known_frames, "from the video list"
        else:
            reported = self.source.reported_frames(entry.video_id)
            if reported:
                count, origin = reported - entry.offset, "reported by the source"
            else:
                count = self.source.actual_frames(entry.video_id) - entry.offset
                origin = "counted by decoding"
                self._learn(slot, count, warn=None)
        if count <= 0:
            raise VideoReadError(entry.video_id, f"no frames to sample (0 frames {origin})")
        return count, origin

    def _learn(self, slot: int, actual: int, warn: str | None) -> None:
        """Publish `actual` to every worker; warn unless some process already learned it."""
        if actual <= 0:
            raise VideoReadError(self._ids[slot], "no frames decode")
        if int(self._learned[slot]) == actual:
            return
        self._learned[slot] = actual
        if warn is not None:
            warnings.warn(
                f"{warn} but only {actual} frames decode; sampling within {actual} from now on "
                f"(warned once per video)",
                FrameCountWarning,
                stacklevel=5,
            )

    def _sample(
        self,
        count: int,
        c: int,
        key: list[int],
        vid: str,
        i: int,
        views: list[int],
        entry: VideoEntry,
    ) -> tuple[np.ndarray, list[ClipGeometry | None]]:
        """The clip's frame indices (from the entry's start), then its geometry (one plan per
        view), from one rng. With fps / clip_seconds the indices come from the frames'
        timestamps (`vidload.sampling.resampled_indices` / `window_indices`)."""
        rng = np.random.default_rng(key)
        try:
            if self.fps is None and self.clip_seconds is None:
                indices = self._sample_frames(count, c, rng)
            else:
                ts = self._timestamps(vid, entry.offset, count)
                if self.clip_seconds is not None:
                    indices = window_indices(
                        ts,
                        self.num_frames,
                        self.clip_seconds,
                        train=self.train,
                        rng=rng,
                        clip_index=c,
                        num_clips=self.clips_per_video,
                    )
                else:
                    assert self.fps is not None  # one of fps and clip_seconds is set here
                    grid = resampled_indices(ts, self.fps)
                    indices = grid[self._sample_frames(len(grid), c, rng)]
        except (ValueError, TypeError) as e:
            raise type(e)(f"ClipDataset item {i}, video {vid!r} ({count} frames): {e}") from e
        plans = [
            plan_geometry(
                short_side=self.short_side,
                crop=self.crop,
                crop_scale=self.crop_scale,
                flip=self.flip,
                train=self.train,
                rng=rng,
                view=view,
                num_views=self.spatial_views,
            )
            for view in views
        ]
        return indices, plans

    def _sample_frames(self, count: int, c: int, rng: np.random.Generator) -> np.ndarray:
        return sample_clip(
            self.sampling,
            count,
            self.num_frames,
            train=self.train,
            rng=rng,
            clip_index=c,
            num_clips=self.clips_per_video,
            stride=self.stride,
            short_policy=self.short_policy,
        )

    def _timestamps(self, vid: str, offset: int, count: int) -> np.ndarray:
        """float64 seconds of the entry's first `count` frames (from its offset)."""
        times = getattr(self.source, "timestamps", None)
        if times is None:
            raise TypeError(
                f"fps / clip_seconds need frame timestamps, and {type(self.source).__name__} "
                f"has no timestamps(video_id) method"
            )
        ts = np.asarray(times(vid), np.float64)[offset : offset + count]
        if ts.size == 0:
            raise ValueError(f"{type(self.source).__name__}.timestamps gave no times")
        return ts

    def _read(
        self, vid: str, indices: np.ndarray, plans: list[ClipGeometry | None], offset: int = 0
    ) -> tuple[list[np.ndarray], np.ndarray]:
        """Read the frames once per clip: fused with the geometry when there is one plan and
        the source takes it; otherwise full frames, then `apply_geometry` per view. `indices`
        count from the entry's start, `offset` frames into the source's video."""
        geometry = plans[0] if len(plans) == 1 and self._fused else None
        wanted = indices + offset if offset else indices
        if geometry is not None:
            # FrameSource.read has no geometry; _takes_geometry found this source's read takes it
            fused_read: Callable[..., np.ndarray] = self.source.read
            frames = fused_read(vid, wanted, geometry=geometry)
        else:
            frames = self.source.read(vid, wanted)
        self._check_frames(vid, indices, frames)
        if geometry is not None:
            clips = [frames]
        else:
            clips = [apply_geometry(frames, plan) for plan in plans]
        if self._crop_hw is not None:
            for clip in clips:
                if clip.shape[1:3] != self._crop_hw:
                    raise TypeError(
                        f"{type(self.source).__name__}.read({vid!r}, ..., geometry=...) "
                        f"returned frames of {clip.shape[1]}x{clip.shape[2]}, not the crop "
                        f"{self._crop_hw[0]}x{self._crop_hw[1]}"
                    )
        return clips, indices

    def _check_frames(self, vid: str, indices: np.ndarray, frames: object) -> None:
        if (
            not isinstance(frames, np.ndarray)
            or frames.dtype != np.uint8
            or frames.ndim != 4
            or frames.shape[0] != len(indices)
            or frames.shape[3] != 3
        ):
            got = (
                f"{frames.dtype} {frames.shape}"
                if isinstance(frames, np.ndarray)
                else type(frames).__name__
            )
            raise TypeError(
                f"{type(self.source).__name__}.read({vid!r}, ...) returned {got}; "
                f"expected uint8 ({len(indices)}, H, W, 3)"
            )


def _takes_geometry(source: FrameSource) -> bool:
    """Whether `source.read` accepts a `geometry` keyword (the fused decode path)."""
    try:
        params = inspect.signature(source.read).parameters
    except (TypeError, ValueError):
        return False
    return "geometry" in params or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()
    )


def _seeded_call(transform: Callable[[torch.Tensor], object], clip: torch.Tensor, key: list[int]):
    """`transform(clip)` with torch's CPU generator forked and seeded from the item's key.

    torchvision v2 and kornia random transforms draw from torch's global generator, whose state
    in a DataLoader worker depends on the worker and on the items it loaded before; seeding it
    per item makes the transform's draws a function of (seed, epoch, index), like the frame
    indices. `fork_rng` restores the caller's generator afterwards, so a loop over the dataset
    in the main process (0 workers) leaves the training script's RNG where it was. Only the CPU
    generator is forked and seeded (CUDA cannot be used in forked DataLoader workers anyway);
    Python's `random` and numpy's global state are not touched. The seed comes from the key's
    own stream (spawn_key 2), apart from the sampling rng and the loader's shuffle (1).
    """
    seq = np.random.SeedSequence(key, spawn_key=(2,))
    with torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(int(seq.generate_state(1, np.uint64)[0]))
        return transform(clip)


def _check_classes(entries: Sequence[VideoEntry], num_classes: int) -> None:
    for e in entries:
        for k in e.labels or (e.label,):
            if not (k == UNLABELLED or 0 <= k < num_classes):
                raise ValueError(
                    f"video {e.video_id!r} has label {k}, outside [0, num_classes={num_classes})"
                )


def _check_labelled(entries: Sequence[VideoEntry], videos: object) -> None:
    """Training needs labels: refuse a video list where every label is unknown (-1), which
    would otherwise fail much later inside the loss ("Target -1 is out of bounds")."""
    if any(e.label != UNLABELLED for e in entries):
        return
    where = str(videos) if isinstance(videos, (str, os.PathLike)) else "videos"
    raise ValueError(
        f"{where}: all {len(entries)} videos are unlabelled (label -1), so train=True has "
        f"nothing to learn. Label them: convert or probe --write a class-folder tree "
        f"(class_name/video.mp4 -> labels by sorted folder name, classes.txt beside the "
        f"manifest), pass --labels FILE to fix the mapping, or use an annotation list with "
        f"labels; use train=False for unlabelled inference"
    )


def _in_context(e: VidloadError, vid: str, i: int) -> VidloadError:
    """`e` with the video id and item in its message (a new error of the same kind), or `e`
    itself when its message already names the video."""
    where = f"video {vid!r}, ClipDataset item {i}"
    if isinstance(e, VideoReadError):
        return VideoReadError(e.path, f"{e.reason} ({where})", e.index)
    if vid in str(e):
        return e
    if isinstance(e, FrameCountError):
        return FrameCountError(e.video_id, e.reported, e.actual, e.index, f"{e} ({where})")
    return VidloadError(f"{where}: {e}")
