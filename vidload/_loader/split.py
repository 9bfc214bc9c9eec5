"""One global order per epoch, split across ranks step by step: which positions of it a rank
yields in a pass that starts after the first `items` items, and how many items a pass has handed
out. Pure arithmetic on positions; each sampler maps a position to its item (`order[p % n]`).

Rank r of W yields positions `items + r, items + r + W, ...`: at step s (B elements a rank), the
ranks together hand out positions `[items + s·W·B, items + (s+1)·W·B)`. With `items` = 0 and
padding this is torch's `DistributedSampler` exactly (its `indices[rank:total_size:num_replicas]`,
the list padded with its own first elements up to a multiple of W); with another `items` it is the
same rule on the rest of the order, so a run stopped after c items and resumed on W' ranks yields
each of the remaining items once, plus at most W' - 1 padding repeats, all in the last step.
"""

from __future__ import annotations

__all__ = ["handed_out", "share"]


def share(n: int, items: int, rank: int, world_size: int, *, pad: bool, drop: bool) -> range:
    """Positions of an order of `n` items that rank `rank` of `world_size` yields in a pass
    from item `items` (0 <= items <= n). `pad`: the rest is padded to a multiple of the world
    size with positions >= n (the caller wraps them: `p % n`, DistributedSampler's repeats);
    `drop`: cut down to one instead (DistributedSampler(drop_last=True)); neither: the ranks'
    shares differ by at most one (ShardSampler)."""
    rest = n - items
    if drop:
        stop = items + rest // world_size * world_size
    elif pad:
        stop = items + -(-rest // world_size) * world_size
    else:
        stop = n
    return range(items + rank, stop, world_size)


def handed_out(n: int, items: int, yielded: int, world_size: int) -> int:
    """Items of the order handed out over all ranks once each rank has yielded `yielded`
    elements of a pass that began at item `items` (ranks step together; at most n)."""
    return min(items + yielded * world_size, n)
