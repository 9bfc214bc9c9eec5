"""mmaction2 annotation lists in: the entries (`VideoEntry`) of the text and JSON lists.

Every shape mmaction2 reads, one video per line, fields separated by whitespace: `path label`
(videos, e.g. `abseiling/x1.mp4 0`), `frame_dir total_frames label` (rawframes, e.g.
`abseiling/x1 250 0`), rawframes with an offset `frame_dir offset total_frames label` (the video
is frames offset .. offset+total-1 of the folder, 0-based: mmaction2's `with_offset`), and
multi-label lines, where every label follows (`path l1 l2 ...`, `frame_dir [offset]
total_frames l1 l2 ...`; `multi_label=True`). A line whose first field has a video extension is
a video line, else a rawframes line. Blank lines and lines starting with `#` are ignored.
mmaction2's JSON lists (`.json`: a list of `{"filename": ..., "label": ...}` or `{"frame_dir":
..., "total_frames": ..., "label": ...}`, label an int or a list, optional `offset`) load the
same way. Absolute paths (`/data/k400/x.mp4`) are kept relative to the filesystem root
(`data/k400/x.mp4`, with `VideoEntry.absolute` set): read them with a source rooted at `/`.

The public names are `vidload.manifest`'s (`read_annotation_list`, `VideoEntry`, `load_videos`
for any list or manifest); this module also holds the value rules both formats share
(`check_range`, `parse_int`) and the one way every list, manifest and dataset file is read
(`read_file`, `text_lines`, `csv_rows`, `parse_json`) and a CSV written (`csv_text`).
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vidload._checks import check_int
from vidload._ids import has_video_ext, normalize_video_id
from vidload._storage import Location
from vidload._windows import check_window, check_window_columns

#: Label given to unlabelled videos (an empty manifest `label` cell, a JSON entry without one).
UNLABELLED = -1
#: Largest frame count accepted (2**31 - 1: 2.7 years at 25 fps). Larger counts come from
#: damaged or hand-edited files and would overflow the int64 arithmetic of sampling.
MAX_FRAMES = 2**31 - 1
INT64 = (-(2**63), 2**63 - 1)
#: Names of frame counts: `check_range` holds them to MAX_FRAMES.
COUNT_FIELDS = frozenset({"reported_frames", "actual_frames", "total_frames", "num_frames"})


@dataclass(frozen=True)
class VideoEntry:
    """One video of a dataset, as `ClipDataset` sees it.

    Attributes:
        video_id: path relative to the source's root, `/`-separated.
        label: class index (-1 when unlabelled).
        known_frames: a trusted frame count (rawframes list, manifest `actual_frames`), or None.
        reported_frames: what the metadata claimed (manifest `reported_frames`), or None.
        offset: the video starts at this frame of its source (rawframes lists with an offset:
            frame i of the video is the source's frame offset + i); `known_frames` counts
            from there.
        labels: every label of a multi-label line (`labels[0] == label`); None otherwise.
        absolute: the list gave an absolute path; `video_id` is relative to `/`.
        extra: a manifest row's extra columns (`ManifestRow.extra`), so that what is built
            from the entry can keep them; empty for annotation lists.
        start, end: a window of the video, seconds from its first frame (whose timestamp
            counts as 0, whatever the container's start time): the entry is the frames whose
            time lies in [start, end); None: from the first frame / to the last
            (`vidload._windows`). Many entries may name one file with different windows.
    """

    video_id: str
    label: int
    known_frames: int | None = None
    reported_frames: int | None = None
    offset: int = 0
    labels: tuple[int, ...] | None = None
    absolute: bool = False
    extra: Mapping[str, str] = field(default_factory=dict, hash=False)
    start: float | None = None
    end: float | None = None

    @property
    def window(self) -> tuple[float | None, float | None] | None:
        """(start, end) when the entry is a window of its video, else None."""
        if self.start is None and self.end is None:
            return None
        return self.start, self.end


def read_annotation_list(
    path: str | os.PathLike[str] | Location,
    *,
    multi_label: bool = False,
    with_offset: bool | None = None,
    storage_options: Mapping[str, Any] | None = None,
    classes: Mapping[str, int] | None = None,
) -> list[VideoEntry]:
    """Entries of an mmaction2 annotation list (text, or JSON when the file is `.json` or
    starts with `[`); see the module docstring for the shapes.

    A path may hold spaces (`air drumming/x 1.mp4 3`): a video line's path ends at the first
    field with a video extension, a rawframes line's path is what precedes its trailing
    integers. A label may be a class name where the class list is known (`classes`).

    Args:
        path: the list: a local path or a URL (`s3://bucket/train.txt`, see `vidload._storage`).
        multi_label: lines carry one or more labels after the path (or counts).
        with_offset: rawframes lines carry an offset before total_frames. None: a single-label
            rawframes line with 4 fields has one (unambiguous); a multi-label list needs True.
        storage_options: for a URL, passed to its filesystem (see `vidload._storage`).
        classes: {class name: label}: a video line's label may then be a class name
            (`abseiling/x1.mp4 abseiling`, `air drumming/x.mp4 air drumming`).

    Errors name the file and line number. An official split file read here is refused
    naming the reader that reads it (`vidload._official`).
    """
    path = Location(path, storage_options)
    return parse_annotation_list(
        path, read_text(path), multi_label=multi_label, with_offset=with_offset, classes=classes
    )


def parse_annotation_list(
    path: Location,
    text: str,
    *,
    multi_label: bool = False,
    with_offset: bool | None = None,
    classes: Mapping[str, int] | None = None,
) -> list[VideoEntry]:
    """`read_annotation_list` of the list's `text` (read from `path`, which names it)."""
    from vidload._official import check_kinetics_csv, check_plain_list, json_list_error, line_error

    if path.name.lower().endswith(".json") or text.lstrip().startswith(("[", "{")):
        try:
            return _read_json_list(path, text, multi_label)
        except ValueError as e:
            raise json_list_error(e, text) from e
    first = text.lstrip().split("\n", 1)[0]
    check_kinetics_csv(path, first)
    if "," in first:  # a CSV header naming another window dataset's columns (Charades')
        check_window_columns(first.split(","), f"{path}:1")

    entries: list[VideoEntry] = []
    for line_no, line in text_lines(text):
        try:
            entries.append(_parse_line(line, multi_label, with_offset, classes))
        except (ValueError, TypeError) as e:
            raise line_error(path, line_no, e) from e
    check_plain_list(path, entries)
    return entries


def _parse_line(
    line: str, multi_label: bool, with_offset: bool | None, classes: Mapping[str, int] | None
) -> VideoEntry:
    """One list line: its path (spaces allowed, see `read_annotation_list`), then its counts
    (a rawframes line's) and labels."""
    fields = line.split()
    cut = next((k + 1 for k, f in enumerate(fields) if has_video_ext(f)), None)
    if cut is None:  # rawframes: the path is what precedes the trailing integers
        cut = len(fields)
        while cut > 1 and is_int(fields[cut - 1]):
            cut -= 1
    path, rest = line.rsplit(None, len(fields) - cut)[0], fields[cut:]  # spaces inside kept
    if rest and not all(map(is_int, rest)):  # a video line's class name
        name = line[len(path) :].strip()
        if classes is None:
            raise ValueError(
                f"label ({name!r}) is not an integer (a class name needs the class list: classes=)"
            )
        if name not in classes:
            raise ValueError(f"label {name!r} is not an integer nor a class name")
        rest = [str(classes[name])]
    video_id, absolute = _list_id(path)
    shown = " ".join([path, *rest])
    is_video = has_video_ext(video_id)
    counts: tuple[str, ...] = ()  # the names of the counts before the labels
    if is_video:
        if with_offset:
            raise ValueError(f"{path!r} is a video file: with_offset applies to rawframes")
    else:
        has_offset = (
            with_offset if with_offset is not None else (len(rest) == 3 and not multi_label)
        )
        if has_offset and not multi_label and len(rest) != 3:
            raise ValueError(
                f"{len(rest) + 1} fields in {shown!r}; a rawframes line with an offset "
                f"is `frame_dir offset total_frames label` (pass multi_label=True for more labels)"
            )
        counts = ("offset", "total_frames") if has_offset else ("total_frames",)
        if len(rest) < len(counts):
            raise ValueError(f"{shown!r}: too few fields for a rawframes line")
    labels = rest[len(counts) :]
    if not labels:
        raise ValueError(f"{shown!r} has no label")
    if len(labels) > 1 and not multi_label:
        shape = "`path label`" if is_video else "`frame_dir [offset] total_frames label`"
        raise ValueError(
            f"{shown!r} has {len(labels)} labels: a single-label line is {shape}; "
            f"for a multi-label list pass multi_label=True"
        )
    cells = dict(zip(counts, rest, strict=False))  # rest holds every count (checked above)
    return checked_entry(video_id, labels, cells, parse_int, multi_label, absolute)


def is_int(text: str) -> bool:
    """Whether `text` spells an int (`int(text)` succeeds)."""
    try:
        int(text)
    except ValueError:
        return False
    return True


def checked_entry(
    video_id: str,
    labels: Sequence[object],
    fields: Mapping[str, Any],
    number: Callable[[str, Any], int] = check_int,
    multi_label: bool = False,
    absolute: bool = False,
    known_name: str = "total_frames",
) -> VideoEntry:
    """The entry of a video's `labels` and `fields`, checked. `fields` are a JSON item's keys:
    `total_frames` (or `known_name`; None or absent: unknown), `offset` (absent: 0, None: an
    error), `start` and `end`; a list line and a `load_videos` tuple are given as theirs.
    Labels, count and offset are ints by `number` (`parse_int` for a list line's cells,
    `check_int` for values) in range (`check_range`), the window as `check_window` says.
    `labels` holds one label unless `multi_label` (each caller checks how many, in its
    format's words)."""
    values = tuple(check_range("label", number("label", v)) for v in labels)
    start, end = check_window(fields.get("start"), fields.get("end"))
    known = fields.get(known_name)
    frames = (
        None if known is None else check_range(known_name, number(known_name, known), minimum=0)
    )
    offset = check_range("offset", number("offset", fields.get("offset", 0)), minimum=0)
    return VideoEntry(
        video_id,
        values[0],
        frames,
        offset=offset,
        labels=values if multi_label else None,
        absolute=absolute,
        start=start,
        end=end,
    )


def _list_id(path: str) -> tuple[str, bool]:
    """(video id, absolute): an absolute path is kept relative to `/`; anything but a
    non-empty str is refused by `normalize_video_id`."""
    absolute = isinstance(path, str) and path.startswith("/")
    return normalize_video_id(path.lstrip("/") if absolute else path), absolute


def _read_json_list(path: Location, text: str, multi_label: bool) -> list[VideoEntry]:
    """mmaction2's JSON annotation list: a list of dicts with "filename" (a video) or
    "frame_dir" and "total_frames" (rawframes), "label" (int or list), optional "offset"."""
    items = parse_json(text, path)
    if not isinstance(items, list):
        raise ValueError(f"{path}: a JSON annotation list is a list, got {type(items).__name__}")
    entries = []
    for k, item in enumerate(items):
        try:
            if not isinstance(item, dict):
                raise TypeError(f"must be an object, got {item!r}")
            name = item.get("filename", item.get("frame_dir"))
            if name is None:
                raise ValueError(f"has neither 'filename' nor 'frame_dir': {item!r}")
            video_id, absolute = _list_id(name)
            label = item.get("label", UNLABELLED)
            given = label if isinstance(label, (list, tuple)) else [label]
            if not given:
                raise ValueError("has an empty label list")
            if len(given) > 1 and not multi_label:
                raise ValueError(
                    f"has {len(given)} labels; for a multi-label list pass multi_label=True"
                )
            entry = checked_entry(video_id, given, item, check_int, multi_label, absolute)
            check_window_columns(item, "its keys")  # after the values: their errors first
        except (ValueError, TypeError) as e:
            raise ValueError(f"{path}: entry {k}: {e}") from e
        entries.append(entry)
    return entries


def not_a_file(where: Location) -> bool:
    """Whether `where` is known, at no request, not to be a file: a local path that is none
    (its reader says "is not a file"); in a bucket the read says "not found" instead."""
    return not where.over_network and not where.is_file()


def read_text(path: Location) -> str:
    """The text of a list or manifest (UTF-8, a byte-order mark dropped); ValueError naming the
    file when it is not UTF-8 (a missing object in a bucket: VideoReadError naming its URL)."""
    try:
        return path.read_text()
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not a UTF-8 text file ({e})") from e


def parse_json(text: str, where: object) -> object:
    """The value of a JSON file's `text`; ValueError naming `where` when it is not JSON."""
    try:
        return json.loads(text)
    except ValueError as e:
        raise ValueError(f"{where}: not JSON ({e})") from e


def read_file(
    path: str | os.PathLike[str] | Location,
    storage_options: Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
) -> tuple[Location, str]:
    """(where, text) of a list, manifest, class or dataset file (`read_text`), checked first
    to be a file where that costs no request (`not_a_file`).

    Raises:
        FileNotFoundError: no such file, named (as `name (path)` when `name` says what it is).
    """
    where = Location(path, storage_options)
    if not_a_file(where):
        shown = repr(str(where)) if name is None else f"{name} ({str(where)!r})"
        raise FileNotFoundError(f"{shown} is not a file")
    return where, read_text(where)


def text_lines(text: str, *, comments: bool = True) -> list[tuple[int, str]]:
    """(line number, stripped line) of the lines of `text` that are not blank, nor (with
    `comments`) `#` comments."""
    lines = ((k, ln.strip()) for k, ln in enumerate(text.split("\n"), start=1))
    return [(k, ln) for k, ln in lines if ln and not (comments and ln.startswith("#"))]


def csv_text(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """The CSV text of `header` and `rows` (`\n` line ends; None written as an empty cell,
    a float as its `repr`): what `csv_rows` reads back."""
    text = io.StringIO(newline="")
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return text.getvalue()


def csv_rows(
    text: str, where: object, *, ragged: bool = False
) -> tuple[list[str], Iterator[tuple[int, dict[str, str]]]]:
    """(header, (line number, {column: cell}) of each row) of a CSV's text, the rows read as
    they are iterated: columns found by name (the header's names stripped, cells as written),
    blank rows skipped. Which columns it needs, each reader checks in its own words. With
    `ragged`, a row of another length than the header is read as far as it goes: its
    missing trailing cells empty, its extra cells dropped.

    Raises:
        csv.Error: a header `csv` cannot read (not text: `is_manifest` asks a video's bytes).
        ValueError (while iterating): a row with another number of cells than the header
            (unless `ragged`), or one `csv` cannot read (a cell over
            `csv.field_size_limit()`), `where` and the line named.
    """
    reader = csv.reader(io.StringIO(text, newline=""))
    header = [h.strip() for h in next(reader, [])]

    def rows() -> Iterator[tuple[int, dict[str, str]]]:
        try:
            for cells in reader:
                if not cells or cells == [""]:
                    continue
                if len(cells) != len(header) and ragged:
                    cells = (cells + [""] * len(header))[: len(header)]
                elif len(cells) != len(header):
                    raise ValueError(
                        f"{where}:{reader.line_num}: {len(cells)} cells, the header has "
                        f"{len(header)}"
                    )
                yield reader.line_num, dict(zip(header, cells, strict=True))
        except csv.Error as e:
            raise ValueError(f"{where}:{reader.line_num}: not a readable CSV row: {e}") from e

    return header, rows()


def check_range(name: str, value: int, *, minimum: int | None = None) -> int:
    """`value`; ValueError unless it fits int64 (labels are collated into int64 tensors), is
    >= `minimum`, and for a frame count is <= MAX_FRAMES."""
    lo, hi = INT64
    if minimum is not None:
        lo = max(lo, minimum)
    if name in COUNT_FIELDS:
        hi = MAX_FRAMES
    if value < lo:
        raise ValueError(f"{name} ({value}) must be >= {lo}")
    if value > hi:
        why = "MAX_FRAMES" if hi == MAX_FRAMES else "the int64 maximum"
        raise ValueError(f"{name} ({value}) must be <= {hi} ({why})")
    return value


def parse_int(name: str, text: str) -> int:
    """The int a list's or manifest's cell `text` spells; ValueError naming `name` otherwise."""
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{name} ({text!r}) is not an integer") from None
