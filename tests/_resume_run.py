"""One process of the resume tests in tests/test_resume.py (not a test).

python tests/_resume_run.py PHASE ROOT OUT WORKERS [RANK WORLD STORE]

PHASE "first": the uninterrupted run (epochs 0 and 1, every batch), then, with a new dataset and
loader, 3 batches and `torch.save(loader.state_dict())` to OUT + ".state". PHASE "resume": a new
dataset and loader load that state and run to the end of epoch 1. Each batch is saved as
(clips, labels, item indices, the device-augmented normalised clips). With RANK WORLD STORE the
process joins a gloo group first (make_loader then picks a DistributedSampler).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

from vidload import ClipDataset, NpySource, epochs, make_loader, normalize
from vidload.augment import ClipAugment
from vidload.normalization import KINETICS_MEAN, KINETICS_STD
from vidload.sources._timestamps import write_timestamps
from vidload.sources.jpeg_decode import encode_jpeg
from vidload.sources.npy import write_npy

#: 14 readable videos and a broken one (on_error="skip" takes the next video's clip instead).
VIDEOS = [(f"v{k}.mp4", k) for k in range(7)] + [("bad.mp4", 99)]
VIDEOS += [(f"v{k}.mp4", k) for k in range(7, 14)]
SEED, BATCH, EPOCHS, SAVE_AFTER = 11, 2, 2, 3


def write_videos(root: Path) -> None:
    """VIDEOS as npy files under `root`: 14 of 8 noise frames (16x16: crops and flips show,
    timestamps beside them for return_info) and a broken one (tests/test_resume.py and
    tests/test_elastic.py make them; this script and tests/_elastic_run.py read them)."""
    rng = np.random.default_rng(0)
    for k in range(14):
        frames = [rng.integers(0, 256, (16, 16, 3), dtype=np.uint8) for _ in range(8)]
        write_npy(root / f"v{k}.npy", [encode_jpeg(f) for f in frames])
        write_timestamps(root / f"v{k}.npy", np.arange(8) / 25)
    (root / "bad.npy").write_bytes(b"not an npy file")


def build(root: str, workers: int, *, seed: int = SEED, batch: int = BATCH):
    """A fresh dataset of VIDEOS (random geometry, broken video skipped, `return_info`) and
    its stateful loader."""
    ds = ClipDataset(
        VIDEOS,
        NpySource(root),
        num_frames=4,
        short_side=(14, 16),
        crop=12,
        flip=True,
        on_error="skip",
        seed=seed,
        return_info=True,
    )
    loader = make_loader(ds, batch_size=batch, num_workers=workers, stateful=True)
    return ds, loader


def record(ds: ClipDataset, batch) -> tuple:
    clips, labels, info = batch
    aug = ClipAugment(KINETICS_MEAN, KINETICS_STD, seed=ds.seed)
    x = normalize(clips, KINETICS_MEAN, KINETICS_STD)
    return clips, labels, info["index"], aug(x, info["index"], epoch=ds.epoch)


def main(phase: str, root: str, out: str, workers: int) -> None:
    result: dict[str, object] = {}
    if phase == "first":
        ds, loader = build(root, workers)
        result["full"] = [record(ds, b) for _ in epochs(loader, EPOCHS) for b in loader]
        ds, loader = build(root, workers)
        head: list[tuple] = []
        for _ in epochs(loader, EPOCHS):
            for batch in loader:
                head.append(record(ds, batch))
                if len(head) == SAVE_AFTER:
                    break
            if len(head) == SAVE_AFTER:
                break
        result["head"] = head
        state = loader.state_dict()
        result["broken_at_save"] = ds.broken_videos
        torch.save(state, out + ".state")
    else:
        ds, loader = build(root, workers)
        loader.load_state_dict(torch.load(out + ".state", weights_only=False))
        result["broken_at_load"] = ds.broken_videos
        result["resume_epoch"] = loader.resume_epoch
        result["rest"] = [record(ds, b) for _ in epochs(loader, EPOCHS) for b in loader]
    torch.save(result, out)


if __name__ == "__main__":
    phase, root, out, workers, *group = sys.argv[1:]
    if group:
        rank, world, store = group
        dist.init_process_group(
            "gloo", init_method=f"file://{store}", rank=int(rank), world_size=int(world)
        )
    main(phase, root, out, int(workers))
    if group:
        dist.barrier()
        dist.destroy_process_group()
