"""The benchmark's DataLoader over a fixed clip list: the seed scenario's loader (persistent
workers, in-order batches) and one epoch of it."""

from __future__ import annotations

import pickle
from collections.abc import Sequence

import torch
from torch.utils.data import DataLoader, Dataset

from vidload._bench.config import BenchConfig
from vidload._measure.clips import Clip
from vidload._measure.timing import collate_clips


class ClipList(Dataset):
    """Map-style dataset over a fixed clip list: item i is clip i read from `source`, as a
    uint8 (T, C, H, W) tensor, with the label 0 (as `row_pass` batches it: the labels cost the
    same whatever they are). Picklable when `source` is."""

    def __init__(self, source, clips: Sequence[Clip]) -> None:
        self.source = source
        self.clips = list(clips)

    def __len__(self) -> int:
        return len(self.clips)

    def __getitem__(self, i: int):
        vid, idx = self.clips[i]
        return torch.from_numpy(self.source.read(vid, idx)).permute(0, 3, 1, 2), 0


def make_loader(source, clips, cfg: BenchConfig, *, pin_memory: bool):
    """The seed scenario's DataLoader: `cfg.workers` persistent workers, in-order batches of
    `cfg.batch_size`, over a copy of `source` without its per-process state (open handles,
    caches)."""
    return DataLoader(
        ClipList(pickle.loads(pickle.dumps(source)), clips),
        batch_size=cfg.batch_size,
        shuffle=False,
        num_workers=cfg.workers,
        pin_memory=pin_memory,
        persistent_workers=cfg.workers > 0,
        collate_fn=collate_clips,
    )


def epoch(loader: DataLoader) -> None:
    for _batch in loader:
        pass
