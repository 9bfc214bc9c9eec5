"""What a conversion stores: its options, checked once (for `convert` and
`vidload.shards.plan_convert` alike) and recorded in the output folder (`OPTIONS_NAME`), so that
a resumed run stores every video the same way.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from vidload._atomic import write_bytes_atomic
from vidload._checks import check_choice, check_int, check_optional_int
from vidload._layout import OPTIONS_NAME, STORAGES, Storage
from vidload.errors import UsageError
from vidload.sources.jpeg_decode import SUBSAMPLINGS, Subsampling

__all__ = ["DEFAULT_QUALITY", "DEFAULT_SUBSAMPLING", "ConvertOptions"]

#: The defaults of `convert`, `plan_convert` and `vidload convert` (the docs'
#: "JPEG quality and subsampling" benchmark says why).
DEFAULT_QUALITY = 95
DEFAULT_SUBSAMPLING: Subsampling = "420"


@dataclass(frozen=True)
class ConvertOptions:
    """How every video of a run is stored (`vidload.convert.convert`'s arguments of the same
    names); build it with `checked`.

    Attributes:
        to: the container format.
        short_side: the frames' shorter side after resizing; None keeps the size.
        quality: JPEG quality in [1, 100] of the frames encoded.
        subsampling: chroma subsampling of the frames encoded.
    """

    to: Storage
    short_side: int | None = None
    quality: int = DEFAULT_QUALITY
    subsampling: Subsampling = DEFAULT_SUBSAMPLING

    @classmethod
    def checked(
        cls, *, to: object, short_side: object, quality: object, subsampling: object
    ) -> ConvertOptions:
        """The options, checked (`vidload._checks`: NumPy integers are ints, bools are not;
        stored as plain Python values, which go into the JSON options file).

        Raises:
            TypeError: short_side or quality is not an int.
            ValueError: a value out of its range or not one of its choices.
        """
        check_choice("to", to, STORAGES)
        side = check_optional_int("short_side", short_side, minimum=1)
        q = check_int("quality", quality)
        if not 1 <= q <= 100:
            raise ValueError(f"quality ({q}) must be in [1, 100]")
        check_choice("subsampling", subsampling, SUBSAMPLINGS)
        return cls(to, side, q, subsampling)  # type: ignore[arg-type]  # checked above

    def record(self, out: Path, *, overwrite: bool) -> None:
        """Refuse to resume into `out` converted with other options (UsageError, unless
        `overwrite`); else record these ones in `out/OPTIONS_NAME`. An options file without
        `subsampling` (written before it existed) means "420"."""
        path = out / OPTIONS_NAME
        options = dataclasses.asdict(self)
        if path.exists() and not overwrite:
            try:
                old = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as e:
                raise ValueError(f"{path}: unreadable ({e}); remove it or pass overwrite") from e
            if isinstance(old, dict):
                old = {"subsampling": "420", **old}
            if old != options:
                changed = (
                    [k for k in options if old.get(k) != options[k]]
                    if isinstance(old, dict)
                    else []
                )
                differ = (
                    ", ".join(
                        f"--{k.replace('_', '-')} {old.get(k)} before, {options[k]} now"
                        for k in changed
                    )
                    or f"recorded {old}"
                )
                raise UsageError(
                    f"OUTPUT {str(out)!r} was converted with other options ({differ}; recorded "
                    f"in {path.name}): use the same options to resume, or --overwrite "
                    f"(overwrite=True) to convert everything again"
                )
            return
        write_bytes_atomic(path, (json.dumps(options) + "\n").encode())
