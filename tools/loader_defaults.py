"""Clips/s through `make_loader` for the defaults the docs' "DataLoader recipe" quotes.

    python tools/loader_defaults.py [--work DIR] [--num-videos 8 | --videos DIR] [--clips 256]
                                    [--epochs 4] [--repeats 5] [--quick]

Generates `--num-videos` sample videos (`vidload.synth`, 320x240, 25 fps, 7 s) and converts them
to npy (`vidload.convert.convert`) under `--work` once (reused when already there), then reads
8-frame segment clips from them (`ClipDataset` + `NpySource`, `--clips` items an epoch, batches
of 16, a new epoch through `epochs`) with four loaders:

- `0 workers`: everything in this process;
- `default`: `make_loader`'s defaults (`default_workers()` workers, `prefetch_factor=2`,
  persistent workers);
- `prefetch 4`: the defaults with `prefetch_factor=4`;
- `not persistent`: the defaults with `persistent_workers=False` (workers restarted each epoch).

Each loader is built and run for `--epochs` epochs; the rows are interleaved, in a rotated order
each repeat, so that noise from other processes hits them alike. Wall-clock times (this is about
throughput, which is what workers buy), so the machine's load average is printed before and
after every repeat. Steady clips/s is over the epochs after the first (the first includes
starting the workers); "all epochs" includes it, which is where restarting workers shows. Best
and median over the repeats.

`--videos DIR` converts the videos of DIR (e.g. `../shared/videos`, real footage) instead of
generating any, to `--work`/videos-npy. Their sizes may differ, so that batches stack the clips are
resized to a short side of 128 and centre-cropped to 112x112 in that mode only (`short_side=128,
crop=112`; printed); every video gets label 0 (the labels do not matter to the speed, and a folder
without class folders converts unlabelled). Everything else is as above.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vidload import ClipDataset, NpySource, epochs, make_loader
from vidload._cpus import default_workers
from vidload.convert import convert
from vidload.manifest import read_manifest
from vidload.synth import SynthSpec, make_sample_videos

BATCH = 16
FRAMES_PER_CLIP = 8
#: clip geometry of `--videos DIR` mode only, where the videos' sizes may differ
REAL_GEOMETRY: dict[str, Any] = {"short_side": 128, "crop": 112}


def _rows(workers: int) -> dict[str, dict[str, Any]]:
    return {
        "0 workers": {"num_workers": 0},
        f"default ({workers} workers)": {},
        "prefetch 4": {"prefetch_factor": 4},
        "not persistent": {"persistent_workers": False},
    }


def _build(work: Path, spec: SynthSpec) -> Path:
    """Sample videos converted to npy under `work` (reused when they are there)."""
    videos = work / "videos"
    out = work / "npy"
    make_sample_videos(videos, spec, progress=False)
    if not (out / "manifest.csv").exists():
        convert(videos, out, to="npy", overwrite=True, progress=False)
    return out


def _build_from(videos: Path, work: Path) -> Path:
    """The videos of the folder `videos` converted to npy under `work` (reused when there)."""
    if not videos.is_dir():
        raise SystemExit(f"--videos {videos}: not a folder")
    out = work / "videos-npy"
    if not (out / "manifest.csv").exists():
        convert(videos, out, to="npy", overwrite=True, progress=False)
    return out


@dataclass(frozen=True)
class _Set:
    """What the loaders read: npy `root`, its `videos` and the ClipDataset's geometry options."""

    root: Path
    videos: Any  # the manifest path, or (video_id, label, num_frames) tuples
    num_videos: int
    sizes: str
    geometry: dict[str, Any]


def _synth_set(root: Path, spec: SynthSpec) -> _Set:
    return _Set(root, root / "manifest.csv", spec.num_videos, f"{spec.width}x{spec.height}", {})


def _real_set(root: Path) -> _Set:
    rows = [row for row in read_manifest(root / "manifest.csv") if row.status == "ok"]
    if not rows:
        raise SystemExit(f"{root / 'manifest.csv'}: no video converted")
    videos = [(row.video_id, 0, row.actual_frames) for row in rows]
    sizes = ", ".join(sorted({f"{row.width}x{row.height}" for row in rows}))
    return _Set(root, videos, len(rows), sizes, dict(REAL_GEOMETRY))


