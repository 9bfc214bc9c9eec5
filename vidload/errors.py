"""The exceptions vidload raises for bad data (bad arguments raise ValueError/TypeError)."""

from __future__ import annotations


class VidloadError(Exception):
    """Base class of vidload's own errors."""


class FrameCountError(VidloadError, IndexError):
    """A frame index at or past the frames that really exist.

    Attributes:
        video_id: the video asked for.
        reported: the count the metadata claimed (None when it claimed none).
        actual: the count of frames that really exist (None when not yet known).
        index: the offending frame index, when known.
    """

    def __init__(
        self,
        video_id: str,
        reported: int | None,
        actual: int | None,
        index: int | None = None,
        message: str | None = None,
    ) -> None:
        self.video_id = video_id
        self.reported = reported
        self.actual = actual
        self.index = index
        if message is None:
            what = f"frame {index}" if index is not None else "a frame"
            message = (
                f"{video_id}: {what} requested but only {actual} frames exist "
                f"(metadata reported {reported})"
            )
        super().__init__(message)

    def __reduce__(self):  # keep attributes across DataLoader worker pickling
        return (
            self.__class__,
            (self.video_id, self.reported, self.actual, self.index, str(self)),
        )


class VideoReadError(VidloadError):
    """A file could not be read or decoded: missing, empty, not a video, corrupt.

    Attributes:
        path: the file (or folder) concerned, as a string.
        reason: a short human-readable reason.
        index: the frame index being read, when known.
    """

    def __init__(self, path: object, reason: str, index: int | None = None) -> None:
        self.path = str(path)
        self.reason = reason
        self.index = index
        where = f" (frame {index})" if index is not None else ""
        super().__init__(f"{self.path}{where}: {reason}")

    def __reduce__(self):
        return (self.__class__, (self.path, self.reason, self.index))
