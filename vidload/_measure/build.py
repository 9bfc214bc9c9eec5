"""One storage built from the user's videos, as `vidload bench` and `vidload choose` both
build theirs: vidload's own `convert` into a fresh folder, its CPU cost timed."""

from __future__ import annotations

import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class BuildJob:
    """Convert the videos in `videos` into `out` (picklable: a pool job).

    Attributes:
        name: what is built, as the caller names it (carried to its `Built`).
        options: `vidload.convert.convert`'s keywords for it: `to` and the kind's options
            (`quality`, `gop`, ...), `short_side`.
        workers: convert's processes (1: this process only, so its CPU time is the cost).
    """

    name: str
    videos: Path
    out: Path
    options: Mapping[str, Any]
    workers: int | None = 1
    progress: bool = False


@dataclass(frozen=True)
class Built:
    """What building one storage gave: the CPU seconds of the whole conversion (this process,
    all its threads: decode, resize, encode, write) and the videos converted (those that
    failed: `conversion_failures`)."""

    name: str
    out: Path
    cpu_s: float
    converted: tuple[str, ...]


def build_storage(job: BuildJob) -> Built:
    """Convert the videos into `job.out`, emptied first (no stale container may linger),
    timing its CPU.

    With `workers=1`, one conversion per process, `time.process_time` is exactly its cost;
    `vidload choose` runs several of these jobs side by side (`vidload._parallel.run_parallel`)."""
    from vidload.convert import convert

    if job.out.exists():
        shutil.rmtree(job.out)
    start = time.process_time()
    report = convert(
        job.videos,
        job.out,
        workers=job.workers,
        overwrite=True,
        progress=job.progress,
        **job.options,
    )
    cpu = time.process_time() - start
    return Built(job.name, job.out, cpu, tuple(report.converted))


def conversion_failures(built: Mapping[str, Path]) -> dict[str, str]:
    """Video id -> why, for the videos some storage of `built` ({name: its folder}, made now or
    by an earlier run) could not store, as its manifest says (the first storage named)."""
    from vidload._layout import MANIFEST_NAME
    from vidload.manifest import read_manifest

    failed: dict[str, str] = {}
    for name, out in built.items():
        for row in read_manifest(out / MANIFEST_NAME):
            if row.status == "failed":
                failed.setdefault(row.video_id, f"cannot be converted to {name}: {row.error}")
    return failed
