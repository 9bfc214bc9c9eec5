"""`vidload bench --bucket URL`: the container sources reading from a bucket against local disk.

The work folder's conversions of the kinds a bucket can hold are uploaded under URL once (an
object already there with the same size is kept: `upload_work`), then, on the same sampled
clips, each source is timed reading from the local work folder and from URL:

* one process: wall-clock clips/s (a bucket read is mostly waiting for the network, which CPU
  time would not show), each clip read and decoded by the source's own `read`, made a tensor
  and collated (`row_pass`, every row's pass);
* a DataLoader with `--workers` workers (persistent, batches of `--batch-size`), wall clock;
* requests and bytes per clip, counted by `vidload._storage` in the one-process pass after a
  warm-up pass (so the per-video opening, a frame table or header once per process, is
  left out: it is paid once per video and worker process, not per clip).

Rows are interleaved (local, bucket, local, ...: `RoundRobin`) and each figure is the best of
`--repeats`.
Where the bucket is and how to reach it is the standard configuration (`AWS_ENDPOINT_URL`,
`AWS_*`, `~/.aws`). `tools/bucket_latency.py` measures every storage through `ClipDataset`
against a real HTTP server (nginx) with a per-request delay instead.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from vidload._bench.config import BenchConfig
from vidload._bench.dataloader import epoch, make_loader
from vidload._bench.workdir import WorkDir, log
from vidload._kinds import formats
from vidload._measure.timing import RoundRobin, row_pass
from vidload._measure.videos import walk_sizes
from vidload._storage import STATS, Location
from vidload._storage.batch import put_many

__all__ = ["measure_bucket", "upload_work"]


def upload_work(work: WorkDir, url: str, notes: list[str]) -> dict[str, dict[str, Any]]:
    """Copy the work folder's conversions of the kinds `--bucket` measures (read by the shared
    JPEG decode, and a bucket can hold them: not `local_only`) under `url/<storage>/` (objects
    already there with the same size are kept: listed with their sizes, one listing per
    folder, `walk_sizes`), each storage's files in one concurrent batch (`put_many`).
    Returns {storage: {"local": its source on the work folder, "bucket": under `url`}},
    said in `notes`."""
    notes.append(f"bucket rows read {Location(url)}/<storage>; local rows the work folder")
    notes.append("clips/s by wall clock (a bucket read waits for the network)")
    pairs: dict[str, dict[str, Any]] = {}
    for kind in (k for k in formats() if k.encoded_reads and not k.local_only):
        local = work.converted[kind.name]
        target = Location(url) / kind.name
        present = walk_sizes(target, keep=lambda _name: True) if target.exists() else {}
        todo = [
            p
            for p in sorted(local.rglob("*"))
            if p.is_file() and present.get(p.relative_to(local).as_posix()) != p.stat().st_size
        ]
        if todo:
            log(f"uploading {len(todo)} files of {kind.name} to {target}")
            put_many([(p, target / p.relative_to(local).as_posix()) for p in todo])
        remote = kind.open(f"{url.rstrip('/')}/{kind.name}")
        pairs[kind.name] = {"local": kind.open(local), "bucket": remote}
    return pairs


def measure_bucket(
    pairs: dict[str, dict[str, Any]], clips: list[tuple[str, np.ndarray]], cfg: BenchConfig
) -> dict[str, Any]:
    """Each storage's pair of sources (`upload_work`'s): {storage: {"local"/"bucket":
    {clips_per_s, dataloader_clips_per_s}, requests_per_clip, bytes_per_clip,
    ratio_one_process, ratio_dataloader}} (see the module docstring)."""
    rows: dict[str, Any] = {}
    for storage, pair in pairs.items():
        rr = RoundRobin(0.0)  # each added pass is its warm-up: counts, frame tables, caches
        for name, src in pair.items():
            rr.add(name, functools.partial(row_pass, src.read, clips, cfg.batch_size))
        before = dict(STATS)
        row_pass(pair["bucket"].read, clips, cfg.batch_size)
        requests = (STATS["requests"] - before["requests"]) / len(clips)
        nbytes = (STATS["bytes"] - before["bytes"]) / len(clips)
        for name, src in pair.items():
            dl = make_loader(src, clips, cfg, pin_memory=False)
            rr.add(f"{name} DataLoader", functools.partial(epoch, dl))
        rr.run(cfg.repeats)
        best = {name: rr.best(name) for name in pair}
        best_dl = {name: rr.best(f"{name} DataLoader") for name in pair}
        del dl, rr  # the DataLoaders' workers end before the next storage's start
        row: dict[str, Any] = {
            name: {
                "clips_per_s": len(clips) / best[name],
                "dataloader_clips_per_s": len(clips) / best_dl[name],
            }
            for name in pair
        }
        row["requests_per_clip"] = requests
        row["bytes_per_clip"] = nbytes
        row["ratio_one_process"] = best["local"] / best["bucket"]
        row["ratio_dataloader"] = best_dl["local"] / best_dl["bucket"]
        rows[storage] = row
        log(
            f"{storage}: bucket/local {row['ratio_one_process']:.2f}x in one process, "
            f"{row['ratio_dataloader']:.2f}x with {cfg.workers} workers"
        )
    return rows
