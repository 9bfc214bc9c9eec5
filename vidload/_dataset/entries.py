"""A dataset's video list in flat arrays: `VideoEntries`, a sequence of `VideoEntry` made on demand.

Why: a list of `VideoEntry` objects costs every DataLoader worker a copy of it. A forked worker
that reads an entry writes the entry's reference count (and a garbage collection writes every
tracked object's header), so each page holding one becomes the worker's own: at Kinetics-700
size (650,000 entries), 2 workers, batch 512, each worker's unique memory grew from 20 MiB after
its first batch to 222 MiB after a shuffled epoch, and a `spawn` worker received a 64.8 MiB
pickle (issue 24; `python tools/entries_memory.py`). Numpy arrays have one object header each;
their data pages are only read, so they stay shared, and the arrays pickle as a few buffers.

The columns (detectron2's and torchdata's serialised dataset lists are the same shape):

- `id_bytes` uint8: every `video_id` in UTF-8 (`surrogatepass`, so ids decoded from undecodable
  file names round-trip), one after another; `id_ends` int64 (n + 1,): entry i is
  `id_bytes[id_ends[i]:id_ends[i + 1]]`.
- `label` int64 (n,).
- `known_frames`, `reported_frames` int64 (n,), `NONE` (the int64 minimum) for None; `offset`
  int64 (n,); `start`, `end` float64 (n,) seconds, NaN for None; `flags` uint8 (n,): bit 0
  `absolute`, bit 1 `labels` is a tuple (not None). A column whose every value is the field's
  default is not stored at all: a list of `(video_id, label)` pairs is ids and labels only.
- multi-labels as a CSR pair: `labels_ends` int64 (n + 1,) into `labels_values` int64.
- `extra` (a manifest's columns of the user's own): each entry's keys are one of a few key
  tuples (`extra_keys`, kept as a small tuple; `extra_kind` int32 (n,) names it, 0 = no extra)
  and its values, in key order, are strings of a second UTF-8 table (`extra_bytes`,
  `extra_ends`), entry i's from `extra_first[i]`.

`SharedArrays` (`vidload._shared_arrays`) holds the columns. A plain `pickle` copies them (a
dataset saved to a file keeps its list); `multiprocessing`'s `ForkingPickler` (what a `spawn` or
`forkserver` DataLoader worker is started with, with torch's reductions registered) moves them
once into shared-memory tensors and sends their handles, so each spawned worker maps the same
pages instead of unpickling its own copy.
"""

from __future__ import annotations

import itertools
import operator
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import fields
from typing import Any, overload

import numpy as np

from vidload._lists import INT64, MAX_FRAMES, VideoEntry
from vidload._official import warn_one_based_labels
from vidload._shared_arrays import SharedArrays
from vidload.sources.base import normalize_video_id

__all__ = ["NONE", "VideoEntries", "entries_of"]

#: The int64 value that stands for None in the count columns (no count is ever this).
NONE = INT64[0]
_ABSOLUTE, _MULTI = 1, 2
#: The columns of one value per entry.
_PER_ENTRY = (
    "label known_frames reported_frames offset start end flags extra_kind extra_first".split()
)


