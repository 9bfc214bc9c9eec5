"""What a large video list costs a `ClipDataset`: build time, workers' memory, pickle size.

    python tools/entries_memory.py [--videos 650000] [--classes 700] [--workers 0 2 4]
                                   [--batch-size 512] [--rounds 3] [--forms tuples list manifest]
                                   [--spawn] [--no-epoch]

Generates a Kinetics-shaped list of `--videos` entries in `--classes` classes with realistic ids
(`<class name>/<youtube id>_<start:06d>_<end:06d>.mp4`, class names of 2-3 words joined by `_`,
11-character YouTube ids), then prints:

- build time: `ClipDataset(videos, source)` from `(video_id, label)` tuples, from an mmaction2
  list file (`path label` lines) and from a manifest CSV (`--forms`), best of `--rounds`,
  interleaved: CPU time of this process (`time.process_time`, which leaves out the waits for a
  CPU that other processes hold) and wall clock (disturbed by the machine's load, so the load
  average is printed);
- each worker's unique memory (psutil USS: pages no other process maps, i.e. what the worker
  copied on write or allocated itself) after its first batch (measured inside the worker, in the
  collate function) and after a full shuffled epoch (measured from the main process while the
  persistent workers wait), for each `--workers` count, batch `--batch-size`, fork. Each
  count runs in a process forked for it from the one that built the dataset, so one count's
  leftovers in the heap do not show in the next one's workers. With 0 workers the USS of that
  loading process before and after the epoch (it starts near 0: everything is shared with its
  parent). USS is not disturbed by load;
- the pickled dataset: `pickle.dumps` and `ForkingPickler.dumps` with torch's reductions (what a
  `spawn`-context DataLoader worker receives), size and CPU time;
- with `--spawn`: the time a `multiprocessing_context="spawn"` loader with 2 workers takes to
  yield its first batch (wall clock; includes starting two interpreters and importing torch).

The source is a fake that reports 300 frames per video and returns zeros (8x8 pixels), so only
the dataset's own cost shows. The input list is deleted before the workers start, so its objects
are not counted in a worker.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import pickle
import sys
import tempfile
import time
from multiprocessing.reduction import ForkingPickler
from pathlib import Path

import numpy as np
import psutil
import torch
import torch.multiprocessing  # noqa: F401  (registers torch's reductions with ForkingPickler)
from torch.utils.data import default_collate, get_worker_info

from vidload import ClipDataset, make_loader

MIB = 2**20
WORDS = (
    "playing riding making eating cleaning throwing catching washing cutting folding "
    "guitar bass drums violin horse bike skateboard snow water ice cake salad window floor "
    "tennis golf ball dog cat hair nails shoes paper rope wall car boat baby tree fire "
    "dancing jumping climbing swimming juggling knitting shaving tying brushing pushing"
).split()


class ZeroSource:
    """Every video has 300 frames (reported and actual); a read returns zeros, 8x8 pixels."""

    def reported_frames(self, video_id: str) -> int:
        return 300

    def actual_frames(self, video_id: str) -> int:
        return 300

    def read(self, video_id: str, indices) -> np.ndarray:
        return np.zeros((len(indices), 8, 8, 3), np.uint8)


def class_names(n: int, rng: np.random.Generator) -> list[str]:
    names: set[str] = set()
    while len(names) < n:
        k = int(rng.integers(2, 4))
        names.add("_".join(rng.choice(WORDS, k, replace=False)))
    return sorted(names)


def kinetics_like(n: int, classes: int, seed: int = 0) -> list[tuple[str, int]]:
    """`n` (video_id, label) pairs: `<class>/<youtube id>_<start:06d>_<end:06d>.mp4`."""
    rng = np.random.default_rng(seed)
    names = class_names(classes, rng)
    alphabet = np.array(list("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"))
    yt = alphabet[rng.integers(0, 64, (n, 11))]
    labels = rng.integers(0, classes, n)
    starts = rng.integers(0, 290, n)
    return [
        (f"{names[k]}/{''.join(y)}_{s:06d}_{s + 10:06d}.mp4", int(k))
        for y, k, s in zip(yt, labels.tolist(), starts.tolist(), strict=True)
    ]


def write_inputs(videos: list[tuple[str, int]], folder: Path) -> dict[str, Path]:
    """The list as an mmaction2 list file and as a manifest CSV (written directly)."""
    listing = folder / "train.txt"
    listing.write_text("".join(f"{vid} {label}\n" for vid, label in videos), encoding="utf-8")
    manifest = folder / "manifest.csv"
    header = "video_id,label,reported_frames,actual_frames,width,height,fps,bytes,status,error"
    rows = "".join(f"{vid},{label},300,300,340,256,25.0,1000000,ok,\n" for vid, label in videos)
    manifest.write_text(header + ",rotation\n" + rows.replace(",\n", ",,\n"), encoding="utf-8")
    return {"list": listing, "manifest": manifest}


def uss() -> int:
    return psutil.Process().memory_full_info().uss


class FirstBatchUss:
    """Collate function: the default collate, plus (worker id, USS after this worker's first
    batch, else -1) as a last element."""

    def __init__(self) -> None:
        self.seen = False

    def __call__(self, items):
        batch = default_collate(items)
        info = get_worker_info()
        wid = -1 if info is None else info.id
        first = -1
        if not self.seen:
            self.seen = True
            first = uss()
        return [*batch, torch.tensor([wid, first])]


def epoch_memory(ds: ClipDataset, workers: int, batch: int) -> list[tuple[float, float]]:
    """[(USS after first batch, after the epoch) MiB] per worker; with 0 workers [(USS of the
    loading process before, after the epoch)]. Run in a process forked for it
    (`in_fresh_process`), so that what one configuration leaves in the heap (free blocks a
    later fork's workers would reuse, copying their pages) does not count in the next."""
    loader = make_loader(
        ds, batch, num_workers=workers, read_ahead=False, collate_fn=FirstBatchUss()
    )
    loader.sampler.set_epoch(0)
    before = uss()
    first: dict[int, int] = {}
    it = iter(loader)
    for *_, info in it:
        wid, value = info.tolist()
        if value >= 0:
            first[wid] = value
    if workers == 0:
        return [(before / MIB, uss() / MIB)]
    procs = [psutil.Process(w.pid) for w in it._workers]  # type: ignore[attr-defined]
    after = [p.memory_full_info().uss for p in procs]
    del it
    return [(first[w] / MIB, after[w] / MIB) for w in range(workers)]


def _run(queue, fn, args) -> None:
    queue.put(fn(*args))


def in_fresh_process(fn, *args):
    """`fn(*args)` in a child forked from this process (which shares the dataset's pages)."""
    ctx = multiprocessing.get_context("fork")
    queue = ctx.SimpleQueue()
    child = ctx.Process(target=_run, args=(queue, fn, args))
    child.start()
    result = queue.get()
    child.join()
    return result


def spawn_first_batch(ds: ClipDataset, batch: int) -> float:
    loader = make_loader(
        ds, batch, num_workers=2, read_ahead=False, multiprocessing_context="spawn"
    )
    t = time.perf_counter()
    it = iter(loader)
    next(it)
    elapsed = time.perf_counter() - t
    del it
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--videos", type=int, default=650_000)
    parser.add_argument("--classes", type=int, default=700)
    parser.add_argument("--workers", type=int, nargs="*", default=[0, 2, 4])
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--forms",
        nargs="*",
        default=["tuples", "list", "manifest"],
        choices=["tuples", "list", "manifest"],
    )
    parser.add_argument("--spawn", action="store_true")
    parser.add_argument("--no-epoch", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)

    t = time.perf_counter()
    videos = kinetics_like(args.videos, args.classes)
    print(
        f"{args.videos} videos in {args.classes} classes, e.g. {videos[0][0]!r} "
        f"(generated in {time.perf_counter() - t:.1f} s); load {os.getloadavg()[0]:.1f}"
    )
    src = ZeroSource()
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_inputs(videos, Path(tmp)) if set(args.forms) - {"tuples"} else {}
        best: dict[str, tuple[float, float]] = {}
        for _ in range(args.rounds):
            for form in args.forms:
                given = videos if form == "tuples" else paths[form]
                gc.collect()
                wall, cpu = time.perf_counter(), time.process_time()
                ds = ClipDataset(given, src, num_frames=8, seed=0)
                took = time.perf_counter() - wall, time.process_time() - cpu
                best[form] = min(best.get(form, took), took, key=lambda t: t[1])
                del ds
    print(f"\nbuild (best of {args.rounds} by CPU time; load {os.getloadavg()[0]:.1f})")
    for form, (wall, cpu) in best.items():
        print(f"  ClipDataset from {form:<9} {cpu:6.2f} s CPU  {wall:6.2f} s wall clock")

    ds = ClipDataset(videos, src, num_frames=8, seed=0)
    del videos
    gc.collect()

    print("\npickled dataset")
    for name, dumps in (
        ("pickle.dumps", lambda o: pickle.dumps(o, protocol=pickle.HIGHEST_PROTOCOL)),
        ("ForkingPickler.dumps", lambda o: bytes(ForkingPickler.dumps(o))),
    ):
        cpu = time.process_time()
        data = dumps(ds)
        dt = time.process_time() - cpu
        line = f"  {name:<22} {len(data) / MIB:8.1f} MiB  dumps {dt:.2f} s CPU"
        if name == "pickle.dumps":
            cpu = time.process_time()
            pickle.loads(data)
            line += f", loads {time.process_time() - cpu:.2f} s CPU"
        print(line)
        del data

    if args.spawn:
        print(
            f"\nspawn, 2 workers: first batch after {spawn_first_batch(ds, args.batch_size):.1f} s"
            f" (wall clock, load {os.getloadavg()[0]:.1f})"
        )

    if not args.no_epoch:
        print(f"\nunique memory (USS, MiB), shuffled epoch, batch {args.batch_size}, fork")
        for workers in args.workers:
            t = time.perf_counter()
            rows = in_fresh_process(epoch_memory, ds, workers, args.batch_size)
            dt = time.perf_counter() - t
            if workers == 0:
                ((b, a),) = rows
                print(
                    f"  0 workers: the loading process {b:.1f} before the epoch, {a:.1f} "
                    f"after ({dt:.0f} s)"
                )
            else:
                cells = ", ".join(f"{f:.1f} -> {a:.1f}" for f, a in rows)
                print(
                    f"  {workers} workers: after first batch -> after the epoch: {cells} "
                    f"({dt:.0f} s)"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
