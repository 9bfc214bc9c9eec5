"""The geometry rows of `vidload bench`: each source's fused resize against a full-size decode
followed by `cv2.resize`, on the benchmark's videos and on a small 1080p sample.

Three ways to the same output (`plan_geometry(short_side=S)` at test time: the whole frame
scaled so its short side is S), on the same clips:

- fused: `source.read(vid, idx, geometry=plan)` (JPEG DCT scaling then crop/resize, or scaling
  in the video's YUV -> RGB pass);
- full + apply_geometry: a full-size read, then vidload's own resize (`apply_geometry`: the same
  filters as the fused path, without DCT scaling or swscale), to tell the two gains apart;
- full + cv2.resize(INTER_AREA): a full-size read and the usual anti-aliased resize, the
  reference the issue names.

Times are interleaved rounds on the benchmark's own clock.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

from vidload._bench.workdir import VIDEO_ROW, WorkDir, log, prepare
from vidload._cv2 import cv2
from vidload._kinds import formats
from vidload._measure.clocks import OtherLoad, OwnClock
from vidload._measure.timing import RoundRobin
from vidload.sampling import segment_indices
from vidload.sources._format import StorageFormat
from vidload.sources.video import VideoSource
from vidload.synth import SynthSpec
from vidload.transforms import apply_geometry, plan_geometry

__all__ = ["geometry_sources", "measure_geometry"]


def geometry_sources() -> tuple[str, ...]:
    """The rows, by the names `--only` uses: the videos, and each container kind's first
    bench row (`vidload._kinds`)."""
    return (VIDEO_ROW, *(k.bench[0].name for k in _kinds()))


def _kinds() -> list[StorageFormat]:
    """The kinds whose reads fuse the geometry into the shared JPEG decode, with a bench row."""
    return [k for k in formats() if k.encoded_reads and k.bench]


def _sources(work: WorkDir) -> dict[str, Any]:
    conv = work.converted
    return {
        VIDEO_ROW: VideoSource(work.videos, threads=1),
        **{k.bench[0].name: k.open(conv[k.name], **k.bench[0].options) for k in _kinds()},
    }


def _clips(work: WorkDir, sources: dict[str, Any], n: int, frames: int, seed: int):
    counts = {v: min(s.actual_frames(v) for s in sources.values()) for v in work.video_ids}
    rng = np.random.default_rng(seed)
    ids = list(work.video_ids)
    out = []
    for i in range(n):
        vid = ids[i % len(ids)]
        out.append((vid, segment_indices(counts[vid], frames, train=True, rng=rng)))
    return out


def _measure_set(
    label: str,
    work: WorkDir,
    short_side: int,
    *,
    clips: int,
    frames: int,
    repeats: int,
    min_time: float,
    seed: int,
    only: tuple[str, ...] | None,
) -> dict[str, Any] | None:
    """One geometry set (None when `only` leaves none of the geometry rows)."""
    sources = _sources(work)
    if only is not None:
        sources = {k: v for k, v in sources.items() if k in only}
    if not sources:
        return None
    clip_list = _clips(work, sources, clips, frames, seed)
    # test-time geometry draws nothing from its rng
    plan = plan_geometry(short_side=short_side, train=False, rng=np.random.default_rng(seed))
    if plan is None:
        raise ValueError(f"short_side ({short_side}) plans no geometry")
    height, width = next(iter(sources.values())).read(*clip_list[0]).shape[1:3]
    out = plan.resolve(height, width).out

    def fused(src) -> None:
        for vid, idx in clip_list:
            src.read(vid, idx, geometry=plan)

    def full_apply(src) -> None:
        for vid, idx in clip_list:
            apply_geometry(src.read(vid, idx), plan)

    def area(frames: np.ndarray) -> np.ndarray:
        size = (int(out[1]), int(out[0]))
        return np.stack([cv2.resize(f, size, interpolation=cv2.INTER_AREA) for f in frames])

    def full_area(src) -> None:
        for vid, idx in clip_list:
            area(src.read(vid, idx))

    diffs = {}
    for name, src in sources.items():
        vid, idx = clip_list[0]
        a = src.read(vid, idx, geometry=plan).astype(np.int16)
        b = area(src.read(vid, idx)).astype(np.int16)
        diffs[name] = float(np.abs(a - b).mean())
    with OwnClock() as clock:
        rr = RoundRobin(min_time, clock)
        for name, src in sources.items():
            rr.add(f"{name}/fused", functools.partial(fused, src))
            rr.add(f"{name}/apply", functools.partial(full_apply, src))
            rr.add(f"{name}/full", functools.partial(full_area, src))
        log(f"timing fused resize on {label}: {repeats} interleaved repeats")
        with OtherLoad() as other:
            rr.run(repeats)
    rows = {}
    for name in sources:
        f, a, g = (rr.best(f"{name}/{k}") for k in ("fused", "apply", "full"))
        rows[name] = {
            "fused_ms_per_clip": 1000 * f / len(clip_list),
            "full_apply_ms_per_clip": 1000 * a / len(clip_list),
            "full_resize_ms_per_clip": 1000 * g / len(clip_list),
            "speedup": g / f,
            "speedup_vs_apply": a / f,
            "mean_abs_diff": diffs[name],
            "times_s": {k: rr.times[f"{name}/{k}"] for k in ("fused", "apply", "full")},
        }
    return {
        "label": label,
        "input": [int(width), int(height)],
        "output": [int(out[1]), int(out[0])],
        "clips": len(clip_list),
        "other_load_cpus": other.cpus,
        "rows": rows,
    }


def measure_geometry(
    main: WorkDir,
    main_label: str,
    hd_work: Path | None,
    *,
    short_side: int,
    hd_size: tuple[int, int] | None,
    hd_seconds: float,
    clips: int,
    frames: int,
    repeats: int,
    min_time: float,
    seed: int,
    quality: int,
    only: tuple[str, ...] | None,
    convert_workers: int | None,
    progress: bool,
) -> list[dict[str, Any]]:
    """Fused vs full + resize for every source, on the benchmark's videos and (when `hd_size`
    is given) on 2 generated videos of that size kept under `hd_work`."""
    kw: dict[str, Any] = dict(
        frames=frames, repeats=repeats, min_time=min_time, seed=seed, only=only
    )
    first = _measure_set(main_label, main, short_side, clips=clips, **kw)
    if first is None:
        return []
    sets = [first]
    if hd_size is not None and hd_work is not None:
        spec = SynthSpec(num_videos=2, width=hd_size[0], height=hd_size[1], seconds=hd_seconds)
        log(f"preparing the {hd_size[0]}x{hd_size[1]} sample for the geometry rows")
        hd = prepare(
            None,
            hd_work,
            num_videos=2,
            spec=spec,
            quality=quality,
            short_side=None,
            workers=convert_workers,
            progress=progress,
        )
        label = f"synthetic {hd_size[0]}x{hd_size[1]} H.264"
        hd_set = _measure_set(label, hd, short_side, clips=max(4, clips // 4), **kw)
        if hd_set is not None:  # the same `only` as the first set: never None here
            sets.append(hd_set)
    return sets
