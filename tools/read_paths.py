"""The measurements behind the sources' design choices, one command to reproduce them.

    python tools/read_paths.py [VIDEO] [--work DIR] [--clips N] [--repeats R]

VIDEO (default `../shared/videos/mma_test.mp4`, 300 frames of 340x256) is decoded once, its
frames encoded at q95 (`encode_jpeg`) and written by vidload's own writers into DIR (a temporary
folder by default): a JPEG folder, an HDF5 file and an npy file, plus an HDF5 file in the
rejected vlen layout. Then N clips of 8 random frames (seed 0) are read every way below; each
figure is CPU time (`time.process_time`) per clip or per frame, the best of R passes, in this
one process. The docstrings that quote these figures name this command:

- `hdf5`: `sources.hdf5` (layout, handles kept open, `_opened`);
- `npy`: `sources.npy` (read modes);
- `jpeg`: `sources.jpeg.read_frame_file` (one `os.read` against `np.fromfile`);
- `decode`: `sources.jpeg_decode` (decoders, DCT scales, encoders); each decoded array is
  dropped before the next decode, as a read's is, so no row pays for memory a list kept alive;
- `items`: `_scratch` (a `ClipDataset` item through `ContainerSource.read_transient`, the
  default, against the public `read`; also minor page faults per item; each row in a fresh
  process);
- `video`: `sources.video` (`frame_index="decode"`, skip_frame=NONREF) and `_video_seek.converter`
  (one swscale thread).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np
import simplejpeg

from vidload._cv2 import cv2
from vidload.sources.hdf5 import Hdf5Source, write_hdf5
from vidload.sources.jpeg import JpegSource, read_frame_file, write_jpeg_folder
from vidload.sources.jpeg_decode import decode_jpeg, decode_many, encode_jpeg, jpeg_size
from vidload.sources.npy import NpySource, write_npy
from vidload.sources.video import VideoSource

Clip = tuple[str, np.ndarray]


def best_cpu(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """The smallest CPU time (all threads of this process) and the smallest wall-clock time
    of `repeats` calls of `fn`, in seconds."""
    fn()  # warm up (caches, page cache, lazy imports)
    cpu = wall = float("inf")
    for _ in range(repeats):
        start, start_wall = time.process_time(), time.perf_counter()
        fn()
        cpu = min(cpu, time.process_time() - start)
        wall = min(wall, time.perf_counter() - start_wall)
    return cpu, wall


def per_clip(clips: list[Clip], read: Callable[[str, np.ndarray], object]) -> Callable[[], None]:
    def run() -> None:
        for vid, idx in clips:
            read(vid, idx)

    return run


def show(label: str, seconds: tuple[float, float], count: int, unit: str = "clip") -> None:
    cpu, wall = (1e6 * s / count for s in seconds)
    print(f"    {label:<58} {cpu:9.1f} us/{unit} CPU ({wall:.1f} wall)")


def build(video: Path, work: Path) -> tuple[str, list[bytes], int, int]:
    """Convert `video` into every container under `work` (once); (id, jpegs, height, width)."""
    jpegs = [encode_jpeg(f, quality=95) for f in VideoSource(video.parent).iter_frames(video.name)]
    vid = "v"
    if not (work / "npy" / "v.npy").exists():
        write_jpeg_folder(work / "jpeg" / vid, jpegs)
        write_hdf5(work / "hdf5" / "v.h5", jpegs)
        write_npy(work / "npy" / "v.npy", jpegs)
        with h5py.File(work / "vlen.h5", "w") as f:
            ds = f.create_dataset("frames", (len(jpegs),), dtype=h5py.vlen_dtype(np.uint8))
            for i, b in enumerate(jpegs):
                ds[i] = np.frombuffer(b, np.uint8)
    h, w = decode_jpeg(jpegs[0]).shape[:2]
    return vid, jpegs, h, w


def hdf5_rows(work: Path, clips: list[Clip], repeats: int) -> None:
    print("hdf5 (sources.hdf5): 8 frames' bytes per clip")
    n = len(clips)
    concat_path, vlen_path = work / "hdf5" / "v.h5", work / "vlen.h5"

    def concat(f: h5py.File, offsets: np.ndarray, idx: np.ndarray) -> None:
        frames = f["frames"]
        for i in idx.tolist():
            frames[offsets[i] : offsets[i + 1]]

    def vlen(f: h5py.File, idx: np.ndarray) -> None:
        frames = f["frames"]
        for i in idx.tolist():
            frames[i]

    def concat_per_clip() -> None:
        for _, idx in clips:
            with h5py.File(concat_path, "r") as f:
                concat(f, f["offsets"][()], idx)

    def vlen_per_clip() -> None:
        for _, idx in clips:
            with h5py.File(vlen_path, "r") as f:
                vlen(f, idx)

    with h5py.File(concat_path, "r") as cf, h5py.File(vlen_path, "r") as vf:
        offsets = cf["offsets"][()]  # read once with the open file, as Hdf5Source keeps them
        rows = [
            ("concatenated bytes + offsets, open per clip", concat_per_clip),
            ("vlen bytes (h5py.vlen_dtype(uint8)), open per clip", vlen_per_clip),
            (
                "concatenated bytes + offsets, kept open (h5py slices)",
                lambda: [concat(cf, offsets, idx) for _, idx in clips],
            ),
            ("vlen bytes, kept open", lambda: [vlen(vf, idx) for _, idx in clips]),
        ]
        for label, run in rows:
            show(label, best_cpu(run, repeats), n)
    src = Hdf5Source(work / "hdf5")
    show(
        "Hdf5Source.read_encoded (kept open, os.pread at the offset)",
        best_cpu(per_clip(clips, src.read_encoded), repeats),
        n,
    )


def npy_rows(work: Path, clips: list[Clip], repeats: int) -> None:
    print("npy (sources.npy): 8 frames' bytes per clip")
    n = len(clips)
    path = work / "npy" / "v.npy"
    for mode in ("mmap", "read"):
        src = NpySource(work / "npy", mode=mode)  # type: ignore[arg-type]
        show(
            f'NpySource(mode="{mode}").read_encoded',
            best_cpu(per_clip(clips, src.read_encoded), repeats),
            n,
        )

    def np_load(mmap_mode: str | None) -> Callable[[], None]:
        def run() -> None:
            for _, idx in clips:
                rows = np.load(path, mmap_mode=mmap_mode)
                [rows[i].tobytes() for i in idx.tolist()]

        return run

    show('np.load(mmap_mode="r") per clip', best_cpu(np_load("r"), repeats), n)
    show("np.load of the whole file per clip", best_cpu(np_load(None), repeats), n)


def jpeg_rows(work: Path, clips: list[Clip], repeats: int) -> None:
    print("jpeg (sources.jpeg.read_frame_file): one frame file")
    files = [work / "jpeg" / "v" / f"img_{i + 1:05d}.jpg" for _, idx in clips for i in idx]
    show(
        "read_frame_file (open, fstat, one os.read)",
        best_cpu(lambda: [read_frame_file(p, 0) for p in files], repeats),
        len(files),
        "frame",
    )
    show(
        "np.fromfile",
        best_cpu(lambda: [np.fromfile(p, np.uint8) for p in files], repeats),
        len(files),
        "frame",
    )
    folder = work / "jpeg" / "v"
    show(
        "os.listdir of the frame folder (counting its frames)",
        best_cpu(lambda: os.listdir(folder), repeats),
        1,
        "folder",
    )
    show(
        "os.stat of every frame file (what counting sizes would add)",
        best_cpu(lambda: [os.stat(p) for p in folder.iterdir()], repeats),
        1,
        "folder",
    )
    src = JpegSource(work / "jpeg")
    show(
        "JpegSource.read_encoded (per clip)",
        best_cpu(per_clip(clips, src.read_encoded), repeats),
        len(clips),
    )


def decode_rows(jpegs: list[bytes], h: int, w: int, clips: list[Clip], repeats: int) -> None:
    print(f"decode (sources.jpeg_decode): {w}x{h} q95 frames")
    frames = [jpegs[i] for _, idx in clips for i in idx.tolist()]
    k = len(frames)
    arrays = [np.frombuffer(b, np.uint8) for b in frames]
    show(
        "cv2.imdecode(IMREAD_COLOR_RGB)",
        best_cpu(lambda: [cv2.imdecode(a, cv2.IMREAD_COLOR_RGB) is None for a in arrays], repeats),
        k,
        "frame",
    )
    show(
        "simplejpeg.decode_jpeg",
        best_cpu(
            lambda: [simplejpeg.decode_jpeg(b, colorspace="RGB") is None for b in frames], repeats
        ),
        k,
        "frame",
    )
    show(
        "jpeg_size (the header only)",
        best_cpu(lambda: [jpeg_size(b) for b in frames], repeats),
        k,
        "frame",
    )
    out = np.empty((8, h, w, 3), np.uint8)

    def into_buffer() -> None:
        for j, b in enumerate(frames):
            simplejpeg.decode_jpeg(b, colorspace="RGB", buffer=out[j % 8], strict=True)

    show(
        "simplejpeg.decode_jpeg(buffer=) into a reused (8, H, W, 3)",
        best_cpu(into_buffer, repeats),
        k,
        "frame",
    )
    show(
        "decode_many, a new (8, H, W, 3) clip array per call",
        best_cpu(lambda: [decode_many(frames[j : j + 8]) is None for j in range(0, k, 8)], repeats),
        k,
        "frame",
    )
    for label, factor in (("1/1", 1), ("7/8", 7 / 8), ("1/2", 1 / 2)):
        out_h, out_w = round(h * factor), round(w * factor)

        def scaled(out_h: int = out_h, out_w: int = out_w, factor: float = factor) -> None:
            for b in frames:
                simplejpeg.decode_jpeg(
                    b, colorspace="RGB", min_height=out_h, min_width=out_w, min_factor=1 / factor
                )

        show(f"simplejpeg at DCT scale {label}", best_cpu(scaled, repeats), k, "frame")
    rgbs = [decode_jpeg(b) for b in frames[:64]]
    show(
        "encode_jpeg (simplejpeg, q95, 4:2:0)",
        best_cpu(lambda: [encode_jpeg(r, 95) for r in rgbs], repeats),
        len(rgbs),
        "frame",
    )
    show(
        "cv2.imencode (q95, incl. RGB to BGR)",
        best_cpu(
            lambda: [
                cv2.imencode(
                    ".jpg", cv2.cvtColor(r, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, 95]
                )
                for r in rgbs
            ],
            repeats,
        ),
        len(rgbs),
        "frame",
    )


class _PublicRead:
    """Mixin: `read` overridden, so `ClipDataset` takes the public path (a new array per clip)."""

    def read(self, video_id, indices, *, geometry=None):
        return super().read(video_id, indices, geometry=geometry)  # type: ignore[misc]


def _item_row(
    kind: str, root: Path, geometry: dict, public: bool, repeats: int, num_items: int
) -> tuple[tuple[float, float], float]:
    """In a fresh process: best (CPU, wall) seconds of `num_items` items, and minor faults/item."""
    import resource

    from vidload import ClipDataset

    cls = {"jpeg": JpegSource, "hdf5": Hdf5Source, "npy": NpySource}[kind]
    if public:
        cls = type(f"Public{cls.__name__}", (_PublicRead, cls), {})
    ds = ClipDataset([("v", 0)] * num_items, cls(root), num_frames=8, seed=0, **geometry)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    seconds = best_cpu(lambda: [ds[i] is None for i in range(num_items)], repeats)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    return seconds, faults / ((repeats + 1) * num_items)


def item_rows(work: Path, repeats: int, num_items: int) -> None:
    """`ClipDataset` items of 8 frames, full-size and with short_side=128, crop=112, from each
    container: decoded into the per-thread scratch (`read_transient`, what the dataset does)
    against the public `read` (forced by a subclass that overrides it; a new array per clip).
    Each row runs in a fresh process (forked from a fork server that has done the imports):
    what glibc's allocator does with a freed clip depends on what the process allocated
    before, so rows sharing a process would measure each other's leftovers (with them, the
    public path's faults came and went between runs)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    print("items (_scratch): ClipDataset[i], 8 frames, TCHW tensor; minor page faults per item")
    print("  each row in a fresh process")
    # a fork server started once, with the imports done: each row forks a fresh process from
    # it (no row's leftovers, as with spawn) without paying torch's import twelve times
    fresh = multiprocessing.get_context("forkserver")
    fresh.set_forkserver_preload(["vidload", "vidload.sources", "torch", __name__])
    for kind, name in (("jpeg", "JpegSource"), ("hdf5", "Hdf5Source"), ("npy", "NpySource")):
        for geometry in ({}, {"short_side": 128, "crop": 112}):
            for label, public in (("read_transient", False), ("read (new array)", True)):
                with ProcessPoolExecutor(1, mp_context=fresh) as pool:
                    seconds, faults = pool.submit(
                        _item_row, kind, work / kind, geometry, public, repeats, num_items
                    ).result()
                what = "short_side=128, crop=112" if geometry else "full size"
                show(f"{name}, {what}, {label}", seconds, num_items, "item")
                print(f"{'':62}{faults:7.0f} faults/item")


