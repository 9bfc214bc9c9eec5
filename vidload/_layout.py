"""Container layout: the one home for the names `vidload convert` writes and the sources read.

A video id (`a/x1.mp4`, relative to the input root) names its container in an output folder:

    jpeg: `a/x1/img_00001.jpg, img_00002.jpg, ...`    hdf5: `a/x1.h5`    npy: `a/x1.npy`
    video: `a/x1.mp4` (`--to video`: H.264 in MP4, whatever the input's container)

with the frames' timestamps beside it in `<container>.timestamps` (`a/x1.h5.timestamps`,
`a/x1.timestamps` for the folder `a/x1/`); a converted video keeps its timestamps in the MP4
itself, and its frame index beside it in `<file>.vidload-index` (`a/x1.mp4.vidload-index`,
`INDEX_SUFFIX`; `vidload.sources._video_persist`), which `vidload probe --write-index` also writes
beside original videos.

A converted video is found by the original's id: `VideoSource(OUT).read("a/x1.avi", ...)` reads
`OUT/a/x1.mp4` (`VideoSource.path`: the id's own file when it exists, else its `video` container
by `container_path`), so one annotation list serves the originals and every storage.

The video extension is dropped, except for ids that differ from another input's only in the
extension (`x.mp4`, `x.avi`): `convert` keeps it in their names (`x.mp4.h5`, `x.avi.mp4`) so
each gets its own, and a reader takes a container named with the full id first
(`container_path`). A converted video of an MP4 id is named as the id (`a/x1.mp4` ->
`OUT/a/x1.mp4`).

An output folder also holds `manifest.csv` (`MANIFEST_NAME`), the options it was converted with
(`OPTIONS_NAME`) and, while a run goes on, its lock (`LOCK_NAME`) and the shards' part manifests
(`PARTS_DIR`). Temporary names are `vidload._atomic`'s.
"""

from __future__ import annotations

import os
from pathlib import Path

from vidload._ids import normalize_video_id, strip_video_ext

__all__ = [
    "CLASSES_NAME",
    "FIRST_FRAME_NAME",
    "FRAME_TEMPLATE",
    "INDEX_SUFFIX",
    "LOCK_NAME",
    "MANIFEST_NAME",
    "OPTIONS_NAME",
    "PARTS_DIR",
    "TIMESTAMPS_SUFFIX",
    "container_name",
    "container_path",
    "found_container_name",
    "index_path",
    "join_root",
    "sidecar_path",
]

#: What a video file's persisted frame index adds to the file's name.
INDEX_SUFFIX = ".vidload-index"
#: Frame i (1-based) of a JPEG frame folder, as `convert` writes it and mmaction2 reads it.
FRAME_TEMPLATE = "img_{:05d}.jpg"
#: First frame file: it marks a folder as a JPEG frame folder.
FIRST_FRAME_NAME = FRAME_TEMPLATE.format(1)
#: What a container's timestamps file adds to the container's name.
TIMESTAMPS_SUFFIX = ".timestamps"

#: The manifest `convert` writes in its output folder.
MANIFEST_NAME = "manifest.csv"
#: The options a conversion used (checked when a run resumes).
OPTIONS_NAME = "vidload-convert.json"
#: One run at a time writes into an output folder: the file that says which (`vidload._lock`).
LOCK_NAME = ".vidload-convert.lock"
#: Folder in an output folder holding the shards' part manifests while a run goes on.
PARTS_DIR = ".vidload-convert.parts"
#: The class names, line k naming label k, `convert`/`probe --write` write beside the manifest.
CLASSES_NAME = "classes.txt"


def container_name(video_id: str, suffix: str, *, keep_extension: bool = False) -> str:
    """`video_id`'s container name relative to the output folder: `a/x1.mp4` -> `a/x1<suffix>`,
    or `a/x1.mp4<suffix>` with `keep_extension`. `suffix` is a storage kind's
    (`vidload.sources._format.StorageFormat.container_name`)."""
    vid = normalize_video_id(video_id)
    return (vid if keep_extension else strip_video_ext(vid)) + suffix


def container_path(root: Path, video_id: str, suffix: str) -> Path:
    """Where a reader finds `video_id`'s container under `root`: the name with the full id
    (`x.mp4.h5`) when it exists, else the name without the video extension (module doc)."""
    return root / found_container_name(str(root), video_id, suffix)


def found_container_name(root: str, video_id: str, suffix: str) -> str:
    """`container_path`'s name relative to `root` (a local folder), as a string: what a source
    looks up per clip. No pathlib: two `Path`s and their comparison cost ~15 us per clip, this
    ~2 us with the one stat that looks for the full-id name (only for an id with a video
    extension; the answer can change between clips, so it is not cached)."""
    vid = normalize_video_id(video_id)
    short = strip_video_ext(vid) + suffix
    if len(short) != len(vid) + len(suffix):  # the id has a video extension
        full = vid + suffix
        if os.path.exists(join_root(root, full)):
            return full
    return short


def join_root(root: str, name: str) -> str:
    """`str(Path(root) / name)` for `root` as `str(Path)` gives it and a canonical relative
    `name`, without pathlib (nor `os.path.join`, which costs ~1.5 us)."""
    if root == ".":
        return name
    return root + name if root.endswith("/") else root + "/" + name


def sidecar_path(container: Path) -> Path:
    """Where the timestamps of `container` (a file or a JPEG folder) live."""
    return container.with_name(container.name + TIMESTAMPS_SUFFIX)


def index_path(video_file: Path) -> Path:
    """Where the persisted frame index of `video_file` lives (`INDEX_SUFFIX`)."""
    return video_file.with_name(video_file.name + INDEX_SUFFIX)
