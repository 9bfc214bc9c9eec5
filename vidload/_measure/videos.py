"""The user's videos, as `vidload bench` and `vidload choose` both take them: found under a
folder (recursive, sorted, hidden and partial files skipped), required (an error naming the
folder where there is none), and linked into a work folder one symlink per chosen video, so a
run converts and reads them without copying a byte.

`vidload choose` also takes videos in a bucket (`UserVideos`: DATA a URL prefix): found by
one listing per folder (the folders of one depth listed concurrently), with their sizes, and
the chosen ones copied to local disk (`local_copies`), where the run builds and measures every
storage as it does from a local folder.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vidload._ids import VIDEO_EXTENSIONS

#: A bucket's copies for one run: never evicted while it lasts.
_NO_BOUND = 1 << 62


def require_videos(root: Path, where: str, error: type[Exception]) -> list[str]:
    """`find_videos(root)`, raising `error` naming `where` when there is none."""
    found = find_videos(root)
    if not found:
        raise error(_none_found(where))
    return found


def _none_found(where: str) -> str:
    exts = ", ".join(sorted(VIDEO_EXTENSIONS))
    return f"no video files ({exts}) found under {where}"


def _is_video_name(name: str) -> bool:
    """A file name `find_videos` takes: not hidden, not a partial write, a video extension."""
    if name.startswith(".") or ".partial." in name:
        return False
    return os.path.splitext(name)[1].lower() in VIDEO_EXTENSIONS


def find_videos(root: Path) -> list[str]:
    """Video files under `root` (recursive, sorted), as `/`-separated relative paths."""
    ids = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            if _is_video_name(name):
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                ids.append(rel.replace(os.sep, "/"))
    return sorted(ids)


def link_user_videos(data: Path, videos: Path, ids: list[str]) -> None:
    """Make `videos` hold exactly one symlink per chosen id, pointing into `data`."""
    link_videos(videos, {vid: (data / vid).resolve() for vid in ids})


def link_videos(videos: Path, targets: Mapping[str, Path]) -> None:
    """Make `videos` hold exactly one symlink per id of `targets`, `videos/<id>` to its file."""
    if videos.exists():
        for dirpath, _dirs, files in os.walk(videos):
            for name in files:
                p = Path(dirpath) / name
                if not p.is_symlink():
                    raise ValueError(f"{p}: expected only links to the user's videos here")
        shutil.rmtree(videos)
    for vid, target in targets.items():
        link = videos / vid
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target)


@dataclass(frozen=True)
class UserVideos:
    """The videos under DATA, a local folder or a folder in a bucket.

    Attributes:
        root: DATA as a `vidload._storage.Location`.
        ids: the videos, as sorted `/`-separated paths relative to DATA.
        sizes: {id: bytes}.
    """

    root: Any
    ids: list[str]
    sizes: dict[str, int]

    @property
    def total_bytes(self) -> int:
        return sum(self.sizes.values())


def user_videos(
    data: str | os.PathLike[str],
    storage_options: Mapping[str, Any] | None,
    where: str,
    error: type[Exception],
) -> UserVideos:
    """The videos under `data` (`find_videos`' rule; in a bucket one listing per folder, the
    folders of one depth concurrently), raising `error` naming `where` when there is none.

    Raises:
        FileNotFoundError, NotADirectoryError: a local `data` that is not a folder.
        VideoReadError: a bucket folder that cannot be listed (denied, ...).
        ValueError: an `http(s)://` DATA (a web server's folders cannot be listed).
    """
    from vidload._storage import Location

    root = Location(data, storage_options)
    base = root.local_file()
    if base is not None:
        if not base.exists():
            raise FileNotFoundError(f"{where} does not exist")
        if not base.is_dir():
            raise NotADirectoryError(f"{where} must be a folder of videos")
        ids = require_videos(base, where, error)
        return UserVideos(root, ids, {v: (base / v).stat().st_size for v in ids})
    if not root.can_list:
        raise ValueError(
            f"{where}: the videos of an {root.url.split(':', 1)[0]}:// folder cannot be listed; "
            "give a bucket (s3://, gs://, ...) or a local folder"
        )
    sizes = _walk_sizes(root)
    if not sizes:
        raise error(_none_found(where))
    return UserVideos(root, sorted(sizes), sizes)


def _walk_sizes(root: Any) -> dict[str, int]:
    """{relative path: size} of the video files under the bucket folder `root`, hidden
    folders skipped: one listing per folder, each depth's folders listed concurrently."""
    from vidload._storage.batch import run_concurrently

    sizes: dict[str, int] = {}
    level = [""]
    while level:
        listings = run_concurrently(lambda rel: (root / rel if rel else root).list_dir(), level)
        deeper = []
        for rel, entries in zip(level, listings, strict=True):
            for name, size in sorted(entries.items()):
                path = f"{rel}/{name}" if rel else name
                if size is None:
                    if not name.startswith("."):
                        deeper.append(path)
                elif _is_video_name(name):
                    sizes[path] = size
        level = deeper
    return sizes


def local_copies(videos: UserVideos, ids: Sequence[str], downloads: Path) -> dict[str, Path]:
    """{id: a local file of that video}: the file itself under a local DATA, else its copy
    fetched (concurrently, each object whole) into `downloads`, a cache folder of this run
    (errors about a copy name the video's URL)."""
    base = videos.root.local_file()
    if base is not None:
        return {vid: (base / vid).resolve() for vid in ids}
    from vidload._storage import LocalCache
    from vidload._storage.batch import run_concurrently

    cache = LocalCache(downloads, _NO_BOUND)
    paths = run_concurrently(lambda vid: cache.get(videos.root / vid), list(ids))
    return {vid: path.resolve() for vid, path in zip(ids, paths, strict=True)}