def _epoch_times(data: _Set, clips: int, n_epochs: int, **kwargs: Any) -> list[float]:
    """Seconds per epoch of one fresh dataset and loader; the first includes starting workers."""
    per_video = max(1, -(-clips // data.num_videos))  # ceil: at least `clips` items an epoch
    ds = ClipDataset(
        data.videos,
        NpySource(data.root),
        num_frames=FRAMES_PER_CLIP,
        clips_per_video=per_video,
        seed=0,
        **data.geometry,
    )
    times = []
    start = time.perf_counter()
    loader = make_loader(ds, batch_size=BATCH, **kwargs)
    for _ in epochs(loader, n_epochs):
        for _clips, _labels in loader:
            pass
        now = time.perf_counter()
        times.append(now - start)
        start = now
    del loader  # persistent workers end here, not during the next row
    return times


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} CPUs"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, help="folder for the videos and npy files")
    parser.add_argument("--num-videos", type=int, default=8, help="sample videos to generate")
    parser.add_argument(
        "--videos",
        type=Path,
        metavar="DIR",
        help="convert the videos of DIR instead (real footage)",
    )
    parser.add_argument("--clips", type=int, default=256, help="items an epoch")
    parser.add_argument("--epochs", type=int, default=4, help="epochs per loader (>= 2)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--quick", action="store_true", help="smoke test: 2 tiny 1 s videos, 2 epochs, 1 repeat"
    )
    args = parser.parse_args(argv)
    spec = SynthSpec(num_videos=args.num_videos)
    if args.quick:
        spec = SynthSpec(num_videos=2, width=64, height=48, seconds=1.0)
        args.clips, args.epochs, args.repeats = 16, 2, 1
    if args.epochs < 2 or args.repeats < 1 or args.clips < 1:
        parser.error("--epochs must be >= 2, --repeats and --clips >= 1")
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work if args.work is not None else Path(tmp)
        if args.videos is not None:
            data = _real_set(_build_from(args.videos, work))
        else:
            data = _synth_set(_build(work, spec), spec)
        return _run(data, args)


def _run(data: _Set, args: argparse.Namespace) -> int:
    workers = default_workers()
    rows = _rows(workers)
    names = list(rows)
    steady: dict[str, list[float]] = {name: [] for name in names}
    total: dict[str, list[float]] = {name: [] for name in names}
    clips = data.num_videos * max(1, -(-args.clips // data.num_videos))
    geometry = ", ".join(f"{k}={v}" for k, v in data.geometry.items()) or "full frames"
    source = f" from {args.videos}" if args.videos is not None else ""
    print(
        f"{data.num_videos} videos{source} ({data.sizes}), npy, {geometry}; {clips} clips of "
        f"{FRAMES_PER_CLIP} frames an epoch, batches of {BATCH}, {args.epochs} epochs per loader, "
        f"{args.repeats} repeats; default_workers() = {workers}"
    )
    for r in range(args.repeats):
        print(f"repeat {r + 1}: {_load()}", flush=True)
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            times = _epoch_times(data, args.clips, args.epochs, **rows[name])
            steady[name].append(clips * (len(times) - 1) / sum(times[1:]))
            total[name].append(clips * len(times) / sum(times))
    print(f"after: {_load()}")
    print(
        f"\n{'loader':<26} {'steady clips/s':>20} {'all epochs clips/s':>20}"
        f"\n{'':<26} {'best':>9} {'median':>10} {'best':>9} {'median':>10}"
    )
    for name in names:
        print(
            f"{name:<26} {max(steady[name]):9.0f} {statistics.median(steady[name]):10.0f}"
            f" {max(total[name]):9.0f} {statistics.median(total[name]):10.0f}"
        )
    default = names[1]
    best = {name: max(total[name]) for name in names}
    best_steady = {name: max(steady[name]) for name in names}
    print(
        f"\n{default} / 0 workers (steady, best): "
        f"{best_steady[default] / best_steady['0 workers']:.2f}x"
        f"\nprefetch 4 / prefetch 2 (steady, best): "
        f"{best_steady['prefetch 4'] / best_steady[default]:.2f}x"
        f"\nrestarting workers each epoch, time over {args.epochs} epochs (best): "
        f"{best[default] / best['not persistent'] - 1:+.0%}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
