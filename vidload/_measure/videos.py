"""The user's videos, as `vidload bench` and `vidload choose` both take them: found under a
folder (recursive, sorted, hidden and partial files skipped), required (an error naming the
folder where there is none), and linked into a work folder one symlink per chosen video, so a
run converts and reads them without copying a byte.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from vidload._ids import VIDEO_EXTENSIONS


def require_videos(root: Path, where: str, error: type[Exception]) -> list[str]:
    """`find_videos(root)`, raising `error` naming `where` when there is none."""
    found = find_videos(root)
    if not found:
        exts = ", ".join(sorted(VIDEO_EXTENSIONS))
        raise error(f"no video files ({exts}) found under {where}")
    return found


def find_videos(root: Path) -> list[str]:
    """Video files under `root` (recursive, sorted), as `/`-separated relative paths."""
    ids = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            if name.startswith(".") or ".partial." in name:
                continue
            if os.path.splitext(name)[1].lower() in VIDEO_EXTENSIONS:
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                ids.append(rel.replace(os.sep, "/"))
    return sorted(ids)


def link_user_videos(data: Path, videos: Path, ids: list[str]) -> None:
    """Make `videos` hold exactly one symlink per chosen id, pointing into `data`."""
    if videos.exists():
        for dirpath, _dirs, files in os.walk(videos):
            for name in files:
                p = Path(dirpath) / name
                if not p.is_symlink():
                    raise ValueError(f"{p}: expected only links to the user's videos here")
        shutil.rmtree(videos)
    for vid in ids:
        link = videos / vid
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to((data / vid).resolve())
