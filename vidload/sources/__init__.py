"""Frame sources: one interface (FrameSource), five storages.

`from vidload.sources import VideoSource, JpegSource, Hdf5Source, NpySource, LmdbSource,
FrameSource, FrameSourceBase, VideoInfo`: imported on first use (see vidload._lazy), so `import
vidload.sources.npy` does not import PyAV or h5py (`LmdbSource` needs `pip install
'vidload[lmdb]'`). `FrameSourceBase` declares what a dataset may ask of a source beyond
`FrameSource`'s three calls (the base class of the five).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vidload._lazy import lazy_exports

_LAZY = {
    "FrameSource": "vidload.sources.base",
    "FrameSourceBase": "vidload.sources.base",
    "Hdf5Source": "vidload.sources.hdf5",
    "JpegSource": "vidload.sources.jpeg",
    "LmdbSource": "vidload.sources.lmdb",
    "NpySource": "vidload.sources.npy",
    "VideoInfo": "vidload.sources.video",
    "VideoSource": "vidload.sources.video",
}

__all__ = [
    "FrameSource",
    "FrameSourceBase",
    "Hdf5Source",
    "JpegSource",
    "LmdbSource",
    "NpySource",
    "VideoInfo",
    "VideoSource",
]

if TYPE_CHECKING:  # the real imports, for type checkers and IDEs
    from vidload.sources.base import FrameSource, FrameSourceBase
    from vidload.sources.hdf5 import Hdf5Source
    from vidload.sources.jpeg import JpegSource
    from vidload.sources.lmdb import LmdbSource
    from vidload.sources.npy import NpySource
    from vidload.sources.video import VideoInfo, VideoSource

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
