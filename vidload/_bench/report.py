"""The benchmark's outputs: text or Markdown tables, and a PNG bar chart (matplotlib optional)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vidload._measure.plots import check_plotting, pyplot
from vidload._measure.tables import align

__all__ = ["check_plotting", "plot", "render", "render_table"]

Result = dict[str, Any]


#: What each kind of timing counts, for the table heading and the chart.
CLOCKS = {
    "own": "this process's own time: wall-clock minus the waits for a CPU held by another "
    "process (run-queue delay)",
    "wall": "wall-clock time",
}


def clock_of(result: Result) -> str:
    """ "own" or "wall": the clock of the one-process figures."""
    kinds = {r.get("clock", "wall") for r in result["loaders"].values()}
    return "own" if kinds == {"own"} else "wall"


def _fmt(value: float | None, digits: int = 1, suffix: str = "") -> str:
    if value is None:
        return "–"
    if abs(value) >= 100 and digits <= 1:
        return f"{value:,.0f}{suffix}"
    return f"{value:,.{digits}f}{suffix}"


def render_table(headers: list[str], rows: list[list[str]], *, markdown: bool) -> str:
    """Columns: the first left-aligned, the others right-aligned."""
    if markdown:
        lines = ["| " + " | ".join(headers) + " |"]
        lines.append("|" + "|".join([":---"] + ["---:"] * (len(headers) - 1)) + "|")
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    return "\n".join(align([headers, ["-" * w for w in widths], *rows]))


def speed_table(result: Result, *, markdown: bool) -> str:
    cfg = result["config"]
    dl = result.get("dataloader_settings")
    headers = ["loader", "clips/s", "frames/s", "× in-memory", "× PIL"]
    if dl:
        w = dl["workers"]
        headers += [f"DataLoader clips/s ({w} worker{'s' * (w != 1)})", "DataLoader ÷ 1 process"]
    if cfg["cold"]:
        headers += ["cold ÷ warm epoch"]
    rows = []
    for name, r in result["loaders"].items():
        row = [
            name if r["kind"] == "source" else f"{name} (ref)",
            _fmt(r["clips_per_s"]),
            _fmt(r["frames_per_s"], 0),
            _fmt(r.get("vs_memory"), 2, "×"),
            _fmt(r.get("vs_pil"), 2, "×"),
        ]
        if dl:
            d = r.get("dataloader")
            row += [_fmt(d and d["clips_per_s"]), _fmt(d and d["vs_one_process"], 2, "×")]
        if cfg["cold"]:
            c = r.get("cold")
            row += [_fmt(c and c["ratio"], 2, "×")]
        rows.append(row)
    return render_table(headers, rows, markdown=markdown)


def split_table(result: Result, *, markdown: bool) -> str:
    headers = [
        "loader",
        "total ms/clip",
        "read ms",
        "decode ms",
        "rest ms",
        "KiB read/clip",
        "MiB on disk/video",
        "× video size",
    ]
    rows = []
    for name, r in result["loaders"].items():
        s = r.get("split_ms_per_clip") or {}
        disk = r.get("disk_bytes_per_video")
        rows.append(
            [
                name if r["kind"] == "source" else f"{name} (ref)",
                _fmt(1000 / r["clips_per_s"] if r["clips_per_s"] else None, 2),
                _fmt(s.get("read"), 2),
                _fmt(s.get("decode"), 2),
                _fmt(s.get("rest"), 2),
                _fmt(r["bytes_read_per_clip"] / 1024 if r.get("bytes_read_per_clip") else None),
                _fmt(disk / 2**20 if disk else None, 2),
                _fmt(r.get("disk_vs_video"), 1, "×"),
            ]
        )
    return render_table(headers, rows, markdown=markdown)


def geometry_table(g: dict, *, markdown: bool) -> str:
    """One geometry set: per source, ms per clip three ways, and the fused path's ratios."""
    headers = [
        "source",
        "fused ms/clip",
        "full + apply_geometry ms",
        "full + INTER_AREA ms",
        "× full + INTER_AREA",
        "× full + apply_geometry",
        "mean |diff| vs INTER_AREA",
    ]
    rows = [
        [
            name,
            _fmt(row["fused_ms_per_clip"], 2),
            _fmt(row["full_apply_ms_per_clip"], 2),
            _fmt(row["full_resize_ms_per_clip"], 2),
            _fmt(row["speedup"], 2),
            _fmt(row["speedup_vs_apply"], 2),
            _fmt(row["mean_abs_diff"], 2),
        ]
        for name, row in g["rows"].items()
    ]
    return render_table(headers, rows, markdown=markdown)


