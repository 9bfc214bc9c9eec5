"""The timings of a benchmark run: every row in one process (whole reads split into raw read
and decode), through DataLoaders, cold against warm epochs; the check that rows agree on pixels;
and the notes that say what disturbed a measurement.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import numpy as np
import torch

from vidload._bench.config import VIDEO_ROW, container_rows, source_names
from vidload._bench.dataloader import epoch, make_loader
from vidload._bench.loaders import Loader, MemoryJpeg
from vidload._bench.workdir import WorkDir, log
from vidload._cv2 import cv2
from vidload._measure.clips import ORIGINAL, stored_bytes
from vidload._measure.clocks import OtherLoad, OwnClock
from vidload._measure.timing import Parts, RoundRobin, cold_and_warm, filesystem_of, row_pass
from vidload.sources.jpeg_decode import decode_jpeg

__all__ = [
    "add_disk_and_ratios",
    "check_outputs",
    "measure_cold",
    "measure_dataloader",
    "measure_one_process",
    "note_other_load",
]

_VIDEO_ROWS = (VIDEO_ROW, "torchcodec", "decord")


def check_outputs(readers: dict[str, Any], clips, notes: list[str]) -> dict[str, str]:
    """Compare, across rows, the first clip of every video: JPEG rows against `memory`, video
    rows against `pyav-from-start`. Returns a short verdict per row ("identical", else about
    the first clip that differs)."""
    firsts: dict[str, np.ndarray] = {}
    for vid, idx in clips:
        firsts.setdefault(vid, idx)
    verdict: dict[str, str] = {}
    for vid, idx in firsts.items():
        outs = {name: r.read(vid, idx) for name, r in readers.items()}
        for name, out in outs.items():
            if (
                out.dtype != np.uint8
                or out.ndim != 4
                or out.shape[0] != len(idx)
                or out.shape[3] != 3
            ):
                raise RuntimeError(
                    f"{name} returned {out.dtype} {out.shape} for {vid}, not uint8 (k, H, W, 3)"
                )
            ref = "memory" if name in (*container_rows(), "pil") else None  # JPEG rows
            if name in _VIDEO_ROWS:
                ref = "pyav-from-start"
            if ref is None or ref not in outs or verdict.get(name, "identical") != "identical":
                continue
            other = outs[ref]
            if other.shape != out.shape:
                verdict[name] = f"{vid}: shape {out.shape} vs {ref} {other.shape}"
            else:
                diff = int(np.abs(out.astype(np.int16) - other.astype(np.int16)).max())
                verdict[name] = "identical" if diff == 0 else f"{vid}: max |diff| {diff} vs {ref}"
    for name, v in verdict.items():
        if name in source_names() and v != "identical":
            notes.append(f"{name}: pixels differ from its reference ({v})")
    return verdict


def _reduced_decode_tasks(memory: MemoryJpeg, rr: RoundRobin) -> dict[str, Any]:
    bufs = memory.buffers()
    h, w = decode_jpeg(bufs[0]).shape[:2]
    half = (h // 2, w // 2)

    def full_resize() -> None:
        for b in bufs:
            cv2.resize(decode_jpeg(b), (half[1], half[0]), interpolation=cv2.INTER_AREA)

    def dct() -> None:
        for b in bufs:
            decode_jpeg(b, size=half)

    rr.add("reduced/full+resize", full_resize)
    rr.add("reduced/dct", dct)
    return {"size": list(half), "frames": len(bufs)}


def measure_one_process(
    loaders, readers, memory, clips, cfg, notes, checks
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every row's whole reads, with the raw reads and decodes of the same clips timed in the
    same pass (`row_pass`), and the reduced-size decode, in interleaved rounds: (one result
    row per loader, the reduced-size decode result).

    The rows take turns batch by batch, not pass by pass: on a shared machine the speed of a
    CPU drifts within a pass of a row (passes of one round here have differed by half), so a
    row's figure is the sum over batches of each batch's fastest round, every row timed on a
    batch moments after the others."""
    batches = [clips[i : i + cfg.batch_size] for i in range(0, len(clips), cfg.batch_size)]
    with OwnClock() as clock:
        rr = RoundRobin(cfg.min_time, clock)
        log(f"warming up and calibrating {len(loaders)} rows")
        bytes_read: dict[str, float] = {}
        for b, batch in enumerate(batches):
            for ld in loaders:
                args = (readers[ld.name].read, batch, cfg.batch_size, ld.raw, ld.decode, clock)
                rr.add(f"row/{ld.name}/{b}", functools.partial(row_pass, *args), passes=1)
        for ld in loaders:
            if ld.raw is not None and ld.storage != "memory":
                bytes_read[ld.name] = float(np.mean([ld.raw(v, i).nbytes_read for v, i in clips]))
        reduced_tasks = _reduced_decode_tasks(memory, rr)
        log(f"timing one process: {cfg.repeats} interleaved repeats")
        other_load = rr.run(cfg.repeats, lambda r: log(f"  repeat {r + 1}/{cfg.repeats} done"))
        own_clock = clock.available
    _note_own_clock(notes, own_clock, rr)
    clock_kind = "own" if own_clock else "wall"
    note_other_load(notes, "the one-process timing", other_load, own_clock=own_clock)

    results: dict[str, Any] = {}
    clamped: list[str] = []
    n = len(clips)
    for ld in loaders:
        rounds, best = _row_rounds(rr, ld.name, len(batches))
        total = best["total"]
        # the parts of its reads the row timed besides the whole: none, the raw read, or both
        split = [] if ld.raw is None else ["read"] if ld.decode is None else ["read", "decode"]
        row: dict[str, Any] = {
            "kind": "source" if ld.name in source_names() else "reference",
            "storage": ld.storage,
            "description": ld.description,
            "check": checks.get(ld.name),
            "clock": clock_kind,
            "clips_per_s": n / total,
            "frames_per_s": n * cfg.frames / total,
            "times_s": {part: [p[part] for p in rounds] for part in ("total", "wall", *split)},
        }
        if ld.raw is not None:
            ms = {part: 1000 * best[part] / n for part in ("total", *split)}
            rest = ms["total"] - ms["read"] - ms["decode"] if "decode" in ms else None
            row["split_ms_per_clip"] = {**ms, "decode": ms.get("decode"), "rest": rest}
            if ld.name in bytes_read:
                row["bytes_read_per_clip"] = bytes_read[ld.name]
            if rest is not None and rest < 0:  # parts timed apart: noise, not a negative cost
                row["split_ms_per_clip"].update(rest=0.0, rest_measured=rest)
                clamped.append(ld.name)
                # by more than 10%: the same pass timed them, so its timing was disturbed
                if 0 < ms["total"] < -10 * rest:
                    notes.append(
                        f"warning: {ld.name}: read + decode exceed the whole read by "
                        f"{-rest / ms['total']:.0%} ({ms['total'] - rest:.2f} vs "
                        f"{ms['total']:.2f} ms/clip); its split was disturbed (other load?): "
                        "rerun with more --repeats"
                    )
        results[ld.name] = row
    if clamped:
        notes.append(
            f"rest shown as 0 for {', '.join(clamped)}: read + decode came out larger than the "
            "whole read (timing noise); the measured value is in the JSON (rest_measured)"
        )
    full, dct = rr.best("reduced/full+resize"), rr.best("reduced/dct")
    reduced = {
        **reduced_tasks,
        "full_resize_frames_per_s": reduced_tasks["frames"] / full,
        "dct_frames_per_s": reduced_tasks["frames"] / dct,
        "speedup": full / dct,
        "times_s": {"full+resize": rr.times["reduced/full+resize"], "dct": rr.times["reduced/dct"]},
    }
    return results, reduced


