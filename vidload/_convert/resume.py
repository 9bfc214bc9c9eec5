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
from collections.abc import Iterable, Mapping
from pathlib import Path

from vidload._atomic import is_disk_full, is_temporary, remove_temporary
from vidload._convert.job import Outcome
from vidload._layout import FIRST_FRAME_NAME
from vidload.errors import DiskFullError
from vidload.manifest import ManifestRow, read_manifest, write_manifest

__all__ = [
    "parse_part",
    "part_bytes",
    "previous_rows",
    "read_part",
    "read_parts",
    "remove_stale_temporaries",
    "write_manifest_rows",
]


def previous_rows(manifest_path: Path, *, overwrite: bool) -> dict[str, ManifestRow]:
    """{video id: row} of an existing manifest ({} when there is none, or with `overwrite`
    when it is unreadable); ValueError when it cannot be read and `overwrite` is False."""
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


def write_manifest_rows(path: Path, rows: Mapping[str, ManifestRow]) -> None:
    """Write `rows` as the manifest at `path`, sorted by id; a full disk raises DiskFullError."""
    try:
        write_manifest(path, [rows[k] for k in sorted(rows)])
    except OSError as e:
        if is_disk_full(e):
            raise DiskFullError(path) from e
        raise


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


def _outcome_json(outcome: Outcome) -> dict:
    return {
        "row": dataclasses.asdict(outcome.row),
        "action": outcome.action,
        "bytes_in": outcome.bytes_in,
        "frames": outcome.frames,
    }


def part_bytes(outcomes: Iterable[Outcome]) -> bytes:
    """A shard's part manifest (its outcomes so far) as the bytes of its file or object."""
    return json.dumps([_outcome_json(o) for o in outcomes], indent=0).encode()


def parse_part(entries: object) -> dict[str, Outcome]:
    """{video id: outcome} of a part manifest's parsed JSON; {} when it is not one."""
    try:
        outcomes = [
            Outcome(ManifestRow(**e["row"]), e["action"], e["bytes_in"], e["frames"])
            for e in entries  # type: ignore[attr-defined]
        ]
    except (ValueError, TypeError, KeyError):
        return {}
    return {o.row.video_id: o for o in outcomes}


def read_part(path: Path) -> dict[str, Outcome]:
    """{video id: outcome} of a part manifest; {} when there is none (or it is unreadable:
    written atomically, a part is whole or absent, so that is another run's garbage)."""
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return parse_part(entries)


def read_parts(folder: Path) -> dict[str, Outcome]:
    """The outcomes of every part manifest in `folder` ({} when it does not exist)."""
    outcomes: dict[str, Outcome] = {}
    if not folder.is_dir():
        return outcomes
    for path in sorted(folder.glob("part-*.json")):
        outcomes.update(read_part(path))
    return outcomes
