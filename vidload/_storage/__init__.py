"""One way into storage: a path a user gives, local or a URL, as what a reader reads.

`Location(target, storage_options)` names one file or folder: a `LocalLocation` for a local
path (or `file://`), read by `os.open`/`os.pread` (the fast path the sources measured), or a
`RemoteLocation` for a URL (`s3://`, `gs://`, `http(s)://`, any scheme fsspec knows), read by
byte ranges through fsspec. The two implement one interface (docs/development.md, "Storage"),
so a caller never asks which it holds. The parts, one idea each:

- `location`: the interface, and the choice of implementation;
- `local`, `remote`: the two implementations;
- `filesystems`: URLs and the fsspec filesystem per process and options (fork-safe; a missing
  backend names the extra to install);
- `objectstore`: S3 reads through obstore where installed (`vidload[s3]`), in DataLoader
  workers;
- `faults`: missing / denied / transient, bounded retries, messages without credentials;
- `ranges`: the one range-coalescing function;
- `batch`: many locations in one concurrent round (`fetch`: a batch's clips);
- `cache`: `RangeFile`, `LocalCache`;
- `roots`: `SourceRoot`, a source's root, written once against `Location`: what a source asks of
  storage, so that it never asks which kind it holds.

Nothing here imports fsspec until a URL is used: `import vidload` loads no fsspec backend.
"""

from __future__ import annotations

from vidload._storage import local as _local  # noqa: F401 - registers LocalLocation
from vidload._storage import remote as _remote  # noqa: F401 - registers RemoteLocation
from vidload._storage.batch import fetch, put_many, read_many
from vidload._storage.cache import (
    LocalCache,
    RangeFile,
    open_prefetched,
    temporary_cache,
)
from vidload._storage.filesystems import MissingExtraError, is_url, redact_url
from vidload._storage.location import Location
from vidload._storage.ranges import COALESCE_GAP, coalesce
from vidload._storage.remote import STATS, RemoteLocation
from vidload._storage.roots import SourceRoot

__all__ = [
    "COALESCE_GAP",
    "STATS",
    "LocalCache",
    "Location",
    "MissingExtraError",
    "RangeFile",
    "RemoteLocation",
    "SourceRoot",
    "coalesce",
    "fetch",
    "is_url",
    "open_prefetched",
    "put_many",
    "read_many",
    "redact_url",
    "temporary_cache",
]
