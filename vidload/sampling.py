"""Which frames make a clip: pure index functions, no decoding, no global RNG.

Every index function maps a frame count to an explicit index array that a source then reads:

    segment_indices(num_available, num_frames, *, train, rng, ...) -> int64 (num_frames,)
    consecutive_indices(num_available, num_frames, *, stride, train, rng, ...) -> same

Indices always lie in [0, num_available). Training draws from `rng` (a `np.random.Generator`
the caller derives, e.g. from (seed, epoch, index)); testing is deterministic and never touches
`rng`. With `num_clips=K` at test time, clip `clip_index` in [0, K) is one of K evenly spread
views of the video.

Your own is any callable with the `SamplingFn` signature (`ClipDataset(sampling=fn)`);
`sample_clip` runs the built-in ones by name or yours, and checks what it returns. (These are
not torch `Sampler`s: those choose dataset items, these choose frames inside one video.)
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, get_args

import numpy as np

from vidload._checks import (
    check_bool,
    check_choice,
    check_int,
    check_positive_int,
    check_positive_number,
    qualname,
)

__all__ = [
    "SAMPLING_MODES",
    "SHORT_POLICIES",
    "SamplingFn",
    "SamplingMode",
    "ShortPolicy",
    "check_indices",
    "consecutive_indices",
    "resampled_indices",
    "sample_clip",
    "segment_indices",
    "shown_at",
    "window_indices",
]

ShortPolicy = Literal["repeat_last", "loop", "error"]
SamplingMode = Literal["segment", "consecutive"]

SHORT_POLICIES: tuple[str, ...] = get_args(ShortPolicy)
SAMPLING_MODES: tuple[str, ...] = get_args(SamplingMode)


class SamplingFn(Protocol):
    """Your own sampling function (`ClipDataset(sampling=fn)`): the frame indices of one clip.

    Called as `f(num_available, num_frames, *, train, rng, clip_index, num_clips)` and must
    return a 1-D array-like of `num_frames` integers in [0, num_available). `rng` is a
    `np.random.Generator` seeded from (seed, epoch, item index): use it and nothing else for
    randomness so results do not depend on the number of DataLoader workers. (ClipDataset
    always passes one; `sample_clip(..., train=False, rng=None)` passes None.)
    """

    def __call__(
        self,
        num_available: int,
        num_frames: int,
        *,
        train: bool,
        rng: np.random.Generator | None,
        clip_index: int,
        num_clips: int,
    ) -> np.ndarray: ...


def segment_indices(
    num_available: int,
    num_frames: int,
    *,
    train: bool,
    rng: np.random.Generator | None = None,
    clip_index: int = 0,
    num_clips: int = 1,
    short_policy: ShortPolicy = "repeat_last",
) -> np.ndarray:
    """TSN sampling: one frame from each of `num_frames` equal segments of [0, num_available).

    Segment k is [floor(k * n / N), floor((k + 1) * n / N)) for n = num_available, N = num_frames.
    Training picks one frame uniformly at random inside each segment. Testing picks, in every
    segment, the frame at offset floor(len * (clip_index + 0.5) / num_clips) from its start (the
    centre when num_clips == 1), so the K test clips are evenly spread views.

    When num_available >= num_frames the result is strictly increasing. When the video is shorter
    than the clip (num_available < num_frames), `short_policy` decides:
    "repeat_last" -> [0, 1, ..., n-1, n-1, ...] (sorted, the last frame repeated),
    "loop" -> [0, 1, ..., n-1, 0, 1, ...], "error" -> ValueError.

    Returns:
        int64 (num_frames,) frame indices in [0, num_available).
    """
    _check_counts(num_available, num_frames, short_policy)
    _check_position(train, rng, clip_index, num_clips)
    n, count = num_available, num_frames
    if n < count:
        return _pad_short(np.arange(n, dtype=np.int64), count, short_policy, n, "segment")
    k = np.arange(count, dtype=np.int64)
    starts = (k * n) // count
    lengths = ((k + 1) * n) // count - starts
    return starts + _offset(lengths, rng if train else None, clip_index, num_clips)


def consecutive_indices(
    num_available: int,
    num_frames: int,
    *,
    stride: int = 1,
    train: bool,
    rng: np.random.Generator | None = None,
    clip_index: int = 0,
    num_clips: int = 1,
    short_policy: ShortPolicy = "repeat_last",
) -> np.ndarray:
    """`num_frames` frames `stride` apart: [start, start + stride, ..., start + (N-1) * stride].

    The clip spans (N - 1) * stride + 1 frames, so valid starts are [0, n - span]. Training draws
    the start uniformly from them; testing splits them into `num_clips` equal parts and takes the
    centre of part `clip_index` (the centred clip when num_clips == 1).

    When the video is shorter than the span, the clip starts at frame 0 and keeps the strided
    frames that exist, [0, stride, ...] below n; `short_policy` fills the rest:
    "repeat_last" repeats the last of them, "loop" cycles through them again, "error" raises
    ValueError.

    Returns:
        int64 (num_frames,) frame indices in [0, num_available).
    """
    _check_counts(num_available, num_frames, short_policy)
    _check_position(train, rng, clip_index, num_clips)
    check_positive_int("stride", stride)
    n, count = num_available, num_frames
    offsets = np.arange(count, dtype=np.int64) * stride
    span = int(offsets[-1]) + 1
    if n < span:
        in_range = offsets[offsets < n]
        return _pad_short(in_range, count, short_policy, n, f"consecutive (stride {stride})")
    return _offset(n - span + 1, rng if train else None, clip_index, num_clips) + offsets


def sample_clip(
    sampling: SamplingMode | SamplingFn,
    num_available: int,
    num_frames: int,
    *,
    train: bool,
    rng: np.random.Generator | None,
    clip_index: int = 0,
    num_clips: int = 1,
    stride: int = 1,
    short_policy: ShortPolicy = "repeat_last",
) -> np.ndarray:
    """Indices of one clip from a built-in mode ("segment", "consecutive") or a `SamplingFn`.

    `stride` and `short_policy` go to the built-in modes only (a sampling function closes over
    its own settings). What a sampling function returns is checked: it must be 1-D integers,
    `num_frames` long, in [0, num_available); otherwise ValueError/TypeError naming it.

    Returns:
        int64 (num_frames,) frame indices in [0, num_available).
    """
    # where the clip lies: what every mode and a sampling function take alike
    where: dict[str, Any] = {
        "train": train, "rng": rng, "clip_index": clip_index, "num_clips": num_clips
    }  # fmt: skip
    if sampling == "segment":
        if stride != 1:
            raise ValueError(f"stride ({stride}) must be 1 for sampling='segment'")
        return segment_indices(num_available, num_frames, short_policy=short_policy, **where)
    if sampling == "consecutive":
        return consecutive_indices(
            num_available, num_frames, stride=stride, short_policy=short_policy, **where
        )
    if isinstance(sampling, str) or not callable(sampling):
        raise ValueError(f"sampling ({sampling!r}) must be one of {SAMPLING_MODES} or a callable")
    _check_counts(num_available, num_frames, "repeat_last")
    _check_position(train, rng, clip_index, num_clips)
    out = sampling(num_available, num_frames, **where)
    who = f"sampling function {qualname(sampling)}"
    return check_indices(out, num_available, num_frames, who=who)


def check_indices(indices: object, num_available: int, num_frames: int, *, who: str) -> np.ndarray:
    """`indices` as int64 (num_frames,) after checking they are 1-D integers in [0, num_available).

    `who` names the sampling function in the error messages.
    """
    arr = np.asarray(indices)
    if arr.ndim != 1:
        raise ValueError(f"{who} returned indices of shape {arr.shape}; they must be 1-D")
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{who} returned indices of dtype {arr.dtype}; they must be integers")
    if arr.shape[0] != num_frames:
        raise ValueError(
            f"{who} returned {arr.shape[0]} indices; it must return num_frames ({num_frames})"
        )
    lo, hi = int(arr.min()), int(arr.max())
    if lo < 0 or hi >= num_available:
        raise ValueError(
            f"{who} returned indices in [{lo}, {hi}]; they must lie in [0, {num_available})"
        )
    return arr.astype(np.int64, copy=False)


def _pad_short(
    in_range: np.ndarray, count: int, policy: str, num_available: int, what: str
) -> np.ndarray:
    if policy == "error":
        raise ValueError(
            f"num_available ({num_available}) is too short for a {what} clip of {count} frames "
            f"and short_policy is 'error'"
        )
    at = np.arange(count)  # "loop" cycles through the frames that exist, "repeat_last" stops
    return in_range[at % in_range.size if policy == "loop" else np.minimum(at, in_range.size - 1)]


def _check_counts(num_available: object, num_frames: object, short_policy: object) -> None:
    """The frame counts of a clip request, and what to do when the video is too short."""
    if check_int("num_available", num_available) <= 0:
        raise ValueError(f"num_available ({num_available}) must be > 0: a video with no frames")
    check_positive_int("num_frames", num_frames)
    check_choice("short_policy", short_policy, SHORT_POLICIES)


def _check_position(train: object, rng: object, clip_index: object, num_clips: object) -> None:
    """Which clip: random (train, from `rng`) or test clip `clip_index` of `num_clips`."""
    check_bool("train", train)
    if train and not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a np.random.Generator when train=True, got {rng!r}")
    num_clips = check_positive_int("num_clips", num_clips)
    if not 0 <= check_int("clip_index", clip_index) < num_clips:
        raise ValueError(f"clip_index ({clip_index}) must be in [0, num_clips={num_clips})")


def _offset(
    room: np.ndarray | int, rng: np.random.Generator | None, clip_index: int, num_clips: int
) -> np.ndarray | int:
    """Where a clip starts among `room` possible starts (an int, or int64 array of them, one
    per segment): drawn uniformly from [0, room) with `rng` (training), else (rng None) the
    centre of part `clip_index` of `num_clips` equal parts."""
    if rng is not None:
        return rng.integers(0, room)
    return ((2 * clip_index + 1) * room) // (2 * num_clips)


# --------------------------------------------------------------------------- time


#: A time within 1 ns of a frame's timestamp counts as reaching it (timestamps are pts x time
#: base in floating point: 1380 x 0.001 is 1.3800000000000001); `vidload._windows` too.
TIE_S = 1e-9


def _check_timestamps(timestamps: object) -> np.ndarray:
    ts = np.asarray(timestamps, dtype=np.float64)
    if ts.ndim != 1 or ts.size == 0:
        raise ValueError(f"timestamps must be a non-empty 1-D array, got shape {ts.shape}")
    if not np.isfinite(ts).all() or (ts.size > 1 and (np.diff(ts) <= 0).any()):
        raise ValueError("timestamps must be finite and strictly increasing")
    return ts


def _end_time(ts: np.ndarray) -> float:
    """Where the last frame stops showing: its start plus the previous frame's duration (a
    single frame is taken to last 0 seconds)."""
    return float(ts[-1] + (ts[-1] - ts[-2] if ts.size > 1 else 0.0))


def shown_at(timestamps: np.ndarray, times: np.ndarray) -> np.ndarray:
    """int64 index of the frame on screen at each time: the last frame whose timestamp is
    <= t (the first frame for a t before it). A time within 1 ns of a frame's timestamp counts
    as reaching it: timestamps are pts x time base in floating point (1380 x 0.001 is
    1.3800000000000001), and a tie must not fall to the frame before."""
    ts = _check_timestamps(timestamps)
    idx = np.searchsorted(ts, np.asarray(times, np.float64) + TIE_S, side="right") - 1
    return np.clip(idx, 0, ts.size - 1).astype(np.int64)


def resampled_indices(timestamps: np.ndarray, fps: float) -> np.ndarray:
    """The frames of the video as if resampled to `fps`: int64 (M,), entry j the frame on
    screen at ts[0] + j / fps, for every j with that time before the video ends.

    `sampling` then picks from these M "virtual" frames, so a 60 fps and a 25 fps video of one
    action give clips of the same duration, and a variable-frame-rate video is sampled evenly
    in time (mmaction2's target-fps / frame_interval idea, on real timestamps).

    Args:
        timestamps: float seconds per frame, strictly increasing (`source.timestamps`).
        fps: the target frame rate, > 0.
    """
    ts = _check_timestamps(timestamps)
    fps = check_positive_number("fps", fps)
    span = _end_time(ts) - ts[0]
    count = max(1, int(np.ceil(span * fps - 1e-9)))
    return shown_at(ts, ts[0] + np.arange(count) / fps)


def window_indices(
    timestamps: np.ndarray,
    num_frames: int,
    clip_seconds: float,
    *,
    train: bool,
    rng: np.random.Generator | None,
    clip_index: int = 0,
    num_clips: int = 1,
) -> np.ndarray:
    """`num_frames` frames evenly spaced in time in a window of `clip_seconds`: int64
    (num_frames,), frame k the one on screen at start + (k + 0.5) * clip_seconds / num_frames.

    Training draws the window start uniformly from [ts[0], end - clip_seconds] with `rng`;
    testing places clip `clip_index` of `num_clips` evenly over that range (the middle for
    one clip). A video shorter than the window gives a window from its start, times past the
    end showing its last frame (PyTorchVideo's clip duration, on real timestamps, so a
    variable-frame-rate video is sampled evenly in time).
    """
    ts = _check_timestamps(timestamps)
    check_positive_int("num_frames", num_frames)
    clip_seconds = check_positive_number("clip_seconds", clip_seconds)
    _check_position(train, rng, clip_index, num_clips)
    slack = max(0.0, _end_time(ts) - ts[0] - clip_seconds)
    if train:
        assert rng is not None  # _check_position: training needs an rng
        start = ts[0] + rng.uniform(0.0, slack) if slack > 0 else ts[0]
    else:
        start = ts[0] + slack * (clip_index + 0.5) / num_clips
    step = clip_seconds / num_frames
    return shown_at(ts, start + (np.arange(num_frames) + 0.5) * step)
