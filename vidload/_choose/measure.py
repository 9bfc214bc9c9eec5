"""What `vidload choose` measures on each storage: bytes, warm and cold read speed, PSNR.

The timing machinery is the one bench uses too (`vidload._measure.timing`): a row's pass reads
every clip through the storage's source, makes tensors and collates them (`row_pass`); rows are
interleaved round-robin and the best round counts (`RoundRobin`); cold passes evict the files
first (`cold_and_warm`); the clips are `vidload._measure.clips`'. Warm reads are timed in CPU
seconds of this process (`time.process_time`, all its threads), so clips/s per core is clips
per CPU-second and other processes on the machine do not count. Cold reads are timed in
wall-clock seconds, since waiting for the disk is what they cost.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from vidload._measure.clips import Clip
from vidload._measure.timing import Reader, RoundRobin, row_pass
from vidload.convert import resize_short_side
from vidload.sampling import segment_indices

__all__ = [
    "PSNR_CAP_DB", "cut_to", "psnr", "psnr_indices", "reference_frames", "spread", "warm_rates"
]  # fmt: skip

#: PSNR given to a frame identical to its reference (infinite otherwise): above any lossy
#: storage here (JPEG q95 is 40-45 dB), and a finite number for the JSON.
PSNR_CAP_DB = 100.0


def spread(ids: Sequence[str], k: int) -> list[str]:
    """`k` of `ids` spread evenly over the (sorted) list: the middle of each of k equal parts
    (all of them when there are no more than k). Deterministic; in a class-folder layout it
    takes videos from across the classes, not the first class only."""
    n = len(ids)
    if k >= n:
        return list(ids)
    return [ids[(2 * i + 1) * n // (2 * k)] for i in range(k)]


def psnr_indices(count: int, frames: int) -> np.ndarray:
    """The frames whose PSNR is measured: the centres of `frames` equal segments of the video
    (fewer, without repeats, when it is shorter)."""
    return np.unique(segment_indices(count, frames, train=False))


def reference_frames(
    original: Any, video_id: str, indices: np.ndarray, short_side: int | None
) -> np.ndarray:
    """uint8 (k, H, W, 3): frames of the original decode, resized as `convert` resizes them
    (`vidload.convert.resize_short_side`, cv2.INTER_AREA) when `short_side` is given, so a
    storage is compared with what it was made from."""
    frames = original.read(video_id, indices)
    if short_side is None:
        return frames
    return np.stack([resize_short_side(f, short_side) for f in frames])


def cut_to(reference: np.ndarray, frames: np.ndarray) -> np.ndarray:
    """`reference` (k, H, W, 3) cut to the size of `frames` when that is at most one row and one
    column smaller: `convert --to video` stores even sides (H.264 in 4:2:0), cutting an odd
    frame's last row or column, so that is what such a storage was made from. Any other size
    is left as it is (and `psnr` then refuses it)."""
    h, w = frames.shape[1:3]
    rh, rw = reference.shape[1:3]
    if (h, w) != (rh, rw) and 0 <= rh - h <= 1 and 0 <= rw - w <= 1:
        return reference[:, :h, :w]
    return reference


def psnr(frames: np.ndarray, reference: np.ndarray, *, where: str) -> np.ndarray:
    """float64 (k,) PSNR in dB of each frame against its reference (8-bit peak 255); a frame
    identical to its reference gets `PSNR_CAP_DB`.

    Raises:
        ValueError: the shapes differ (naming `where`).
    """
    if frames.shape != reference.shape:
        raise ValueError(f"{where}: frames {frames.shape} vs the original decode {reference.shape}")
    diff = frames.astype(np.float32) - reference.astype(np.float32)
    mse = np.mean(diff * diff, axis=(1, 2, 3), dtype=np.float64)
    with np.errstate(divide="ignore"):
        db = 10.0 * np.log10(255.0**2 / mse)
    return np.minimum(db, PSNR_CAP_DB)


def warm_rates(
    readers: Mapping[str, Reader],
    clips: Sequence[Clip],
    *,
    batch_size: int,
    rounds: int,
    min_time: float,
    log: Callable[[str], None],
) -> dict[str, float]:
    """Clips per CPU-second of each reader, warm, in one process: best of `rounds` rounds
    interleaved over the readers (each calibrated to last `min_time` s). Returns {name:
    clips per second per core}."""
    clock = time.process_time
    rr = RoundRobin(min_time, clock)
    for name, read in readers.items():
        log(f"  warming up {name}")
        rr.add(name, functools.partial(row_pass, read, clips, batch_size, clock=clock))
    rr.run(rounds, on_round=lambda r: log(f"  round {r + 1}/{rounds} done"))
    best = {name: rr.best(name) for name in readers}  # CPU seconds per pass
    return {name: len(clips) / t if t > 0 else math.inf for name, t in best.items()}
