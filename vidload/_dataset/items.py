"""ClipDataset's item assembly: a read's frames checked, frames to tensors, the transform's
seeded call, labels, info, stacking.

Everything here turns what a source returns into what the default collate batches; nothing
here samples.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from vidload._cv2 import cv2
from vidload.errors import FrameCountError, VideoReadError, VidloadError
from vidload.manifest import UNLABELLED, VideoEntry
from vidload.sources.base import FrameSourceBase
from vidload.transforms import frames_mismatch

#: (clip index within its video, spatial view, int64 (T,) source frame indices) of one clip.
ClipRecord = tuple[int, int, np.ndarray]


def check_frames(
    source: FrameSourceBase, vid: str, num_indices: int, frames: np.ndarray
) -> np.ndarray:
    """`frames` if it is what `source.read` must return, uint8 (num_indices, H, W, 3); else a
    TypeError naming the source and what it returned."""
    got = frames_mismatch(frames, num_indices)
    if got is None:
        return frames
    raise TypeError(
        f"{source.source_name}.read({vid!r}, ...) returned {got}; "
        f"expected uint8 ({num_indices}, H, W, 3)"
    )


def to_tensor(frames: np.ndarray, layout: str) -> torch.Tensor:
    """uint8 (k, H, W, 3) -> contiguous uint8 (k, 3, H, W) ("TCHW") or (3, k, H, W) ("CTHW").

    Each frame's channels are split by `cv2.split` straight into their planes of the output:
    for 8 frames of 320x240 on one thread 56 us of CPU, against 435 us for numpy's transposing
    copy (`np.array(frames.transpose(...), order="C")`) and 478 us for torch's
    `permute().contiguous()`, whose extra threads would double the CPU per clip
    (`python tools/micro.py to_tensor`).
    """
    k, h, w, _ = frames.shape
    out = np.empty((k, 3, h, w) if layout == "TCHW" else (3, k, h, w), np.uint8)
    by_frame = out if layout == "TCHW" else out.swapaxes(0, 1)  # (k, 3, H, W) either way
    if out.size:
        frames = np.ascontiguousarray(frames)
        for j in range(k):
            cv2.split(frames[j], list(by_frame[j]))  # frame j's three planes of `out`
    return torch.from_numpy(out)


def seeded_call(transform: Callable[[torch.Tensor], object], clip: torch.Tensor, key: list[int]):
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


def stack(clips: list[object], vid: str) -> torch.Tensor:
    """The clips of a stacked item, (V, ...); TypeError unless they are tensors of one shape."""
    try:
        return torch.stack(clips)  # type: ignore[arg-type]  # a transform may return anything
    except (TypeError, RuntimeError) as e:
        raise TypeError(
            f"stack_views=True needs every clip (after transform) to be a tensor of one "
            f"shape; video {vid!r} gave "
            f"{[tuple(getattr(x, 'shape', ())) or type(x).__name__ for x in clips]}"
        ) from e


def label_of(entry: VideoEntry, num_classes: int | None) -> int | torch.Tensor:
    """The int label; with `num_classes` (multi_label) a float32 (num_classes,) multi-hot
    vector (all zeros for an unlabelled video)."""
    if num_classes is None:
        return entry.label
    hot = torch.zeros(num_classes, dtype=torch.float32)
    labels = [k for k in (entry.labels or (entry.label,)) if k != UNLABELLED]
    hot[labels] = 1.0
    return hot


def info(
    source: FrameSourceBase,
    vid: str,
    read: Sequence[ClipRecord],
    *,
    stacked: bool,
    windowed: bool = False,
) -> dict[str, object]:
    """What an item holds, as types the default collate batches: video_id (str), indices
    (int64 (T,) source frame indices), timestamps (float64 (T,) seconds: the source's, or
    for a window (`windowed`) from the video's first frame, as the window's start and end
    count them, so they lie in [start, end); NaN when the source has no `timestamps`), clip
    and view (int). Stacked items give (V, T) arrays and (V,) clip/view tensors."""
    times = source.timestamps
    ts = np.asarray(times(vid), np.float64) if times is not None else None
    if ts is not None and windowed and ts.size:
        ts = ts - ts[0]
    indices = [torch.from_numpy(idx.astype(np.int64)) for _, _, idx in read]
    seconds = [
        torch.from_numpy(ts[idx] if ts is not None else np.full(len(idx), np.nan))
        for _, _, idx in read
    ]
    if not stacked:
        ((clip_n, view_n, _),) = read
        return {
            "video_id": vid,
            "indices": indices[0],
            "timestamps": seconds[0],
            "clip": clip_n,
            "view": view_n,
        }
    return {
        "video_id": vid,
        "indices": torch.stack(indices),
        "timestamps": torch.stack(seconds),
        "clip": torch.tensor([c for c, _, _ in read]),
        "view": torch.tensor([view for _, view, _ in read]),
    }


def in_context(e: VidloadError, vid: str, i: int) -> VidloadError:
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
