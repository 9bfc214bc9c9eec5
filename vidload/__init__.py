"""vidload: fast, frame-exact video clip loading for PyTorch.

The top level is what a training script needs: the dataset, the frame sources, the DataLoader
helpers, `normalize`, and the errors and warnings to catch or filter. Everything else lives in
its submodule:

- `vidload.sources`: the sources again, `FrameSource`, `VideoInfo`;
- `vidload.sampling`: the clip-index functions (`segment_indices`, `sample_clip`, the
  `SamplingFn` protocol for `ClipDataset(sampling=...)`);
- `vidload.transforms`: clip geometry (`plan_geometry`, `apply_geometry`);
- `vidload.normalization`: `normalize` and the mean/std constants (`KINETICS_MEAN`, ...);
- `vidload.loader` / `vidload.prefetch`: the samplers `make_loader` builds
  (`EpochShuffleSampler`, `ShardSampler`, `ResumableDistributedSampler`, `ReadAheadSampler`),
  each of which saves and restores its position (`make_loader(..., stateful=True)`);
- `vidload.augment`: `ClipAugment`, colour augmentation of a normalised batch on its device;
- `vidload.manifest`: annotation lists and manifests (`load_videos`, `read_manifest`, ...);
- `vidload.datasets`: the official UCF101, HMDB51, Kinetics and SSv2 files as downloaded
  (`ucf101`, `hmdb51`, `kinetics`, `ssv2`);
- `vidload.convert.convert` / `vidload.probe.probe`: the library behind `vidload convert` /
  `vidload probe` (not re-exported here, where they would shadow their modules);
  `vidload.shards`: the same conversion as plan / convert shards / finish, for other engines.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import vidload._cv2  # noqa: F401  (OpenCV on one thread before any pool thread exists: fork safety)
from vidload._lazy import lazy_exports

if TYPE_CHECKING:  # the real imports, for type checkers and IDEs
    from vidload.collate import collate_clips
    from vidload.dataset import ClipDataset, FrameCountWarning, SkippedVideoWarning
    from vidload.errors import FrameCountError, VideoReadError, VidloadError
    from vidload.loader import epochs, make_loader, set_epoch
    from vidload.normalization import normalize
    from vidload.prefetch import ReadAheadWarning
    from vidload.sources import (
        FrameSource,
        Hdf5Source,
        JpegSource,
        LmdbSource,
        NpySource,
        VideoSource,
    )


# Public name -> the module that defines it, imported on first use (see vidload._lazy: `import
# vidload.convert`, `vidload.probe` or a source does not import torch).
_LAZY = {
    "ClipDataset": "vidload.dataset",
    "collate_clips": "vidload.collate",
    "FrameCountWarning": "vidload.dataset",
    "SkippedVideoWarning": "vidload.dataset",
    "FrameCountError": "vidload.errors",
    "VideoReadError": "vidload.errors",
    "VidloadError": "vidload.errors",
    "epochs": "vidload.loader",
    "make_loader": "vidload.loader",
    "set_epoch": "vidload.loader",
    "normalize": "vidload.normalization",
    "ReadAheadWarning": "vidload.prefetch",
    # the sources, through their own namespace (which imports each one's module on first use)
    **dict.fromkeys(
        ("FrameSource", "Hdf5Source", "JpegSource", "LmdbSource", "NpySource", "VideoSource"),
        "vidload.sources",
    ),
}

__all__ = [
    "ClipDataset",
    "FrameCountError",
    "FrameCountWarning",
    "FrameSource",
    "Hdf5Source",
    "JpegSource",
    "LmdbSource",
    "NpySource",
    "ReadAheadWarning",
    "SkippedVideoWarning",
    "VideoReadError",
    "VideoSource",
    "VidloadError",
    "collate_clips",
    "epochs",
    "make_loader",
    "normalize",
    "set_epoch",
]

__version__ = "0.1.0"

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
