"""Class labels from a folder tree: `class_name/.../video.mp4` -> the class's index.

The layout of Kinetics, UCF101, HMDB51 and torchvision's `ImageFolder`: a video's class is its
top-level folder; class names are sorted and numbered 0, 1, ... `vidload convert` and `vidload
probe --write` label a folder INPUT this way and write the names, one per line in label order,
to `classes.txt` beside the manifest.

Two trees (train and val) get the same numbering only if they hold the same class folders; a
`labels` file fixes the mapping instead (`read_class_map`): either a class-name-per-line file
(`classes.txt`, mmaction2's `label_map_*.txt`: line k names class k) or an annotation list /
manifest, whose entries give each top-level folder its label.
"""

from __future__ import annotations

import itertools
import os
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath

from vidload._atomic import write_bytes_atomic
from vidload._layout import CLASSES_NAME
from vidload._lists import is_int, read_file, text_lines
from vidload.errors import VidloadError

__all__ = [
    "CLASSES_NAME",
    "class_map_in_order",
    "class_of",
    "classes_bytes",
    "folder_class_map",
    "is_contiguous",
    "label_by_folder",
    "read_class_map",
    "read_numbered_classes",
    "warn_unpinned",
    "write_classes",
]


def class_of(video_id: str) -> str | None:
    """The top-level folder of `video_id` (`abseiling/x1.mp4` -> "abseiling"); None for a
    video directly in the root (no class folder)."""
    parts = PurePosixPath(video_id).parts
    return parts[0] if len(parts) > 1 else None


def folder_class_map(video_ids: Iterable[str]) -> dict[str, int]:
    """{class name: label} with the sorted top-level folder names numbered 0, 1, ..."""
    names = sorted({c for c in map(class_of, video_ids) if c is not None})
    return {name: k for k, name in enumerate(names)}


