"""Annotation lists and manifests in, manifests out.

Three inputs describe the videos of a dataset (`load_videos` takes any of them):

* an mmaction2 annotation list (text or JSON), in every shape mmaction2 reads: `path label`
  (videos), `frame_dir [offset] total_frames label` (rawframes), multi-label lines; parsed by
  `read_annotation_list` (the shapes: `vidload._lists`). Absolute paths are kept relative to
  `/` (`VideoEntry.absolute`); `convert` and `probe` then need no `--root`. A video listed twice
  is two items (`ClipDataset` keeps both); `convert` and `probe` read it once.
* a manifest: the CSV that `vidload convert` and `vidload probe` write (`MANIFEST_FIELDS`),
  recognised by a `video_id` column in its header. One `ManifestRow` per video; an empty cell
  means unknown (None). Columns are found by name; columns of the user's own (a `split`, a
  note) are kept in `ManifestRow.extra` (and `VideoEntry.extra`) and written back after the
  known ones, so a manifest that vidload rewrites (a resumed `convert`) keeps them, and a
  manifest given to `convert` / `probe` as INPUT passes them on to the manifest they write.
  Window columns are `start` and `end` (seconds), both or neither; another window dataset's
  (`stop`, `start_timestamp`, `start_frame`, `actions`, ...) is refused naming its reader, when
  read and when written (`vidload._windows.check_window_columns`).
* a sequence of `(video_id, label)` or `(video_id, label, num_frames)` tuples, or `VideoEntry`s.

Manifest `status` values:

* "ok":       the video was read (probed or converted); `actual_frames` is the truth.
* "mismatch": read fine, but `reported_frames` (the metadata) disagrees with `actual_frames`.
* "failed":   it could not be read; `error` says why. `load_videos` leaves these out (and warns).
* "skipped":  not processed; counts may be unknown. Accepted when read, never written by
              `convert` or `probe` (a video a rerun skips keeps its previous row, below).

A rerun of `vidload convert` that skips a video already done keeps that video's previous row.
An empty `label` cell means unlabelled; `load_videos` gives such videos the label -1.
"""

from __future__ import annotations

import csv
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, get_args

from vidload._atomic import write_bytes_atomic
from vidload._checks import check_choice, check_int, check_optional_int, check_real
from vidload._ids import is_canonical, normalize_video_id
from vidload._lists import (
    MAX_FRAMES,
    UNLABELLED,
    VideoEntry,
    check_range,
    checked_entry,
    csv_rows,
    csv_text,
    not_a_file,
    parse_annotation_list,
    parse_int,
    read_annotation_list,
    read_text,
)
from vidload._official import warn_one_based
from vidload._storage import Location
from vidload._windows import check_window_columns, parse_number, parse_window
from vidload.errors import OneBasedLabelsWarning

__all__ = [
    "MANIFEST_FIELDS",
    "MANIFEST_STATUSES",
    "MAX_ERROR_CHARS",
    "MAX_FRAMES",
    "REQUIRED_FIELDS",
    "OneBasedLabelsWarning",
    "UNLABELLED",
    "ManifestRow",
    "ManifestStatus",
    "VideoEntry",
    "entries_from_manifest",
    "is_manifest",
    "keep_extra",
    "load_videos",
    "parse_manifest",
    "read_annotation_list",
    "read_manifest",
    "render_manifest",
    "write_manifest",
]

ManifestStatus = Literal["ok", "mismatch", "failed", "skipped"]
MANIFEST_STATUSES: tuple[str, ...] = get_args(ManifestStatus)

#: Columns a manifest must have; the others may be missing (older manifests: None).
REQUIRED_FIELDS: tuple[str, ...] = ("video_id",)
#: Longest `error` cell written, in characters: a longer message is cut there (the cell says
#: so). `csv` refuses cells over `csv.field_size_limit()` (131,072 characters) when reading, so
#: an uncut traceback-sized message would make the manifest unreadable.
MAX_ERROR_CHARS = 8192

_INT_FIELDS = ("label", "reported_frames", "actual_frames", "width", "height", "bytes")
_TEXT_FIELDS = ("error", "rotation", "container")  # str or None


