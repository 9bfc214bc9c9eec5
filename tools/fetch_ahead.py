"""A worker's wait for the network per batch, with and without the next batch's round fetched
ahead (`make_loader(fetch_ahead=...)`, issue 33), over nginx with injected latency.

    python tools/fetch_ahead.py [--latency-ms 20] [--workers 2] [--batch-size 16]
        [--storages hdf5,npy] [--rounds 3] [--clips 256] [--work DIR] [--json FILE]

The data, the server and the spreading of names are `tools/bucket_latency.py`'s (the real clips
of ../shared/videos and ../shared/videos-extra converted at short side 256, each container
named under many folders so that every clip of a measured epoch reads an object never read
before, the heads sidecar written for those names, nginx with a non-blocking `ngx.sleep` per
request). Each row reads the same kind of epoch through `make_loader` (8-frame segment clips,
crop 224, persistent workers), from local disk and at each latency, with `fetch_ahead` off and
on; rows interleaved, each figure the median of `--rounds` epochs (the first epoch of each row
warms up and is not counted).

Figures: clips/s (wall clock), and per batch the seconds a worker was blocked on storage for
its batches (`vidload._dataset.batch.STATS["waited_s"]`: the heads `prepare` opens and the
rounds' answers, timed in each worker and handed back beside each batch by the collate
function), also as a fraction of the latency; the objects a batch took from the round sent
ahead and those fetched again. Needs nginx with its lua module, as bucket_latency does.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bucket_latency as bl  # noqa: E402 (the tool beside this one)


class Slice:
    """A sampler whose indices the tool sets before each epoch (workers stay up)."""

    def __init__(self) -> None:
        self.indices: list[int] = []

    def __iter__(self):
        return iter(self.indices)

    def __len__(self) -> int:
        return len(self.indices)


def collate_with_waits(items: list) -> tuple[Any, Any, int, dict[str, float]]:
    """`collate_clips(items)`, with the worker's id and its `ahead.STATS` (in the worker)."""
    from torch.utils.data import get_worker_info

    from vidload._dataset.batch import STATS
    from vidload.collate import collate_clips

    clips, labels = collate_clips(items)
    info = get_worker_info()
    return clips, labels, -1 if info is None else info.id, dict(STATS)


def _epoch(loader: Any, sampler: Slice, indices: list[int]) -> dict[str, float]:
    """One epoch: wall seconds, clips, batches, and from each batch's worker `STATS` (the
    change since that worker's batch before) the seconds waited, the objects taken from a
    round sent ahead and fetched again, summed; `steady_*`: the batches that took a round
    sent ahead (every batch of a worker but its first of the epoch, when fetching ahead)."""
    from vidload._dataset.batch import STATS

    sampler.indices = indices
    out = dict.fromkeys(
        ["batches", "clips", "waited_s", "taken", "again", "steady_batches", "steady_waited_s"],
        0.0,
    )
    here = dict(STATS)  # 0 workers: this process, which every row's loader shares
    wall = time.perf_counter()
    for x, _labels, worker, stats in loader:
        if worker == -1:
            before, here = here, stats
        else:  # a worker of this loader: its count since its batch before
            before = _BEFORE.get((id(loader), worker), {})
            _BEFORE[(id(loader), worker)] = stats
        delta = {k: stats[k] - before.get(k, 0.0) for k in ("waited_s", "taken", "again")}
        out["batches"] += 1
        out["clips"] += x.shape[0]
        for k, v in delta.items():
            out[k] += v
        if delta["taken"] > 0:
            out["steady_batches"] += 1
            out["steady_waited_s"] += delta["waited_s"]
    out["wall_s"] = time.perf_counter() - wall
    if out["clips"] != len(indices):
        raise RuntimeError(f"{out['clips']} clips of {len(indices)}")
    return out


_BEFORE: dict[tuple[int, int], dict[str, float]] = {}


