"""One benchmark run: build the rows, sample the clips, time everything, return the results.

`run_benchmark(BenchConfig(...))` is what `vidload bench` calls; it returns the dictionary that
`--json` writes and `report.render` prints.
"""

from __future__ import annotations

import dataclasses
import os
import platform
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from vidload._bench.config import REFERENCE_NAMES, VIDEO_ROW, BenchConfig, source_names
from vidload._bench.geometry import measure_geometry
from vidload._bench.loaders import MemoryJpeg, build_loaders
from vidload._bench.measure import (
    add_disk_and_ratios,
    check_outputs,
    measure_cold,
    measure_dataloader,
    measure_one_process,
    note_other_load,
)
from vidload._bench.workdir import (
    ORIGINAL,
    WorkDir,
    default_work_dir,
    log,
    prepare,
    ram_copy,
)
from vidload._convert.inputs import frame_folder_kind
from vidload._cv2 import cv2
from vidload._measure.clips import common_counts, sample_clips, storage_kind, why
from vidload._measure.timing import measuring
from vidload.synth import SynthSpec

__all__ = ["BenchConfig", "REFERENCE_NAMES", "run_benchmark", "source_names"]


def usable_clips(
    work: WorkDir,
    sources: dict[str, Any],
    readers: dict[str, Any],
    cfg: BenchConfig,
    notes: list[str],
) -> tuple[WorkDir, list[tuple[str, np.ndarray]], dict[str, int], dict[str, str]]:
    """Clips every row can read, so that rows stay comparable on real data.

    Counts each video with every source, samples the clips (`cfg.clips` TSN segment clips of
    `cfg.frames` frames, seed `cfg.seed`: `vidload._measure.clips.sample_clips`) and reads
    each of them once with every row (this also warms the caches); a video that a source or a
    row cannot count or read (a damaged file, a codec a reference lacks) is dropped from every
    row and the clips are sampled again without it. Returns (work with only the kept videos,
    clips, counts, {dropped video id: which row failed and why}); each dropped video is named
    in `notes`.
    """
    dropped: dict[str, str] = {}
    counts = common_counts(sources, work.video_ids, dropped)
    while True:
        kept = [v for v in work.video_ids if v not in dropped]
        if not kept:
            raise ValueError(
                "no video can be read by every row: "
                + "; ".join(f"{v}: {reason}" for v, reason in sorted(dropped.items()))
            )
        kept_counts = {v: counts[v] for v in kept}
        clips = sample_clips(kept_counts, clips=cfg.clips, num_frames=cfg.frames, seed=cfg.seed)
        before = len(dropped)
        for name, reader in readers.items():
            for vid, idx in clips:
                if vid in dropped:
                    continue
                try:
                    if isinstance(reader, MemoryJpeg):  # the row holds the clip's bytes
                        reader.preload(vid, idx)
                    reader.read(vid, idx)
                except Exception as e:  # noqa: BLE001 - decord, torchcodec, PyAV, vidload
                    dropped[vid] = f"row {name}: {why(e)}"
        if len(dropped) == before:
            for vid, reason in sorted(dropped.items()):
                notes.append(
                    f"left out {vid} from every row (so that rows stay comparable): {reason}"
                )
            return dataclasses.replace(work, video_ids=kept), clips, kept_counts, dropped


@measuring()
def run_benchmark(cfg: BenchConfig) -> dict[str, Any]:
    """Prepare the data, measure every row, and return the results (as `--json` writes them).

    One-process figures run with one torch thread, as a DataLoader worker does (the whole run
    is `measuring()`): torch's intra-op threads would otherwise fight other processes for the
    cores during `stack`.
    """
    notes: list[str] = [
        "one process: the clips read in this process with one torch thread (as in a DataLoader "
        "worker), made tensors and stacked into batches as the default collate does"
    ]
    work_root = cfg.work or default_work_dir(cfg.data)
    spec = SynthSpec(
        num_videos=cfg.num_videos,
        width=cfg.synth_size[0],
        height=cfg.synth_size[1],
        seconds=cfg.synth_seconds,
    )
    work = prepare(cfg.data, work_root, spec, cfg)
    for vid, reason in sorted(work.failed.items()):
        notes.append(f"left out {vid}: {reason}")
    if cfg.bucket is not None:  # the container sources from the bucket against the work folder
        from vidload._bench import bucket

        pairs = bucket.upload_work(work, cfg.bucket, notes)
        local = {storage: pair["local"] for storage, pair in pairs.items()}
        work, clips, counts, _dropped = usable_clips(work, local, {}, cfg, notes)
        rows = bucket.measure_bucket(pairs, clips, cfg)
        return _result(cfg, work, spec, counts, notes, bucket=rows)
    with ram_copy(work.videos, work.video_ids, notes) as ram_videos:
        return _measure(cfg, work, spec, notes, ram_videos)


