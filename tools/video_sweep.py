"""The sweep behind `convert --to video`'s defaults: GOP, CRF, preset, tuning (and whether
libx265 or AV1 would earn a place), measured on real footage and on generated footage.

    python tools/video_sweep.py --videos ../shared/videos --synth 4 --json sweep.json

For each data set (a folder of videos, `--videos`; `--synth N` generated UCF101-like clips,
`vidload.synth`: long GOP, B-frames) and each configuration it measures, in one process:

* convert frames/s per core: frames over the CPU seconds (`time.process_time`) of
  `vidload.convert.convert(..., to="video", workers=1)`, which also decodes the source and
  verifies the written file by a full decode (what a conversion really costs). libx265/AV1 rows
  are encoded by this tool with PyAV (vidload does not write them) with the same layout rules
  (keyframe every GOP, no B-frames, no scene cuts) and carry no convert figure's verification.
* bytes x the originals: the converted files' bytes over the originals'.
* clips/s per core: 8-frame segment clips (`vidload._measure.clips.sample_clips`, the indices
  `ClipDataset` samples) read by `VideoSource` on the converted files, rows interleaved with
  `VideoSource` on the originals, best of `--rounds` rounds, CPU seconds of this process
  (`vidload._choose.measure.warm_rates`, the benchmark's round robin); shown as clips/s and as
  a ratio to the originals in the same run.
* PSNR: mean over the videos of the mean PSNR of frames at the centres of 16 segments against
  the original decode (`vidload._choose.measure.psnr`).

Everything is read through vidload's own paths; nothing here is timed in a test
(tests/test_video_sweep_tool.py runs a tiny configuration for its output only).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from vidload._choose.measure import psnr, psnr_indices, warm_rates
from vidload._convert.inputs import find_inputs, sharing_a_name
from vidload._kinds import get_kind
from vidload._layout import container_name
from vidload._measure.clips import sample_clips
from vidload.convert import convert
from vidload.sources._video_format import even_crop, output_pts
from vidload.sources.video import VideoSource
from vidload.synth import SynthSpec, make_sample_videos

#: (codec, gop, crf, preset, tune): the default grid. libx264 unless named; x265 and AV1 at
#: settings of similar size.
DEFAULT_GRID = (
    "libx264:8:18:fast:none,libx264:8:20:fast:none,libx264:8:23:fast:none,"
    "libx264:4:20:fast:none,libx264:16:20:fast:none,"
    "libx264:8:20:fast:fastdecode,libx264:8:20:veryfast:none,libx264:8:20:medium:none,"
    "libx264:8:20:ultrafast:none,libx264:1:18:fast:none,"
    "libx265:8:22:fast:none,libsvtav1:8:32:8:none"
)


def parse_grid(text: str) -> list[tuple[str, int, float, str, str]]:
    out = []
    for item in text.split(","):
        codec, gop, crf, preset, tune = item.split(":")
        out.append((codec, int(gop), float(crf), preset, tune))
    return out


def config_name(codec: str, gop: int, crf: float, preset: str, tune: str) -> str:
    name = f"{codec} gop{gop} crf{crf:g} {preset}"
    return name + (f" {tune}" if tune != "none" else "")


def encode_other(
    orig: VideoSource, vid: str, out: Path, codec: str, gop: int, crf: float, preset: str
) -> int:
    """Encode `vid` with libx265 or libsvtav1 into `out` (what vidload does not write), with
    `--to video`'s rules: keyframe every `gop`, no B-frames, no scene-cut keyframes, the
    source's pts. Returns the frames written."""
    ts = orig.timestamps(vid)
    pts, den = output_pts(ts, orig.info(vid).time_base)
    out.parent.mkdir(parents=True, exist_ok=True)
    timescale = {"movie_timescale": str(den), "video_track_timescale": str(den)}
    n = 0
    with av.open(str(out), "w", format="mp4", options=timescale) as c:
        stream = None
        for rgb in orig.iter_frames(vid):
            rgb = even_crop(rgb)
            if stream is None:
                stream = c.add_stream(codec)
                stream.height, stream.width = rgb.shape[:2]
                stream.pix_fmt = "yuv420p"
                stream.time_base = Fraction(1, den)
                stream.codec_context.time_base = Fraction(1, den)
                stream.codec_context.thread_count = 1
                if codec == "libx265":
                    params = f"keyint={gop}:min-keyint={gop}:scenecut=0:bframes=0:open-gop=0"
                    stream.options = {
                        "crf": f"{crf:g}", "preset": preset, "x265-params": params + ":log-level=0"
                    }  # fmt: skip
                else:
                    stream.options = {
                        "crf": f"{crf:g}", "preset": preset,
                        "svtav1-params": f"keyint={gop}:scd=0:irefresh-type=2:lp=1",
                    }  # fmt: skip
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24")
            frame = frame.reformat(format="yuv420p", threads=1)
            frame.pts = int(pts[n])
            frame.time_base = Fraction(1, den)
            for packet in stream.encode(frame):
                c.mux(packet)
            n += 1
        for packet in stream.encode(None):
            c.mux(packet)
    return n


