"""Converted data read from real servers (nginx on 127.0.0.1) in the shapes users' buckets
have, against local disk.

    python tools/bucket_latency.py [--latency-ms 0,20] [--workers 0,2] [--batch-size 16]
        [--rounds 3] [--storages hdf5,npy,jpeg,video,original] [--servers multi,one,s3fs,obstore]
        [--work DIR] [--json FILE]
    python tools/bucket_latency.py --long-video 120 [--copies 20] [--latency-ms 0,20] [--rounds 2]

What it does, so that the figure is vidload's and not the server's:

* converts the real clips of ../shared/videos and ../shared/videos-extra under their own
  names (`mma_test.mp4` and `mma_test.avi` share a stem; AVI and WebM originals) at short side
  256 (`vidload convert --to hdf5/npy/jpeg/video`; "original" is the clips as they are, each
  with the persisted index `vidload probe --write-index` writes) once into `--work`, then
  names each container under many folders (`c0000/...`, symlinks: no copies), so that every
  clip of a measured epoch reads an object this process never read before, as an epoch over
  Kinetics does (a video's head, frame table or listing is never cached), and writes each
  storage's own `manifest.csv` for those names (convert's rows, each name under its folder);
* starts nginx itself (Debian's `nginx-light` + `libnginx-mod-http-lua`) with its own
  configuration in a temporary folder, one server (port of 127.0.0.1) per shape of server, each
  serving the folder under `/ms<L>/` after a non-blocking `ngx.sleep(L / 1000)` before each
  answer (`access_by_lua_block`), logging every request with its status:
  `multi`: several ranges in one answer (`multipart/byteranges`, nginx's default);
  `one`: one range a request (`max_ranges 1`: a Range of several is answered with the whole
  object: a server configured so), read over `http://`;
  `s3`: the same one-range server read over `s3://` as a path-style S3 endpoint (bucket
  `ms<L>`: the clients sign `GET /ms<L>/<key>`, nginx's static handler answers, as in
  `tools/obstore_cost.py`; S3 and GCS answer one range a request), by s3fs (row `s3fs`: the
  options carry `use_ssl=False`, which vidload's obstore mapping does not take, so every
  process reads through s3fs) and by obstore where it is installed (row `obstore`: vidload's
  choice, obstore in the DataLoader workers, s3fs in the main process); it is stopped when
  the tool ends;
* reads the same clips as a user would, `ClipDataset("<root>/manifest.csv", Source(<root>))`
  (segment sampling, 8 frames, one clip per video, training, crop 224) through a `DataLoader`
  (batch `--batch-size`, each of `--workers`; the batch is read by
  `ClipDataset.__getitems__`), from local disk and from each server at each latency. Each
  epoch builds its dataset and loader afresh (the manifest read, the workers forked, each
  worker's heads sidecar read: what a job pays at start-up). Rows are interleaved (every
  storage x server x latency x workers in each round, after a warm-up round not counted).
  Clock: wall (`time.perf_counter`): "steady" is the clips after the first batch over the
  time after it arrived, "with start-up" all clips over the time from building the dataset,
  "first batch" the time to the first batch; each the median of `--rounds` epochs (the best
  in the JSON), each over objects not read before. Process CPU time (`time.process_time`,
  every thread of the one process) per clip with 0 workers; requests per clip and the 4xx
  answers (a missing object asked: a guessed name) from nginx's log; rounds per batch (0
  workers) from vidload's count (`STATS["rounds"]`: the waits the process made);
* writes the heads sidecar `vidload convert` writes (`manifest-heads.npz`: HDF5, npy,
  `--to video` each video's persisted index, JPEG folders each folder's count) for the
  spread names, so that a batch of containers never opened is one round (`--no-heads`:
  without it, a round for the heads, the videos' own indexes, or the folders' listings,
  before the frames).

Needs nginx with the lua module (Debian/Ubuntu: `apt-get install nginx-light
libnginx-mod-http-lua`); without it the tool says so and exits 2. The `s3fs` and `obstore`
rows need s3fs (`vidload[s3]`) and obstore (`vidload[obstore]`); a row whose client is
missing is left out, said once. The tests never need nginx: they use the Python servers of
tests/servers.py, and check the configuration and manifests this tool writes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
#: ../shared of the checkout (or of a folder above it: a worktree under /work/wt/<name>)
SHARED = next(
    (p / "shared" for p in HERE.parents if (p / "shared" / "videos").is_dir()),
    HERE.parent.parent / "shared",
)
VIDEO_DIRS = ("videos", "videos-extra")
CONTAINERS = ("hdf5", "npy", "jpeg")
ALL_STORAGES = ("hdf5", "npy", "jpeg", "video", "original")
#: Server shapes nginx is started in (see the module docstring).
SHAPES = ("multi", "one", "s3")
#: The rows of servers: (row, shape, protocol); `s3fs` and `obstore` both read the `s3` one.
SERVERS = {
    "multi": ("multi", "http"),
    "one": ("one", "http"),
    "s3fs": ("s3", "s3"),
    "obstore": ("s3", "s3"),
}
#: The S3 credentials the clients sign with (nginx checks none) and the region.
KEY, SECRET, REGION = "bucket-latency", "bucket-latency-secret", "us-east-1"
MODULES = ("ndk_http_module.so", "ngx_http_lua_module.so")
MODULE_DIRS = ("/usr/lib/nginx/modules", "/usr/share/nginx/modules", "/usr/lib64/nginx/modules")
INSTALL = (
    "nginx with its lua module is needed for this benchmark: on Debian/Ubuntu "
    "`sudo apt-get install nginx-light libnginx-mod-http-lua` (the tests never need it)"
)
#: What is not a container of a converted folder (not spread, not a manifest row).
METADATA = ("manifest.csv", "classes.txt", "manifest-heads.npz", "vidload-convert.json")


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


#: The S3 listing (ListObjectsV2 with a delimiter) of the prefix a request asks, from the
#: documents `write_listings` wrote (an empty one where none: S3 answers so for no key).
LIST_LUA = (
    "content_by_lua_block {{ "
    'local p = ngx.unescape_uri(ngx.var.arg_prefix or "") '
    'if p:find("..", 1, true) then p = "" end '
    'ngx.header.content_type = "application/xml" '
    'local f = io.open("{listings}/" .. p .. "{name}", "rb") '
    "if f then ngx.print(f:read(\"*a\")) f:close() else ngx.print('{empty}') end }}"
)
LIST_NAME = "_list.xml"
_LIST_HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
)


def listing_xml(prefix: str, files: list[tuple[str, int, float]], folders: list[str]) -> str:
    """ListObjectsV2's answer for `prefix` with delimiter "/": `files` (name, size, mtime)
    and `folders` (names) directly under it; the ETags nginx's static handler sends."""
    import html

    parts = [
        _LIST_HEAD,
        f"<Prefix>{html.escape(prefix)}</Prefix><Delimiter>/</Delimiter>",
        f"<KeyCount>{len(files) + len(folders)}</KeyCount><MaxKeys>1000000</MaxKeys>",
        "<IsTruncated>false</IsTruncated>",
    ]
    for name, size, mtime in files:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(mtime))
        parts.append(
            f"<Contents><Key>{html.escape(prefix + name)}</Key><LastModified>{stamp}"
            f'</LastModified><ETag>"{int(mtime):x}-{size:x}"</ETag><Size>{size}</Size>'
            "<StorageClass>STANDARD</StorageClass></Contents>"
        )
    for name in folders:
        parts.append(f"<CommonPrefixes><Prefix>{html.escape(prefix + name)}/</Prefix>")
        parts.append("</CommonPrefixes>")
    parts.append("</ListBucketResult>")
    return "".join(parts)


