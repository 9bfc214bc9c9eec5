"""Annotation lists and manifests in, manifests out.

Three inputs describe the videos of a dataset (`load_videos` takes any of them):

* an mmaction2 annotation list, one video per line, fields separated by whitespace, every
  shape mmaction2 reads: `path label` (videos, e.g. `abseiling/x1.mp4 0`), `frame_dir
  total_frames label` (rawframes, e.g. `abseiling/x1 250 0`), rawframes with an offset
  `frame_dir offset total_frames label` (the video is frames offset .. offset+total-1 of the
  folder, 0-based: mmaction2's `with_offset`), and multi-label lines, where every label follows
  (`path l1 l2 ...`, `frame_dir [offset] total_frames l1 l2 ...`; `multi_label=True`). A line
  whose first field has a video extension is a video line, else a rawframes line. Blank lines
  and lines starting with `#` are ignored. mmaction2's JSON lists (`.json`: a list of
  `{"filename": ..., "label": ...}` or `{"frame_dir": ..., "total_frames": ..., "label": ...}`,
  label an int or a list, optional `offset`) load the same way. Absolute paths
  (`/data/k400/x.mp4`) are kept relative to the filesystem root (`data/k400/x.mp4`, with
  `VideoEntry.absolute` set): read them with a source rooted at `/`; `convert` and `probe` then
  need no `--root`. A video listed twice is two items (`ClipDataset` keeps both); `convert` and
  `probe` read it once.
* a manifest: the CSV that `vidload convert` and `vidload probe` write (`MANIFEST_FIELDS`),
  recognised by a `video_id` column in its header. One `ManifestRow` per video; an empty cell
  means unknown (None). Columns are found by name; columns of the user's own (a `split`, a
  note) are kept in `ManifestRow.extra` (and `VideoEntry.extra`) and written back after the
  known ones, so a manifest that vidload rewrites (a resumed `convert`) keeps them, and a
  manifest given to `convert` / `probe` as INPUT passes them on to the manifest they write.
* a sequence of `(video_id, label)` or `(video_id, label, num_frames)` tuples, or `VideoEntry`s.

Manifest `status` values:

* "ok":       the video was read (probed or converted); `actual_frames` is the truth.
* "mismatch": read fine, but `reported_frames` (the metadata) disagrees with `actual_frames`.
* "failed":   it could not be read; `error` says why. `load_videos` leaves these out (and warns).
* "skipped":  deliberately not processed in this run (e.g. its output already existed and no
              earlier row was kept); counts may be unknown.

A rerun of `vidload convert` that skips a video already done keeps that video's previous row.
An empty `label` cell means unlabelled; `load_videos` gives such videos the label -1.
"""

from __future__ import annotations

import csv
import io
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any, Literal, get_args

from vidload._atomic import write_bytes_atomic
from vidload._checks import check_int, check_real
from vidload.sources.base import VIDEO_EXTENSIONS, normalize_video_id

ManifestStatus = Literal["ok", "mismatch", "failed", "skipped"]
MANIFEST_STATUSES: tuple[str, ...] = get_args(ManifestStatus)

#: The manifest CSV header, in order.
MANIFEST_FIELDS: tuple[str, ...] = (
    "video_id",
    "label",
    "reported_frames",
    "actual_frames",
    "width",
    "height",
    "fps",
    "bytes",
    "status",
    "error",
    "rotation",
)
#: Columns a manifest must have; the others may be missing (older manifests: None).
REQUIRED_FIELDS: tuple[str, ...] = ("video_id",)
#: Longest `error` cell written, in characters: a longer message is cut there (the cell says
#: so). `csv` refuses cells over `csv.field_size_limit()` (131,072 characters) when reading, so
#: an uncut traceback-sized message would make the manifest unreadable.
MAX_ERROR_CHARS = 8192

#: Label given to unlabelled videos (an empty manifest `label` cell).
UNLABELLED = -1

_INT_FIELDS = ("label", "reported_frames", "actual_frames", "width", "height", "bytes")
#: Largest frame count accepted (2**31 - 1: 2.7 years at 25 fps). Larger counts come from
#: damaged or hand-edited files and would overflow the int64 arithmetic of sampling.
MAX_FRAMES = 2**31 - 1
_INT64 = (-(2**63), 2**63 - 1)
_COUNT_FIELDS = frozenset({"reported_frames", "actual_frames", "total_frames", "num_frames"})


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
    extra: Mapping[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "video_id", normalize_video_id(self.video_id))
        if self.status not in MANIFEST_STATUSES:
            raise ValueError(f"status ({self.status!r}) must be one of {MANIFEST_STATUSES}")
        for name in _INT_FIELDS:
            value = getattr(self, name)
            if value is not None:
                value = check_int(name, value)
                _check_range(name, value, minimum=None if name == "label" else 0)
                object.__setattr__(self, name, value)
        if self.fps is not None:
            object.__setattr__(self, "fps", check_real("fps", self.fps))
        if self.error is not None and not isinstance(self.error, str):
            raise TypeError(f"error must be a str or None, got {self.error!r}")
        if self.rotation is not None:
            from vidload.sources._orientation import parse_orientation

            if not isinstance(self.rotation, str):
                raise TypeError(f"rotation must be a str or None, got {self.rotation!r}")
            parse_orientation(self.rotation)
        object.__setattr__(self, "extra", _checked_extra(self.extra))


