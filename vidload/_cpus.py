"""How many CPUs this process may use: the one home for worker-count defaults.

`os.cpu_count()` counts the machine's cores, not the ones this process may run on: a SLURM job,
`taskset`, `docker --cpuset-cpus` or a cgroup cpuset restricts the affinity mask, and a default
of "all cores" then oversubscribes. Under torchrun every local rank would also take all of them,
so the CPUs are divided among the `LOCAL_WORLD_SIZE` ranks of this node.

Imports nothing heavy (no torch), so the conversion tools can use it.
"""

from __future__ import annotations

import os

__all__ = ["available_cpus", "default_workers", "local_world_size"]


def available_cpus() -> int:
    """CPUs in this process's affinity mask (`os.sched_getaffinity`), else `os.cpu_count()`;
    always >= 1."""
    getaffinity = getattr(os, "sched_getaffinity", None)
    if getaffinity is not None:
        try:
            return max(1, len(getaffinity(0)))
        except OSError:
            pass
    return max(1, os.cpu_count() or 1)


def local_world_size() -> int:
    """Processes of this job on this node: torchrun's `LOCAL_WORLD_SIZE` (1 when unset or bad)."""
    raw = os.environ.get("LOCAL_WORLD_SIZE", "")
    try:
        n = int(raw)
    except ValueError:
        return 1
    return max(1, n)


def default_workers() -> int:
    """The default number of worker processes: this process's share of the CPUs it may use,
    `available_cpus() // local_world_size()`, at least 1."""
    return max(1, available_cpus() // local_world_size())
