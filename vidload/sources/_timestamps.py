"""Frame timestamps of a stored container: a sidecar file beside it, written by `vidload convert`.

`vidload convert` stores each video's frame timestamps (float64 seconds, one per stored frame:
the decoder's presentation times, so variable-frame-rate video keeps its timing) next to the
container, in one format for all three: `<container>.timestamps` (`x1.h5.timestamps`,
`x1.npy.timestamps`, and `x1.timestamps` beside the JPEG folder `x1/`), a plain `.npy`-format
array that `numpy.load` opens. A sidecar leaves the container formats as they are (an `.npy`
holds one array; mmaction2 reads the frame folder as it is). It is written atomically after
the container; a container without one (made by another tool or an older version) has no
stored times, and its source falls back to a frame rate (`fps`), or raises.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from vidload._atomic import write_bytes_atomic
from vidload._layout import TIMESTAMPS_SUFFIX, sidecar_path
from vidload._storage import Location
from vidload.errors import VideoReadError


def write_timestamps(container: Path, timestamps: np.ndarray | None) -> Path:
    """Write float64 (n,) `timestamps` beside `container`, atomically and durably
    (`vidload._atomic.write_bytes_atomic`); for an input with none (None: a JPEG folder)
    remove any stale file (its source then uses a frame rate)."""
    path = sidecar_path(container)
    if timestamps is None:
        path.unlink(missing_ok=True)
        return path
    ts = np.ascontiguousarray(timestamps, dtype="<f8")
    if ts.ndim != 1:
        raise ValueError(f"timestamps must be 1-D, got shape {ts.shape}")
    buf = io.BytesIO()
    np.save(buf, ts, allow_pickle=False)
    write_bytes_atomic(path, buf.getvalue())
    return path


def container_timestamps(
    container: Location, num_frames: int, fps: float | None, what: str
) -> np.ndarray:
    """float64 (num_frames,) seconds of the frames of `container` (a local file or folder, or
    an object in a bucket): its sidecar when there is one, else frame i at i / fps.

    Raises:
        VideoReadError: the sidecar is unreadable (a FIFO, say) or its length is not
            `num_frames`, or there is neither a sidecar nor an `fps` (`what` says how to
            give one).
    """
    sidecar = container.with_name(container.name + TIMESTAMPS_SUFFIX)
    data = sidecar.read_optional()
    if data is not None:
        return _parse(sidecar, io.BytesIO(data), num_frames)
    if fps is None:
        raise VideoReadError(
            container, f"no stored timestamps ({sidecar.name} is missing) and no frame rate: {what}"
        )
    return np.arange(num_frames, dtype=np.float64) / float(fps)


def _parse(path: Location, f, num_frames: int) -> np.ndarray:
    try:
        ts = np.load(f, allow_pickle=False)
    except Exception as e:  # numpy's header parser: ValueError, SyntaxError, TokenError...
        raise VideoReadError(path, f"unreadable timestamps: {type(e).__name__}: {e}") from e
    if not isinstance(ts, np.ndarray):
        raise VideoReadError(path, f"holds a {type(ts).__name__}, not one npy array")
    if ts.ndim != 1 or ts.shape[0] != num_frames or not np.issubdtype(ts.dtype, np.floating):
        raise VideoReadError(
            path, f"holds {ts.dtype} {ts.shape} timestamps for {num_frames} frames"
        )
    return ts.astype(np.float64, copy=False)
