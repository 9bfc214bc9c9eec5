"""ClipDataset: samples frame indices, asks a frame source for them, reconciles frame counts.

Randomness: item `i` of epoch `e` draws from `np.random.default_rng([seed, e, i])`, so an item's
clip depends on (seed, epoch, index) only, never on the number of DataLoader workers or on
which worker loads it.

The pieces behind it, one idea each: `vidload._dataset.options` checks the arguments,
`vidload._dataset.counts` picks the count to sample from and learns from short reads (shared by
every worker, see there), `vidload._dataset.items` turns frames into what the collate batches.
"""

from __future__ import annotations

import functools
import inspect
import operator
import os
import warnings
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import torch
from torch.utils.data import Dataset

from vidload._checks import check_int, qualname
from vidload._dataset import batch as _batch
from vidload._dataset import items as _items
from vidload._dataset.containers import check_missing, entries_and_containers
from vidload._dataset.counts import FrameCountWarning, SharedCounts
from vidload._dataset.entries import VideoEntries
from vidload._dataset.options import (
    ClipOptions,
    Layout,
    Missing,
    OnError,
    OnMismatch,
    OptionAttributes,
    check_video_list,
)
from vidload.errors import FrameCountError, VidloadError
from vidload.manifest import VideoEntry
from vidload.sampling import (
    SamplingFn,
    SamplingMode,
    ShortPolicy,
)
from vidload.sources.base import FrameSource, FrameSourceBase
from vidload.transforms import ClipGeometry, apply_geometry

__all__ = ["ClipDataset", "FrameCountWarning", "Item", "SkippedVideoWarning"]

#: One item: (clip, label), or (clip, label, info) with return_info=True. The clip is a uint8
#: tensor unless a transform returns something else; the label an int, or a float32 multi-hot
#: tensor with multi_label=True.
Item = tuple[object, int | torch.Tensor] | tuple[object, int | torch.Tensor, dict[str, object]]


class SkippedVideoWarning(UserWarning):
    """A broken video was skipped (on_error="skip"); warned when it is found broken."""


