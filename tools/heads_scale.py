"""A Kinetics-size HDF5 dataset at a URL: its sidecar of heads once per machine (issue 33).

    python tools/heads_scale.py VIDEO [VIDEO ...] [--videos 650000] [--frames 300]
                                [--batches 2000] [--batch-size 8] [--workers 2] [--work DIR]

Builds, in `--work` (default `$TMPDIR/vidload-heads-scale`):

- a few real HDF5 files, one per VIDEO (its first `--frames` frames at short side 128, JPEG
  q90, written by `write_hdf5`);
- a Kinetics-shaped list of `--videos` ids (`tools/entries_memory.py`'s names) and its
  `manifest.csv` (with the `container` column), each container named from its id;
- the sidecar of heads for those names (`render_heads`), each record the real file's that the
  server maps the name onto;
- nginx (as `tools/bucket_latency.py` starts it) serving the folder at `/d/`, a rewrite (lua)
  mapping each `.h5` name onto one of the real files by a character of its name.

Then measures, each in a fresh process whose temporary cache (`TMPDIR`) starts empty, and again
in a second fresh process on the same machine (the same cache):

- the sidecar's size, and the requests for it (nginx's log: the first process fetches it, the
  second sends none);
- the time to open it (`read_heads`) and to build the dataset from the manifest URL;
- the rounds of the first cold batch (vidload's count, `STATS["rounds"]`, and the requests
  nginx answered for it);
- in the second process, a `make_loader` with `--workers` workers reading `--batches` batches
  of `--batch-size`, then each worker's USS (psutil, as `tools/entries_memory.py` measures:
  pages no other process maps) after its first batch and after the last.

Needs nginx with its lua module (see `tools/bucket_latency.py`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bucket_latency import _free_port, find_nginx  # noqa: E402
from entries_memory import kinetics_like  # noqa: E402

#: The character of a container's name that picks its real file: the last of the YouTube id
#: (`<class>/<id>_<start:06d>_<end:06d>.h5`).
PICK = -18


def real_files(videos: list[str], out: Path, frames: int) -> list[Path]:
    """One HDF5 file per input video: its first `frames` frames, short side 128, JPEG q90."""
    import av

    from vidload._cv2 import cv2
    from vidload.sources.hdf5 import write_hdf5
    from vidload.sources.jpeg_decode import encode_jpeg

    paths = []
    for j, video in enumerate(videos):
        jpegs = []
        with av.open(video) as c:
            for f in c.decode(video=0):
                rgb = f.to_ndarray(format="rgb24")
                h, w = rgb.shape[:2]
                s = 128 / min(h, w)
                rgb = cv2.resize(rgb, (round(w * s) // 2 * 2, round(h * s) // 2 * 2))
                jpegs.append(encode_jpeg(rgb, 90))
                if len(jpegs) == frames:
                    break
        paths.append(out / f"{j}.h5")
        write_hdf5(paths[-1], jpegs)
    return paths


def build(args: argparse.Namespace, work: Path) -> dict:
    """The real files, the manifest and the sidecar of `args.videos` names (module doc)."""
    from vidload.sources._heads import HEADS_NAME, render_heads
    from vidload.sources.hdf5 import Hdf5Source

    real, data = work / "real", work / "data"
    shutil.rmtree(work, ignore_errors=True)
    data.mkdir(parents=True)
    files = real_files(args.video, real, args.frames)
    source = Hdf5Source(real)
    records = [source.head_record(f"{j}.mp4")[1] for j in range(len(files))]
    frames = [int(r.lengths.size) for r in records]
    ids = [(vid.replace(".mp4", ""), label) for vid, label in kinetics_like(args.videos, 700)]
    header = "video_id,label,reported_frames,actual_frames,fps,status,container\n"
    rows, heads = [], {}
    for stem, label in ids:
        name = f"{stem}.h5"
        j = ord(name[PICK]) % len(files)
        rows.append(f"{stem}.mp4,{label},{frames[j]},{frames[j]},25.0,ok,{name}\n")
        heads[name] = records[j]
    args.known = name
    (data / "manifest.csv").write_text(header + "".join(rows))
    t = time.perf_counter()
    raw = render_heads("hdf5", heads)
    render_s = time.perf_counter() - t
    (data / HEADS_NAME).write_bytes(raw)
    return {
        "videos": len(ids),
        "real_files": len(files),
        "frames": frames,
        "sidecar_bytes": len(raw),
        "render_s": render_s,
    }


class Server:
    """nginx serving `work/data` at `/d/`, each `.h5` name rewritten onto a real file."""

    def __init__(self, work: Path, files: int, latency_ms: float) -> None:
        binary, modules = find_nginx()
        self.dir = Path(tempfile.mkdtemp(prefix="vidload-nginx-"))
        self.port = _free_port()
        self.log = self.dir / "access.log"
        sleep = f"access_by_lua_block {{ ngx.sleep({latency_ms / 1000:.4f}) }}"
        pick = (
            "rewrite_by_lua_block { local c = string.byte(ngx.var.uri, "
            f'{PICK}); ngx.req.set_uri("/real/" .. (c % {files}) .. ".h5", true) }}'
        )
        user = "user root;" if os.geteuid() == 0 else ""
        conf = f"""{"".join(f"load_module {m};" for m in modules)} {user}