class VideoEntries(Sequence[VideoEntry]):
    """A dataset's video list in flat arrays (see the module docstring): `len`, indexing (an
    int, negative ones too, or a slice: a list) and iteration give `VideoEntry`s equal to
    those it was built from, made when asked for."""

    __slots__ = ("_cols", "_extra_keys", "_ascii", "_n")

    def __init__(
        self, cols: SharedArrays, *, extra_keys: tuple[tuple[str, ...], ...], ascii_ids: bool
    ) -> None:
        self._cols = cols
        self._extra_keys = extra_keys
        self._ascii = ascii_ids
        self._n = len(cols["id_ends"]) - 1

    # ---------------------------------------------------------------- building

    @classmethod
    def build(
        cls,
        video_id: Sequence[str],
        label: Sequence[int] | np.ndarray,
        *,
        known_frames: Sequence[int | None] | None = None,
        reported_frames: Sequence[int | None] | None = None,
        offset: Sequence[int] | None = None,
        labels: Sequence[tuple[int, ...] | None] | None = None,
        absolute: Sequence[bool] | None = None,
        extra: Sequence[Mapping[str, str]] | None = None,
        start: Sequence[float | None] | None = None,
        end: Sequence[float | None] | None = None,
    ) -> VideoEntries:
        """Entries from one sequence per field of `VideoEntry`, named as the field (None: every
        entry has the field's default).

        The ids are taken as they are (callers normalise them). Raises TypeError/ValueError
        naming the entry, the field and the rule for a value the columns cannot hold: an int
        field that is not an int (or outside int64, or the int64 minimum, which stands for
        None), an `extra` that does not map str to str.
        """
        n = len(video_id)
        cols: dict[str, np.ndarray] = {}
        blob, ends, ascii_ids = _string_table(video_id, "video_id")
        cols["id_bytes"], cols["id_ends"] = blob, ends
        cols["label"] = _int_column("label", label, video_id, optional=False)
        for name, values in (
            ("known_frames", known_frames),
            ("reported_frames", reported_frames),
            ("offset", offset),
        ):
            optional = name != "offset"  # a count's default is None, the offset's 0
            if values is None or not any(v is not None if optional else v != 0 for v in values):
                continue  # every entry has the default: no column
            cols[name] = _int_column(name, values, video_id, optional=optional)
        for name, window in (("start", start), ("end", end)):
            if window is not None and any(v is not None for v in window):
                cols[name] = _float_column(name, window, video_id)
        flags = np.zeros(n, np.uint8)
        if absolute is not None:
            flags |= np.fromiter(map(bool, absolute), np.bool_, n).astype(np.uint8) * _ABSOLUTE
        if labels is not None and any(v is not None for v in labels):
            has = np.fromiter((v is not None for v in labels), np.bool_, n)
            flags |= has.astype(np.uint8) * _MULTI
            lengths = np.fromiter((len(v) if v is not None else 0 for v in labels), np.int64, n)
            values = [k for v in labels if v is not None for k in v]
            cols["labels_ends"] = _ends(lengths)
            owners = np.repeat(np.arange(n), lengths)
            cols["labels_values"] = _int_column(
                "labels", values, video_id, optional=False, owners=owners
            )
        if flags.any():
            cols["flags"] = flags
        extra_keys: tuple[tuple[str, ...], ...] = ((),)
        if extra is not None and any(extra):
            extra_keys = _extra_columns(extra, video_id, cols)
        return cls(SharedArrays(cols), extra_keys=extra_keys, ascii_ids=ascii_ids)

    @classmethod
    def from_entries(cls, entries: Sequence[VideoEntry]) -> VideoEntries:
        """The entries of a list of `VideoEntry` (as `load_videos` returns it)."""
        if isinstance(entries, VideoEntries):
            return entries
        names = [f.name for f in fields(VideoEntry)]  # `build`'s columns
        return cls.build(**{name: list(map(operator.attrgetter(name), entries)) for name in names})

    # ---------------------------------------------------------------- reading

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, index: int) -> VideoEntry: ...

    @overload
    def __getitem__(self, index: slice) -> list[VideoEntry]: ...

    def __getitem__(self, index: int | slice) -> VideoEntry | list[VideoEntry]:
        if isinstance(index, slice):
            return [self._entry(i) for i in range(*index.indices(self._n))]
        return self._entry(self._position(index))

    def __iter__(self) -> Iterator[VideoEntry]:
        return map(self._entry, range(self._n))

    def __repr__(self) -> str:
        return f"VideoEntries({self._n} videos, {self._cols.nbytes / 2**20:.1f} MiB of arrays)"

    def _position(self, index: int) -> int:
        i = operator.index(index)
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(f"video index ({index}) must be in [{-self._n}, {self._n})")
        return i

    def video_id(self, i: int) -> str:
        """Entry i's video id (i >= 0), without making the entry."""
        ends = self._cols["id_ends"]
        return _text(self._cols["id_bytes"], ends[i], ends[i + 1])

    def video_ids(self) -> list[str]:
        """Every video id, in order."""
        blob = self._cols["id_bytes"].tobytes()
        ends = self._cols["id_ends"].tolist()
        if self._ascii:
            text = blob.decode("ascii")
            return [text[a:b] for a, b in itertools.pairwise(ends)]
        return [blob[a:b].decode("utf-8", "surrogatepass") for a, b in itertools.pairwise(ends)]

    def offsets(self) -> np.ndarray | None:
        """int64 (n,) offsets; None when every entry's is 0."""
        return self._cols.get("offset")

    def windows(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(start, end) float64 (n,) seconds, NaN for None; None when no entry has a window."""
        start, end = self._cols.get("start"), self._cols.get("end")
        if start is None and end is None:
            return None
        nan = np.full(self._n, np.nan)
        return (nan if start is None else start), (nan if end is None else end)

    def take(self, keep: np.ndarray) -> VideoEntries:
        """The entries where `keep` (bool (n,)) is True, in order, as new arrays."""
        c, keep = self._cols, np.asarray(keep, np.bool_)
        ids = self.video_ids()
        blob, ends, ascii_ids = _string_table([ids[i] for i in np.flatnonzero(keep)], "video_id")
        cols: dict[str, np.ndarray] = {"id_bytes": blob, "id_ends": ends}
        for name in _PER_ENTRY:
            if name in c:
                cols[name] = c[name][keep]
        if "extra_kind" in c:  # the value table stays whole: extra_first still points into it
            cols["extra_bytes"], cols["extra_ends"] = c["extra_bytes"], c["extra_ends"]
        if "labels_ends" in c:
            lengths = np.diff(c["labels_ends"])
            cols["labels_ends"] = _ends(lengths[keep])
            cols["labels_values"] = c["labels_values"][np.repeat(keep, lengths)]
        return VideoEntries(SharedArrays(cols), extra_keys=self._extra_keys, ascii_ids=ascii_ids)

    def all_labels(self) -> tuple[np.ndarray, np.ndarray]:
        """(labels int64 (m,), entry of each int64 (m,)): each entry's `labels or (label,)`,
        in list order (what a check of every label goes through)."""
        n, label = self._n, self._cols["label"]
        ends = self._cols.get("labels_ends")
        if ends is None:
            return label, np.arange(n)
        lengths = np.diff(ends)
        single = np.flatnonzero(lengths == 0)  # no multi-labels: the entry's label
        owners = np.concatenate([single, np.repeat(np.arange(n), lengths)])
        values = np.concatenate([label[single], self._cols["labels_values"]])
        order = np.argsort(owners, kind="stable")  # list order, each entry's labels in order
        return values[order], owners[order]

    def _entry(self, i: int) -> VideoEntry:
        c = self._cols
        values: dict[str, Any] = {"video_id": self.video_id(i), "label": int(c["label"][i])}
        for name in ("known_frames", "reported_frames"):
            column = c.get(name)
            if column is not None and column[i] != NONE:
                values[name] = int(column[i])
        column = c.get("offset")
        if column is not None:
            values["offset"] = int(column[i])
        column = c.get("flags")
        if column is not None:
            flags = int(column[i])
            values["absolute"] = bool(flags & _ABSOLUTE)
            if flags & _MULTI:
                lab = c["labels_ends"]
                values["labels"] = tuple(c["labels_values"][lab[i] : lab[i + 1]].tolist())
        if "extra_kind" in c:
            kind = int(c["extra_kind"][i])
            if kind:
                values["extra"] = self._extra(i, self._extra_keys[kind])
        for name in ("start", "end"):
            column = c.get(name)
            if column is not None and not np.isnan(column[i]):
                values[name] = float(column[i])
        return VideoEntry(**values)

    def _extra(self, i: int, keys: tuple[str, ...]) -> dict[str, str]:
        c = self._cols
        blob, ends = c["extra_bytes"], c["extra_ends"]
        first = int(c["extra_first"][i])
        return {
            key: _text(blob, ends[first + k], ends[first + k + 1]) for k, key in enumerate(keys)
        }


def entries_of(
    videos: str | os.PathLike[str] | Sequence[tuple | VideoEntry],
    *,
    multi_label: bool = False,
    storage_options: Mapping[str, Any] | None = None,
) -> VideoEntries:
    """`load_videos(videos, ...)` as `VideoEntries`, built without a `VideoEntry` per video
    where the input allows: `(video_id, label[, num_frames])` tuples whose ids are canonical
    and whose labels and counts are plain ints go straight into the columns (650,000 pairs:
    see `tools/entries_memory.py`); anything else, and any input with a bad value, goes
    through `load_videos`, whose checks and messages are the rule."""
    from vidload.manifest import load_videos

    if isinstance(videos, Sequence) and not isinstance(videos, (str, bytes, VideoEntries)):
        fast = _from_tuples(videos)
        if fast is not None:
            return fast
    if isinstance(videos, VideoEntries):
        return videos
    return VideoEntries.from_entries(
        load_videos(videos, multi_label=multi_label, storage_options=storage_options)
    )


# -------------------------------------------------------------------- columns


def _from_tuples(items: Sequence[object]) -> VideoEntries | None:
    """Entries of `(video_id, label)` / `(video_id, label, num_frames)` tuples (or lists) in
    bulk, or None when any item is something else or any value would be refused
    (`load_videos` then names it)."""
    if not items or not set(map(type, items)) <= {tuple, list}:
        return None
    if set(map(len, items)) not in ({2}, {3}):  # type: ignore[arg-type]
        return None
    columns = [list(map(operator.itemgetter(k), items)) for k in range(len(items[0]))]  # type: ignore[arg-type]
    ids, labels = columns[0], columns[1]
    if set(map(type, ids)) != {str} or not _canonical(ids):
        return None
    if set(map(type, labels)) != {int}:
        return None
    try:
        label = np.array(labels, np.int64)  # OverflowError outside int64
    except OverflowError:
        return None
    known = None
    if len(columns) == 3:
        known = columns[2]
        if not set(map(type, known)) <= {int, type(None)}:
            return None
        given = [k for k in known if k is not None]
        if given and (min(given) < 0 or max(given) > MAX_FRAMES):
            return None
    distinct = np.unique(label)
    warn_one_based_labels(set(distinct[distinct >= 0].tolist()), "videos", stacklevel=5)
    return VideoEntries.build(ids, label, known_frames=known)


def _text(blob: np.ndarray, start: int, stop: int) -> str:
    """The string stored in `blob[start:stop]` (UTF-8, surrogates passed through)."""
    return blob[start:stop].tobytes().decode("utf-8", "surrogatepass")


def _canonical(ids: Sequence[str]) -> bool:
    """Whether every id is what `normalize_video_id` returns unchanged: non-empty, relative,
    `/`-separated, no empty, "." or ".." part, no NUL (one scan of the joined ids, ~50x faster
    than a call per id)."""
    if os.sep != "/":
        return all(normalize_video_id(v) == v for v in ids)
    joined = "\0".join(ids)
    if joined.count("\0") != len(ids) - 1:
        return False  # an id holds a NUL
    text = "/" + joined.replace("\0", "/") + "/"
    return "//" not in text and "/./" not in text and "/../" not in text


def _ends(lengths: np.ndarray) -> np.ndarray:
    ends = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=ends[1:])
    return ends


def _string_table(strings: Sequence[str], what: str) -> tuple[np.ndarray, np.ndarray, bool]:
    """(uint8 UTF-8 bytes, int64 (n + 1,) ends, all ASCII) of `strings`."""
    if not set(map(type, strings)) <= {str}:
        bad = next(s for s in strings if type(s) is not str)
        raise TypeError(f"{what} must be a str, got {bad!r}")
    joined = "".join(strings)
    if joined.isascii():
        blob = joined.encode("ascii")
        lengths = np.fromiter(map(len, strings), np.int64, len(strings))
        is_ascii = True
    else:
        encoded = [s.encode("utf-8", "surrogatepass") for s in strings]
        blob = b"".join(encoded)
        lengths = np.fromiter(map(len, encoded), np.int64, len(strings))
        is_ascii = False
    return np.frombuffer(blob, np.uint8).copy(), _ends(lengths), is_ascii


def _int_column(
    name: str,
    values: Sequence[int | None] | np.ndarray,
    ids: Sequence[str],
    *,
    optional: bool,
    owners: np.ndarray | None = None,
) -> np.ndarray:
    """int64 column of `values` (None -> NONE when `optional`); TypeError/ValueError naming
    the entry's video and the rule for anything else."""
    if isinstance(values, np.ndarray) and values.dtype == np.int64:
        return values
    types = set(map(type, values))
    if not types <= {int, type(None)} or (type(None) in types and not optional):
        for k, v in enumerate(values):
            if v is None and optional:
                continue
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                rule = "an int or None" if optional else "an int"
                raise TypeError(f"{_where(ids, k, owners)}{name} must be {rule}, got {v!r}")
    if optional and NONE in values:
        k = list(values).index(NONE)
        raise ValueError(
            f"{_where(ids, k, owners)}{name} ({NONE}) must be > {NONE} (the int64 minimum "
            f"stands for None)"
        )
    try:
        if types <= {int}:
            return np.array(values, np.int64)
        return np.array([NONE if v is None else int(v) for v in values], np.int64)
    except OverflowError:
        k = next(k for k, v in enumerate(values) if v is not None and not INT64[0] <= v <= INT64[1])
        raise ValueError(f"{_where(ids, k, owners)}{name} ({values[k]}) must fit int64") from None


def _where(ids: Sequence[str], k: int, owners: np.ndarray | None) -> str:
    entry = int(owners[k]) if owners is not None else k
    return f"video {ids[entry]!r}: "


def _float_column(name: str, values: Sequence[float | None], ids: Sequence[str]) -> np.ndarray:
    column = np.full(len(values), np.nan)
    for k, v in enumerate(values):
        try:
            column[k] = np.nan if v is None else float(v)
        except (TypeError, ValueError) as e:
            raise TypeError(f"video {ids[k]!r}: {name} must be a number or None, got {v!r}") from e
    return column


def _extra_columns(
    extra: Sequence[Mapping[str, str]], ids: Sequence[str], cols: dict[str, np.ndarray]
) -> tuple[tuple[str, ...], ...]:
    """Fill the extra columns into `cols`; the key tuples (kind 0: none)."""
    kinds: dict[tuple[str, ...], int] = {(): 0}
    kind = np.empty(len(extra), np.int32)
    values: list[str] = []
    first = np.empty(len(extra), np.int64)
    for k, mapping in enumerate(extra):
        keys = tuple(mapping)
        kind[k] = kinds.setdefault(keys, len(kinds))
        first[k] = len(values)
        for key in keys:
            cell = mapping[key]
            if type(key) is not str or type(cell) is not str:
                raise TypeError(
                    f"video {ids[k]!r}: extra ({key!r}: {cell!r}) must map a str column to a "
                    f"str cell"
                )
            values.append(cell)
    blob, ends, _ = _string_table(values, "extra")
    cols.update(extra_kind=kind, extra_first=first, extra_bytes=blob, extra_ends=ends)
    return tuple(kinds)