def build(
    data: Path, ids: Sequence[str], shared: frozenset[str], out: Path, config, orig: VideoSource
) -> tuple[float, int]:
    """Convert `ids` of `data` into `out` with `config`; (CPU seconds, frames)."""
    codec, gop, crf, preset, tune = config
    if out.exists():
        shutil.rmtree(out)
    start = time.process_time()
    if codec == "libx264":
        report = convert(
            data, out, to="video", workers=1, gop=gop, crf=crf, preset=preset, tune=tune,
            progress=False,
        )  # fmt: skip
        if report.failed:
            raise RuntimeError(f"{config}: {report.failed}")
        frames = report.frames
    else:
        frames = 0
        for vid in ids:
            name = container_name(vid, get_kind("video").suffix, keep_extension=vid in shared)
            frames += encode_other(orig, vid, out / name, codec, gop, crf, preset)
    return time.process_time() - start, frames


def mean_psnr(orig: VideoSource, conv: VideoSource, ids: Sequence[str]) -> float:
    per_video = []
    for vid in ids:
        idx = psnr_indices(orig.actual_frames(vid), 16)
        ref, got = orig.read(vid, idx), conv.read(vid, idx)
        ref = ref[:, : got.shape[1], : got.shape[2]]  # the even cut
        per_video.append(float(np.mean(psnr(got, ref, where=vid))))
    return float(np.mean(per_video))


def sweep(
    data: Path, label: str, grid, work: Path, *, clips: int, rounds: int, min_time: float, log
) -> list[dict]:
    _, items = find_inputs(data, kinds=("video",))
    ids = [it.video_id for it in items]
    shared = sharing_a_name(items)  # named as `convert` names them
    orig = VideoSource(data)
    counts = {vid: orig.actual_frames(vid) for vid in ids}
    bytes_in = sum(orig.path(v).stat().st_size for v in ids)
    rows: list[dict] = []
    readers = {"originals": orig.read}
    built = {}
    for config in grid:
        name = config_name(*config)
        log(f"{label}: building {name}")
        out = work / label / name.replace(" ", "_")
        cpu, frames = build(data, ids, shared, out, config, orig)
        conv = VideoSource(out)
        size = sum(conv.path(v).stat().st_size for v in ids)
        built[name] = {
            "convert_frames_per_s_per_core": frames / cpu if cpu > 0 else None,
            "bytes_ratio": size / bytes_in,
            "psnr_db": mean_psnr(orig, conv, ids),
            "verified": config[0] == "libx264",
        }
        readers[name] = conv.read
    sample = sample_clips(counts, clips=clips, num_frames=8, sampling="segment", stride=1, seed=0)
    rates = warm_rates(readers, sample, batch_size=8, rounds=rounds, min_time=min_time, log=log)
    base = rates["originals"]
    rows.append(
        {"data": label, "storage": "originals", "clips_per_s_per_core": base, "vs_originals": 1.0,
         "bytes_ratio": 1.0, "psnr_db": None, "convert_frames_per_s_per_core": None}
    )  # fmt: skip
    for name, row in built.items():
        rate = rates[name]
        rows.append(
            {"data": label, "storage": name, "clips_per_s_per_core": rate,
             "vs_originals": rate / base, **row}
        )  # fmt: skip
    return rows