def keep_extra(row: ManifestRow, old: ManifestRow | None) -> ManifestRow:
    """`row` with the extra columns of `old` (the same video's earlier row) that it lacks: a
    rewritten manifest keeps the user's columns when vidload replaces a row."""
    if old is None or not old.extra:
        return row
    return replace(row, extra={**old.extra, **row.extra})


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
    """

    video_id: str
    label: int
    known_frames: int | None = None
    reported_frames: int | None = None
    offset: int = 0
    labels: tuple[int, ...] | None = None
    absolute: bool = False
    extra: Mapping[str, str] = field(default_factory=dict, hash=False)


def is_manifest(path: str | os.PathLike[str]) -> bool:
    """True when the file's first line is a manifest header: CSV with a `video_id` column
    (anywhere: columns are found by name). Reads at most 64 KiB (the file may be a video)."""
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        first = f.readline(65536).lstrip("\ufeff")
    try:
        header = next(csv.reader([first]), [])
    except csv.Error:
        return False
    return MANIFEST_FIELDS[0] in (cell.strip() for cell in header)


def read_manifest(path: str | os.PathLike[str]) -> list[ManifestRow]:
    """Rows of the manifest CSV at `path`; errors name the file and line.

    Columns are found by name: known ones that are missing (a manifest from an older version
    has no `rotation`) are None; the others are kept in each row's `extra`, so an extra column
    never breaks a reader and survives a rewrite. `video_id` is required.
    """
    path = Path(path)
    text = _read_text(path)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise ValueError(f"{path}: empty file, expected the manifest header") from None
    header = [h.strip() for h in header]
    missing = [f for f in REQUIRED_FIELDS if f not in header]
    twice = sorted({h for h in header if header.count(h) > 1})
    if missing or twice:
        raise ValueError(
            f"{path}:1: manifest header {header} "
            + (f"lacks the required column {missing[0]!r}" if missing else f"names {twice} twice")
            + f"; a manifest has the columns {list(MANIFEST_FIELDS)}"
        )
    extra = [h for h in header if h not in MANIFEST_FIELDS]
    rows = []
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as e:  # e.g. a cell over csv.field_size_limit() (128 KiB)
            raise ValueError(f"{path}:{reader.line_num}: not a readable CSV row: {e}") from e
        if not cells or cells == [""]:
            continue
        where = f"{path}:{reader.line_num}"
        if len(cells) != len(header):
            raise ValueError(f"{where}: {len(cells)} cells, the header has {len(header)}")
        by_name = dict(zip(header, cells, strict=True))
        try:
            rows.append(_parse_row(by_name, extra))
        except (ValueError, TypeError) as e:
            raise ValueError(f"{where}: {e}") from e
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
        DiskFullError: no space left for the manifest (the old one is untouched).
    """
    rows = list(rows)
    for row in rows:
        if not isinstance(row, ManifestRow):
            raise TypeError(f"rows must be ManifestRow, got {type(row).__name__}")
    extra = list(dict.fromkeys(name for row in rows for name in row.extra))
    text = io.StringIO(newline="")
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(MANIFEST_FIELDS + tuple(extra))
    for row in rows:
        writer.writerow(_format_row(row) + [row.extra.get(name, "") for name in extra])
    write_bytes_atomic(path, text.getvalue().encode("utf-8"))


def read_annotation_list(
    path: str | os.PathLike[str], *, multi_label: bool = False, with_offset: bool | None = None
) -> list[VideoEntry]:
    """Entries of an mmaction2 annotation list (text, or JSON when the file is `.json` or
    starts with `[`); see the module docstring for the shapes.

    Args:
        path: the list.
        multi_label: lines carry one or more labels after the path (or counts).
        with_offset: rawframes lines carry an offset before total_frames. None: a single-label
            rawframes line with 4 fields has one (unambiguous); a multi-label list needs True.

    Errors name the file and line number.
    """
    path = Path(path)
    text = _read_text(path)
    if path.suffix.lower() == ".json" or text.lstrip().startswith("["):
        return _read_json_list(path, text, multi_label)
    entries: list[VideoEntry] = []
    for line_no, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        try:
            entries.append(_parse_list_fields(stripped.split(), multi_label, with_offset))
        except (ValueError, TypeError) as e:
            raise ValueError(f"{path}:{line_no}: {e}") from e
    return entries


