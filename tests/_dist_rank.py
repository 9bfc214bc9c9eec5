"""One rank of the gloo process group started by tests/test_distributed.py (not a test).

python tests/_dist_rank.py RANK WORLD_SIZE STORE_FILE DATA_ROOT OUT_FILE

Joins the group, builds a training and an evaluation ClipDataset with seed=None, iterates each
through `make_loader` (no sampler given) and saves what it saw with torch.save.
"""

from __future__ import annotations

import sys

import torch
import torch.distributed as dist

from vidload import ClipDataset, NpySource, make_loader, set_epoch


def main(rank: int, world: int, store: str, root: str, out: str) -> None:
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    videos = [(f"v{k}.mp4", k) for k in range(7)]
    train = ClipDataset(videos, NpySource(root), num_frames=4)  # seed=None: broadcast
    test = ClipDataset(videos, NpySource(root), num_frames=4, train=False)
    result = {"seed": train.seed, "test_seed": test.seed, "epochs": []}
    loader = make_loader(train, batch_size=2, num_workers=0)
    result["sampler"] = type(loader.sampler.sampler).__name__  # inside the ReadAheadSampler
    for epoch in (0, 1):
        set_epoch(loader, epoch)
        labels, clips = [], []
        for clip, label in loader:
            labels += label.tolist()
            clips.append(clip)
        result["epochs"].append((labels, torch.cat(clips)))
    loader = make_loader(test, batch_size=2, num_workers=0)
    result["test_sampler"] = type(loader.sampler.sampler).__name__
    result["test_labels"] = [label for _, labels in loader for label in labels.tolist()]
    torch.save(result, out)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    rank, world, store, root, out = sys.argv[1:]
    main(int(rank), int(world), store, root, out)