@dataclass(frozen=True)
class ManifestRow:
    """One video of a manifest. None means unknown (an empty CSV cell).

    Attributes:
        video_id: path relative to the dataset root, `/`-separated, with its extension.
        label: class index, or None when unlabelled.
        reported_frames: frame count the metadata claims.
        actual_frames: frames that really decode (or that a container stores).
        width, height: frame size in pixels.
        fps: average frame rate, frames per second.
        bytes: size of the file in bytes.
        status: one of MANIFEST_STATUSES ("ok", "mismatch", "failed", "skipped").
        error: why the video failed, or None.
        rotation: the input video's display orientation, which `VideoSource` applies (so
            `width`/`height` and every stored frame are upright): "0", "90", "180", "270"
            (degrees counter-clockwise), "+hflip" appended when mirrored; None when unknown
            or not a video (containers store upright frames).
        container: the name of the video's container relative to the manifest's folder,
            `/`-separated, as `vidload convert` wrote it (`a/x1.h5`, `a/x1.avi.npy` where two
            ids share a stem, `a/x1.mp4` for `--to video`, the folder `a/x1` of JPEG frames);
            None in a probe's manifest, an older one, or for a failed video. A source reading
            the folder takes each video's container by this name (`vidload._layout`).
        extra: the cells of columns vidload does not know ({column: cell}, cells as written,
            "" for empty), kept through a read and a write; see `keep_extra`.
    """

    video_id: str
    label: int | None = None
    reported_frames: int | None = None
    actual_frames: int | None = None
    width: int | None = None
    height: int | None = None
    fps: float | None = None
    bytes: int | None = None
    status: ManifestStatus = "ok"
    error: str | None = None
    rotation: str | None = None
    container: str | None = None
    extra: Mapping[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "video_id", normalize_video_id(self.video_id))
        check_choice("status", self.status, MANIFEST_STATUSES)
        for name in _INT_FIELDS:
            value = getattr(self, name)
            if value is not None:
                value = check_int(name, value)
                check_range(name, value, minimum=None if name == "label" else 0)
                object.__setattr__(self, name, value)
        if self.fps is not None:
            object.__setattr__(self, "fps", check_real("fps", self.fps))
        for name in _TEXT_FIELDS:
            text = getattr(self, name)
            if text is not None and not isinstance(text, str):
                raise TypeError(f"{name} must be a str or None, got {text!r}")
        if self.rotation is not None:
            from vidload.sources._orientation import parse_orientation

            parse_orientation(self.rotation)
        if self.container is not None and not is_canonical(self.container):
            raise ValueError(
                f"container ({self.container!r}) must be a relative `/`-separated path "
                "in canonical form (as `vidload convert` writes it)"
            )
        object.__setattr__(self, "extra", _checked_extra(self.extra))


#: The manifest CSV header, in order: `ManifestRow`'s fields but `extra`, whose columns follow.
MANIFEST_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(ManifestRow) if f.name != "extra")


def keep_extra(row: ManifestRow, old: ManifestRow | None) -> ManifestRow:
    """`row` with the extra columns of `old` (the same video's earlier row) that it lacks: a
    rewritten manifest keeps the user's columns when vidload replaces a row."""
    if old is None or not old.extra:
        return row
    return replace(row, extra={**old.extra, **row.extra})


def is_manifest(
    path: str | os.PathLike[str] | Location, *, storage_options: Mapping[str, Any] | None = None
) -> bool:
    """True when the file's first line is a manifest header: CSV with a `video_id` column
    (anywhere: columns are found by name). Reads at most 64 KiB (the file may be a video)."""
    head = Location(path, storage_options).read_range(0, 65536)
    return has_manifest_header(head.decode("utf-8", errors="replace").lstrip("\ufeff"), path)


def has_manifest_header(text: str, path: object) -> bool:
    """`is_manifest` of a file's text (its first 64 KiB are parsed)."""
    try:
        header, _ = csv_rows(text[:65536], path)
    except csv.Error:  # not text (a video's bytes)
        return False
    return MANIFEST_FIELDS[0] in header


def read_manifest(
    path: str | os.PathLike[str] | Location, *, storage_options: Mapping[str, Any] | None = None
) -> list[ManifestRow]:
    """Rows of the manifest CSV at `path` (a local path or a URL, `storage_options` for its
    filesystem); errors name the file and line.

    Columns are found by name: known ones that are missing (a manifest from an older version
    has no `rotation`) are None; the others are kept in each row's `extra`, so an extra column
    never breaks a reader and survives a rewrite. `video_id` is required. Window columns are
    `start` and `end`, both or neither; another dataset's (`stop`, `start_frame`, `actions`,
    ...) is refused naming its reader (`vidload._windows.check_window_columns`).
    """
    path = Location(path, storage_options)
    return parse_manifest(read_text(path), path)


