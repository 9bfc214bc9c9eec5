"""Batching clips: torch's default collate, with an error that says how to fix mixed sizes.

`make_loader` uses `collate_clips`; pass it to your own `DataLoader(..., collate_fn=
vidload.collate_clips)` for the same message. Videos of different resolutions (most datasets
mix 320x240 with 340x256 and portrait phone videos) give clips of different sizes, which torch's
`default_collate` refuses with a bare "stack expects each tensor to be equal size"; the fix is
one argument of `ClipDataset`, which this error names.
"""

from __future__ import annotations

from typing import Any

from torch.utils.data import default_collate

__all__ = ["collate_clips"]


def collate_clips(batch: list[Any]) -> Any:
    """`torch.utils.data.default_collate(batch)`: items `(clip, label[, info])` become
    `(clips uint8 (B, T, C, H, W), labels int64 (B,)[, info])`.

    Raises:
        ValueError: the clips have different shapes (videos of different sizes without
            `crop=`), naming the shapes and `ClipDataset`'s `crop=` / `short_side=`.
    """
    try:
        return default_collate(batch)
    except RuntimeError as e:
        if "equal size" not in str(e):
            raise
        shapes = sorted({tuple(_shape(item)) for item in batch} - {()})
        raise ValueError(
            f"clips of different sizes cannot be batched ({len(batch)} items of shapes "
            f"{shapes[:4]}{' ...' if len(shapes) > 4 else ''}): the videos differ in size. Pass "
            f"ClipDataset(..., crop=224) (with short_side=256 to scale first, or crop_scale= "
            f"for random-resized crops) so that every clip has one shape, or batch_size=1"
        ) from e


def _shape(item: Any) -> Any:
    clip = item[0] if isinstance(item, (tuple, list)) and item else item
    return getattr(clip, "shape", ())