daemon off; master_process on; worker_processes 1;
pid {self.dir}/nginx.pid; error_log {self.dir}/error.log warn;
events {{ worker_connections 4096; }}
http {{ sendfile on; tcp_nodelay on; keepalive_requests 1000000; keepalive_timeout 300s;
  default_type application/octet-stream;
  log_format counted '$msec $request_time $request_method $request_uri $status $bytes_sent';
  access_log {self.log} counted;
  {"".join(f"{k}_temp_path {self.dir}/{k}; " for k in ("client_body", "proxy", "fastcgi"))}
  {"".join(f"{k}_temp_path {self.dir}/{k}; " for k in ("uwsgi", "scgi"))}
  server {{ listen 127.0.0.1:{self.port};
    location ~ ^/d/.+\\.h5$ {{ {pick} }}
    location /d/ {{ alias {work}/data/; {sleep} }}
    location /real/ {{ alias {work}/real/; {sleep} }}
  }}
}}
"""
        (self.dir / "nginx.conf").write_text(conf)
        self.proc = subprocess.Popen(
            [binary, "-p", str(self.dir), "-c", str(self.dir / "nginx.conf")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        time.sleep(0.5)
        if self.proc.poll() is not None:
            err = self.proc.stderr.read().decode() if self.proc.stderr else ""
            raise SystemExit(f"heads_scale: nginx did not start: {err.strip()}")
        self.url = f"http://127.0.0.1:{self.port}/d"

    def lines(self) -> list[str]:
        time.sleep(0.2)  # nginx writes its log line after the answer
        return self.log.read_text().splitlines()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)


#: One fresh process: the dataset from the manifest URL, the sidecar opened, a cold batch, and
#: (argv[3] > 0) a loader's batches with each worker's USS.
PROCESS = r"""
import itertools, json, sys, time
import numpy as np, psutil, torch
sys.path.insert(0, sys.argv[5])
from entries_memory import FirstBatchUss
from vidload import ClipDataset, make_loader
from vidload._dataset.batch import getitems
from vidload._storage.remote import STATS
from vidload.sources.hdf5 import Hdf5Source
from vidload.sources._heads import read_heads
torch.set_num_threads(1)
url, batch, batches, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
out = {}
t = time.perf_counter()
ds = ClipDataset(url + "/manifest.csv", Hdf5Source(url, fps=25.0), num_frames=8, crop=112,
                 seed=0)
