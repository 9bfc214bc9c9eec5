"""An OUTPUT says what it holds: a manifest per list converted into it (issue 31).

`manifest.csv` holds every container OUTPUT holds, whatever list or folder put it there: a
second list converted into the same OUTPUT (UCF101's testlist after its trainlist) adds its
videos to it. Converting a list therefore also writes `manifest-<list stem>.csv` beside it
(`ListedInput.manifest_name`): exactly that list's entries, in its order (a video listed twice
is two rows, as `ClipDataset` keeps both), with their labels and, for a window list, each
entry's `start` and `end`, each with the row convert wrote for its video (counts, status,
`container`).
It is the one to train from. An entry whose video the run did not reach (it stopped early) is
left out, and the summary counts it; a rerun writes it.

Two different lists with one stem would share that file: the second is refused before anything
is converted (`check_list_manifest`). The same list converted again (a rerun, a resume after a
stop, or the list grown since) is the same list: the entries the file holds come, in order,
among the list's, and it is rewritten.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from vidload._lists import UNLABELLED, VideoEntry
from vidload._storage import Location
from vidload.errors import UsageError, VidloadError
from vidload.manifest import ManifestRow, parse_manifest, render_manifest

__all__ = [
    "ListedInput",
    "check_list_manifest",
    "list_rows",
    "write_list_manifest",
]


#: An entry as the file records it: (video id, label, start, end).
Key = tuple[str, int, float | None, float | None]


@dataclass(frozen=True)
class ListedInput:
    """A list INPUT as convert read it: its file's name and its entries, in order."""

    name: str
    entries: tuple[VideoEntry, ...]

    @property
    def stem(self) -> str:
        return PurePosixPath(self.name).stem

    @property
    def manifest_name(self) -> str:
        """The file name of its manifest in OUTPUT: `manifest-<stem>.csv`."""
        return f"manifest-{self.stem}.csv"


def _key(entry: VideoEntry) -> Key:
    return (entry.video_id, entry.label, entry.start, entry.end)


def _row_key(row: ManifestRow) -> Key:
    label = UNLABELLED if row.label is None else row.label
    start, end = row.extra.get("start", ""), row.extra.get("end", "")
    return (row.video_id, label, float(start) if start else None, float(end) if end else None)


def check_list_manifest(output: Location, listed: ListedInput) -> None:
    """UsageError where OUTPUT holds the manifest of another list with `listed`'s stem (module
    doc); nothing where it holds none, or this list's."""
    where = output / listed.manifest_name
    raw = where.read_optional()
    if raw is None:
        return
    try:
        old = [_row_key(r) for r in parse_manifest(raw.decode("utf-8"), where)]
    except (ValueError, UnicodeDecodeError) as e:
        raise UsageError(f"{where} is not a manifest vidload wrote ({e}); move it away") from e
    new = iter(_key(e) for e in listed.entries)
    for n, key in enumerate(old):
        if not any(key == k for k in new):
            raise UsageError(
                f"{where} holds the entries of another list named {listed.stem!r} (its entry "
                f"{n + 1}, {key[0]!r} label {key[1]}, is not among {listed.name!r}'s, in that "
                f"order): the two would be merged into one manifest. Give this list another "
                f"name, convert it into another OUTPUT, or delete {where.name} if it is stale"
            )


def list_rows(listed: ListedInput, rows: Mapping[str, ManifestRow]) -> list[ManifestRow]:
    """The list's manifest rows (module doc): each entry with its video's row, in list order;
    entries whose video has no row (not reached) left out."""
    windowed = any(e.window is not None for e in listed.entries)
    out = []
    for entry in listed.entries:
        row = rows.get(entry.video_id)
        if row is None:
            continue
        label = None if entry.label == UNLABELLED else entry.label
        extra = dict(row.extra)
        if windowed:
            extra["start"] = "" if entry.start is None else repr(entry.start)
            extra["end"] = "" if entry.end is None else repr(entry.end)
        out.append(replace(row, label=label, extra=extra))
    return out


def write_list_manifest(
    output: Location, listed: ListedInput, rows: Mapping[str, ManifestRow]
) -> tuple[int, str | None]:
    """Write the list's manifest into OUTPUT (module doc): (entries written, None), or (0,
    why not) where it could not be written (the run stands: manifest.csv holds the rows)."""
    got = list_rows(listed, rows)
    try:
        where = output / listed.manifest_name
        where.write_bytes(render_manifest(got, str(where)))
    except (VidloadError, OSError) as e:
        return 0, str(e)
    return len(got), None
