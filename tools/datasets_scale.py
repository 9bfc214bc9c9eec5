"""What reading Kinetics-700 as downloaded costs: the CSV read, the dataset built, the missing-file
check, at full size.

    python tools/datasets_scale.py [--rows 650000] [--classes 700] [--missing 0.07]
                                   [--rounds 3] [--dir DIR]

Generates, once per `--dir` (default: a temporary folder, deleted after):

- `train.csv`: `--rows` rows in the official columns (`label,youtube_id,time_start,time_end,
  split,is_cc`), `--classes` class names of 2-4 words with spaces, some with an apostrophe or
  parentheses (as Kinetics' "passing American football (not in game)");
- `videos/<class with spaces as _>/<youtube_id>_<start:06d>_<end:06d>.mp4`: an empty file per row,
  except a `--missing` fraction of rows (the videos every copy of Kinetics lacks). Empty files
  are enough: nothing here opens a video.

then times, best of `--rounds`, wall clock (`time.perf_counter`) and this process's CPU time
(`time.process_time`, which other processes on a loaded machine disturb least; the load average
is printed), the steps interleaved by round:

- `kinetics(csv, root=videos)`: the CSV read, the class numbering, one listing of the root and
  one per class folder, the entries built (the rows without a file counted in `.missing`);
- `ClipDataset(entries, VideoSource(videos))`: the dataset built from them, the missing-file
  check included (`missing="error"`: none is missing, the reader left those out);
- `VideoSource(videos).missing_videos(ids)`: the missing-file check alone (one `os.scandir` per
  class folder), for the ids of every row, so the missing ones are found again;
- `load_videos(list)` and `ClipDataset(list, ...)` from the same entries written as an mmaction2
  `path label` list (`DatasetList.write`), for comparison with the generic path.

The figures in the docs' "Datasets" guide come from this tool on the 2-core development machine.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

WORDS = ("air playing passing riding tossing making shoveling brushing person's dog "
         "American football snow hair coin cake drumming guitar bike horse water (not "
         "in game) tea juggling balls skiing ice").split()  # fmt: skip


def class_names(n: int, rng: random.Random) -> list[str]:
    names: set[str] = set()
    while len(names) < n:
        names.add(" ".join(rng.sample(WORDS, rng.randint(2, 4))) + f" {len(names)}")
    return sorted(names)


def generate(folder: Path, rows: int, classes: int, missing: float) -> None:
    """The CSV and the tree of empty files (skipped when `folder` already holds them)."""
    done = folder / ".complete"
    if done.exists():
        return
    rng = random.Random(0)
    names = class_names(classes, rng)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
    lines = ["label,youtube_id,time_start,time_end,split,is_cc"]
    videos = folder / "videos"
    for name in names:
        (videos / name.replace(" ", "_")).mkdir(parents=True, exist_ok=True)
    for k in range(rows):
        name = names[k % classes]
        yid = "".join(rng.choice(alphabet) for _ in range(11))
        start = rng.randint(0, 290)
        cell = f'"{name}"' if "," in name else name
        lines.append(f"{cell},{yid},{start},{start + 10},train,0")
        if rng.random() >= missing:
            path = videos / name.replace(" ", "_") / f"{yid}_{start:06d}_{start + 10:06d}.mp4"
            path.touch()
    (folder / "train.csv").write_text("\n".join(lines) + "\n")
    done.touch()


def best_of(rounds: int, steps: dict[str, Callable[[], object]]) -> dict[str, tuple[float, float]]:
    """Best (wall-clock, CPU) seconds of each step, the steps interleaved within each round.
    The CPU time (`time.process_time`, this process's) is what a loaded machine disturbs
    least: the wall clock counts the time other processes held the cores."""
    wall = dict.fromkeys(steps, float("inf"))
    cpu = dict.fromkeys(steps, float("inf"))
    for _ in range(rounds):
        for name, step in steps.items():
            t0, c0 = time.perf_counter(), time.process_time()
            step()
            wall[name] = min(wall[name], time.perf_counter() - t0)
            cpu[name] = min(cpu[name], time.process_time() - c0)
    return {name: (wall[name], cpu[name]) for name in steps}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=650_000)
    parser.add_argument("--classes", type=int, default=700)
    parser.add_argument("--missing", type=float, default=0.07)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None, help="keep the generated data here")
    args = parser.parse_args()

    from vidload import ClipDataset, VideoSource
    from vidload.datasets import kinetics
    from vidload.manifest import load_videos

    folder = args.dir or Path(tempfile.mkdtemp(prefix="datasets_scale_"))
    try:
        t0 = time.perf_counter()
        generate(folder, args.rows, args.classes, args.missing)
        print(f"data: {folder} ({time.perf_counter() - t0:.1f} s to generate or find)")
        csv, videos = folder / "train.csv", folder / "videos"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the missing rows, said once per call
            entries = kinetics(csv, root=videos)
            entries.write(folder / "train.txt")
            ids = [e.video_id for e in entries] + [
                name.replace(" ", "_") + ".mp4" for name in entries.missing
            ]
            source = VideoSource(videos)
            steps: dict[str, Callable[[], object]] = {
                "kinetics(csv, root) -> entries": lambda: kinetics(csv, root=videos),
                "ClipDataset(entries, source)": lambda: ClipDataset(entries, source),
                "source.missing_videos(all ids)": lambda: source.missing_videos(ids),
                "load_videos(train.txt)": lambda: load_videos(folder / "train.txt"),
                "ClipDataset(train.txt, source)": lambda: ClipDataset(folder / "train.txt", source),
            }
            best = best_of(args.rounds, steps)
        print(
            f"{len(entries) + len(entries.missing)} rows, {len(entries.classes)} classes, "
            f"{len(entries)} found, {len(entries.missing)} missing; best of {args.rounds} "
            f"(wall clock), load average {os.getloadavg()[0]:.2f}"
        )
        print(f"| {'step':<34} | {'wall s':>7} | {'CPU s':>7} |")
        print(f"|{'-' * 36}|{'-' * 9}|{'-' * 9}|")
        for name, (wall, cpu) in best.items():
            print(f"| {name:<34} | {wall:7.2f} | {cpu:7.2f} |")
    finally:
        if args.dir is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