def _row_rounds(rr: RoundRobin, name: str, batches: int) -> tuple[list[Parts], Parts]:
    """(each round's parts of row `name`, summed over its batches; the parts of each batch's
    fastest round, summed: the row's figure)."""
    per = [rr.rounds[f"row/{name}/{b}"] for b in range(batches)]
    rounds = [{k: sum(p[r][k] for p in per) for k in per[0][r]} for r in range(len(per[0]))]
    fastest = [min(p, key=lambda parts: parts["total"]) for p in per]
    return rounds, {k: sum(f[k] for f in fastest) for k in fastest[0]}


def _note_own_clock(notes: list[str], available: bool, rr: RoundRobin) -> None:
    if not available:
        notes.append(
            "one process: wall-clock times (no /proc/thread-self/schedstat here), so load from "
            "other processes counts in them and can skew the read/decode split"
        )
        return
    own = sum(p["total"] for rounds in rr.rounds.values() for p in rounds)
    wall = sum(p["wall"] for rounds in rr.rounds.values() for p in rounds)
    waited = 1 - own / wall if wall > 0 else 0.0
    notes.append(
        "one process: times leave out what the benchmark waited for a CPU held by another "
        f"process (run-queue delay, /proc/thread-self/schedstat): {waited:.0%} of the "
        "wall-clock time here"
    )


