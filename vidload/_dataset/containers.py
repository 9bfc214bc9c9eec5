"""ClipDataset hands its source the container names the root's manifest records.

`vidload convert` names every container in its manifest (`vidload._layout`: the `container`
column); a source given those names reads each listed video by its name, with no name guessed
or probed, and takes the manifest as its `missing=` check for them (`use_containers`). The names
come from the manifest at the source's root (`<root>/manifest.csv`), whatever the list:

- the dataset given that manifest (a path or URL naming it): its rows, read once;
- any other list (a plain list, `(video_id, label)` pairs, a window list over converted data, a
  manifest elsewhere) at a root that cannot list (HTTP): the root's manifest read once when the
  dataset is built (one GET, in the process that builds it: the names travel to the workers
  with the source); where there is none, or it has no `container` column (an output written
  before it, a probe's), the source finds its containers by its rules, as before;
- such a list at a root that can list: nothing read here. A local root finds either name by a
  stat and `missing=` by a listing, as before; a bucket root reads the root's manifest itself,
  once per process, at its first container that is not under its stem's name (a collided
  stem: `vidload._storage.roots`), so a list of ordinary names costs no request more.

A manifest's names are never taken for another root: they are relative to their folder.

`check_missing` is ClipDataset's `missing=`: listed videos that are not there, found when the
dataset is built. Every copy of Kinetics lacks 5-10% of its videos; without a check they are
found one by one when a worker reads them, hours into training. The dataset asks its source
once, before the first read: `source.missing_videos(video_ids)` (vidload's sources: one
directory listing per folder or bucket prefix, `vidload.sources._listing`; the manifest's names
where the source took them). A source without that method (a custom `FrameSource`) is not
checked, and the dataset says so once per process and source class, on the logger
"vidload.dataset" (a log line, not a warning: a test source in every test would repeat it).
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vidload._dataset.entries import VideoEntries, entries_of
from vidload._layout import MANIFEST_NAME, recorded_names
from vidload._lists import read_text
from vidload._storage import Location
from vidload.errors import VidloadError
from vidload.manifest import VideoEntry, entries_from_manifest, has_manifest_header, parse_manifest
from vidload.sources.base import FrameSourceBase

__all__ = ["check_missing", "entries_and_containers", "manifest_names"]

#: How many missing ids a message shows.
SHOWN = 5

_log = logging.getLogger("vidload.dataset")
_said_unchecked: set[str] = set()


def entries_and_containers(
    videos: str | os.PathLike[str] | Sequence[tuple | VideoEntry],
    source: FrameSourceBase,
    *,
    multi_label: bool,
) -> VideoEntries:
    """The dataset's entries (`entries_of`; a list at a URL read with the options of the
    source's root), the source (as the dataset asks it) given the container names of its
    root's manifest (module doc) where it takes them: its `use_containers`
    (`FrameSourceBase`: None, it does not) and its `store`."""
    use, store = source.use_containers, source.store
    storage_options = None if store is None else store.location.storage_options
    if use is None or store is None:
        return entries_of(videos, multi_label=multi_label, storage_options=storage_options)
    root = store.location
    manifest = root / MANIFEST_NAME
    names: dict[str, str] | None
    text = _manifest_text(videos, manifest, storage_options)
    if text is not None:
        rows = parse_manifest(text, str(videos))
        entries = VideoEntries.from_entries(entries_from_manifest(rows, str(videos)))
        names = {r.video_id: r.container for r in rows if r.container and r.status != "failed"}
    else:
        entries = entries_of(videos, multi_label=multi_label, storage_options=storage_options)
        # where the root can list (local, a bucket), its rules find each container exactly
        # and a bucket root reads the manifest itself at its first miss (`SourceRoot`)
        names = None if root.can_list else manifest_names(manifest)
    if names:
        use(names)
    return entries


def _manifest_text(
    videos: object, manifest: Location, storage_options: Mapping[str, Any] | None
) -> str | None:
    """The text of the manifest `manifest` where `videos` is its path or URL and it is a
    manifest (read once: at a URL one GET), else None."""
    if not isinstance(videos, (str, os.PathLike, Location)):
        return None
    where = videos if isinstance(videos, Location) else Location(videos, storage_options)
    mine, theirs = where.local_file(), manifest.local_file()
    if mine is not None or theirs is not None:
        same = mine is not None and theirs is not None and mine.resolve() == theirs.resolve()
    else:
        same = where.url == manifest.url
    if not same or (mine is not None and not mine.is_file()):
        return None
    text = read_text(manifest)
    return text if has_manifest_header(text, manifest) else None


def manifest_names(manifest: Location) -> dict[str, str] | None:
    """{video id: container} of the manifest at `manifest` (one read), None where there is
    none or it names no container (`vidload._layout.recorded_names`)."""
    try:
        raw = manifest.read_optional()
    except VidloadError:
        return None
    return None if raw is None else recorded_names(raw, manifest)


def check_missing(
    entries: VideoEntries, source: FrameSourceBase, *, missing: str, where: object
) -> VideoEntries:
    """`entries` whose videos the source holds.

    Args:
        entries: the dataset's video list.
        source: the frame source (as the dataset asks it); asked through its
            `missing_videos(video_ids)` method where it has one (None: it cannot say).
        missing: "error" raises when any video is missing; "skip" leaves them out with one
            warning that counts them.
        where: the `videos` argument, to name the list in messages.

    Raises:
        FileNotFoundError: missing="error" and videos are missing (the count and the first
            few ids named), or missing="skip" and none is left.
    """
    find = source.missing_videos
    name = source.source_name
    if find is None:
        if name not in _said_unchecked:
            _said_unchecked.add(name)
            _log.warning(
                "%s has no missing_videos(video_ids) method, so ClipDataset did not check that "
                "the listed videos exist; a missing one fails when it is read (said once)",
                name,
            )
        return entries
    listed_ids = entries.video_ids()
    ids = list(dict.fromkeys(listed_ids))
    gone = find(ids)
    if not gone:
        return entries
    listed = str(where) if isinstance(where, (str, os.PathLike)) else "videos"
    root = source.root
    inside = f"{name}({str(root)!r})" if root is not None else name
    what = f"{len(gone)} of the {len(ids)} videos in {listed} are not in {inside}: {_shown(gone)}"
    if missing == "error":
        raise FileNotFoundError(
            f"{what}; pass missing='skip' to leave them out (with a warning that counts them), "
            f"or fix the list or the source's root"
        )
    gone_set = set(gone)
    kept = entries.take(np.fromiter((v not in gone_set for v in listed_ids), np.bool_))
    if not kept:
        raise FileNotFoundError(f"{what}; missing='skip' leaves no video")
    warnings.warn(f"{what}; left out (missing='skip')", stacklevel=3)
    return kept


def _shown(ids: Sequence[str]) -> str:
    head = ", ".join(repr(v) for v in ids[:SHOWN])
    return head + (f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else "")
