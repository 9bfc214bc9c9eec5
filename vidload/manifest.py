"""Annotation lists and manifests in, manifests out.

Three inputs describe the videos of a dataset (`load_videos` takes any of them):

* an mmaction2 annotation list, one video per line, fields separated by whitespace:
  `path label` (videos, e.g. `abseiling/x1.mp4 0`) or `frame_dir total_frames label`
  (rawframes, e.g. `abseiling/x1 250 0`). Blank lines and lines starting with `#` are ignored.
  Every line of a file has the same number of fields; multi-label lines are not supported
  (a 3-field line whose path has a video extension is taken for one and rejected).
* a manifest: the CSV that `vidload convert` and `vidload probe` write, recognised by its header
  (`MANIFEST_FIELDS`). One `ManifestRow` per video; an empty cell means unknown (None).
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
import dataclasses
import io
import numbers
import os
import tempfile
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal, get_args

from vidload._atomic import fsync_dir
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

    def __post_init__(self) -> None:
        object.__setattr__(self, "video_id", normalize_video_id(self.video_id))
        if self.status not in MANIFEST_STATUSES:
            raise ValueError(f"status ({self.status!r}) must be one of {MANIFEST_STATUSES}")
        for name in _INT_FIELDS:
            value = getattr(self, name)
            if value is None:
                continue
            _require_int(name, value)
            _check_range(name, value, minimum=None if name == "label" else 0)
            object.__setattr__(self, name, int(value))
        if self.fps is not None:
            if isinstance(self.fps, bool) or not isinstance(self.fps, numbers.Real):
                raise TypeError(f"fps must be a float or None, got {self.fps!r}")
            object.__setattr__(self, "fps", float(self.fps))
        if self.error is not None and not isinstance(self.error, str):
            raise TypeError(f"error must be a str or None, got {self.error!r}")
        if self.rotation is not None:
            from vidload.sources._orientation import parse_orientation

            if not isinstance(self.rotation, str):
                raise TypeError(f"rotation must be a str or None, got {self.rotation!r}")
            parse_orientation(self.rotation)


@dataclass(frozen=True)
class VideoEntry:
    """One video of a dataset, as `ClipDataset` sees it.

    Attributes:
        video_id: path relative to the source's root, `/`-separated.
        label: class index (-1 when unlabelled).
        known_frames: a trusted frame count (rawframes list, manifest `actual_frames`), or None.
        reported_frames: what the metadata claimed (manifest `reported_frames`), or None.
    """

    video_id: str
    label: int
    known_frames: int | None = None
    reported_frames: int | None = None


def is_manifest(path: str | os.PathLike[str]) -> bool:
    """True when the file's first line is a manifest header (starts with `video_id,`)."""
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        first = f.readline()
    return first.lstrip("\ufeff").startswith(MANIFEST_FIELDS[0] + ",")


