"""One run per output: the lock `vidload convert` holds while it writes into OUTPUT.

Two conversions into one folder used to collide: the second run's start-up clean-up deleted the
first run's in-progress temporary, and the first then failed that video. Now the driver of a run
creates `OUTPUT/.vidload-convert.lock` exclusively (`Location.create_bytes`: locally a complete
temporary hard-linked into place, atomic on local file systems and NFS v3+; in a bucket a
conditional put, S3 `If-None-Match: *`, GCS `ifGenerationMatch=0`) holding its pid, host, start
time and a random token, and removes it when done. One class for both: it asks its `Location`
only for exclusive creation, reads and deletes.

A second run finds the lock and refuses with `OutputLockedError`, naming the holder. A lock left
by a run that died (kill -9, OOM, power loss) is stale and taken over when its holder is on this
host and that pid is no longer the process that wrote it (gone, or reused by a process started
at another time). A holder on another host cannot be checked from here: the error says so and
names the lock to remove once that run is known to be dead. There is no lease or heartbeat: a
lock is never taken over because it is old.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

from vidload._layout import LOCK_NAME
from vidload._storage.location import Location
from vidload.errors import OutputLockedError

__all__ = ["LOCK_NAME", "OutputLock", "process_alive"]


def _process_start(pid: int) -> str | None:
    """The start time of process `pid` in clock ticks since boot (Linux), None if unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: split after the last ")"
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def process_alive(pid: int, start: str | None) -> bool:
    """Whether `pid` is still the process that started at `start` (None: cannot tell)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    now = _process_start(pid)
    return start is None or now is None or now == start


def _holder_dead(holder: dict) -> bool:
    """Whether the run a readable lock names is known to be gone: on this host, its pid is no
    longer the process that wrote it. A holder on another host cannot be checked: False."""
    if holder.get("host") != socket.gethostname():
        return False
    pid = holder.get("pid")
    if isinstance(pid, bool) or not isinstance(pid, int) or pid < 1:
        return True
    return not process_alive(pid, holder.get("process_start"))


def _holder(token: str) -> dict:
    """What a lock says about the run that holds it."""
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "process_start": _process_start(os.getpid()),
        "token": token,
    }


class OutputLock:
    """The lock of one output (module doc). `acquire` then `release`; a context manager.

    Guarantees and limits, the same on a disk and in a bucket:

    * Two runs that start at once: exactly one creation succeeds, where the store honours
      exclusive creation (a local disk; AWS S3, MinIO, GCS, moto; a server that ignores
      `If-None-Match` gives no mutual exclusion, and nothing here can detect that).
    * A lock is complete once it exists (one PUT; locally a link of a complete file): an
      unreadable one is not a run still writing it, and is refused with a message naming it.
    * Each stale lock is taken over by one run only: the taker first creates the marker
      `<lock>.takeover-<stale token>` exclusively, reads the lock again, and deletes it only if
      it still holds that token; the marker goes when the taker releases. The one window left
      is between that read and the delete (another run would have had to take over, finish
      and release in it).
    * `release` deletes the lock only if it still holds this run's token.

    Args:
        folder: OUTPUT (a local folder is made where missing: `Location.create_bytes`).
    """

    def __init__(self, folder: Location) -> None:
        self.location = folder / LOCK_NAME
        self._token: str | None = None
        self._marker: Location | None = None

    def __enter__(self) -> OutputLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def acquire(self) -> None:
        """Take the lock, taking over a stale one (class doc).

        Raises:
            OutputLockedError: a live run holds it (or one on another host, unverifiable).
            DiskFullError: no room to create the lock file.
            VideoReadError: a bucket that cannot be reached or written (the reason says why).
        """
        if self._token is not None:
            return
        token = os.urandom(8).hex()
        data = (json.dumps(_holder(token)) + "\n").encode()
        for _ in range(5):
            if self.location.create_bytes(data) or self._read_token() == token:
                self._token = token  # (or a retried creation found its own first attempt)
                return
            other = self._read()
            if other is None:  # released in between: try again
                continue
            if not _holder_dead(other):
                raise OutputLockedError(self.location, other)
            self._take_over(other)
        raise OutputLockedError(self.location, self._read() or {})

    def _take_over(self, stale: dict) -> None:
        stale_token = str(stale.get("token"))
        marker = self.location.with_name(f"{LOCK_NAME}.takeover-{stale_token}")
        if not marker.create_bytes(b""):
            return  # another run takes this one over; the next attempt sees its lock
        if self._read_token() == stale_token:
            self.location.delete()
        self._marker = marker

    def _read(self) -> dict | None:
        found = self.location.read_optional()
        if found is None:
            return None
        try:
            value = json.loads(found)
        except ValueError:
            raise OutputLockedError(
                self.location,
                {},
                f"{self.location}: an unreadable lock; remove it if no run is writing into "
                "this OUTPUT",
            ) from None
        return value if isinstance(value, dict) else {}

    def _read_token(self) -> str | None:
        holder = self._read()
        return None if holder is None else holder.get("token")

    def release(self) -> None:
        """Delete the lock if it is still ours, and a takeover marker (idempotent)."""
        if self._token is None:
            return
        try:
            if self._read_token() == self._token:
                self.location.delete()
            if self._marker is not None:
                self._marker.delete()
        finally:
            self._token = None
            self._marker = None
