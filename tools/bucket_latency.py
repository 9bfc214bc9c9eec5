"""`vidload bench --bucket` against a local S3 server with injected per-request latency.

    python tools/bucket_latency.py [--latency-ms 20] [--workers 2] [BENCH OPTIONS ...]

Starts the tests' S3 server (`tests/servers.py`: moto on 127.0.0.1 at a free port, behind the
fault middleware that sleeps `--latency-ms` before answering each request, in that request's
own thread, so concurrent requests overlap their waits as against a real store), creates a
bucket, points the standard AWS configuration at it (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`,
...) and runs `vidload bench --bucket s3://<bucket>/bench` with the other options given. The
upload is not delayed (the admin client is not); every read by vidload is. Needs the test extra
(moto[server], s3fs). The server-side request count per clip is printed too, as a check on the
client-side count of the table.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-ms", type=float, default=20.0, help="per request; 20")
    args, bench_args = parser.parse_known_args(argv)
    from servers import S3Bucket, S3Server  # the tests' servers: one copy of them

    from vidload import bench

    server = S3Server()
    try:
        bucket = S3Bucket(server, "vidload-bench")
        os.environ.update(server.env())
        server.faults.delay_s = args.latency_ms / 1000.0
        url = f"{bucket.url}/bench"
        print(f"S3 server {server.endpoint_url}, {args.latency_ms:g} ms per request, {url}")
        server.faults.clear_log()
        rc = bench.main([*bench_args, "--bucket", url])
        print(f"server side: {len(server.faults.requests())} requests in all (uploads excluded)")
        return rc
    finally:
        server.stop()


if __name__ == "__main__":
    raise SystemExit(main())
