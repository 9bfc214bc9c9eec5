"""ClipDataset's `missing=`: listed videos that are not there, found when the dataset is built.

Every copy of Kinetics lacks 5-10% of its videos; without a check they are found one by one when
a worker reads them, hours into training. The dataset asks its source once, before the first
read: `source.missing_videos(video_ids)` (vidload's sources: one directory listing per folder or
bucket prefix, `vidload.sources._listing`). A source without that method (a custom `FrameSource`)
is not checked, and the dataset says so once per process and source class, on the logger
"vidload.dataset" (a log line, not a warning: a test source in every test would repeat it).
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Sequence

import numpy as np

from vidload._dataset.entries import VideoEntries
from vidload.sources.base import FrameSourceBase

#: How many missing ids a message shows.
SHOWN = 5

_log = logging.getLogger("vidload.dataset")
_said_unchecked: set[str] = set()


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