def add_disk_and_ratios(results: dict[str, Any], loaders: list[Loader], work: WorkDir) -> None:
    """Bytes on disk per video (and against the video file), and speed against the references."""

    def disk(storage: str) -> float:
        return stored_bytes(storage, work.root_of(storage), work.video_ids)

    video_disk = disk(ORIGINAL)
    for ld in loaders:
        row = results[ld.name]
        if ld.storage in (ORIGINAL, *work.converted):
            row["disk_bytes_per_video"] = disk(ld.storage)
            row["disk_vs_video"] = row["disk_bytes_per_video"] / video_disk
        for ref, key in (("memory", "vs_memory"), ("pil", "vs_pil")):
            if ref in results:
                row[key] = row["clips_per_s"] / results[ref]["clips_per_s"]


def measure_dataloader(sources, readers, clips, results, cfg, notes) -> dict[str, Any]:
    pin = torch.cuda.is_available()
    notes.append(
        f"DataLoader: batch_size={cfg.batch_size}, num_workers={cfg.workers}, "
        f"persistent_workers={cfg.workers > 0}, pin_memory={pin} "
        f"({'CUDA available' if pin else 'no CUDA here, so pinning is off'})"
    )
    log(f"timing DataLoaders ({cfg.workers} workers): warm-up")
    rr = RoundRobin(cfg.min_time)  # holds the DataLoaders (their workers) until it goes
    for ld in sources:
        dl = make_loader(readers[ld.name], clips, cfg, pin_memory=pin)
        epoch(dl)  # starts the workers, fills their caches
        rr.add(ld.name, functools.partial(epoch, dl))
    log(f"timing DataLoaders: {cfg.repeats} interleaved repeats")
    note_other_load(notes, "the DataLoader timing", rr.run(cfg.repeats))
    for ld in sources:
        best = rr.best(ld.name)
        row = results[ld.name]
        row["dataloader"] = {
            "clock": "wall",
            "clips_per_s": len(clips) / best,
            "frames_per_s": len(clips) * cfg.frames / best,
            "vs_one_process": (len(clips) / best) / row["clips_per_s"],
            "times_s": rr.times[ld.name],
        }
    return {"workers": cfg.workers, "pin_memory": pin, "batch_size": cfg.batch_size}


def note_other_load(
    notes: list[str], phase: str, cpus: float | None, *, own_clock: bool = False
) -> None:
    """A warning note when other processes kept a quarter of a CPU or more busy in `phase`."""
    if cpus is not None and cpus >= 0.25:
        effect = (
            "its figures leave out waits for a CPU but not the caches and memory bandwidth "
            "others took"
            if own_clock
            else "its figures are pessimistic"
        )
        notes.append(
            f"warning: other processes kept {cpus:.1f} of {os.cpu_count()} CPUs busy on average "
            f"during {phase}; {effect} (rerun on an idle machine)"
        )


def measure_cold(sources, work: WorkDir, clips, results, cfg, notes) -> None:
    fs = filesystem_of(work.root)
    if fs in ("tmpfs", "ramfs"):
        notes.append(f"--cold has no effect here: {work.root} is on {fs} (files live in memory)")
    notes.append(
        "cold: before each cold epoch the rows' files are evicted with "
        "posix_fadvise(DONTNEED) and the source is created afresh (first-epoch setup included)"
    )
    log(f"timing cold vs warm epochs: {cfg.repeats} interleaved repeats")
    rows = {
        ld.name: (lambda make=ld.make: make().read, ld.storage, work.root_of(ld.storage))
        for ld in sources
    }
    with OtherLoad() as other:
        times = cold_and_warm(rows, work.video_ids, clips, cfg.batch_size, cfg.repeats)
    note_other_load(notes, "the cold-cache timing", other.cpus)
    for name, t in times.items():
        results[name]["cold"] = t
