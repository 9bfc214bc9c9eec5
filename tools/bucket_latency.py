"""Converted data read over HTTP from a real server (nginx on 127.0.0.1) against local disk.

    python tools/bucket_latency.py [--latency-ms 0,20] [--workers 0,2] [--batch-size 16]
        [--rounds 3] [--storages hdf5,npy,jpeg,video,original] [--work DIR] [--json FILE]
    python tools/bucket_latency.py --long-video 120 [--copies 20] [--latency-ms 0,20] [--rounds 2]

What it does, so that the figure is vidload's and not the server's:

* converts the real clips of ../shared/videos and ../shared/videos-extra (short side 256:
  `vidload convert --to hdf5/npy/jpeg/video`; "original" is the clips as they are) once into
  `--work`, then names each container under many folders (`c0000/...`, symlinks: no copies),
  so that every clip of a measured epoch reads an object this process never read before, as
  an epoch over Kinetics does (a video's head, frame table or listing is never cached);
* starts nginx itself (Debian's `nginx-light` + `libnginx-mod-http-lua`) on a free port of
  127.0.0.1 with its own configuration in a temporary folder: `/ms<L>/` serves the folder
  with Range and directory listings, after a non-blocking `ngx.sleep(L / 1000)` before each
  answer (`access_by_lua_block`), and logs every request (counted per clip); it is stopped
  when the tool ends;
* reads the same clips through `ClipDataset` (segment sampling, 8 frames, one clip per video,
  training) and a `DataLoader` (batch `--batch-size`, 0 and `--workers` workers; the batch is
  read by `ClipDataset.__getitems__`), from local disk and from `http://` at each latency.
  Rows are interleaved (every storage x backend x workers in each round) and each figure is
  the best of `--rounds` epochs, each over objects not read before. Clock: wall
  (`time.perf_counter`) for clips/s; process CPU time (`time.process_time`, all threads of
  the one process) per clip with 0 workers; requests and bytes per clip from vidload's own
  count and nginx's log; rounds per batch (0 workers) from vidload's count (`STATS["rounds"]`:
  the waits a process made) and, in parentheses, from nginx's log (request start times more
  than half the latency apart: noisy on a loaded machine).
* writes the heads sidecar `vidload convert` writes (`manifest-heads.npz`: HDF5, npy,
  `--to video` each video's persisted index, JPEG folders each folder's count) for the
  spread names, so that a batch of containers never opened is one round (`--no-heads`:
  without it, a round for the heads, the videos' own indexes, or the folders' listings,
  before the frames).

Needs nginx with the lua module (Debian/Ubuntu: `apt-get install nginx-light
libnginx-mod-http-lua`); without it the tool says so and exits 2. The tests never need nginx:
they use the Python servers of tests/servers.py.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared"
VIDEO_DIRS = ("videos", "videos-extra")
CONTAINERS = ("hdf5", "npy", "jpeg")
ALL_STORAGES = ("hdf5", "npy", "jpeg", "video", "original")
MODULES = ("ndk_http_module.so", "ngx_http_lua_module.so")
MODULE_DIRS = ("/usr/lib/nginx/modules", "/usr/share/nginx/modules", "/usr/lib64/nginx/modules")
INSTALL = (
    "nginx with its lua module is needed for this benchmark: on Debian/Ubuntu "
    "`sudo apt-get install nginx-light libnginx-mod-http-lua` (the tests never need it)"
)


# --- nginx ------------------------------------------------------------------------------------


def find_nginx() -> tuple[str, list[str]]:
    """(the nginx binary, the module files to load); SystemExit(2) saying how to install."""
    binary = shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)), None
    )
    if binary is None:
        raise SystemExit(f"bucket_latency: no nginx found. {INSTALL}")
    for folder in MODULE_DIRS:
        mods = [os.path.join(folder, m) for m in MODULES]
        if all(os.path.isfile(m) for m in mods):
            return binary, mods
    raise SystemExit(f"bucket_latency: nginx's lua module not found in {MODULE_DIRS}. {INSTALL}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    """nginx serving `root` on 127.0.0.1 under `/ms<L>/` for each latency L (ms)."""

    def __init__(self, root: Path, latencies_ms: list[float]) -> None:
        binary, modules = find_nginx()
        self.dir = Path(tempfile.mkdtemp(prefix="vidload-nginx-"))
        self.port = _free_port()
        self.log = self.dir / "access.log"
        locations = []
        for ms in latencies_ms:
            sleep = f"access_by_lua_block {{ ngx.sleep({ms / 1000:.4f}) }}" if ms > 0 else ""
            locations.append(f"location /ms{ms:g}/ {{ alias {root}/; autoindex on; {sleep} }}")
        user = "user root;" if os.geteuid() == 0 else ""
        conf = "\n".join(
            [
                *(f"load_module {m};" for m in modules),
                user,
                "daemon off; master_process on; worker_processes 1;",
                f"pid {self.dir}/nginx.pid; error_log {self.dir}/error.log warn;",
                "events { worker_connections 4096; }",
                "http {",
                "  sendfile on; tcp_nopush on; tcp_nodelay on;",
                "  keepalive_requests 1000000; keepalive_timeout 300s;",
                "  open_file_cache max=100000 inactive=600s;",
                "  default_type application/octet-stream;",
                "  log_format counted '$msec $request_time $request_method $uri $status "
                '$bytes_sent "$http_range"\';',
                f"  access_log {self.log} counted;",
                *(
                    f"  {k}_temp_path {self.dir}/{k};"
                    for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
                ),
                f"  server {{ listen 127.0.0.1:{self.port};",
                *(f"    {loc}" for loc in locations),
                "  }",
                "}",
            ]
        )
        (self.dir / "nginx.conf").write_text(conf + "\n")
        self.proc = subprocess.Popen(
            [binary, "-p", str(self.dir), "-c", str(self.dir / "nginx.conf")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise SystemExit(f"bucket_latency: nginx did not start: {err.strip()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        self.url = f"http://127.0.0.1:{self.port}"

    def requests(self) -> int:
        """Requests answered so far (lines of its log)."""
        with open(self.log, "rb") as f:
            return sum(1 for _ in f)

    def rounds(self, since: int, gap_s: float) -> int:
        """Rounds of requests among the log's lines from line `since` on: their start times
        (when answered less how long it took), sorted, split where two lie more than `gap_s`
        apart (at 20 ms a request starts at least 20 ms after the round before it was sent;
        within a round they start together). Meaningful for one client process (0 workers)."""
        with open(self.log, "rb") as f:
            lines = f.readlines()[since:]
        starts = sorted(float(x.split()[0]) - float(x.split()[1]) for x in lines if x.strip())
        return sum(1 for a, b in zip(starts, starts[1:], strict=False) if b - a > gap_s) + (
            1 if starts else 0
        )

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


# --- data ---------------------------------------------------------------------------------------


@dataclass
class Storage:
    name: str
    base: Path  # the converted folder (or the originals)
    ids: list[str]  # one video id per base video, as the dataset names it
    counts: list[int]  # frames of each
    sizes: list[int]  # bytes of each container (files summed for a folder)
    copies: int = 0
    entries: list[tuple[str, int, int]] = field(default_factory=list)


def _inputs(work: Path) -> Path:
    """The real clips, each under a name of its own (two share a stem)."""
    inputs = work / "in"
    if inputs.is_dir():
        return inputs
    tmp = work / "in.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    found = 0
    for d in VIDEO_DIRS:
        for p in sorted((SHARED / d).glob("*")):
            if p.suffix.lower() in (".mp4", ".avi", ".webm", ".mkv"):
                os.symlink(p, tmp / f"{p.stem}_{p.suffix[1:].lower()}{p.suffix.lower()}")
                found += 1
    if not found:
        raise SystemExit(f"bucket_latency: no videos in {SHARED}/{{{','.join(VIDEO_DIRS)}}}")
    tmp.rename(inputs)
    return inputs


def _convert(work: Path, storage: str, short_side: int) -> Path:
    from vidload.convert import convert

    inputs = _inputs(work)
    if storage == "original":
        return inputs
    out = work / "base" / storage
    if not (out / "manifest.csv").is_file():
        print(f"converting {inputs} to {storage} (short side {short_side}) ...", flush=True)
        convert(inputs, out, to=storage, short_side=short_side, workers=2, progress=False)
    return out


def _size(p: Path) -> int:
    if p.is_dir():
        return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
    return p.stat().st_size


def _storage(work: Path, name: str, short_side: int) -> Storage:
    from vidload.manifest import load_videos
    from vidload.sources.video import VideoSource

    base = _convert(work, name, short_side)
    if name in CONTAINERS:
        entries = load_videos(base / "manifest.csv")
        ids = [e.video_id for e in entries]
        counts = [int(e.known_frames or 0) for e in entries]
        suffix = {"hdf5": ".h5", "npy": ".npy", "jpeg": ""}[name]
        sizes = [_size(base / (os.path.splitext(i)[0] + suffix)) for i in ids]
        return Storage(name, base, ids, counts, sizes)
    files = sorted(p.name for p in base.iterdir() if p.suffix in (".mp4", ".avi", ".webm"))
    src = VideoSource(base)
    counts = [src.actual_frames(f) for f in files]
    if name == "original":  # as `vidload probe --write-index` does: read by ranges over a URL
        for f in files:
            if not any(p.name.startswith(f + ".") for p in base.iterdir()):
                src.write_index(f)
    return Storage(name, base, files, counts, [_size(base / f) for f in files])


def _spread(storage: Storage, data: Path, copies: int) -> None:
    """`data/<storage>/cNNNN/<name>` -> the base container, for NNNN < copies (symlinks)."""
    folder = data / storage.name
    folder.mkdir(parents=True, exist_ok=True)
    names = [
        p.name
        for p in storage.base.iterdir()
        if p.name not in ("manifest.csv", "classes.txt", "manifest-heads.npz")
        and not p.name.startswith(".")
    ]
    for k in range(copies):
        sub = folder / f"c{k:04d}"
        if sub.is_dir():
            continue
        tmp = folder / f".c{k:04d}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        for n in names:
            os.symlink(storage.base / n, tmp / n)
        tmp.rename(sub)
    storage.copies = copies
    storage.entries = [
        (f"c{k:04d}/{vid}", 0, count)
        for k in range(copies)
        for vid, count in zip(storage.ids, storage.counts, strict=True)
    ]


def _heads(storage: Storage, data: Path, write: bool) -> None:
    """The sidecar of heads `vidload convert` writes beside its manifest (HDF5, npy, `--to
    video`: each video's persisted index, JPEG folders: each folder's count), for the spread
    names (`write`), or none (`--no-heads`: each new container's head, each new video's index,
    each new folder's listing, is a round)."""
    from vidload.sources._heads import HEADS_NAME, write_heads

    folder = data / storage.name
    (folder / HEADS_NAME).unlink(missing_ok=True)
    if write and storage.name in ("hdf5", "npy", "video", "jpeg"):
        write_heads(_source(storage.name, str(folder), None), [e[0] for e in storage.entries])


# --- measuring ----------------------------------------------------------------------------------


class Slice:
    """A sampler whose indices the tool sets before each epoch (workers stay up)."""

    def __init__(self) -> None:
        self.indices: list[int] = []

    def __iter__(self):
        return iter(self.indices)

    def __len__(self) -> int:
        return len(self.indices)


def _source(storage: str, root: str, cache: Path | None) -> Any:
    from vidload.sources.hdf5 import Hdf5Source
    from vidload.sources.jpeg import JpegSource
    from vidload.sources.npy import NpySource
    from vidload.sources.video import VideoSource

    if storage == "hdf5":
        return Hdf5Source(root)
    if storage == "npy":
        return NpySource(root)
    if storage == "jpeg":
        return JpegSource(root)
    # over a URL by byte ranges (the persisted index), no cache: what issue 23 measures
    return VideoSource(root)


@dataclass
class Run:
    storage: str
    backend: str  # "local" or "<L> ms"
    workers: int
    loader: Any
    sampler: Slice
    batch_size: int
    best_s: float = float("inf")
    cpu_s: float = float("inf")
    clips: int = 0
    requests: float = 0.0
    server_requests: float = 0.0
    nbytes: float = 0.0
    rounds_per_batch: float = 0.0
    client_rounds: float = 0.0


def _epoch(run: Run, indices: list[int], server: Nginx | None) -> None:
    from vidload._storage import STATS

    run.sampler.indices = indices
    before = dict(STATS)
    served = server.requests() if server is not None and run.backend != "local" else 0
    cpu, wall = time.process_time(), time.perf_counter()
    n = 0
    for clips, _labels in run.loader:
        n += clips.shape[0]
    wall = time.perf_counter() - wall
    cpu = time.process_time() - cpu
    if n != len(indices):
        raise RuntimeError(f"{run.storage} {run.backend}: {n} clips of {len(indices)}")
    if wall < run.best_s:
        run.best_s = wall
    run.clips = n
    if run.workers == 0:
        run.cpu_s = min(run.cpu_s, cpu)
        run.requests = (STATS["requests"] - before["requests"]) / n
        run.nbytes = (STATS["bytes"] - before["bytes"]) / n
        run.client_rounds = (STATS["rounds"] - before["rounds"]) / -(-n // run.batch_size)
    if server is not None and run.backend != "local":
        time.sleep(0.05)  # nginx writes its log line after the answer
        run.server_requests = (server.requests() - served) / n
        latency = float(run.backend.split()[0]) / 1000
        if run.workers == 0 and latency > 0:
            batches = -(-n // run.batch_size)
            run.rounds_per_batch = server.rounds(served, latency / 2) / batches


def measure(args: argparse.Namespace) -> dict[str, Any]:
    import torch
    from torch.utils.data import DataLoader

    from vidload import ClipDataset

    torch.set_num_threads(1)
    work = Path(args.work)
    storages = [_storage(work, s, args.short_side) for s in args.storages]
    per_round = {s.name: args.clips if s.name in CONTAINERS else args.video_clips for s in storages}
    rounds = args.rounds + 1  # the first warms up (workers, imports) and is not counted
    for s in storages:
        copies = -(-per_round[s.name] * rounds // len(s.ids))
        _spread(s, work / "data", copies)
        _heads(s, work / "data", args.heads)
    server = Nginx(work / "data", args.latency_ms)
    print(f"nginx {server.url}, latencies {args.latency_ms} ms, data {work / 'data'}", flush=True)
    cache = Path(tempfile.mkdtemp(prefix="vidload-bench-cache-"))
    runs: list[Run] = []
    try:
        backends = ["local", *(f"{ms:g} ms" for ms in args.latency_ms)]
        for s in storages:
            for backend in backends:
                if backend == "local":
                    root = str(work / "data" / s.name)
                else:
                    root = f"{server.url}/ms{backend.split()[0]}/{s.name}"
                for w in args.workers:
                    src = _source(s.name, root, cache / f"{s.name}-{backend}-{w}".replace(" ", ""))
                    ds = ClipDataset(s.entries, src, num_frames=8, train=True, seed=0, crop=224)
                    sampler = Slice()
                    loader = DataLoader(
                        ds,
                        batch_size=args.batch_size,
                        sampler=sampler,
                        num_workers=w,
                        persistent_workers=w > 0,
                    )
                    runs.append(Run(s.name, backend, w, loader, sampler, args.batch_size))
        for r in range(rounds):
            for run in runs:
                n = per_round[run.storage]
                _epoch(run, list(range(r * n, (r + 1) * n)), server)
                if r == 0:
                    run.best_s, run.cpu_s = float("inf"), float("inf")
            print(f"round {r} done" + (" (warm-up)" if r == 0 else ""), flush=True)
    finally:
        server.stop()
        shutil.rmtree(cache, ignore_errors=True)
    out: dict[str, Any] = {"rows": [], "args": {k: v for k, v in vars(args).items()}}
    for run in runs:
        s = next(x for x in storages if x.name == run.storage)
        out["rows"].append(
            {
                "storage": run.storage,
                "backend": run.backend,
                "workers": run.workers,
                "clips_per_s": run.clips / run.best_s,
                "cpu_ms_per_clip": run.cpu_s / run.clips * 1e3 if run.workers == 0 else None,
                "requests_per_clip": run.requests if run.workers == 0 else None,
                "server_requests_per_clip": run.server_requests,
                "rounds_per_batch": run.rounds_per_batch if run.workers == 0 else None,
                "client_rounds_per_batch": run.client_rounds if run.workers == 0 else None,
                "bytes_per_clip": run.nbytes if run.workers == 0 else None,
                "object_bytes": sum(s.sizes) / len(s.sizes),
            }
        )
    return out


def render(result: dict[str, Any], workers: list[int]) -> str:
    rows = result["rows"]
    backends = list(dict.fromkeys(r["backend"] for r in rows))
    remote = [b for b in backends if b != "local"]
    head = ["storage"]
    for w in workers:
        head += [f"{b}, {w}w" for b in backends]
        head += [f"ratio {b}, {w}w" for b in remote]
    head += ["CPU ms/clip local", *(f"CPU ms/clip {b}" for b in remote)]
    head += ["req/clip (server)", "rounds/batch (server)", "KiB/clip", "KiB/object"]
    lines = ["| " + " | ".join(head) + " |", "|---" + "|--:" * (len(head) - 1) + "|"]
    for storage in dict.fromkeys(r["storage"] for r in rows):
        mine = {(r["backend"], r["workers"]): r for r in rows if r["storage"] == storage}
        cells = [storage]
        for w in workers:
            local = mine[("local", w)]["clips_per_s"]
            cells += [f"{mine[(b, w)]['clips_per_s']:.1f}" for b in backends]
            cells += [f"{mine[(b, w)]['clips_per_s'] / local:.2f}x" for b in remote]
        zero = min(workers)
        cpu_local = mine[("local", zero)]["cpu_ms_per_clip"]
        cells.append(f"{cpu_local:.2f}" if cpu_local is not None else "-")
        for b in remote:
            cpu = mine[(b, zero)]["cpu_ms_per_clip"]
            cells.append(f"{cpu:.2f} ({cpu / cpu_local:.2f}x)" if cpu and cpu_local else "-")
        last = mine[(remote[-1], zero)] if remote else mine[("local", zero)]
        req = last["requests_per_clip"]
        cells.append(
            f"{req:.2f} ({last['server_requests_per_clip']:.2f})" if req is not None else "-"
        )
        rounds = last.get("client_rounds_per_batch")
        served = last.get("rounds_per_batch")
        cells.append(f"{rounds:.2f} ({served:.2f})" if rounds is not None and served else "-")
        nbytes = last["bytes_per_clip"]
        cells.append(f"{nbytes / 1024:.0f}" if nbytes is not None else "-")
        cells.append(f"{last['object_bytes'] / 1024:.0f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# --- one clip of a long video: byte ranges against a whole download (--long-video) -------------


def _long_video(work: Path, seconds: float, short_side: int) -> tuple[Path, list[str]]:
    """(folder, names): the real clips converted `--to video` at `short_side`, and one video of
    their frames end to end (`seconds` long at 25 fps, 456x256) converted the same way, each
    with its persisted index; made once under `work/long`."""
    import av
    import cv2

    from vidload.convert import convert

    inputs = _inputs(work)
    src = work / "long" / "in"
    out = work / "long" / f"video-{seconds:g}s"
    if not (out / "manifest.csv").is_file():
        shutil.rmtree(src, ignore_errors=True)
        src.mkdir(parents=True)
        for p in sorted(inputs.iterdir()):
            os.symlink(p.resolve(), src / p.name)
        needed = int(seconds * 25)
        with av.open(str(src / "long.mp4"), "w") as dst:
            stream = dst.add_stream("libx264", rate=25)
            stream.width, stream.height, stream.pix_fmt = 456, 256, "yuv420p"
            stream.options = {"preset": "ultrafast", "crf": "18"}
            done = 0
            while done < needed:
                for p in sorted(inputs.iterdir()):
                    with av.open(str(p)) as c:
                        for f in c.decode(video=0):
                            rgb = cv2.resize(f.to_ndarray(format="rgb24"), (456, 256))
                            for packet in stream.encode(av.VideoFrame.from_ndarray(rgb, "rgb24")):
                                dst.mux(packet)
                            done += 1
                            if done >= needed:
                                break
                    if done >= needed:
                        break
            for packet in stream.encode(None):
                dst.mux(packet)
        print(f"converting {src} to video (short side {short_side}) ...", flush=True)
        convert(src, out, to="video", short_side=short_side, workers=2, progress=False)
    names = sorted(p.name for p in out.iterdir() if p.suffix == ".mp4")
    return out, names


def long_video(args: argparse.Namespace) -> str:
    """The `--long-video` section: per video, one 8-frame clip (the centres of 8 segments) from
    each of `--copies` names of it, each an object not opened before: local disk, http by byte
    ranges (the persisted index), and http with the object downloaded whole (`cache_dir`, as
    every video over a URL was read before), at each `--latency-ms`; one process, wall clock,
    best of `--rounds`; CPU, requests and bytes per clip from this process's count."""
    import warnings

    from vidload._storage import STATS
    from vidload.sources.video import VideoSource

    warnings.simplefilter("error")  # a fallback to a whole download would be a bug here
    conv, names = _long_video(Path(args.work), args.long_video, args.short_side)
    served = Path(args.work) / "long" / "served"
    shutil.rmtree(served, ignore_errors=True)
    served.mkdir()
    for name in names:
        for k in range(args.copies):
            for suffix in ("", ".vidload-index"):
                os.symlink(conv / (name + suffix), served / f"c{k}_{name}{suffix}")
    frames = {name: VideoSource(conv).actual_frames(name) for name in names}
    server = Nginx(served, args.latency_ms)
    best: dict[tuple[str, str, float], tuple[float, float, int, int]] = {}
    try:
        for _ in range(args.rounds):
            for name in names:
                ids = [f"c{k}_{name}" for k in range(args.copies)]
                clip = [int((i + 0.5) * frames[name] / 8) for i in range(8)]
                rows: list[tuple[str, float, Any]] = [("local disk", 0, lambda: str(served))]
                for ms in args.latency_ms:
                    url = f"{server.url}/ms{ms:g}"
                    rows.append(("http, byte ranges", ms, lambda u=url: u))
                    rows.append(("http, whole download", ms, lambda u=url: (u, "cache")))
                for mode, ms, root in rows:
                    where = root()
                    src = (
                        VideoSource(where[0], cache_dir=tempfile.mkdtemp(dir=args.work))
                        if isinstance(where, tuple)
                        else VideoSource(where)
                    )
                    r0, b0 = STATS["requests"], STATS["bytes"]
                    t0, c0 = time.perf_counter(), time.process_time()
                    for vid in ids:
                        src.read(vid, clip)
                    got = (
                        time.perf_counter() - t0,
                        time.process_time() - c0,
                        STATS["requests"] - r0,
                        STATS["bytes"] - b0,
                    )
                    key = (name, mode, ms)
                    if key not in best or got[0] < best[key][0]:
                        best[key] = got
    finally:
        server.stop()
    k = args.copies
    lines = [
        f"one 8-frame clip per object, {k} objects a video, best of {args.rounds}, 0 workers",
        "| video | size | frames | read | latency | clips/s | CPU ms/clip | requests/clip "
        "| bytes/clip | of the file |",
        "|---|--:|--:|---|--:|--:|--:|--:|--:|--:|",
    ]
    for (name, mode, ms), (wall, cpu, req, nbytes) in sorted(best.items()):
        size = (conv / name).stat().st_size
        lines.append(
            f"| {name} | {size / 1e6:.2f} MB | {frames[name]} | {mode} | {ms:g} ms | "
            f"{k / wall:.1f} | {1000 * cpu / k:.1f} | {req / k:.1f} | "
            f"{nbytes / k / 1e3:.0f} KB | {100 * nbytes / k / size:.1f} % |"
        )
    return "\n".join(lines)


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x]


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-ms", type=_floats, default=[0.0, 20.0], help="0,20")
    parser.add_argument("--workers", type=_ints, default=[0, 2], help="0,2")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3, help="measured epochs per row")
    parser.add_argument("--clips", type=int, default=128, help="per epoch, container rows")
    parser.add_argument("--video-clips", type=int, default=32, help="per epoch, video rows")
    parser.add_argument("--short-side", type=int, default=256)
    parser.add_argument(
        "--storages",
        type=lambda t: [s for s in t.split(",") if s],
        default=list(ALL_STORAGES),
        help=",".join(ALL_STORAGES),
    )
    parser.add_argument(
        "--no-heads",
        dest="heads",
        action="store_false",
        help="without the sidecar of heads convert writes (a round per batch of new containers)",
    )
    parser.add_argument(
        "--long-video",
        type=float,
        metavar="SECONDS",
        help="instead of the table: what one clip of a --to video file costs, by byte ranges "
        "against a whole download, for the real clips and one video of them end to end this "
        "long (bytes and requests per clip, and of the file)",
    )
    parser.add_argument("--copies", type=int, default=20, help="--long-video: objects a video")
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "vidload-nginx"))
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args(argv)
    bad = [s for s in args.storages if s not in ALL_STORAGES]
    if bad:
        parser.error(f"--storages: unknown {bad}; choose from {ALL_STORAGES}")
    find_nginx()  # says how to install it before any conversion
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # nginx is stopped on the way out
    if args.long_video is not None:
        print(long_video(args))
        return 0
    result = measure(args)
    print(render(result, args.workers))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
