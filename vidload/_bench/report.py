"""The benchmark's outputs: text or Markdown tables, and a PNG bar chart (matplotlib optional)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vidload._measure.plots import check_plotting, pyplot
from vidload._measure.tables import Column, column, fmt, table

__all__ = ["check_plotting", "plot", "render"]

Result = dict[str, Any]


#: What each kind of timing counts, for the table heading and the chart.
CLOCKS = {
    "own": "this process's own time: wall-clock minus the waits for a CPU held by another "
    "process (run-queue delay)",
    "wall": "wall-clock time",
}
#: The parts of a read in the split table (`row_pass`'s, and the rest).
_PARTS = ("read", "decode", "rest")


def clock_of(result: Result) -> str:
    """ "own" or "wall": the clock of the one-process figures."""
    kinds = {r.get("clock", "wall") for r in result["loaders"].values()}
    return "own" if kinds == {"own"} else "wall"


def _loaders(result: Result) -> list[dict[str, Any]]:
    """The rows of the loader tables: each loader's results with its "label"."""
    return [
        {"label": name if r["kind"] == "source" else f"{name} (ref)", **r}
        for name, r in result["loaders"].items()
    ]


def _label(row: dict[str, Any]) -> str:
    return row["label"]


def speed_table(result: Result, *, markdown: bool) -> str:
    columns: list[Column] = [
        ("loader", _label),
        column("clips/s", "clips_per_s"),
        column("frames/s", "frames_per_s", digits=0),
        column("× in-memory", "vs_memory", digits=2, suffix="×"),
        column("× PIL", "vs_pil", digits=2, suffix="×"),
    ]
    dl = result.get("dataloader_settings")
    if dl:
        w = dl["workers"]
        columns += [
            column(f"DataLoader clips/s ({w} worker{'s' * (w != 1)})", "dataloader", "clips_per_s"),
            column("DataLoader ÷ 1 process", "dataloader", "vs_one_process", digits=2, suffix="×"),
        ]
    if result["config"]["cold"]:
        columns.append(column("cold ÷ warm epoch", "cold", "ratio", digits=2, suffix="×"))
    return "\n".join(table(columns, _loaders(result), markdown=markdown))


def _ms_per_clip(row: dict[str, Any]) -> str:
    return fmt(1000 / row["clips_per_s"] if row["clips_per_s"] else None, 2)


def split_table(result: Result, *, markdown: bool) -> str:
    columns: list[Column] = [
        ("loader", _label),
        ("total ms/clip", _ms_per_clip),
        *(column(f"{part} ms", "split_ms_per_clip", part, digits=2) for part in _PARTS),
        column("KiB read/clip", "bytes_read_per_clip", scale=1024),
        column("MiB on disk/video", "disk_bytes_per_video", digits=2, scale=2**20),
        column("× video size", "disk_vs_video", suffix="×"),
    ]
    return "\n".join(table(columns, _loaders(result), markdown=markdown))


def geometry_table(g: dict, *, markdown: bool) -> str:
    """One geometry set: per source, ms per clip three ways, and the fused path's ratios."""
    columns: list[Column] = [
        ("source", _label),
        column("fused ms/clip", "fused_ms_per_clip", digits=2),
        column("full + apply_geometry ms", "full_apply_ms_per_clip", digits=2),
        column("full + INTER_AREA ms", "full_resize_ms_per_clip", digits=2),
        column("× full + INTER_AREA", "speedup", digits=2),
        column("× full + apply_geometry", "speedup_vs_apply", digits=2),
        column("mean |diff| vs INTER_AREA", "mean_abs_diff", digits=2),
    ]
    rows = [{"label": name, **row} for name, row in g["rows"].items()]
    return "\n".join(table(columns, rows, markdown=markdown))


