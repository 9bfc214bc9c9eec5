"""Kinetics-400/600/700 as downloaded: the annotation CSV (`label,youtube_id,time_start,time_end,
split`, Kinetics-700-2020 adds `is_cc`; a test CSV may have no `label`) and the downloaders'
videos, `<youtube_id>_<time_start:06d>_<time_end:06d>.<ext>` (`--0fXo3ROU4_000010_000020.mp4`),
either in one folder per class or all in one folder. Class folders are named as the CSV names
the class (`air drumming`), with spaces replaced by `_` (`air_drumming`), or as mmaction2's
`rename_classnames.sh` leaves them (spaces to `_`, and `'`, `(`, `)` dropped:
`passing_American_football_not_in_game` for `passing American football (not in game)`).

Every copy of Kinetics lacks some of its videos (5-10%: taken down from YouTube). The reader
finds the files with one directory listing per class folder (and one of the root), so rows whose
video is not there are counted in `.missing`, with one warning, instead of failing one by one
when a worker reads them.
"""

from __future__ import annotations

import functools
import os
import re
import warnings
from collections.abc import Mapping
from typing import Any

from vidload._lists import VideoEntry, csv_rows, read_file
from vidload._storage import Location
from vidload.datasets._common import DatasetList, class_numbering
from vidload.errors import VideoReadError
from vidload.sources.base import strip_video_ext

_REQUIRED = ("youtube_id", "time_start", "time_end")
_DROPPED = re.compile(r"['()]")


