"""Cold vs warm epoch through a DataLoader, with and without `ReadAheadSampler` (byte ranges).

    python tools/readahead_cold.py DIR [--videos 128] [--workers 2] [--repeats 2]
                                       [--formats npy,hdf5,jpeg]

Writes `--videos` copies of one 175-frame 320x240 clip (a blurred noise texture panning, q95
JPEG) as npy files, HDF5 files and JPEG frame folders under DIR/<format>/ once, then per format
times epochs of 8-frame clips (batches of 16, random order, a fresh dataset and DataLoader each
epoch): warm, cold (every file of the format evicted with posix_fadvise(DONTNEED) first), cold
with read-ahead (lookahead 16) and warm with read-ahead; best of `--repeats` wall-clock times.
Prints the times and the ratios to warm (`make_loader` leaves read-ahead off for JPEG folders:
the jpeg rows show what it would give). Linux only (posix_fadvise).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, RandomSampler

from vidload._cv2 import cv2
from vidload.dataset import ClipDataset
from vidload.prefetch import ReadAheadSampler
from vidload.sources.hdf5 import Hdf5Source, write_hdf5
from vidload.sources.jpeg import JpegSource, write_jpeg_folder
from vidload.sources.jpeg_decode import encode_jpeg
from vidload.sources.npy import NpySource, write_npy

FRAMES = 175
FORMATS = {"npy": NpySource, "hdf5": Hdf5Source, "jpeg": JpegSource}


def _write(root: Path, n: int) -> None:
    rng = np.random.default_rng(0)
    texture = cv2.GaussianBlur(rng.integers(0, 256, (304, 384, 3), dtype=np.uint8), (0, 0), 3)
    frames = [
        encode_jpeg(np.ascontiguousarray(texture[i % 64 : i % 64 + 240, 2 * i % 64 :][:, :320]))
        for i in range(FRAMES)
    ]
    for fmt in FORMATS:
        (root / fmt).mkdir(parents=True, exist_ok=True)
    for k in range(n):
        if not (root / "jpeg" / f"v{k}").exists():  # written last: the others are there
            write_npy(root / "npy" / f"v{k}.npy", frames)
            write_hdf5(root / "hdf5" / f"v{k}.h5", frames)
            write_jpeg_folder(root / "jpeg" / f"v{k}", frames)


def _evict(root: Path) -> None:
    for folder, _, names in os.walk(root):
        for name in names:
            fd = os.open(os.path.join(folder, name), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def _epoch(root: Path, source, n: int, workers: int, *, read_ahead: bool, cold: bool) -> float:
    ds = ClipDataset([(f"v{k}.mp4", k) for k in range(n)], source, num_frames=8, seed=0)
    sampler = RandomSampler(ds, generator=torch.Generator().manual_seed(1))
    if read_ahead:
        sampler = ReadAheadSampler(sampler, ds, lookahead=16)
    loader = DataLoader(ds, batch_size=16, sampler=sampler, num_workers=workers)
    if cold:
        _evict(root)
    start = time.perf_counter()
    for _ in loader:
        pass
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--videos", type=int, default=128)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--formats", default=",".join(FORMATS))
    args = parser.parse_args()
    formats = args.formats.split(",")
    if not set(formats) <= set(FORMATS):
        parser.error(f"--formats ({args.formats}) must name some of {', '.join(FORMATS)}")
    torch.set_num_threads(1)
    _write(args.dir, args.videos)
    runs = (("warm", False, False), ("cold", False, True), ("cold+RA", True, True))
    runs += (("warm+RA", True, False),)
    for name in formats:
        folder = args.dir / name
        best: dict[str, float] = {}
        for _ in range(args.repeats):
            for key, ahead, cold in runs:
                make = FORMATS[name]
                if not cold:  # warm the cache first
                    _epoch(
                        folder,
                        make(folder),
                        args.videos,
                        args.workers,
                        read_ahead=ahead,
                        cold=False,
                    )
                t = _epoch(
                    folder, make(folder), args.videos, args.workers, read_ahead=ahead, cold=cold
                )
                best[key] = min(best.get(key, float("inf")), t)
        ratios = ", ".join(f"{k} {v / best['warm']:.2f}x" for k, v in best.items())
        print(f"{name}: warm {best['warm']:.3f} s/epoch; ÷ warm: {ratios}")


if __name__ == "__main__":
    main()
