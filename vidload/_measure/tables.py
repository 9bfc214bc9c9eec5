"""Text tables as bench and choose print them: the first column left-aligned, the others
right-aligned, each as wide as its widest cell, two spaces between columns."""

from __future__ import annotations

from collections.abc import Sequence


def align(lines: Sequence[Sequence[str]]) -> list[str]:
    """`lines` (a header and rows of cells, all the same length) as aligned text lines."""
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return [
        "  ".join(
            [line[0].ljust(widths[0])]
            + [c.rjust(w) for c, w in zip(line[1:], widths[1:], strict=True)]
        )
        for line in lines
    ]
