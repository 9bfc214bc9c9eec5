"""The benchmark's work folder: the videos and their copies in every storage format.

Layout of a work folder:

    WORK/vidload-bench.json   what was built, from what (used to reuse it on the next run)
    WORK/videos/              generated sample videos, or links to the user's chosen videos
    WORK/<kind>/              the output of `vidload.convert.convert` for each storage kind of
                              `vidload._kinds` (jpeg/, hdf5/, npy/, video/: `--to video`, its
                              defaults, ...)

A folder is reused when it was built from the same videos (same paths, sizes and modification
times) with the same conversion settings; whatever changed is rebuilt. A folder that is not
empty and was not made by the benchmark is refused rather than written into.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from vidload._atomic import write_bytes_atomic
from vidload._bench.config import BenchConfig
from vidload._kinds import formats
from vidload._measure.build import BuildJob, build_storage, conversion_failures
from vidload._measure.clips import ORIGINAL
from vidload._measure.timing import Log
from vidload._measure.videos import UserVideos, link_videos
from vidload.errors import UsageError, VideoReadError
from vidload.synth import SynthSpec, make_sample_videos, video_ids

STATE_FILE = "vidload-bench.json"


@dataclass
class WorkDir:
    """A prepared work folder. `video_ids` are paths relative to `videos`, with extensions."""

    root: Path
    videos: Path
    video_ids: list[str]
    origin: str  # "synthetic" or the user's data folder
    converted: dict[str, Path] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)  # video id -> why it is left out

    def root_of(self, storage: str) -> Path:
        """Where `storage` is (`ORIGINAL`: the videos, else a kind's conversion)."""
        return self.videos if storage == ORIGINAL else self.converted[storage]


def default_work_dir(data: Path | None) -> Path:
    """`$TMPDIR/vidload-bench/synthetic`, or `.../data-<hash of DATA's absolute path>`."""
    base = Path(tempfile.gettempdir()) / "vidload-bench"
    if data is None:
        return base / "synthetic"
    digest = hashlib.sha1(str(data.resolve()).encode()).hexdigest()[:10]
    return base / f"data-{data.resolve().name}-{digest}"


#: The benchmark's progress lines, timed from when this module was loaded.
log = Log("bench")


def _found(videos: Path) -> list[str] | None:
    """The videos of the work folder's `videos` (`UserVideos`' rule), or None where they
    cannot be listed (none there, a dangling link: the folder is made anew)."""
    try:
        return UserVideos(videos).find(str(videos), ValueError).ids
    except (OSError, ValueError, VideoReadError):
        return None


def _fingerprint(videos: Path, ids: list[str]) -> dict[str, list[int]]:
    stats = {vid: (videos / vid).stat() for vid in ids}
    return {vid: [st.st_size, st.st_mtime_ns] for vid, st in stats.items()}


def _load_state(root: Path) -> dict:
    path = root / STATE_FILE
    if not path.exists():
        if root.exists() and any(root.iterdir()):
            raise UsageError(
                f"work folder {root} is not empty and has no {STATE_FILE}: it was not made by "
                "`vidload bench`; pass an empty or new folder with --work"
            )
        return {}
    try:
        return json.loads(path.read_text())
    except ValueError as e:
        raise ValueError(f"{path}: not a valid benchmark state file ({e}); remove it") from e


def _save_state(root: Path, state: dict) -> None:
    write_bytes_atomic(
        root / STATE_FILE, (json.dumps(state, indent=2, sort_keys=True) + "\n").encode()
    )


def prepare(data: Path | None, work: Path, spec: SynthSpec, cfg: BenchConfig) -> WorkDir:
    """Build (or reuse) the work folder: the videos, then a copy in every storage kind
    (converted with `cfg`'s quality and short side, by `cfg.convert_workers` processes).

    With `data` None, `spec` sample videos are generated; otherwise the first `cfg.num_videos`
    videos under `data` (sorted by path) are used, linked into the work folder, not copied.
    """
    if data is not None and not data.is_dir():
        raise UsageError(f"DATA ({data}) must be a folder of videos")
    work = Path(work)
    state = _load_state(work)
    work.mkdir(parents=True, exist_ok=True)
    videos = work / "videos"
    if data is None:
        origin = "synthetic"
        stale = state.get("origin") != origin or state.get("spec") != asdict(spec)
        if videos.exists() and (stale or _found(videos) != video_ids(spec)):
            shutil.rmtree(videos)
            state = {}
        ids = make_sample_videos(videos, spec, progress=cfg.progress)
    else:
        origin = str(data.resolve())
        # x.mp4 and x.avi both kept: convert names them apart
        ids = UserVideos(data).find(str(data), UsageError).ids[: cfg.num_videos]
        if (
            state.get("origin") != origin
            or state.get("videos") != _fingerprint(data, ids)
            or _found(videos) != ids
        ):
            link_videos(videos, {vid: (data / vid).resolve() for vid in ids})
            state = {}
    fingerprint = _fingerprint(videos, ids)
    # convert's keywords, and what the state file records of each format
    settings: dict[str, Any] = {"quality": cfg.quality, "short_side": cfg.short_side}
    if state.get("origin") != origin or state.get("videos") != fingerprint:
        state = {"origin": origin, "videos": fingerprint, "formats": {}}
    state["spec"] = asdict(spec) if data is None else None
    _save_state(work, state)
    converted: dict[str, Path] = {}
    for fmt in (k.name for k in formats()):
        out = work / fmt
        if state["formats"].get(fmt) == settings and out.is_dir():
            log(f"reusing {out}")
        else:
            log(f"converting {len(ids)} videos to {fmt} in {out}")
            state["formats"].pop(fmt, None)
            _save_state(work, state)
            # `out` is ours (the state file says so): emptied first
            options = {"to": fmt, **settings}
            build_storage(BuildJob(fmt, videos, out, options, cfg.convert_workers, cfg.progress))
            state["formats"][fmt] = settings
            _save_state(work, state)
        converted[fmt] = out
    failed = conversion_failures(converted)
    usable = [v for v in ids if v not in failed]
    if not usable:
        reasons = "; ".join(f"{v}: {why}" for v, why in sorted(failed.items()))
        raise ValueError(f"no video could be converted to every format ({reasons})")
    return WorkDir(work, videos, usable, origin, converted, failed)


@contextmanager
def ram_copy(videos: Path, ids: list[str], notes: list[str]) -> Iterator[Path | None]:
    """A temporary copy of the videos in /dev/shm (RAM-backed), removed afterwards; None, with
    a note, when /dev/shm is missing, not tmpfs, or too small for them."""
    shm = Path("/dev/shm")
    need = sum((videos / v).stat().st_size for v in ids)
    try:
        room = shutil.disk_usage(shm).free
    except OSError:
        room = -1
    if room < 2 * need:
        notes.append(
            f"video decode not split from reading: no room in /dev/shm for a {need / 2**20:.0f} "
            "MiB RAM copy of the videos"
        )
        yield None
        return
    with tempfile.TemporaryDirectory(
        prefix="vidload-bench-", dir=shm, ignore_cleanup_errors=True
    ) as folder:
        tmp = Path(folder)
        for vid in ids:
            (tmp / vid).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(videos / vid, tmp / vid)
        yield tmp
