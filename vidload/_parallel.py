"""The parallel map behind `convert` and `probe`: any `concurrent.futures.Executor`, or a local
pool of spawned processes that die with their parent.

Local workers are spawned (never forked: FFmpeg and OpenCV thread pools do not survive a fork)
and set themselves up in `_init_worker`:

* they ask Linux to SIGKILL them when the process that spawned them dies
  (`prctl(PR_SET_PDEATHSIG)`), so a `kill -9` of `vidload convert`, a preemption or the OOM
  killer does not leave a pool writing queued containers for nobody. Where
  prctl is missing (not Linux), `parent_gone()` lets the task loop stop before the next video.
OpenCV is already on one thread in every process that imports vidload (`vidload._cv2`).

Every task process (a local worker, a Dask or Ray worker) calls `prepare_task_process()`, which
fixes glibc's allocator settings.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from typing import TypeVar

from vidload._checks import check_int
from vidload._cpus import available_cpus, default_workers

__all__ = [
    "parent_gone",
    "prepare_task_process",
    "resolve_workers",
    "run_parallel",
    "shard_size_for",
]

T = TypeVar("T")
R = TypeVar("R")

_PR_SET_PDEATHSIG = 1
#: glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: The largest mmap threshold glibc's dynamic rule reaches on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX),
#: and the trim threshold it pairs with it (twice that).
_MMAP_THRESHOLD = 32 << 20
_TRIM_THRESHOLD = 64 << 20

_parent_pid: int | None = None  # set in local pool workers: the driver's pid


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    except OSError:
        return None


def _init_worker(parent: int) -> None:
    """A local pool worker's setup: SIGKILL it when its parent dies (Linux), or now if it
    already has; then `prepare_task_process`."""
    global _parent_pid
    _parent_pid = parent
    libc = _libc()
    if libc is not None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)
    prepare_task_process()


def parent_gone() -> bool:
    """True in a local pool worker whose driver has died (always False elsewhere)."""
    return _parent_pid is not None and os.getppid() != _parent_pid


@functools.cache
def prepare_task_process() -> None:
    """Set up the process a conversion task runs in, once: undo allocator settings that make
    conversion slow (glibc only).

    glibc reads `MALLOC_TRIM_THRESHOLD_` / `MALLOC_MMAP_THRESHOLD_` once, when the process
    starts; setting the variable later changes nothing, but `mallopt` does. Dask's worker
    launcher sets `MALLOC_TRIM_THRESHOLD_=65536`, which also switches off glibc's dynamic mmap
    threshold: every decoded frame (~260 KB at 340x256, above the fixed 128 KiB mmap threshold)
    is then mmapped and unmapped, page faults and all. When either variable (or a
    `GLIBC_TUNABLES` malloc setting) is present, this sets the values the dynamic rule
    converges to for large frames (mmap threshold 32 MiB, trim threshold 64 MiB). Without them
    glibc's own dynamic rule is left alone.
    """
    env = os.environ
    tunables = env.get("GLIBC_TUNABLES", "")
    if not (
        "MALLOC_TRIM_THRESHOLD_" in env
        or "MALLOC_MMAP_THRESHOLD_" in env
        or "glibc.malloc.trim_threshold" in tunables
        or "glibc.malloc.mmap_threshold" in tunables
    ):
        return
    libc = _libc()
    if libc is None or not hasattr(libc, "mallopt"):
        return
    libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
    libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)


def local_pool(workers: int) -> ProcessPoolExecutor:
    """`workers` spawned processes that die with this one (module doc)."""
    ctx = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(
        workers, mp_context=ctx, initializer=_init_worker, initargs=(os.getpid(),)
    )


def run_parallel(
    fn: Callable[[T], R],
    jobs: Sequence[T],
    workers: int,
    *,
    executor: Executor | None = None,
) -> Generator[R, None, None]:
    """`fn(job)` for every job, in completion order.

    With `executor`, the jobs are submitted to it (it is not shut down here). Without, they run
    on `workers` spawned processes (`local_pool`); `workers == 1`, or a single job, runs them
    in this process. `fn` and the jobs must be picklable; an exception `fn` raises propagates.
    Closing the iterator early cancels the jobs not yet started.
    """
    own = None
    if executor is None:
        if workers == 1 or len(jobs) <= 1:
            for job in jobs:
                yield fn(job)
            return
        executor = own = local_pool(min(workers, len(jobs)))
    futures: list[Future[R]] = []
    try:
        futures = [executor.submit(fn, job) for job in jobs]
        for future in as_completed(futures):
            yield future.result()
    finally:
        for future in futures:
            future.cancel()
        if own is not None:
            own.shutdown(wait=True, cancel_futures=True)


def resolve_workers(workers: int | None, executor: Executor | None) -> tuple[int, int]:
    """(local worker processes, decoding threads per task) for a run of `convert` or `probe`.

    On an executor each task decodes on one thread (the cluster's workers are its unit of
    parallelism) and `workers` must be None; on the local pool the CPUs this process may use are
    shared among the `workers` processes.
    """
    if executor is not None:
        if workers is not None:
            raise ValueError("workers applies to the local pool; pass it or an executor, not both")
        if not isinstance(executor, Executor):
            raise TypeError(
                f"executor must be a concurrent.futures.Executor, got {type(executor).__name__}"
            )
        return 1, 1
    # None: this process's share of the CPUs it may use (`vidload._cpus.default_workers()`)
    workers = default_workers() if workers is None else check_int("workers", workers, minimum=1)
    return workers, max(1, available_cpus() // workers)


def shard_size_for(shard_size: int | None, num_jobs: int, default: int) -> int:
    """Videos per task: `shard_size` (an int >= 1), or for None `default`, fewer when a run is
    small (about four tasks per CPU, so every CPU gets work): `min(default, num_jobs // (4 ×
    CPUs))`, at least 1."""
    if shard_size is not None:
        return check_int("shard_size", shard_size, minimum=1)
    return max(1, min(default, num_jobs // (4 * available_cpus())))
