"""Build frame containers from videos or JPEG folders: the library behind `vidload convert`.

`convert(input_path, output, to=...)` turns every video of `input_path` into one container in
`output`, laid out as the sources read it, so `JpegSource(output)`, `Hdf5Source(output)` and
`NpySource(output)` take the same video ids as `VideoSource(input_path)`:

    video id `a/x1.mp4` -> `output/a/x1/img_00001.jpg ...` (jpeg), `output/a/x1.h5` (hdf5),
                           `output/a/x1.npy` (npy)

Two inputs whose ids differ only in the video extension (`x.mp4`, `x.avi`) keep it in their
container names (`x.mp4.h5`, `x.avi.h5`); the sources look for such a full name first.

`input_path` is one of:

* a folder: searched recursively for video files (by extension, `VIDEO_EXTENSIONS`) and for
  JPEG frame folders (a folder holding `img_00001.jpg`; its sub-folders are not searched). Names
  starting with "." are skipped (they are temporary files).
* an annotation list (mmaction2 `path label` or `frame_dir total_frames label`) or a manifest:
  entries are paths relative to `root`, which defaults to the list's own folder. Labels are
  carried into the output manifest.

A folder's videos are labelled by their top-level class folder (`class_name/.../x.mp4`; sorted
names -> 0, 1, ..., or the mapping of a `labels` file) and the names go to
`output/classes.txt`, one per line in label order (`vidload.labels`). Videos directly in the
folder are unlabelled.

Frames are decoded (`VideoSource.iter_frames`: the frames that really decode, turned upright
by the video's display rotation, which the manifest's `rotation` column records), optionally
resized so the short side is `short_side` (cv2.INTER_AREA, aspect kept), and JPEG-encoded at
`quality` with chroma subsampling `subsampling`. A JPEG folder is repacked byte for byte (the
stored bytes are the files' bytes) unless `short_side` is given, which decodes, resizes and
re-encodes it.

Resuming: every container is written atomically (temporary name, then rename), so a container at
its final path is complete. Without `overwrite`, a video is skipped when its container exists and
the manifest says it converted, or, with no manifest row (a run killed before writing it), when
the container opens and validates. `output/vidload-convert.json` records `to`, `short_side`,
`quality` and `subsampling`; resuming with different options raises ValueError (pass
`overwrite=True`). One run at a time writes into an `output`: a second one raises
`OutputLockedError` (`vidload._lock`); stale temporary files of a killed run are removed at
the start of the next one.

The work is done in shards (`vidload.shards`: plan, convert shards anywhere, finish), on a local
pool of spawned processes that die with their parent, or on any `concurrent.futures.Executor`
(`executor=`, e.g. a Dask cluster's).

`output/manifest.csv` gets one `ManifestRow` per video (merged with the rows already there):
`actual_frames` is the number of frames stored, `reported_frames` what the input's header
claimed, status "mismatch" when the two differ, "failed" with the reason when nothing could be
stored. The input is only ever read.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from concurrent.futures import Executor
from typing import Any

from vidload._checks import check_bool
from vidload._convert.frames import resize_short_side
from vidload._convert.inputs import InputItem, find_inputs, label_inputs
from vidload._convert.options import (
    DEFAULT_CRF,
    DEFAULT_GOP,
    DEFAULT_PRESET,
    DEFAULT_QUALITY,
    DEFAULT_SUBSAMPLING,
    DEFAULT_TUNE,
    ConvertOptions,
)
from vidload._convert.report import ConvertFormat, ConvertReport
from vidload._kinds import kind_names
from vidload._parallel import resolve_workers
from vidload.sources.jpeg_decode import Subsampling

__all__ = [
    "CONVERT_FORMATS",
    "DEFAULT_CRF",
    "DEFAULT_GOP",
    "DEFAULT_PRESET",
    "DEFAULT_TUNE",
    "ConvertFormat",
    "ConvertOptions",
    "ConvertReport",
    "InputItem",
    "convert",
    "find_inputs",
    "label_inputs",
    "resize_short_side",
    "run_convert",
]

#: The storage kinds `convert` writes (`to`), as the table (`vidload._kinds`) had them when this
#: module was imported.
CONVERT_FORMATS: tuple[str, ...] = kind_names()


def convert(
    input_path: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    to: ConvertFormat,
    workers: int | None = None,
    short_side: int | None = None,
    quality: int = DEFAULT_QUALITY,
    subsampling: Subsampling = DEFAULT_SUBSAMPLING,
    gop: int | None = None,
    crf: float | None = None,
    preset: str | None = None,
    tune: str | None = None,
    overwrite: bool = False,
    root: str | os.PathLike[str] | None = None,
    labels: str | os.PathLike[str] | None = None,
    progress: bool = True,
    executor: Executor | None = None,
    shard_size: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> ConvertReport:
    """Convert every video of `input_path` into a `to` container under `output` (module doc).

    Args:
        input_path: a folder of videos and/or JPEG frame folders, or an annotation list / manifest.
        output: the folder to fill (made if missing); must not overlap a folder `input_path`.
        to: "jpeg" (`output/<id>/img_00001.jpg ...`), "hdf5" (`output/<id>.h5`), "npy"
            (`output/<id>.npy`), or "video" (`output/<id>.mp4`: H.264 re-encoded for random
            access, read by `VideoSource(output)` with the same ids;
            `vidload.sources._video_format`), ids without their video extension; or any kind
            of `vidload._kinds` (`CONVERT_FORMATS`).
        workers: local processes (spawned, they die with this process; default: the CPUs this
            process may use, `vidload._cpus.default_workers`; 1 converts in this process). Not
            with `executor`.
        short_side: resize so the shorter side has this many pixels (aspect kept); None keeps
            the size.
        quality: JPEG quality in [1, 100] for encoded frames.
        subsampling: chroma subsampling of encoded frames, "420", "422" or "444" (what each
            costs in bytes, decode time and PSNR: the docs' "JPEG quality and
            subsampling" table, `python tools/jpeg_quality.py`).
        gop: `to="video"` only: a keyframe every `gop` frames (None: `DEFAULT_GOP`); a read
            decodes at most this many frames per wanted frame.
        crf: `to="video"` only: libx264's constant rate factor in [0, 51], lower is larger and
            closer to the source (None: `DEFAULT_CRF`).
        preset: `to="video"` only: libx264's preset, "ultrafast" ... "veryslow" (None:
            `DEFAULT_PRESET`): slower presets encode smaller files, slowly.
        tune: `to="video"` only: libx264's tuning, e.g. "fastdecode", or "none" (None:
            `DEFAULT_TUNE`). What each costs: docs/benchmarks.md (`tools/video_sweep.py`).
        overwrite: convert every video again, even those already done.
        root: folder the entries of an annotation list are relative to (default: its folder).
        labels: for a folder `input_path`, the class map (a class-name-per-line file or an
            annotation list, `vidload.labels.read_class_map`) instead of the sorted names of
            its top-level folders. A folder's videos are labelled by their class folder and
            the map is written to `output/classes.txt` (when its labels are 0..n-1).
        progress: draw a progress bar on stderr.
        executor: any `concurrent.futures.Executor` to run the shards on (e.g.
            `distributed.Client(...).get_executor()`, a `ProcessPoolExecutor`); it must reach
            `output` on a shared file system. Default: the local pool of `workers`.
        shard_size: videos per task (`vidload.shards`); default 16, fewer for small runs so
            that every worker gets some.
        storage_options: for an `output` URL (`s3://bucket/prefix`, any fsspec URL), what its
            filesystem takes (credentials, `client_kwargs={"endpoint_url": ...}`); None uses
            the standard configuration (for S3: the AWS environment variables, including
            `AWS_ENDPOINT_URL`, and `~/.aws`). Each container is written locally and uploaded
            once complete (`vidload._convert.remote`).

    Returns:
        a ConvertReport; failed videos are in it (and in the manifest), never raised. A full
        disk stops the run: `report.stopped` says where, the manifest lists what finished.

    Raises:
        FileNotFoundError: `input_path` does not exist.
        ValueError / TypeError: a bad argument, overlapping `input_path` and `output`, or a resumed
            `output` converted with other options.
        OutputLockedError: another run is writing into `output` (one run per folder at a time).
        DiskFullError: no room to start (the lock or the options file).
    """
    options = ConvertOptions(
        to=to, short_side=short_side, quality=quality, subsampling=subsampling, gop=gop,
        crf=crf, preset=preset, tune=tune, overwrite=overwrite, root=root, labels=labels,
        shard_size=shard_size, storage_options=storage_options,
    )  # fmt: skip
    return run_convert(
        options, input_path, output, executor=executor, workers=workers, progress=progress
    )


def run_convert(
    options: ConvertOptions,
    input_path: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    executor: Executor | None = None,
    workers: int | None = None,
    progress: bool = True,
) -> ConvertReport:
    """Run the conversion `options` says from `input_path` into `output`: `convert` with its
    options made beforehand, as one `ConvertOptions` (what `convert` makes of its keywords, and
    `vidload convert` of its command line): plan (`vidload.shards.plan_convert`), run the
    shards on the local pool or `executor`, finish.

    Args:
        options: what to convert into and how (`ConvertOptions(to="hdf5", ...)`).
        input_path: as for `convert`.
        output: as for `convert`.
        executor: as for `convert`.
        workers: as for `convert`.
        progress: as for `convert`.

    Returns:
        a ConvertReport, as `convert`.

    Raises:
        ValueError / TypeError, FileNotFoundError, OutputLockedError, DiskFullError: as
            `convert`.
    """
    from vidload.shards import plan_convert, run_plan

    workers, threads = resolve_workers(workers, executor)
    progress = check_bool("progress", progress)  # before plan_convert takes OUTPUT's lock
    with plan_convert(input_path, output, options=options, threads=threads) as plan:
        return run_plan(plan, executor=executor, workers=workers, progress=progress)
