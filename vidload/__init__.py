"""vidload: fast, frame-exact video clip loading for PyTorch."""

from vidload.errors import FrameCountError, VideoReadError, VidloadError
from vidload.sources.base import FrameSource

__all__ = [
    "FrameCountError",
    "FrameSource",
    "VideoReadError",
    "VidloadError",
]

__version__ = "0.1.0"
