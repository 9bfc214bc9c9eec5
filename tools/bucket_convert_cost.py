"""What converting into a bucket costs against a local OUTPUT: staging plus one upload a video.

    python tools/bucket_convert_cost.py VIDEOS [--to hdf5] [--latency-ms 20] [--rounds 3]

Converts the videos of VIDEOS (`convert(..., workers=1)`: everything in this process) into a
local folder, into a local S3 server (moto, from `tests/servers.py`, run in a child process so
its CPU is not counted here) and into the same server with `--latency-ms` added to every
request. Rows are interleaved, best of `--rounds`; each run starts from an empty OUTPUT.
Prints, per video, the wall time and this process's CPU time (`time.process_time`: decode,
encode, and for a bucket the upload's client work), and the requests the bucket run made.
Needs moto[server] and s3fs (the test extra).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def _serve(queue, latency_s: float, stop) -> None:  # in the child process
    from servers import S3Server

    server = S3Server()
    server.faults.delay_s = latency_s
    queue.put((server.endpoint_url, server.storage_options))
    stop.wait()
    server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("videos")
    parser.add_argument("--to", default="hdf5", choices=("jpeg", "hdf5", "npy"))
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    import boto3

    from vidload.convert import convert

    ctx = mp.get_context("spawn")
    servers = []
    for latency in (0.0, args.latency_ms / 1000):
        queue, stop = ctx.Queue(), ctx.Event()
        proc = ctx.Process(target=_serve, args=(queue, latency, stop), daemon=True)
        proc.start()
        endpoint, options = queue.get(timeout=60)
        servers.append((latency, endpoint, options, proc, stop))
    try:
        for _, endpoint, options, _, _ in servers:
            boto3.client(
                "s3",
                endpoint_url=endpoint,
                aws_access_key_id=options["key"],
                aws_secret_access_key=options["secret"],
                region_name="us-east-1",
            ).create_bucket(Bucket="cost")
        targets = [("local disk", None, None)] + [
            (f"S3 (moto), +{lat * 1000:.0f} ms/request", opts, i)
            for i, (lat, _, opts, _, _) in enumerate(servers)
        ]
        best: dict[str, tuple[float, float]] = {}
        videos = 0
        with tempfile.TemporaryDirectory(prefix="bucket-cost-") as tmp:
            for r in range(args.rounds):
                for name, opts, _ in targets:
                    out = f"s3://cost/r{r}" if opts is not None else str(Path(tmp) / f"r{r}")
                    wall, cpu = time.perf_counter(), time.process_time()
                    report = convert(args.videos, out, to=args.to, workers=1, progress=False,
                                     storage_options=opts)  # fmt: skip
                    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                    videos = len(report.converted)
                    old = best.get(name, (float("inf"), float("inf")))
                    best[name] = (min(old[0], wall), min(old[1], cpu))
                    if opts is None:
                        shutil.rmtree(out)
        base_wall, base_cpu = best["local disk"]
        print(f"{videos} videos, --to {args.to}, best of {args.rounds} (wall, process CPU)")
        head = ("OUTPUT", "wall s/video", "x local", "CPU s/video", "x local")
        print(f"{head[0]:34} {head[1]:>12} {head[2]:>8} {head[3]:>12} {head[4]:>8}")
        for name, (wall, cpu) in best.items():
            print(
                f"{name:34} {wall / videos:12.3f} {wall / base_wall:8.2f} "
                f"{cpu / videos:12.3f} {cpu / base_cpu:8.2f}"
            )
    finally:
        for _, _, _, proc, stop in servers:
            stop.set()
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
