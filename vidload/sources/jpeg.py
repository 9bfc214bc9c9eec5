"""JPEG folders: `root/<id>/img_00001.jpg, img_00002.jpg, ...` (mmaction2's rawframes layout).

Frame i (0-based) is the file `template.format(start_index + i)`; by default `img_{:05d}.jpg`
with `start_index=1`. A video id may keep its video extension (`a/x1.mp4` -> folder `a/x1/`).

Counts:
- `reported_frames`: the count given in `frame_counts` (an annotation list or manifest), else the
  number of file names in the folder that match the template with a number >= `start_index`
  (one directory listing).
- `actual_frames`: the frames that exist: the run of files from `start_index` with no gap in
  the numbering, less any empty files at its end (an extraction cut short). Found from one
  directory listing and one stat, once per video and process. A missing file ends the run, so
  frames after a hole are not readable (FrameCountError). An empty or truncated file inside the
  run is a corrupt frame: reading it raises VideoReadError. (Checking every file's size would
  take one stat per frame, ~1 ms of CPU for 300 frames against ~0.1 ms for the listing alone,
  paid again every epoch by non-persistent DataLoader workers; `python tools/read_paths.py
  --only jpeg`.)

A clip costs k file reads and k JPEG decodes. Each file is checked for its SOI/EOI markers
before decoding, so a truncated frame file raises `VideoReadError` naming it, never a grey frame.
"""

from __future__ import annotations

import os
import re
import string
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vidload._atomic import writing
from vidload._checks import check_int, check_positive_number
from vidload._layout import FRAME_TEMPLATE as DEFAULT_TEMPLATE
from vidload._layout import container_name
from vidload._storage import Location, SourceRoot
from vidload._storage.batch import Request, held
from vidload.errors import VideoReadError, VidloadError
from vidload.sources._docs import shared_docs
from vidload.sources._heads import HeadRecord, head_record
from vidload.sources.base import (
    Indices,
    as_index_array,
    normalize_video_id,
    open_regular,
    strip_video_ext,
)
from vidload.sources.encoded import ContainerSource, EncodedFrames, distinct_frames
from vidload.sources.jpeg_decode import check_jpeg_markers

__all__ = ["JpegSource", "write_jpeg_folder"]

#: Frame rate `JpegSource.timestamps` assumes for a folder without stored times.
DEFAULT_FPS = 30.0


def _template_regex(template: str) -> re.Pattern[str]:
    """Validate a one-field file-name template and return a regex matching its names."""
    if not isinstance(template, str):
        raise TypeError(f"template must be a str, got {type(template).__name__}")
    try:
        parts = list(string.Formatter().parse(template))
        fields = [p for p in parts if p[1] is not None]
        sample = template.format(1)
    except (ValueError, IndexError, KeyError) as e:
        raise ValueError(
            f"template ({template!r}) must be a format string with one integer field, "
            f"like 'img_{{:05d}}.jpg'"
        ) from e
    if len(fields) != 1 or fields[0][1] not in ("", "0"):
        raise ValueError(
            f"template ({template!r}) must have exactly one positional field, "
            "like 'img_{:05d}.jpg'"
        )
    if "/" in sample or os.sep in sample:
        raise ValueError(f"template ({template!r}) must name a file, not a path")
    pattern = ""
    for literal, name, _spec, _conv in parts:
        pattern += re.escape(literal)
        if name is not None:
            pattern += r"(\d+)"
    return re.compile(pattern)


