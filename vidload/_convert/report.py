"""What a conversion makes and reports: `ConvertFormat` and `ConvertReport`.

A home below both `vidload.convert` (the public entry point, which re-exports them) and
`vidload.shards` (which plans and runs the work and builds the report): defined in
`vidload.convert`, they made the two import each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from vidload.manifest import ManifestRow

__all__ = ["ConvertFormat", "ConvertReport", "print_convert_summary", "print_failures"]

#: A storage kind's name (`vidload._kinds`): "jpeg" (a folder of frame files), "hdf5" (`.h5`),
#: "npy" (`.npy`), "video" (`.mp4`, re-encoded for random access), or one registered since.
#: `CONVERT_FORMATS` (`vidload.convert`) names them all.
ConvertFormat = str


@dataclass(frozen=True)
class ConvertReport:
    """What one `convert` run did.

    Attributes:
        output: the output folder (for an OUTPUT URL: the URL, a str without credentials).
        manifest_path: `output/manifest.csv` (a str URL likewise).
        rows: one manifest row per input video handled, in input order (all of them unless
            the run stopped early).
        converted, skipped: ids converted in this run, and ids whose container was already done.
        failed: rows of the videos that could not be converted (`error` says why).
        bytes_in, bytes_out: input and output bytes of the videos converted in this run.
        frames: frames stored in this run.
        seconds: wall time of the run.
        unfinished: ids not handled because the run stopped early (their task never finished);
            not in the manifest, a rerun converts them.
        stopped: why the run stopped early ("no space left on device writing ..."), else None.
        manifest_written: False when manifest.csv could not be written (disk full); the part
            manifests then stay in OUTPUT and the next run picks them up.
        manifest_rows: the videos manifest.csv holds: every container OUTPUT holds, from this
            run and earlier ones (set for a list INPUT, else 0).
        list_manifest_path: for a list INPUT, its own manifest in OUTPUT
            (`manifest-<list stem>.csv`: `vidload._convert.lists`), the one to train from;
            None for a folder INPUT.
        list_entries, list_total: the entries that manifest holds, of the list's.
        list_name: the list's file name.
        list_not_written: why the list's manifest could not be written, else None.
    """

    output: Path
    manifest_path: Path
    rows: tuple[ManifestRow, ...]
    converted: tuple[str, ...]
    skipped: tuple[str, ...]
    failed: tuple[ManifestRow, ...]
    bytes_in: int
    bytes_out: int
    frames: int
    seconds: float
    unfinished: tuple[str, ...] = ()
    stopped: str | None = None
    manifest_written: bool = True
    manifest_rows: int = 0
    list_manifest_path: Path | None = None
    list_entries: int = 0
    list_total: int = 0
    list_name: str | None = None
    list_not_written: str | None = None

    @property
    def ok(self) -> bool:
        """True when every video converted or was already done."""
        return not self.failed and not self.unfinished and self.stopped is None

    @property
    def mismatches(self) -> tuple[ManifestRow, ...]:
        """Rows whose reported frame count differs from the frames stored."""
        return tuple(r for r in self.rows if r.status == "mismatch")

    @property
    def size_ratio(self) -> float | None:
        """bytes_out / bytes_in of this run's conversions (None when nothing was converted)."""
        return self.bytes_out / self.bytes_in if self.bytes_in else None


#: Mismatches listed in the convert summary before "... and N more".
_LIST_LIMIT = 20


def print_convert_summary(report: ConvertReport, out: TextIO) -> None:
    """The end-of-run summary of a ConvertReport."""
    from vidload.progress import format_bytes

    total = len(report.rows) + len(report.unfinished)
    print(
        f"converted {len(report.converted)}, skipped {len(report.skipped)} (already done), "
        f"failed {len(report.failed)} of {total} videos in {report.seconds:.1f} s "
        f"({report.frames} frames stored)",
        file=out,
    )
    ratio = report.size_ratio
    ratio_text = f", size ratio {ratio:.2f}x" if ratio is not None else ""
    print(
        f"bytes in {format_bytes(report.bytes_in)}, bytes out {format_bytes(report.bytes_out)}"
        f"{ratio_text}",
        file=out,
    )
    mismatches = report.mismatches
    if mismatches:
        print(
            f"frame counts: {len(mismatches)} of {total} videos: reported != actual "
            f"(stored what decoded; the manifest keeps both)",
            file=out,
        )
        for row in mismatches[:_LIST_LIMIT]:
            print(
                f"  ! {row.video_id}: reported {row.reported_frames}, actual {row.actual_frames}",
                file=out,
            )
        if len(mismatches) > _LIST_LIMIT:
            print(f"  ... and {len(mismatches) - _LIST_LIMIT} more", file=out)
    else:
        done = total - len(report.failed)
        print(f"frame counts: reported == actual for all {done} videos stored", file=out)
    print_failures(report.failed, total, out)
    if report.unfinished:
        print(
            f"unfinished: {len(report.unfinished)} of {total} videos (the run stopped; run it "
            f"again to convert them)",
            file=out,
        )
    if not report.manifest_written:
        print(f"manifest: NOT written ({report.manifest_path}); a rerun recovers it", file=out)
    elif report.list_manifest_path is None:
        print(f"manifest: {report.manifest_path}", file=out)
    else:
        _print_list_manifests(report, out)


def _print_list_manifests(report: ConvertReport, out: TextIO) -> None:
    """The two manifests of a list INPUT: the whole OUTPUT's and the list's own."""
    print(
        f"manifest: {report.manifest_path} ({report.manifest_rows} videos: everything OUTPUT "
        f"holds, this list's and earlier runs')",
        file=out,
    )
    where = f"list manifest: {report.list_manifest_path}"
    if report.list_not_written is not None:
        print(f"{where} NOT written ({report.list_not_written})", file=out)
        return
    left = report.list_total - report.list_entries
    held = f"{report.list_entries} entries of {report.list_name}, in its order"
    if left:
        held = f"{held}; {left} not reached, a rerun adds them"
    print(f"{where} ({held}): train from this one", file=out)


def print_failures(failed: Sequence[ManifestRow], total: int, out: TextIO) -> None:
    """The failed videos and why, one line each (nothing when none failed)."""
    if not failed:
        return
    print(f"failed: {len(failed)} of {total} videos", file=out)
    for row in failed:
        print(f"  x {row.video_id}: {row.error}", file=out)