def render(result: Result, *, markdown: bool = False) -> str:
    """The full report: a heading line, the speed table, the split table and the notes."""
    cfg = result["config"]
    data = result["data"]
    head = (
        f"vidload bench: {data['num_videos']} video{'s' if data['num_videos'] != 1 else ''} "
        f"({data['description']}), "
        f"{cfg['clips']} clips of {cfg['frames']} frames (TSN segments, seed {cfg['seed']}), "
        f"batches of {cfg['batch_size']}; best of {cfg['repeats']} interleaved repeats; "
        f"{result['machine']['cpus']} CPUs"
    )
    parts = []
    if markdown:
        parts.append(f"**{head}**")
    else:
        parts.append(head)
    parts.append("")
    clock = clock_of(result)
    dl_clock = (
        "; DataLoader columns: wall-clock time, so load from other processes lowers them"
        if result.get("dataloader_settings")
        else ""
    )
    parts.append(
        "Speed, one process, warm page cache (× columns: this row's clips/s over the "
        f"reference's). One-process columns: {CLOCKS[clock]}{dl_clock}:"
    )
    parts.append("")
    parts.append(speed_table(result, markdown=markdown))
    parts.append("")
    parts.append(
        "Where the time goes (one process, warm; each clip's parts timed in the same pass): "
        "read = the bytes only, decode = the same bytes already in memory, "
        "rest = total - read - decode (container, tensors, collate):"
    )
    parts.append("")
    parts.append(split_table(result, markdown=markdown))
    red = result.get("reduced_decode")
    if red:
        parts.append("")
        parts.append(
            f"Reduced-size decode to {red['size'][1]}x{red['size'][0]} (JPEG DCT scaling) vs full "
            f"decode + cv2.resize(INTER_AREA): {_fmt(red['dct_frames_per_s'], 0)} vs "
            f"{_fmt(red['full_resize_frames_per_s'], 0)} frames/s = {red['speedup']:.2f}×"
        )
    for g in result.get("geometry") or []:
        parts.append("")
        parts.append(
            f"Fused resize, {g['label']} ({g['input'][0]}x{g['input'][1]} -> "
            f"{g['output'][0]}x{g['output'][1]}), "
            f"{g['clips']} clips: read(..., geometry=) vs a full-size read, then "
            "apply_geometry (the same filters) or cv2.resize(INTER_AREA):"
        )
        parts.append("")
        parts.append(geometry_table(g, markdown=markdown))
    notes = result.get("notes", [])
    if notes:
        parts.append("")
        parts += [("- " if markdown else "* ") + n for n in notes]
    return "\n".join(parts)


def plot(result: Result, path: Path) -> None:
    """Horizontal bars of clips/s per loader: one process, and the DataLoader when measured."""
    plt = pyplot()
    names = list(result["loaders"])
    one = [result["loaders"][n]["clips_per_s"] or 0 for n in names]
    dl = [(result["loaders"][n].get("dataloader") or {}).get("clips_per_s") or 0 for n in names]
    fig, ax = plt.subplots(figsize=(8, 0.55 * len(names) + 2.0))
    ys = range(len(names))
    own = clock_of(result) == "own"
    one_label = "one process (own time: waits for a CPU left out)" if own else "one process (wall)"
    bars = ax.barh([y - 0.2 for y in ys], one, height=0.4, label=one_label)
    ax.bar_label(bars, fmt="%.0f", padding=2, fontsize=7)
    if any(dl):
        w = (result.get("dataloader_settings") or {}).get("workers")
        label = f"DataLoader, {w} worker{'s' * (w != 1)} (wall clock)"
        bars = ax.barh([y + 0.2 for y in ys], dl, height=0.4, label=label)
        ax.bar_label(bars, labels=[f"{v:.0f}" if v else "" for v in dl], padding=2, fontsize=7)
    ax.set_yticks(list(ys))
    ax.set_yticklabels(
        [n if result["loaders"][n]["kind"] == "source" else f"{n} (ref)" for n in names]
    )
    ax.invert_yaxis()
    ax.margins(x=0.12)
    ax.set_xlabel(f"clips/s ({result['config']['frames']} frames each, higher is better)")
    ax.set_title(f"vidload bench: {result['data']['description']}", fontsize=9)
    ax.legend(loc="lower right")
    if own and any(dl):
        fig.text(
            0.01,
            0.01,
            "One-process bars leave out waits for a CPU; DataLoader bars are wall-clock, so on "
            "a busy machine they come out lower than the CPUs they used would give.",
            fontsize=6.5,
        )
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