@shared_docs
class JpegSource(ContainerSource):
    """Frames stored as one JPEG file each, in a folder per video.

    Args:
        root: folder holding one sub-folder per video.
        template: file name of frame `start_index + i`; one integer format field.
        start_index: number of the first frame's file (1 for mmaction2 rawframes).
        frame_counts: optional counts by video id (e.g. from an annotation list); they become
            `reported_frames`. Ids may carry a video extension.
        <<decode_size>>
        <<fps>>
            Default 30 (`DEFAULT_FPS`): rawframes folders do not say their rate.
        <<storage>>

    In a bucket a video costs one listing request when a process first reads it (the counts
    come from the listing's names and sizes), then one GET per distinct frame of a clip, all
    of a clip's fetched concurrently. In a batch (`ClipDataset.__getitems__`) a folder the
    root's sidecar of heads lists (`vidload convert --to jpeg` writes it) needs no listing:
    its frames are asked by name in the batch's one round, with a check of its last frame
    file. With `cache_dir` each frame file is cached.

    `read` returns uint8 (k, H, W, 3) RGB. Picklable; holds only paths and cached counts.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        template: str = DEFAULT_TEMPLATE,
        start_index: int = 1,
        frame_counts: Mapping[str, int] | None = None,
        decode_size: tuple[int, int] | None = None,
        fps: float = DEFAULT_FPS,
        storage_options: Mapping[str, Any] | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        cache_max_bytes: int | None = None,
    ) -> None:
        fps = check_positive_number("fps", fps)  # not None: folders do not say their rate
        store = SourceRoot(root, storage_options, cache_dir, cache_max_bytes)
        super().__init__(store, decode_size=decode_size, fps=fps)
        self._name_re = _template_regex(template)
        self.template = template
        self.start_index = check_int("start_index", start_index, minimum=0)
        self.frame_counts: dict[str, int] = {}
        for vid, count in (frame_counts or {}).items():
            checked = check_int(f"frame_counts[{vid!r}]", count, minimum=0)
            self.frame_counts[_count_key(vid)] = checked
        self._counts: dict[str, tuple[int, int]] = {}  # key -> (files matching, actual)
        self._names: list[str] = []  # template.format(start_index + i), made as needed

    def __getstate__(self) -> dict[str, object]:
        state = self.__dict__.copy()
        state["_counts"] = {}
        state["_names"] = []
        return state

    def __repr__(self) -> str:
        return f"JpegSource({str(self.root)!r}, template={self.template!r})"

    def _key(self, video_id: str) -> str:
        """The frame folder of `video_id`, relative to the root (see `container_path`; in a
        bucket the folder without the video extension, else (no such folder) the full id's,
        found by listing it (`_scan`), once per video and process:
        `vidload._storage.SourceRoot.container_key`)."""
        return self.store.container_key(video_id, self.suffix, self._scan)

    def _listing(self, key: str) -> tuple[set[str], Callable[[str], bool]]:
        """(file names in the folder `key`, a test for an empty file among them): a local
        folder (`local_file()`) by one `os.listdir`, a stat only for the files asked about;
        in a bucket one request (names and sizes)."""
        where = self.store.location_of(key)
        folder = where.local_file()
        if folder is None:
            entries = where.list_dir()
            return {n for n, size in entries.items() if size is not None}, (
                lambda name: entries.get(name) == 0
            )
        try:
            names = set(os.listdir(folder))
        except FileNotFoundError as e:
            raise VideoReadError(folder, "frame folder not found") from e
        except NotADirectoryError as e:
            raise VideoReadError(folder, "not a folder of frames") from e
        except OSError as e:
            raise VideoReadError(folder, f"cannot list the frame folder: {e}") from e
        return names, lambda name: _is_empty(folder / name)

    # -- a batch in one round (`ContainerSource.prepare`, `fetch_plan`): remote roots only
    #
    # A folder `vidload convert --to jpeg` wrote is listed in the root's sidecar of heads
    # (`vidload.sources._heads`, kind "jpeg": its frame count, `start_index`, and the size and
    # digest of its last frame file): a batch then GETs the frame files by name at once, with
    # the check of the last one, no listing first. A record that does not check (the last
    # file absent or other bytes: a stale count, another naming), or a planned frame file
    # that is absent, leaves the folder to its item's own read: a listing, then its frames.

    heads_kind = "jpeg"

    def head_record(self, video_id: str) -> tuple[str, HeadRecord] | None:
        """(folder name, its record) for the sidecar of heads (`_heads.write_heads`, run in
        threads: no shared state but the names found), None where the folder does not list
        or has no frame."""

        def name(i: int) -> str:
            return self.template.format(self.start_index + i)

        try:
            key, listing = self._fetch_head(video_id)
            count = _frame_run(*listing, name)[1]
            if count == 0:
                return None
            last = self.store.location_of(f"{key}/{name(count - 1)}")
            fields = {"frames": count, "start_index": self.start_index}
            return key, head_record(last, fields, {})
        except VidloadError:
            return None

    def _pending_of(
        self, video_id: str, name: str, record: HeadRecord
    ) -> tuple[Location, object] | None:
        count = record.ints.get("frames", 0)
        given = self.frame_counts.get(_count_key(video_id))
        if count < 1 or record.ints.get("start_index") != self.start_index:
            return None
        if given is not None and given != count:
            return None  # the counts given disagree with the record: list the folder
        head = _Recorded(name, count)
        return self.store.location_of(f"{name}/{self._name(count - 1)}"), head

    def _head_checks(self, location: Location, record: HeadRecord, head: object) -> bool:
        """The last frame file as recorded, and no planned frame file absent: a file the
        round failed to fetch (`held`) is not asked again here."""
        assert isinstance(head, _Recorded)
        urls = (location.url, *head.planned)
        if any((h := held(url)) is not None and h.error is not None for url in urls):
            return False
        return super()._head_checks(location, record, head)

    def _head_known(self, video_id: str) -> bool:
        key = self.store.found_names.get(container_name(video_id, "", keep_extension=True))
        return key is not None and key in self._counts

    def _fetch_head(self, video_id: str) -> tuple[str, tuple[set[str], Callable[[str], bool]]]:
        """(folder, its listing: `_listing`), the folder named as `_key` finds it
        (`vidload._storage.SourceRoot.find`)."""
        return self.store.find(video_id, self.suffix, self._listing)

    def _keep_head(self, video_id: str, head: Any) -> None:
        """A folder's listing (`_fetch_head`), or its record from the sidecar, checked: as
        if listed. The folder's name is kept where it was found (`SourceRoot.find`, or
        `_pend_from` for a record)."""
        if isinstance(head, _Recorded):
            self._counts[head.key] = (head.count, head.count)
        else:
            self._scan(*head)

    def _plan(self, video_id: str, idx: np.ndarray, head: object | None) -> list[Request]:
        if isinstance(head, _Recorded):
            key, actual = head.key, head.count
        else:
            key = self._key(video_id)
            actual = self._scan(key)[1]
        rows = distinct_frames(idx[idx < actual], actual)[0].tolist()
        out: list[Request] = [
            (self.store.location_of(f"{key}/{self._name(i)}"), None) for i in rows
        ]
        if isinstance(head, _Recorded):
            head.planned.extend(loc.url for loc, _ in out)
        return out

    def folder(self, video_id: str) -> Path:
        """The folder holding `video_id`'s frames (`path`); a local root only."""
        return self.path(video_id)

    def frame_path(self, video_id: str, index: int) -> Path:
        """The file of frame `index` (0-based); a local root only."""
        return self.folder(video_id) / self.template.format(self.start_index + index)

    def files(self, video_id: str) -> list[Path]:
        """The frame files of `video_id` that `read` can open (the `actual_frames` run), from
        the cached directory listing (for read-ahead hints; none for a URL root). Raises
        VideoReadError like `read` for a missing folder."""

        def files() -> list[Path]:
            key = self._key(video_id)
            folder = self.store.local(key)
            assert folder is not None  # hints are made under a local root only
            return [folder / self._name(i) for i in range(self._scan(key)[1])]

        return self.store.hints(files)

    def _read_ahead(self, video_id: str, idx: np.ndarray) -> list[Request]:
        """Each distinct frame file the read opens, whole, in frame order (`_plan`); a missing
        folder raises VideoReadError as `read` does."""
        return self._plan(video_id, idx, None)

    def _name(self, index: int) -> str:
        """File name of frame `index` (0-based); names are made once per source and process."""
        names = self._names
        while len(names) <= index:
            names.append(self.template.format(self.start_index + len(names)))
        return names[index]

    def _scan(
        self, key: str, listing: tuple[set[str], Callable[[str], bool]] | None = None
    ) -> tuple[int, int]:
        """(file names matching the template, frames that exist), from one directory listing
        (`listing`: one already made, `_listing`'s)."""
        cached = self._counts.get(key)
        if cached is not None:
            return cached
        if listing is None and not self.store.location.can_list and self._recorded(key):
            return self._counts[key]
        names, is_empty = self._listing(key) if listing is None else listing
        run, actual = _frame_run(names, is_empty, self._name)
        matching = run  # plus any numbered files outside the run (after a hole, say)
        for name in names.difference(self._names[:run]) if len(names) > run else ():
            m = self._name_re.fullmatch(name)
            if m is not None:
                number = int(m.group(1))
                if number >= self.start_index and self.template.format(number) == name:
                    matching += 1
        self._counts[key] = (matching, actual)
        return matching, actual

    def _recorded(self, key: str) -> bool:
        """Where the root cannot list (HTTP): whether the frame count of the folder `key` is
        taken (`_keep_head`) as the root's sidecar of heads records it (`_heads`, fetched once
        per machine), once its last frame file is checked (one request: the bytes the
        record's digest covers); False where there is no record or it does not check (the
        folder is then listed)."""
        heads = self._sidecar()
        record = None if heads is None else heads.get(key)
        if record is None:
            return False
        got = self._pending_of(key, key, record)
        return got is not None and self._settle_one(key, got[0], record, got[1])

    def reported_frames(self, video_id: str) -> int | None:
        """`frame_counts[video_id]` when given, else the number of files matching the template."""
        count = self.frame_counts.get(_count_key(video_id))
        if count is not None:
            return count
        return self._scan(self._key(video_id))[0]

    def actual_frames(self, video_id: str) -> int:
        """Frame files from `start_index` on with no gap, less empty files at the end (cached)."""
        return self._scan(self._key(video_id))[1]

    def read_encoded(self, video_id: str, indices: Indices) -> EncodedFrames:
        """<<read_encoded>>

        Here a VideoReadError names a missing folder, or a frame file that cannot be read. One
        open, fstat and read per distinct frame file (`read_frame_file`).
        """
        key = self._key(video_id)
        idx = as_index_array(indices)
        actual = self._scan(key)[1]
        frames, order = distinct_frames(
            idx, actual, video_id, lambda: self.reported_frames(video_id)
        )
        rows = frames.tolist()
        buffers, paths = self.store.read_files(key, rows, self._name, read_frame_file)
        return EncodedFrames(buffers, frames, order, paths, sum(map(len, buffers)))


