"""What `convert` and `probe` read: the inputs of a folder, one video file or container, an
annotation list or a manifest (the forms `vidload.convert`'s module doc lists), as `InputItem`s
whose ids name the output's containers (`vidload._layout`).

A folder's videos are labelled by their top-level class folder (`label_inputs`). Before anything
is written, `Inputs.check_no_overlap` makes sure no container lands on or around an input.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import warnings
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from vidload._checks import check_choice
from vidload._convert.lists import ListedInput
from vidload._kinds import file_kind, get_kind, input_kinds
from vidload._layout import FIRST_FRAME_NAME, container_path
from vidload._storage import Location, read_many
from vidload.errors import UsageError, VideoReadError
from vidload.labels import folder_class_map, label_by_folder, read_class_map, warn_unpinned
from vidload.manifest import VideoEntry, load_videos
from vidload.sources._video_root import CONVERTED_SUFFIX
from vidload.sources.base import VIDEO_EXTENSIONS, normalize_video_id, strip_video_ext

__all__ = [
    "VIDEO_INPUT",
    "convert_input_kinds",
    "frame_folder_kind",
    "InputItem",
    "InputKind",
    "Inputs",
    "find_inputs",
    "find_input",
    "find_inputs_at",
    "input_class_map",
    "input_copy",
    "label_inputs",
    "sharing_a_name",
]

#: "video" (a video file, any of `VIDEO_EXTENSIONS`), or a storage kind's name (`vidload._kinds`):
#: a container of JPEG frames ("jpeg", a frame folder; "hdf5", "npy", ...).
InputKind = str
#: The input kind of a video file.
VIDEO_INPUT = "video"


def convert_input_kinds() -> tuple[InputKind, ...]:
    """What `convert` reads: video files and JPEG frame folders (the input kinds that are
    folders), not other containers."""
    return (VIDEO_INPUT, *(k.name for k in input_kinds() if k.folder))


@dataclass(frozen=True)
class InputItem:
    """One video to read.

    Attributes:
        video_id: path relative to the input root, `/`-separated (videos keep their extension).
        kind: "video" (a video file), "jpeg" (a frame folder) or another container kind
            (`vidload._kinds`: `.h5`, `.npy`, ...).
        path: the file or folder.
        label: class index from an annotation list, None when unlabelled.
        listed_frames: a frame count given by the list (rawframes `total_frames` or a manifest),
            used as the reported count of JPEG folders.
        extra: a manifest INPUT's extra columns for this video (`VideoEntry.extra`), carried
            into the rows `convert` and `probe` write.
    """

    video_id: str
    kind: InputKind
    path: Path
    label: int | None = None
    listed_frames: int | None = None
    extra: Mapping[str, str] = field(default_factory=dict, hash=False)

    @property
    def is_video(self) -> bool:
        """A video file (decoded by `VideoSource`), not a container of frames."""
        return self.kind == VIDEO_INPUT


def find_inputs(
    input_path: str | os.PathLike[str],
    *,
    root: str | os.PathLike[str] | None = None,
    kinds: Sequence[InputKind] | None = None,
) -> tuple[Path, list[InputItem]]:
    """(root, items) for a local folder, a single video file or container, an annotation list
    or a manifest (`find_inputs_at`, without the list)."""
    base, items, _ = find_inputs_at(Location(os.fspath(input_path)), kinds, root=root)
    return Path(str(base)), items


def find_inputs_at(
    src: Location,
    kinds: Sequence[InputKind] | None = None,
    *,
    root: str | os.PathLike[str] | None = None,
) -> tuple[Location, list[InputItem], ListedInput | None]:
    """(root, items, the list) for a folder, a single video file or container, an annotation
    list or a manifest, local or at a URL; the list (`vidload._convert.lists.ListedInput`: its
    entries in order, each named by its item's id) only for a list INPUT. A local item's `path`
    is its file or folder; a URL's is relative to the root (`_item_path`).

    A folder is searched recursively (sorted, local symlinks followed, names starting with "."
    skipped) for files with a video extension, folders holding `img_00001.jpg` and, when
    `kinds` allows, `.h5` and `.npy` files. A list's entries are relative to `root` (default: the
    list's folder); a local entry naming no existing path is looked up as a container of `kinds`
    (`a/x1.mp4` -> `a/x1/`, `a/x1.h5`, `a/x1.npy`), else kept (it fails when read). A URL's
    entries are what their names say, without a request per entry.

    Raises:
        FileNotFoundError: `src` (or `root`) does not exist.
        ValueError: nothing to read, `root` given with a folder, or two inputs share an id.
    """
    kinds = convert_input_kinds() if kinds is None else tuple(kinds)
    listed = None
    for kind in kinds:
        check_choice("each of kinds", kind, (VIDEO_INPUT, *(k.name for k in input_kinds())))
    if not src.is_file():
        if not src.exists():
            raise FileNotFoundError(f"INPUT ({str(src)!r}) does not exist")
        if root is not None:
            raise UsageError(
                f"root / --root ({str(root)!r}) applies only to an annotation list INPUT, not "
                f"to a folder ({str(src)!r}), whose videos are found under it: leave it out"
            )
        base = src
        items = _walk(src, kinds)
        if not items:
            raise ValueError(f"INPUT ({str(src)!r}) holds no {_describe_kinds(kinds)}")
    elif (found_kind := file_input_kind(src.name)) is not None:  # one video file or container
        if root is not None:
            raise UsageError(f"root ({str(root)!r}) applies only to an annotation list INPUT")
        if found_kind not in kinds:
            raise ValueError(f"INPUT ({str(src)!r}) is not one of the {_describe_kinds(kinds)}")
        base = src.parent
        items = [InputItem(input_id(src.name, found_kind), found_kind, _item_path(base, src.name))]
    else:
        entries = list_entries(src)
        base = _list_root(src, root, entries)
        if root is not None and not base.is_dir():
            raise FileNotFoundError(f"root ({str(base)!r}) is not a folder")
        items = [_list_item(base, e, kinds) for e in entries]
        if not items:
            raise ValueError(f"annotation list {str(src)!r} names no videos")
        # each entry named by its item's id (a container listed by its file name: no suffix)
        named = (replace(e, video_id=it.video_id) for e, it in zip(entries, items, strict=True))
        listed = ListedInput(src.name, tuple(named))
    return base, unique_items(items, str(src)), listed


def _item_path(base: Location, rel: str) -> Path:
    """An item's `path`: the local file or folder; at a URL, `rel` (a job downloads it from
    the root, `input_copy`)."""
    local = base.local_file()
    return Path(rel) if local is None else local / rel


def list_entries(src: Location):
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


def _list_root(src: Location, root, entries) -> Location:
    """The folder a list's entries are relative to: `root`, else the list's folder; `/` for
    a local list of absolute paths (which takes no root)."""
    absolute = [e.absolute for e in entries]
    if any(absolute):
        if not all(absolute):
            raise ValueError(
                f"annotation list {str(src)!r} mixes absolute and relative paths; "
                f"make them all one kind"
            )
        if src.over_network:
            raise ValueError(f"annotation list {str(src)!r}: entries must be relative paths")
        if root is not None:
            raise ValueError(
                f"root ({str(root)!r}) given, but the entries of {str(src)!r} are absolute paths"
            )
        return Location("/")
    return Location(os.fspath(root)) if root is not None else src.parent


def find_input(
    input_path: str | os.PathLike[str],
    kinds: Sequence[InputKind],
    *,
    root: str | os.PathLike[str] | None = None,
    labels: str | os.PathLike[str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> Inputs:
    """The INPUT `input_path` of `convert` and `probe`: a local path, or a URL with its fsspec
    `storage_options`, found as one (`find_inputs_at`: on disk, or by one listing); its
    inputs of `kinds`, a folder INPUT's labelled by their class folders (`labels`: the class
    map, refused for another INPUT; `root`: what an annotation list's entries are relative to).

    Raises:
        FileNotFoundError: nothing there.
        ValueError: nothing of `kinds` there, `labels` for an INPUT that is not a folder,
            `root` for an INPUT URL (UsageError).
    """
    src = Location(os.fspath(input_path), storage_options)
    local = src.local_file()
    if local is None and root is not None:
        raise UsageError(f"root ({str(root)!r}) does not apply to an INPUT URL")
    base, items, listed = find_inputs_at(src, kinds, root=root)
    return Inputs(base, *_labelled(src, base == src, items, labels), listed)


def label_inputs(
    input_path: str | os.PathLike[str],
    items: Sequence[InputItem],
    labels: str | os.PathLike[str] | None = None,
) -> tuple[list[InputItem], dict[str, int] | None]:
    """(items, class map): a folder INPUT's items labelled by their top-level class folder
    (`input_class_map`: sorted folder names, or the `labels` file's mapping); other inputs'
    items unchanged, with class map None."""
    return _labelled(Location(os.fspath(input_path)), Path(input_path).is_dir(), items, labels)


def input_class_map(
    src: Location,
    folder: bool,
    video_ids: Sequence[str],
    labels: str | os.PathLike[str] | None = None,
) -> dict[str, int] | None:
    """The class map `convert` and `probe` label the INPUT `src` with, when it is a folder
    (`folder`); None for another input.

    A folder gets `read_class_map(labels)` when `labels` is given, else its own sorted class
    folders (`folder_class_map`, checked by `warn_unpinned`: a bucket's class list files are
    not looked for); None when no video sits in a class folder. An annotation list or a
    single file carries its own labels (or none): `labels` is refused there.

    Raises:
        ValueError: `labels` given with an INPUT that is not a folder (UsageError).
    """
    if not folder:
        if labels is not None:
            raise UsageError(
                f"labels / --labels ({str(labels)!r}) applies to a folder INPUT only; "
                f"{str(src)!r} is a file (an annotation list carries its own labels)"
            )
        return None
    if labels is not None:
        return read_class_map(labels)
    class_map = folder_class_map(video_ids)
    if class_map:
        local = src.local_file()
        warn_unpinned(str(src) if local is not None else "the INPUT URL", class_map, local)
    return class_map or None


def _labelled(
    src: Location,
    folder: bool,
    items: Sequence[InputItem],
    labels: str | os.PathLike[str] | None,
) -> tuple[list[InputItem], dict[str, int] | None]:
    """(items, class map) of the INPUT `src`: `items` labelled by its `input_class_map` (the
    `labels` file's, else the folder's own), if any."""
    class_map = input_class_map(src, folder, [it.video_id for it in items], labels)
    if class_map is None:
        return list(items), None
    where = f"labels ({str(labels)!r})" if labels is not None else "the class map"
    found = label_by_folder([it.video_id for it in items], class_map, where=where)
    return [replace(it, label=lab) for it, lab in zip(items, found, strict=True)], class_map


def entry_listed_frames(entry) -> int | None:
    if entry.offset:  # the entry is a stretch of its folder, not the folder's count
        return None
    return entry.reported_frames if entry.reported_frames is not None else entry.known_frames


def _describe_kinds(kinds: Sequence[str]) -> str:
    def described(name: str) -> str:
        if name == VIDEO_INPUT:
            return "video files (" + " ".join(sorted(VIDEO_EXTENSIONS)) + ")"
        kind = get_kind(name)
        return f"{kind.described} ({FIRST_FRAME_NAME}, ...)" if kind.folder else kind.described

    return " or ".join(map(described, kinds))


def _walk(base: Location, kinds: Sequence[str]) -> list[InputItem]:
    """The inputs below `base` (one listing: `Location.walk_files`); a frame folder's files
    (and folders) are its frames, not inputs."""
    frames = frame_folder_kind()
    files = [f for f in base.walk_files() if not any(p.startswith(".") for p in f.split("/"))]
    tail = "/" + FIRST_FRAME_NAME
    found = {f[: -len(tail)] for f in files if f.endswith(tail)} if frames in kinds else set()
    frame_dirs = {folder for folder in found if not _inside(folder, found)}
    items = [InputItem(rel, frames, _item_path(base, rel)) for rel in frame_dirs]
    for rel in files:
        kind = file_input_kind(rel.rpartition("/")[2])
        if kind is not None and kind in kinds and not _inside(rel, frame_dirs):
            items.append(InputItem(input_id(rel, kind), kind, _item_path(base, rel)))
    items.sort(key=lambda it: it.video_id)
    return items


def _inside(rel: str, folders: set[str]) -> bool:
    """Whether one of the folders holding `rel` is one of `folders`."""
    parts = rel.split("/")
    return any("/".join(parts[:i]) in folders for i in range(1, len(parts)))


def input_id(rel: str, kind: InputKind) -> str:
    """The video id of the input `rel` of `kind`: a video file's or a frame folder's name as
    it is, a container's without its suffix (`a/x1.h5` -> `a/x1`)."""
    return rel if kind == VIDEO_INPUT else rel[: len(rel) - len(get_kind(kind).suffix)]


def file_input_kind(name: str) -> InputKind | None:
    if os.path.splitext(name)[1].lower() in VIDEO_EXTENSIONS:
        return VIDEO_INPUT
    return file_kind(name)


def frame_folder_kind() -> InputKind:
    """The input kind of a frame folder (`img_00001.jpg`, ...): the input kind that is a folder."""
    return next(k.name for k in input_kinds() if k.folder)


def _list_item(base: Location, entry: VideoEntry, kinds: Sequence[str]) -> InputItem:
    """The input a list entry names under `base`: a local entry looked up on disk, a URL's
    what its name says (no request per entry: a frame folder unless a file's suffix)."""
    vid = normalize_video_id(entry.video_id)
    local = base.local_file()
    path = _item_path(base, vid)
    frames = frame_folder_kind()
    if local is not None and path.is_dir():
        kind: str | None = frames
    elif local is None or path.exists():
        kind = file_input_kind(path.name) or (frames if local is None else None)
        if kind is None or kind not in kinds:
            raise ValueError(
                f"{base / vid}: listed as {entry.video_id!r} but it is not one of the "
                f"{_describe_kinds(kinds)}"
            )
        vid = input_id(vid, kind)  # a container named directly: its id has no suffix
    else:
        # the containers `convert` made of it (`x.mp4` -> `x/`, `x.h5`, or `x.mp4.h5` when the
        # id shared its stem with another input's), as the sources find them
        named = [(k.name, k.folder, container_path(local, vid, k.suffix)) for k in input_kinds()]
        named.append((VIDEO_INPUT, False, container_path(local, vid, CONVERTED_SUFFIX)))
        found = [
            (k, p)
            for k, folder, p in named
            if k in kinds and (p / FIRST_FRAME_NAME if folder else p).is_file()
        ]
        if len(found) > 1:
            raise ValueError(
                f"{entry.video_id!r} matches several containers: "
                f"{', '.join(str(p) for _, p in found)}"
            )
        if found:
            kind, path = found[0]
        else:  # missing: read as what its name says, and fail then with the reason
            suffix = path.suffix.lower()
            kind = VIDEO_INPUT if suffix in VIDEO_EXTENSIONS or frames not in kinds else frames
    label = None if entry.label < 0 else entry.label
    listed = entry_listed_frames(entry)
    return InputItem(vid, kind, path, label, listed, entry.extra)  # type: ignore[arg-type]


def unique_items(items: Sequence[InputItem], where: Path | str) -> list[InputItem]:
    """Each video once (its first entry): a video listed twice is read and converted once,
    and has one manifest row. `ClipDataset` on the list keeps both entries as items."""
    seen: dict[str, InputItem] = {}
    for item in items:
        seen.setdefault(item.video_id, item)
    if len(seen) < len(items):
        counts = Counter(it.video_id for it in items)
        names = sorted(vid for vid, n in counts.items() if n > 1)
        shown = ", ".join(repr(v) for v in names[:3]) + (", ..." if len(names) > 3 else "")
        warnings.warn(
            f"{where}: {len(items) - len(seen)} repeated entries ({shown}) are read once; the "
            f"manifest has one row per video (its first entry's label)",
            stacklevel=3,
        )
    return list(seen.values())


def sharing_a_name(items: Sequence[InputItem]) -> frozenset[str]:
    """Ids that differ from another input's id only in the video extension (`x.mp4`, `x.avi`):
    their containers keep the extension in their name (`x.mp4.h5`) so that each gets its own."""
    stems = Counter(strip_video_ext(item.video_id) for item in items)
    return frozenset(it.video_id for it in items if stems[strip_video_ext(it.video_id)] > 1)


@dataclass(frozen=True)
class Inputs:
    """What `find_input` found.

    Attributes:
        root: the folder the items' paths are relative to: local, or an INPUT URL's (a job
            then downloads its item from there into its staging folder,
            `vidload._convert.inputs.input_copy`).
        items: every input, in input order (sorted ids for a folder).
        class_map: a folder INPUT's class map (None for another input, or no class folder).
        listed: a list INPUT's entries (`find_inputs_at`), for its own manifest.
    """

    root: Location
    items: list[InputItem]
    class_map: dict[str, int] | None
    #: a list INPUT's entries, in its order (`vidload._convert.lists`); None for another INPUT
    listed: ListedInput | None = None

    def container_names(self, to: str) -> dict[str, str]:
        """{video id: its `to` container's name relative to OUTPUT}: the id's stem, or the
        full id where two inputs share a stem (`sharing_a_name`), then the kind's suffix."""
        kind, full = get_kind(to), sharing_a_name(self.items)
        return {
            it.video_id: kind.container_name(it.video_id, keep_extension=it.video_id in full)
            for it in self.items
        }

    def check_no_overlap(
        self, input_path: str | os.PathLike[str], output: Location, names: Mapping[str, str]
    ) -> None:
        """UsageError where a container would land on or among these inputs of `input_path`
        (`find_input`): a folder INPUT (local, or an INPUT URL's folder `root`) and OUTPUT
        `output` inside one another, or a container of another local INPUT (named by `names`,
        `container_names`) on or around an input (one of `items`; OUTPUT itself must not be
        one); a local INPUT and an OUTPUT URL (or the other way) cannot overlap."""
        local, out = self.root.local_file(), output.local_file()
        if (local is None) != (out is None):  # one local, the other a URL
            return
        if out is None or Path(input_path).is_dir():
            a = str(local.resolve()) if local is not None else self.root.url
            b = str(out.resolve()) if out is not None else output.url
            a, b = a.rstrip("/") + "/", b.rstrip("/") + "/"
            if a.startswith(b) or b.startswith(a):
                shown = str(input_path) if local is not None else str(self.root)
                raise UsageError(
                    f"OUTPUT ({str(output)!r}) and INPUT ({shown!r}) overlap: they must not "
                    f"be inside one another (the containers would be written among the inputs)"
                )
            return
        out_r = out.resolve()
        inputs = {item.path.resolve() for item in self.items}
        above_inputs = {p for path in inputs for p in path.parents}
        frame_folders = {
            it.path.resolve() for it in self.items if not it.is_video and get_kind(it.kind).folder
        }
        for item in self.items:
            target = out_r / names[item.video_id]
            if (
                target in inputs
                or target in above_inputs
                or any(p in frame_folders for p in target.parents)
            ):
                raise UsageError(
                    f"the container of {item.video_id!r} ({target}) would overwrite or sit "
                    f"inside the input; choose another OUTPUT"
                )
        if out_r in inputs:
            raise ValueError(f"OUTPUT ({str(out)!r}) is one of the inputs")


@contextlib.contextmanager
def input_copy(
    item: InputItem, root: Location, stage: Path | None
) -> Iterator[tuple[Path, InputItem]]:
    """(root, item) to read by a local path (FFmpeg's, `JpegSource`'s): a local `root`'s own
    (`Location.local_file`); under an INPUT URL, a copy of the item (relative to `root`)
    downloaded into `stage/in`, removed after. A JPEG folder's frames come in one concurrent
    batch. A missing object is left missing: reading it then fails with the item's own error,
    which names the URL (`vidload._convert.job.failure_reason`)."""
    local_root = root.local_file()
    if local_root is not None:
        yield local_root, item
        return
    assert stage is not None, "a shard reading an INPUT URL has a staging folder"
    local_root = stage / "in"
    local = local_root / item.path
    remote = root / item.path.as_posix()
    try:
        if not item.is_video and get_kind(item.kind).folder:
            local.mkdir(parents=True, exist_ok=True)
            try:
                names = sorted(n for n, size in remote.list_dir().items() if size is not None)
            except VideoReadError as e:
                if "not found" not in str(e.reason):
                    raise
                names = []
            for name, data in zip(names, read_many([remote / n for n in names]), strict=True):
                (local / name).write_bytes(data)
        else:
            local.parent.mkdir(parents=True, exist_ok=True)
            whole = remote.read_optional()
            if whole is not None:
                local.write_bytes(whole)
        yield local_root, replace(item, path=local)
    finally:
        shutil.rmtree(local_root, ignore_errors=True)
