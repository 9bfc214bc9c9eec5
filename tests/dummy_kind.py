"""A dummy storage kind for `tests/test_kinds.py`: a trivial reader and writer (an npy by
another suffix), registered in the table by the test and nowhere else."""

from __future__ import annotations

from vidload.sources.npy import NpySource, write_npy

__all__ = ["DummySource", "write_dummy"]


class DummySource(NpySource):
    """Reads `<id>.dmy`: the rows of `write_dummy`."""

    suffix = ".dmy"


def write_dummy(path, frames) -> int:
    """Write encoded JPEG frames as one `.dmy` file; the number of frames written."""
    return write_npy(path, frames)
