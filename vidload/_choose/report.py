"""The table `vidload choose` prints, and its plot.

The table's cells are the JSON rows' values formatted by `CELLS` (one definition for both, so
what the table shows is what `--json` holds); `*` marks the frontier.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from vidload._measure.plots import check_plotting, pyplot
from vidload._measure.tables import table

__all__ = ["CELLS", "check_plotting", "plot", "render"]


def _num(digits: int, unit: float = 1) -> Callable[[Any], str]:
    """The cell of a value in `unit`s (bytes: 2**20 for MiB) with `digits` decimals."""
    return lambda v: "-" if v is None else f"{v / unit:.{digits}f}"


def _psnr(v: float | None) -> str:
    return "exact" if v is None else f"{v:.1f}"


#: (column header, JSON key, format): every column of the table, from one key of a JSON row.
CELLS: tuple[tuple[str, str, Callable[[Any], str]], ...] = (
    ("storage", "storage", str),
    ("MiB/video", "bytes_per_video", _num(3, 2**20)),
    ("x_orig", "size_ratio", _num(2)),
    ("DATA_GiB", "data_bytes", _num(3, 2**30)),
    ("clips/s/core", "clips_per_s_per_core", _num(1)),
    ("cold_clips/s", "cold_clips_per_s", _num(1)),
    ("PSNR_dB", "psnr_db", _psnr),
    ("min_dB", "psnr_min_db", _num(1)),
    ("convert_s/video", "convert_cpu_s_per_video", _num(2)),
    ("DATA_core_h", "data_convert_core_h", _num(2)),
)


def table_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The table: a header, then one line per row (`*` first on frontier rows)."""
    columns = [(h, lambda r, key=key, fmt=fmt: fmt(r[key])) for h, key, fmt in CELLS]
    marks = [" "] + ["*" if r["frontier"] else " " for r in rows]
    lines = table(columns, rows, rule=False)
    return [f"{mark} {line}" for mark, line in zip(marks, lines, strict=True)]


def render(result: dict[str, Any]) -> str:
    """The report of a `ChooseResult.to_json()`: the table, the choice, what was left out and
    the notes."""
    data = result["data"]
    cfg = result["config"]
    side = f", short side {cfg['short_side']}" if cfg["short_side"] is not None else ""
    out = [
        f"storage for {data['path']} ({data['videos']} videos, {data['bytes'] / 2**30:.3f} GiB), "
        f"measured on {len(result['sample'])} of them{side}; * = frontier",
        "",
        *table_lines(result["rows"]),
        "",
    ]
    pick = result["recommendation"]
    if pick is not None:
        answer = pick["storage"] if pick["storage"] is not None else "none"
        out.append(
            f"choice for {pick['need']:g} clips/s per GPU, {pick['cores']} cores per GPU: {answer}"
        )
        out.append(f"  {pick['reason']}")
    for vid, why in sorted(result["left_out"].items()):
        out.append(f"left out {vid}: {why}")
    out += [f"note: {n}" for n in result["notes"]]
    return "\n".join(out)


def plot(result: dict[str, Any], path: Path) -> None:
    """Size against the originals (x, log) vs clips/s per core (y, log), each storage a point
    labelled by its name and PSNR, the frontier's points joined in size order."""
    plt = pyplot()
    rows = result["rows"]
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for r in rows:
        on = r["frontier"]
        ax.scatter(
            r["size_ratio"],
            r["clips_per_s_per_core"],
            s=40 if on else 20,
            color="tab:red" if on else "tab:gray",
            zorder=3,
        )
        q = "exact" if r["psnr_db"] is None else f"{r['psnr_db']:.1f} dB"
        ax.annotate(
            f"{r['storage']} ({q})",
            (r["size_ratio"], r["clips_per_s_per_core"]),
            textcoords="offset points",
            xytext=(5, 4),
            fontsize=7,
        )
    front = sorted((r for r in rows if r["frontier"]), key=lambda r: r["size_ratio"])
    ax.plot(
        [r["size_ratio"] for r in front],
        [r["clips_per_s_per_core"] for r in front],
        color="tab:red",
        lw=1,
        label="frontier (size, speed and PSNR together)",
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("bytes on disk, x the originals")
    ax.set_ylabel("clips/s per core (warm, one process, CPU time)")
    ax.set_title(f"vidload choose: {result['data']['path']}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
