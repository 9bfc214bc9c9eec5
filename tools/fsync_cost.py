"""What the durable writes of `vidload._atomic` cost: fsync of files already written.

    python tools/fsync_cost.py DIR [--files 100] [--size 20000] [--repeats 3]

Writes `--files` files of `--size` random bytes into a fresh folder under DIR (a JPEG frame is
~20 KB at 320x240, q95), then times `fsync` of each (what `fsync_tree` does to a JPEG container
before its rename) and of the folder; best of `--repeats`. Prints milliseconds per file. Run it
on the disk that holds the output: the cost is the disk's, not vidload's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

from vidload._atomic import fsync_tree


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir")
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--size", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    os.makedirs(args.dir, exist_ok=True)
    best = float("inf")
    for _ in range(args.repeats):
        folder = tempfile.mkdtemp(dir=args.dir, prefix="fsync-cost-")
        try:
            for i in range(args.files):
                with open(os.path.join(folder, f"{i:05d}"), "wb") as f:
                    f.write(os.urandom(args.size))
            start = time.perf_counter()
            fsync_tree(folder)
            best = min(best, time.perf_counter() - start)
        finally:
            shutil.rmtree(folder)
    print(
        f"fsync of {args.files} files of {args.size} bytes and their folder: {best * 1e3:.1f} ms "
        f"({best * 1e3 / args.files:.2f} ms a file; best of {args.repeats})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
