"""Build frame containers from videos or JPEG folders: the library behind `vidload convert`.

`convert(input_path, output, to=...)` turns every video of `input_path` into one container in
`output`, laid out as the sources read it, so `JpegSource(output)`, `Hdf5Source(output)` and
`NpySource(output)` take the same video ids as `VideoSource(input_path)`:

    video id `a/x1.mp4` -> `output/a/x1/img_00001.jpg ...` (jpeg), `output/a/x1.h5` (hdf5),
                           `output/a/x1.npy` (npy)

Two inputs whose ids differ only in the video extension (`x.mp4`, `x.avi`) keep it in their
container names (`x.mp4.h5`, `x.avi.h5`); the sources look for such a full name first.

`input_path` is one of:

* a folder: searched recursively for video files (by extension, `VIDEO_EXTENSIONS`) and for
  JPEG frame folders (a folder holding `img_00001.jpg`; its sub-folders are not searched). Names
  starting with "." are skipped (they are temporary files).
* an annotation list (mmaction2 `path label` or `frame_dir total_frames label`) or a manifest:
  entries are paths relative to `root`, which defaults to the list's own folder. Labels are
  carried into the output manifest.

A folder's videos are labelled by their top-level class folder (`class_name/.../x.mp4`; sorted
names -> 0, 1, ..., or the mapping of a `labels` file) and the names go to
`output/classes.txt`, one per line in label order (`vidload.labels`). Videos directly in the
folder are unlabelled.

Frames are decoded (`VideoSource.iter_frames`: the frames that really decode, turned upright
by the video's display rotation, which the manifest's `rotation` column records), optionally
resized so the short side is `short_side` (cv2.INTER_AREA, aspect kept), and JPEG-encoded at
`quality` with chroma subsampling `subsampling`. A JPEG folder is repacked byte for byte (the
stored bytes are the files' bytes) unless `short_side` is given, which decodes, resizes and
re-encodes it.

Resuming: every container is written atomically (temporary name, then rename), so a container at
its final path is complete. Without `overwrite`, a video is skipped when its container exists and
the manifest says it converted, or, with no manifest row (a run killed before writing it), when
the container opens and validates. `output/vidload-convert.json` records `to`, `short_side`,
`quality` and `subsampling`; resuming with different options raises ValueError (pass
`overwrite=True`). One run at a time writes into an `output`: a second one raises
`OutputLockedError` (`vidload._lock`); stale temporary files of a killed run are removed at
the start of the next one.

The work is done in shards (`vidload.shards`: plan, convert shards anywhere, finish), on a local
pool of spawned processes that die with their parent, or on any `concurrent.futures.Executor`
(`executor=`, e.g. a Dask cluster's).

`output/manifest.csv` gets one `ManifestRow` per video (merged with the rows already there):
`actual_frames` is the number of frames stored, `reported_frames` what the input's header
claimed, status "mismatch" when the two differ, "failed" with the reason when nothing could be
stored. The input is only ever read.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import warnings
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, get_args

import numpy as np

from vidload._atomic import TEMP_RE, is_disk_full, write_bytes_atomic
from vidload._cv2 import cv2
from vidload._parallel import (  # noqa: F401  (check_workers, run_parallel: their home moved)
    check_workers,
    resolve_workers,
    run_parallel,
)
from vidload.errors import DiskFullError, UsageError, VideoReadError, VidloadError
from vidload.labels import input_class_map, label_by_folder
from vidload.manifest import ManifestRow, load_videos, read_manifest
from vidload.sources._timestamps import sidecar_path, write_timestamps
from vidload.sources.base import (
    VIDEO_EXTENSIONS,
    FrameSource,
    normalize_video_id,
    strip_video_ext,
)
from vidload.sources.hdf5 import Hdf5Source, write_hdf5
from vidload.sources.jpeg import JpegSource, read_frame_file, write_jpeg_folder
from vidload.sources.jpeg_decode import (
    Subsampling,
    check_jpeg_markers,
    decode_jpeg,
    encode_jpeg,
    jpeg_size,
)
from vidload.sources.npy import NpySource, write_npy
from vidload.sources.video import VideoSource
from vidload.transforms import scaled_size

__all__ = [
    "CONVERT_FORMATS",
    "ConvertFormat",
    "ConvertReport",
    "InputItem",
    "container_path",
    "convert",
    "find_inputs",
    "resize_short_side",
]

ConvertFormat = Literal["jpeg", "hdf5", "npy"]
CONVERT_FORMATS: tuple[str, ...] = get_args(ConvertFormat)
InputKind = Literal["video", "jpeg", "hdf5", "npy"]

#: Name of the manifest `convert` writes in `output`.
MANIFEST_NAME = "manifest.csv"
#: Name of the file recording the options a conversion used.
OPTIONS_NAME = "vidload-convert.json"
#: First frame file that marks a folder as a JPEG frame folder.
FIRST_FRAME_NAME = "img_00001.jpg"
_CONTAINER_SUFFIX = {"hdf5": ".h5", "npy": ".npy"}
#: `write_manifest`'s temporary names (`.manifest.csv.<random>.tmp`); the writers' are
#: `vidload._atomic.TEMP_RE`.
_MANIFEST_TMP_RE = re.compile(r"^\.manifest\.csv\..+\.tmp$")


# --------------------------------------------------------------------------- finding inputs


@dataclass(frozen=True)
class InputItem:
    """One video to read.

    Attributes:
        video_id: path relative to the input root, `/`-separated (videos keep their extension).
        kind: "video" (a video file), "jpeg" (a frame folder), "hdf5" or "npy" (a container).
        path: the file or folder.
        label: class index from an annotation list, None when unlabelled.
        listed_frames: a frame count given by the list (rawframes `total_frames` or a manifest),
            used as the reported count of JPEG folders.
    """

    video_id: str
    kind: InputKind
    path: Path
    label: int | None = None
    listed_frames: int | None = None


def find_inputs(
    input_path: str | os.PathLike[str],
    *,
    root: str | os.PathLike[str] | None = None,
    kinds: Sequence[InputKind] = ("video", "jpeg"),
) -> tuple[Path, list[InputItem]]:
    """(root, items) for a folder, a single video file or container, an annotation list or
    a manifest.

    A folder is searched recursively (sorted, symlinks followed, names starting with "."
    skipped) for files with a video extension, folders holding `img_00001.jpg` and, when
    `kinds` allows, `.h5` and `.npy` files. A list's entries are relative to `root` (default: the
    list's folder); an entry naming no existing path is looked up as a container of `kinds`
    (`a/x1.mp4` -> `a/x1/`, `a/x1.h5`, `a/x1.npy`), else kept (it fails when read).

    Raises:
        FileNotFoundError: `input_path` (or `root`) does not exist.
        ValueError: nothing to read, `root` given with a folder, or two inputs share an id.
    """
    kinds = tuple(kinds)
    for kind in kinds:
        if kind not in get_args(InputKind):
            raise ValueError(f"kinds ({kinds!r}) must be drawn from {get_args(InputKind)}")
    src = Path(input_path)
    if not src.exists():
        raise FileNotFoundError(f"INPUT ({str(src)!r}) does not exist")
    if src.is_dir():
        if root is not None:
            raise UsageError(f"root ({str(root)!r}) applies only to an annotation list INPUT")
        items = _walk(src, kinds)
        base = src
        if not items:
            wanted = _describe_kinds(kinds)
            raise ValueError(f"INPUT ({str(src)!r}) holds no {wanted}")
    elif _file_kind(src.name) is not None:  # one video file or container
        if root is not None:
            raise UsageError(f"root ({str(root)!r}) applies only to an annotation list INPUT")
        file_kind = _file_kind(src.name)
        if file_kind is None or file_kind not in kinds:
            raise ValueError(f"INPUT ({str(src)!r}) is not one of the {_describe_kinds(kinds)}")
        base = src.parent
        suffix = "" if file_kind == "video" else _CONTAINER_SUFFIX[file_kind]
        vid = src.name[: len(src.name) - len(suffix)]
        items = [InputItem(vid, file_kind, src)]
    else:
        entries = _list_entries(src)
        base = _list_root(src, root, entries)
        if not base.is_dir():
            raise FileNotFoundError(f"root ({str(base)!r}) is not a folder")
        items = [_list_item(base, e.video_id, e.label, _listed(e), kinds) for e in entries]
        if not items:
            raise ValueError(f"annotation list {str(src)!r} names no videos")
    return base, _unique(items, src)


def _list_entries(src: Path):
    """The entries of an annotation list or manifest: single-label first, else multi-label
    (a multi-label line keeps its first label here: a manifest row has one)."""
    try:
        return load_videos(src)
    except (ValueError, TypeError) as e:
        try:
            return load_videos(src, multi_label=True)
        except (ValueError, TypeError):
            pass
        raise ValueError(f"INPUT ({str(src)!r}) is not an annotation list: {e}") from e


def _list_root(src: Path, root, entries) -> Path:
    """The folder a list's entries are relative to: `root`, else the list's folder; `/` for
    a list of absolute paths (which takes no root)."""
    absolute = [e.absolute for e in entries]
    if any(absolute):
        if not all(absolute):
            raise ValueError(
                f"annotation list {str(src)!r} mixes absolute and relative paths; "
                f"make them all one kind"
            )
        if root is not None:
            raise ValueError(
                f"root ({str(root)!r}) given, but the entries of {str(src)!r} are absolute paths"
            )
        return Path("/")
    return Path(root) if root is not None else src.parent


def label_inputs(
    input_path: str | os.PathLike[str],
    items: Sequence[InputItem],
    labels: str | os.PathLike[str] | None = None,
) -> tuple[list[InputItem], dict[str, int] | None]:
    """(items, class map): a folder INPUT's items labelled by their top-level class folder
    (`vidload.labels.input_class_map`: sorted folder names, or the `labels` file's mapping);
    other inputs' items unchanged, with class map None."""
    class_map = input_class_map(input_path, [it.video_id for it in items], labels)
    if class_map is None:
        return list(items), None
    where = f"labels ({str(labels)!r})" if labels is not None else "the class map"
    found = label_by_folder([it.video_id for it in items], class_map, where=where)
    return [replace(it, label=lab) for it, lab in zip(items, found, strict=True)], class_map


def _listed(entry) -> int | None:
    if entry.offset:  # the entry is a stretch of its folder, not the folder's count
        return None
    return entry.reported_frames if entry.reported_frames is not None else entry.known_frames


def _describe_kinds(kinds: Sequence[str]) -> str:
    names = {
        "video": "video files (" + " ".join(sorted(VIDEO_EXTENSIONS)) + ")",
        "jpeg": f"JPEG frame folders ({FIRST_FRAME_NAME}, ...)",
        "hdf5": ".h5 files",
        "npy": ".npy files",
    }
    return " or ".join(names[k] for k in kinds)


def _walk(base: Path, kinds: Sequence[str]) -> list[InputItem]:
    items: list[InputItem] = []
    seen: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(base, followlinks=True):
        real = os.path.realpath(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        if real in seen:  # a symlink loop or a second link to a folder already searched
            dirnames[:] = []
            continue
        seen.add(real)
        folder = Path(dirpath)
        if "jpeg" in kinds and folder != base and FIRST_FRAME_NAME in filenames:
            rel = folder.relative_to(base).as_posix()
            items.append(InputItem(rel, "jpeg", folder))
            dirnames[:] = []
            continue
        for name in filenames:
            if name.startswith("."):
                continue
            kind = _file_kind(name)
            if kind is not None and kind in kinds:
                path = folder / name
                rel = path.relative_to(base).as_posix()
                vid = rel if kind == "video" else rel[: -len(_CONTAINER_SUFFIX[kind])]
                items.append(InputItem(vid, kind, path))
    items.sort(key=lambda it: it.video_id)
    return items


def _file_kind(name: str) -> InputKind | None:
    suffix = os.path.splitext(name)[1].lower()
    if suffix in VIDEO_EXTENSIONS:
        return "video"
    if suffix == ".h5":
        return "hdf5"
    if suffix == ".npy":
        return "npy"
    return None


def _list_item(
    base: Path, video_id: str, label: int, listed: int | None, kinds: Sequence[str]
) -> InputItem:
    vid = normalize_video_id(video_id)
    label_or_none = None if label < 0 else label
    path = base / vid
    if path.is_dir():
        kind: str | None = "jpeg"
    elif path.exists():
        kind = _file_kind(path.name)
        if kind is None or kind not in kinds:
            raise ValueError(
                f"{path}: listed as {video_id!r} but it is not one of the {_describe_kinds(kinds)}"
            )
        if kind != "video":  # a container named directly: its id has no suffix
            vid = vid[: -len(path.suffix)]
    else:
        stem = base / strip_video_ext(vid)
        found = [
            (k, p)
            for k, p in (
                ("jpeg", stem),
                ("hdf5", stem.with_name(stem.name + ".h5")),
                ("npy", stem.with_name(stem.name + ".npy")),
            )
            if k in kinds and (p / FIRST_FRAME_NAME if k == "jpeg" else p).is_file()
        ]
        if len(found) > 1:
            raise ValueError(
                f"{video_id!r} matches several containers: {', '.join(str(p) for _, p in found)}"
            )
        if found:
            kind, path = found[0]
        else:  # missing: read as what its name says, and fail then with the reason
            suffix = path.suffix.lower()
            kind = "video" if suffix in VIDEO_EXTENSIONS or "jpeg" not in kinds else "jpeg"
    return InputItem(vid, kind, path, label_or_none, listed)  # type: ignore[arg-type]


def _unique(items: Sequence[InputItem], where: Path) -> list[InputItem]:
    """Each video once (its first entry): a video listed twice is read and converted once,
    and has one manifest row. `ClipDataset` on the list keeps both entries as items."""
    seen: dict[str, InputItem] = {}
    repeated: list[str] = []
    for item in items:
        if item.video_id in seen:
            repeated.append(item.video_id)
        else:
            seen[item.video_id] = item
    if repeated:
        names = sorted(set(repeated))
        shown = ", ".join(repr(v) for v in names[:3]) + (", ..." if len(names) > 3 else "")
        warnings.warn(
            f"{where}: {len(repeated)} repeated entries ({shown}) are read once; the manifest "
            f"has one row per video (its first entry's label)",
            stacklevel=3,
        )
    return list(seen.values())


def _sharing_a_name(items: Sequence[InputItem]) -> frozenset[str]:
    """Ids that differ from another input's id only in the video extension (`x.mp4`, `x.avi`):
    their containers keep the extension in their name (`x.mp4.h5`) so that each gets its own."""
    by_key: dict[str, list[str]] = {}
    for item in items:
        by_key.setdefault(strip_video_ext(item.video_id), []).append(item.video_id)
    return frozenset(vid for ids in by_key.values() if len(ids) > 1 for vid in ids)


# --------------------------------------------------------------------------- frames


def resize_short_side(rgb: np.ndarray, short_side: int) -> np.ndarray:
    """Resize uint8 (H, W, 3) so its shorter side is `short_side`, keeping the aspect ratio
    (longer side rounded; cv2.INTER_AREA). Returns `rgb` itself when the size already fits."""
    h, w = rgb.shape[:2]
    size = scaled_size(h, w, short_side)
    if size == (h, w):
        return rgb
    return cv2.resize(rgb, (size[1], size[0]), interpolation=cv2.INTER_AREA)


def _encoded_video_frames(
    path: Path,
    frames: Iterable[np.ndarray],
    short_side: int | None,
    quality: int,
    subsampling: Subsampling = "420",
) -> Iterator[bytes]:
    """JPEG bytes of decoded uint8 (H, W, 3) frames, resized to one size when asked."""
    first: tuple[int, int] | None = None
    target = (0, 0)  # (height, width) to store, set from the first frame
    for i, rgb in enumerate(frames):
        shape = (int(rgb.shape[0]), int(rgb.shape[1]))
        if first is None:
            first, target = shape, scaled_size(*shape, short_side)
        elif shape != first:
            raise VideoReadError(
                path,
                f"frame size changes from {first[1]}x{first[0]} to {shape[1]}x{shape[0]}",
                i,
            )
        if target != shape:
            rgb = cv2.resize(rgb, (target[1], target[0]), interpolation=cv2.INTER_AREA)
        yield encode_jpeg(rgb, quality, subsampling=subsampling)


def _jpeg_folder_bytes(item: InputItem) -> Iterator[bytes]:
    """The stored bytes of a frame folder's contiguous frames, checked to be one size."""
    src = JpegSource(item.path.parent)
    name = item.path.name
    count = src.actual_frames(name)
    size: tuple[int, int] | None = None
    for i in range(count):
        path = src.frame_path(name, i)
        data = read_frame_file(path, i)  # a regular file only: a FIFO would block
        check_jpeg_markers(data, path=str(path), index=i)
        this = jpeg_size(data, path=str(path), index=i)
        if size is None:
            size = this
        elif this != size:
            raise VideoReadError(
                path,
                f"frame size {this[1]}x{this[0]} differs from the first frame's "
                f"{size[1]}x{size[0]}",
                i,
            )
        yield data


def _decoded_jpeg_folder(folder: Path, frames: Iterable[bytes]) -> Iterator[np.ndarray]:
    for i, data in enumerate(frames):
        yield decode_jpeg(data, path=str(folder), index=i)


# --------------------------------------------------------------------------- one video


@dataclass(frozen=True)
class _Job:
    """What a worker needs to convert (or verify) one video; picklable."""

    item: InputItem
    root: Path
    container: Path
    to: ConvertFormat
    short_side: int | None
    quality: int
    threads: int
    verify: bool  # the container exists without a manifest row: validate it, else convert
    subsampling: Subsampling = "420"


@dataclass(frozen=True)
class _Outcome:
    row: ManifestRow
    action: Literal["converted", "skipped", "failed"]
    bytes_in: int = 0
    frames: int = 0


def container_path(
    output: Path, video_id: str, to: ConvertFormat, *, keep_extension: bool = False
) -> Path:
    """Where `convert` puts `video_id`'s container: the layout the sources read.

    The video extension is dropped (`a/x1.mp4` -> `a/x1.h5`) unless `keep_extension`
    (`a/x1.mp4.h5`), which `convert` sets for ids that differ from another input's only in
    the extension; the sources look for that full name first (`sources.base.container_path`).
    """
    vid = normalize_video_id(video_id)
    stem = vid if keep_extension else strip_video_ext(vid)
    if to == "jpeg":
        return output / stem
    return output / (stem + _CONTAINER_SUFFIX[to])


def _path_bytes(path: Path) -> int:
    """Size of a file, or of the files in a folder (not recursive)."""
    if path.is_dir():
        return sum(e.stat().st_size for e in os.scandir(path) if e.is_file())
    return path.stat().st_size


def _reason(e: BaseException, item: InputItem) -> str:
    """A short reason for the manifest: the error without the item's own path, except for a
    missing file, whose message names the path tried and how to change the root."""
    if isinstance(e, VideoReadError) and e.path == str(item.path):
        if isinstance(e.__cause__, FileNotFoundError) or not item.path.exists():
            return (
                f"file not found: {item.path} (annotation list entries are relative to the "
                f"list's folder unless --root DIR is given)"
            )
        where = f" (frame {e.index})" if e.index is not None else ""
        return f"{e.reason}{where}"
    return str(e) or type(e).__name__


def _status(reported: int | None, actual: int) -> Literal["ok", "mismatch"]:
    return "mismatch" if reported is not None and reported != actual else "ok"


def _input_header(job: _Job) -> tuple[int | None, float | None]:
    """(reported frames, fps) of the input, without decoding."""
    item = job.item
    if item.kind == "video":
        info = VideoSource(job.root, threads=1, cache_size=0).info(item.video_id)
        return info.reported_frames, info.fps
    if item.listed_frames is not None:
        return item.listed_frames, None
    return JpegSource(item.path.parent).reported_frames(item.path.name), None


class _NoFrames(VideoReadError):
    """The input opened but not one frame decodes."""


def _convert_job(job: _Job) -> _Outcome:
    """Convert one video (or accept its existing container); failures become a failed row."""
    item = job.item
    reported: int | None = None
    fps: float | None = None
    try:
        reported, fps = _input_header(job)
        if job.verify:
            try:
                return _verified(job, reported, fps)
            except VidloadError as e:
                # vidload renames a container into place only once it is complete, so what
                # fails here was not written by this conversion (or was damaged since): it may
                # be the user's data (a list converted into its own root), so it is never
                # replaced without --overwrite
                raise VideoReadError(
                    job.container,
                    f"already exists and is not a valid {job.to} container ({e}); "
                    "vidload replaces only its own containers: move it away, or pass "
                    "--overwrite (overwrite=True) to replace it",
                ) from e
        return _convert_video(job, reported, fps)
    except (VidloadError, OSError) as e:
        if is_disk_full(e):  # not this video's fault: the run must stop (vidload.shards)
            raise DiskFullError(job.container) from e
        row = ManifestRow(
            item.video_id,
            item.label,
            reported_frames=reported,
            actual_frames=0 if isinstance(e, _NoFrames) else None,
            fps=fps,
            status="failed",
            error=_reason(e, item),
        )
        return _Outcome(row, "failed")


def _convert_video(job: _Job, reported: int | None, fps: float | None) -> _Outcome:
    """Decode (or read), encode and write one video's container."""
    item = job.item
    if item.kind == "video":
        src = VideoSource(job.root, threads=job.threads, cache_size=0)
        frames = src.iter_frames(item.video_id)
        encoded = _encoded_video_frames(
            item.path, frames, job.short_side, job.quality, job.subsampling
        )
        raw = None
    else:
        raw = _Counter(_jpeg_folder_bytes(item))
        encoded = iter(raw)
        if job.short_side is not None:
            decoded = _decoded_jpeg_folder(item.path, raw)
            encoded = _encoded_video_frames(
                item.path, decoded, job.short_side, job.quality, job.subsampling
            )

    first = next(encoded, None)
    if first is None:
        what = (
            f"no frame files ({FIRST_FRAME_NAME}, ...)" if raw is not None else "no frame decodes"
        )
        raise _NoFrames(item.path, what)
    if job.to == "jpeg":
        count = write_jpeg_folder(job.container, _chain(first, encoded))  # streamed to disk
    else:
        data = _chain(first, encoded)  # streamed: the writers spill frames to disk
        if job.to == "hdf5":
            attrs = {
                "fps": fps,
                "reported_frames": reported,
                "source": item.video_id,
                "quality": job.quality if (item.kind == "video" or job.short_side) else None,
                "subsampling": (
                    job.subsampling if (item.kind == "video" or job.short_side) else None
                ),
                "short_side": job.short_side,
            }
            count = write_hdf5(job.container, data, attrs=attrs)
        else:
            count = write_npy(job.container, data)
    _store_timestamps(job, src if item.kind == "video" else None, count)
    height, width = jpeg_size(first, path=str(job.container), index=0)
    bytes_in = _path_bytes(item.path) if raw is None else raw.bytes
    row = _stored_row(job, reported, count, (height, width), fps)
    return _Outcome(row, "converted", bytes_in, count)


def _store_timestamps(job: _Job, src: VideoSource | None, count: int) -> None:
    """Write the stored frames' timestamps beside the container (`sources._timestamps`): a
    video's presentation times (`VideoSource.timestamps`); a JPEG folder input has none, and
    any stale file is removed (its source then uses a frame rate)."""
    if src is None:
        sidecar_path(job.container).unlink(missing_ok=True)
        return
    ts = src.timestamps(job.item.video_id)
    if ts.shape[0] != count:  # the packets promised more than decoded: count them, exactly
        src.actual_frames(job.item.video_id)
        ts = src.timestamps(job.item.video_id)
    if ts.shape[0] != count:
        raise VideoReadError(job.item.path, f"{ts.shape[0]} timestamps for {count} frames stored")
    write_timestamps(job.container, ts)


def _verified(job: _Job, reported: int | None, fps: float | None) -> _Outcome:
    """The row of an existing, valid container (a run killed before writing its manifest)."""
    out_root = job.container.parent
    name = job.container.name
    src: FrameSource
    if job.to == "jpeg":
        src = JpegSource(out_root)
    elif job.to == "hdf5":
        src, name = Hdf5Source(out_root, cache_size=0), name[: -len(".h5")]
    else:
        src, name = NpySource(out_root), name[: -len(".npy")]
    actual = src.actual_frames(name)
    if actual == 0:
        raise VideoReadError(job.container, "holds no frames")
    _, height, width, _ = src.read(name, [0, actual - 1]).shape
    if job.item.kind == "video" and not sidecar_path(job.container).exists():
        _store_timestamps(job, VideoSource(job.root, cache_size=0), actual)
    return _Outcome(_stored_row(job, reported, actual, (height, width), fps), "skipped")


def _stored_row(
    job: _Job, reported: int | None, actual: int, size: tuple[int, int], fps: float | None
) -> ManifestRow:
    """The manifest row of `job`'s written container: `actual` frames of (height, width).
    A video's `rotation` is the display orientation `VideoSource` applied to the frames."""
    height, width = size
    rotation = None
    if job.item.kind == "video":  # one more decoded frame: PyAV shows the matrix on frames only
        rotation = str(VideoSource(job.root, cache_size=0).orientation(job.item.video_id))
    return ManifestRow(
        job.item.video_id,
        job.item.label,
        reported_frames=reported,
        actual_frames=actual,
        width=width,
        height=height,
        fps=fps,
        bytes=_path_bytes(job.container),
        status=_status(reported, actual),
        rotation=rotation,
    )


class _Counter:
    """Iterates over byte strings, adding up their lengths."""

    def __init__(self, it: Iterable[bytes]) -> None:
        self._it = iter(it)
        self.bytes = 0

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        data = next(self._it)
        self.bytes += len(data)
        return data


def _chain(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest


# --------------------------------------------------------------------------- convert


@dataclass(frozen=True)
class ConvertReport:
    """What one `convert` run did.

    Attributes:
        output: the output folder.
        manifest_path: `output/manifest.csv`.
        rows: one manifest row per input video handled, in input order (all of them unless
            the run stopped early).
        converted, skipped: ids converted in this run, and ids whose container was already done.
        failed: rows of the videos that could not be converted (`error` says why).
        bytes_in, bytes_out: input and output bytes of the videos converted in this run.
        frames: frames stored in this run.
        seconds: wall time of the run.
        unfinished: ids not handled because the run stopped early (their task never finished);
            not in the manifest, a rerun converts them.
        stopped: why the run stopped early ("no space left on device writing ..."), else None.
        manifest_written: False when manifest.csv could not be written (disk full); the part
            manifests then stay in OUTPUT and the next run picks them up.
    """

    output: Path
    manifest_path: Path
    rows: tuple[ManifestRow, ...]
    converted: tuple[str, ...]
    skipped: tuple[str, ...]
    failed: tuple[ManifestRow, ...]
    bytes_in: int
    bytes_out: int
    frames: int
    seconds: float
    unfinished: tuple[str, ...] = ()
    stopped: str | None = None
    manifest_written: bool = True

    @property
    def ok(self) -> bool:
        """True when every video converted or was already done."""
        return not self.failed and not self.unfinished and self.stopped is None

    @property
    def mismatches(self) -> tuple[ManifestRow, ...]:
        """Rows whose reported frame count differs from the frames stored."""
        return tuple(r for r in self.rows if r.status == "mismatch")

    @property
    def size_ratio(self) -> float | None:
        """bytes_out / bytes_in of this run's conversions (None when nothing was converted)."""
        return self.bytes_out / self.bytes_in if self.bytes_in else None


def convert(
    input_path: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    to: ConvertFormat,
    workers: int | None = None,
    short_side: int | None = None,
    quality: int = 95,
    subsampling: Subsampling = "420",
    overwrite: bool = False,
    root: str | os.PathLike[str] | None = None,
    labels: str | os.PathLike[str] | None = None,
    progress: bool = True,
    executor: Executor | None = None,
    shard_size: int | None = None,
) -> ConvertReport:
    """Convert every video of `input_path` into a `to` container under `output` (module doc).

    Args:
        input_path: a folder of videos and/or JPEG frame folders, or an annotation list / manifest.
        output: the folder to fill (made if missing); must not overlap a folder `input_path`.
        to: "jpeg" (`output/<id>/img_00001.jpg ...`), "hdf5" (`output/<id>.h5`) or "npy"
            (`output/<id>.npy`), ids without their video extension.
        workers: local processes (spawned, they die with this process; default: the CPUs this
            process may use, see `check_workers`; 1 converts in this process). Not with
            `executor`.
        short_side: resize so the shorter side has this many pixels (aspect kept); None keeps
            the size.
        quality: JPEG quality in [1, 100] for encoded frames.
        subsampling: chroma subsampling of encoded frames, "420", "422" or "444" (see the
            README's quality table: at q95, 4:4:4 costs 22-24% more bytes and ~33% more
            decode time per frame for 1.7-3.6 dB).
        overwrite: convert every video again, even those already done.
        root: folder the entries of an annotation list are relative to (default: its folder).
        labels: for a folder `input_path`, the class map (a class-name-per-line file or an
            annotation list, `vidload.labels.read_class_map`) instead of the sorted names of
            its top-level folders. A folder's videos are labelled by their class folder and
            the map is written to `output/classes.txt` (when its labels are 0..n-1).
        progress: draw a progress bar on stderr.
        executor: any `concurrent.futures.Executor` to run the shards on (e.g.
            `distributed.Client(...).get_executor()`, a `ProcessPoolExecutor`); it must reach
            `output` on a shared file system. Default: the local pool of `workers`.
        shard_size: videos per task (`vidload.shards`); default 16, fewer for small runs so
            that every worker gets some.

    Returns:
        a ConvertReport; failed videos are in it (and in the manifest), never raised. A full
        disk stops the run: `report.stopped` says where, the manifest lists what finished.

    Raises:
        FileNotFoundError: `input_path` does not exist.
        ValueError / TypeError: a bad argument, overlapping `input_path` and `output`, or a resumed
            `output` converted with other options.
        OutputLockedError: another run is writing into `output` (one run per folder at a time).
        DiskFullError: no room to start (the lock or the options file).
    """
    from vidload.shards import plan_convert, run_plan

    workers, threads = resolve_workers(workers, executor)
    with plan_convert(
        input_path,
        output,
        to=to,
        short_side=short_side,
        quality=quality,
        subsampling=subsampling,
        overwrite=overwrite,
        root=root,
        labels=labels,
        shard_size=shard_size,
        threads=threads,
    ) as plan:
        return run_plan(plan, executor=executor, workers=workers, progress=progress)


def _previous_rows(manifest_path: Path, overwrite: bool) -> dict[str, ManifestRow]:
    if not manifest_path.exists():
        return {}
    try:
        rows = read_manifest(manifest_path)
    except ValueError as e:
        if overwrite:
            return {}
        raise ValueError(
            f"{manifest_path} cannot be resumed from ({e}); remove it or pass overwrite"
        ) from e
    return {r.video_id: r for r in rows}


def _check_options(
    out: Path,
    to: str,
    short_side: int | None,
    quality: int,
    overwrite: bool,
    *,
    subsampling: Subsampling = "420",
) -> None:
    """Refuse to resume into an output converted with other options; record these ones.
    An options file without `subsampling` (written before it existed) means "420"."""
    path = out / OPTIONS_NAME
    options = {"to": to, "short_side": short_side, "quality": quality, "subsampling": subsampling}
    if path.exists() and not overwrite:
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise ValueError(f"{path}: unreadable ({e}); remove it or pass overwrite") from e
        if isinstance(old, dict):
            old = {"subsampling": "420", **old}
        if old != options:
            differ = (
                ", ".join(
                    f"--{k.replace('_', '-')} {old.get(k)} before, {options[k]} now"
                    for k in options
                    if old.get(k) != options[k]
                )
                or f"recorded {old}"
            )
            raise UsageError(
                f"OUTPUT {str(out)!r} was converted with other options ({differ}; recorded in "
                f"{path.name}): use the same options to resume, or --overwrite "
                f"(overwrite=True) to convert everything again"
            )
        return
    write_bytes_atomic(path, (json.dumps(options) + "\n").encode())


def _remove_stale_temporaries(out: Path) -> None:
    """Delete what killed runs or tasks left: the writers' and write_manifest's temporary
    names. Only the driver calls this, holding OUTPUT's lock: no live run has temporaries here
    (a duplicate of a task that already finished is the one exception; see `vidload.shards`)."""
    for dirpath, dirnames, filenames in os.walk(out):
        for name in list(dirnames):
            if _is_temporary(name):
                shutil.rmtree(os.path.join(dirpath, name), ignore_errors=True)
                dirnames.remove(name)
        for name in filenames:
            if _is_temporary(name):
                Path(dirpath, name).unlink(missing_ok=True)
        # frame folders hold only frames: no need to look inside them
        dirnames[:] = [d for d in dirnames if not Path(dirpath, d, FIRST_FRAME_NAME).exists()]


def _is_temporary(name: str) -> bool:
    return bool(TEMP_RE.match(name) or _MANIFEST_TMP_RE.match(name))


def _is_within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _check_no_overlap(
    input_path: Path,
    base: Path,
    out: Path,
    items: Sequence[InputItem],
    to: ConvertFormat,
    full_names: frozenset[str],
) -> None:
    """OUTPUT must not overlap a folder INPUT; no container may land on or around an input."""
    out_r = out.resolve()
    if input_path.is_dir():
        in_r = base.resolve()
        if _is_within(out_r, in_r) or _is_within(in_r, out_r):
            raise UsageError(
                f"OUTPUT ({str(out)!r}) and INPUT ({str(input_path)!r}) must not be inside "
                f"one another"
            )
        return
    inputs = {item.path.resolve() for item in items}
    above_inputs = {p for path in inputs for p in path.parents}
    frame_folders = {item.path.resolve() for item in items if item.kind == "jpeg"}
    for item in items:
        target = container_path(
            out_r, item.video_id, to, keep_extension=item.video_id in full_names
        )
        if (
            target in inputs
            or target in above_inputs
            or any(p in frame_folders for p in target.parents)
        ):
            raise UsageError(
                f"the container of {item.video_id!r} ({target}) would overwrite or sit inside "
                f"the input; choose another OUTPUT"
            )
    if out_r in inputs:
        raise ValueError(f"OUTPUT ({str(out)!r}) is one of the inputs")