def load_videos(
    videos: str | os.PathLike[str] | Sequence[tuple | VideoEntry],
    *,
    multi_label: bool = False,
    with_offset: bool | None = None,
) -> list[VideoEntry]:
    """The videos of a dataset from an annotation list, a manifest, or a sequence.

    Args:
        videos: a path to an mmaction2 annotation list or to a manifest CSV (told apart by the
            manifest header), or a sequence of `(video_id, label)`, `(video_id, label,
            num_frames)` or `VideoEntry`.
        multi_label, with_offset: how to read an annotation list (`read_annotation_list`).

    Manifest rows give `known_frames=actual_frames`; rows with status "failed" are left out,
    with one warning that counts them. Unlabelled rows get label -1.
    """
    if isinstance(videos, (str, os.PathLike)):
        path = Path(videos)
        if not path.is_file():
            raise FileNotFoundError(f"videos ({str(path)!r}) is not a file")
        if is_manifest(path):
            return entries_from_manifest(read_manifest(path), source=str(path))
        return read_annotation_list(path, multi_label=multi_label, with_offset=with_offset)
    if isinstance(videos, (bytes, dict)) or not isinstance(videos, Sequence):
        raise TypeError(
            f"videos must be a path or a sequence of (video_id, label[, num_frames]), "
            f"got {type(videos).__name__}"
        )
    return [_entry_from_item(item, i) for i, item in enumerate(videos)]


def entries_from_manifest(
    rows: Iterable[ManifestRow], source: str = "manifest"
) -> list[VideoEntry]:
    """VideoEntries of manifest rows; "failed" rows are left out with one warning."""
    entries, failed = [], []
    for row in rows:
        if row.status == "failed":
            failed.append(row.video_id)
            continue
        label = UNLABELLED if row.label is None else row.label
        entries.append(
            VideoEntry(row.video_id, label, row.actual_frames, row.reported_frames, extra=row.extra)
        )
    if failed:
        shown = ", ".join(failed[:3]) + (", ..." if len(failed) > 3 else "")
        warnings.warn(
            f"{source}: left out {len(failed)} video(s) with status 'failed' ({shown})",
            stacklevel=3,
        )
    return entries


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").lstrip("\ufeff")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not a UTF-8 text file ({e})") from e


def _parse_list_fields(
    fields: list[str], multi_label: bool, with_offset: bool | None
) -> VideoEntry:
    video_id, absolute = _list_id(fields[0])
    is_video = PurePosixPath(video_id).suffix.lower() in VIDEO_EXTENSIONS
    offset, known = 0, None
    if is_video:
        if with_offset:
            raise ValueError(f"{fields[0]!r} is a video file: with_offset applies to rawframes")
        labels = fields[1:]
    else:
        has_offset = (
            with_offset if with_offset is not None else (len(fields) == 4 and not multi_label)
        )
        if has_offset and not multi_label and len(fields) != 4:
            raise ValueError(
                f"{len(fields)} fields in {' '.join(fields)!r}; a rawframes line with an offset "
                f"is `frame_dir offset total_frames label` (pass multi_label=True for more labels)"
            )
        counts = fields[1:3] if has_offset else fields[1:2]
        if len(counts) < (2 if has_offset else 1):
            raise ValueError(f"{' '.join(fields)!r}: too few fields for a rawframes line")
        if has_offset:
            offset = _parse_int("offset", counts[0])
            _check_range("offset", offset, minimum=0)
        known = _parse_int("total_frames", counts[-1])
        _check_range("total_frames", known, minimum=0)
        labels = fields[1 + len(counts) :]
    if not labels:
        raise ValueError(f"{' '.join(fields)!r} has no label")
    if len(labels) > 1 and not multi_label:
        shape = "`path label`" if is_video else "`frame_dir [offset] total_frames label`"
        raise ValueError(
            f"{' '.join(fields)!r} has {len(labels)} labels: a single-label line is {shape}; "
            f"for a multi-label list pass multi_label=True"
        )
    values = tuple(_parse_int("label", t) for t in labels)
    for value in values:
        _check_range("label", value)
    return VideoEntry(
        video_id,
        values[0],
        known,
        None,
        offset=offset,
        labels=values if multi_label else None,
        absolute=absolute,
    )


def _list_id(path: str) -> tuple[str, bool]:
    """(video id, absolute): an absolute path is kept relative to `/`."""
    if not isinstance(path, str) or not path:
        raise TypeError(f"a path must be a non-empty str, got {path!r}")
    absolute = PurePosixPath(path).is_absolute()
    return normalize_video_id(path.lstrip("/") if absolute else path), absolute


