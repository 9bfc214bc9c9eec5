"""What the seek check against a persisted index's frame digests costs (issue 31, part 3).

    python tools/damage_check_cost.py [VIDEO ...] [--clips N] [--rounds R]

Each VIDEO (default: the clips of ../shared/videos and ../shared/videos-extra) is copied twice
into a temporary folder, each copy with its persisted index (`VideoSource.write_index`): one as
written (format 3, each frame's digest), one with the digests left out (format 2, as before
issue 31). Then N clips of 8 random frames (seed 0) are read from each copy by one source per
copy, the one without digests also without the decoder's corrupt-flag check (the reader before
issue 31); R rounds, the two readers interleaved (which goes first alternates), each figure the
best round's CPU time of this process (`time.process_time`) for the N clips. It prints both, and
the check's share: (checked - unchecked) / unchecked.

Recording the digests (`write_index`: a single-threaded full decode with each frame hashed) is
timed the same way against a full decode without them; and the digest alone (what the check
adds to a read: one for each frame returned), on up to 100 decoded frames held in memory, as a
share of an unchecked clip's read: a figure that load on the machine disturbs less than the
difference of two reads.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import av
import numpy as np

from vidload._layout import index_path
from vidload.sources._video_index import frame_digest
from vidload.sources.video import VideoSource

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
SUFFIXES = (".mp4", ".avi", ".webm", ".mkv", ".mov")


def default_videos() -> list[Path]:
    found = (p for d in ("videos", "videos-extra") for p in (SHARED / d).glob("*"))
    return sorted(p for p in found if p.suffix in SUFFIXES)


def strip_digests(video: Path) -> None:
    """Rewrite `video`'s sidecar as format 2: the same index without digests."""
    sidecar = index_path(video)
    first, second = sidecar.read_bytes().split(b"\n", 1)
    doc = json.loads(first)
    doc.pop("digests")
    doc["format"] = 2
    sidecar.write_bytes(json.dumps(doc, separators=(",", ":")).encode() + b"\n" + second)


def interleaved(runs: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """The best CPU time of each run over `rounds` rounds, the runs' order alternating."""
    names = list(runs)
    for name in names:
        runs[name]()  # warm up: indexes loaded, files open, page cache
    best = dict.fromkeys(names, float("inf"))
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            start = time.process_time()
            runs[name]()
            best[name] = min(best[name], time.process_time() - start)
    return best


def measure(video: Path, work: Path, clips: int, rounds: int) -> None:
    checked_dir, plain_dir = work / "checked", work / "plain"
    for d in (checked_dir, plain_dir):
        d.mkdir(parents=True, exist_ok=True)
        shutil.copy(video, d / video.name)
        VideoSource(d).write_index(video.name)
    strip_digests(plain_dir / video.name)
    checked = VideoSource(checked_dir)
    plain = VideoSource(plain_dir)
    plain._check_corrupt = False
    n = checked.actual_frames(video.name)
    assert plain.actual_frames(video.name) == n
    rng = np.random.default_rng(0)
    wanted = [np.sort(rng.choice(n, min(8, n), replace=False)) for _ in range(clips)]

    def reads(src: VideoSource) -> Callable[[], None]:
        def run() -> None:
            for clip in wanted:
                src.read(video.name, clip)

        return run

    best = interleaved({"checked": reads(checked), "unchecked": reads(plain)}, rounds)
    share = (best["checked"] - best["unchecked"]) / best["unchecked"]
    print(
        f"{video.name:28s} {n:4d} frames  {clips} clips of 8: unchecked "
        f"{1e3 * best['unchecked'] / clips:7.2f} ms/clip, checked "
        f"{1e3 * best['checked'] / clips:7.2f} ms/clip: the check {100 * share:+.1f}%"
    )

    bare = work / "bare"  # no index: a fresh source decodes the file in full
    bare.mkdir()
    shutil.copy(video, bare / video.name)

    def decode(digests: bool) -> Callable[[], None]:
        def run() -> None:
            src = VideoSource(bare, cache_size=0)
            src._exact_index(src._file(video.name), digests=digests)

        return run

    full = interleaved({"with": decode(True), "without": decode(False)}, max(1, rounds // 2))
    extra = (full["with"] - full["without"]) / full["without"]
    print(
        f"{'':28s} full decode: {1e3 * full['without']:7.1f} ms, recording the digests "
        f"{1e3 * full['with']:7.1f} ms ({100 * extra:+.1f}%)"
    )
    with av.open(str(video)) as container:  # the digest alone, on frames held in memory
        stream = container.streams.video[0]
        stream.codec_context.thread_count = 1
        frames = list(container.decode(stream))[:100]
    digest = interleaved({"digest": lambda: [frame_digest(f) for f in frames]}, rounds)["digest"]
    print(
        f"{'':28s} a frame's digest {1e3 * digest / len(frames):.3f} ms, 8 of them "
        f"{100 * 8 * digest / len(frames) / (best['unchecked'] / clips):.1f}% of a clip's read"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("videos", nargs="*", type=Path)
    parser.add_argument("--clips", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    videos = args.videos or default_videos()
    if not videos:
        print(f"no videos given and none under {SHARED}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        for k, video in enumerate(videos):
            measure(video, Path(tmp) / str(k), args.clips, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
