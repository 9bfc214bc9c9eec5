"""The measurements. Every timing runs over the same list of clips `(video_id, indices)`.

Timer discipline: each measurement is calibrated once (an untimed warm-up pass gives its
duration, and a timed unit repeats the pass until it lasts at least `min_time`), then the
repeats are interleaved round-robin over all loaders, so slow drift and noise from other
processes hit every loader alike. The benchmark reports the best (fastest) repeat; where a pass
is long enough for the machine's speed to drift within it, it times each part (a batch of a
row) as a task of its own and adds up each part's best (`vidload._bench.measure`).

The parts of one row (its whole read, the raw read of the bytes, the decode of those bytes) are
timed in the same pass, clip by clip (`row_pass`), never in passes of their own. And they are
timed with `OwnClock`: wall-clock time less what this thread spent waiting for a CPU that
another process held. On a shared machine a burst of other load lasting a second or two
otherwise lands on one part and not the others: with each part in a pass of its own, one repeat
and about one of two CPUs busy elsewhere, the decode of the real clips once came out at 3.4x the
whole read it is part of.

The clocks themselves (`OwnClock`, and `OtherLoad`: how busy other processes kept the CPUs)
are in `vidload._measure.clocks`. `vidload bench` and `vidload choose` both time with these;
they live here, under neither, so neither command is built on the other's internals.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import default_collate

from vidload._measure.clips import Clip, storage_kind
from vidload._measure.clocks import OtherLoad

Reader = Callable[[str, np.ndarray], np.ndarray]  # read(video_id, indices) -> uint8 (k, H, W, 3)


def collate_clips(batch: Sequence[tuple[torch.Tensor, int]]):
    """The DataLoader's default collate (uint8 (B, T, C, H, W) clips, int64 (B,) labels) when
    every clip has one shape; clips of different sizes (user videos) stay a list."""
    if len({tuple(clip.shape) for clip, _ in batch}) == 1:
        return default_collate(list(batch))
    return [clip for clip, _ in batch], torch.tensor([label for _, label in batch])


Parts = dict[str, float]


@dataclass
class Log:
    """Progress lines on stderr (where `enabled`), each with the seconds since it was made."""

    command: str
    enabled: bool = True
    start: float = field(default_factory=time.perf_counter)

    def __call__(self, message: str) -> None:
        if self.enabled:
            elapsed = time.perf_counter() - self.start
            print(f"[{self.command} {elapsed:6.1f}s] {message}", file=sys.stderr, flush=True)


def row_pass(
    read: Callable[[str, np.ndarray], np.ndarray],
    clips: Sequence[Clip],
    batch_size: int,
    raw: Callable[[str, np.ndarray], Any] | None = None,
    decode: Callable[[Any], object] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> Parts:
    """One pass over `clips` as one process training reads them: each clip read, made a uint8
    (T, C, H, W) tensor, and collated in batches of `batch_size` as the DataLoader does
    (`collate_clips`), with the time split between its parts.

    Each clip is read whole (`read`, made a tensor) and then, where the row has them, read raw
    (`raw(video_id, indices)`) and the bytes just read decoded (`decode(payload)`), so the three
    parts of a clip are timed milliseconds apart. Returns `clock` seconds: "total" (the whole
    reads plus the collate of each batch), "read" and "decode" (0.0 where the row has no such
    part).
    """
    total = read_s = decode_s = 0.0
    for start in range(0, len(clips), batch_size):
        batch = []
        for video_id, indices in clips[start : start + batch_size]:
            t0 = clock()
            batch.append((torch.from_numpy(read(video_id, indices)).permute(0, 3, 1, 2), 0))
            t1 = clock()
            total += t1 - t0
            if raw is None:
                continue
            payload = raw(video_id, indices)
            t2 = clock()
            read_s += t2 - t1
            if decode is not None:
                decode(payload)
                decode_s += clock() - t2
        t0 = clock()
        collate_clips(batch)
        total += clock() - t0
    return {"total": total, "read": read_s, "decode": decode_s}


_settled = 0  # depth of `measuring()`: inside it, what survives a collection stays frozen


@contextlib.contextmanager
def measuring() -> Iterator[None]:
    """A measuring run: torch on one thread, as in a DataLoader worker (torch's intra-op
    threads would fight other processes for the cores and skew CPU time), on a settled heap.

    Settled: each timing's garbage collection (`collect_garbage`) walks only the objects made
    since the last one. Every timing first collects garbage, so that no row pays for a
    collection of another's leftovers; a full collection walks the whole heap (about 0.2 s with
    torch imported), and a bench run times about a hundred units. So what survives a collection
    is frozen (`gc.freeze`: kept out of later collections) until the run ends, when it is
    unfrozen and collectable again."""
    global _settled
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    _settled += 1
    try:
        yield
    finally:
        _settled -= 1
        if not _settled:
            gc.unfreeze()
        torch.set_num_threads(threads)


def collect_garbage() -> None:
    """Collect garbage before a timing (inside `measuring()`: only objects made since)."""
    gc.collect()
    if _settled:
        gc.freeze()


def timed(
    fn: Callable[[], object], passes: int = 1, clock: Callable[[], float] = time.perf_counter
) -> Parts:
    """Seconds per call of `passes` back-to-back calls of `fn`, garbage collected first:
    "wall" (wall-clock) and "total" (measured with `clock`); a `fn` that returns a dict of
    seconds (`row_pass`, which must then use the same clock) adds that dict's averages."""
    collect_garbage()
    sums: Parts = {}
    wall, own = time.perf_counter(), clock()
    for _ in range(passes):
        parts = fn()
        if isinstance(parts, dict):
            for key, value in parts.items():
                sums[key] = sums.get(key, 0.0) + value
    own = clock() - own
    wall = time.perf_counter() - wall
    sums.setdefault("total", own)
    sums["wall"] = wall
    return {key: value / passes for key, value in sums.items()}


