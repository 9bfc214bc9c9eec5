"""Charades as downloaded: `Charades_v1_train.csv` / `Charades_v1_test.csv`
(`id,subject,scene,quality,relevance,verified,script,objects,descriptions,actions,length`, the
`actions` cell `c092 11.90 21.20;c147 0.00 12.60`: each action's class and its seconds, empty for
a video without one), `Charades_v1_classes.txt` (`c000 Holding some clothes` lines, 157 classes)
and the videos `Charades_v1_480/<id>.mp4`.

Charades is multi-label: actions overlap, and one window may carry several. An entry's `labels`
are all its classes (`labels[0] == label`); train with `ClipDataset(..., multi_label=True,
num_classes=len(classes))`, whose label is then a multi-hot vector.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Sequence
from typing import Literal

from vidload._checks import check_choice
from vidload._lists import UNLABELLED, VideoEntry
from vidload._windows import check_window
from vidload.datasets._common import DatasetList, class_names, read_csv, split_lines
from vidload.sources.base import normalize_video_id

#: Charades' class count (`c000` .. `c156`): the names when no class file is given.
NUM_CLASSES = 157
_CODE = re.compile(r"^c(\d{3})$")
_SHAPE = (
    "Charades' id,subject,scene,quality,relevance,verified,script,objects,descriptions,"
    "actions,length"
)


def charades(
    csv_path: str | os.PathLike[str],
    *,
    items: Literal["windows", "videos"] = "windows",
    classes: str | os.PathLike[str] | Sequence[str] | None = None,
    video_ext: str = ".mp4",
) -> DatasetList:
    """The entries of a Charades CSV, labelled by action class (`c092` is label 92).

    Args:
        csv_path: `Charades_v1_train.csv` or `Charades_v1_test.csv`; columns found by name
            (`id` and `actions` needed).
        items: "windows": one entry per distinct window of a video, [start, end) in seconds
            from `actions`, its `labels` every class listed with exactly that window (in class
            order); a video without actions gives none. A window that ends where or before it
            starts is left out (counted in one warning); one that ends past the video's last
            frame ends there (as Charades' authors advise: clip to the video). "videos": one
            entry per video (the whole file), its `labels` every class of its actions; a video
            without actions is unlabelled (-1: an all-zero multi-hot vector).
        classes: `Charades_v1_classes.txt` (`c000 Holding some clothes` lines, codes from
            c000 in order), or the names in label order: `.classes`. None: the codes
            `c000` .. `c156`.
        video_ext: the videos' extension: ids are `<id><video_ext>` (`46GP8.mp4`).

    Raises:
        FileNotFoundError: the CSV or the class file is not there.
        ValueError: an `actions` cell that is not `cNNN start end;...` (negative or not
            finite times included), a class code beyond `classes` (file and line named).
    """
    check_choice("items", items, ("windows", "videos"))
    codes = (f"c{k:03d}" for k in range(NUM_CLASSES))
    names = class_names(classes, default=codes, read=_class_file)
    rows = read_csv(csv_path, ("id", "actions"), _SHAPE)
    entries: list[VideoEntry] = []
    empty: list[str] = []  # windows with no time (end <= start): no frame to sample
    for line, row in rows:
        try:
            vid = normalize_video_id(f"{row['id']}{video_ext}")
            actions = _actions(row["actions"], len(names))
            if items == "videos":
                labels = tuple(sorted({k for k, _, _ in actions}))
                label = labels[0] if labels else UNLABELLED
                entries.append(VideoEntry(vid, label, labels=labels or None))
                continue
            windows: dict[tuple[float, float], set[int]] = {}
            for k, start, end in actions:
                if end <= start:
                    empty.append(f"line {line}: c{k:03d} {start:.2f} {end:.2f}")
                    continue
                windows.setdefault((start, end), set()).add(k)
            for (start, end), found in windows.items():
                labels = tuple(sorted(found))
                entries.append(VideoEntry(vid, labels[0], labels=labels, start=start, end=end))
        except ValueError as e:
            raise ValueError(f"{csv_path}:{line}: {e}") from e
    if empty:
        shown = "; ".join(empty[:3]) + ("; ..." if len(empty) > 3 else "")
        warnings.warn(
            f"{csv_path}: left out {len(empty)} action window(s) that end where or before they "
            f"start ({shown}): no frame lies in them",
            stacklevel=2,
        )
    return DatasetList(entries, names)


def _actions(cell: str, num_classes: int) -> list[tuple[int, float, float]]:
    """(class, start, end) of an `actions` cell (`c092 11.90 21.20;c147 0.00 12.60`)."""
    out = []
    for part in cell.split(";"):
        if not part.strip():
            continue
        fields = part.split()
        code = _CODE.match(fields[0]) if len(fields) == 3 else None
        if code is None:
            raise ValueError(f"action {part.strip()!r} is not `cNNN start end`")
        try:
            start, end = float(fields[1]), float(fields[2])
        except ValueError:
            raise ValueError(f"action {part.strip()!r}: its times are not seconds") from None
        check_window(start, None)  # finite, >= 0: in both items modes
        check_window(None, end)
        k = int(code[1])
        if k >= num_classes:
            raise ValueError(f"action class {fields[0]} is beyond classes= ({num_classes} names)")
        out.append((k, start, end))
    return out


def _class_file(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """The names of `Charades_v1_classes.txt` (`c000 Holding some clothes` lines)."""
    names: list[str] = []
    for line_no, line in split_lines(path):
        code, _, name = line.partition(" ")
        if code != f"c{len(names):03d}" or not name.strip():
            raise ValueError(
                f"{path}:{line_no}: {line!r} is not `c{len(names):03d} <name>`: Charades' "
                f"class file numbers its classes c000, c001, ... in order"
            )
        names.append(name.strip())
    return tuple(names)
