"""The frontier of a set of storages, and the smallest storage that meets a need.

Every row is judged on three things at once: its size (bytes per video, smaller is better), its
speed (clips/s per core, larger is better) and its quality (mean PSNR against the original
decode, larger is better; the originals are exact, better than any PSNR). Row A *beats* row B
when A is no worse than B in all three and strictly better in at least one. The frontier is the
rows no other row beats: for each of them, anything better in one respect is worse in another.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Measured", "Pick", "beats", "frontier", "pick_storage"]


class Measured(Protocol):
    """What the frontier looks at in a row."""

    @property
    def storage(self) -> str: ...
    @property
    def bytes_per_video(self) -> float: ...
    @property
    def clips_per_s_per_core(self) -> float: ...
    @property
    def psnr_db(self) -> float | None: ...


def _quality(row: Measured) -> float:
    """PSNR in dB; the originals (psnr_db None: exact) rank above any PSNR."""
    return math.inf if row.psnr_db is None else row.psnr_db


def _merits(row: Measured) -> tuple[float, float, float]:
    """(smallness, speed, quality): the three things a row is judged on, larger better in each."""
    return -row.bytes_per_video, row.clips_per_s_per_core, _quality(row)


def beats(a: Measured, b: Measured) -> bool:
    """True when `a` is no worse than `b` in size, speed and quality, and better in one."""
    merits_a, merits_b = _merits(a), _merits(b)
    return merits_a != merits_b and all(x >= y for x, y in zip(merits_a, merits_b, strict=True))


def frontier(rows: Sequence[Measured]) -> list[bool]:
    """For each row, whether no other row beats it (`beats`). Rows equal in all three are
    all on the frontier (neither beats the other)."""
    return [not any(beats(o, r) for j, o in enumerate(rows) if j != i) for i, r in enumerate(rows)]


@dataclass(frozen=True)
class Pick:
    """The answer to "which storage gives `need` clips/s per GPU from `cores` cores per GPU".

    Attributes:
        need, cores, min_psnr: the question (min_psnr None: any quality).
        storage: the smallest storage that meets it (ties: the faster, then the better
            quality), or None.
        reason: one sentence: why this one, or why none does.
    """

    need: float
    cores: int
    min_psnr: float | None
    storage: str | None
    reason: str


def pick_storage(
    rows: Sequence[Measured], *, need: float, cores: int, min_psnr: float | None = None
) -> Pick:
    """The smallest row whose `clips_per_s_per_core * cores >= need` (and, with `min_psnr`,
    whose PSNR is at least that; the originals are exact, so always good enough).

    Raises:
        ValueError: need <= 0, cores < 1, or no rows.
    """
    if not need > 0:
        raise ValueError(f"need ({need}) must be > 0 clips/s")
    if cores < 1:
        raise ValueError(f"cores ({cores}) must be >= 1")
    if not rows:
        raise ValueError("no rows to choose from")
    answer = functools.partial(Pick, need, cores, min_psnr)  # the question, then the answer
    good = [r for r in rows if min_psnr is None or _quality(r) >= min_psnr]
    fast = [r for r in good if r.clips_per_s_per_core * cores >= need]
    if fast:
        best = max(fast, key=_merits)  # the smallest; of equal size the faster, then the better
        rate = best.clips_per_s_per_core * cores
        return answer(
            best.storage,
            f"{best.storage} is the smallest storage that meets {need:g} clips/s per GPU: "
            f"{best.clips_per_s_per_core:.1f} clips/s per core x {cores} cores = {rate:.1f}",
        )
    if not good:
        top = max(rows, key=_quality)
        return answer(
            None,
            f"no storage reaches {min_psnr:g} dB (the best measured: {top.storage}, "
            f"{_quality(top):.1f} dB)",
        )
    top = max(good, key=lambda r: r.clips_per_s_per_core)
    rate = top.clips_per_s_per_core
    more = f"; it would need {math.ceil(need / rate)} cores per GPU" if rate > 0 else ""
    quality = f" at >= {min_psnr:g} dB" if min_psnr is not None else ""
    return answer(
        None,
        f"no storage{quality} meets {need:g} clips/s per GPU on {cores} cores: the fastest, "
        f"{top.storage}, gives {rate:.1f} clips/s per core x {cores} = {rate * cores:.1f}{more}",
    )
