"""The user's videos, as `vidload bench` and `vidload choose` both take them (`UserVideos`,
written once against `Location`): found under DATA, a local folder or a folder in a bucket
(recursive, sorted, hidden and partial files skipped; one listing per folder, the folders of
one depth listed concurrently), required (an error naming DATA where there is none), and
linked into a work folder one symlink per chosen video (`link_videos`; `UserVideos` lists
such a folder too), so a run converts and reads them without copying a byte. A bucket's chosen
videos are copied to local disk first (`local_copies`), where the run builds and measures
every storage as it does from a local folder."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from vidload._ids import VIDEO_EXTENSIONS

#: A bucket's copies for one run: never evicted while it lasts.
_NO_BOUND = 1 << 62


def _is_video_name(name: str) -> bool:
    """A file name `UserVideos.find` takes: not hidden, not a partial write, a video extension."""
    if name.startswith(".") or ".partial." in name:
        return False
    return os.path.splitext(name)[1].lower() in VIDEO_EXTENSIONS


def link_videos(videos: Path, targets: Mapping[str, Path]) -> None:
    """Make `videos` hold exactly one symlink per id of `targets`, `videos/<id>` to its file."""
    if videos.exists():
        for p in videos.rglob("*"):  # links to folders are neither followed nor refused
            if not (p.is_symlink() or p.is_dir()):
                raise ValueError(f"{p}: expected only links to the user's videos here")
        shutil.rmtree(videos)
    for vid, target in targets.items():
        link = videos / vid
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target)


class UserVideos:
    """The videos under DATA, a local folder or a folder in a bucket: one class, asking its
    `Location` what it can do (list, a local file) and never which kind it is.

    Attributes:
        root: DATA as a `vidload._storage.Location`.
        data: DATA as given (a path or URL).
        ids: the videos, as sorted `/`-separated paths relative to DATA (after `find`).
        sizes: {id: bytes} (after `find`).
    """

    def __init__(
        self, data: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None
    ) -> None:
        from vidload._storage import Location

        self.data = os.fspath(data)
        self.root = Location(data, storage_options)
        self.ids: list[str] = []
        self.sizes: dict[str, int] = {}

    def check_usage(self) -> None:
        """UsageError for what is wrong with DATA and `--storage-option`s on the command line
        (a folder in a bucket is checked where it is listed: a missing one names the URL)."""
        from vidload.errors import UsageError

        if self.root.over_network:
            return
        if not self.root.exists():
            raise UsageError(f"DATA ({self.data!r}) does not exist")
        if self.root.storage_options is not None:
            raise UsageError("--storage-option is for a DATA URL (s3://bucket/videos)")
        if not self.root.is_dir():
            raise UsageError(f"DATA ({self.data!r}) must be a folder of videos")

    def find(self, where: str, error: type[Exception]) -> UserVideos:
        """Find the videos (`_is_video_name`) and their sizes, one listing per folder (the
        folders of one depth listed concurrently); `error` naming `where` where there is none.
        Returns self.

        Raises:
            FileNotFoundError, NotADirectoryError: a local DATA that is not a folder.
            VideoReadError: a bucket folder that cannot be listed (denied, ...).
            ValueError: an `http(s)://` DATA (a web server's folders cannot be listed), or
                storage options for a local DATA (which takes none).
        """
        from vidload.errors import VideoReadError

        root = self.root
        if root.storage_options and not root.over_network:
            raise ValueError(f"storage_options are for a DATA URL; {self.data!r} is a path")
        if not root.can_list:
            raise ValueError(
                f"{where}: the videos of an {root.url.split(':', 1)[0]}:// folder cannot be "
                "listed; give a bucket (s3://, gs://, ...) or a local folder"
            )
        try:
            sizes = walk_sizes(root)
        except VideoReadError as e:
            if e.path != str(root) or e.reason not in _NOT_A_FOLDER:
                raise
            raise _NOT_A_FOLDER[e.reason](f"{where} {_SAID[e.reason]}") from None
        if not sizes:
            exts = ", ".join(sorted(VIDEO_EXTENSIONS))
            raise error(f"no video files ({exts}) found under {where}")
        self.ids, self.sizes = sorted(sizes), sizes
        return self

    def local_copies(
        self, ids: Sequence[str], downloads: Path, log: Callable[[str], None]
    ) -> dict[str, Path]:
        """{id: a local file of that video}: the file itself where DATA is local, else a copy
        in `downloads`, a cache folder of this run (errors about a copy name its URL), said
        first on `log`."""
        from vidload._storage import LocalCache
        from vidload._storage.batch import run_concurrently

        if self.root.local_file() is None:
            log(f"copying {len(ids)} videos from {self.root} to local disk")
        cache = LocalCache(downloads, _NO_BOUND)

        def local(vid: str) -> Path:
            loc = self.root / vid
            return loc.local_file() or cache.get(loc)

        paths = run_concurrently(local, list(ids))
        return {vid: path.resolve() for vid, path in zip(ids, paths, strict=True)}

    @property
    def notes(self) -> list[str]:
        """What a report says about where DATA is."""
        if self.root.local_file() is not None:
            return []
        return [
            "DATA is in a bucket: the sample's videos were copied to local disk, and every "
            "storage is built and read there; read from a bucket each costs more (requests, "
            "latency): `vidload bench --bucket URL`, tools/bucket_latency.py"
        ]


#: A local DATA that is no folder: the listing's reason, the error and what it says.
_NOT_A_FOLDER: dict[str, type[Exception]] = {
    "folder not found": FileNotFoundError,
    "not a folder": NotADirectoryError,
}
_SAID = {"folder not found": "does not exist", "not a folder": "must be a folder of videos"}


def walk_sizes(root: Any, keep: Callable[[str], bool] = _is_video_name) -> dict[str, int]:
    """{relative path: size} of the files under the folder `root` whose names `keep` takes
    (by default the videos), hidden folders skipped: one listing per folder, each depth's
    folders listed concurrently."""
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
                elif keep(name):
                    sizes[path] = size
        level = deeper
    return sizes
