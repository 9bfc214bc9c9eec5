"""The tables bench, choose and probe print, written one way: a list of columns, each a header
and the cell it shows for a row; as Markdown, or as text with the first column left-aligned,
the others right-aligned (or those named), each as wide as its widest cell, two spaces between
columns."""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Sequence
from typing import Any

__all__ = ["Column", "column", "fmt", "table"]

#: A column: its header, and its cell for a row.
Column = tuple[str, Callable[[Any], str]]


def fmt(value: float | None, digits: int = 1, suffix: str = "") -> str:
    """A figure as the bench tables show it: thousands separated, no decimals from 100 on
    (where `digits` <= 1), "–" for None."""
    if value is None:
        return "–"
    if abs(value) >= 100 and digits <= 1:
        return f"{value:,.0f}{suffix}"
    return f"{value:,.{digits}f}{suffix}"


def column(
    header: str, *keys: str, digits: int = 1, suffix: str = "", scale: float = 1.0
) -> Column:
    """The column of `row[keys[0]][keys[1]]...` over `scale` (`fmt`: "–" where a key is
    missing or None)."""

    def cell(row: dict[str, Any]) -> str:
        value: Any = row
        for key in keys:
            value = None if value is None else value.get(key)
        return fmt(None if value is None else value / scale, digits, suffix)

    return header, cell


def table(
    columns: Sequence[Column],
    rows: Iterable[Any],
    *,
    markdown: bool = False,
    rule: bool = True,
    right: Container[int] | None = None,
) -> list[str]:
    """The lines of a table of `rows`, one cell per column: Markdown, or aligned text (with a
    rule of dashes under the header where `rule`; the columns `right` right-aligned, by
    default all but the first)."""
    lines = [[h for h, _ in columns], *([cell(r) for _, cell in columns] for r in rows)]
    if markdown:
        head, *body = ["| " + " | ".join(line) + " |" for line in lines]
        return [head, "|" + "|".join([":---"] + ["---:"] * (len(columns) - 1)) + "|", *body]
    widths = [max(len(line[i]) for line in lines) for i in range(len(columns))]
    if rule:
        lines.insert(1, ["-" * w for w in widths])
    right = range(1, len(columns)) if right is None else right
    return [
        "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(line, widths, strict=True))
        )
        for line in lines
    ]