def label_by_folder(
    video_ids: Sequence[str], class_map: Mapping[str, int], *, where: str = "labels"
) -> list[int | None]:
    """The label of each video: `class_map[class_of(video_id)]`, None without a class folder.

    Raises:
        ValueError: a video's class folder is not in `class_map` (named, with `where`).
    """
    names = [class_of(vid) for vid in video_ids]
    missing = {name for name in names if name is not None and name not in class_map}
    if missing:
        shown = ", ".join(repr(m) for m in sorted(missing)[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise ValueError(
            f"class folder(s) {shown}{more} are not in {where}; every top-level folder of the "
            f"input must be named there"
        )
    return [None if name is None else class_map[name] for name in names]


def read_class_map(path: str | os.PathLike[str]) -> dict[str, int]:
    """{class name: label} from a class-name-per-line file or an annotation list / manifest.

    * A manifest (header `video_id,...`) or an annotation list (every line `path ... label`,
      last field an integer): each entry's top-level folder gets the entry's label. Two labels
      for one folder, or an entry with no folder, is an error.
    * A numbered class file, every line `N name` (UCF101's `classInd.txt`: `1 ApplyEyeMakeup`):
      read with its base, numbers from 1 becoming 0-based (`read_numbered_classes`).
    * Otherwise one class name per line, line k (blank and `#` lines skipped) naming class k;
      names may contain spaces (Kinetics' "air drumming").

    Raises:
        FileNotFoundError: no such file.
        ValueError: an empty file, a repeated name, or a list whose labels disagree by folder.
    """
    from vidload.manifest import is_manifest, load_videos

    where, text = read_file(path, name="labels")
    lines = [ln for _, ln in text_lines(text)]
    if not lines:
        raise ValueError(f"labels ({str(path)!r}) names no classes")
    if is_manifest(where) or all(_looks_like_entry(ln) for ln in lines):
        return _map_from_entries(path, load_videos(where))
    if all(_NUMBERED.match(ln) for ln in lines):
        return read_numbered_classes(lines, where=f"labels ({str(path)!r})")
    return class_map_in_order(lines, where=f"labels ({str(path)!r})")


_NUMBERED = re.compile(r"^(\d+)\s+(\S.*)$")


def read_numbered_classes(lines: Sequence[str], *, where: str) -> dict[str, int]:
    """{class name: label} from `N name` lines (blank and `#` lines already left out), read
    with their base: numbers from 1 (UCF101's `classInd.txt`) become 0-based, numbers from 0
    stay. The numbers must be contiguous (in any order) and the names distinct.

    Raises:
        ValueError: a line that is not `N name`, numbers that do not run base..base+n-1, or
            a name given twice (named, with `where`).
    """
    numbered: dict[int, str] = {}
    for line in lines:
        m = _NUMBERED.match(line.strip())
        if m is None:
            raise ValueError(f"{where}: {line.strip()!r} is not a numbered class line `N name`")
        k, name = int(m[1]), m[2].strip()
        if k in numbered:
            raise ValueError(f"{where}: number {k} is given twice")
        numbered[k] = name
    base = min(numbered)
    if base not in (0, 1) or sorted(numbered) != list(range(base, base + len(numbered))):
        raise ValueError(
            f"{where}: class numbers {sorted(numbered)[:5]}... must run 0..{len(numbered) - 1} "
            f"or 1..{len(numbered)} without gaps"
        )
    return class_map_in_order([numbered[k] for k in sorted(numbered)], where=where)


def class_map_in_order(names: Sequence[str], *, where: str) -> dict[str, int]:
    """{name: its position in `names`}; ValueError naming `where` when a name is given twice."""
    out: dict[str, int] = {}
    for k, name in enumerate(names):
        if name in out:
            raise ValueError(f"{where}: class {name!r} is named twice")
        out[name] = k
    return out


def write_classes(path: str | os.PathLike[str], class_map: Mapping[str, int]) -> None:
    """Write the class names one per line, line k naming label k (atomically).

    Raises:
        ValueError: as `classes_bytes`.
    """
    write_bytes_atomic(path, classes_bytes(class_map))


def classes_bytes(class_map: Mapping[str, int]) -> bytes:
    """What `write_classes` writes, checked.

    Raises:
        ValueError: the labels are not exactly 0..n-1 (one name per line cannot say which
            labels are missing; `is_contiguous` tells beforehand), or a name cannot be one line.
    """
    if not is_contiguous(class_map):
        raise ValueError(
            f"class labels {sorted(class_map.values())} must be 0..{len(class_map) - 1} to be "
            f"written one name per line"
        )
    names = sorted(class_map, key=class_map.__getitem__)
    for name in names:
        if "\n" in name or name != name.strip() or name.startswith("#"):
            raise ValueError(f"class name {name!r} cannot be written one per line")
    return "".join(name + "\n" for name in names).encode("utf-8")


def is_contiguous(class_map: Mapping[str, int]) -> bool:
    """Whether the labels are exactly 0..n-1, so `write_classes` can write them."""
    return sorted(class_map.values()) == list(range(len(class_map)))


def _looks_like_entry(line: str) -> bool:
    fields = line.split()
    return len(fields) >= 2 and is_int(fields[-1])


def _map_from_entries(path: str | os.PathLike[str], entries) -> dict[str, int]:
    out: dict[str, int] = {}
    for e in entries:
        name = class_of(e.video_id)
        if name is None:
            raise ValueError(
                f"labels ({str(path)!r}): entry {e.video_id!r} has no class folder, so it "
                f"cannot map a folder to a label"
            )
        if e.label < 0:
            continue
        if out.setdefault(name, e.label) != e.label:
            raise ValueError(
                f"labels ({str(path)!r}): folder {name!r} has labels {out[name]} and {e.label}"
            )
    if not out:
        raise ValueError(f"labels ({str(path)!r}) gives no folder a label")
    return out


#: The files a class list is looked for in, beside a folder INPUT converted without `labels`:
#: UCF101's `classInd.txt`, `classes.txt`, mmaction2's `label_map_*.txt`, and any `.txt` of
#: `N name` lines; at most this many folders are looked in, files up to this size read.
_CLASS_FILES = re.compile(r"^(classInd|classes|label_map\w*)\.txt$", re.IGNORECASE)
_MAX_FOLDERS = 32
_MAX_BYTES = 1 << 20


def warn_unpinned(where: str, class_map: Mapping[str, int], folder: Path | None) -> None:
    """Warn when a folder INPUT's classes, numbered by their sorted names (`class_map`), may
    not be numbered as the user expects, naming `--labels`: a class list file in `folder`,
    beside it, or in a folder beside it (UCF101's `ucfTrainTestlist/classInd.txt`) numbers
    them otherwise; or the raw character order (`HammerThrow` before `Hammering`) differs
    from a case-insensitive one, which such files use."""
    reasons = []
    if folder is not None:
        for path in _class_files(folder):
            try:
                theirs = read_class_map(path)
            except (ValueError, OSError, VidloadError):  # unreadable (read_file): skipped
                continue  # not a class list after all
            common = [c for c in class_map if c in theirs]
            if len(common) * 2 < len(class_map) or not common:
                continue  # another dataset's classes
            differ = [c for c in common if theirs[c] != class_map[c]]
            if differ:
                c = differ[0]
                reasons.append(
                    f"{path} numbers them otherwise ({c!r} is {theirs[c]} there, "
                    f"{class_map[c]} here): pass --labels {path} (labels= from Python) to "
                    "number them as it does"
                )
    raw = sorted(class_map)
    folded = sorted(class_map, key=lambda n: (n.casefold(), n))
    if raw != folded:
        i = next(k for k, (a, b) in enumerate(zip(raw, folded, strict=True)) if a != b)
        reasons.append(
            f"sorted by raw character order, {raw[i]!r} comes before {folded[i]!r} (upper "
            "case first), which a case-insensitive class list (UCF101's classInd.txt) "
            "numbers the other way: pass --labels FILE (labels= from Python) to fix the "
            "numbering"
        )
    if reasons:
        warnings.warn(
            f"INPUT ({where!r}): its {len(class_map)} class folders are labelled by their "
            f"sorted names, but {'; and '.join(reasons)}",
            stacklevel=2,
        )


def _class_files(folder: Path) -> list[Path]:
    """The class list files in `folder`, beside it and in the folders beside it (bounded)."""
    try:
        here = folder.resolve()
        parent = folder.parent if folder.name not in ("", ".", "..") else here.parent
        folders = (p for p in sorted(parent.iterdir()) if p.is_dir() and p.resolve() != here)
        siblings = list(itertools.islice(folders, _MAX_FOLDERS))
    except OSError:
        return []
    found = []
    for place in [folder, parent, *siblings]:
        try:
            files = sorted(p for p in place.iterdir() if p.suffix.lower() == ".txt")
        except OSError:
            continue
        for path in files:
            try:
                if path.is_file() and path.stat().st_size <= _MAX_BYTES and _a_class_file(path):
                    found.append(path)
            except OSError:
                continue
    return found


def _a_class_file(path: Path) -> bool:
    """Named as a class list is, or its first lines are `N name` lines."""
    if _CLASS_FILES.match(path.name):
        return True
    with path.open("rb") as f:
        head = f.read(4096).decode("utf-8", "replace").lstrip("\ufeff").split("\n")[:5]
    lines = [ln.strip() for ln in head if ln.strip()]
    return bool(lines) and all(_NUMBERED.match(ln) and not _looks_like_entry(ln) for ln in lines)