def video_rows(video: Path, clips: list[Clip], repeats: int) -> None:
    print(f"video (sources.video): {video.name}")
    root, name = video.parent, video.name
    vclips = [(name, idx) for _, idx in clips]
    full = best_cpu(lambda: VideoSource(root).actual_frames(name), max(1, repeats // 2))
    show("a full sequential decode (frame_index='decode', per file)", full, 1, "file")
    src = VideoSource(root)
    show(
        "VideoSource.read, 8 frames (skip_frame=NONREF on)",
        best_cpu(per_clip(vclips, src.read), repeats),
        len(vclips),
    )
    plain = VideoSource(root)
    plain._skip_nonref = False
    show(
        "VideoSource.read, 8 frames (skip_frame=NONREF off)",
        best_cpu(per_clip(vclips, plain.read), repeats),
        len(vclips),
    )
    import av

    with av.open(str(video)) as c:
        decoded = [f for _, f in zip(range(32), c.decode(video=0), strict=False)]
        one = best_cpu(lambda: [f.to_ndarray(format="rgb24", threads=1) for f in decoded], repeats)
        auto = best_cpu(lambda: [f.to_ndarray(format="rgb24") for f in decoded], repeats)
    show("frame.to_ndarray(rgb24, threads=1)", one, len(decoded), "frame")
    show("frame.to_ndarray(rgb24) (PyAV's default threads)", auto, len(decoded), "frame")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "video",
        nargs="?",
        type=Path,
        default=Path(__file__).resolve().parents[1] / "../shared/videos/mma_test.mp4",
    )
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--clips", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", default="hdf5,npy,jpeg,decode,items,video")
    args = parser.parse_args(argv)
    video = args.video.resolve()
    if not video.is_file():
        parser.error(f"VIDEO ({video}) is not a file")
    with tempfile.TemporaryDirectory(prefix="read_paths-") as tmp:
        work = args.work or Path(tmp)
        vid, jpegs, h, w = build(video, work)
        rng = np.random.default_rng(0)
        clips = [
            (vid, np.sort(rng.choice(len(jpegs), 8, replace=False))) for _ in range(args.clips)
        ]
        kb = np.mean([len(b) for b in jpegs]) / 1e3
        print(
            f"{video.name}: {len(jpegs)} frames of {w}x{h}, q95 ~{kb:.0f} KB a frame; "
            f"{args.clips} clips of 8 frames; CPU time, best of {args.repeats}; "
            f"{os.cpu_count()} CPUs (shared: load {os.getloadavg()[0]:.1f})"
        )
        only = set(args.only.split(","))
        if "hdf5" in only:
            hdf5_rows(work, clips, args.repeats)
        if "npy" in only:
            npy_rows(work, clips, args.repeats)
        if "jpeg" in only:
            jpeg_rows(work, clips, args.repeats)
        if "decode" in only:
            decode_rows(jpegs, h, w, clips, args.repeats)
        if "items" in only:
            item_rows(work, args.repeats, args.clips)
        if "video" in only:
            video_rows(video, clips[: max(1, args.clips // 4)], args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