def parse_manifest(text: str, path: object = "manifest") -> list[ManifestRow]:
    """`read_manifest` of a manifest's text; `path` names it in errors."""
    header, cells_of = csv_rows(text, path)
    if not header:
        raise ValueError(f"{path}: empty file, expected the manifest header")
    missing = [f for f in REQUIRED_FIELDS if f not in header]
    twice = sorted({h for h in header if header.count(h) > 1})
    if missing or twice:
        raise ValueError(
            f"{path}:1: manifest header {header} "
            + (f"lacks the required column {missing[0]!r}" if missing else f"names {twice} twice")
            + f"; a manifest has the columns {list(MANIFEST_FIELDS)}"
        )
    extra = [h for h in header if h not in MANIFEST_FIELDS]
    check_window_columns(extra, f"{path}:1")
    rows = []
    for line, cells in cells_of:
        try:
            rows.append(_parse_row(cells, extra))
        except (ValueError, TypeError) as e:
            raise ValueError(f"{path}:{line}: {e}") from e
    return rows


def write_manifest(path: str | os.PathLike[str], rows: Iterable[ManifestRow]) -> None:
    """Write `rows` as a manifest CSV at `path`, atomically (`vidload._atomic`: a temporary
    file in the same folder, fsynced, renamed over `path`, the folder fsynced), so readers never
    see a half-written manifest and a power loss never leaves an empty one. The file gets the
    mode a new file gets (0o666 less the umask). The header is `MANIFEST_FIELDS`, then the
    rows' extra columns in the order first seen (a row without one: an empty cell). An `error`
    longer than `MAX_ERROR_CHARS` is cut, the cell saying so.

    Raises:
        TypeError: a row is not a ManifestRow.
        ValueError: an extra column that `read_manifest` would refuse (`stop`, `start`
            without `end`, ...: `vidload._windows.check_window_columns`); nothing is written.
        DiskFullError: no space left for the manifest (the old one is untouched).
    """
    write_bytes_atomic(path, render_manifest(rows, str(path)))


def render_manifest(rows: Iterable[ManifestRow], where: str = "manifest") -> bytes:
    """The bytes `write_manifest` writes for `rows`, raising as it does (`where` names the
    file in messages)."""
    rows = list(rows)
    for row in rows:
        if not isinstance(row, ManifestRow):
            raise TypeError(f"rows must be ManifestRow, got {type(row).__name__}")
    extra = list(dict.fromkeys(name for row in rows for name in row.extra))
    check_window_columns(extra, where)  # never a manifest that read_manifest refuses
    cells = (_format_row(row) + [row.extra.get(name, "") for name in extra] for row in rows)
    return csv_text(MANIFEST_FIELDS + tuple(extra), cells).encode("utf-8")


def load_videos(
    videos: str | os.PathLike[str] | Location | Sequence[tuple | VideoEntry],
    *,
    multi_label: bool = False,
    with_offset: bool | None = None,
    storage_options: Mapping[str, Any] | None = None,
    classes: Mapping[str, int] | None = None,
) -> list[VideoEntry]:
    """The videos of a dataset from an annotation list, a manifest, or a sequence.

    Args:
        videos: a path or URL (`s3://bucket/k400_h5/manifest.csv`) of an mmaction2 annotation
            list or of a manifest CSV (told apart by the manifest header), or a sequence of
            `(video_id, label)`, `(video_id, label, num_frames)` or `VideoEntry`.
        multi_label: how to read an annotation list (`read_annotation_list`).
        with_offset: how to read an annotation list (`read_annotation_list`).
        storage_options: for a URL, passed to its filesystem (see `vidload._storage`).
        classes: {class name: label}, so that a label may be a class name (a list's
            `path name` line, a `(video_id, "abseiling")` item).

    Labels that run from 1 with no 0 warn (`OneBasedLabelsWarning`), wherever they come
    from; an official split file read as a plain list is refused naming its reader
    (`vidload._official`). Manifest rows give `known_frames=actual_frames`; rows with status
    "failed" are left out, with one warning that counts them. Unlabelled rows get label -1.
    """
    if isinstance(videos, (str, os.PathLike, Location)):
        path = Location(videos, storage_options)
        if not_a_file(path):
            raise FileNotFoundError(f"videos ({str(path)!r}) is not a file")
        text = read_text(path)  # once: a manifest at a URL is one GET, not a sniff and a GET
        if has_manifest_header(text, path):
            return entries_from_manifest(parse_manifest(text, path), str(path))
        entries = parse_annotation_list(
            path, text, multi_label=multi_label, with_offset=with_offset, classes=classes
        )
        warn_one_based(entries, str(path))
        return entries
    if isinstance(videos, (bytes, dict)) or not isinstance(videos, Sequence):
        raise TypeError(
            f"videos must be a path or a sequence of (video_id, label[, num_frames]), "
            f"got {type(videos).__name__}"
        )
    if isinstance(videos, list) and all(type(v) is VideoEntry for v in videos):
        entries = list(videos)  # a vidload.datasets list: already checked, fast at 650k
    else:
        entries = [_entry_from_item(item, i, classes) for i, item in enumerate(videos)]
    warn_one_based(entries, "videos")
    return entries


