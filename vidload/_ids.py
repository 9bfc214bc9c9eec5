"""Video ids: what a video file's extension is, and the canonical form of an id (a path
relative to a source's root, `/`-separated). Below the sources and the container names
(`vidload._layout`), which both name files by id; `vidload.sources.base` re-exports them."""

from __future__ import annotations

import os
from pathlib import PurePosixPath

__all__ = ["VIDEO_EXTENSIONS", "normalize_video_id", "strip_video_ext"]

#: File extensions treated as videos (lower case, with the dot).
VIDEO_EXTENSIONS: frozenset[str] = frozenset(
    {
        ".mp4",
        ".avi",
        ".mkv",
        ".webm",
        ".mov",
        ".m4v",
        ".mpg",
        ".mpeg",
        ".flv",
        ".wmv",
        ".ts",
        ".3gp",
    }
)


def is_canonical(video_id: str) -> bool:
    """True when `video_id` is a relative `/`-separated path already in the form
    `str(PurePosixPath(video_id))` gives: no empty, "." or ".." part, no NUL, not absolute.

    Why: every read of a clip names its video, and the pathlib round trip took ~5 us of the
    ~25 us a container source spent finding the file per clip; ids from a list or manifest are
    nearly always canonical already, and these string tests cost ~0.5 us. Anything else takes
    the pathlib path (tests check the two agree). A manifest's `container` name must be
    canonical (`ManifestRow`)."""
    if "\0" in video_id or (os.sep != "/" and os.sep in video_id):
        return False
    parts = video_id.split("/")
    return "" not in parts and "." not in parts and ".." not in parts


def has_video_ext(field: str) -> bool:
    """Whether the last path component of `field` (a list's field, a canonical id) ends in a
    video extension (`x.mp4`): the suffix as PurePosixPath gives it, from the last "." of the
    last part, if that "." is neither the part's first character nor its last."""
    name = field[field.rfind("/") + 1 :]
    dot = name.rfind(".")
    return dot > 0 and name[dot:].lower() in VIDEO_EXTENSIONS


def strip_video_ext(video_id: str) -> str:
    """`abseiling/x1.mp4` -> `abseiling/x1`; ids without a video extension are unchanged."""
    if type(video_id) is str and video_id and is_canonical(video_id):
        return video_id[: video_id.rfind(".")] if has_video_ext(video_id) else video_id
    p = PurePosixPath(video_id)
    if p.suffix.lower() in VIDEO_EXTENSIONS:
        return str(p.with_suffix(""))
    return video_id


def normalize_video_id(video_id: str) -> str:
    """Validate a video id (relative, `/`-separated) and return it in canonical form."""
    if type(video_id) is str and video_id and is_canonical(video_id):
        return video_id  # already canonical (see `is_canonical`)
    if not isinstance(video_id, str) or not video_id:
        raise TypeError(f"video_id must be a non-empty str, got {video_id!r}")
    if "\0" in video_id:
        raise ValueError(f"video_id ({video_id!r}) must not contain a NUL character")
    vid = video_id.replace(os.sep, "/") if os.sep != "/" else video_id
    p = PurePosixPath(vid)
    if p.is_absolute() or ".." in p.parts:
        raise ValueError(f"video_id ({video_id!r}) must be a relative path inside the source root")
    return str(p)
