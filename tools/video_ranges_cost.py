"""What a clip of a `--to video` file costs over http: bytes, requests and clips/s, by byte ranges
against the whole download, with 0 and 20 ms of latency, against local disk.

    python tools/video_ranges_cost.py [VIDEO_FOLDER ...] [--work DIR] [--copies 20] [--rounds 2]

Converts the videos (default: ../shared/videos and ../shared/videos-extra) with
`vidload convert --to video --short-side 256`, and makes one long video of real footage (the
same clips end to end, `--long-seconds`, 120 by default, converted the same way). Serves them
with nginx on 127.0.0.1 (Debian's `nginx-light` + `libnginx-mod-http-lua`: `apt-get install
nginx-light libnginx-mod-http-lua`), one server answering at once and one sleeping 20 ms
(non-blocking, `ngx.sleep`) before each answer, so the server costs next to nothing (it should
join the issue-23 nginx benchmark, `tools/bucket_latency.py`, once that lands). Each video
is served as `--copies` distinct objects, and each clip (8 frames at the centres of 8 segments)
reads an object never opened before in its source, as in an epoch over a large dataset.

Rows, per video, one process (or `--workers N` DataLoader workers, batch 8), wall clock, best
of `--rounds`:
local disk; http by byte ranges (the persisted index, `vidload.sources._video_remote`); http
whole download (`cache_dir` set: the object copied whole, then read from local disk, as every
video over a URL was read before). Bytes and requests are vidload's own count
(`vidload._storage.STATS`); CPU is this process's time per clip.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared"
NUM_FRAMES = 8


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    """nginx serving `root` on 127.0.0.1, `delay_s` (non-blocking) before each answer."""

    def __init__(self, root: Path, delay_s: float, work: Path) -> None:
        if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
            raise SystemExit("nginx is missing: apt-get install nginx-light libnginx-mod-http-lua")
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        work.mkdir(parents=True, exist_ok=True)
        sleep = f"access_by_lua_block {{ ngx.sleep({delay_s}) }}" if delay_s else ""
        conf = work / "nginx.conf"
        conf.write_text(
            f"""
user root;
daemon off;
worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/error.log;
load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {work}/body; proxy_temp_path {work}/proxy;
  fastcgi_temp_path {work}/fastcgi; uwsgi_temp_path {work}/uwsgi; scgi_temp_path {work}/scgi;
  keepalive_requests 100000;
  server {{
    listen 127.0.0.1:{self.port};
    root {root};
    location / {{ {sleep} }}
  }}
}}
"""
        )
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        self.proc = subprocess.Popen([nginx, "-c", str(conf), "-p", str(work)])
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.1).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise SystemExit(f"nginx did not start: see {work}/error.log")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def _make_long(inputs: list[Path], path: Path, seconds: float) -> None:
    """One video of the real clips' frames end to end (at 456x256), `seconds` long at 25 fps."""
    import av
    import cv2

    frames_needed = int(seconds * 25)
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = 456, 256, "yuv420p"
        stream.options = {"preset": "ultrafast", "crf": "18"}
        done = 0
        while done < frames_needed:
            for src in inputs:
                with av.open(str(src)) as c:
                    for f in c.decode(video=0):
                        rgb = cv2.resize(f.to_ndarray(format="rgb24"), (456, 256))
                        frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
                        for packet in stream.encode(frame):
                            out.mux(packet)
                        done += 1
                        if done >= frames_needed:
                            break
                if done >= frames_needed:
                    break
        for packet in stream.encode(None):
            out.mux(packet)


def prepare(folders: list[Path], work: Path, long_seconds: float, copies: int) -> list[str]:
    """Convert the videos into work/conv, then serve each as `copies` objects in work/served;
    returns the converted files' names."""
    from vidload.convert import convert

    inputs = work / "in"
    inputs.mkdir(parents=True, exist_ok=True)
    videos = sorted(
        p for f in folders for p in f.iterdir() if p.suffix in (".mp4", ".avi", ".webm")
    )
    for v in videos:
        link = inputs / v.name
        if not link.exists():
            link.symlink_to(v)
    if long_seconds and not (inputs / "long.mp4").exists():
        _make_long(videos, inputs / "long.mp4", long_seconds)
    conv = work / "conv"
    convert(inputs, conv, to="video", short_side=256, workers=2, progress=False)
    served = work / "served"
    shutil.rmtree(served, ignore_errors=True)
    served.mkdir()
    names = sorted(p.name for p in conv.iterdir() if p.suffix == ".mp4")
    for name in names:
        for k in range(copies):
            for suffix in ("", ".vidload-index"):
                os.link(conv / (name + suffix), served / f"c{k}_{name}{suffix}")
    return names


