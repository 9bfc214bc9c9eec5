"""EPIC-KITCHENS-100 as downloaded: the annotation CSVs (`EPIC_100_train.csv`,
`EPIC_100_validation.csv`: `narration_id,participant_id,video_id,narration_timestamp,
start_timestamp,stop_timestamp,start_frame,stop_frame,narration,verb,verb_class,noun,noun_class,
all_nouns,all_noun_classes`; the test file has no labels), the class files
(`EPIC_100_verb_classes.csv`, `EPIC_100_noun_classes.csv`: `id,key,instances,category`), the
videos `P01/videos/P01_01.MP4` and the frames `P01/rgb_frames/P01_01/frame_0000000001.jpg`
(1-based, one tar per video unpacked into its folder).

Each row is an action: a window of its video, in seconds (`start_timestamp`/`stop_timestamp`,
`HH:MM:SS.ff`) or in frame numbers (`start_frame`/`stop_frame`, 1-based, numbering the frames
of `rgb_frames` and of the video alike). A frame window is an entry with an offset and a count
(frames `start_frame .. stop_frame - 1`, as EPIC's own loaders count `stop_frame -
start_frame` frames), so it needs no frame rate; a time window is an entry's `start`/`end`,
found by the source's timestamps.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Literal

from vidload._checks import check_choice
from vidload._lists import UNLABELLED, VideoEntry, check_range, csv_rows, parse_int, read_file
from vidload._windows import check_window
from vidload.datasets._common import DatasetList, class_file_names, class_names, read_csv
from vidload.sources.base import normalize_video_id

Label = Literal["verb", "noun", "action"]
_TIME = re.compile(r"^(\d+):([0-5]\d):([0-5]\d(?:\.\d+)?)$")
_SHAPE = (
    "EPIC-KITCHENS-100's narration_id,participant_id,video_id,narration_timestamp,"
    "start_timestamp,stop_timestamp,start_frame,stop_frame,narration,verb,verb_class,noun,"
    "noun_class,..."
)


def epic_kitchens(
    csv_path: str | os.PathLike[str],
    *,
    label: Label = "verb",
    media: Literal["videos", "rgb_frames"] = "videos",
    window: Literal["timestamps", "frames"] | None = None,
    classes: Sequence[str] | str | os.PathLike[str] | None = None,
    actions: Sequence[tuple[int, int]] | str | os.PathLike[str] | None = None,
    video_ext: str = ".MP4",
) -> DatasetList:
    """One entry per row (action) of an EPIC-KITCHENS-100 annotation CSV: a window of its
    video, labelled by its verb, noun or action class.

    Args:
        csv_path: `EPIC_100_train.csv`, `EPIC_100_validation.csv`, or the test file (no
            labels: every entry is unlabelled, -1). Columns are found by name.
        label: "verb" (`verb_class`, 0..96), "noun" (`noun_class`, 0..299): the official
            numbers, the same in every split; or "action", a (verb_class, noun_class) pair,
            numbered by `actions`.
        media: "videos": ids `P01/videos/P01_01.MP4` (read with `VideoSource(ROOT)`);
            "rgb_frames": ids `P01/rgb_frames/P01_01`, read with
            `JpegSource(ROOT, template="frame_{:010d}.jpg")` (its default `start_index=1`).
        window: "timestamps": `start_timestamp`/`stop_timestamp` as the window [start, stop)
            in seconds; "frames": `start_frame`/`stop_frame`, the frames numbered start_frame
            .. stop_frame - 1 (1-based), exact without a frame rate. None: "timestamps" for
            videos, "frames" for rgb_frames (a frame folder's times are i / fps, and the rate
            the frames were extracted at is not in the folder).
        classes: the names of the verb or noun classes (`.classes`): EPIC's
            `EPIC_100_verb_classes.csv` / `EPIC_100_noun_classes.csv` (their `id,key`
            columns), a class file, or the names in label order. None: the CSV's `verb` /
            `noun` cells (a class no row has is named `verb_class 5`). For "action" the names
            are "<verb> <noun>".
        actions: the action numbering: (verb_class, noun_class) pairs in label order, or an
            annotation CSV whose distinct pairs, sorted, are numbered 0, 1, ... (give the
            training CSV when reading the validation one, so both number alike). None: this
            CSV's distinct pairs, sorted.
        video_ext: the videos' extension (the download's `.MP4`).

    The row's `narration_id` is kept in `VideoEntry.extra`.

    Raises:
        FileNotFoundError: the CSV (or a class or actions file) is not there.
        ValueError: a header without the needed columns, a time that is not `HH:MM:SS.ff`, an
            empty window, a class outside `classes`, an action pair not in `actions` (file and
            line named).
    """
    check_choice("label", label, ("verb", "noun", "action"))
    check_choice("media", media, ("videos", "rgb_frames"))
    if window is None:
        window = "frames" if media == "rgb_frames" else "timestamps"
    check_choice("window", window, ("timestamps", "frames"))
    bounds = ("start_timestamp", "stop_timestamp")
    if window == "frames":
        bounds = ("start_frame", "stop_frame")
    rows = read_csv(csv_path, ("participant_id", "video_id", *bounds), _SHAPE)
    names = {kind: _names_in(rows, kind) for kind in ("verb", "noun")}
    needed = ("verb_class", "noun_class") if label == "action" else (f"{label}_class",)
    labelled = bool(rows) and all(c in rows[0][1] for c in needed)  # the test CSV: none
    if label == "action":
        if classes is not None:
            raise ValueError("classes= names verb or noun classes; pin actions with actions=")
        pairs = _action_pairs(actions, rows if labelled else [], str(csv_path), names)
        numbering = {pair: k for k, pair in enumerate(pairs)}
        named = tuple(f"{_name(names, 'verb', v)} {_name(names, 'noun', n)}" for v, n in pairs)
    else:
        every = (_name(names, label, k) for k in range(max(names[label], default=-1) + 1))
        named = class_names(classes, default=every, read=_class_file)
    entries = []
    for line, row in rows:
        try:
            k = UNLABELLED
            if labelled and label == "action":
                pair = (_int(row, "verb_class"), _int(row, "noun_class"))
                if pair not in numbering:
                    raise ValueError(
                        f"action (verb_class, noun_class) {pair} is not one of the {len(numbering)}"
                        f" of actions=; read it with label='verb' or 'noun', or give actions= "
                        f"that holds it"
                    )
                k = numbering[pair]
            elif labelled:
                k = _int(row, f"{label}_class")
                if k >= len(named):
                    raise ValueError(f"{label}_class {k} is outside classes= ({len(named)} names)")
            entries.append(_entry(row, k, media, window, video_ext))
        except ValueError as e:
            raise ValueError(f"{csv_path}:{line}: {e}") from e
    return DatasetList(entries, named)


def _entry(row: dict[str, str], k: int, media: str, window: str, ext: str) -> VideoEntry:
    # media names the folder: `P01/videos/P01_01.MP4`, `P01/rgb_frames/P01_01`
    name = f"{row['participant_id']}/{media}/{row['video_id']}"
    vid = normalize_video_id(name + ext if media == "videos" else name)
    extra = {"narration_id": row["narration_id"]} if "narration_id" in row else {}
    if window == "frames":
        first, stop = (_int(row, name) for name in ("start_frame", "stop_frame"))
        if stop <= first:
            raise ValueError(f"frames [{first}, {stop}) hold no frame: stop_frame <= start_frame")
        return VideoEntry(vid, k, stop - first, offset=first - 1, extra=extra)
    start, end = check_window(seconds(row["start_timestamp"]), seconds(row["stop_timestamp"]))
    return VideoEntry(vid, k, start=start, end=end, extra=extra)


def seconds(text: str) -> float:
    """Seconds of an EPIC `HH:MM:SS.ff` time (`00:01:02.50` -> 62.5)."""
    m = _TIME.match(text.strip())
    if m is None:
        raise ValueError(f"time {text!r} is not HH:MM:SS.ff")
    return int(m[1]) * 3600 + int(m[2]) * 60 + float(m[3])


def _int(row: dict[str, str], name: str) -> int:
    """The int of a row's cell: a class number (>= 0) or a frame number (>= 1: EPIC's frame
    numbers start at 1)."""
    value = parse_int(name, row[name])
    if name.endswith("_frame") and value < 1:
        raise ValueError(f"{name} ({value}) must be >= 1: EPIC's frame numbers start at 1")
    return check_range(name, value, minimum=0)


def _names_in(rows: list[tuple[int, dict[str, str]]], kind: str) -> dict[int, str]:
    """{class number: the `verb`/`noun` cell of its first row} (empty without the columns)."""
    out: dict[int, str] = {}
    for _, row in rows:
        text = row.get(f"{kind}_class", "")
        if text.isdigit() and kind in row:
            out.setdefault(int(text), row[kind])
    return out


def _name(names: dict[str, dict[int, str]], kind: str, k: int) -> str:
    return names[kind].get(k, f"{kind}_class {k}")


def _class_file(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """The names of an EPIC class CSV (`id,key,...`), or of another class file."""
    where, text = read_file(path)
    header, rows = csv_rows(text, where)
    if not {"id", "key"} <= set(header):
        return class_file_names(path)
    by_id = {}
    for line, row in rows:
        try:
            by_id[parse_int("id", row["id"].strip())] = row["key"].strip()
        except ValueError as e:
            raise ValueError(f"{path}:{line}: {e}") from e
    if sorted(by_id) != list(range(len(by_id))):
        raise ValueError(f"{path}: the ids must run 0..{len(by_id) - 1}, each once")
    return tuple(by_id[k] for k in range(len(by_id)))


def _action_pairs(
    actions: Sequence[tuple[int, int]] | str | os.PathLike[str] | None,
    rows: list[tuple[int, dict[str, str]]],
    where: str,
    names: dict[str, dict[int, str]],
) -> list[tuple[int, int]]:
    """The (verb_class, noun_class) pairs in label order (see `epic_kitchens`'s `actions`)."""
    if actions is None or isinstance(actions, (str, os.PathLike)):
        if actions is not None:
            where = str(actions)
            rows = read_csv(actions, ("verb_class", "noun_class"), _SHAPE)
            for kind in ("verb", "noun"):
                names[kind] = {**_names_in(rows, kind), **names[kind]}
        pairs = set()
        for line, row in rows:
            try:
                pairs.add((_int(row, "verb_class"), _int(row, "noun_class")))
            except ValueError as e:
                raise ValueError(f"{where}:{line}: {e}") from e
        return sorted(pairs)
    out = [tuple(p) for p in actions]
    for p in out:
        if len(p) != 2 or any(isinstance(v, bool) or not isinstance(v, int) for v in p):
            raise TypeError(f"actions must be (verb_class, noun_class) int pairs, got {p!r}")
    if len(set(out)) != len(out):
        raise ValueError("actions names a (verb_class, noun_class) pair twice")
    return out  # type: ignore[return-value]
