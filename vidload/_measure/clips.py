"""What every row of `vidload bench` and `vidload choose` is measured on: the videos every
storage can count, the clips sampled from them (the same list for every row), and what a
storage holds of a video (its files, evicted for a cold read, and its bytes on disk).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vidload._kinds import get_kind
from vidload.sampling import SamplingMode, sample_clip

__all__ = [
    "ORIGINAL",
    "Clip",
    "common_counts",
    "sample_clips",
    "stored_bytes",
    "stored_files",
    "why",
]

#: A clip: (video id, int64 frame indices), what every row of both commands reads.
Clip = tuple[str, np.ndarray]

#: The storage that is the videos as they are (read by `VideoSource`), no storage kind.
ORIGINAL = "original"


def why(e: BaseException) -> str:
    """An error in one line for a report: its type and its last line, at most 300 chars."""
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[-1] if text else ''}"[:300]


def common_counts(
    sources: Mapping[str, Any], ids: Sequence[str], dropped: dict[str, str]
) -> dict[str, int]:
    """{video id: the smallest frame count any of `sources` has for it} for the ids not in
    `dropped`, so that every row can read every clip; a video some source cannot count is
    added to `dropped` (with why) and left out."""
    counts: dict[str, int] = {}
    for vid in ids:
        if vid in dropped:
            continue
        try:
            counts[vid] = min(src.actual_frames(vid) for src in sources.values())
        except Exception as e:  # noqa: BLE001 - named in the report, left out of every row
            dropped[vid] = f"counting its frames: {why(e)}"
    return counts


def sample_clips(
    counts: Mapping[str, int],
    *,
    clips: int,
    num_frames: int,
    sampling: SamplingMode = "segment",
    stride: int = 1,
    seed: int,
) -> list[Clip]:
    """`clips` training clips (video id, int64 indices), cycling over the videos in shuffled
    orders; the indices from `vidload.sampling.sample_clip` (what `ClipDataset` samples) on
    `counts[video]` frames. The same list serves every row."""
    rng = np.random.default_rng(seed)
    ids = sorted(counts)
    out: list[Clip] = []
    order: list[str] = []
    while len(out) < clips:
        if not order:
            order = [ids[i] for i in rng.permutation(len(ids))]
        vid = order.pop()
        idx = sample_clip(sampling, counts[vid], num_frames, train=True, rng=rng, stride=stride)
        out.append((vid, idx))
    return out


def stored_files(storage: str, root: Path, video_id: str) -> list[Path]:
    """The files that hold `video_id` in `storage` under `root` (a cold read evicts them from
    the page cache): the originals' are those `VideoSource` reads, a kind's its
    `StorageFormat.files`."""
    if storage == ORIGINAL:
        from vidload.sources.video import VideoSource

        return VideoSource(root).files(video_id)
    return get_kind(storage).files(root, video_id)


def stored_bytes(storage: str, root: Path, video_ids: Sequence[str]) -> float:
    """Mean bytes on disk of each video in `storage` under `root` (a kind's `video_bytes`: its
    own share where one file holds many videos)."""
    if storage == ORIGINAL:
        sizes = [sum(p.stat().st_size for p in stored_files(storage, root, v)) for v in video_ids]
    else:
        sizes = [get_kind(storage).video_bytes(root, v) for v in video_ids]
    return float(np.mean(sizes))
