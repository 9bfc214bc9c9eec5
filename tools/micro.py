"""Micro-measurements behind two design choices in the item path (CPU time, one thread).

    python tools/micro.py to_tensor [--repeats 200]   # vidload._dataset.items.to_tensor
    python tools/micro.py resize [--repeats 200]      # vidload.transforms.resize_into

to_tensor: 8 frames of 320x240 uint8 (k, H, W, 3) into a contiguous (k, 3, H, W) tensor three
ways: `cv2.split` into the output's planes (what vidload does), numpy's transposing copy, and
torch's `permute().contiguous()`.

resize: one 320x240 frame (a q95 JPEG of a blurred noise texture, decoded) to 171x128, the
shrink below 2x that follows a DCT-scaled decode: cv2 INTER_AREA against INTER_LINEAR (what
vidload uses below a 2x shrink), and the mean absolute difference between the two results.

Each figure is the best of `--repeats` calls, in microseconds of this thread's CPU time
(`time.thread_time`), so other processes on a shared machine do not count.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import torch

from vidload._cv2 import cv2
from vidload._dataset.items import to_tensor
from vidload.sources.jpeg_decode import decode_jpeg, encode_jpeg


def _best_us(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up: first-call allocations and lazy initialisation
    best = float("inf")
    for _ in range(repeats):
        start = time.thread_time()
        fn()
        best = min(best, time.thread_time() - start)
    return best * 1e6


def _texture(height: int, width: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    noise = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    return cv2.GaussianBlur(noise, (0, 0), 3)


def to_tensor_rows(repeats: int) -> list[tuple[str, float]]:
    frames = np.stack([np.roll(_texture(240, 320), 4 * k, axis=1) for k in range(8)])
    expected = torch.from_numpy(frames).permute(0, 3, 1, 2).contiguous()
    assert torch.equal(to_tensor(frames, "TCHW"), expected)
    return [
        (
            "cv2.split into the planes (vidload)",
            _best_us(lambda: to_tensor(frames, "TCHW"), repeats),
        ),
        (
            "np.array(frames.transpose(0, 3, 1, 2), order='C')",
            _best_us(lambda: np.array(frames.transpose(0, 3, 1, 2), order="C"), repeats),
        ),
        (
            "torch permute(0, 3, 1, 2).contiguous()",
            _best_us(lambda: torch.from_numpy(frames).permute(0, 3, 1, 2).contiguous(), repeats),
        ),
    ]


def resize_rows(repeats: int) -> list[tuple[str, float]]:
    frame = decode_jpeg(encode_jpeg(_texture(240, 320), quality=95))
    size = (171, 128)  # (width, height): short side 128
    area = cv2.resize(frame, size, interpolation=cv2.INTER_AREA)
    linear = cv2.resize(frame, size, interpolation=cv2.INTER_LINEAR)
    diff = float(np.abs(area.astype(np.int16) - linear).mean())
    return [
        (
            "INTER_AREA",
            _best_us(lambda: cv2.resize(frame, size, interpolation=cv2.INTER_AREA), repeats),
        ),
        (
            "INTER_LINEAR (vidload, below a 2x shrink)",
            _best_us(lambda: cv2.resize(frame, size, interpolation=cv2.INTER_LINEAR), repeats),
        ),
        ("mean |INTER_AREA - INTER_LINEAR| (of 255, not us)", diff),
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("to_tensor", "resize"))
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rows = to_tensor_rows(args.repeats) if args.what == "to_tensor" else resize_rows(args.repeats)
    for name, value in rows:
        print(f"{value:10.2f}  {name}")


if __name__ == "__main__":
    main()
