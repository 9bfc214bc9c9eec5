"""PSNR and bytes per frame of vidload's JPEG encode for each quality x chroma subsampling.

    python tools/jpeg_quality.py [DATA ...] [--synth DIR] [--every N] [--qualities 80,90,95]
                                 [--subsamplings 420,444]

DATA: folders of videos (every video file under them). `--synth DIR` adds the benchmark's
sample set (`vidload.synth`, 8 UCF101-like 320x240 videos, generated into DIR once). Every
`--every`-th decoded frame (default 10) is encoded with `vidload.sources.jpeg_decode.encode_jpeg`
and decoded again; PSNR is over all pixels and channels of the RGB frame against the decoded
video frame (the pixels `convert` encodes), pooled per data set (10 log10(255^2 / mean MSE));
decode time is `decode_jpeg`'s CPU time per frame, best of 3 passes. Prints a Markdown table per
data set.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

from vidload.sources.base import VIDEO_EXTENSIONS
from vidload.sources.jpeg_decode import decode_jpeg, encode_jpeg
from vidload.sources.video import VideoSource


def frames_of(folder: Path, every: int) -> list[np.ndarray]:
    """Every `every`-th frame of every video under `folder`, uint8 (H, W, 3) RGB."""
    src = VideoSource(folder, threads=1)
    out = []
    for path in sorted(p for p in folder.rglob("*") if p.suffix.lower() in VIDEO_EXTENSIONS):
        vid = path.relative_to(folder).as_posix()
        for i, rgb in enumerate(src.iter_frames(vid)):
            if i % every == 0:
                out.append(np.ascontiguousarray(rgb))
    return out


def measure(frames: list[np.ndarray], quality: int, subsampling: str) -> tuple[float, float, float]:
    """(PSNR dB, mean bytes per frame, decode CPU us per frame) over `frames`; the decode time
    is `decode_jpeg`'s, best of 3 passes (process CPU time)."""
    sq_err = 0.0
    values = 0
    encoded = [encode_jpeg(rgb, quality, subsampling=subsampling) for rgb in frames]
    for rgb, data in zip(frames, encoded, strict=True):
        diff = decode_jpeg(data).astype(np.int32) - rgb
        sq_err += float(np.square(diff, dtype=np.int64).sum())
        values += diff.size
    best = math.inf
    for _ in range(3):
        start = time.process_time()
        for data in encoded:
            decode_jpeg(data)
        best = min(best, time.process_time() - start)
    mse = sq_err / values
    psnr = math.inf if mse == 0 else 10 * math.log10(255**2 / mse)
    return psnr, sum(map(len, encoded)) / len(frames), 1e6 * best / len(frames)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("data", nargs="*", type=Path, help="folders of videos")
    p.add_argument("--synth", type=Path, metavar="DIR", help="add the bench's sample set")
    p.add_argument("--every", type=int, default=10, metavar="N", help="every N-th frame (10)")
    p.add_argument("--qualities", default="80,90,95")
    p.add_argument("--subsamplings", default="420,444")
    args = p.parse_args(argv)
    sets: list[tuple[str, Path]] = [(str(d), d) for d in args.data]
    if args.synth is not None:
        from vidload.synth import SynthSpec, make_sample_videos

        make_sample_videos(args.synth, SynthSpec(), progress=False)
        sets.insert(0, ("sample set (vidload.synth, 8 videos 320x240)", args.synth))
    if not sets:
        p.error("give DATA folders and/or --synth DIR")
    qualities = [int(q) for q in args.qualities.split(",")]
    subs = args.subsamplings.split(",")
    for name, folder in sets:
        frames = frames_of(folder, args.every)
        h, w = frames[0].shape[:2]
        print(f"\n{name}: {len(frames)} frames (every {args.every}th), first {w}x{h}\n")
        print("| quality | subsampling | PSNR dB | bytes/frame | × 4:2:0 bytes | decode µs/frame |")
        print("|--------:|:-----------:|--------:|------------:|--------------:|----------------:|")
        for q in qualities:
            base = None
            for s in subs:
                psnr, size, us = measure(frames, q, s)
                base = size if base is None else base
                name_s = f"{s[0]}:{s[1]}:{s[2]}"
                print(
                    f"| {q} | {name_s} | {psnr:.2f} | {size:,.0f} | {size / base:.2f}× | {us:.0f} |"
                )
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
