"""The sidecar of heads a conversion writes beside its manifest (`vidload.sources._heads`).

When `vidload convert --to hdf5`, `--to npy`, `--to video` or `--to jpeg` has written its
manifest, it records every container's head (HDF5's frame table, npy's header, a video's
persisted frame index, a frame folder's count of files named as convert names them) with a
check of its bytes in one file, `manifest-heads.npz`, so that a reader in a bucket plans a
batch of containers it never opened in one round of requests (issue 23). The containers
are opened as a reader opens them, by the names the manifest records (its `container`
column, which keys the sidecar: `vidload._convert.output.Output.previous`), local or in the
bucket; one that does not open is left out (its reader opens it, as without a sidecar).
Writing it is best effort: the data is complete without it, so a failure warns and the
conversion stands.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

from vidload._kinds import get_kind
from vidload._storage import Location
from vidload.errors import VidloadError
from vidload.manifest import ManifestRow

__all__ = ["write_output_heads"]


def write_output_heads(to: str, root: Location, rows: Mapping[str, ManifestRow]) -> int:
    """Write the sidecar for the containers of `rows` (every video but the failed ones) in
    the convert output `root` (`vidload._convert.output.Output.location`); the number
    recorded (0 for a kind whose source keeps no heads; a video's is its persisted frame
    index, which tells its header's and every packet's byte ranges; a frame folder's, its
    frame count: the files' names then need no listing)."""
    kind = get_kind(to)
    if kind.heads_kind is None:
        return 0
    from vidload.sources._heads import write_heads

    kept = {vid: row for vid, row in rows.items() if row.status != "failed"}
    names = {vid: row.container for vid, row in kept.items() if row.container is not None}
    try:
        source = kind.source(root.url, storage_options=root.storage_options)
        if source.use_containers is not None:  # declared by `FrameSourceBase`
            source.use_containers(names)
        return write_heads(source, list(kept))
    except (VidloadError, OSError) as e:
        warnings.warn(
            f"{root}: the sidecar of heads was not written ({e}); readers in a bucket open "
            f"each container first (one more round per batch of new containers)",
            stacklevel=2,
        )
        return 0