def kinetics(
    csv_path: str | os.PathLike[str],
    *,
    root: str | os.PathLike[str],
    classes: list[str] | tuple[str, ...] | str | os.PathLike[str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> DatasetList:
    """The videos of a Kinetics CSV that are under `root`, labelled by sorted class name.

    Args:
        csv_path: the official CSV (`train.csv`, `validate.csv`, `test.csv`, any of 400, 600,
            700); columns are found by name, extra ones (`split`, `is_cc`) are ignored. A CSV
            without `label` gives unlabelled entries (label -1).
        root: the videos' folder: class folders (any of the namings in the module doc) or
            all videos in it; any video extension. A local path or a URL.
        classes: pins the numbering (class names in label order, or a class file such as
            the `classes.txt` of the full list): a CSV filtered to a few classes then keeps
            the full list's labels instead of renumbering from 0.
        storage_options: for a URL root or CSV, passed to its filesystem.

    Ids are the files' paths under `root` (`air_drumming/--0fXo3ROU4_000010_000020.mp4`).
    Rows whose video is not under `root` are left out and their expected names kept in
    `.missing`, with one warning that counts them.

    Raises:
        ValueError: a CSV without the columns `youtube_id`, `time_start`, `time_end`, or a
            row whose times are not numbers (file and line named); a class not in `classes`;
            none of the CSV's videos under `root` (naming the folder below it that holds them,
            when `root` is one level too high).
        FileNotFoundError: the CSV is not there.
    """
    where, text = read_file(csv_path, storage_options)
    rows, labelled = _read_rows(where, text)
    found = sorted({label for label, _ in rows}) if labelled else []
    numbering, names = class_numbering(found, classes, str(where))
    base = Location(root, storage_options)
    entries, missing = _find(base, rows, labelled, numbering)
    if rows and not entries:
        raise ValueError(_none_under(where, base, rows, labelled, numbering))
    if missing:
        shown = ", ".join(repr(m) for m in missing[:3])
        warnings.warn(
            f"{where}: {len(missing)} of the {len(rows)} listed videos are not under {base} "
            f"({shown}{', ...' if len(missing) > 3 else ''}): left out, named in .missing",
            stacklevel=2,
        )
    return DatasetList(entries, names, missing)


def _find(
    base: Location, rows: list[tuple[str, str]], labelled: bool, numbering: Mapping[str, int]
) -> tuple[list[VideoEntry], list[str]]:
    """(the entries of `rows` whose video is under `base`, the expected names of the rest):
    one listing of `base` and one of each class folder."""
    top = set(base.list_names())
    flat = _videos_by_stem(top)  # folders have no video extension (nearly always)
    folder_of = functools.cache(functools.partial(_class_folder, base, top))
    entries, missing = [], []
    for label, stem in rows:
        name = None
        if labelled:
            folder = folder_of(label)
            if folder is not None and stem in folder[1]:
                name = f"{folder[0]}/{folder[1][stem]}"
        if name is None and stem in flat:
            name = flat[stem]
        if name is None:
            missing.append(f"{label}/{stem}" if labelled else stem)
            continue
        entries.append(VideoEntry(name, numbering[label] if labelled else -1))
    return entries, missing


#: How many folders directly under a root with none of the listed videos are searched for them
#: (`train/`, `val/`, `test/` of a root given one level too high), so a wrong root with many
#: folders costs a bounded number of listings before the error.
_LOOK_BELOW = 16


def _none_under(
    where: Any,
    base: Location,
    rows: list[tuple[str, str]],
    labelled: bool,
    numbering: Mapping[str, int],
) -> str:
    """The error for a root holding none of the CSV's videos: the folder one level down that
    holds them (a root given one level too high), else how the videos are named under it."""
    label, stem = rows[0]
    named = [f"{label.replace(' ', '_')}/{stem}.mp4"] if labelled else []
    expected = " or ".join(repr(n) for n in [*named, f"{stem}.mp4"])
    head = f"{where}: none of its {len(rows)} videos is under root ({str(base)!r})"
    below = sorted(n for n in base.list_names() if not _videos_by_stem([n]))[:_LOOK_BELOW]
    best, found = None, 0
    for name in below:
        try:
            got = len(_find(base / name, rows, labelled, numbering)[0])
        except VideoReadError:
            continue  # a file, or a folder that cannot be listed
        if got > found:
            best, found = base / name, got
    if best is not None:
        return (
            f"{head}, but {found} of them are under {str(best)!r}: pass that folder as "
            f"root= (the folder that holds the class folders or the videos)"
        )
    return (
        f"{head}: root= must be the folder holding the class folders or the videos "
        f"(e.g. {expected}, any video extension)"
    )


def _read_rows(where: Location, text: str) -> tuple[list[tuple[str, str]], bool]:
    """[(label, file stem)] of the CSV's rows ("" labels when it has no `label` column),
    and whether it has one."""
    # ragged: the files as published are read by position, a row without its trailing
    # `split` cell (or with a cell more) included, as this reader always read them
    header, cells_of = csv_rows(text, where, ragged=True)
    absent = [c for c in _REQUIRED if c not in header]
    if absent:
        raise ValueError(
            f"{where}:1: a Kinetics CSV has the columns label,youtube_id,time_start,time_end"
            f"[,split,...]; this header {header} lacks {absent}"
        )
    labelled = "label" in header
    rows = []
    for line, cells in cells_of:
        try:
            start, end = int(float(cells["time_start"])), int(float(cells["time_end"]))
            stem = f"{cells['youtube_id']}_{start:06d}_{end:06d}"
            rows.append((cells["label"].strip() if labelled else "", stem))
        except ValueError as e:
            raise ValueError(f"{where}:{line}: not a Kinetics row {cells}: {e}") from e
    return rows, labelled


def _videos_by_stem(names: Any) -> dict[str, str]:
    """{stem: file name} of the names with a video extension."""
    out: dict[str, str] = {}
    for name in names:
        stem = strip_video_ext(name)
        if stem != name:
            out.setdefault(stem, name)
    return out


def _class_folder(base: Location, top: set[str], label: str) -> tuple[str, dict[str, str]] | None:
    """(folder name, {stem: file name}) of the class's folder under the root, in whichever
    naming it has; None when there is none."""
    underscored = label.replace(" ", "_")
    for name in dict.fromkeys((label, underscored, _DROPPED.sub("", underscored))):
        if name in top:
            try:
                return name, _videos_by_stem((base / name).list_names())
            except VideoReadError as e:
                if e.reason == "not a folder":
                    continue  # a file of that name
                raise VideoReadError(e.path, f"cannot list the class folder: {e.reason}") from e
    return None
