"""What a conversion resumes from: the rows of `manifest.csv`, the shards' part manifests of a
killed run, and the temporaries killed writers left (`vidload._atomic.is_temporary`).

Containers are renamed into place only once complete, so a container at its final path is whole;
what a run recorded is in `manifest.csv` (merged by the driver) and, while it runs, in one part
manifest per shard (`PARTS_DIR/part-<index>-<digest>.json`, rewritten atomically after each
video), so a retried shard, or the next run, knows which videos finished.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable
from pathlib import Path

from vidload._atomic import is_temporary, remove_temporary
from vidload._convert.job import Outcome
from vidload._layout import FIRST_FRAME_NAME
from vidload._storage import Location
from vidload.errors import VideoReadError
from vidload.manifest import ManifestRow, read_manifest

__all__ = [
    "part_bytes",
    "previous_rows",
    "read_part",
    "read_parts",
    "remove_stale_temporaries",
]


def previous_rows(manifest: Location, *, overwrite: bool) -> dict[str, ManifestRow]:
    """{video id: row} of an existing manifest ({} when there is none, or with `overwrite`
    when it is unreadable); ValueError when it cannot be read and `overwrite` is False."""
    try:
        rows = read_manifest(manifest)
    except VideoReadError as e:
        if e.reason != "not found":
            raise
        return {}
    except ValueError as e:
        if overwrite:
            return {}
        raise ValueError(
            f"{manifest} cannot be resumed from ({e}); remove it or pass overwrite"
        ) from e
    return {r.video_id: r for r in rows}


def remove_stale_temporaries(out: Path) -> None:
    """Delete what killed runs or tasks left in `out`: every temporary name of a vidload writer.
    Only the driver calls this, holding OUTPUT's lock: no live run has temporaries here (a
    duplicate of a task that already finished is the one exception; see `vidload.shards`)."""
    for dirpath, dirnames, filenames in os.walk(out):
        for name in [*dirnames, *filenames]:
            if is_temporary(name):
                remove_temporary(os.path.join(dirpath, name))
        # frame folders hold only frames: no need to look inside them
        dirnames[:] = [
            d
            for d in dirnames
            if not is_temporary(d) and not Path(dirpath, d, FIRST_FRAME_NAME).exists()
        ]


def part_bytes(outcomes: Iterable[Outcome]) -> bytes:
    """A shard's part manifest (its outcomes so far) as the bytes of its file or object."""
    return json.dumps([dataclasses.asdict(o) for o in outcomes], indent=0).encode()


def read_part(part: Location) -> dict[str, Outcome]:
    """{video id: outcome} of a part manifest; {} where there is none, or it is not one
    (written whole or not at all: atomically on a disk, one PUT in a bucket, so a part that
    cannot be read is another run's garbage)."""
    try:
        entries = json.loads(part.read_bytes())
        outcomes = [
            Outcome(ManifestRow(**e["row"]), e["action"], e["bytes_in"], e["frames"])
            for e in entries
        ]
    except (VideoReadError, ValueError, TypeError, KeyError):
        return {}
    return {o.row.video_id: o for o in outcomes}


def read_parts(folder: Location) -> dict[str, Outcome] | None:
    """The outcomes of every part manifest in `folder` (the parts folder, `read_part`), None
    when it holds none."""
    try:
        names = folder.walk_files()
    except VideoReadError as e:
        if e.reason in ("not found", "folder not found"):
            return None
        raise
    names = sorted(n for n in names if n.startswith("part-") and n.endswith(".json"))
    if not names:
        return None
    outcomes: dict[str, Outcome] = {}
    for name in names:
        outcomes.update(read_part(folder / name))
    return outcomes