class ClipDataset(OptionAttributes, Dataset):
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
            `(video_id, label, num_frames)` (see `load_videos`), or what a
            `vidload.datasets` reader returns. A video listed twice is two items. Windows of
            long videos: `(video_id, label, start, end)` items, `start`/`end` columns in a CSV
            list, `"start"`/`"end"` keys in a JSON list (both or neither; another dataset's
            window columns, `stop`, `start_frame`, ..., are refused naming its reader,
            `vidload._windows.check_window_columns`): seconds from the video's first frame
            (its timestamp counts as 0), the entry being the frames in [start, end); every
            sampling mode samples inside the window, with the window's own frame count, found
            from `source.timestamps`. Many windows may name one file: they share its open
            handle and persisted index, not what is learned per entry (counts, broken). A
            list or manifest may be a URL (`s3://bucket/k400_h5/manifest.csv`), read with
            the source's `storage_options` (for other options, pass `load_videos(url,
            storage_options=...)`). Unlabelled videos (label -1) are allowed, also with
            train=True (self-supervised pretraining).
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
            clips, (K * V, T, C, H, W), so a DistributedSampler shards by video and the
            evaluation averages over dim 1 of a batch. Allowed when training too (K random
            clips per video, each with its own geometry).
        multi_label: the list gives each video one or more labels (mmaction2's multi-label
            lists, `path l1 l2 ...`); the label is then a float32 (num_classes,) multi-hot
            tensor (zeros for an unlabelled video), which the default collate stacks into
            (B, num_classes) for BCEWithLogitsLoss.
        num_classes: number of classes, required with multi_label (labels must be below it).
        fps: sample as if the video were resampled to `fps` frames per second (the frame on
            screen every 1/fps s, from `source.timestamps`; `sampling` then picks from those),
            so videos of different frame rates give clips of the same duration
            (`vidload.sampling.resampled_indices`).
        clip_seconds: `num_frames` frames evenly spaced in time in a window of this many
            seconds, at a random start when training, spread over the clips at test time
            (`vidload.sampling.window_indices`); replaces `sampling`, not with `fps`.
        return_info: items are `(clip, label, info)`, info a dict: `index` (int, the item's
            index: with the dataset's seed and epoch it seeds anything drawn per item later,
            e.g. `vidload.augment.ClipAugment` on the device), `video_id` (str),
            `indices` int64 (T,) source frame indices, `timestamps` float64 (T,) seconds,
            `clip` and `view` (int); with stack_views (K * V, T) tensors and (K * V,) clip /
            view tensors. The default collate batches them. A window's timestamps count from
            its video's first frame, as its start and end do, so they lie in [start, end).
        missing: listed videos the source does not hold, found when the dataset is built
            (`source.missing_videos`: one directory listing per folder or bucket prefix,
            converted names included): "error" raises FileNotFoundError naming how many and
            the first few; "skip" leaves them out with one warning that counts them. A source
            without `missing_videos` (a custom FrameSource) is not checked, with a warning
            saying so; a root that cannot list (http://) is checked per video.

    Geometry (see `vidload.transforms`) is one plan per clip, drawn from the clip's rng right
    after its frame indices; the source applies it while decoding when its `read` takes a
    `geometry` argument (all of vidload's sources do), else the dataset reads full frames and
    calls `apply_geometry`.

    The count sampled from is the best one known: a count learned from an earlier read, else
    the video list's count (rawframes `total_frames`, manifest `actual_frames`), else
    `source.reported_frames(video_id)` (0 or None means unknown), else
    `source.actual_frames(video_id)`.
    """

    #: every option but `videos`, checked once (`vidload._dataset.options.ClipOptions`); each
    #: is an attribute too (read-only, `OptionAttributes`): `ds.num_frames` is
    #: `ds.options.num_frames`
    options: ClipOptions

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
        missing: Missing = "error",
    ) -> None:
        self.options = ClipOptions(
            source=source, num_frames=num_frames, sampling=sampling, train=train,
            clips_per_video=clips_per_video, stride=stride, transform=transform,
            on_mismatch=on_mismatch, on_error=on_error, seed=seed, short_policy=short_policy,
            max_attempts=max_attempts, short_side=short_side, crop=crop, crop_scale=crop_scale,
            flip=flip, layout=layout, spatial_views=spatial_views, stack_views=stack_views,
            multi_label=multi_label, num_classes=num_classes, fps=fps,
            clip_seconds=clip_seconds, return_info=return_info, missing=missing,
        )  # fmt: skip
        adapted = self.options.adapted  # the source as the dataset asks it
        #: the video list, in flat arrays (`vidload._dataset.entries`: no Python object per video
        #: for workers to copy); indexing gives `VideoEntry`s
        self.videos: VideoEntries = entries_and_containers(videos, adapted, multi_label=multi_label)
        check_video_list(self.videos, videos, source=adapted, num_classes=self.num_classes)
        self.videos = check_missing(self.videos, adapted, missing=self.missing, where=videos)
        #: broken videos passed over by this process (on_error="skip"); per process.
        self.num_skipped = 0
        self._counts = SharedCounts(self.videos)
        self._epoch = torch.zeros(1, dtype=torch.int64).share_memory_()

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
        defaults = inspect.signature(ClipDataset).parameters  # not written twice
        geometry = "".join(
            f", {name}={value!r}"
            for name in ("short_side", "crop", "crop_scale", "flip", "layout", "stack_views")
            if (value := getattr(self.options, name)) != defaults[name].default
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
        return self._counts.learned_frames()

    @property
    def broken_videos(self) -> list[str]:
        """Videos found broken and skipped so far (on_error="skip"), in any process."""
        return self._counts.broken_videos()

    def learned_state(self) -> dict[str, list]:
        """What this dataset learned by reading, in every process: the frame counts learned
        from short reads and the videos found broken (on_error="skip"), as plain lists
        (`{"learned": [[video_id, offset, frames], ...], "broken": [[video_id, offset],
        ...]}`) to save with a checkpoint, so a resumed run does not decode them again.

        A `make_loader(..., stateful=True)` loader keeps it in its `state_dict()`. It is not
        a `state_dict` method of the dataset on purpose: torchdata would then ask each worker
        for it after every batch and store one copy per worker, while the counts live in
        shared memory and the main process sees all of them at once.
        """
        return self._counts.state()

    def load_learned_state(self, state: dict[str, list]) -> None:
        """Take what `learned_state()` saved (shared with every worker, also ones running).

        What a state holds is true of the videos whatever the epoch, and changes no clip:
        a clip resampled after a short read is the one sampled from the real count, and a
        skipped video's item is the next video's either way; it only saves the decoding.

        Raises:
            ValueError: the state names a video this dataset's list does not hold.
        """
        self._counts.load_state(state)

    # ---------------------------------------------------------------- items

    def __getitem__(self, index: int) -> Item:
        i = self._index(index)
        v = i // self.items_per_video
        if self.on_error == "skip":
            return self._item_or_skip(i, v)
        try:
            return self._item(i, v, attempt=0)
        except VidloadError as e:
            ctx = _items.in_context(e, self.videos[v].video_id, i)
            if ctx is e:
                raise
            raise ctx from e

    def __getitems__(self, indices: Sequence[int]) -> list[Item]:
        """`[self[i] for i in indices]`, the same items, with the storage reads of all of
        them in one concurrent round where the source reads a bucket (`vidload._dataset.batch`): the
        DataLoader calls this with a batch's indices, so a worker waits one round-trip per
        batch, not one per clip. Local disk reads exactly as `self[i]` does."""
        return _batch.getitems(self, indices)

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
        i = self._index(index)
        v, attempt = i // self.items_per_video, 0
        if self.on_error == "skip":
            n = len(self.videos)
            attempt = next((s for s in range(n) if not self._counts.is_broken((v + s) % n)), -1)
            if attempt < 0:
                return []
            v = (v + attempt) % n
        entry = self.videos[v]
        count = self._counts.known(self.options.adapted, entry, v)
        plans = []
        for c, key, _ in self._clips_of(i, attempt):
            indices, _ = self._sample(count, c, key, i, [], entry, v)
            plans.append((entry.video_id, np.asarray(indices, np.int64)))
        return plans

    def _index(self, index: int) -> int:
        i = operator.index(index)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(f"index ({index}) must be in [0, {len(self)})")
        return i

    def _item_or_skip(self, i: int, v: int) -> Item:
        n = len(self.videos)
        failures = 0
        last: VidloadError | None = None
        for step in range(n):
            w = (v + step) % n
            if self._counts.is_broken(w):
                self.num_skipped += 1
                continue
            try:
                return self._item(i, w, attempt=step)
            except VidloadError as e:
                if isinstance(e, FrameCountError) and self.on_mismatch == "error":
                    raise
                vid = self.videos[w].video_id
                self._counts.mark_broken(w)
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

    def _clips_of(self, i: int, attempt: int) -> list[tuple[int, list[int], list[int]]]:
        """(clip index c within its video, random stream, views) for each clip of item i.

        Clip j = video * clips_per_video + c; its frame indices and geometry come from the
        stream (seed, epoch, j) (and the attempt after a skip), so the spatial views of one
        clip share its frames, and a stacked item holds exactly the clips the unstacked items
        would give.
        """
        k, after = self.clips_per_video, [attempt] if attempt else []
        if self.stack_views:
            views = list(range(self.spatial_views))
            return [(c, [self.seed, self.epoch, i * k + c, *after], views) for c in range(k)]
        j, view = divmod(i, self.spatial_views)
        return [(j % k, [self.seed, self.epoch, j, *after], [view])]

    def _item(self, i: int, v: int, attempt: int) -> Item:
        entry = self.videos[v]
        clips: list[object] = []
        read: list[_items.ClipRecord] = []
        for c, key, views in self._clips_of(i, attempt):
            frames_per_view, indices = self._counts.read(
                self.options.adapted,
                entry,
                v,
                functools.partial(self._read_clip, entry, v, c, key, i, views),
                strict=self.on_mismatch == "error",
            )
            for view, frames in zip(views, frames_per_view, strict=True):
                clip = _items.to_tensor(frames, self.layout)
                clips.append(
                    clip
                    if self.transform is None
                    else _items.seeded_call(self.transform, clip, key)
                )
                read.append((c, view, indices))
        label = _items.label_of(entry, self.num_classes)
        vid = entry.video_id
        out = clips[0] if not self.stack_views else _items.stack(clips, vid)
        if self.return_info:
            windowed = entry.window is not None
            info = _items.info(
                self.options.adapted, vid, read, stacked=self.stack_views, windowed=windowed
            )
            return out, label, {"index": i, **info}
        return out, label

    # ---------------------------------------------------------------- one clip

    def _sample(
        self,
        count: int,
        c: int,
        key: list[int],
        i: int,
        views: list[int],
        entry: VideoEntry,
        v: int,
    ) -> tuple[np.ndarray, list[ClipGeometry | None]]:
        """The clip's frame indices, sampled from the entry's start and returned as source
        frame indices (plus its offset, or its window's first frame, into the source's video),
        then its geometry (one plan per view), from one rng. With fps / clip_seconds the
        indices come from the frames' timestamps (`ClipOptions.clip_indices`): the
        entry's own (a window's: those inside it), so every mode samples inside the entry."""
        rng = np.random.default_rng(key)
        vid, offset = entry.video_id, self._counts.offset(entry, v)
        timestamps = functools.partial(_entry_timestamps, self.options.adapted, vid, offset, count)
        try:
            indices = self.options.clip_indices(count, c, rng, timestamps)
        except (ValueError, TypeError) as e:
            raise type(e)(f"ClipDataset item {i}, video {vid!r} ({count} frames): {e}") from e
        return indices + offset, [self.options.geometry.plan(rng, view) for view in views]

    def _read_clip(
        self,
        entry: VideoEntry,
        v: int,
        c: int,
        key: list[int],
        i: int,
        views: list[int],
        count: int,
    ) -> tuple[list[np.ndarray], np.ndarray]:
        """Clip c of entry v sampled from `count` frames (stream `key`, `_sample`) and read:
        uint8 (k, H, W, 3) frames per view in `views`, and the source frame indices read.

        The frames are read once: with the geometry when there is one view (every
        `FrameSourceBase`'s `read` takes one: applied while decoding by vidload's sources, after
        it by an adapted source that cannot, `vidload.sources._adapted`); otherwise full frames,
        then `apply_geometry` per view. With a `crop`, every view must come out at that size
        (TypeError naming the source else). The read is `read_transient`: the views are only
        ever copied into their tensors (`_items.to_tensor`) before the next read, so a source
        may return them in memory it reuses (a container source: `vidload._scratch`), and
        nothing returned to the user shares it.
        """
        indices, plans = self._sample(count, c, key, i, views, entry, v)
        source, vid, crop = self.options.adapted, entry.video_id, self.options.geometry.crop
        geometry = plans[0] if len(plans) == 1 else None
        frames = source.read_transient(vid, indices, geometry=geometry)
        frames = _items.check_frames(source, vid, len(indices), frames)
        read = [frames] if geometry is not None else [apply_geometry(frames, p) for p in plans]
        for view in read:
            if crop is not None and view.shape[1:3] != crop:
                raise TypeError(
                    f"{source.source_name}.read({vid!r}, ..., geometry=...) returned frames of "
                    f"{view.shape[1]}x{view.shape[2]}, not the crop {crop[0]}x{crop[1]}"
                )
        return read, indices


def _entry_timestamps(source: FrameSourceBase, vid: str, offset: int, count: int) -> np.ndarray:
    """float64 seconds of the entry's first `count` frames (from its offset)."""
    times = source.timestamps
    if times is None:
        raise TypeError(
            f"fps / clip_seconds need frame timestamps, and {source.source_name} "
            f"has no timestamps(video_id) method"
        )
    ts = np.asarray(times(vid), np.float64)[offset : offset + count]
    if ts.size == 0:
        raise ValueError(f"{source.source_name}.timestamps gave no times")
    return ts
