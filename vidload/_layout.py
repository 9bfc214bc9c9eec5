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

The manifest names every container: `vidload convert` records each video's container name,
relative to OUTPUT, in the manifest's `container` column (`CONTAINER_COLUMN`), the one list of
names (the heads sidecar is keyed by it). A source given those names (`ContainerNames`, from
the root's `manifest.csv`: `ClipDataset` hands them over through the source's
`use_containers`) reads each listed video's container by its name, on any root: no name is
guessed and nothing is probed, so a store that cannot list (HTTP) reads a collided stem or a
`--to video` output as a local folder does. A video the names do not list is found by the
rules above.

An output folder also holds `manifest.csv` (`MANIFEST_NAME`), the options it was converted with
(`OPTIONS_NAME`) and, while a run goes on, its lock (`LOCK_NAME`) and the shards' part manifests
(`PARTS_DIR`). Temporary names are `vidload._atomic`'s.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from vidload._ids import normalize_video_id, strip_video_ext

__all__ = [
    "CLASSES_NAME",
    "CONTAINER_COLUMN",
    "ContainerNames",
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
    "recorded_names",
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

#: The manifest column naming each video's container (`vidload.manifest.ManifestRow.container`).
CONTAINER_COLUMN = "container"
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


class ContainerNames:
    """Each video's container name as a manifest records it (`CONTAINER_COLUMN`), for the
    source of one storage kind (`suffix`). `get(video_id)` is the name, or None for an id the
    manifest does not list (its reader then follows the rules of the module docstring).

    Kept small for 650k videos, with no Python object per video (every DataLoader worker
    holds a copy): the names that differ from `container_name(video_id, suffix)` (collided
    stems) in a dict, the ids listed as a sorted array of 64-bit digests (`_digest`), and the
    answers already given in a small memo (a clip's lookup: one dict hit)."""

    _MEMO = 4096

    def __init__(self, names: Mapping[str, str], suffix: str) -> None:
        """Raises ValueError naming the first name that is not one `vidload convert` gives
        its video's container of `suffix` (the id's stem or full id, then `suffix`)."""
        self.suffix = suffix
        self._other: dict[str, str] = {}
        digests = np.empty(len(names), np.uint64)
        for k, (vid, name) in enumerate(names.items()):
            vid = normalize_video_id(vid)
            if name != strip_video_ext(vid) + suffix:  # `container_name`, short, then full
                if name != vid + suffix:
                    raise ValueError(
                        f"container {name!r} of {vid!r} is not a name of a {suffix or 'frame'}"
                        f" container of that id ({container_name(vid, suffix)!r})"
                    )
                self._other[vid] = name
            digests[k] = _digest(vid)
        self._listed = np.unique(digests)
        self._memo: dict[str, str | None] = {}

    @classmethod
    def of(cls, names: Mapping[str, str], suffix: str) -> ContainerNames | None:
        """The names for a source of `suffix`, or None when they are not that kind's (an
        HDF5 output's `a/x.h5` given to a `VideoSource` of the same folder): each name must
        be one `container_name` gives its id with `suffix`."""
        try:
            return cls(names, suffix)
        except ValueError:
            return None

    def __len__(self) -> int:
        return int(self._listed.size)

    def __getstate__(self) -> dict[str, object]:
        return {**self.__dict__, "_memo": {}}

    def get(self, video_id: str) -> str | None:
        """The container name of `video_id`, None where the manifest does not list it."""
        memo = self._memo
        if video_id in memo:
            return memo[video_id]
        vid = normalize_video_id(video_id)
        name = self._other.get(vid)
        if name is None and self.lists(vid):
            name = strip_video_ext(vid) + self.suffix  # `container_name` of a canonical id
        if len(memo) >= self._MEMO:
            memo.clear()
        memo[video_id] = name
        return name

    def lists(self, video_id: str) -> bool:
        """Whether the manifest lists `video_id` (canonical)."""
        key = np.uint64(_digest(video_id))  # a Python int over 2**63 would convert the array
        i = int(self._listed.searchsorted(key))
        return i < self._listed.size and self._listed[i] == key


def _digest(text: str) -> int:
    """A stable 64-bit digest of `text` (the same in every process, unlike `hash`)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def recorded_names(raw: bytes, where: object) -> dict[str, str] | None:
    """{video id: container} of the manifest whose bytes are `raw` (`where` names it), None
    when it has no `CONTAINER_COLUMN` (a probe's manifest, one written before the column) or
    is not a manifest. Only the columns needed are parsed (650k rows: ~1.8 s measured on the
    loaded 2-core machine; `ContainerNames` of them 4-7 s more, 5 MB kept).

    Raises:
        ValueError: a row whose cells do not match the header, naming `where` and the line.
    """
    text = raw.decode("utf-8", errors="replace").lstrip("\ufeff")
    first = text.split("\n", 1)[0]
    if CONTAINER_COLUMN not in first or "video_id" not in first:
        return None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [h.strip() for h in next(reader)]
        if "video_id" not in header or CONTAINER_COLUMN not in header:
            return None
        at_id, at_name = header.index("video_id"), header.index(CONTAINER_COLUMN)
        at_status = header.index("status") if "status" in header else None
        names: dict[str, str] = {}
        for cells in reader:
            if cells == [] or cells == [""]:
                continue
            if len(cells) != len(header):
                raise ValueError(f"{len(cells)} cells, the header has {len(header)}")
            if cells[at_name] and (at_status is None or cells[at_status] != "failed"):
                names[cells[at_id]] = cells[at_name]
    except (csv.Error, ValueError) as e:
        raise ValueError(f"{where}:{reader.line_num}: {e}") from e
    return names
