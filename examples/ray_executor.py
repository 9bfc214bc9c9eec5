"""Run `vidload convert` on a Ray cluster: a `concurrent.futures.Executor` adapter in a few lines.

Ray is not a vidload dependency (it adds ~250 MB); install it yourself (`pip install ray`) on the
driver and on every node, with vidload, and put OUTPUT on a file system all nodes share:

    python examples/ray_executor.py videos/ /shared/out --to hdf5

Each shard runs as one Ray task (`num_cpus=1`); Ray re-runs a task whose worker died
(`max_retries`), and a re-run does no video twice (`vidload.shards`). Cancelling a Ray
future does not stop a task that is already running.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import Executor, Future


def _call(fn, *args, **kwargs):
    return fn(*args, **kwargs)


class RayExecutor(Executor):
    """`submit(fn, *args)` as a Ray task; `ObjectRef.future()` is a concurrent.futures.Future."""

    def __init__(self, **options) -> None:
        import ray

        self._task = ray.remote(_call).options(num_cpus=1, max_retries=3, **options)

    def submit(self, fn, /, *args, **kwargs) -> Future:
        return self._task.remote(fn, *args, **kwargs).future()


def main(argv: list[str] | None = None) -> int:
    """Exit status as `vidload convert`'s: 0 when every video converted, else 1."""
    from vidload.cli import print_convert_summary
    from vidload.convert import CONVERT_FORMATS, convert

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", help="folder of videos, or an annotation list or manifest")
    parser.add_argument("output", help="folder for the containers, on storage every node shares")
    parser.add_argument("--to", required=True, choices=CONVERT_FORMATS, help="container format")
    parser.add_argument("--address", default=None, help="ray cluster address (default: local)")
    args = parser.parse_args(argv)
    try:
        import ray
    except ImportError as e:
        raise SystemExit(f"{e}: this example needs Ray (`pip install ray`)") from e
    ray.init(address=args.address)
    report = convert(args.input, args.output, to=args.to, executor=RayExecutor())
    print_convert_summary(report, sys.stdout)
    if report.stopped is not None:
        print(f"stopped: {report.stopped}", file=sys.stderr)
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
