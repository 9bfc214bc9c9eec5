"""One gloo rank of the resume-on-another-world-size test in tests/test_elastic.py (not a test).

python tests/_elastic_run.py PHASE ROOT TMP WORKERS RANK WORLD STORE

PHASE "first": the uninterrupted run (epochs 0 and 1, every batch: "full"), then, with a new
dataset and loader, STOP batches ("head") and `loader.state_dict()` on every rank (a collective:
it gathers what the ranks learned); rank 0 saves it to TMP/state.pt. PHASE "resume": a new
dataset and loader load rank 0's state and run to the end of epoch 1 ("rest", per epoch); then,
for reference, an uninterrupted run of epoch 1 on this world size ("whole", 0 workers, its
warnings silenced: the test reads this process's stderr for the resumed run's). Each rank saves
what it saw to TMP/PHASE-RANK.pt: batches as (clips, labels, info).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import _resume_run as resume_run
import torch
import torch.distributed as dist

from vidload import epochs, set_epoch

#: _resume_run's videos; with SEED the broken one's item is the first of epoch 0's order: met
#: before the save.
SEED, BATCH, STOP = 2, 1, 2


def build(root: str, workers: int):
    return resume_run.build(root, workers, seed=SEED, batch=BATCH)


def first(root: str, tmp: Path, workers: int) -> dict[str, object]:
    ds, loader = build(root, workers)
    full = [list(loader) for _ in epochs(loader, 2)]
    ds, loader = build(root, workers)
    set_epoch(loader, 0)
    iterator = iter(loader)
    head = [next(iterator) for _ in range(STOP)]
    broken = ds.broken_videos  # what this rank found, before the others' are gathered
    state = loader.state_dict()
    if dist.get_rank() == 0:
        torch.save(state, tmp / "state.pt")
    del iterator
    state_broken = [entry[0] for entry in state["dataset"]["broken"]]
    return {"full": full, "head": head, "broken_at_save": broken, "state_broken": state_broken}


def resume(root: str, tmp: Path, workers: int) -> dict[str, object]:
    ds, loader = build(root, workers)
    loader.load_state_dict(torch.load(tmp / "state.pt", weights_only=True))
    result: dict[str, object] = {"broken_at_load": ds.broken_videos}
    result["rest"] = [list(loader) for _ in epochs(loader, 2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, whole = build(root, 0)
        set_epoch(whole, 1)
        result["whole"] = list(whole)
    return result


def main(phase: str, root: str, tmp: str, workers: str, rank: str, world: str, store: str):
    dist.init_process_group(
        "gloo", init_method=f"file://{store}", rank=int(rank), world_size=int(world)
    )
    run = first if phase == "first" else resume
    result = run(root, Path(tmp), int(workers))
    torch.save(result, Path(tmp) / f"{phase}-{rank}.pt")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(*sys.argv[1:])
