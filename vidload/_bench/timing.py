"""The measurements. Every timing runs over the same list of clips `(video_id, indices)`.

Timer discipline: each measurement is calibrated once (an untimed warm-up pass gives its
duration, and a timed unit repeats the pass until it lasts at least `min_time`), then the
repeats are interleaved round-robin over all loaders, so slow drift and noise from other
processes hit every loader alike. The benchmark reports the best (fastest) repeat.
"""

from __future__ import annotations

import gc
import math
import os
import pickle
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, default_collate

Clip = tuple[str, np.ndarray]


def collate_clips(batch: Sequence[tuple[torch.Tensor, int]]):
    """The DataLoader's default collate (uint8 (B, T, C, H, W) clips, int64 (B,) labels) when
    every clip has one shape; clips of different sizes (user videos) stay a list."""
    if len({tuple(clip.shape) for clip, _ in batch}) == 1:
        return default_collate(batch)
    return [clip for clip, _ in batch], torch.tensor([label for _, label in batch])


def build_batch(read: Callable[[str, np.ndarray], np.ndarray], clips: Sequence[Clip]):
    """What a training step receives: each clip read, made a uint8 (T, C, H, W) tensor, and
    collated as the DataLoader does (`collate_clips`)."""
    return collate_clips(
        [(torch.from_numpy(read(v, idx)).permute(0, 3, 1, 2), 0) for v, idx in clips]
    )


def one_pass(read, clips: Sequence[Clip], batch_size: int) -> None:
    """Read every clip, in batches of `batch_size`, as one process training would."""
    for start in range(0, len(clips), batch_size):
        build_batch(read, clips[start : start + batch_size])


def calibrate(seconds_per_pass: float, min_time: float, max_passes: int = 50) -> int:
    """Passes per timed unit so one unit lasts at least `min_time` seconds."""
    if seconds_per_pass <= 0:
        return max_passes
    return max(1, min(max_passes, math.ceil(min_time / seconds_per_pass)))


def timed(fn: Callable[[], object], passes: int = 1) -> float:
    """Seconds per call of `fn`, averaged over `passes` back-to-back calls."""
    gc.collect()
    start = time.perf_counter()
    for _ in range(passes):
        fn()
    return (time.perf_counter() - start) / passes


class RoundRobin:
    """Named measurements, calibrated once and then repeated in interleaved rounds."""

    def __init__(self, min_time: float) -> None:
        self.min_time = min_time
        self.tasks: list[tuple[str, Callable[[], object], int]] = []
        self.times: dict[str, list[float]] = {}

    def add(self, name: str, fn: Callable[[], object]) -> float:
        """Run `fn` once untimed-for-results (warm-up), calibrate, and schedule it."""
        warm = timed(fn)
        self.tasks.append((name, fn, calibrate(warm, self.min_time)))
        self.times[name] = []
        return warm

    def run(self, repeats: int, on_round: Callable[[int], None] | None = None) -> None:
        for r in range(repeats):
            for name, fn, passes in self.tasks:
                self.times[name].append(timed(fn, passes))
            if on_round is not None:
                on_round(r)

    def best(self, name: str) -> float:
        return min(self.times[name])


# --------------------------------------------------------------------------- DataLoader


class ClipList(Dataset):
    """Map-style dataset over a fixed clip list: item i is clip i read from `source`, as a
    uint8 (T, C, H, W) tensor, with its label. Picklable when `source` is."""

    def __init__(self, source, clips: Sequence[Clip], labels: Sequence[int]) -> None:
        self.source = source
        self.clips = list(clips)
        self.labels = list(labels)

    def __len__(self) -> int:
        return len(self.clips)

    def __getitem__(self, i: int):
        vid, idx = self.clips[i]
        return torch.from_numpy(self.source.read(vid, idx)).permute(0, 3, 1, 2), self.labels[i]


def fresh_copy(source):
    """A copy of `source` without its per-process state (open handles, caches)."""
    return pickle.loads(pickle.dumps(source))


def make_loader(source, clips, labels, *, batch_size: int, workers: int, pin_memory: bool):
    """The seed scenario's DataLoader: persistent workers, in-order batches."""
    return DataLoader(
        ClipList(fresh_copy(source), clips, labels),
        batch_size=batch_size,
        shuffle=False,
        num_workers=workers,
        pin_memory=pin_memory,
        persistent_workers=workers > 0,
        collate_fn=collate_clips,
    )


def epoch(loader: DataLoader) -> None:
    for _batch in loader:
        pass


# --------------------------------------------------------------------------- page cache


def drop_from_page_cache(paths: Sequence[Path]) -> None:
    """Ask the kernel to evict `paths` from the page cache (no root needed).

    Dirty pages cannot be evicted, so each file is fsynced first. Pages still mapped by a
    process (an open np.memmap) stay; callers drop their sources before calling this.
    """
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def filesystem_of(path: Path) -> str:
    """Type of the filesystem holding `path` (from /proc/mounts), or "unknown"."""
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return "unknown"
    target, best = str(path.resolve()), ("", "unknown")
    for line in mounts:
        parts = line.split()
        if len(parts) < 3:
            continue
        mount = parts[1].replace("\\040", " ")
        inside = target == mount or target.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best[0]):
            best = (mount, parts[2])
    return best[1]


# --------------------------------------------------------------------------- other load


def _ticks() -> float:
    return float(os.sysconf("SC_CLK_TCK"))


def _system_busy_s() -> float:
    """CPU seconds all processes have used since boot (Linux /proc/stat)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq = (int(v) for v in fields[:7])
    return (user + nice + system + irq + softirq) / _ticks()


def _own_cpu_s() -> float:
    """CPU seconds used by this process and its live children (DataLoader workers)."""
    me = os.getpid()
    total = 0.0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()  # after "pid (comm)"
        pid, ppid = int(entry.name), int(fields[1])
        if pid == me or ppid == me:
            total += (int(fields[11]) + int(fields[12])) / _ticks()
    return total


class OtherLoad:
    """How many CPUs other processes kept busy while a phase ran (None where /proc is missing).

    Use as a context manager; `cpus` is then the average number of CPUs used by everything
    but this process and its children.
    """

    def __init__(self) -> None:
        self.cpus: float | None = None

    def __enter__(self) -> OtherLoad:
        try:
            self._start = (time.perf_counter(), _system_busy_s(), _own_cpu_s())
        except (OSError, ValueError, IndexError):
            self._start = None
        return self

    def __exit__(self, *exc: object) -> None:
        if self._start is None or exc[0] is not None:
            return
        try:
            wall, busy, own = time.perf_counter(), _system_busy_s(), _own_cpu_s()
        except (OSError, ValueError, IndexError):
            return
        t0, busy0, own0 = self._start
        if wall > t0:
            self.cpus = max(0.0, ((busy - busy0) - (own - own0)) / (wall - t0))