def measure(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from vidload import ClipDataset
    from vidload.loader import make_loader

    torch.set_num_threads(1)
    if args.shared is not None:
        bl.SHARED = Path(args.shared)
    work = Path(args.work)
    storages = [bl._storage(work, s, 256) for s in args.storages]
    epochs = args.rounds + 1
    for s in storages:
        copies = -(-args.clips * epochs // len(s.rows))
        bl._spread(s, work / "data", copies)
        bl._heads(s, work / "data", True)
    server = bl.Nginx(work / "data", args.latency_ms)
    print(f"nginx {server.url}, latencies {args.latency_ms} ms, data {work / 'data'}", flush=True)
    rows: list[dict[str, Any]] = []
    try:
        for s in storages:
            for backend in ["local", *(f"{ms:g} ms" for ms in args.latency_ms)]:
                if backend == "local":
                    root = str(work / "data" / s.name)
                else:
                    root = f"{server.url}/ms{backend.split()[0]}/{s.name}"
                for ahead in (False, True):
                    if backend == "local" and ahead:
                        continue  # nothing to fetch ahead on local disk (make_loader: off)
                    src = bl._source(s.name, root, None)
                    ds = ClipDataset(
                        f"{root}/manifest.csv", src, num_frames=8, train=True, seed=0, crop=224
                    )
                    sampler = Slice()
                    loader = make_loader(
                        ds,
                        batch_size=args.batch_size,
                        sampler=sampler,
                        num_workers=args.workers,
                        read_ahead=False,
                        fetch_ahead=ahead,
                        pin_memory=False,
                        collate_fn=collate_with_waits,
                    )
                    rows.append(
                        {
                            "storage": s.name,
                            "backend": backend,
                            "fetch_ahead": ahead,
                            "loader": loader,
                            "sampler": sampler,
                            "epochs": [],
                        }  # fmt: skip
                    )
        for r in range(epochs):
            for row in rows:
                n = args.clips
                got = _epoch(row["loader"], row["sampler"], list(range(r * n, (r + 1) * n)))
                if r > 0:
                    row["epochs"].append(got)
            print(f"round {r} done" + (" (warm-up)" if r == 0 else ""), flush=True)
    finally:
        server.stop()
    out: dict[str, Any] = {"args": vars(args), "rows": []}
    for row in rows:
        eps = row["epochs"]
        med = {k: statistics.median(e[k] for e in eps) for k in eps[0]}
        latency = 0.0 if row["backend"] == "local" else float(row["backend"].split()[0])
        wait_ms = med["waited_s"] / med["batches"] * 1e3
        steady = sum(e["steady_waited_s"] for e in eps) / max(
            1, sum(e["steady_batches"] for e in eps)
        )
        out["rows"].append(
            {
                "storage": row["storage"],
                "backend": row["backend"],
                "fetch_ahead": row["fetch_ahead"],
                "clips_per_s": med["clips"] / med["wall_s"],
                "clips_per_s_all": [e["clips"] / e["wall_s"] for e in eps],
                "wait_ms_per_batch": wait_ms,
                "wait_ms_per_batch_taken": steady * 1e3 if row["fetch_ahead"] else None,
                "wait_per_latency": wait_ms / latency if latency else None,
                "taken_per_batch": med["taken"] / med["batches"],
                "again_per_batch": med["again"] / med["batches"],
            }
        )
    return out


def render(result: dict[str, Any]) -> str:
    head = ["storage", "backend", "fetch_ahead", "clips/s (each epoch)", "wait ms/batch",
            "wait/latency", "wait ms/batch taking a round sent ahead", "taken/batch",
            "again/batch"]  # fmt: skip
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for r in result["rows"]:
        ratio, taken = r["wait_per_latency"], r["wait_ms_per_batch_taken"]
        lines.append(
            " | ".join(
                [
                    r["storage"],
                    r["backend"],
                    "on" if r["fetch_ahead"] else "off",
                    f"{r['clips_per_s']:.0f} ("
                    + ", ".join(f"{c:.0f}" for c in r["clips_per_s_all"])
                    + ")",
                    f"{r['wait_ms_per_batch']:.1f}",
                    "-" if ratio is None else f"{ratio:.2f}",
                    "-" if taken is None else f"{taken:.1f}",
                    f"{r['taken_per_batch']:.1f}",
                    f"{r['again_per_batch']:.1f}",
                ]
            )
        )
    a = result["args"]
    lines.append(
        f"\n{a['workers']} workers, batch {a['batch_size']}, {a['clips']} clips an epoch, "
        f"median of {a['rounds']} epochs (interleaved); wait: time a worker was blocked on "
        f"storage for its batches (heads and rounds), per batch; taking a round sent ahead: "
        f"the batches that did (all but each worker's first of an epoch), their mean"
    )
    return "\n".join(lines)


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-ms", type=_floats, default=[20.0], help="20")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3, help="measured epochs per row")
    parser.add_argument("--clips", type=int, default=256, help="per epoch")
    parser.add_argument(
        "--storages", type=lambda t: t.split(","), default=["hdf5", "npy"], help="hdf5,npy"
    )
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "vidload-nginx"))
    parser.add_argument("--shared", help=f"the folder of the real clips ({bl.SHARED})")
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args(argv)
    result = measure(args)
    print(render(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