def bucket_table(result: Result, *, markdown: bool) -> str:
    """`--bucket`'s table (clips/s, ratios, requests and KiB per clip)."""
    workers = result["config"]["workers"]
    columns: list[Column] = [
        ("source", lambda row: row["storage"]),
        column("local 1p", "local", "clips_per_s"),
        column("bucket 1p", "bucket", "clips_per_s"),
        column("ratio", "ratio_one_process", digits=2),
        column(f"local {workers}w", "local", "dataloader_clips_per_s"),
        column(f"bucket {workers}w", "bucket", "dataloader_clips_per_s"),
        column("ratio", "ratio_dataloader", digits=2),
        column("req/clip", "requests_per_clip"),
        column("KiB/clip", "bytes_per_clip", digits=0, scale=1024),
    ]
    rows = [{"storage": storage, **row} for storage, row in result["bucket"].items()]
    return "\n".join(table(columns, rows, markdown=markdown))


def render(result: Result, *, markdown: bool = False) -> str:
    """The full report: a heading line, the speed table, the split table and the notes (with
    `--bucket`: its table and the notes)."""
    if "bucket" in result:
        return "\n".join(
            [bucket_table(result, markdown=markdown), *(f"- {n}" for n in result["notes"])]
        )
    cfg = result["config"]
    data = result["data"]
    head = (
        f"vidload bench: {data['num_videos']} video{'s' if data['num_videos'] != 1 else ''} "
        f"({data['description']}), "
        f"{cfg['clips']} clips of {cfg['frames']} frames (TSN segments, seed {cfg['seed']}), "
        f"batches of {cfg['batch_size']}; each batch's best of {cfg['repeats']} interleaved "
        "repeats; "
        f"{result['machine']['cpus']} CPUs"
    )
    dl_clock = (
        "; DataLoader columns: wall-clock time, so load from other processes lowers them"
        if result.get("dataloader_settings")
        else ""
    )
    # blocks: the heading, then each table after the line that says what it shows
    blocks = [
        f"**{head}**" if markdown else head,
        "Speed, one process, warm page cache (× columns: this row's clips/s over the "
        f"reference's). One-process columns: {CLOCKS[clock_of(result)]}{dl_clock}:",
        speed_table(result, markdown=markdown),
        "Where the time goes (one process, warm; each clip's parts timed in the same pass): "
        "read = the bytes only, decode = the same bytes already in memory, "
        "rest = total - read - decode (container, tensors, collate):",
        split_table(result, markdown=markdown),
    ]
    red = result.get("reduced_decode")
    if red:
        blocks.append(
            f"Reduced-size decode to {red['size'][1]}x{red['size'][0]} (JPEG DCT scaling) vs full "
            f"decode + cv2.resize(INTER_AREA): {fmt(red['dct_frames_per_s'], 0)} vs "
            f"{fmt(red['full_resize_frames_per_s'], 0)} frames/s = {red['speedup']:.2f}×"
        )
    for g in result.get("geometry") or []:
        blocks.append(
            f"Fused resize, {g['label']} ({g['input'][0]}x{g['input'][1]} -> "
            f"{g['output'][0]}x{g['output'][1]}), "
            f"{g['clips']} clips: read(..., geometry=) vs a full-size read, then "
            "apply_geometry (the same filters) or cv2.resize(INTER_AREA):"
        )
        blocks.append(geometry_table(g, markdown=markdown))
    notes = result.get("notes", [])
    if notes:
        blocks.append("\n".join(("- " if markdown else "* ") + n for n in notes))
    return "\n\n".join(blocks)


def plot(result: Result, path: Path) -> None:
    """Horizontal bars of clips/s per loader: one process, and the DataLoader when measured."""
    plt = pyplot()
    rows = _loaders(result)
    one = [row["clips_per_s"] or 0 for row in rows]
    dl = [(row.get("dataloader") or {}).get("clips_per_s") or 0 for row in rows]
    fig, ax = plt.subplots(figsize=(8, 0.55 * len(rows) + 2.0))
    ys = range(len(rows))
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
    ax.set_yticklabels([_label(row) for row in rows])
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