class RoundRobin:
    """Named measurements, calibrated once and then repeated in interleaved rounds.

    Each round of a task is recorded as a dict of seconds per pass: "wall" (wall-clock), and
    "total" measured with `clock` (the same unless a clock such as `OwnClock` is given); a
    `fn` that returns a dict of seconds (`row_pass`, which must then use the same clock) is
    recorded as that dict plus "wall".
    """

    def __init__(self, min_time: float, clock: Callable[[], float] = time.perf_counter) -> None:
        self.min_time = min_time
        self.clock = clock
        self.tasks: list[tuple[str, Callable[[], object], int]] = []
        self.rounds: dict[str, list[Parts]] = {}

    def add(self, name: str, fn: Callable[[], object], passes: int | None = None) -> Parts:
        """Run `fn` once (warm-up: files opened, indexes built, caches filled), calibrate (or
        take `passes` per timed unit), and schedule it. Returns the warm-up's parts."""
        parts = timed(fn, 1, self.clock)
        if passes is None:  # passes per timed unit, so that one lasts at least `min_time` s
            passes = math.ceil(self.min_time / parts["wall"]) if parts["wall"] > 0 else 50
        self.tasks.append((name, fn, max(1, min(50, passes))))
        self.rounds[name] = []
        return parts

    def run(self, repeats: int, on_round: Callable[[int], None] | None = None) -> float | None:
        """Time every task `repeats` times, round-robin (every other round in reverse order: each
        task runs as often before as after any other). Returns how many CPUs other processes
        kept busy meanwhile (`OtherLoad`: None where /proc lacks it)."""
        with OtherLoad() as other:
            for r in range(repeats):  # in turn forwards and backwards: no task always last
                for name, fn, passes in self.tasks[:: 1 if r % 2 == 0 else -1]:
                    self.rounds[name].append(timed(fn, passes, self.clock))
                if on_round is not None:
                    on_round(r)
        return other.cpus

    @property
    def times(self) -> dict[str, list[float]]:
        """Seconds per pass ("total") of each round, by task."""
        return {name: [p["total"] for p in rounds] for name, rounds in self.rounds.items()}

    def best(self, name: str) -> float:
        return self.best_round(name)["total"]

    def best_round(self, name: str) -> Parts:
        """The parts of the fastest round of `name` (all measured in the same pass)."""
        return min(self.rounds[name], key=lambda p: p["total"])


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


def cold_and_warm(
    rows: Mapping[str, tuple[Callable[[], Reader], str, Path]],
    video_ids: Sequence[str],
    clips: Sequence[Clip],
    batch_size: int,
    repeats: int,
) -> dict[str, dict[str, Any]]:
    """Wall-clock seconds of a first pass over `clips` with cold files, and of the pass right
    after it (warm), per row, in `repeats` rounds interleaved over the rows.

    `rows` maps a name to `(make, storage, root)`: before each cold pass the row's reader is
    made afresh (`make()` returns `read(video_id, indices)`; a new source, so the first-epoch
    setup counts in the cold pass) and the files that hold `video_ids` in `storage` under
    `root` are evicted (the kind's `StorageFormat.files`, `drop_from_page_cache`). Wall-clock time,
    since waiting for the disk is what a cold read costs. Returns {name: {"cold": [...],
    "warm": [...], "cold_s", "warm_s": the best of each, "ratio": cold_s / warm_s}}.
    """
    times: dict[str, dict[str, Any]] = {name: {"cold": [], "warm": []} for name in rows}
    files = {
        name: [p for v in video_ids for p in storage_kind(storage).files(root, v)]
        for name, (_make, storage, root) in rows.items()
    }
    for _ in range(repeats):
        for name, (make, _storage, _root) in rows.items():
            read_pass = functools.partial(row_pass, make(), clips, batch_size)
            drop_from_page_cache(files[name])
            times[name]["cold"].append(timed(read_pass)["wall"])
            times[name]["warm"].append(timed(read_pass)["wall"])
            del read_pass  # its open files and maps go before the next row's eviction
    for t in times.values():
        t.update(cold_s=min(t["cold"]), warm_s=min(t["warm"]))
        t["ratio"] = t["cold_s"] / t["warm_s"]
    return times


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
