"""HMDB51 as downloaded: `test_train_splits.rar` unpacks to one `<class>_test_split<N>.txt` per
class and split (`brush_hair_test_split1.txt`: `April_09_brush_hair_u_nm_np1_ba_goo_0.avi 1 `,
each line a video and its tag: 1 train, 2 test, 0 unused, with a trailing space); `hmdb51_org.rar`
unpacks to one `<class>.rar` per class, each to `<class>/<video>.avi`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from vidload._lists import VideoEntry
from vidload._official import HMDB51_SPLIT
from vidload.datasets._common import (
    DatasetList,
    check_split,
    class_numbering,
    split_lines,
)
from vidload.sources.base import normalize_video_id

_TAG = {"train": "1", "test": "2"}


def hmdb51(
    splits_dir: str | os.PathLike[str],
    *,
    split: int = 1,
    subset: Literal["train", "test"] = "train",
    classes: list[str] | tuple[str, ...] | str | os.PathLike[str] | None = None,
) -> DatasetList:
    """The videos of one HMDB51 split: those tagged 1 (train) or 2 (test) in every
    `<class>_test_split<split>.txt` of `splits_dir` (videos tagged 0 are in neither).

    Classes are the split files' class names in sorted order, labelled 0, 1, ... (what
    mmaction2's HMDB51 lists use: its class index is the sorted class folders); `classes` pins
    another numbering (names in label order, or a class file). Ids are
    `<class>/<video>.avi`, relative to the folder the per-class archives unpack into.

    Raises:
        FileNotFoundError: no split file for `split` in `splits_dir`.
        ValueError: a line that is not `<video> <tag>` with a tag in {0, 1, 2} (file and line
            named).
    """
    split, chosen = check_split(split, subset)
    folder = Path(splits_dir)
    found = map(HMDB51_SPLIT.match, os.listdir(folder))
    files = sorted((m["cls"], folder / m[0]) for m in found if m and m["n"] == str(split))
    if not files:
        raise FileNotFoundError(f"{str(folder)!r} holds no <class>_test_split{split}.txt file")
    numbering, names = class_numbering([c for c, _ in files], classes, str(folder))
    want = _TAG[chosen]
    entries = []
    for name, path in files:
        for line_no, line in split_lines(path):
            fields = line.rsplit(None, 1)
            if len(fields) != 2 or fields[1] not in ("0", "1", "2"):
                raise ValueError(
                    f"{path}:{line_no}: {line!r} is not `<video> <tag>` with a tag 0, 1 or 2"
                )
            if fields[1] == want:
                entries.append(
                    VideoEntry(normalize_video_id(f"{name}/{fields[0]}"), numbering[name])
                )
    return DatasetList(entries, names)