def read_manifest(path: str | os.PathLike[str]) -> list[ManifestRow]:
    """Rows of the manifest CSV at `path`; errors name the file and line.

    Columns are found by name: columns this version does not know are ignored and known ones
    that are missing (a manifest from an older version has no `rotation`) are None, so an
    extra column never breaks a reader. `video_id` is required.
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
            + (f"lacks {missing}" if missing else f"names {twice} twice")
            + f"; a manifest has the columns {list(MANIFEST_FIELDS)}"
        )
    known = [f for f in MANIFEST_FIELDS if f in header]
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
            rows.append(_parse_row({f: by_name[f] for f in known}))
        except (ValueError, TypeError) as e:
            raise ValueError(f"{where}: {e}") from e
    return rows


def write_manifest(path: str | os.PathLike[str], rows: Iterable[ManifestRow]) -> None:
    """Write `rows` as a manifest CSV at `path`, atomically.

    The CSV goes to a temporary file in the same folder, fsynced, which then replaces `path`
    (`os.replace`; the folder is fsynced after), so readers never see a half-written manifest
    and a power loss never leaves an empty one.
    """
    path = Path(path)
    rows = list(rows)
    for row in rows:
        if not isinstance(row, ManifestRow):
            raise TypeError(f"rows must be ManifestRow, got {type(row).__name__}")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow(MANIFEST_FIELDS)
            for row in rows:
                writer.writerow(_format_row(row))
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent or ".")


def read_annotation_list(path: str | os.PathLike[str]) -> list[VideoEntry]:
    """Entries of an mmaction2 annotation list (`path label` or `frame_dir total_frames label`).

    The format is taken from the first data line's number of fields; every other line must
    match it. Errors name the file and line number.
    """
    path = Path(path)
    entries: list[VideoEntry] = []
    num_fields = None
    for line_no, line in enumerate(_read_text(path).split("\n"), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        fields = stripped.split()
        where = f"{path}:{line_no}"
        if len(fields) not in (2, 3):
            raise ValueError(
                f"{where}: {len(fields)} fields in {stripped!r}; expected `path label` or "
                f"`frame_dir total_frames label` (multi-label lists are not supported)"
            )
        if num_fields is None:
            num_fields = len(fields)
        elif len(fields) != num_fields:
            raise ValueError(
                f"{where}: {len(fields)} fields but the first entry has {num_fields}; "
                f"a list is either `path label` or `frame_dir total_frames label`"
            )
        try:
            entries.append(_parse_list_fields(fields))
        except (ValueError, TypeError) as e:
            raise ValueError(f"{where}: {e}") from e
    return entries


def load_videos(
    videos: str | os.PathLike[str] | Sequence[tuple | VideoEntry],
) -> list[VideoEntry]:
    """The videos of a dataset from an annotation list, a manifest, or a sequence.

    Args:
        videos: a path to an mmaction2 annotation list or to a manifest CSV (told apart by the
            manifest header), or a sequence of `(video_id, label)`, `(video_id, label,
            num_frames)` or `VideoEntry`.

    Manifest rows give `known_frames=actual_frames`; rows with status "failed" are left out,
    with one warning that counts them. Unlabelled rows get label -1.
    """
    if isinstance(videos, (str, os.PathLike)):
        path = Path(videos)
        if not path.is_file():
            raise FileNotFoundError(f"videos ({str(path)!r}) is not a file")
        if is_manifest(path):
            return entries_from_manifest(read_manifest(path), source=str(path))
        return read_annotation_list(path)
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
        entries.append(VideoEntry(row.video_id, label, row.actual_frames, row.reported_frames))
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


def _parse_list_fields(fields: list[str]) -> VideoEntry:
    video_id = normalize_video_id(fields[0])
    label = _parse_int("label", fields[-1])
    known = None
    if len(fields) == 3:
        if PurePosixPath(video_id).suffix.lower() in VIDEO_EXTENSIONS:
            raise ValueError(
                f"{' '.join(fields)!r} names a video file with two numbers: multi-label lines "
                f"are not supported (a rawframes line is `frame_dir total_frames label`)"
            )
        known = _parse_int("total_frames", fields[1])
        _check_range("total_frames", known, minimum=0)
    _check_range("label", label)
    return VideoEntry(video_id, label, known, None)


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
        _require_int(f"videos[{i}] label", label)
        _check_range("label", label)
        known = None
        if len(item) == 3 and item[2] is not None:
            known = item[2]
            _require_int(f"videos[{i}] num_frames", known)
            _check_range("num_frames", known, minimum=0)
    except (TypeError, ValueError) as e:
        raise type(e)(f"videos[{i}] ({item!r}): {e}") from e
    return VideoEntry(video_id, int(label), None if known is None else int(known), None)


def _require_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {value!r}")


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


def _parse_row(cells: dict[str, str]) -> ManifestRow:
    """A row from its cells by column name; a column not given (or an empty cell) is None."""
    values: dict[str, object] = {"video_id": cells["video_id"]}
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
    return ManifestRow(**values)


def _format_row(row: ManifestRow) -> list[str]:
    out = []
    for field in dataclasses.fields(ManifestRow):
        value = getattr(row, field.name)
        out.append(
            "" if value is None else repr(float(value)) if field.name == "fps" else str(value)
        )
    return out
