"""The client's CPU per range request: fsspec (s3fs / aiohttp, what vidload reads buckets with)
against obstore (Rust's object_store), on the same requests to the same servers.

    python tools/obstore_cost.py [--objects 16] [--ranges 8] [--range-kib 24] [--rounds 5]

Issue 23 asks whether obstore earns a place beside fsspec: at 20 ms latency a DataLoader
worker's time goes to its own CPU per request once a batch is one round. This tool measures
exactly that and nothing else. One server in its own process, so that the client's process
time is the client's alone: nginx on 127.0.0.1 (`tools/bucket_latency.py`'s, no added
latency) serving `--objects` files of random bytes, read over plain HTTP and over the S3
protocol (path-style GETs, `/<bucket>/<key>`, signed by the clients and answered by nginx's
static handler: the client's whole S3 stack, signing and response parsing, against a server
that costs next to nothing; moto's server is no stand-in here: it answers HTTP/1.0, a new
connection per request, and under load resets some, which the clients retry).

Per server, each client reads the same ranges: a batch of `--objects` x `--ranges` ranges of
`--range-kib` KiB, 2 MiB apart (so that no client merges two into one request: object_store
merges ranges closer than 1 MiB), sent concurrently as one round (vidload's `batch.fetch` for
a DataLoader batch), and the same ranges one request at a time. Rows:

* `fsspec`: the filesystem's `cat_ranges` (s3fs: aiobotocore; HTTP: aiohttp), one call;
* `vidload`: `vidload._storage.fetch` (the batch path: coalescing, fault handling, counting
  on top of fsspec's `cat_ranges`);
* `obstore`: `obstore.get_range_async` for every range, gathered on one asyncio loop (the
  one-at-a-time rows: `obstore.get_range`).

Rows are interleaved, each repeated until it lasts `--min-time` seconds, best of `--rounds`;
CPU is `time.process_time()` of this process (every thread: fsspec's event loop, obstore's
tokio runtime), divided by the requests the server logged for the row (nginx's access
log). Wall time is shown too, though on a loaded 2-core machine the server's CPU competes with
the client's.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

#: nginx serves the objects under /ms0/: path-style S3 reads them as bucket "ms0".
KEY, SECRET, REGION, BUCKET = "obstore-cost", "obstore-cost-secret", "us-east-1", "ms0"
SPACING = 2 << 20


def _objects(folder: Path, n: int, size: int) -> list[str]:
    rng = os.urandom
    names = []
    for i in range(n):
        name = f"o{i:03d}.bin"
        (folder / name).write_bytes(rng(size))
        names.append(name)
    return names


def _ranges(args: argparse.Namespace) -> list[tuple[int, int]]:
    size = args.range_kib << 10
    return [(k * SPACING, k * SPACING + size) for k in range(args.ranges)]


def _clients(kind: str, url: str, names: list[str]) -> dict[str, Callable[[list], Any]]:
    """{row: read(spans)} for spans [(name, start, stop)], each reading all spans."""
    import obstore

    from vidload._storage import Location, fetch
    from vidload._storage.filesystems import filesystem

    if kind == "s3":
        from obstore.store import S3Store

        # the same endpoint for every client, not the environment's
        os.environ.pop("AWS_ENDPOINT_URL", None)

        options = {
            "key": KEY,
            "secret": SECRET,
            "client_kwargs": {"endpoint_url": url, "region_name": REGION},
        }
        fs = filesystem("s3", options)
        base = f"s3://{BUCKET}"
        store: Any = S3Store(
            BUCKET,
            endpoint=url,
            access_key_id=KEY,
            secret_access_key=SECRET,
            region=REGION,
            client_options={"allow_http": True},
        )
        path_of = {n: f"{BUCKET}/{n}" for n in names}
    else:
        from obstore.store import HTTPStore

        options = None
        fs = filesystem("http", None)
        base = url
        store = HTTPStore.from_url(url, client_options={"allow_http": True})
        path_of = {n: f"{url}/{n}" for n in names}
    locations = {n: Location(f"{base}/{n}", options) for n in names}

    def with_fsspec(spans: list) -> Any:
        return fs.cat_ranges(
            [path_of[n] for n, _, _ in spans], [a for _, a, _ in spans], [b for _, _, b in spans]
        )

    def with_vidload(spans: list) -> Any:
        per: dict[str, list[tuple[int, int]]] = {}
        for n, a, b in spans:
            per.setdefault(n, []).append((a, b))
        return fetch([(locations[n], r) for n, r in per.items()])

    loop = asyncio.new_event_loop()

    def with_obstore(spans: list) -> Any:
        async def gather() -> list:
            return await asyncio.gather(
                *(obstore.get_range_async(store, n, start=a, end=b) for n, a, b in spans)
            )

        return loop.run_until_complete(gather())

    def one_by_one(read: Callable[[list], Any]) -> Callable[[list], Any]:
        return lambda spans: [read([s]) for s in spans]

    def obstore_one(spans: list) -> Any:
        return [obstore.get_range(store, n, start=a, end=b) for n, a, b in spans]

    return {
        "fsspec, batch": with_fsspec,
        "vidload, batch": with_vidload,
        "obstore, batch": with_obstore,
        "fsspec, one by one": one_by_one(with_fsspec),
        "obstore, one by one": obstore_one,
    }


def _time(read: Callable[[list], Any], spans: list, min_time: float) -> tuple[float, float, int]:
    """(CPU s, wall s, requests) of `read(spans)` repeated until `min_time` has passed."""
    n = 0
    cpu0, wall0 = time.process_time(), time.perf_counter()
    while True:
        read(spans)
        n += 1
        if time.perf_counter() - wall0 >= min_time:
            break
    return time.process_time() - cpu0, time.perf_counter() - wall0, n * len(spans)


def measure(args: argparse.Namespace) -> dict[str, dict[str, dict[str, float]]]:
    from bucket_latency import Nginx

    work = Path(tempfile.mkdtemp(prefix="vidload-obstore-"))
    size = args.ranges * SPACING
    names = _objects(work, args.objects, size)
    spans = [(n, a, b) for n in names for a, b in _ranges(args)]
    results: dict[str, dict[str, dict[str, float]]] = {}
    nginx = None
    try:
        nginx = Nginx(work, [0])
        for kind, url in (("http", f"{nginx.url}/ms0"), ("s3", nginx.url)):
            clients = _clients(kind, url, names)
            for read in clients.values():  # warm: connections, credentials, first imports
                read(spans[:4])
                read(spans)
            best: dict[str, dict[str, float]] = {}
            for _ in range(args.rounds):
                for row, read in clients.items():
                    before = nginx.requests()
                    cpu, wall, _ = _time(read, spans, args.min_time)
                    sent = nginx.requests() - before
                    us = cpu / sent * 1e6
                    b = best.setdefault(row, {"cpu_us_per_request": us, "wall_ms_per_batch": 0})
                    if us <= b["cpu_us_per_request"]:
                        b["cpu_us_per_request"] = us
                        b["wall_ms_per_batch"] = wall / (sent / len(spans)) * 1e3
            results[kind] = best
    finally:
        if nginx is not None:
            nginx.stop()
        shutil.rmtree(work, ignore_errors=True)
    return results


def render(results: dict[str, dict[str, dict[str, float]]], args: argparse.Namespace) -> str:
    n = args.objects * args.ranges
    lines = [
        f"client CPU per range request ({n} ranges of {args.range_kib} KiB over "
        f"{args.objects} objects from nginx on 127.0.0.1; process time, best of {args.rounds} "
        "interleaved rounds)",
        "",
        "| client | HTTP: CPU us/request | wall ms/batch | S3 protocol: CPU us/request "
        "| wall ms/batch |",
        "|---|--:|--:|--:|--:|",
    ]
    for row in results["http"]:
        h, s = results["http"][row], results["s3"][row]
        lines.append(
            f"| {row} | {h['cpu_us_per_request']:.0f} | {h['wall_ms_per_batch']:.1f} "
            f"| {s['cpu_us_per_request']:.0f} | {s['wall_ms_per_batch']:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--objects", type=int, default=16, help="objects per batch (16)")
    p.add_argument("--ranges", type=int, default=8, help="ranges per object (8)")
    p.add_argument("--range-kib", type=int, default=24, help="KiB per range (24)")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds (5)")
    p.add_argument("--min-time", type=float, default=1.0, help="seconds per timed unit (1.0)")
    args = p.parse_args(argv)
    try:
        import obstore  # noqa: F401
    except ImportError:
        raise SystemExit('obstore_cost: needs obstore: pip install "vidload[obstore]"') from None
    print(render(measure(args), args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
