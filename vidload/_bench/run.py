"""One benchmark run: build the rows, sample the clips, time everything, return the results.

`run_benchmark(BenchConfig(...))` is what `vidload bench` calls; it returns the dictionary that
`--json` writes and `report.render` prints.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
import platform
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from vidload._bench.geometry import measure_geometry
from vidload._bench.loaders import (
    DecordBatch,
    Loader,
    MemoryJpeg,
    PilPerFile,
    PyAvFromStart,
    TorchcodecExact,
    VideoFileRaw,
    VideoInMemory,
    decode_encoded,
    fastest_decode,
    optional_import,
)
from vidload._bench.timing import (
    OtherLoad,
    OwnClock,
    RoundRobin,
    drop_from_page_cache,
    epoch,
    filesystem_of,
    make_loader,
    one_pass,
    row_pass,
    timed,
)
from vidload._bench.workdir import WorkDir, default_work_dir, log, prepare, ram_copy
from vidload._cpus import default_workers
from vidload._cv2 import cv2
from vidload.sampling import segment_indices
from vidload.sources.hdf5 import Hdf5Source
from vidload.sources.jpeg import JpegSource
from vidload.sources.jpeg_decode import decode_jpeg
from vidload.sources.npy import NpySource
from vidload.sources.video import VideoSource
from vidload.synth import SynthSpec

__all__ = ["BenchConfig", "REFERENCE_NAMES", "SOURCE_NAMES", "run_benchmark"]

SOURCE_NAMES = ("video", "jpeg", "hdf5", "npy-mmap", "npy-read")
REFERENCE_NAMES = ("memory", "pil", "pyav-from-start", "torchcodec", "decord")


@dataclass
class BenchConfig:
    """Settings of one benchmark run (the command line's options)."""

    data: Path | None = None
    work: Path | None = None
    num_videos: int = 8
    clips: int = 64
    repeats: int = 3
    frames: int = 8
    batch_size: int = 16
    workers: int = field(default_factory=default_workers)
    seed: int = 0
    quality: int = 95
    short_side: int | None = None
    min_time: float = 0.3
    cold: bool = False
    dataloader: bool = True
    only: tuple[str, ...] | None = None
    synth_seconds: float = 7.0
    synth_size: tuple[int, int] = (320, 240)
    convert_workers: int | None = None  # None: default_workers()
    progress: bool = True
    geometry_short_side: int | None = 128  # None: no geometry rows
    geometry_hd: tuple[int, int] | None = (1920, 1080)  # None: no high-resolution sample
    geometry_hd_seconds: float = 1.0

    def __post_init__(self) -> None:
        for name in ("num_videos", "clips", "repeats", "frames", "batch_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} ({value!r}) must be an int >= 1")
        if isinstance(self.workers, bool) or not isinstance(self.workers, int) or self.workers < 0:
            raise ValueError(f"workers ({self.workers!r}) must be an int >= 0")
        if self.min_time < 0:
            raise ValueError(f"min_time ({self.min_time}) must be >= 0")
        if self.only is not None:
            unknown = sorted(set(self.only) - set(SOURCE_NAMES) - set(REFERENCE_NAMES))
            if unknown:
                raise ValueError(
                    f"--only names unknown loaders {unknown}; choose from "
                    f"{', '.join(SOURCE_NAMES + REFERENCE_NAMES)}"
                )


# --------------------------------------------------------------------------- loaders


def build_loaders(
    work: WorkDir, cfg: BenchConfig, notes: list[str], ram_videos: Path | None
) -> list[Loader]:
    """The rows: the five sources, then the references that can run here. `ram_videos` is a
    RAM-backed copy of the videos (for the video row's decode time), or None."""
    vids, conv = work.videos, work.converted
    loaders = [
        Loader(
            "video",
            "source",
            "video",
            "VideoSource(threads=1): seek to the keyframe before each stretch, decode forward",
            lambda: VideoSource(vids, threads=1),
            VideoFileRaw(vids),
            VideoInMemory(ram_videos) if ram_videos is not None else None,
        ),
        _container_row("jpeg", "jpeg", "JpegSource: one file per frame", JpegSource, conv),
        _container_row(
            "hdf5",
            "hdf5",
            "Hdf5Source: one HDF5 file of JPEG bytes per video",
            Hdf5Source,
            conv,
        ),
        _container_row(
            "npy-mmap",
            "npy",
            'NpySource(mode="mmap"): decode the clip\'s rows of a padded npy where they are '
            "mapped (read = mapping the file; the pages come in during the decode)",
            functools.partial(NpySource, mode="mmap"),
            conv,
        ),
        _container_row(
            "npy-read",
            "npy",
            'NpySource(mode="read"): read the whole npy per clip',
            functools.partial(NpySource, mode="read"),
            conv,
        ),
    ]
    memory = MemoryJpeg(conv["jpeg"])
    loaders += [
        Loader(
            "memory",
            "reference",
            "memory",
            "the clip's JPEG bytes already in memory, simplejpeg straight into a preallocated "
            "array, not vidload's code (the JPEG-family limit)",
            lambda: memory,
            memory.payload,
            fastest_decode,
        ),
        Loader(
            "pil",
            "reference",
            "jpeg",
            'naive loader: np.asarray(PIL.Image.open(path).convert("RGB")) per frame file',
            lambda: PilPerFile(conv["jpeg"]),
        ),
        Loader(
            "pyav-from-start",
            "reference",
            "video",
            "PyAV, one thread, decode from the start up to the last wanted frame "
            "(the stream VideoSource picks)",
            lambda: PyAvFromStart(vids),
        ),
    ]
    why = optional_import("torchcodec")
    if why is None:
        loaders.append(
            Loader(
                "torchcodec",
                "reference",
                "video",
                'torchcodec VideoDecoder(seek_mode="exact", 1 thread).get_frames_at '
                "(FFmpeg's best video stream, as VideoSource)",
                lambda: TorchcodecExact(vids),
            )
        )
    else:
        notes.append(f"torchcodec skipped: cannot import it here ({why})")
    why = optional_import("decord")
    if why is None:
        loaders.append(
            Loader(
                "decord",
                "reference",
                "video",
                "decord VideoReader(num_threads=1).get_batch "
                "(FFmpeg's best video stream, as VideoSource)",
                lambda: DecordBatch(vids),
            )
        )
    else:
        notes.append(f"decord skipped: cannot import it here ({why})")
    if cfg.only is not None:
        loaders = [ld for ld in loaders if ld.name in cfg.only]
    return loaders


def _container_row(
    name: str,
    storage: str,
    description: str,
    make: Callable[[Path], Any],
    converted: dict[str, Path],
) -> Loader:
    """A container source's row: `read` on a fresh source; split into the source's own raw
    read (`read_encoded`, on an instance of its own that keeps its files open as the row's
    does) and the shared decode of those bytes (`EncodedFrames.decode`)."""
    root = converted[storage]
    return Loader(
        name,
        "source",
        storage,
        description,
        functools.partial(make, root),
        make(root).read_encoded,
        decode_encoded,
    )


def sample_clips(
    work: WorkDir, counts: dict[str, int], cfg: BenchConfig
) -> tuple[list[tuple[str, np.ndarray]], list[int]]:
    """`cfg.clips` clips (video id, int64 indices), cycling over `work.video_ids` in a shuffled
    order; indices from `segment_indices(n, frames, train=True)` with n = `counts[video id]`
    (the smallest frame count any source has for that video, so every row can read every
    clip)."""
    rng = np.random.default_rng(cfg.seed)
    clips: list[tuple[str, np.ndarray]] = []
    labels: list[int] = []
    order: list[str] = []
    while len(clips) < cfg.clips:
        if not order:
            order = [work.video_ids[i] for i in rng.permutation(len(work.video_ids))]
        vid = order.pop()
        idx = segment_indices(counts[vid], cfg.frames, train=True, rng=rng)
        clips.append((vid, idx))
        labels.append(work.labels[vid])
    return clips, labels


def _why(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[-1] if text else ''}"[:300]


def usable_clips(
    work: WorkDir, sources: dict[str, Any], readers: dict[str, Any], cfg: BenchConfig
) -> tuple[WorkDir, list[tuple[str, np.ndarray]], list[int], dict[str, int], dict[str, str]]:
    """Clips every row can read, so that rows stay comparable on real data.

    Counts each video with every source, samples the clips and reads each of them once with
    every row (this also warms the caches); a video that a source or a row cannot count or
    read (a damaged file, a codec a reference lacks) is dropped from every row and the clips
    are sampled again without it. Returns (work with only the kept videos, clips, labels,
    counts, {dropped video id: which row failed and why}).
    """
    dropped: dict[str, str] = {}
    counts: dict[str, int] = {}
    for vid in work.video_ids:
        try:
            counts[vid] = min(src.actual_frames(vid) for src in sources.values())
        except Exception as e:  # noqa: BLE001 - named in the report, left out of every row
            dropped[vid] = f"counting its frames: {_why(e)}"
    while True:
        kept = [v for v in work.video_ids if v not in dropped]
        if not kept:
            raise ValueError(
                "no video can be read by every row: "
                + "; ".join(f"{v}: {why}" for v, why in sorted(dropped.items()))
            )
        kept_work = dataclasses.replace(work, video_ids=kept)
        clips, labels = sample_clips(kept_work, counts, cfg)
        before = len(dropped)
        for name, reader in readers.items():
            for vid, idx in clips:
                if vid in dropped:
                    continue
                try:
                    if hasattr(reader, "preload"):  # the in-memory row holds the clip's bytes
                        reader.preload(vid, idx)
                    reader.read(vid, idx)
                except Exception as e:  # noqa: BLE001 - decord, torchcodec, PyAV, vidload
                    dropped[vid] = f"row {name}: {_why(e)}"
        if len(dropped) == before:
            return kept_work, clips, labels, {v: counts[v] for v in kept}, dropped


# --------------------------------------------------------------------------- measuring


_JPEG_ROWS = ("jpeg", "hdf5", "npy-mmap", "npy-read", "pil")
_VIDEO_ROWS = ("video", "torchcodec", "decord")


def _check_outputs(readers: dict[str, Any], clips, notes: list[str]) -> dict[str, str]:
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
            ref = "memory" if name in _JPEG_ROWS else None
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
        if name in SOURCE_NAMES and v != "identical":
            notes.append(f"{name}: pixels differ from its reference ({v})")
    return verdict


def _reduced_decode_tasks(memory: MemoryJpeg, rr: RoundRobin) -> dict[str, Any] | None:
    if "size" not in inspect.signature(decode_jpeg).parameters:
        return None
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


def run_benchmark(cfg: BenchConfig) -> dict[str, Any]:
    """Prepare the data, measure every row, and return the results (as `--json` writes them).

    One-process figures run with one torch thread, as a DataLoader worker does: torch's
    intra-op threads would otherwise fight other processes for the cores during `stack`.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _run(cfg)
    finally:
        torch.set_num_threads(threads)


def _run(cfg: BenchConfig) -> dict[str, Any]:
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
    work = prepare(
        cfg.data,
        work_root,
        num_videos=cfg.num_videos,
        spec=spec,
        quality=cfg.quality,
        short_side=cfg.short_side,
        workers=cfg.convert_workers,
        progress=cfg.progress,
    )
    for vid, why in sorted(work.failed.items()):
        notes.append(f"left out {vid}: {why}")
    with ram_copy(work.videos, work.video_ids, notes) as ram_videos:
        return _measure(cfg, work, spec, notes, ram_videos)


def _measure(
    cfg: BenchConfig, work: WorkDir, spec: SynthSpec, notes: list[str], ram_videos: Path | None
) -> dict[str, Any]:
    loaders = build_loaders(work, cfg, notes, ram_videos)
    if ram_videos is not None and any(ld.name == "video" for ld in loaders):
        notes.append(
            "video split: decode = the same VideoSource reading a copy of the files in RAM "
            "(/dev/shm), so demuxing and seeking count as decode and rest is ~0 (within noise)"
        )
    if not loaders:
        raise ValueError(f"--only {cfg.only} leaves nothing to measure")
    readers = {ld.name: ld.make() for ld in loaders}
    all_sources = {
        "video": VideoSource(work.videos),
        "jpeg": JpegSource(work.converted["jpeg"]),
        "hdf5": Hdf5Source(work.converted["hdf5"]),
        "npy": NpySource(work.converted["npy"]),
    }
    log("counting frames, sampling clips, and reading each clip with every row once")
    work, clips, labels, counts, dropped = usable_clips(work, all_sources, readers, cfg)
    for vid, why in sorted(dropped.items()):
        notes.append(f"left out {vid} from every row (so that rows stay comparable): {why}")
    memory = readers.get("memory") or MemoryJpeg(work.converted["jpeg"])
    for vid, idx in clips:
        memory.preload(vid, idx)
    log("checking that every row returns the same pixels (first clip of each video)")
    checks = _check_outputs(readers, clips, notes)

    results, reduced = _measure_one_process(loaders, readers, memory, clips, cfg, notes, checks)
    _add_disk_and_ratios(results, loaders, work)
    sources = [ld for ld in loaders if ld.kind == "source"]
    dl_settings = None
    if cfg.dataloader and sources:
        dl_settings = _measure_dataloader(sources, readers, clips, labels, results, cfg, notes)
    if cfg.cold and sources:
        _measure_cold(sources, work, clips, results, cfg, notes)
    geometry = None
    if cfg.geometry_short_side is not None:
        geometry = measure_geometry(
            work,
            _describe(work, spec, counts),
            work.root / "geometry-hd",
            short_side=cfg.geometry_short_side,
            hd_size=cfg.geometry_hd,
            hd_seconds=cfg.geometry_hd_seconds,
            clips=cfg.clips,
            frames=cfg.frames,
            repeats=cfg.repeats,
            min_time=cfg.min_time,
            seed=cfg.seed,
            quality=cfg.quality,
            only=cfg.only,
            convert_workers=cfg.convert_workers,
            progress=cfg.progress,
        )
        for g in geometry:
            _note_other_load(notes, f"the geometry timing on {g['label']}", g["other_load_cpus"])
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
        "dataloader_settings": dl_settings,
        "loaders": results,
        "reduced_decode": reduced,
        "geometry": geometry,
        "notes": notes,
    }


def _measure_one_process(
    loaders, readers, memory, clips, cfg, notes, checks
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Every row's whole reads, with the raw reads and decodes of the same clips timed in the
    same pass (`row_pass`), and the reduced-size decode, in interleaved rounds: (one result
    row per loader, the reduced-size decode result or None)."""
    with OwnClock() as clock:
        rr = RoundRobin(cfg.min_time, clock)
        log(f"warming up and calibrating {len(loaders)} rows")
        bytes_read: dict[str, float] = {}
        for ld in loaders:
            task = _row_task(readers[ld.name], ld, clips, cfg.batch_size, clock)
            rr.add(f"row/{ld.name}", task)
            if ld.raw is not None and ld.storage != "memory":
                bytes_read[ld.name] = float(np.mean([ld.raw(v, i).nbytes_read for v, i in clips]))
        reduced_tasks = _reduced_decode_tasks(memory, rr)
        log(f"timing one process: {cfg.repeats} interleaved repeats")
        with OtherLoad() as other:
            rr.run(cfg.repeats, on_round=lambda r: log(f"  repeat {r + 1}/{cfg.repeats} done"))
        own_clock = clock.available
    _note_own_clock(notes, own_clock, rr)
    clock_kind = "own" if own_clock else "wall"
    _note_other_load(notes, "the one-process timing", other.cpus, own_clock=own_clock)

    results: dict[str, Any] = {}
    clamped: list[str] = []
    n = len(clips)
    for ld in loaders:
        rounds = rr.rounds[f"row/{ld.name}"]
        best = rr.best_round(f"row/{ld.name}")
        total = best["total"]
        row: dict[str, Any] = {
            "kind": ld.kind,
            "storage": ld.storage,
            "description": ld.description,
            "check": checks.get(ld.name),
            "clock": clock_kind,
            "clips_per_s": n / total,
            "frames_per_s": n * cfg.frames / total,
            "times_s": {
                "total": [p["total"] for p in rounds],
                "wall": [p["wall"] for p in rounds],
            },
        }
        if ld.raw is not None:
            dec = best["decode"] if ld.decode is not None else None
            rest = None if dec is None else 1000 * (total - best["read"] - dec) / n
            row["split_ms_per_clip"] = {
                "total": 1000 * total / n,
                "read": 1000 * best["read"] / n,
                "decode": None if dec is None else 1000 * dec / n,
                "rest": rest,
            }
            row["times_s"]["read"] = [p["read"] for p in rounds]
            if ld.decode is not None:
                row["times_s"]["decode"] = [p["decode"] for p in rounds]
            if ld.name in bytes_read:
                row["bytes_read_per_clip"] = bytes_read[ld.name]
            _note_split_off(notes, ld.name, row["split_ms_per_clip"])
            if rest is not None and rest < 0:  # parts timed apart: noise, not a negative cost
                row["split_ms_per_clip"]["rest"] = 0.0
                row["split_ms_per_clip"]["rest_measured"] = rest
                clamped.append(ld.name)
        results[ld.name] = row
    if clamped:
        notes.append(
            f"rest shown as 0 for {', '.join(clamped)}: read + decode came out larger than the "
            "whole read (timing noise); the measured value is in the JSON (rest_measured)"
        )
    if reduced_tasks is None:
        notes.append("reduced-size decode not measured: decode_jpeg has no size= argument")
        return results, None
    full, dct = rr.best("reduced/full+resize"), rr.best("reduced/dct")
    reduced = {
        **reduced_tasks,
        "full_resize_frames_per_s": reduced_tasks["frames"] / full,
        "dct_frames_per_s": reduced_tasks["frames"] / dct,
        "speedup": full / dct,
        "times_s": {"full+resize": rr.times["reduced/full+resize"], "dct": rr.times["reduced/dct"]},
    }
    return results, reduced


def _row_task(reader, ld: Loader, clips, batch_size: int, clock):
    """The timed unit of one row: a `row_pass` over `clips` (raw read and decode of each clip
    right after its whole read, where the row has them)."""
    return lambda: row_pass(reader.read, clips, batch_size, ld.raw, ld.decode, clock)


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


def _note_split_off(notes: list[str], name: str, split: dict[str, float | None]) -> None:
    """A warning note when read + decode exceed the whole read by more than 10%: the parts
    are timed in the same pass, so this means the timing was disturbed, not a real cost."""
    rest, total = split["rest"], split["total"]
    if rest is not None and total and rest < -0.1 * total:
        notes.append(
            f"warning: {name}: read + decode exceed the whole read by {-rest / total:.0%} "
            f"({total - rest:.2f} vs {total:.2f} ms/clip); its split was disturbed (other "
            "load?): rerun with more --repeats"
        )


def _add_disk_and_ratios(results: dict[str, Any], loaders: list[Loader], work: WorkDir) -> None:
    """Bytes on disk per video (and against the video file), and speed against the references."""

    def disk(storage: str) -> float:
        sizes = [sum(p.stat().st_size for p in work.files(storage, v)) for v in work.video_ids]
        return float(np.mean(sizes))

    video_disk = disk("video")
    for ld in loaders:
        row = results[ld.name]
        if ld.storage in ("video", "jpeg", "hdf5", "npy"):
            row["disk_bytes_per_video"] = disk(ld.storage)
            row["disk_vs_video"] = row["disk_bytes_per_video"] / video_disk
        for ref, key in (("memory", "vs_memory"), ("pil", "vs_pil")):
            if ref in results:
                row[key] = row["clips_per_s"] / results[ref]["clips_per_s"]


def _describe(work: WorkDir, spec: SynthSpec, counts: dict[str, int]) -> str:
    lo, hi = min(counts.values()), max(counts.values())
    frames = f"{lo}" if lo == hi else f"{lo}-{hi}"
    if work.origin == "synthetic":
        return (
            f"synthetic {spec.width}x{spec.height} H.264 with B-frames, {spec.fps} fps, "
            f"{frames} frames each"
        )
    return f"{work.origin}, {frames} frames each"


def _measure_dataloader(sources, readers, clips, labels, results, cfg, notes) -> dict[str, Any]:
    pin = torch.cuda.is_available()
    notes.append(
        f"DataLoader: batch_size={cfg.batch_size}, num_workers={cfg.workers}, "
        f"persistent_workers={cfg.workers > 0}, pin_memory={pin} "
        f"({'CUDA available' if pin else 'no CUDA here, so pinning is off'})"
    )
    log(f"timing DataLoaders ({cfg.workers} workers): warm-up")
    loaders = {
        ld.name: make_loader(
            readers[ld.name],
            clips,
            labels,
            batch_size=cfg.batch_size,
            workers=cfg.workers,
            pin_memory=pin,
        )
        for ld in sources
    }
    rr = RoundRobin(cfg.min_time)
    for name, dl in loaders.items():
        epoch(dl)  # starts the workers, fills their caches
        rr.add(name, functools.partial(epoch, dl))
    log(f"timing DataLoaders: {cfg.repeats} interleaved repeats")
    with OtherLoad() as other:
        rr.run(cfg.repeats)
    _note_other_load(notes, "the DataLoader timing", other.cpus)
    for name, dl in loaders.items():
        best = rr.best(name)
        row = results[name]
        row["dataloader"] = {
            "clock": "wall",
            "clips_per_s": len(clips) / best,
            "frames_per_s": len(clips) * cfg.frames / best,
            "vs_one_process": (len(clips) / best) / row["clips_per_s"],
            "times_s": rr.times[name],
        }
        del dl
    loaders.clear()
    return {"workers": cfg.workers, "pin_memory": pin, "batch_size": cfg.batch_size}


def _note_other_load(
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


def _pass_seconds(reader, clips, batch_size: int) -> float:
    return timed(lambda: one_pass(reader.read, clips, batch_size))


def _measure_cold(sources, work: WorkDir, clips, results, cfg, notes) -> None:
    fs = filesystem_of(work.root)
    if fs in ("tmpfs", "ramfs"):
        notes.append(f"--cold has no effect here: {work.root} is on {fs} (files live in memory)")
    notes.append(
        "cold: before each cold epoch the rows' files are evicted with "
        "posix_fadvise(DONTNEED) and the source is created afresh (first-epoch setup included)"
    )
    log(f"timing cold vs warm epochs: {cfg.repeats} interleaved repeats")
    files = {
        ld.name: [p for v in work.video_ids for p in work.files(ld.storage, v)] for ld in sources
    }
    times: dict[str, dict[str, list[float]]] = {ld.name: {"cold": [], "warm": []} for ld in sources}
    with OtherLoad() as other:
        for _ in range(cfg.repeats):
            for ld in sources:
                reader = ld.make()
                drop_from_page_cache(files[ld.name])
                times[ld.name]["cold"].append(_pass_seconds(reader, clips, cfg.batch_size))
                times[ld.name]["warm"].append(_pass_seconds(reader, clips, cfg.batch_size))
                del reader
    _note_other_load(notes, "the cold-cache timing", other.cpus)
    for name, t in times.items():
        cold, warm = min(t["cold"]), min(t["warm"])
        results[name]["cold"] = {"cold_s": cold, "warm_s": warm, "ratio": cold / warm, **t}