def entries_from_manifest(
    rows: Iterable[ManifestRow], source: str = "manifest"
) -> list[VideoEntry]:
    """VideoEntries of manifest rows (`source` names the manifest in messages); "failed" rows
    are left out with one warning, and labels from 1 warn as `load_videos` says."""
    entries, failed = [], []
    for row in rows:
        if row.status == "failed":
            failed.append(row.video_id)
            continue
        label = UNLABELLED if row.label is None else row.label
        extra, (start, end) = row.extra, (None, None)
        if "start" in extra or "end" in extra:
            try:
                start, end = parse_window(extra.get("start", ""), extra.get("end", ""))
            except ValueError as e:
                raise ValueError(f"{source}: video {row.video_id!r}: {e}") from e
            extra = {k: v for k, v in extra.items() if k not in ("start", "end")}
        # a window's frames are counted in the window, not in the whole file
        whole = start is None and end is None
        known, reported = (row.actual_frames, row.reported_frames) if whole else (None, None)
        entries.append(
            VideoEntry(row.video_id, label, known, reported, extra=extra, start=start, end=end)
        )
    if failed:
        shown = ", ".join(failed[:3]) + (", ..." if len(failed) > 3 else "")
        warnings.warn(
            f"{source}: left out {len(failed)} video(s) with status 'failed' ({shown})",
            stacklevel=3,
        )
    warn_one_based(entries, source)
    return entries


#: The fields after (video_id, label) of a `load_videos` tuple, by its length.
_ITEM_FIELDS = {2: (), 3: ("num_frames",), 4: ("start", "end")}


def _entry_from_item(item: object, i: int, classes: Mapping[str, int] | None = None) -> VideoEntry:
    if isinstance(item, VideoEntry):
        return item
    if not isinstance(item, (tuple, list)) or len(item) not in _ITEM_FIELDS:
        raise TypeError(
            f"videos[{i}] ({item!r}) must be (video_id, label), (video_id, label, num_frames) "
            f"or a window (video_id, label, start, end)"
        )
    if classes is not None and isinstance(item[1], str):
        if item[1] not in classes:
            raise ValueError(f"videos[{i}] ({item!r}): label {item[1]!r} is not a class name")
        item = (item[0], classes[item[1]], *item[2:])
    try:
        video_id = normalize_video_id(item[0])
        given = dict(zip(_ITEM_FIELDS[len(item)], item[2:], strict=True))
        check_optional_int("num_frames", given.get("num_frames"))  # "int or None"
        return checked_entry(video_id, [item[1]], given, known_name="num_frames")
    except (TypeError, ValueError) as e:
        raise type(e)(f"videos[{i}] ({item!r}): {e}") from e


def _parse_row(cells: dict[str, str], extra: list[str]) -> ManifestRow:
    """A row from its cells by column name: the known columns parsed (one not given, or an
    empty cell, is None), the `extra` ones kept as they are."""
    values: dict[str, Any] = {"video_id": cells["video_id"]}  # ManifestRow's fields, typed there
    for name in _INT_FIELDS:
        text = cells.get(name, "")
        values[name] = parse_int(name, text) if text != "" else None
    values["fps"] = parse_number("fps", cells.get("fps", ""))
    if "status" in cells:
        values["status"] = cells["status"]
    for name in _TEXT_FIELDS:
        values[name] = cells.get(name) or None
    values["extra"] = {name: cells[name] for name in extra}
    return ManifestRow(**values)


def _format_row(row: ManifestRow) -> list[object]:
    """The values of `row`'s MANIFEST_FIELDS columns, as `csv_text` writes them."""
    out: list[object] = [getattr(row, name) for name in MANIFEST_FIELDS]
    error = row.error
    if error is not None and len(error) > MAX_ERROR_CHARS:
        note = f" ... [cut: {len(error)} characters in all]"
        out[MANIFEST_FIELDS.index("error")] = error[: MAX_ERROR_CHARS - len(note)] + note
    return out


def _checked_extra(extra: object) -> dict[str, str]:
    """A plain-dict copy of a row's extra cells; TypeError/ValueError unless str to str,
    with no known column's name."""
    if not isinstance(extra, Mapping):
        raise TypeError(f"extra must be a mapping of column name to cell, got {extra!r}")
    for name, cell in extra.items():
        if not isinstance(name, str) or not isinstance(cell, str):
            raise TypeError(f"extra ({name!r}: {cell!r}) must map a str column to a str cell")
        if name in MANIFEST_FIELDS:
            raise ValueError(f"extra column {name!r} is a manifest column; set the field")
    return dict(extra)
