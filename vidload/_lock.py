"""One run per output folder: the lock file `vidload convert` holds while it writes.

Two conversions into one folder used to collide: the second run's start-up clean-up deleted the
first run's in-progress temporary, and the first then failed that video. Now the driver of a run
creates `OUTPUT/.vidload-convert.lock` with `O_CREAT | O_EXCL` (atomic on local file systems and
on NFS v3+) holding its pid, host, start time and a random token, and removes it when done.

A second run finds the file and refuses with `OutputLockedError`, naming the holder. A lock left
by a run that died (kill -9, OOM, power loss) is stale and taken over when its holder is on this
host and that pid is no longer the process that wrote it (gone, or reused by a process started
at another time). A holder on another host cannot be checked from here: the error says so and
names the file to remove once that run is known to be dead.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any, TypeVar

from vidload._atomic import fsync_dir, is_disk_full, temp_path
from vidload._layout import LOCK_NAME
from vidload.errors import DiskFullError, OutputLockedError

__all__ = ["LOCK_NAME", "OutputLock", "RemoteOutputLock", "process_alive"]

#: An empty or unreadable lock file younger than this may be a run still writing it.
_UNREADABLE_GRACE_S = 10.0


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


_L = TypeVar("_L", bound="_HeldLock")


class _HeldLock:
    """What the local and the bucket lock share: held while `_token` is set (by `acquire`,
    cleared by `release`, each lock's own), and a context manager around the two."""

    _token: str | None

    def acquire(self) -> None:
        raise NotImplementedError

    def release(self) -> None:
        raise NotImplementedError

    def __enter__(self: _L) -> _L:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    @property
    def held(self) -> bool:
        return self._token is not None


class OutputLock(_HeldLock):
    """The lock of one output folder (module doc). `acquire` then `release`; a context manager.

    Args:
        folder: the output folder (must exist).
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.path = Path(folder) / LOCK_NAME
        self._token: str | None = None

    def acquire(self) -> None:
        """Take the lock, replacing a stale one.

        Raises:
            OutputLockedError: a live run holds it (or one on another host, unverifiable).
            DiskFullError: no room to create the lock file.
        """
        if self._token is not None:
            return
        token = os.urandom(8).hex()
        data = (json.dumps(_holder(token)) + "\n").encode()
        for _ in range(5):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                other = self._read(self.path)
                if not self._stale(other, self.path):
                    raise OutputLockedError(self.path, other or {}) from None
                self._remove_stale()
                continue
            except OSError as e:
                if is_disk_full(e):
                    raise DiskFullError(self.path) from e
                raise
            try:
                os.write(fd, data)
                os.fsync(fd)
            except BaseException as e:
                os.close(fd)
                self.path.unlink(missing_ok=True)
                if is_disk_full(e):
                    raise DiskFullError(self.path) from e
                raise
            os.close(fd)
            fsync_dir(self.path.parent)
            self._token = token
            return
        raise OutputLockedError(self.path, self._read(self.path) or {})

    def release(self) -> None:
        """Remove the lock file if it is still ours (idempotent)."""
        if self._token is None:
            return
        current = self._read(self.path)
        if current is not None and current.get("token") == self._token:
            self.path.unlink(missing_ok=True)
        self._token = None

    @staticmethod
    def _read(path: Path) -> dict | None:
        try:
            value = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    @staticmethod
    def _stale(holder: dict | None, path: Path) -> bool:
        if holder is None:  # empty or garbled: a run that died while writing it, or one writing
            try:
                age = time.time() - path.stat().st_mtime
            except FileNotFoundError:
                return True
            return age > _UNREADABLE_GRACE_S
        return _holder_dead(holder)

    def _remove_stale(self) -> None:
        """Move the stale lock aside (one racing run wins the rename) and delete it. If what
        was moved is a live lock (another run took the stale one over in between), put it
        back and refuse."""
        aside = temp_path(self.path, "old")
        try:
            os.rename(self.path, aside)
        except FileNotFoundError:
            return  # another run took it over first
        moved = self._read(aside)
        if not self._stale(moved, aside):
            try:
                os.link(aside, self.path)
            except FileExistsError:
                pass
            aside.unlink(missing_ok=True)
            raise OutputLockedError(self.path, moved or {})
        aside.unlink(missing_ok=True)


class RemoteOutputLock(_HeldLock):
    """The lock of an output in a bucket: the object `OUTPUT/.vidload-convert.lock`.

    Created with a conditional put (`Location.create_bytes`: S3 `If-None-Match: *`, GCS
    `ifGenerationMatch=0`), holding the same pid, host, start time and random token as the
    local lock. Guarantees and limits:

    * Two runs that start at once: exactly one creation succeeds, where the server honours the
      condition (AWS S3, MinIO, GCS, moto do; a server that ignores `If-None-Match` gives no
      mutual exclusion, and nothing here can detect that).
    * A lock whose holder is dead on this host (kill -9, OOM) is taken over. Each stale lock
      is taken over by one run only: the taker first creates the marker object
      `<lock>.takeover-<its token>` exclusively, reads the lock again, and deletes it only if it
      still holds that token; the marker goes when the taker releases. The one window left is
      between that read and the delete (one request; another run would have had to take over,
      finish and release in it).
    * A holder on another host cannot be checked from here: the error names the lock's URL to
      delete once that run is known to be dead. There is no lease or heartbeat: a lock is never
      taken over because it is old.
    * `release` deletes the lock only if it still holds this run's token.

    Args:
        folder: the output prefix (a `vidload._storage.Location` for a URL).
    """

    def __init__(self, folder: Any) -> None:
        self.location = folder / LOCK_NAME
        self._token: str | None = None
        self._marker: Any = None

    def acquire(self) -> None:
        """Take the lock, taking over a stale one (class doc).

        Raises:
            OutputLockedError: a live run holds it (or one on another host, unverifiable).
            VideoReadError: the bucket cannot be reached or written (the reason says why).
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
        from vidload.errors import VideoReadError

        try:
            value = json.loads(self.location.read_bytes())
        except VideoReadError as e:
            if e.reason == "not found":
                return None
            raise
        except ValueError:
            # one PUT writes the whole object: an unreadable lock is someone else's
            raise OutputLockedError(
                self.location,
                {},
                f"{self.location}: an unreadable lock object; remove it if no run is writing "
                "into this OUTPUT",
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