def open_first_clip(data: Path, label: str, work: Path, *, rounds: int) -> list[dict]:
    """CPU ms of a fresh `VideoSource`'s open + first 8-frame segment clip of each video, with
    no persisted frame index and with one (`VideoSource.write_index`), best of `rounds`
    interleaved, in this process. The files are linked into two folders, one with the index
    files beside the links."""
    _, items = find_inputs(data, kinds=("video",))
    ids = [it.video_id for it in items]
    folders = {"no index": work / label / "plain", "persisted index": work / label / "indexed"}
    for folder in folders.values():
        shutil.rmtree(folder, ignore_errors=True)
        for vid in ids:
            link = folder / vid
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(VideoSource(data).path(vid).resolve())
    indexed = VideoSource(folders["persisted index"])
    for vid in ids:
        indexed.write_index(vid)
    counts = {vid: VideoSource(data).actual_frames(vid) for vid in ids}
    best: dict[tuple[str, str], float] = {}
    for _ in range(rounds):
        for vid in ids:
            idx = sample_clips({vid: counts[vid]}, clips=1, num_frames=8, sampling="segment",
                               stride=1, seed=0)[0][1]  # fmt: skip
            for how, folder in folders.items():
                start = time.process_time()
                VideoSource(folder).read(vid, idx)
                t = time.process_time() - start
                best[(vid, how)] = min(best.get((vid, how), t), t)
    return [
        {"data": label, "video": vid, "no_index_ms": 1000 * best[(vid, "no index")],
         "indexed_ms": 1000 * best[(vid, "persisted index")]}
        for vid in ids
    ]  # fmt: skip


def open_table(rows: Sequence[dict]) -> str:
    lines = [
        "| data | video | open + first clip, no index (ms CPU) | with the persisted index | x |",
        "|---|---|--:|--:|--:|",
    ]
    for r in rows:
        ratio = r["no_index_ms"] / r["indexed_ms"] if r["indexed_ms"] > 0 else float("inf")
        lines.append(
            f"| {r['data']} | {r['video']} | {r['no_index_ms']:.1f} | {r['indexed_ms']:.1f} | "
            f"{ratio:.1f} |"
        )
    return "\n".join(lines)


def table(rows: Sequence[dict]) -> str:
    head = (
        "| data | storage | convert frames/s/core | bytes x orig | clips/s/core | x orig "
        "| PSNR dB |"
    )
    lines = [head, "|---|---|--:|--:|--:|--:|--:|"]
    for r in rows:
        conv = r["convert_frames_per_s_per_core"]
        conv_text = "" if conv is None else f"{conv:.0f}"
        db = "exact" if r["psnr_db"] is None else f"{r['psnr_db']:.1f}"
        lines.append(
            f"| {r['data']} | {r['storage']} | {conv_text} | {r['bytes_ratio']:.2f} | "
            f"{r['clips_per_s_per_core']:.1f} | {r['vs_originals']:.2f} | {db} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--videos", action="append", default=[], help="a folder of real videos")
    p.add_argument("--synth", type=int, default=0, metavar="N", help="N generated videos")
    p.add_argument("--synth-seconds", type=float, default=7.0)
    p.add_argument("--grid", default=DEFAULT_GRID, help="codec:gop:crf:preset:tune,...")
    p.add_argument("--clips", type=int, default=64, help="clips per pass")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--min-time", type=float, default=0.5, help="seconds per measured round")
    p.add_argument("--open-rounds", type=int, default=5, help="rounds of the open timing")
    p.add_argument("--no-sweep", action="store_true", help="only the open + first clip timing")
    p.add_argument("--work", help="scratch folder (default: a temporary one)")
    p.add_argument("--json", help="write the rows here")
    p.add_argument("-q", "--quiet", action="store_true")
    args = p.parse_args(argv)
    if not args.videos and not args.synth:
        p.error("give --videos DIR and/or --synth N")
    grid = parse_grid(args.grid)

    def log(msg: str) -> None:
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.work) if args.work else Path(tmp)
        datasets = [(Path(v), Path(v).name) for v in args.videos]
        if args.synth:
            spec = SynthSpec(num_videos=args.synth, seconds=args.synth_seconds)
            make_sample_videos(work / "synth", spec, progress=not args.quiet)
            datasets.append((work / "synth", "synth"))
        rows, opens = [], []
        for data, label in datasets:
            if not args.no_sweep:
                rows += sweep(
                    data, label, grid, work / "out", clips=args.clips, rounds=args.rounds,
                    min_time=args.min_time, log=log,
                )  # fmt: skip
            log(f"{label}: open + first clip")
            opens += open_first_clip(data, label, work / "open", rounds=args.open_rounds)
            converted = work / "open" / f"{label}-to-video"  # `--to video`'s defaults
            convert(data, converted, to="video", workers=1, overwrite=True, progress=False)
            opens += open_first_clip(
                converted, f"{label} --to video", work / "open", rounds=args.open_rounds
            )
    if rows:
        print(table(rows))
        print(
            f"\n(clips/s: CPU time of this process, 8-frame segment clips, best of {args.rounds})\n"
        )
    print(open_table(opens))
    print(f"\n(a fresh VideoSource per read, CPU time, best of {args.open_rounds})")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "open": opens}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