def write_listings(data: Path, top: str, listings: Path) -> int:
    """The S3 listings of every folder under `data/top` (links followed) as
    `listings/<prefix>/_list.xml`, for the `s3` server (nginx's static handler answers GETs,
    not listings; a dataset over `s3://` lists its folders to find missing videos); the
    number written."""
    n = 0
    for folder, dirs, names in os.walk(data / top, followlinks=True):
        rel = Path(folder).relative_to(data).as_posix() + "/"
        files = []
        for name in sorted(names):
            st = os.stat(os.path.join(folder, name))
            files.append((name, st.st_size, st.st_mtime))
        out = listings / rel / LIST_NAME
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(listing_xml(rel, files, sorted(d for d in dirs if not d.startswith("."))))
        n += 1
    return n


def nginx_conf(
    root: Path,
    latencies_ms: list[float],
    ports: dict[str, int],
    folder: Path,
    modules: list[str],
    listings: Path | None = None,
) -> str:
    """nginx's configuration: for each shape in `ports` ("multi", "one", "s3") a server on
    127.0.0.1 at its port serving `root` under `/ms<L>/` for each latency L; "one" and "s3"
    answer one range a request (`max_ranges 1`); "s3" answers a bucket's listing
    (`/ms<L>?list-type=2&prefix=...`) from the documents under `listings`."""
    servers = []
    for shape, port in ports.items():
        if shape not in SHAPES:
            raise ValueError(f"unknown server shape {shape!r}; one of {SHAPES}")
        locations = []
        for ms in latencies_ms:
            sleep = f"access_by_lua_block {{ ngx.sleep({ms / 1000:.4f}) }}" if ms > 0 else ""
            locations.append(f"location /ms{ms:g}/ {{ alias {root}/; autoindex on; {sleep} }}")
            if shape == "s3" and listings is not None:
                empty = listing_xml("", [], []).replace("'", "")
                lua = LIST_LUA.format(listings=listings, name=LIST_NAME, empty=empty)
                locations.append(f"location = /ms{ms:g} {{ {sleep} {lua} }}")
        ranges = "max_ranges 1;" if shape in ("one", "s3") else ""
        servers += [
            f"  server {{ listen 127.0.0.1:{port}; {ranges}",
            *(f"    {loc}" for loc in locations),
            "  }",
        ]
    user = "user root;" if os.geteuid() == 0 else ""
    return (
        "\n".join(
            [
                *(f"load_module {m};" for m in modules),
                user,
                "daemon off; master_process on; worker_processes 1;",
                f"pid {folder}/nginx.pid; error_log {folder}/error.log warn;",
                "events { worker_connections 4096; }",
                "http {",
                "  sendfile on; tcp_nopush on; tcp_nodelay on;",
                "  keepalive_requests 1000000; keepalive_timeout 300s;",
                "  open_file_cache max=100000 inactive=600s;",
                "  default_type application/octet-stream;",
                "  log_format counted '$msec $request_time $request_method $uri $status "
                '$bytes_sent "$http_range"\';',
                f"  access_log {folder}/access.log counted;",
                *(
                    f"  {k}_temp_path {folder}/{k};"
                    for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
                ),
                *servers,
                "}",
            ]
        )
        + "\n"
    )


