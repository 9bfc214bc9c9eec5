"""Clips/s of a whole loading loop with colour augmentation in the main process or in the workers.

    python tools/augment_bench.py [--work DIR] [--videos DIR] [--clips 256] [--epochs 3]
                                  [--repeats 3] [--quick]
    python tools/augment_bench.py --kornia      # ClipAugment against kornia's VideoSequential

Reads 8-frame clips scaled to a short side of 128 and cropped to 112x112 at random
(`short_side=128, crop=112`), batches of 16, from npy files (`vidload.convert.convert` of 8
generated 320x240 videos, or of the videos of `--videos DIR`, e.g. `../shared/videos`), through
`make_loader` (`default_workers()` workers), three ways:

- `none`: the workers give uint8 clips, the loop normalises each batch (`vidload.normalize`);
- `batch, main process`: the same, then `ClipAugment` on the normalised (16, 8, 3, 112, 112)
  float32 batch in the main process (where a GPU would run it);
- `per clip, workers`: each worker normalises and augments each clip (the same `ClipAugment`,
  on a batch of one) and the loop receives float32 batches (4x the bytes of uint8 through the
  workers' shared memory).

Wall-clock clips/s of the whole loop (throughput across processes), steady state (the epochs
after the first, which starts the workers); rows interleaved, rotated each repeat; best and
median of the repeats, and the ratio to `none`. Also the CPU time per batch of `ClipAugment`
alone (`time.thread_time` with torch on one thread, best of 20 after 2 warm-ups).

`--kornia` compares, on one such batch with one torch thread (CPU time, best of 7 after 2
warm-ups, rows interleaved), `ClipAugment` with kornia's `VideoSequential(ColorJitter(0.4,
0.4, 0.4, 0.1), RandomGrayscale(p=0.2), RandomGaussianBlur((13, 13), (0.1, 2.0), p=0.5),
same_on_frame=True)` (the same operations and ranges; kornia converts to HSV for the hue and
clamps after each step) on the same batch in [0, 1] pixels. kornia is not a dependency: it
must be installed for this mode.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch

from vidload import ClipDataset, NpySource, epochs, make_loader, normalize
from vidload._cpus import default_workers
from vidload.augment import ClipAugment
from vidload.convert import convert
from vidload.manifest import read_manifest
from vidload.normalization import KINETICS_MEAN, KINETICS_STD
from vidload.synth import SynthSpec, make_sample_videos

BATCH, FRAMES, SHORT_SIDE, CROP = 16, 8, 128, 112
ROWS = ("none", "batch, main process", "per clip, workers")


class PerClip:
    """ClipDataset transform: normalise and augment one uint8 (T, 3, H, W) clip in a worker.
    The item index comes from torch's generator, which ClipDataset seeds from the item."""

    def __init__(self, aug: ClipAugment) -> None:
        self.aug = aug

    def __call__(self, clip: torch.Tensor) -> torch.Tensor:
        x = normalize(clip[None], KINETICS_MEAN, KINETICS_STD)
        return self.aug(x, [int(torch.randint(2**31, ()))], epoch=0)[0]


def _data(args: argparse.Namespace, work: Path) -> tuple[Path, list[tuple[str, int, int]]]:
    if args.videos is not None:
        videos, out = args.videos, work / "videos-npy"
    else:
        spec = SynthSpec(num_videos=2, width=64, height=48, seconds=1.0) if args.quick else None
        videos, out = work / "videos", work / "npy"
        make_sample_videos(videos, spec or SynthSpec(num_videos=8), progress=False)
    if not (out / "manifest.csv").exists():
        convert(videos, out, to="npy", overwrite=True, progress=False)
    rows = [r for r in read_manifest(out / "manifest.csv") if r.status == "ok"]
    return out, [(r.video_id, 0, r.actual_frames) for r in rows]


