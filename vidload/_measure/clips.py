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
from vidload.sources._format import StorageFormat
from vidload.sources.video import VideoSource

__all__ = [
    "ORIGINAL",
    "Clip",
    "Originals",
    "common_counts",
    "sample_clips",
    "stored_bytes",
    "storage_kind",
    "why",
]

#: A clip: (video id, int64 frame indices), what every row of both commands reads.
Clip = tuple[str, np.ndarray]

#: The storage that is the videos as they are (read by `VideoSource`), no storage kind.
ORIGINAL = "original"


class Originals(StorageFormat):
    """The videos as they are (`ORIGINAL`): no kind of the table (nothing converts to them),
    but a row of bench and choose whose source, files and bytes are a kind's (`storage_kind`):
    `VideoSource` reads them."""

    name = ORIGINAL
    suffix = ""
    described = "the videos as they are"
    source = VideoSource
    choose_options = ({},)  # one candidate, the videos themselves

    def files(self, root: Path, video_id: str) -> list[Path]:
        return VideoSource(root).files(video_id)


def storage_kind(storage: str) -> StorageFormat:
    """The kind named `storage` (`vidload._kinds`), or `Originals` for `ORIGINAL`."""
    return Originals() if storage == ORIGINAL else get_kind(storage)


def why(e: BaseException) -> str:
    """An error in one line for a report: its type and its last line, at most 300 chars."""
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[-1] if text else ''}"[:300]


def common_counts(
    sources: Mapping[str, Any],
    ids: Sequence[str],
    dropped: dict[str, str],
    failed: str = "counting its frames",
) -> dict[str, int]:
    """{video id: the smallest frame count any of `sources` has for it} for the ids not in
    `dropped`, so that every row can read every clip; a video some source cannot count is
    added to `dropped` (why: `failed` and the error) and left out."""
    counts: dict[str, int] = {}
    for vid in ids:
        if vid in dropped:
            continue
        try:
            counts[vid] = min(src.actual_frames(vid) for src in sources.values())
        except Exception as e:  # noqa: BLE001 - named in the report, left out of every row
            dropped[vid] = f"{failed}: {why(e)}"
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


def stored_bytes(storage: str, root: Path, video_ids: Sequence[str]) -> float:
    """Mean bytes on disk of each video in `storage` under `root` (its kind's `video_bytes`:
    its own share where one file holds many videos)."""
    return float(np.mean([storage_kind(storage).video_bytes(root, v) for v in video_ids]))
