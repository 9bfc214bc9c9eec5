"""`vidload bench --bucket URL`: the container sources reading from a bucket against local disk.

The work folder's conversions (`jpeg`, `hdf5`, `npy`) are uploaded under URL once (an object
already there with the same size is kept), then, on the same sampled clips, each source is
timed reading from the local work folder and from URL:

* one process: wall-clock clips/s (a bucket read is mostly waiting for the network, which CPU
  time would not show), each clip read and decoded by the source's own `read`;
* a DataLoader with `--workers` workers (persistent, batches of `--batch-size`), wall clock;
* requests and bytes per clip, counted by `vidload._storage` in the one-process pass after a
  warm-up pass (so the per-video opening, a frame table or header once per process, is
  left out: it is paid once per video and worker process, not per clip).

Rows are interleaved (local, bucket, local, ...) and each figure is the best of `--repeats`.
Where the bucket is and how to reach it is the standard configuration (`AWS_ENDPOINT_URL`,
`AWS_*`, `~/.aws`). `tools/bucket_latency.py` measures every storage through `ClipDataset`
against a real HTTP server (nginx) with a per-request delay instead.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from vidload._bench.workdir import WorkDir, log
from vidload._kinds import formats
from vidload._storage import STATS, Location
from vidload.sources._format import StorageFormat

__all__ = ["kinds", "measure_bucket", "upload_work"]


def kinds() -> tuple[StorageFormat, ...]:
    """The kinds `--bucket` measures: those read by the shared JPEG decode that a bucket can
    hold (not `local_only`)."""
    return tuple(k for k in formats() if k.encoded_reads and not k.local_only)


def upload_work(work: WorkDir, url: str) -> None:
    """Copy the work folder's conversions under `url/<storage>/` (objects already there with
    the same size are kept)."""
    for storage in (k.name for k in kinds()):
        local = work.converted[storage]
        target = Location(url) / storage
        present: dict[str, int] = {}
        if target.exists():
            for rel in target.walk_files():
                present[rel] = (target / rel).size()
        todo = [
            p
            for p in sorted(local.rglob("*"))
            if p.is_file() and present.get(p.relative_to(local).as_posix()) != p.stat().st_size
        ]
        if todo:
            log(f"uploading {len(todo)} files of {storage} to {target}")
        for p in todo:
            (target / p.relative_to(local).as_posix()).put_file(p)


def _sources(work: WorkDir, url: str) -> dict[str, tuple[Any, Any]]:
    return {
        k.name: (k.open(work.converted[k.name]), k.open(f"{url.rstrip('/')}/{k.name}"))
        for k in kinds()
    }


def _one_process(source: Any, clips: list[tuple[str, np.ndarray]]) -> float:
    start = time.perf_counter()
    for vid, idx in clips:
        source.read(vid, idx)
    return time.perf_counter() - start


class _Clips:
    """A map-style dataset of fixed clips read by one source (picklable)."""

    def __init__(self, source: Any, clips: list[tuple[str, np.ndarray]]) -> None:
        self.source, self.clips = source, clips

    def __len__(self) -> int:
        return len(self.clips)

    def __getitem__(self, i: int):
        import torch

        vid, idx = self.clips[i]
        return torch.from_numpy(self.source.read(vid, idx))


def _loader(source: Any, clips, workers: int, batch_size: int):
    from torch.utils.data import DataLoader

    return DataLoader(
        _Clips(source, clips),  # type: ignore[arg-type]
        batch_size=batch_size,
        num_workers=workers,
        persistent_workers=workers > 0,
        collate_fn=_stack,
    )


def _stack(items):
    import torch

    return torch.stack(items)


def _epoch(loader) -> float:
    start = time.perf_counter()
    for _ in loader:
        pass
    return time.perf_counter() - start


def measure_bucket(
    work: WorkDir,
    url: str,
    clips: list[tuple[str, np.ndarray]],
    *,
    repeats: int,
    workers: int,
    batch_size: int,
) -> dict[str, Any]:
    """{storage: {"local"/"bucket": {clips_per_s, dataloader_clips_per_s}, requests_per_clip,
    bytes_per_clip, ratio_one_process, ratio_dataloader}} (see the module docstring)."""
    pairs = _sources(work, url)
    rows: dict[str, Any] = {}
    for storage, (local, remote) in pairs.items():
        for src in (local, remote):  # warm up: counts, frame tables, page cache
            _one_process(src, clips)
        before = dict(STATS)
        _one_process(remote, clips)
        requests = (STATS["requests"] - before["requests"]) / len(clips)
        nbytes = (STATS["bytes"] - before["bytes"]) / len(clips)
        best = {"local": np.inf, "bucket": np.inf}
        for _ in range(repeats):
            for name, src in (("local", local), ("bucket", remote)):
                best[name] = min(best[name], _one_process(src, clips))
        loaders = {
            "local": _loader(local, clips, workers, batch_size),
            "bucket": _loader(remote, clips, workers, batch_size),
        }
        for ld in loaders.values():
            _epoch(ld)  # starts the workers, warms their caches
        best_dl = {"local": np.inf, "bucket": np.inf}
        for _ in range(repeats):
            for name, ld in loaders.items():
                best_dl[name] = min(best_dl[name], _epoch(ld))
        del loaders
        row: dict[str, Any] = {
            name: {
                "clips_per_s": len(clips) / best[name],
                "dataloader_clips_per_s": len(clips) / best_dl[name],
            }
            for name in ("local", "bucket")
        }
        row["requests_per_clip"] = requests
        row["bytes_per_clip"] = nbytes
        row["ratio_one_process"] = best["local"] / best["bucket"]
        row["ratio_dataloader"] = best_dl["local"] / best_dl["bucket"]
        rows[storage] = row
        log(
            f"{storage}: bucket/local {row['ratio_one_process']:.2f}x in one process, "
            f"{row['ratio_dataloader']:.2f}x with {workers} workers"
        )
    return rows


def render(rows: dict[str, Any], *, workers: int, markdown: bool) -> str:
    """The bucket table (clips/s, ratios, requests and KiB per clip)."""
    head = [
        "source",
        "local 1p",
        "bucket 1p",
        "ratio",
        f"local {workers}w",
        f"bucket {workers}w",
        "ratio",
        "req/clip",
        "KiB/clip",
    ]
    body = []
    for storage, r in rows.items():
        body.append(
            [
                storage,
                f"{r['local']['clips_per_s']:.1f}",
                f"{r['bucket']['clips_per_s']:.1f}",
                f"{r['ratio_one_process']:.2f}",
                f"{r['local']['dataloader_clips_per_s']:.1f}",
                f"{r['bucket']['dataloader_clips_per_s']:.1f}",
                f"{r['ratio_dataloader']:.2f}",
                f"{r['requests_per_clip']:.1f}",
                f"{r['bytes_per_clip'] / 1024:.0f}",
            ]
        )
    widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---:" for _ in head) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in body]
        return "\n".join(lines)
    fmt = "  ".join(f"{{:>{w}}}" for w in widths)
    return "\n".join(fmt.format(*row) for row in [head, *body])


def bucket_path_note(url: str) -> str:
    return f"bucket rows read {Location(url)}/<storage>; local rows the work folder"
