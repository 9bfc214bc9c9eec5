"""Quickstart: sample videos -> ClipDataset -> DataLoader with 2 workers -> clips/s.

Generates a few UCF101-like sample videos (cached in --data), loads 8-frame segment clips
straight from the videos, then converts them to per-video HDF5 with `vidload.convert` and
loads the same clips from there. Prints the batch shape and clips/s for both sources.

    python examples/quickstart.py [--data DIR] [--workers 2] [--num-videos 8]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from torch.utils.data import DataLoader

from vidload import ClipDataset, Hdf5Source, VideoSource
from vidload.convert import convert
from vidload.synth import SynthSpec, make_sample_videos


def clips_per_second(dataset: ClipDataset, workers: int, epochs: int = 2) -> float:
    """Iterate `dataset` `epochs` times through a DataLoader; clips/s of the last epoch."""
    loader = DataLoader(
        dataset, batch_size=8, shuffle=True, num_workers=workers, persistent_workers=workers > 0
    )
    rate = 0.0
    for epoch in range(epochs):  # the first epoch includes worker start-up
        dataset.set_epoch(epoch)
        start, clips = time.perf_counter(), 0
        for clip, label in loader:  # noqa: B007 (shapes printed below)
            clips += clip.shape[0]
        rate = clips / (time.perf_counter() - start)
    print(f"  batch: clip {tuple(clip.shape)} {clip.dtype}, label {tuple(label.shape)}")
    return rate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=Path(tempfile.gettempdir()) / "vidload-quickstart",
        help="where the sample videos and their HDF5 go, reused (default: under the temp folder)",
    )
    parser.add_argument("--workers", type=int, default=2, help="DataLoader workers (2)")
    parser.add_argument("--num-videos", type=int, default=8, help="sample videos (8)")
    args = parser.parse_args(argv)

    videos_dir, h5_dir = args.data / "videos", args.data / "hdf5"
    ids = make_sample_videos(videos_dir, SynthSpec(num_videos=args.num_videos, seconds=4.0))
    labels = {name: i for i, name in enumerate(sorted({v.split("/")[0] for v in ids}))}
    videos = [(v, labels[v.split("/")[0]]) for v in ids]
    print(f"{len(videos)} sample videos in {videos_dir}")

    ds = ClipDataset(videos, VideoSource(videos_dir), num_frames=8, seed=0)
    print(f"VideoSource (seek-and-decode), {args.workers} workers:")
    print(f"  {clips_per_second(ds, args.workers):.1f} clips/s")

    report = convert(videos_dir, h5_dir, to="hdf5", progress=True)
    print(
        f"HDF5 in {h5_dir}: {len(report.converted)} converted, {len(report.skipped)} already"
        f" done, {len(report.failed)} failed"
    )
    ds = ClipDataset(videos, Hdf5Source(h5_dir), num_frames=8, seed=0)  # same ids, same list
    print(f"Hdf5Source (JPEG bytes per video), {args.workers} workers:")
    print(f"  {clips_per_second(ds, args.workers):.1f} clips/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
