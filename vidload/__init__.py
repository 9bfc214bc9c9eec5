"""vidload: fast, frame-exact video clip loading for PyTorch.

The public surface is what this module re-exports; everything else is private or lives in the
submodules: `vidload.sampling`, `vidload.manifest`, `vidload.normalization`, and
`vidload.convert.convert` / `vidload.probe.probe` (the library behind `vidload convert` /
`vidload probe`; not re-exported here, where they would shadow their modules).
"""

import vidload._cv2  # noqa: F401  (OpenCV on one thread before any pool thread exists: fork safety)
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
