"""The manifest names every container: the `container` column `vidload convert` fills.

Each video converted, or found done by a rerun, gets its container's name relative to OUTPUT
(`vidload._layout.container_name`: the id's stem, or the full id where two inputs share a stem,
then the kind's suffix) in its manifest row; a failed one none. That column is the one list of
names a reader of the output takes (`vidload._layout.ContainerNames`) and the heads sidecar is
keyed by (`vidload.sources._heads`). A rerun into an output written before the column fills it
in without converting anything: the videos of this run from the plan, the other rows on record
(an earlier run's list) from what is there (`Output.exists`, a stat or the plan's one listing).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from vidload._convert.job import Outcome
from vidload._convert.output import Output
from vidload._kinds import get_kind
from vidload.manifest import ManifestRow

__all__ = ["name_outcomes", "name_previous", "named"]


def named(row: ManifestRow, name: str | None) -> ManifestRow:
    """`row` naming its container `name`; a failed row names none (it has no container)."""
    name = None if row.status == "failed" else name
    return row if row.container == name else replace(row, container=name)


def name_outcomes(outcomes: Mapping[str, Outcome], names: Mapping[str, str]) -> dict[str, Outcome]:
    """`outcomes` whose rows name their containers (`names`: by video id, from the plan)."""
    out = {}
    for vid, o in outcomes.items():
        row = named(o.row, names.get(vid, o.row.container))
        out[vid] = o if row is o.row else replace(o, row=row)
    return out


def name_previous(
    previous: Mapping[str, ManifestRow], planned: Iterable[str], output: Output, to: str
) -> dict[str, ManifestRow]:
    """The rows on record, those outside this run (not in `planned`) that name no container
    given the name of the one there (the stem's, else the full id's), asked of `output`
    (`Output.exists`); a row whose container is not there names none."""
    skip = set(planned)
    out = dict(previous)
    for vid, row in previous.items():
        if vid in skip or row.container is not None or row.status not in ("ok", "mismatch"):
            continue
        for keep in (False, True):
            name = get_kind(to).container_name(vid, keep_extension=keep)
            if output.exists(name, to):
                out[vid] = named(row, name)
                break
    return out
