"""A source that does not subclass `FrameSourceBase`, adapted once, when a dataset is built.

A user's `FrameSource` is any object with `reported_frames`, `actual_frames` and `read`
(the Protocol). The dataset, read-ahead and the batch path ask every source what
`FrameSourceBase` declares; `adapt_source` wraps such an object once in an `AdaptedSource`
that answers those declarations, so that no caller probes the user's object afterwards.

What the user's class defines is used: this is the one place that looks. An optional method
of `FrameSourceBase` (`timestamps`, `missing_videos`, `prepare`, `fetch_plan`, `settle`,
`files`, `byte_ranges`, `use_containers`) that the object has (callable) is offered through
the adapter as it is, the others stay None; `root` and `store` are taken where the object has
them (not None); a `read` that takes a `geometry` keyword (or `**kwargs`) is passed the
clip's geometry, any other `read` gets full frames and the adapter applies the geometry
(`apply_geometry`). All of it is looked up once, here, and kept: a method added to the object
later is not seen.
Messages name the object's own class (`source_name`).
"""

from __future__ import annotations

import inspect

import numpy as np

from vidload.sources.base import FrameSource, FrameSourceBase, Indices
from vidload.transforms import ClipGeometry, apply_geometry, frames_mismatch

__all__ = ["OPTIONAL_METHODS", "AdaptedSource", "adapt_source"]

#: The attributes of `FrameSourceBase` the adapter takes where the object has them.
_ATTRIBUTES = ("root", "store")
#: The optional methods `FrameSourceBase` declares (None: not offered), read off its
#: declarations: every attribute it declares None but `_ATTRIBUTES` and `heads_kind`.
OPTIONAL_METHODS = tuple(
    name
    for name, value in vars(FrameSourceBase).items()
    if value is None and name not in (*_ATTRIBUTES, "heads_kind")
)


def adapt_source(source: object) -> FrameSourceBase:
    """`source` itself when it subclasses `FrameSourceBase`, else an `AdaptedSource` wrapping
    it.

    Raises:
        TypeError: `source` lacks one of `reported_frames`, `actual_frames` and `read`.
    """
    if isinstance(source, FrameSourceBase):
        return source
    if not isinstance(source, FrameSource):
        raise TypeError(
            f"source must provide reported_frames, actual_frames and read (a FrameSource), "
            f"got {type(source).__name__}"
        )
    return AdaptedSource(source)


class AdaptedSource(FrameSourceBase):
    """A `FrameSource` that does not subclass `FrameSourceBase`, seen as one (see the module
    docstring). `inner` is the object wrapped; its three calls and the optional methods it
    defines are what the adapter answers. Picklable when `inner` is."""

    def __init__(self, inner: FrameSource) -> None:
        self.inner = inner
        for name in OPTIONAL_METHODS:
            method = getattr(inner, name, None)
            if callable(method):
                setattr(self, name, method)
        for name in _ATTRIBUTES:
            value = getattr(inner, name, None)
            if value is not None:
                setattr(self, name, value)
        self._takes_geometry = _takes_geometry(inner)

    @property
    def source_name(self) -> str:
        return type(self.inner).__name__

    def __repr__(self) -> str:
        return f"AdaptedSource({self.inner!r})"

    def reported_frames(self, video_id: str) -> int | None:
        return self.inner.reported_frames(video_id)

    def actual_frames(self, video_id: str) -> int:
        return self.inner.actual_frames(video_id)

    def read(
        self, video_id: str, indices: Indices, *, geometry: ClipGeometry | None = None
    ) -> np.ndarray:
        """The wrapped `read`, given `geometry` where it takes one; else its full frames with
        `geometry` applied here (`apply_geometry`; None: as read). What is not uint8 (k, H, W,
        3) frames is returned as read, for the caller's check to name (`ClipDataset`)."""
        if geometry is None:
            return self.inner.read(video_id, indices)
        if self._takes_geometry:
            return self.inner.read(video_id, indices, geometry=geometry)  # type: ignore[call-arg]
        frames = self.inner.read(video_id, indices)
        return frames if frames_mismatch(frames) else apply_geometry(frames, geometry)


def _takes_geometry(inner: object) -> bool:
    """Whether `inner.read` accepts a `geometry` keyword (by name or `**kwargs`)."""
    try:
        params = inspect.signature(inner.read).parameters  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        return False
    return "geometry" in params or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()
    )
