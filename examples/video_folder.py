"""A ClipDataset over any folder of videos, iterated through a DataLoader.

    python examples/video_folder.py /path/to/videos [--workers 2] [--batch-size 16]
                                    [--num-frames 8] [--short-side 128] [--crop 112]

Every video under the folder (searched recursively) becomes one item; its label is the index
of its parent folder's name (UCF101/Kinetics layout: `<class>/<video>.mp4`). Every clip is
scaled to `--short-side` and cropped to `--crop` at a random position (training clips), so
videos of different sizes batch together: the default collate stacks clips of one shape.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from torch.utils.data import DataLoader

from vidload import ClipDataset, VideoSource
from vidload.sources.base import VIDEO_EXTENSIONS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="folder of videos, searched recursively")
    parser.add_argument("--workers", type=int, default=2, help="DataLoader workers (2)")
    parser.add_argument("--batch-size", type=int, default=16, help="clips per batch (16)")
    parser.add_argument("--num-frames", type=int, default=8, help="frames per clip (8)")
    parser.add_argument("--short-side", type=int, default=128, help="scale to this (128)")
    parser.add_argument("--crop", type=int, default=112, help="square crop (112)")
    args = parser.parse_args(argv)

    paths = sorted(p for p in args.root.rglob("*") if p.suffix.lower() in VIDEO_EXTENSIONS)
    if not paths:
        raise SystemExit(f"{args.root}: no video files found")
    ids = [p.relative_to(args.root).as_posix() for p in paths]
    classes = sorted({Path(v).parent.as_posix() for v in ids})
    videos = [(v, classes.index(Path(v).parent.as_posix())) for v in ids]

    ds = ClipDataset(
        videos,
        VideoSource(args.root),
        num_frames=args.num_frames,
        seed=0,
        short_side=args.short_side,
        crop=args.crop,
    )
    loader = DataLoader(
        ds,
        batch_size=args.batch_size,
        shuffle=True,
        num_workers=args.workers,
        persistent_workers=args.workers > 0,
    )
    start, clips = time.perf_counter(), 0
    for clip, label in loader:
        clips += clip.shape[0]
        print(f"batch {tuple(clip.shape)} {clip.dtype} labels {label.tolist()}")
    print(f"{clips} clips in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
