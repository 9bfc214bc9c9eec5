"""A video's display orientation: the display matrix (rotation by 90/180/270 and flips).

Phones store frames in the sensor's orientation and record how to show them in a display
matrix (MP4/MOV `tkhd`, Matroska projection, H.264/HEVC display-orientation SEI). FFmpeg's
decoder attaches it to every decoded frame as DISPLAYMATRIX side data; players, decord and the
`ffmpeg` command line apply it. `Orientation` is that matrix reduced to what a right-angle
matrix can do to a pixel grid: transpose, then reverse rows and/or columns.

FFmpeg's matrix maps a stored pixel (p, q) (column, row, y down) to the displayed one:
`p' = a p + c q (+ x)`, `q' = b p + d q (+ y)` with a, b, c, d = m[0], m[1], m[3], m[4] in 16.16
fixed point. For a right angle either b = c = 0 (no transpose; a < 0 mirrors columns, d < 0
mirrors rows) or a = d = 0 (transpose; b < 0 mirrors the rows of the transposed image, c < 0
its columns). This gives what FFmpeg's own autorotation gives for all eight orientations
(`transpose=cclock` for 90 degrees counter-clockwise, `hflip` for a mirror, ...).
"""

from __future__ import annotations

from dataclasses import dataclass

import av
import numpy as np
from av.sidedata.sidedata import Type as SideDataType

__all__ = ["IDENTITY", "Orientation", "frame_orientation", "parse_orientation"]

_DISPLAYMATRIX = SideDataType.DISPLAYMATRIX


@dataclass(frozen=True)
class Orientation:
    """How stored pixels map to displayed ones: transpose, then reverse rows / columns.

    Attributes:
        transpose: rows and columns swap (a 90 or 270 degree rotation, possibly mirrored).
        flip_rows: reverse the row order (after the transpose).
        flip_cols: reverse the column order (after the transpose).
    """

    transpose: bool = False
    flip_rows: bool = False
    flip_cols: bool = False

    def view(self, rgb: np.ndarray) -> np.ndarray:
        """uint8 (H, W, 3) stored pixels -> (H', W', 3) displayed pixels ((W, H, 3) when
        transposed), as a numpy view (no copy; not contiguous unless the identity)."""
        out = rgb.transpose(1, 0, 2) if self.transpose else rgb
        if self.flip_rows:
            out = out[::-1]
        if self.flip_cols:
            out = out[:, ::-1]
        return out

    def apply(self, rgb: np.ndarray) -> np.ndarray:
        """`view(rgb)` copied C-contiguous; the identity returns `rgb` itself."""
        return rgb if self == IDENTITY else np.ascontiguousarray(self.view(rgb))

    def displayed_size(self, height: int, width: int) -> tuple[int, int]:
        """(height, width) of a displayed frame whose stored size is height x width."""
        return (width, height) if self.transpose else (height, width)

    def __str__(self) -> str:
        """The manifest's `rotation` cell: "0", "90", "180", "270", with "+hflip" when
        mirrored ("90+hflip")."""
        deg, hflip = _TO_NAME[self]
        return f"{deg}+hflip" if hflip else str(deg)


IDENTITY = Orientation()

# rotate counter-clockwise by deg, then mirror columns if hflip -> (transpose, rows, cols)
_TO_NAME: dict[Orientation, tuple[int, bool]] = {}
for _deg, _t, _r, _c in [(0, 0, 0, 0), (90, 1, 1, 0), (180, 0, 1, 1), (270, 1, 0, 1)]:
    _TO_NAME[Orientation(bool(_t), bool(_r), bool(_c))] = (_deg, False)
    _TO_NAME[Orientation(bool(_t), bool(_r), not _c)] = (_deg, True)
_FROM_NAME = {str(o): o for o in _TO_NAME}


def parse_orientation(text: str) -> Orientation:
    """The Orientation of a manifest `rotation` cell ("90", "0+hflip", ...)."""
    try:
        return _FROM_NAME[text]
    except KeyError:
        raise ValueError(
            f"rotation ({text!r}) must be one of {sorted(_FROM_NAME, key=len)}"
        ) from None


def frame_orientation(frame: av.VideoFrame) -> Orientation | None:
    """The Orientation of a decoded frame's DISPLAYMATRIX side data: IDENTITY when it has
    none, None when the 3x3 matrix (9 int32, FFmpeg's layout) is not a right-angle rotation or
    mirror (an arbitrary angle, a shear)."""
    # PyAV's stub types side_data as a bare Mapping (and its __getitem__ as a TypedDict's)
    side = frame.side_data.get(_DISPLAYMATRIX)  # type: ignore[call-overload]
    if side is None:
        return IDENTITY
    a, b, c, d = np.frombuffer(bytes(side), np.int32, count=9)[[0, 1, 3, 4]].tolist()
    if b == 0 and c == 0 and a != 0 and d != 0:
        return Orientation(False, d < 0, a < 0)
    if a == 0 and d == 0 and b != 0 and c != 0:
        return Orientation(True, b < 0, c < 0)
    return None