def _frame_run(
    names: set[str], is_empty: Callable[[str], bool], name: Callable[[int], str]
) -> tuple[int, int]:
    """(frame files among `names` from the first on with no gap, those of them before the
    empty files at the run's end: an extraction cut short)."""
    run = 0
    while name(run) in names:
        run += 1
    actual = run
    while actual > 0 and is_empty(name(actual - 1)):
        actual -= 1
    return run, actual


@dataclass(eq=False)
class _Recorded:
    """A folder's head from the sidecar, pending its check: its name, frame count, and the
    frame files planned from it (`_plan`; `_head_checks` asks whether any was absent)."""

    key: str
    count: int
    planned: list[str] = field(default_factory=list)


def _is_empty(path: Path) -> bool:
    try:
        return os.stat(path).st_size == 0
    except OSError:
        return True


def write_jpeg_folder(
    path: str | os.PathLike[str],
    frames: Iterable[bytes],
    *,
    template: str = DEFAULT_TEMPLATE,
    start_index: int = 1,
) -> int:
    """Write encoded JPEG frames as `path/template.format(start_index + i)`, atomically.

    The files go into a temporary folder beside `path`, which is renamed to `path` only once
    every frame is written and fsynced; if anything fails the temporary folder is removed and
    `path` is untouched. An existing folder at `path` is replaced. Each frame must be a
    complete JPEG (SOI ... EOI). Returns the number of frames written (>= 1).
    """
    _template_regex(template)
    check_int("start_index", start_index, minimum=0)
    path = Path(path)
    count = 0
    with writing(path, folder=True) as tmp:
        for frame in frames:
            try:
                check_jpeg_markers(frame, path=f"frame {count} for {path}", index=count)
            except VideoReadError as e:
                raise ValueError(f"not a complete JPEG: {e}") from e
            (tmp / template.format(start_index + count)).write_bytes(frame)
            count += 1
        if count == 0:
            raise ValueError(f"no frames to write to {path}")
    return count


def _count_key(video_id: str) -> str:
    """`frame_counts` keys: ids without a video extension (no file-system look-up)."""
    return strip_video_ext(normalize_video_id(video_id))


def read_frame_file(path: str | Path, index: int) -> bytes:
    """The bytes of one frame file: open (a regular file only: a FIFO would block), the fstat
    that checked it gives the size, one read: 6.7 us of CPU for a 30 KB frame against 13.5 us
    for `np.fromfile` (`python tools/read_paths.py --only jpeg`; 8 frames a clip)."""
    fd, st = open_regular(path, index=index)
    try:
        size = st.st_size
        data = os.read(fd, size)
        while len(data) < size:  # a short read (network filesystems): read the rest
            more = os.read(fd, size - len(data))
            if not more:
                break  # shrank since fstat: the marker check reports it
            data += more
    except OSError as e:
        raise VideoReadError(path, f"cannot read the frame file: {e}", index) from e
    finally:
        os.close(fd)
    return data