def run(source, ids: list[str], n: int, workers: int, work: Path) -> tuple[float, float, int, int]:
    """(wall s, CPU s, requests, bytes) of one 8-frame clip from each of `ids` (of `n` frames,
    known beforehand as from a manifest). With `workers`, through `ClipDataset` and a DataLoader
    (batch 8; the CPU, requests and bytes of the workers are not counted: 0)."""
    from vidload._storage import STATS

    clip = [int((i + 0.5) * n / NUM_FRAMES) for i in range(NUM_FRAMES)]
    r0, b0 = STATS["requests"], STATS["bytes"]
    t0, c0 = time.perf_counter(), time.process_time()
    if workers:
        from torch.utils.data import DataLoader

        from vidload import ClipDataset

        manifest = work / "bench-manifest.csv"
        rows = "".join(f"{vid},0,{n},{n}\n" for vid in ids)
        manifest.write_text("video_id,label,reported_frames,actual_frames\n" + rows)
        ds = ClipDataset(manifest, source, num_frames=NUM_FRAMES, train=False)
        for _ in DataLoader(ds, batch_size=8, num_workers=workers):
            pass
        return time.perf_counter() - t0, 0.0, 0, 0
    for vid in ids:
        source.read(vid, clip)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return wall, cpu, STATS["requests"] - r0, STATS["bytes"] - b0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", type=Path)
    parser.add_argument("--work", type=Path, default=None, help="kept between runs if given")
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--long-seconds", type=float, default=120.0)
    parser.add_argument("--workers", type=int, default=0, help="DataLoader workers; 0")
    parser.add_argument("--only", nargs="*", default=None, help="converted names to measure")
    args = parser.parse_args(argv)
    import warnings

    from vidload.sources.video import VideoSource

    warnings.simplefilter("error")  # a fallback to a whole download would be a bug here
    folders = args.folders or [SHARED / "videos", SHARED / "videos-extra"]
    work = args.work or Path(tempfile.mkdtemp(prefix="vidload-ranges-"))
    names = prepare(folders, work, args.long_seconds, args.copies)
    names = [n for n in names if args.only is None or n in args.only]
    served = work / "served"
    servers = {ms: Nginx(served, ms / 1000, work / f"nginx{ms}") for ms in (0, 20)}
    best: dict[tuple[str, str, int], tuple[float, float, int, int]] = {}
    frames = {name: VideoSource(work / "conv").actual_frames(name) for name in names}
    try:
        for _ in range(args.rounds):
            for name in names:
                ids = [f"c{k}_{name}" for k in range(args.copies)]
                for ms, server in servers.items():
                    rows = {
                        "local disk": (lambda: VideoSource(served), 0),
                        "http, byte ranges": (lambda s=server: VideoSource(s.url), ms),
                        "http, whole download": (
                            lambda s=server: VideoSource(s.url, cache_dir=tempfile.mkdtemp()),
                            ms,
                        ),
                    }
                    for mode, (make, latency) in rows.items():
                        if mode == "local disk" and ms:
                            continue
                        got = run(make(), ids, frames[name], args.workers, work)
                        key = (name, mode, latency)
                        if key not in best or got[0] < best[key][0]:
                            best[key] = got
    finally:
        for server in servers.values():
            server.stop()
    print(
        f"one 8-frame clip per object, {args.copies} objects a video, best of {args.rounds}, "
        f"{args.workers} DataLoader workers"
    )
    print(
        "| video | size | frames | read | latency | clips/s | CPU ms/clip | requests/clip |"
        " bytes/clip | of the file |"
    )
    print("|---|--:|--:|---|--:|--:|--:|--:|--:|--:|")
    conv = work / "conv"
    for name in names:
        size = (conv / name).stat().st_size
        for (n, mode, ms), (wall, cpu, req, nbytes) in sorted(best.items()):
            if n != name:
                continue
            k = args.copies
            print(
                f"| {name} | {size / 1e6:.2f} MB | {frames[name]} | {mode} | {ms} ms | "
                f"{k / wall:.1f} | {1000 * cpu / k:.1f} | {req / k:.1f} | "
                f"{nbytes / k / 1e3:.0f} KB | {100 * nbytes / k / size:.1f} % |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
