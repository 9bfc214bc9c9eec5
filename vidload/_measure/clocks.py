"""Clocks for timing on a shared machine: `OwnClock` (wall-clock time less this thread's waits
for a CPU) and `OtherLoad` (how many CPUs other processes kept busy while a phase ran), read
from Linux's /proc; where /proc lacks them they fall back to wall-clock time and None.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

_SCHEDSTAT = "/proc/thread-self/schedstat"


class OwnClock:
    """A clock (seconds, like `time.perf_counter`) that stops while this thread waits for a CPU.

    It reads wall-clock time less the thread's run-queue delay (the second field of Linux's
    /proc/thread-self/schedstat: time runnable but not running because other threads held the
    CPUs). Time blocked on I/O still counts, so cold reads are not hidden. Where the file is
    missing or unreadable it is plain wall-clock time and `available` is False. Read it only
    on the thread that created it; `close()` (or `with`) releases the file.
    """

    def __init__(self) -> None:
        self._fd: int | None = None
        try:
            self._fd = fd = os.open(_SCHEDSTAT, os.O_RDONLY)
            self._run_delay(fd)
        except (OSError, ValueError, IndexError):
            self.close()

    @property
    def available(self) -> bool:
        return self._fd is not None

    @staticmethod
    def _run_delay(fd: int) -> float:
        return int(os.pread(fd, 128, 0).split()[1]) / 1e9

    def __call__(self) -> float:
        now, fd = time.perf_counter(), self._fd
        return now if fd is None else now - self._run_delay(fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> OwnClock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _ticks() -> float:
    return float(os.sysconf("SC_CLK_TCK"))


def _system_busy_s() -> float:
    """CPU seconds all processes have used since boot (Linux /proc/stat)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq = (int(v) for v in fields[:7])
    return (user + nice + system + irq + softirq) / _ticks()


def _own_cpu_s() -> float:
    """CPU seconds used by this process and its live children (DataLoader workers)."""
    me = os.getpid()
    total = 0.0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()  # after "pid (comm)"
        pid, ppid = int(entry.name), int(fields[1])
        if pid == me or ppid == me:
            total += (int(fields[11]) + int(fields[12])) / _ticks()
    return total


class OtherLoad:
    """How many CPUs other processes kept busy while a phase ran (None where /proc is missing).

    Use as a context manager; `cpus` is then the average number of CPUs used by everything
    but this process and its children.
    """

    def __init__(self) -> None:
        self.cpus: float | None = None
        self._start: tuple[float, float, float] | None = None

    def __enter__(self) -> OtherLoad:
        try:
            self._start = (time.perf_counter(), _system_busy_s(), _own_cpu_s())
        except (OSError, ValueError, IndexError):
            self._start = None
        return self

    def __exit__(self, *exc: object) -> None:
        if self._start is None or exc[0] is not None:
            return
        try:
            wall, busy, own = time.perf_counter(), _system_busy_s(), _own_cpu_s()
        except (OSError, ValueError, IndexError):
            return
        t0, busy0, own0 = self._start
        if wall > t0:
            self.cpus = max(0.0, ((busy - busy0) - (own - own0)) / (wall - t0))
