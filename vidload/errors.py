"""The exceptions vidload raises for bad data (bad arguments raise ValueError/TypeError).

Across a DataLoader worker boundary. torch sends a worker's exception to the main process as
its type and formatted traceback only, and re-raises it there as `exc_type(message)`: one
argument. Every vidload error can be built that way, so it keeps its type (`except
VideoReadError` works with any `num_workers`). Its attributes travel in the traceback: an error
created inside a DataLoader worker carries a note (`add_note`) with them as JSON, which the
one-argument form reads back from the message; a message without one leaves them None.
"""

from __future__ import annotations

import errno
import json
import sys
from collections.abc import Callable
from typing import ClassVar

#: Prefix of the note that carries an error's attributes out of a DataLoader worker.
_RECORD = "vidload error attributes: "
_UNSET = object()

#: How an error names a local file that stands for something else: each function takes a path
#: and returns the name to show, or None for a path it does not know. The cache of remote
#: objects (`vidload._storage.cache`) adds one, so that an error about an object read through
#: its local copy names the object's URL, whichever reader raised it (a cached copy's path
#: means nothing to the user and changes with the object's version).
PATH_NAMES: list[Callable[[str], str | None]] = []


def shown_path(path: object) -> str:
    """`path` as an error names it: its own text, or what a `PATH_NAMES` function says."""
    text = str(path)
    for name_of in PATH_NAMES:
        shown = name_of(text)
        if shown is not None:
            return shown
    return text


def _in_dataloader_worker() -> bool:
    data = sys.modules.get("torch.utils.data")
    return data is not None and data.get_worker_info() is not None


def _plain(value: object) -> object:
    """numpy integers as int, anything else JSON cannot hold as its str."""
    return int(value) if hasattr(value, "__index__") else str(value)


def _record_in(message: str) -> dict | None:
    """The attributes noted on the last (outermost) error in a worker's traceback text."""
    at = message.rfind(_RECORD)
    if at < 0:
        return None
    line = message[at + len(_RECORD) :].split("\n", 1)[0]
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


class VidloadError(Exception):
    """Base class of vidload's own errors."""

    #: Attributes that travel out of a DataLoader worker (see the module docstring).
    _fields: ClassVar[tuple[str, ...]] = ()
    #: The attributes the constructor takes before its last argument, the message: how
    #: `__reduce__` rebuilds the error with its attributes (pickling, a process pool).
    _args: ClassVar[tuple[str, ...]] = ()

    def __reduce__(self):
        # with the instance's __dict__ as Exception's own does (notes, attributes set later)
        args = (*(getattr(self, name) for name in self._args), str(self))
        return (self.__class__, args, self.__dict__ or None)

    def _note_fields(self) -> None:
        # add_note is Python >= 3.11; on 3.10 the type still travels, the attributes do not
        if self._fields and hasattr(self, "add_note") and _in_dataloader_worker():
            record = {name: getattr(self, name) for name in self._fields}
            self.add_note(_RECORD + json.dumps(record, default=_plain))

    def _from_message(self, message: object) -> None:
        """The one-argument form (`exc_type(message)`): the attributes from the note in
        `message`, else None."""
        super().__init__(message)
        record = _record_in(str(message)) or {}
        for name in self._fields:
            setattr(self, name, record.get(name))


class FrameCountError(VidloadError, IndexError):
    """A frame index at or past the frames that really exist.

    Attributes:
        video_id: the video asked for.
        reported: the count the metadata claimed (None when it claimed none).
        actual: the count of frames that really exist (None when not yet known).
        index: the offending frame index, when known.

    `FrameCountError(message)` (one argument: how torch re-raises a worker's error) takes the
    attributes from the note in `message`, else leaves them None.
    """

    _fields = _args = ("video_id", "reported", "actual", "index")

    def __init__(
        self,
        video_id: str,
        reported: int | None = _UNSET,  # type: ignore[assignment]
        actual: int | None = _UNSET,  # type: ignore[assignment]
        index: int | None = None,
        message: str | None = None,
    ) -> None:
        if reported is _UNSET and actual is _UNSET and index is None and message is None:
            self._from_message(video_id)
            return
        self.video_id = video_id
        self.reported = None if reported is _UNSET else reported
        self.actual = None if actual is _UNSET else actual
        self.index = index
        if message is None:
            what = f"frame {index}" if index is not None else "a frame"
            message = (
                f"{video_id}: {what} requested but only {self.actual} frames exist "
                f"(metadata reported {self.reported})"
            )
        super().__init__(message)
        self._note_fields()


class VideoReadError(VidloadError):
    """A file could not be read or decoded: missing, empty, not a video, corrupt.

    Attributes:
        path: the file (or folder) concerned, as a string (an object read through a local
            cache: its URL, never the copy's path; see `PATH_NAMES`).
        reason: a short human-readable reason.
        index: the frame index being read, when known.

    `VideoReadError(message)` (one argument: how torch re-raises a worker's error) takes the
    attributes from the note in `message`, else leaves them None.
    """

    _fields = ("path", "reason", "index")

    def __init__(self, path: object, reason: str | None = None, index: int | None = None) -> None:
        if reason is None and index is None:
            self._from_message(str(path))
            return
        raw = str(path)
        self.path = shown_path(raw)
        if self.path != raw:  # a cached copy: named by its URL, also inside the reason
            reason = reason.replace(raw, self.path) if reason is not None else None
        self.reason = reason
        self.index = index
        where = f" (frame {index})" if index is not None else ""
        super().__init__(f"{self.path}{where}: {reason}")
        self._note_fields()


class DiskFullError(VidloadError, OSError):
    """No space left on the device (or quota) while writing `path`: the run stopped there.

    Also an `OSError` with `errno.ENOSPC` (and `filename` = `path`), so a caller that caught
    the plain OSError a full disk raised before keeps catching it.

    Attributes:
        path: the file (container, manifest, options file) being written, as a string.
    """

    _args = ("path",)

    def __init__(self, path: object, message: str | None = None) -> None:
        self.path = str(path)
        super().__init__(message or f"no space left on device writing {self.path}")
        self.errno = errno.ENOSPC
        self.filename = self.path

    def __str__(self) -> str:
        return self.args[0]


class OutputLockedError(VidloadError):
    """Another run holds the output folder's lock (`vidload convert` into the same OUTPUT).

    Attributes:
        lock: the lock file, as a string.
        holder: what the lock file says about its holder (pid, host, start time), as a dict.
    """

    _args = ("lock", "holder")

    def __init__(self, lock: object, holder: dict | None = None, message: str | None = None):
        self.lock = str(lock)
        holder = self.holder = dict(holder or {})
        if message is None:
            message = (
                f"{self.lock}: OUTPUT is being written by another run (pid {holder.get('pid')} "
                f"on host {holder.get('host')!r}, since {holder.get('started')}); wait for it to "
                f"finish, or remove the lock file if that run is dead"
            )
        super().__init__(message)


class UsageError(ValueError):
    """An argument that cannot work as given; the message names the value and the rule.

    Raised for what the caller must change before anything can be done: INPUT and OUTPUT inside
    one another, an option the INPUT does not take, resuming into an OUTPUT converted with other
    options. It is a `ValueError`, so library callers catch it as one; the command line reports
    it with its usage line and exit status 2, and any other error as a failure (exit 1).
    """


class OneBasedLabelsWarning(UserWarning):
    """A video list's labels run from 1 with no 0: probably a 1-based list (UCF101's
    `trainlist`, a `classInd.txt` numbering) read as 0-based, which shifts every class by one
    and puts the last out of range. Given wherever a list comes from (`load_videos`)."""
