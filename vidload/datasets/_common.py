"""What the dataset readers share: `DatasetList`, `classes=` and the split files' text.

A reader returns a `DatasetList`: a `list` of `VideoEntry` (ids relative to the videos' root,
0-based labels, -1 unlabelled) that also holds the class names in label order (`classes`) and,
for Kinetics, the listed videos not found under the root (`missing`). `ClipDataset` takes it as
`videos`; `write` saves it as an annotation list that `vidload convert` / `vidload probe` read.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from vidload._atomic import write_bytes_atomic
from vidload._checks import check_choice
from vidload._ids import has_video_ext
from vidload._lists import VideoEntry, csv_rows, csv_text, read_file, text_lines
from vidload.labels import class_map_in_order, read_class_map


class DatasetList(list[VideoEntry]):
    """The videos of an official split: a list of `VideoEntry`, plus

    Attributes:
        classes: the class names, `classes[label]` naming label `label`.
        missing: ids of listed videos that are not under the root (Kinetics: see `kinetics`);
            empty for the other readers, which do not look at the videos.
    """

    classes: tuple[str, ...]
    missing: tuple[str, ...]

    def __init__(
        self,
        entries: Iterable[VideoEntry] = (),
        classes: Sequence[str] = (),
        missing: Sequence[str] = (),
    ) -> None:
        super().__init__(entries)
        self.classes = tuple(classes)
        self.missing = tuple(missing)

    def __repr__(self) -> str:
        gone = f", {len(self.missing)} missing" if self.missing else ""
        return f"DatasetList({len(self)} videos, {len(self.classes)} classes{gone})"

    def write(self, path: str | os.PathLike[str]) -> None:
        """Save as an annotation list (atomically) for `vidload convert` / `vidload probe`
        (`vidload convert train.txt OUT --root VIDEOS --to hdf5`): mmaction2's `path label`
        lines (`path l1 l2 ...` for a multi-label entry, read back with `multi_label=True`;
        `frame_dir offset total_frames label` for a frame folder's frames from an offset), or
        a CSV list (`video_id,label,start,end`) when an entry is a window. Labels are written
        0-based, as `ClipDataset` reads them; -1 for unlabelled videos. A path ending in
        `.json` gets mmaction2's JSON list (`filename`, `label` (a list for a multi-label
        entry), and `start`/`end` for a window; no `label` when unlabelled), which reads back
        the same.

        Raises:
            ValueError: an entry these formats cannot hold (a multi-label window in a text
                list, an offset into a video file, beside a window or in a JSON list):
                written, it would read back as something else.
        """
        json_list = str(path).lower().endswith(".json")
        windows = any(e.start is not None or e.end is not None for e in self)
        self._check_writable(json_list=json_list, windows=windows)
        if json_list:
            data = json.dumps([_json_item(e) for e in self], indent=1) + "\n"
        elif windows:
            rows = ([e.video_id, None if e.label < 0 else e.label, e.start, e.end] for e in self)
            data = csv_text(["video_id", "label", "start", "end"], rows)
        else:
            data = "".join(_list_line(e) for e in self)
        write_bytes_atomic(path, data.encode("utf-8"))

    def _check_writable(self, *, json_list: bool, windows: bool) -> None:
        for e in self:
            why = None
            if json_list:
                if e.offset:
                    why = f"starts at frame offset {e.offset} (a JSON list item has none)"
            elif windows and e.labels is not None and len(e.labels) > 1:
                why = f"has {len(e.labels)} labels and the list has windows (one label a row)"
            elif e.offset and (windows or has_video_ext(e.video_id) or e.known_frames is None):
                why = f"starts at frame offset {e.offset} of " + (
                    "a list with windows" if windows else "a video file (a list line has none)"
                )
            if why is not None:
                raise ValueError(
                    f"DatasetList.write: entry {e.video_id!r} {why}; give ClipDataset the "
                    f"DatasetList itself, or read the windows in seconds"
                )


def _list_line(e: VideoEntry) -> str:
    labels = " ".join(map(str, e.labels if e.labels else (e.label,)))
    if e.offset:
        return f"{e.video_id} {e.offset} {e.known_frames} {labels}\n"
    return f"{e.video_id} {labels}\n"


def _json_item(entry: VideoEntry) -> dict[str, Any]:
    """One entry of a JSON list, as `vidload._lists` reads it back."""
    item: dict[str, Any] = {"filename": entry.video_id}
    if entry.labels is not None:
        item["label"] = list(entry.labels)
    elif entry.label >= 0:
        item["label"] = entry.label
    if entry.start is not None or entry.end is not None:  # both keys: null for an open side
        item["start"], item["end"] = entry.start, entry.end
    return item


def class_names(
    classes: Sequence[str] | str | os.PathLike[str] | None,
    *,
    default: Iterable[str],
    read: Callable[[str | os.PathLike[str]], tuple[str, ...]] | None = None,
) -> tuple[str, ...]:
    """The class names in label order that `classes=` gives: `default` for None, a class
    file read by `read` (`class_file_names` when None), or the names themselves.

    Raises:
        TypeError: a sequence holding something other than a name (str).
    """
    if classes is None:
        return tuple(default)
    if isinstance(classes, (str, os.PathLike)):
        return (read or class_file_names)(classes)
    names = tuple(classes)
    if any(not isinstance(n, str) for n in names):
        raise TypeError("classes must be class names (str) in label order, or a file")
    return names


def class_file_names(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """The names of a class file in label order (`vidload.labels.read_class_map`: a name per
    line, or numbered `N name` lines)."""
    mapping = read_class_map(path)
    return tuple(sorted(mapping, key=mapping.__getitem__))


def class_numbering(
    found: Sequence[str], classes: Sequence[str] | str | os.PathLike[str] | None, where: str
) -> tuple[dict[str, int], tuple[str, ...]]:
    """({name: label}, names in label order): `found` (the dataset's own order) unless
    `classes` pins it (`class_names`: label k = position k).

    Raises:
        ValueError: a class of the dataset that `classes` does not name, or a name given
            twice.
    """
    names = class_names(classes, default=found)
    numbering = class_map_in_order(names, where="classes")
    absent = [n for n in found if n not in numbering]
    if absent:
        shown = ", ".join(repr(n) for n in absent[:5])
        raise ValueError(
            f"{where}: class(es) {shown}{' ...' if len(absent) > 5 else ''} are not in "
            f"classes= ({len(names)} names)"
        )
    return numbering, names


def split_lines(path: str | os.PathLike[str]) -> list[tuple[int, str]]:
    """(line number, stripped line) of a split file's non-blank lines: UTF-8, a byte-order
    mark dropped, CRLF or LF line ends, surrounding spaces (HMDB51's trailing ones) removed.

    Raises:
        FileNotFoundError: no such file (named).
    """
    return text_lines(read_file(path)[1], comments=False)


def read_csv(
    path: str | os.PathLike[str], required: Sequence[str], shape: str
) -> list[tuple[int, dict[str, str]]]:
    """(line number, {column: cell}) of a CSV's rows, columns found by name (cells stripped).

    Raises:
        FileNotFoundError: no such file (named).
        ValueError: a header without a `required` column, or a row with another number of
            cells (file and line named; `shape` is the header the dataset writes).
    """
    where, text = read_file(path)
    header, rows = csv_rows(text, where)
    absent = [c for c in required if c not in header]
    if absent:
        raise ValueError(f"{where}:1: the header {header} lacks {absent}; expected {shape}")
    return [(line, {h: c.strip() for h, c in row.items()}) for line, row in rows]


def check_split(split: object, subset: object) -> tuple[int, str]:
    """(split, subset) of an official split's reader: an int >= 1, "train" or "test"."""
    if isinstance(split, bool) or not isinstance(split, int) or split < 1:
        raise ValueError(f"split ({split!r}) must be an int >= 1")
    return split, str(check_choice("subset", subset, ("train", "test")))
