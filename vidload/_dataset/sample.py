"""A clip's frame indices from the dataset's options: the one place the sampling options
(`sampling`, `stride`, `short_policy`, `fps`, `clip_seconds`, `num_frames`, `train`,
`clips_per_video`) meet `vidload.sampling`'s pure functions.

Apart from ClipDataset because it is pure: the options, a frame count, a clip number and an rng
in, int64 indices out (timestamps asked for only when fps / clip_seconds need them); the
dataset adds the entry's offset, the geometry and the read.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vidload._dataset.options import ClipOptions
from vidload.sampling import resampled_indices, sample_clip, window_indices
from vidload.sources.base import FrameSourceBase


def clip_indices(
    options: ClipOptions,
    count: int,
    c: int,
    rng: np.random.Generator,
    timestamps: Callable[[], np.ndarray],
) -> np.ndarray:
    """Clip `c` of an entry of `count` frames: int64 (num_frames,) indices from the entry's
    start. With fps / clip_seconds they come from the frames' times (`timestamps()`: float64
    seconds of the entry's `count` frames; `resampled_indices` / `window_indices`), so every
    mode samples inside the entry."""
    if options.fps is None and options.clip_seconds is None:
        return frame_indices(options, count, c, rng)
    ts = timestamps()
    if options.clip_seconds is not None:
        return window_indices(
            ts,
            options.num_frames,
            options.clip_seconds,
            train=options.train,
            rng=rng,
            clip_index=c,
            num_clips=options.clips_per_video,
        )
    assert options.fps is not None  # one of fps and clip_seconds is set here
    grid = resampled_indices(ts, options.fps)
    return grid[frame_indices(options, len(grid), c, rng)]


def frame_indices(options: ClipOptions, count: int, c: int, rng: np.random.Generator) -> np.ndarray:
    """Clip `c` by the sampling mode, over `count` frames (`vidload.sampling.sample_clip`)."""
    return sample_clip(
        options.sampling,
        count,
        options.num_frames,
        train=options.train,
        rng=rng,
        clip_index=c,
        num_clips=options.clips_per_video,
        stride=options.stride,
        short_policy=options.short_policy,
    )


def entry_timestamps(source: FrameSourceBase, vid: str, offset: int, count: int) -> np.ndarray:
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
