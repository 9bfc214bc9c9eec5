"""torch.distributed awareness: the one home for "is there a process group, and which rank am I".

Used by `ClipDataset` (one seed for every rank), `make_loader` (a `DistributedSampler` by
default) and a stateful loader's `state_dict()` (what every rank learned, gathered). Nothing
here starts or joins a process group; it only looks at one the caller set up
(`torch.distributed.init_process_group`, e.g. under torchrun).
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["gather_objects", "process_group", "shared_seed"]


def process_group() -> tuple[int, int] | None:
    """(rank, world_size) of the default process group, or None when none is initialised (or
    torch was built without distributed support)."""
    dist = torch.distributed
    if not dist.is_available() or not dist.is_initialized():
        return None
    return dist.get_rank(), dist.get_world_size()


def shared_seed() -> int:
    """A fresh seed, the same on every rank: rank 0 draws it and broadcasts it.

    A collective: every rank of the default process group must call it at the same point (as
    every rank constructs the same datasets in a DDP script); a rank that does not would leave
    the others waiting until the group's timeout. Without a process group it is just a fresh
    seed from the OS's entropy.
    """
    entropy = np.random.SeedSequence().entropy
    assert isinstance(entropy, int)  # drawn from the OS when none is given
    if process_group() is None:
        return entropy
    box = [entropy]
    # broadcast_object_list places its buffer on the current CUDA device for NCCL groups
    torch.distributed.broadcast_object_list(box, src=0)
    return int(box[0])


def gather_objects(obj: object) -> list[object]:
    """`obj` of every rank of the default process group, in rank order (`[obj]` without one).

    A collective, like `shared_seed`: every rank must call it at the same point. The objects
    are pickled; keep them small (a loader state's learned counts are a few lists).
    """
    group = process_group()
    if group is None:
        return [obj]
    gathered: list[object] = [None] * group[1]
    # all_gather_object places its buffers on the current CUDA device for NCCL groups
    torch.distributed.all_gather_object(gathered, obj)
    return gathered