def _measure(
    cfg: BenchConfig, work: WorkDir, spec: SynthSpec, notes: list[str], ram_videos: Path | None
) -> dict[str, Any]:
    loaders = build_loaders(work, cfg.only, notes, ram_videos)
    if ram_videos is not None and any(ld.name == VIDEO_ROW for ld in loaders):
        notes.append(
            "video split: decode = the same VideoSource reading a copy of the files in RAM "
            "(/dev/shm), so demuxing and seeking count as decode and rest is ~0 (within noise)"
        )
    if not loaders:
        raise ValueError(f"--only {cfg.only} leaves nothing to measure")
    readers = {ld.name: ld.make() for ld in loaders}
    if "hdf5" in readers and readers["hdf5"].cache_size >= len(work.video_ids):
        notes.append(
            f"hdf5: its {len(work.video_ids)} files stay open from clip to clip "
            f"(Hdf5Source(cache_size={readers['hdf5'].cache_size})); in a dataset of more "
            "videos than that, read in random order, a clip also opens its file (h5py: a "
            "large part of a clip's read), which this row leaves out"
        )
    # the videos as they are and every kind's conversion, each opened as its kind opens it
    all_sources = {s: storage_kind(s).open(work.root_of(s)) for s in (ORIGINAL, *work.converted)}
    log("counting frames, sampling clips, and reading each clip with every row once")
    work, clips, counts, _dropped = usable_clips(work, all_sources, readers, cfg, notes)
    memory = readers.get("memory") or MemoryJpeg(work.converted[frame_folder_kind()])
    for vid, idx in clips:
        memory.preload(vid, idx)
    log("checking that every row returns the same pixels (first clip of each video)")
    checks = check_outputs(readers, clips, notes)

    results, reduced = measure_one_process(loaders, readers, memory, clips, cfg, notes, checks)
    add_disk_and_ratios(results, loaders, work)
    sources = [ld for ld in loaders if ld.name in source_names()]  # not the references
    dl_settings = None
    if cfg.dataloader and sources:
        dl_settings = measure_dataloader(sources, readers, clips, results, cfg, notes)
    if cfg.cold and sources:
        measure_cold(sources, work, clips, results, cfg, notes)
    geometry = None
    if cfg.geometry_short_side is not None:
        label = _describe(work, spec, counts)
        geometry = measure_geometry(work, label, cfg)
        for g in geometry:
            note_other_load(notes, f"the geometry timing on {g['label']}", g["other_load_cpus"])
    return _result(
        cfg, work, spec, counts, notes, dataloader_settings=dl_settings, loaders=results,
        reduced_decode=reduced, geometry=geometry,
    )  # fmt: skip


def _result(
    cfg: BenchConfig,
    work: WorkDir,
    spec: SynthSpec,
    counts: dict[str, int],
    notes: list[str],
    **measured: Any,
) -> dict[str, Any]:
    """The results as `--json` writes them: the settings, the machine, the data (with each
    video's frames, `counts`), what was `measured` and the notes."""
    return {
        "config": {
            **{k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()},
            "statistic": f"best of {cfg.repeats} interleaved repeats",
        },
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "torch": torch.__version__,
            "cuda": torch.cuda.is_available(),
            "opencv": cv2.__version__,
        },
        "data": {
            "work": str(work.root),
            "origin": work.origin,
            "description": _describe(work, spec, counts),
            "num_videos": len(work.video_ids),
            "frames_per_video": counts,
        },
        **measured,
        "notes": notes,
    }


def _describe(work: WorkDir, spec: SynthSpec, counts: dict[str, int]) -> str:
    lo, hi = min(counts.values()), max(counts.values())
    frames = f"{lo}" if lo == hi else f"{lo}-{hi}"
    if work.origin == "synthetic":
        return (
            f"synthetic {spec.width}x{spec.height} H.264 with B-frames, {spec.fps} fps, "
            f"{frames} frames each"
        )
    return f"{work.origin}, {frames} frames each"