def statuses(lines: list[bytes]) -> Counter:
    """{HTTP status: answers} of log lines in `nginx_conf`'s format."""
    return Counter(int(x.split()[4]) for x in lines if x.strip())


class Nginx:
    """nginx serving `root` on 127.0.0.1 under `/ms<L>/` for each latency L (ms), one server
    per shape (`nginx_conf`); `urls[shape]` is each one's, `url` the first's."""

    def __init__(
        self,
        root: Path,
        latencies_ms: list[float],
        shapes: tuple[str, ...] = ("multi",),
        listings: Path | None = None,
    ) -> None:
        binary, modules = find_nginx()
        self.dir = Path(tempfile.mkdtemp(prefix="vidload-nginx-"))
        self.log = self.dir / "access.log"
        ports = {shape: _free_port() for shape in shapes}
        conf = nginx_conf(root, latencies_ms, ports, self.dir, modules, listings)
        (self.dir / "nginx.conf").write_text(conf)
        self.proc = subprocess.Popen(
            [binary, "-p", str(self.dir), "-c", str(self.dir / "nginx.conf")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for port in ports.values():
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                    raise SystemExit(f"bucket_latency: nginx did not start: {err.strip()}")
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    time.sleep(0.05)
        self.urls = {shape: f"http://127.0.0.1:{port}" for shape, port in ports.items()}
        self.url = self.urls[shapes[0]]
        self.port = ports[shapes[0]]

    def lines(self, since: int = 0) -> list[bytes]:
        """The log's lines from line `since` on."""
        with open(self.log, "rb") as f:
            return f.readlines()[since:]

    def requests(self) -> int:
        """Requests answered so far (lines of its log)."""
        with open(self.log, "rb") as f:
            return sum(1 for _ in f)

    def rounds(self, since: int, gap_s: float) -> int:
        """Rounds of requests among the log's lines from line `since` on: their start times
        (when answered less how long it took), sorted, split where two lie more than `gap_s`
        apart (at 20 ms a request starts at least 20 ms after the round before it was sent;
        within a round they start together). Meaningful for one client process (0 workers)."""
        lines = self.lines(since)
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
    rows: list[Any]  # its manifest's rows (ManifestRow), one per base video
    object_bytes: float  # bytes per container (a folder's files summed)
    copies: int = 0
    entries: int = 0


def _inputs(work: Path) -> Path:
    """The real clips under their own names: `mma_test.mp4` and `mma_test.avi` share a stem
    (as a user's folder may), and two are not MP4 (AVI, WebM)."""
    inputs = work / "inputs"
    if inputs.is_dir():
        return inputs
    tmp = work / "inputs.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    found = 0
    for d in VIDEO_DIRS:
        for p in sorted((SHARED / d).glob("*")):
            if p.suffix.lower() in (".mp4", ".avi", ".webm", ".mkv"):
                os.symlink(p, tmp / p.name)
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


def _containers(base: Path) -> list[str]:
    """The names of `base`'s containers (files and frame folders; not its metadata, not the
    persisted indexes)."""
    return sorted(
        p.name
        for p in base.iterdir()
        if p.name not in METADATA
        and not p.name.startswith(".")
        and ".vidload-index" not in p.name
        and not p.name.endswith(".timestamps")
    )


def _storage(work: Path, name: str, short_side: int) -> Storage:
    from vidload.manifest import ManifestRow, read_manifest
    from vidload.sources.video import VideoSource

    base = _convert(work, name, short_side)
    if name != "original":
        rows = [r for r in read_manifest(base / "manifest.csv") if r.status != "failed"]
    else:  # as `vidload probe --write-index` does: read by ranges over a URL
        src = VideoSource(base)
        rows = []
        for f in _containers(base):
            if not any(p.name.startswith(f + ".") for p in base.iterdir()):
                src.write_index(f)
            rows.append(ManifestRow(f, actual_frames=src.actual_frames(f)))
    names = _containers(base) if name != "original" else [r.video_id for r in rows]
    object_bytes = sum(_size(base / n) for n in names) / max(1, len(rows))
    return Storage(name, base, rows, object_bytes)


def spread_rows(rows: list[Any], names: set[str], prefix: str) -> list[Any]:
    """`rows` (ManifestRow) for the containers under `prefix`: every cell that names one of
    the base folder's `names` (the video id, and any column naming its container) under the
    prefix; label 0 where there is none (the clips are read for training)."""
    out = []
    for row in rows:
        changes: dict[str, Any] = {}
        for f in dataclasses.fields(row):
            value = getattr(row, f.name)
            if isinstance(value, str) and (f.name == "video_id" or value in names):
                changes[f.name] = f"{prefix}/{value}"
        extra = {k: (f"{prefix}/{v}" if v in names else v) for k, v in row.extra.items()}
        changes["extra"] = extra
        if row.label is None:
            changes["label"] = 0
        out.append(dataclasses.replace(row, **changes))
    return out


def _spread(storage: Storage, data: Path, copies: int) -> None:
    """`data/<storage>/cNNNN/<name>` -> the base container, for NNNN < copies (symlinks), and
    `data/<storage>/manifest.csv`: the base manifest's rows under each folder."""
    from vidload.manifest import write_manifest

    folder = data / storage.name
    folder.mkdir(parents=True, exist_ok=True)
    names = [
        p.name
        for p in storage.base.iterdir()
        if p.name not in METADATA and not p.name.startswith(".")
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
    rows = [
        row for k in range(copies) for row in spread_rows(storage.rows, set(names), f"c{k:04d}")
    ]
    write_manifest(folder / "manifest.csv", rows)
    storage.copies = copies
    storage.entries = len(rows)


def _heads(storage: Storage, data: Path, write: bool) -> None:
    """The sidecar of heads `vidload convert` writes beside its manifest (HDF5, npy, `--to
    video`: each video's persisted index, JPEG folders: each folder's count), for the spread
    names (`write`), or none (`--no-heads`: each new container's head, each new video's index,
    each new folder's listing, is a round)."""
    from vidload.manifest import read_manifest
    from vidload.sources._heads import HEADS_NAME, write_heads

    folder = data / storage.name
    (folder / HEADS_NAME).unlink(missing_ok=True)
    if write and storage.name in ("hdf5", "npy", "video", "jpeg"):
        ids = [r.video_id for r in read_manifest(folder / "manifest.csv")]
        write_heads(_source(storage.name, str(folder), None), ids)


# --- measuring ----------------------------------------------------------------------------------


class Slice:
    """A sampler of the indices of one epoch."""

    def __init__(self, indices: list[int]) -> None:
        self.indices = indices

    def __iter__(self):
        return iter(self.indices)

    def __len__(self) -> int:
        return len(self.indices)


def s3_options(endpoint: str, row: str) -> dict[str, Any]:
    """The storage options of an `s3://` row against nginx at `endpoint`: explicit
    credentials and the endpoint (what vidload's obstore mapping takes); row "s3fs" adds
    `use_ssl=False` (s3fs's own, harmless over http://), which the mapping does not take, so
    that every process reads through s3fs."""
    options: dict[str, Any] = {
        "key": KEY,
        "secret": SECRET,
        "client_kwargs": {"endpoint_url": endpoint, "region_name": REGION},
    }
    if row == "s3fs":
        options["use_ssl"] = False
    return options


def _source(storage: str, root: str, options: dict[str, Any] | None) -> Any:
    from vidload.sources.hdf5 import Hdf5Source
    from vidload.sources.jpeg import JpegSource
    from vidload.sources.npy import NpySource
    from vidload.sources.video import VideoSource

    kinds = {"hdf5": Hdf5Source, "npy": NpySource, "jpeg": JpegSource}
    # videos over a URL by byte ranges (the persisted index), no cache: what issue 23 measures
    return kinds.get(storage, VideoSource)(root, storage_options=options)


@dataclass
class Backend:
    label: str  # "local", "multi 20 ms", "s3fs 0 ms", ...
    server: str | None  # a key of SERVERS, None for local
    latency_ms: float = 0.0

    def root(self, storage: str, work: Path, nginx: Nginx | None) -> tuple[str, Any]:
        """(the storage's root, its storage options) for this backend."""
        if self.server is None or nginx is None:
            return str(work / "data" / storage), None
        shape, protocol = SERVERS[self.server]
        base = nginx.urls[shape]
        if protocol == "s3":
            return f"s3://ms{self.latency_ms:g}/{storage}", s3_options(base, self.server)
        return f"{base}/ms{self.latency_ms:g}/{storage}", None


@dataclass
class Run:
    storage: str
    backend: Backend
    workers: int
    batch_size: int
    steady: list[float] = field(default_factory=list)  # clips/s after the first batch
    overall: list[float] = field(default_factory=list)  # clips/s from building the dataset
    first_s: list[float] = field(default_factory=list)  # time to the first batch
    cpu_ms: list[float] = field(default_factory=list)  # per clip, 0 workers
    server_requests: list[float] = field(default_factory=list)  # per clip
    client_rounds: list[float] = field(default_factory=list)  # per batch, 0 workers
    client4xx: Counter = field(default_factory=Counter)  # 4xx answers over the measured epochs
    error: str | None = None  # why an epoch failed (the row is not read again)


def _epoch(run: Run, indices: list[int], work: Path, server: Nginx | None, count: bool) -> None:
    from torch.utils.data import DataLoader

    from vidload import ClipDataset
    from vidload._storage import STATS

    root, options = run.backend.root(run.storage, work, server)
    remote = run.backend.server is not None and server is not None
    served = server.requests() if remote and server is not None else 0
    before = dict(STATS)
    cpu, t0 = time.process_time(), time.perf_counter()
    ds = ClipDataset(
        f"{root}/manifest.csv",
        _source(run.storage, root, options),
        num_frames=8,
        train=True,
        seed=0,
        crop=224,
    )
    loader = DataLoader(
        ds, batch_size=run.batch_size, sampler=Slice(indices), num_workers=run.workers
    )
    n = first_n = 0
    t1 = t0
    for clips, _labels in loader:
        if n == 0:
            t1, first_n = time.perf_counter(), clips.shape[0]
        n += clips.shape[0]
    t2 = time.perf_counter()
    cpu = time.process_time() - cpu
    if n != len(indices):
        raise RuntimeError(f"{run.storage} {run.backend.label}: {n} clips of {len(indices)}")
    if not count:
        return
    if n == first_n:
        raise ValueError(f"one batch an epoch ({n} clips): no steady state; ask more clips")
    run.steady.append((n - first_n) / (t2 - t1))
    run.overall.append(n / (t2 - t0))
    run.first_s.append(t1 - t0)
    batches = -(-n // run.batch_size)
    if run.workers == 0:
        run.cpu_ms.append(cpu / n * 1e3)
        run.client_rounds.append((STATS["rounds"] - before["rounds"]) / batches)
    if remote:
        time.sleep(0.05)  # nginx writes its log line after the answer
        lines = server.lines(served)  # type: ignore[union-attr]
        run.server_requests.append(len(lines) / n)
        run.client4xx.update({s: k for s, k in statuses(lines).items() if 400 <= s < 500})


def _backends(args: argparse.Namespace) -> list[Backend]:
    out = [Backend("local", None)]
    missing = []
    for row in args.servers:
        if row in ("s3fs", "obstore"):
            module = "s3fs" if row == "s3fs" else "obstore"
            try:
                __import__(module)
            except ImportError:
                missing.append(f"{row} (needs {module})")
                continue
        out += [Backend(f"{row} {ms:g} ms", row, ms) for ms in args.latency_ms]
    if missing:
        print(f"left out: {', '.join(missing)}", flush=True)
    return out


def measure(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    torch.set_num_threads(1)
    os.environ.pop("AWS_ENDPOINT_URL", None)  # the options name nginx, not the environment
    os.environ.pop("AWS_ENDPOINT_URL_S3", None)
    work = Path(args.work)
    storages = [_storage(work, s, args.short_side) for s in args.storages]
    per_round = {s.name: args.clips if s.name in CONTAINERS else args.video_clips for s in storages}
    rounds = args.rounds + 1  # the first warms up (imports, connections) and is not counted
    for s in storages:
        copies = -(-per_round[s.name] * rounds // len(s.rows))
        _spread(s, work / "data", copies)
        _heads(s, work / "data", args.heads)
    backends = _backends(args)
    shapes = tuple(dict.fromkeys(SERVERS[b.server][0] for b in backends if b.server))
    listings = work / "listings"
    if "s3" in shapes:
        shutil.rmtree(listings, ignore_errors=True)
        for s in storages:
            write_listings(work / "data", s.name, listings)
    server = Nginx(work / "data", args.latency_ms, shapes or ("multi",), listings)
    print(f"nginx {server.urls}, latencies {args.latency_ms} ms, data {work / 'data'}", flush=True)
    runs = [
        Run(s.name, b, w, args.batch_size) for s in storages for b in backends for w in args.workers
    ]
    loads = [os.getloadavg()[0]]
    try:
        for r in range(rounds):
            for run in runs:
                n = per_round[run.storage]
                if run.error is not None:
                    continue
                served = server.requests()
                try:
                    _epoch(run, list(range(r * n, (r + 1) * n)), work, server, count=r > 0)
                except Exception as e:  # noqa: BLE001 - said in the row, the others go on
                    run.error = f"{type(e).__name__}: {e}"
                    if run.backend.server is not None:
                        lines = server.lines(served)
                        run.client4xx.update(
                            {s: k for s, k in statuses(lines).items() if 400 <= s < 500}
                        )
                    print(f"{run.storage} {run.backend.label} {run.workers} w: {run.error}")
            loads.append(os.getloadavg()[0])
            print(f"round {r} done" + (" (warm-up)" if r == 0 else ""), flush=True)
    finally:
        server.stop()
    out: dict[str, Any] = {
        "rows": [],
        "args": {k: v for k, v in vars(args).items()},
        "load": [min(loads), max(loads)],
    }
    for run in runs:
        s = next(x for x in storages if x.name == run.storage)
        med = statistics.median
        if not run.steady:
            out["rows"].append(
                {
                    "storage": run.storage,
                    "backend": run.backend.label,
                    "server": run.backend.server,
                    "latency_ms": run.backend.latency_ms,
                    "workers": run.workers,
                    "error": run.error or "no epoch measured",
                    "answers_4xx": {str(k): v for k, v in sorted(run.client4xx.items())},
                }
            )
            continue
        out["rows"].append(
            {
                "storage": run.storage,
                "backend": run.backend.label,
                "server": run.backend.server,
                "latency_ms": run.backend.latency_ms,
                "workers": run.workers,
                "steady": run.steady,
                "overall": run.overall,
                "first_s": run.first_s,
                "steady_median": med(run.steady),
                "steady_best": max(run.steady),
                "overall_median": med(run.overall),
                "first_ms_median": med(run.first_s) * 1e3,
                "cpu_ms_per_clip": med(run.cpu_ms) if run.cpu_ms else None,
                "server_requests_per_clip": (
                    med(run.server_requests) if run.server_requests else None
                ),
                "client_rounds_per_batch": med(run.client_rounds) if run.client_rounds else None,
                "answers_4xx": {str(k): v for k, v in sorted(run.client4xx.items())},
                "object_bytes": s.object_bytes,
                "error": run.error,
            }
        )
    return out


def render(result: dict[str, Any]) -> str:
    """One line per storage x server x latency x workers: medians of the rounds."""
    rows = result["rows"]
    local = {(r["storage"], r["workers"]): r for r in rows if r["backend"] == "local"}
    head = [
        "storage",
        "server",
        "workers",
        "steady clips/s (best)",
        "vs local",
        "with start-up clips/s",
        "vs local",
        "first batch ms",
        "req/clip",
        "4xx",
        "CPU ms/clip",
        "rounds/batch",
    ]
    lines = ["| " + " | ".join(head) + " |", "|---|---|--:" + "|--:" * (len(head) - 3) + "|"]
    failed = []
    for r in rows:
        base = local.get((r["storage"], r["workers"]))
        n4 = sum(r["answers_4xx"].values())
        if "steady_median" not in r or base is None or "steady_median" not in base:
            failed.append(f"{r['storage']}, {r['backend']}, {r['workers']} w: {r.get('error')}")
            codes = ", ".join(f"{k}: {v}" for k, v in r["answers_4xx"].items())
            cells = [r["storage"], r["backend"], str(r["workers"]), f"failed ({len(failed)})"]
            cells += ["-"] * 5 + [f"{n4} ({codes})" if n4 else "-", "-", "-"]
            lines.append("| " + " | ".join(cells) + " |")
            continue
        cells = [
            r["storage"],
            r["backend"],
            str(r["workers"]),
            f"{r['steady_median']:.1f} ({r['steady_best']:.1f})",
            f"{r['steady_median'] / base['steady_median']:.2f}x",
            f"{r['overall_median']:.1f}",
            f"{r['overall_median'] / base['overall_median']:.2f}x",
            f"{r['first_ms_median']:.0f}",
            "-"
            if r["server_requests_per_clip"] is None
            else f"{r['server_requests_per_clip']:.2f}",
            "-"
            if r["server"] is None
            else (
                str(n4)
                + (
                    " (" + ", ".join(f"{k}: {v}" for k, v in r["answers_4xx"].items()) + ")"
                    if n4
                    else ""
                )
            ),
            "-" if r["cpu_ms_per_clip"] is None else f"{r['cpu_ms_per_clip']:.2f}",
            "-"
            if r["client_rounds_per_batch"] is None or r["server"] is None
            else f"{r['client_rounds_per_batch']:.2f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lo, hi = result.get("load", [0, 0])
    lines.append(f"\nload average (1 min) over the run: {lo:.1f}-{hi:.1f}")
    lines += [f"failed ({k}): {why}" for k, why in enumerate(failed, 1)]
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
        "--servers",
        type=lambda t: [s for s in t.split(",") if s],
        default=list(SERVERS),
        help=",".join(SERVERS) + " (see the docstring)",
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
    bad = [s for s in args.servers if s not in SERVERS]
    if bad:
        parser.error(f"--servers: unknown {bad}; choose from {tuple(SERVERS)}")
    find_nginx()  # says how to install it before any conversion
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # nginx is stopped on the way out
    if args.long_video is not None:
        print(long_video(args))
        return 0
    result = measure(args)
    print(render(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
