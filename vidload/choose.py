"""`vidload choose`: which storage to keep a dataset in, measured on a sample of its own videos.

    result = choose("k400/train", sample=8, short_side=256, need=120, cores=8)

takes `sample` videos spread over DATA (`_choose.measure.spread`: deterministic), builds every
candidate storage from them with `vidload.convert.convert` in a scratch folder, at the user's
`short_side` (the originals; `--to video` re-encoded for random access at several GOP/CRF points;
JPEG containers at several qualities), and measures on each, with the same clips:

* bytes per video, and against the originals (`size_ratio`); DATA's size in that storage,
  extrapolated from the sample's ratio to DATA's total bytes;
* clips/s per core: one process, warm, CPU seconds (`time.process_time`), the user's
  `num_frames`/`sampling`, tensors made and collated (the benchmark's `row_pass`), best of
  `rounds` interleaved rounds. The originals are read with the short-side resize fused into
  their decode, as `ClipDataset(short_side=S)` reads them; the others are stored at S;
* a cold read: the first pass with the files evicted from the page cache and a new source
  (wall-clock clips/s, and its time against the warm pass after it);
* mean (and worst) PSNR against the original decode on the same frames, the centres of
  `psnr_frames` equal segments of each video. With `short_side` the reference is the original
  decode resized as `convert` resizes (cv2.INTER_AREA): what the storage was made from (and,
  for video, cut to the even size H.264 stores, as `convert` cuts it). None for the originals
  (exact);
* the CPU seconds per video of building it (decode, resize, encode, write), and the core-hours
  that would take for DATA (scaled by bytes).

The rows no other row beats on size, speed and quality together are the frontier
(`vidload._choose.frontier.beats`: no worse in all three and better in one). With `need` and
`cores` the result also names the smallest storage whose clips/s per core times `cores` reaches
`need`, or says why none does.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from vidload._atomic import remove_temporary
from vidload._choose.frontier import Pick, beats, frontier, pick_storage
from vidload._choose.measure import cut_to, psnr, psnr_indices, reference_frames, spread, warm_rates
from vidload._choose.options import ChooseOptions
from vidload._choose.result import ChooseResult, StorageRow
from vidload._choose.storages import DEFAULT_STORAGES, StorageSpec
from vidload._measure.build import BuildJob, Built, build_storage, conversion_failures
from vidload._measure.clips import (
    ORIGINAL,
    Clip,
    common_counts,
    sample_clips,
    storage_kind,
    stored_bytes,
)
from vidload._measure.timing import Log, cold_and_warm, measuring
from vidload._measure.videos import UserVideos, link_videos
from vidload._parallel import run_parallel
from vidload.sampling import SamplingMode

__all__ = [
    "DEFAULT_STORAGES",
    "ChooseResult",
    "Pick",
    "StorageRow",
    "StorageSpec",
    "beats",
    "choose",
    "frontier",
    "pick_storage",
]


def choose(
    data: str | os.PathLike[str],
    *,
    storage_options: Mapping[str, Any] | None = None,
    sample: int = 8,
    storages: Sequence[StorageSpec] = DEFAULT_STORAGES,
    short_side: int | None = None,
    num_frames: int = 8,
    sampling: SamplingMode = "segment",
    stride: int = 1,
    clips: int = 64,
    batch_size: int = 16,
    rounds: int = 3,
    min_time: float = 0.3,
    cold: bool = True,
    cold_rounds: int = 1,
    psnr_frames: int = 16,
    need: float | None = None,
    cores: int | None = None,
    min_psnr: float | None = None,
    workdir: str | os.PathLike[str] | None = None,
    keep: bool = False,
    jobs: int | None = None,
    seed: int = 0,
    progress: bool = True,
) -> ChooseResult:
    """Build every storage of `storages` from `sample` videos of `data` and measure them
    (module doc).

    Args:
        data: a folder of videos (searched recursively, by extension), local or in a bucket
            (`s3://bucket/videos`, any fsspec URL that lists): the sample's videos are then
            copied to the scratch folder, and every storage is built and measured on local
            disk, as from a local folder (what reading each from a bucket costs is
            `vidload bench --bucket`'s and `tools/bucket_latency.py`'s measure).
        storage_options: for a `data` URL, what its filesystem takes (credentials,
            `client_kwargs={"endpoint_url": ...}`); the AWS configuration applies without.
        sample: how many videos to take, spread over the folder.
        storages: the candidates (`StorageSpec`); `DEFAULT_STORAGES` by default. "original"
            is always measured (the reference of `size_ratio`), first, whether named or not.
        short_side: build and read every storage at this short side (None: full size).
        num_frames: frames per clip.
        sampling: "segment" or "consecutive" (`ClipDataset`'s modes).
        stride: gap between frames for "consecutive".
        clips: clips read per timed pass (the same clips for every storage).
        batch_size: clips per collated batch in a pass.
        rounds: interleaved rounds; the best counts.
        min_time: a timed unit repeats its pass until it lasts this many seconds.
        cold: also time a cold first pass (files evicted from the page cache).
        cold_rounds: cold passes per storage (the best counts); each evicts the files and
            reads every clip twice (cold, then warm), so the slowest storage dominates the run.
        psnr_frames: frames per video compared with the original decode.
        need: clips/s needed per GPU; with `cores`, name the smallest storage that meets it.
        cores: CPU cores per GPU for loading.
        min_psnr: with `need`, only storages at least this PSNR (dB) qualify.
        workdir: scratch folder (must be new or empty); default a temporary folder.
        keep: keep the scratch folder (its path is in the result) instead of removing it.
        jobs: storages built at once, each in its own process (default: the CPUs this
            process may use; 1 builds them one by one in this process).
        seed: seed of the clip sampling.
        progress: progress lines on stderr.

    Returns:
        a ChooseResult.

    Raises:
        FileNotFoundError: a local `data` does not exist.
        NotADirectoryError: a local `data` is not a folder.
        ValueError: a bad argument, no video under `data`, an `http(s)://` `data` (a web
            server's folders cannot be listed), `storage_options` for a local `data`, no video
            of the sample that can be read and built in every storage, or a non-empty
            `workdir`.
        VideoReadError: a `data` URL that cannot be listed or read (naming the URL).
    """
    cfg = ChooseOptions(
        sample=sample, short_side=short_side, num_frames=num_frames, sampling=sampling,
        stride=stride, clips=clips, batch_size=batch_size, rounds=rounds, min_time=min_time,
        cold=cold, cold_rounds=cold_rounds, psnr_frames=psnr_frames, need=need, cores=cores,
        min_psnr=min_psnr, keep=keep, jobs=jobs, seed=seed, progress=progress,
    )  # fmt: skip
    specs = _checked_storages(storages)
    videos = UserVideos(data, storage_options)
    videos.find(f"DATA ({str(videos.root)!r})", ValueError)  # a URL without its credentials
    with _scratch(workdir, cfg.keep) as scratch, measuring():
        result = _measure_all(videos, specs, scratch, cfg, Log("choose", cfg.progress))
    return dataclasses.replace(result, workdir=str(scratch)) if cfg.keep else result


def _checked_storages(storages: Sequence[StorageSpec]) -> list[StorageSpec]:
    specs = list(storages)
    for s in specs:
        if not isinstance(s, StorageSpec):
            raise TypeError(f"storages must be StorageSpec objects, got {type(s).__name__}")
    names = [s.name for s in specs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"storages named twice: {dupes}")
    original = StorageSpec("original")
    return [original] + [s for s in specs if s != original]


@contextmanager
def _scratch(workdir: str | os.PathLike[str] | None, keep: bool) -> Iterator[Path]:
    """The scratch folder: `workdir` (new or empty) or a temporary one. Unless `keep`, it is
    removed after, whatever happened (a `workdir` that was there already is emptied)."""
    if workdir is None:
        path, made = Path(tempfile.mkdtemp(prefix="vidload-choose-")), True
    else:
        path = Path(workdir)
        made = not path.exists()
        if not made and (not path.is_dir() or any(path.iterdir())):
            raise ValueError(
                f"workdir / --workdir ({str(path)!r}) must be a new or empty folder (it is "
                "filled with the candidates and removed after)"
            )
        path.mkdir(parents=True, exist_ok=True)
    try:
        yield path
    finally:
        if not keep:  # the folder made here, else what the run put in the user's folder
            for made_here in [path] if made else list(path.iterdir()):
                remove_temporary(made_here)


def _measure_all(
    videos: UserVideos,
    specs: list[StorageSpec],
    scratch: Path,
    cfg: ChooseOptions,
    log: Log,
) -> ChooseResult:
    sample_dir = scratch / "sample"
    original, readable, left_out = _readable_sample(videos, scratch, cfg, log)
    built = _build_all(specs, sample_dir, scratch, cfg, log)
    for vid, reason in conversion_failures({n: b.out for n, b in built.items()}).items():
        left_out.setdefault(vid, reason)
    roots = {"original": sample_dir, **{name: b.out for name, b in built.items()}}
    sources = {s.name: storage_kind(s.to).open(roots[s.name]) for s in specs}
    sources["original"] = original  # its frame counts are known already
    counts = common_counts(sources, readable, left_out)
    if not counts:
        raise _none_left("read in every storage", left_out)
    kept = sorted(counts)

    log("measuring PSNR against the original decode")
    quality = _psnr_all(sources, original, counts, cfg)
    clips = sample_clips(
        counts,
        clips=cfg.clips,
        num_frames=cfg.num_frames,
        sampling=cfg.sampling,
        stride=cfg.stride,
        seed=cfg.seed,
    )
    # a new reader of each storage per call: one for the warm timing, one per cold pass
    readers = {s.name: functools.partial(_reader, s, roots[s.name], cfg.short_side) for s in specs}
    log(f"timing {len(specs)} storages warm, one process: {cfg.rounds} rounds")
    warm = warm_rates(
        {name: make() for name, make in readers.items()},
        clips,
        batch_size=cfg.batch_size,
        rounds=cfg.rounds,
        min_time=cfg.min_time,
        log=log,
    )
    colds: dict[str, dict[str, Any]] = {}
    if cfg.cold:
        log(f"timing cold first passes: {cfg.cold_rounds} round(s)")
        rows = {s.name: (readers[s.name], s.to, roots[s.name]) for s in specs}
        colds = cold_and_warm(rows, kept, clips, cfg.batch_size, cfg.cold_rounds)

    data_bytes = float(sum(videos.sizes.values()))
    table = _rows(specs, roots, built, quality, warm, colds, clips, kept, data_bytes)
    pick = None
    if cfg.need is not None and cfg.cores is not None:  # given together (ChooseOptions)
        pick = pick_storage(table, need=cfg.need, cores=cfg.cores, min_psnr=cfg.min_psnr)
    log("done")
    config = cfg.as_config()
    config["storages"] = [s.name for s in specs]
    return ChooseResult(
        rows=tuple(table),
        pick=pick,
        data={"path": str(videos.root), "videos": len(videos.ids), "bytes": data_bytes},
        sample=tuple(kept),
        left_out=left_out,
        config=config,
        notes=tuple(_notes(cfg, scratch, videos.notes)),
    )


def _readable_sample(
    videos: UserVideos, scratch: Path, cfg: ChooseOptions, log: Log
) -> tuple[Any, list[str], dict[str, str]]:
    """Link the sample's videos into `scratch/sample` (a bucket's: their copies, fetched into
    `scratch/downloads`) and decode each once (its actual count): a video that does not
    decode is left out (unlinked, so no conversion sees it) and named.
    Returns (a VideoSource of the sample, the readable ids, {left-out id: why})."""
    chosen = spread(videos.ids, cfg.sample)
    files = videos.local_copies(chosen, scratch / "downloads", log)
    sample_dir = scratch / "sample"
    link_videos(sample_dir, files)
    log(f"sample: {len(chosen)} of {len(videos.ids)} videos under {videos.root}")
    original = storage_kind(ORIGINAL).open(sample_dir)
    left_out: dict[str, str] = {}  # a damaged video: named, left out, the run goes on
    kept = list(common_counts({ORIGINAL: original}, chosen, left_out, "cannot be decoded"))
    if not kept:
        raise _none_left("decoded", left_out)
    if left_out:
        link_videos(sample_dir, {v: files[v] for v in kept})  # same links: counts hold
        for vid, reason in left_out.items():
            log(f"left out {vid}: {reason}")
    return original, kept, left_out


def _none_left(what: str, left_out: dict[str, str]) -> ValueError:
    """The error of a run left with no video: each video of the sample and why it was left out."""
    reasons = "; ".join(f"{v}: {reason}" for v, reason in left_out.items())
    return ValueError(f"no video of the sample can be {what}: {reasons}")


def _reader(spec: StorageSpec, root: Path, short_side: int | None) -> Any:
    """How a storage is read in the timings: `read(video_id, indices)` of a new source of
    `spec` under `root` (no open files, no cached index: a warm timing's warm-up pass fills
    them); the originals with the resize to `short_side` fused into their decode (as
    `ClipDataset(short_side=S)` reads them), the others as stored (they are stored at S)."""
    read = storage_kind(spec.to).open(root).read
    if spec.to != ORIGINAL or short_side is None:
        return read
    from vidload.transforms import plan_geometry

    geometry = plan_geometry(short_side=short_side, train=False, rng=None)
    return functools.partial(read, geometry=geometry)


def _rows(
    specs: list[StorageSpec],
    roots: dict[str, Path],
    built: dict[str, Built],
    quality: dict[str, tuple[float, float]],
    warm: dict[str, float],
    colds: dict[str, dict[str, Any]],
    clips: list[Clip],
    kept: list[str],
    data_bytes: float,
) -> list[StorageRow]:
    """One row per storage, the frontier marked."""
    sample_bytes = stored_bytes(ORIGINAL, roots[ORIGINAL], kept)
    table = []
    for spec in specs:
        name = spec.name
        size = stored_bytes(spec.to, roots[name], kept)
        made = built.get(name)
        cpu = None if made is None else made.cpu_s / max(1, len(made.converted))
        q = quality.get(name)
        c = colds.get(name)
        table.append(
            StorageRow(
                storage=name,
                frontier=False,
                bytes_per_video=size,
                size_ratio=size / sample_bytes,
                data_bytes=size / sample_bytes * data_bytes,
                clips_per_s_per_core=warm[name],
                cold_clips_per_s=None if c is None else len(clips) / c["cold_s"],
                psnr_db=None if q is None else q[0],
                psnr_min_db=None if q is None else q[1],
                convert_cpu_s_per_video=cpu,
                data_convert_core_h=None if cpu is None else cpu * data_bytes / sample_bytes / 3600,
                spec=dataclasses.asdict(spec),
            )
        )
    marks = frontier(table)
    return [dataclasses.replace(r, frontier=m) for r, m in zip(table, marks, strict=True)]


def _build_all(
    specs: list[StorageSpec], sample_dir: Path, scratch: Path, cfg: ChooseOptions, log: Log
) -> dict[str, Built]:
    jobs = [
        BuildJob(
            spec.name,
            sample_dir,
            scratch / spec.name.replace(":", "-"),  # a folder name: no colons
            {"to": spec.to, **spec.options(), "short_side": cfg.short_side},  # convert's keywords
        )
        for spec in specs[1:]
    ]
    if not jobs:
        return {}
    assert cfg.jobs is not None  # ChooseOptions resolved None to the CPUs
    log(f"building {len(jobs)} storages ({min(cfg.jobs, len(jobs))} at a time)")
    built: dict[str, Built] = {}
    for b in run_parallel(build_storage, jobs, cfg.jobs):
        built[b.name] = b
        log(f"  built {b.name}: {b.cpu_s:.1f} CPU s")
    return built


def _psnr_all(
    sources: dict[str, Any], original: Any, counts: dict[str, int], cfg: ChooseOptions
) -> dict[str, tuple[float, float]]:
    """{storage: (mean PSNR, worst frame's PSNR)} over the same frames of every video."""
    import numpy as np

    per: dict[str, list[np.ndarray]] = {name: [] for name in sources if name != "original"}
    for vid, count in counts.items():
        idx = psnr_indices(count, cfg.psnr_frames)
        ref = reference_frames(original, vid, idx, cfg.short_side)
        for name in per:
            frames = sources[name].read(vid, idx)
            per[name].append(psnr(frames, cut_to(ref, frames), where=f"{name}, {vid}"))
    dbs = {name: np.concatenate(values) for name, values in per.items()}
    return {name: (float(db.mean()), float(db.min())) for name, db in dbs.items()}


def _notes(cfg: ChooseOptions, scratch: Path, data_notes: list[str]) -> list[str]:
    from vidload._measure.timing import filesystem_of

    notes = [
        "clips/s per core: warm, one process, CPU seconds of this process (time.process_time) "
        f"per clip, best of {cfg.rounds} interleaved rounds; {cfg.num_frames}-frame "
        f"{cfg.sampling} clips made tensors and collated",
        "PSNR: mean over the centres of "
        f"{cfg.psnr_frames} equal segments of every video, against the original decode"
        + (
            f" resized to short side {cfg.short_side} as convert resizes (cv2.INTER_AREA)"
            if cfg.short_side is not None
            else ""
        ),
        "frontier (*): no other row is no worse in size, clips/s per core and PSNR and "
        "better in one; the originals count as exact",
        "DATA size: the sample's size ratio times DATA's total bytes; convert core-hours "
        "likewise scaled by bytes",
    ]
    notes += data_notes  # DATA in a bucket: copied to local disk
    if cfg.short_side is not None:
        notes.append(
            f"the originals are read with the resize to short side {cfg.short_side} fused "
            "into their decode (as ClipDataset(short_side=...) does); the others are stored at it"
        )
    if cfg.cold:
        fs = filesystem_of(scratch)
        cold = (
            "cold: first pass, files evicted (posix_fadvise DONTNEED), a new source; wall clock, "
            f"best of {cfg.cold_rounds}"
        )
        if fs in ("tmpfs", "ramfs"):
            cold += f"; no effect here: the scratch folder is on {fs}"
        notes.append(cold)
    return notes
