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
from dataclasses import replace
from typing import Any

import numpy as np

from vidload._bench.config import VIDEO_ROW, BenchConfig
from vidload._bench.loaders import build_loaders
from vidload._bench.workdir import WorkDir, log, prepare
from vidload._cv2 import cv2
from vidload._kinds import formats
from vidload._measure.clips import common_counts, sample_clips
from vidload._measure.clocks import OwnClock
from vidload._measure.timing import RoundRobin
from vidload.synth import SynthSpec
from vidload.transforms import apply_geometry, plan_geometry

__all__ = ["geometry_sources", "measure_geometry"]


def geometry_sources() -> tuple[str, ...]:
    """The rows, by the names `--only` uses: the videos, and the first bench row of each kind
    whose reads fuse the geometry into the shared JPEG decode (`vidload._kinds`)."""
    return (VIDEO_ROW, *(k.bench[0].name for k in formats() if k.encoded_reads and k.bench))


def _measure_set(label: str, work: WorkDir, clips: int, cfg: BenchConfig) -> dict[str, Any]:
    """One geometry set of `clips` clips, at `cfg.geometry_short_side`, of the rows `cfg.only`
    keeps."""
    # the sources of the benchmark's rows of those names, made as the rows make them
    names = tuple(n for n in geometry_sources() if cfg.only is None or n in cfg.only)
    sources = {ld.name: ld.make() for ld in build_loaders(work, names, [], None)}
    dropped: dict[str, str] = {}
    counts = common_counts(sources, work.video_ids, dropped)
    if dropped:  # the videos every other row read, or a sample made for these rows
        raise ValueError(f"geometry rows on {label}: {'; '.join(dropped.values())}")
    clip_list = sample_clips(counts, clips=clips, num_frames=cfg.frames, seed=cfg.seed)
    short_side = cfg.geometry_short_side
    plan = plan_geometry(short_side=short_side, train=False, rng=None)  # test time: no draw
    if plan is None:
        raise ValueError(f"short_side ({short_side}) plans no geometry")
    height, width = next(iter(sources.values())).read(*clip_list[0]).shape[1:3]
    out = plan.resolve(height, width).out

    def area(frames: np.ndarray) -> np.ndarray:
        size = (int(out[1]), int(out[0]))
        return np.stack([cv2.resize(f, size, interpolation=cv2.INTER_AREA) for f in frames])

    # the three ways to a resized clip: fused into the read, or a full read then resized
    ways = {
        "fused": lambda src, vid, idx: src.read(vid, idx, geometry=plan),
        "apply": lambda src, vid, idx: apply_geometry(src.read(vid, idx), plan),
        "full": lambda src, vid, idx: area(src.read(vid, idx)),
    }

    def read_all(way: str, src: Any) -> None:
        for vid, idx in clip_list:
            ways[way](src, vid, idx)

    diffs = {}
    for name, src in sources.items():
        a, b = (ways[way](src, *clip_list[0]).astype(np.int16) for way in ("fused", "full"))
        diffs[name] = float(np.abs(a - b).mean())
    with OwnClock() as clock:
        rr = RoundRobin(cfg.min_time, clock)
        for name, src in sources.items():
            for way in ways:
                rr.add(f"{name}/{way}", functools.partial(read_all, way, src))
        log(f"timing fused resize on {label}: {cfg.repeats} interleaved repeats")
        other_load = rr.run(cfg.repeats)
    rows = {}
    for name in sources:
        f, a, g = (rr.best(f"{name}/{way}") for way in ways)
        rows[name] = {
            "fused_ms_per_clip": 1000 * f / len(clip_list),
            "full_apply_ms_per_clip": 1000 * a / len(clip_list),
            "full_resize_ms_per_clip": 1000 * g / len(clip_list),
            "speedup": g / f,
            "speedup_vs_apply": a / f,
            "mean_abs_diff": diffs[name],
            "times_s": {way: rr.times[f"{name}/{way}"] for way in ways},
        }
    return {
        "label": label,
        "input": [int(width), int(height)],
        "output": [int(out[1]), int(out[0])],
        "clips": len(clip_list),
        "other_load_cpus": other_load,
        "rows": rows,
    }


def measure_geometry(main: WorkDir, main_label: str, cfg: BenchConfig) -> list[dict[str, Any]]:
    """Fused vs full + resize for every source at `cfg.geometry_short_side`, on the benchmark's
    videos and (when `cfg.geometry_hd` is given) on 2 generated videos of that size kept under
    the work folder's `geometry-hd`."""
    if cfg.only is not None and not set(cfg.only) & set(geometry_sources()):
        return []
    sets = [_measure_set(main_label, main, cfg.clips, cfg)]
    if cfg.geometry_hd is not None:
        width, height = cfg.geometry_hd
        spec = SynthSpec(num_videos=2, width=width, height=height, seconds=cfg.geometry_hd_seconds)
        log(f"preparing the {width}x{height} sample for the geometry rows")
        hd = prepare(None, main.root / "geometry-hd", spec, replace(cfg, short_side=None))
        label = f"synthetic {width}x{height} H.264"
        sets.append(_measure_set(label, hd, max(4, cfg.clips // 4), cfg))
    return sets