def _rate(root: Path, videos: list, row: str, args: argparse.Namespace) -> float:
    """Steady clips/s of one fresh dataset and loader for `row`."""
    aug = ClipAugment(KINETICS_MEAN, KINETICS_STD, seed=0)
    per_video = max(1, -(-args.clips // len(videos)))
    ds = ClipDataset(
        videos,
        NpySource(root),
        num_frames=FRAMES,
        clips_per_video=per_video,
        short_side=SHORT_SIDE,
        crop=CROP,
        seed=0,
        return_info=row == ROWS[1],
        transform=PerClip(aug) if row == ROWS[2] else None,
    )
    loader = make_loader(ds, batch_size=BATCH)
    times = []
    for epoch in epochs(loader, args.epochs):
        start = time.perf_counter()
        for batch in loader:
            if row == ROWS[0]:
                normalize(batch[0], KINETICS_MEAN, KINETICS_STD)
            elif row == ROWS[1]:
                x = normalize(batch[0], KINETICS_MEAN, KINETICS_STD)
                aug(x, batch[2]["index"], epoch=epoch)
        times.append(time.perf_counter() - start)
    del loader
    return len(ds) * (len(times) - 1) / sum(times[1:])


def _aug_alone(rounds: int) -> float:
    """CPU ms (this thread, torch on one thread) of ClipAugment on one normalised
    (16, 8, 3, 112, 112) float32 batch, best of `rounds` after 2 warm-ups."""
    aug = ClipAugment(KINETICS_MEAN, KINETICS_STD, seed=0)
    clips = torch.randint(0, 256, (BATCH, FRAMES, 3, CROP, CROP), dtype=torch.uint8)
    x = normalize(clips, KINETICS_MEAN, KINETICS_STD)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        best = float("inf")
        for k in range(rounds + 2):
            start = time.thread_time()
            aug(x, range(k * BATCH, (k + 1) * BATCH), epoch=0)
            if k >= 2:
                best = min(best, time.thread_time() - start)
    finally:
        torch.set_num_threads(threads)
    return 1000 * best


def _kornia() -> int:
    """Print CPU ms per batch of ClipAugment and of kornia's VideoSequential equivalent."""
    import kornia
    import kornia.augmentation as K

    torch.set_num_threads(1)
    clips = torch.randint(0, 256, (BATCH, FRAMES, 3, CROP, CROP), dtype=torch.uint8)
    x, pixels = normalize(clips, KINETICS_MEAN, KINETICS_STD), clips.float() / 255
    ours = ClipAugment(KINETICS_MEAN, KINETICS_STD, seed=0)
    theirs = K.VideoSequential(
        K.ColorJitter(0.4, 0.4, 0.4, 0.1, p=1.0),
        K.RandomGrayscale(p=0.2),
        K.RandomGaussianBlur((13, 13), (0.1, 2.0), p=0.5),
        data_format="BTCHW",
        same_on_frame=True,
    )
    rows = {
        "vidload ClipAugment": lambda: ours(x, range(BATCH), epoch=0),
        f"kornia {kornia.__version__} VideoSequential": lambda: theirs(pixels),
    }
    best = dict.fromkeys(rows, float("inf"))
    for r in range(9):
        for name, run in rows.items():
            start = time.thread_time()
            run()
            if r >= 2:
                best[name] = min(best[name], time.thread_time() - start)
    print(f"one ({BATCH}, {FRAMES}, 3, {CROP}, {CROP}) float32 batch, 1 torch thread, CPU time")
    base = best["vidload ClipAugment"]
    for name, seconds in best.items():
        print(f"{name:<34} {1000 * seconds:7.1f} ms {BATCH / seconds:6.0f} clips/s "
              f"{seconds / base:5.2f}x")  # fmt: skip
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, help="folder for the videos and npy files")
    parser.add_argument("--videos", type=Path, metavar="DIR", help="real footage to convert")
    parser.add_argument("--clips", type=int, default=256, help="items an epoch")
    parser.add_argument("--epochs", type=int, default=3, help="epochs per loader (>= 2)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="smoke test: tiny, 1 repeat")
    parser.add_argument("--kornia", action="store_true", help="compare with kornia, then stop")
    args = parser.parse_args(argv)
    if args.kornia:
        return _kornia()
    if args.quick:
        args.clips, args.epochs, args.repeats = 16, 2, 1
    if args.epochs < 2 or args.repeats < 1 or args.clips < 1:
        parser.error("--epochs must be >= 2, --repeats and --clips >= 1")
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work if args.work is not None else Path(tmp)
        root, videos = _data(args, work)
        print(
            f"{len(videos)} videos{f' from {args.videos}' if args.videos else ''}, npy, "
            f"short_side={SHORT_SIDE}, crop={CROP}, {FRAMES} frames, batches of {BATCH}, "
            f"{default_workers()} workers, torch threads {torch.get_num_threads()}; "
            f"wall-clock clips/s, steady state, {args.repeats} repeats"
        )
        rates: dict[str, list[float]] = {row: [] for row in ROWS}
        for r in range(args.repeats):
            for row in ROWS[r % 3 :] + ROWS[: r % 3]:
                rates[row].append(_rate(root, videos, row, args))
    base = max(rates[ROWS[0]])
    print(f"\n{'augmentation':<22} {'best':>8} {'median':>8} {'best / none':>12}")
    for row in ROWS:
        best = max(rates[row])
        print(f"{row:<22} {best:8.1f} {statistics.median(rates[row]):8.1f} {best / base:12.2f}")
    cpu = _aug_alone(2 if args.quick else 20)
    print(
        f"\nClipAugment alone, one ({BATCH}, {FRAMES}, 3, {CROP}, {CROP}) float32 batch, one "
        f"torch thread: {cpu:.1f} ms CPU ({BATCH * 1000 / cpu:.0f} clips/s per core)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