def _read_json_list(path: Path, text: str, multi_label: bool) -> list[VideoEntry]:
    """mmaction2's JSON annotation list: a list of dicts with "filename" (a video) or
    "frame_dir" and "total_frames" (rawframes), "label" (int or list), optional "offset"."""
    import json

    try:
        items = json.loads(text)
    except ValueError as e:
        raise ValueError(f"{path}: not a JSON annotation list ({e})") from e
    if not isinstance(items, list):
        raise ValueError(f"{path}: a JSON annotation list is a list, got {type(items).__name__}")
    entries = []
    for k, item in enumerate(items):
        where = f"{path}: entry {k}"
        try:
            if not isinstance(item, dict):
                raise TypeError(f"must be an object, got {item!r}")
            name = item.get("filename", item.get("frame_dir"))
            if name is None:
                raise ValueError(f"has neither 'filename' nor 'frame_dir': {item!r}")
            video_id, absolute = _list_id(name)
            label = item.get("label", UNLABELLED)
            labels = tuple(label) if isinstance(label, (list, tuple)) else (label,)
            for value in labels:
                check_int("label", value)
                _check_range("label", value)
            if not labels:
                raise ValueError("has an empty label list")
            if len(labels) > 1 and not multi_label:
                raise ValueError(
                    f"has {len(labels)} labels; for a multi-label list pass multi_label=True"
                )
            known = item.get("total_frames")
            offset = item.get("offset", 0)
            for key, value in (("total_frames", known), ("offset", offset)):
                if value is not None:
                    check_int(key, value)
                    _check_range(key, value, minimum=0)
        except (ValueError, TypeError) as e:
            raise ValueError(f"{where}: {e}") from e
        entries.append(
            VideoEntry(
                video_id,
                int(labels[0]),
                None if known is None else int(known),
                None,
                offset=int(offset),
                labels=tuple(int(v) for v in labels) if multi_label else None,
                absolute=absolute,
            )
        )
    return entries


def _entry_from_item(item: object, i: int) -> VideoEntry:
    if isinstance(item, VideoEntry):
        return item
    if not isinstance(item, (tuple, list)) or len(item) not in (2, 3):
        raise TypeError(
            f"videos[{i}] ({item!r}) must be (video_id, label) or (video_id, label, num_frames)"
        )
    video_id, label = item[0], item[1]
    try:
        video_id = normalize_video_id(video_id)
        check_int(f"videos[{i}] label", label)
        _check_range("label", label)
        known = None
        if len(item) == 3 and item[2] is not None:
            known = item[2]
            check_int(f"videos[{i}] num_frames", known)
            _check_range("num_frames", known, minimum=0)
    except (TypeError, ValueError) as e:
        raise type(e)(f"videos[{i}] ({item!r}): {e}") from e
    return VideoEntry(video_id, int(label), None if known is None else int(known), None)


def _check_range(name: str, value: int, *, minimum: int | None = None) -> None:
    """ValueError unless `value` fits int64 (labels are collated into int64 tensors), is
    >= `minimum`, and for a frame count is <= MAX_FRAMES."""
    lo, hi = _INT64
    if minimum is not None:
        lo = max(lo, minimum)
    if name in _COUNT_FIELDS:
        hi = MAX_FRAMES
    if value < lo:
        raise ValueError(f"{name} ({value}) must be >= {lo}")
    if value > hi:
        why = "MAX_FRAMES" if hi == MAX_FRAMES else "the int64 maximum"
        raise ValueError(f"{name} ({value}) must be <= {hi} ({why})")


def _parse_int(name: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{name} ({text!r}) is not an integer") from None


def _parse_row(cells: dict[str, str], extra: list[str]) -> ManifestRow:
    """A row from its cells by column name: the known columns parsed (one not given, or an
    empty cell, is None), the `extra` ones kept as they are."""
    values: dict[str, Any] = {"video_id": cells["video_id"]}  # ManifestRow's fields, typed there
    for name in _INT_FIELDS:
        text = cells.get(name, "")
        values[name] = _parse_int(name, text) if text != "" else None
    if cells.get("fps", "") != "":
        try:
            values["fps"] = float(cells["fps"])
        except ValueError:
            raise ValueError(f"fps ({cells['fps']!r}) is not a number") from None
    if "status" in cells:
        values["status"] = cells["status"]
    values["error"] = cells.get("error") or None
    values["rotation"] = cells.get("rotation") or None
    values["extra"] = {name: cells[name] for name in extra}
    return ManifestRow(**values)


def _format_row(row: ManifestRow) -> list[str]:
    """The cells of `row`'s MANIFEST_FIELDS columns."""
    out = []
    for name in MANIFEST_FIELDS:
        value = getattr(row, name)
        out.append("" if value is None else repr(float(value)) if name == "fps" else str(value))
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