out["dataset_s"] = time.perf_counter() - t
t = time.perf_counter()
heads = ds.source._sidecar()
out["open_heads_s"] = time.perf_counter() - t
out["heads"] = len(heads)
t = time.perf_counter()
assert heads.get(sys.argv[6]) is not None
out["one_record_s"] = time.perf_counter() - t
print("MARK", flush=True)
sys.stdin.readline()  # the caller notes nginx's log here
before = STATS["rounds"]
rng = np.random.default_rng(1)
items = getitems(ds, rng.choice(len(ds), batch, replace=False).tolist())
out["first_batch_rounds"] = STATS["rounds"] - before
out["first_batch_items"] = len(items)
if batches:
    loader = make_loader(ds, batch, num_workers=workers, read_ahead=False,
                         collate_fn=FirstBatchUss())
    first = {}
    it = iter(loader)
    t = time.perf_counter()
    for *_, info in itertools.islice(it, batches):
        wid, value = info.tolist()
        if value >= 0:
            first[wid] = value / 2**20
    out["loader_s"] = time.perf_counter() - t
    procs = [psutil.Process(w.pid) for w in it._workers]
    out["uss_first_mib"] = [first[w] for w in range(workers)]
    out["uss_after_mib"] = [p.memory_full_info().uss / 2**20 for p in procs]
print(json.dumps(out), flush=True)
"""


def fresh_process(server: Server, tmp: Path, args: argparse.Namespace, batches: int) -> dict:
    """PROCESS in a fresh interpreter with `TMPDIR=tmp`; its figures, with the requests
    nginx answered for the sidecar (all of the process) and for the cold batch."""
    env = dict(os.environ, TMPDIR=str(tmp))
    cmd = [sys.executable, "-c", PROCESS, server.url, str(args.batch_size), str(batches)]
    cmd += [str(args.workers), str(HERE), args.known]
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    start = len(server.lines())
    while proc.stdout.readline().strip() != "MARK":
        if proc.poll() is not None:
            raise SystemExit("heads_scale: the measuring process failed")
    mark = len(server.lines())
    proc.stdin.write("\n")
    proc.stdin.flush()
    out = json.loads(proc.stdout.readlines()[-1])
    if proc.wait() != 0:
        raise SystemExit("heads_scale: the measuring process failed")
    lines = server.lines()
    out["sidecar_requests"] = sum("manifest-heads" in x for x in lines[start:])
    if not batches:  # the cold batch's requests (a loader's follow it in the other)
        out["first_batch_requests"] = len(lines[mark:])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("video", nargs="+", help="real videos to make the HDF5 files of")
    parser.add_argument("--videos", type=int, default=650_000)
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--batches", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.gettempdir()) / "vidload-heads-scale"
    t = time.perf_counter()
    built = build(args, work)
    print(f"built in {time.perf_counter() - t:.0f} s: {json.dumps(built)}", flush=True)
    server = Server(work, built["real_files"], args.latency_ms)
    tmp = work / "tmp"
    tmp.mkdir()
    try:
        first = fresh_process(server, tmp, args, 0)
        print(f"first process (empty cache): {json.dumps(first)}", flush=True)
        second = fresh_process(server, tmp, args, args.batches)
        print(f"second process (same machine): {json.dumps(second)}", flush=True)
    finally:
        server.stop()
    print(
        f"\n{built['videos']:,} videos on {built['real_files']} real HDF5 files of "
        f"{built['frames']} frames; sidecar {built['sidecar_bytes'] / 2**20:.1f} MiB\n"
        f"first process:  sidecar requests {first['sidecar_requests']}, open "
        f"{first['open_heads_s'] * 1e3:.0f} ms (fetch included), first cold batch "
        f"{first['first_batch_rounds']} round(s)\n"
        f"second process: sidecar requests {second['sidecar_requests']}, open "
        f"{second['open_heads_s'] * 1e3:.1f} ms, one record {second['one_record_s'] * 1e6:.0f} "
        f"us, first cold batch {second['first_batch_rounds']} round(s)\n"
        f"workers' USS after their first batch {_mib(second['uss_first_mib'])}, after "
        f"{args.batches:,} batches of {args.batch_size} {_mib(second['uss_after_mib'])} "
        f"({second['loader_s']:.0f} s)"
    )
    return 0


def _mib(values: list[float]) -> str:
    return " / ".join(f"{v:.1f} MiB" for v in values)


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
