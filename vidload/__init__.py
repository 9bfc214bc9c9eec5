"""vidload: fast, frame-exact video clip loading for PyTorch.

The public surface is what this module re-exports; everything else is private or lives in the
submodules: `vidload.sampling`, `vidload.manifest`, `vidload.normalization`, and
`vidload.convert.convert` / `vidload.probe.probe` (the library behind `vidload convert` /
`vidload probe`; not re-exported here, where they would shadow their modules).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import vidload._cv2  # noqa: F401  (OpenCV on one thread before any pool thread exists: fork safety)

if TYPE_CHECKING:  # the real imports, for type checkers and IDEs
    from vidload.dataset import ClipDataset, FrameCountWarning, SkippedVideoWarning
    from vidload.errors import FrameCountError, VideoReadError, VidloadError
    from vidload.loader import EpochShuffleSampler, ShardSampler, epochs, make_loader, set_epoch
    from vidload.manifest import ManifestRow, VideoEntry, load_videos, read_manifest, write_manifest
    from vidload.normalization import (
        IMAGENET_MEAN,
        IMAGENET_STD,
        KINETICS_MEAN,
        KINETICS_STD,
        KINETICS_TORCHVISION_MEAN,
        KINETICS_TORCHVISION_STD,
        normalize,
    )
    from vidload.prefetch import ReadAheadSampler, ReadAheadWarning
    from vidload.sampling import Sampler, consecutive_indices, sample_clip, segment_indices
    from vidload.sources.base import FrameSource
    from vidload.sources.hdf5 import Hdf5Source
    from vidload.sources.jpeg import JpegSource
    from vidload.sources.npy import NpySource
    from vidload.sources.video import VideoInfo, VideoSource


# Public name -> the module that defines it. Imported on first use (module __getattr__, PEP 562)
# so that `import vidload.convert`, `vidload.probe` or a source does not import torch: a
# `vidload convert` worker starts in a fraction of the time (see the measurement in the
# README) and conversion runs where torch is not installed.
_LAZY = {
    "ClipDataset": "vidload.dataset",
    "FrameCountWarning": "vidload.dataset",
    "SkippedVideoWarning": "vidload.dataset",
    "FrameCountError": "vidload.errors",
    "VideoReadError": "vidload.errors",
    "VidloadError": "vidload.errors",
    "EpochShuffleSampler": "vidload.loader",
    "ShardSampler": "vidload.loader",
    "epochs": "vidload.loader",
    "make_loader": "vidload.loader",
    "set_epoch": "vidload.loader",
    "ManifestRow": "vidload.manifest",
    "VideoEntry": "vidload.manifest",
    "load_videos": "vidload.manifest",
    "read_manifest": "vidload.manifest",
    "write_manifest": "vidload.manifest",
    "IMAGENET_MEAN": "vidload.normalization",
    "IMAGENET_STD": "vidload.normalization",
    "KINETICS_MEAN": "vidload.normalization",
    "KINETICS_STD": "vidload.normalization",
    "KINETICS_TORCHVISION_MEAN": "vidload.normalization",
    "KINETICS_TORCHVISION_STD": "vidload.normalization",
    "normalize": "vidload.normalization",
    "ReadAheadSampler": "vidload.prefetch",
    "ReadAheadWarning": "vidload.prefetch",
    "Sampler": "vidload.sampling",
    "consecutive_indices": "vidload.sampling",
    "sample_clip": "vidload.sampling",
    "segment_indices": "vidload.sampling",
    "FrameSource": "vidload.sources.base",
    "Hdf5Source": "vidload.sources.hdf5",
    "JpegSource": "vidload.sources.jpeg",
    "NpySource": "vidload.sources.npy",
    "VideoInfo": "vidload.sources.video",
    "VideoSource": "vidload.sources.video",
}


__all__ = [
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "KINETICS_MEAN",
    "KINETICS_STD",
    "KINETICS_TORCHVISION_MEAN",
    "KINETICS_TORCHVISION_STD",
    "ClipDataset",
    "EpochShuffleSampler",
    "FrameCountError",
    "FrameCountWarning",
    "FrameSource",
    "Hdf5Source",
    "JpegSource",
    "ManifestRow",
    "NpySource",
    "ReadAheadSampler",
    "ReadAheadWarning",
    "Sampler",
    "ShardSampler",
    "SkippedVideoWarning",
    "VideoEntry",
    "VideoInfo",
    "VideoReadError",
    "VideoSource",
    "VidloadError",
    "consecutive_indices",
    "epochs",
    "load_videos",
    "make_loader",
    "normalize",
    "read_manifest",
    "sample_clip",
    "segment_indices",
    "set_epoch",
    "write_manifest",
]

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'vidload' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
