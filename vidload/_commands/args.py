"""What the commands share: argument types, the INPUT and the common options, the paths
given, and `--dask`'s executor."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from vidload._checks import listed
from vidload._cpus import default_workers
from vidload._kinds import get_kind, input_kinds, kind_names
from vidload._storage.filesystems import MissingExtraError
from vidload.errors import UsageError

__all__ = [
    "add_common",
    "add_storage_option",
    "add_input",
    "check_paths",
    "crf",
    "dask_executor",
    "kind_help",
    "inputs_described",
    "kinds_described",
    "official_files_for_the_shell",
    "positive_int",
    "positive_number",
    "quality",
    "storage_option",
    "storage_options",
]

T = TypeVar("T", int, float)


def _number(text: str, kind: type[T], what: str, ok: Callable[[T], bool], rule: str) -> T:
    """`text` as a `kind` (an argparse type): not one, or one that breaks `rule`, is an
    ArgumentTypeError naming the value."""
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"{value} must be {rule}")
    return value


def positive_int(text: str) -> int:
    return _number(text, int, "an integer", lambda v: v >= 1, ">= 1")


def quality(text: str) -> int:
    return _number(text, int, "an integer", lambda v: 1 <= v <= 100, "in [1, 100]")


def crf(text: str) -> float:
    return _number(text, float, "a number", lambda v: 0 <= v <= 51, "in [0, 51]")


def positive_number(text: str) -> float:
    return _number(text, float, "a number", lambda v: v > 0, "> 0")


def kind_help(name: str, form: str) -> str:
    """Storage kind `name` in a help text, `form` filled with its `described` and `reader`
    (the class that reads it), from its class in the table (`vidload._kinds`): a help text
    names every kind the table holds. A kind whose extra is not installed is named with what
    to install instead (asking for its class would raise: `vidload --help` must not)."""
    try:
        kind = get_kind(name)
    except MissingExtraError as e:
        return f"{name} (not installed: {e})"
    return form.format(described=kind.described, reader=kind.source.__name__)


def kinds_described() -> str:
    """What the kinds of the table are, as a help text lists them: "JPEG frame folders, .h5
    files, .npy files or video files"."""
    return listed([kind_help(n, "{described}") for n in kind_names()])


def inputs_described() -> str:
    """What `convert` and `probe` take as INPUT: video files, and the containers of the
    kinds the table says they take ("video files, JPEG frame folders, .h5 files or .npy
    files")."""
    return listed(["video files", *(k.described for k in input_kinds())])


def add_input(p: argparse.ArgumentParser, kinds: str) -> None:
    """The INPUT argument: `kinds` (what a folder or file INPUT may be), or a list."""
    p.add_argument(
        "input",
        metavar="INPUT",
        help=f"{kinds}, or an annotation list (mmaction2 `path label` / `frame_dir total_frames "
        "label`) or manifest; any of these may be a URL (s3://bucket/videos)",
    )


def add_common(p: argparse.ArgumentParser) -> None:
    _add_count(p, "--workers", "processes to use (default: the CPUs this process may use)")
    p.add_argument(
        "--root",
        metavar="DIR",
        help="folder the entries of an annotation list are relative to (default: the list's "
        "folder)",
    )
    p.add_argument(
        "--labels",
        metavar="FILE",
        help="for a folder INPUT: the class map (class names one per line, line k = label k, "
        "or an annotation list) instead of the sorted names of its top-level folders",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="run on the Dask cluster whose scheduler is at ADDRESS (tcp://host:8786), or "
        "'local' for a local cluster of --workers processes; needs `pip install "
        '"vidload[dask]"`',
    )
    _add_count(p, "--shard-size", "videos per task (default 16, fewer for small runs)")
    add_storage_option(p)


def _add_count(p: argparse.ArgumentParser, flag: str, text: str) -> None:
    """An option taking a count N >= 1 (`positive_int`)."""
    p.add_argument(flag, type=positive_int, metavar="N", help=text)


def add_storage_option(p: argparse.ArgumentParser) -> None:
    """`--storage-option KEY=VALUE` (repeatable): `storage_options(args.storage_option)`."""
    p.add_argument(
        "--storage-option",
        type=storage_option,
        action="append",
        metavar="KEY=VALUE",
        dest="storage_option",
        help="for URLs: an fsspec storage option (repeatable); VALUE is JSON where it parses "
        "(numbers, true, {...}), else text; KEY.SUB=VALUE sets a nested one "
        "(client_kwargs.endpoint_url=http://127.0.0.1:9000)",
    )


def storage_option(text: str) -> tuple[list[str], Any]:
    """One `--storage-option KEY=VALUE`: (the key's dotted parts, the value, JSON if it
    parses, else the text)."""
    import json

    key, sep, value = text.partition("=")
    keys = key.strip().split(".")
    if not sep or not all(keys):
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = value
    return keys, parsed


def storage_options(pairs: Sequence[tuple[list[str], Any]] | None) -> dict[str, Any] | None:
    """The `--storage-option` values as fsspec's nested options (None when none given)."""
    if not pairs:
        return None
    out: dict[str, Any] = {}
    for keys, value in pairs:
        node = out
        for k in keys[:-1]:
            child = node.setdefault(k, {})
            if not isinstance(child, dict):
                raise UsageError(f"--storage-option {'.'.join(keys)}: {k} is already a value")
            node = child
        node[keys[-1]] = value
    return out


def check_paths(args: argparse.Namespace, output: str | None = None) -> None:
    """The paths given on the command line exist: a missing one is a usage error (an INPUT
    URL is checked where it is read: a missing one names the URL). `--storage-option` is for
    URLs: given where INPUT (and `output`, convert's OUTPUT) are local paths it would be
    ignored, so it is a usage error too."""
    from vidload._storage import Location

    local = Location(args.input).local_file()  # None: a URL
    if local is not None and not local.exists():
        raise UsageError(f"INPUT ({args.input!r}) does not exist")
    if args.labels is not None and not Path(args.labels).is_file():
        raise UsageError(f"--labels ({args.labels!r}) is not a file")
    if args.root is not None and not Path(args.root).is_dir():
        raise UsageError(f"--root ({args.root!r}) is not a folder")
    given = {n: t for n, t in {"INPUT": args.input, "OUTPUT": output}.items() if t is not None}
    if args.storage_option and not any(Location(t).over_network for t in given.values()):
        paths = " and ".join(given)
        raise UsageError(
            f"--storage-option is for URLs (s3://bucket/videos); {paths} "
            f"{'are local paths' if ' and ' in paths else 'is a local path'}: leave it out"
        )


@contextmanager
def official_files_for_the_shell(args: argparse.Namespace, command: str) -> Iterator[None]:
    """An official split file given as INPUT (`vidload._official`) is refused saying what to
    do from the shell, not which Python function to call: `vidload COMMAND` on the class
    folder tree where that gives the official numbering (`--labels classInd.txt`), else on the
    list the reader writes (a one-line `python -c`), with the arguments given."""
    from vidload._official import OfficialFileError

    try:
        yield
    except ValueError as e:
        found: BaseException | None = e
        while found is not None and not isinstance(found, OfficialFileError):
            found = found.__cause__
        if found is None:
            raise
        raise UsageError(_shell_advice(found, args, command)) from e


def _shell_advice(e: Any, args: argparse.Namespace, command: str) -> str:
    videos = args.root or "VIDEOS"
    rest = f" {args.output} --to {args.to}" if command == "convert" else ""
    name = f"{Path(args.input).stem}-{e.reader}.txt"
    call = e.call.replace("root=VIDEOS", f"root={videos!r}")
    write = f"python -c \"from vidload.datasets import {e.reader}; {call}.write('{name}')\""
    advice = (
        f"INPUT {e.what}. From the shell: write the list vidload.datasets.{e.reader}() reads "
        f"from it, then {command} that list: {write} && vidload {command} {name}{rest} "
        f"--root {videos}"
    )
    if e.labels is not None:
        labels = f" --labels {e.labels}" if e.labels else ""
        advice += (
            f"; or {command} the whole class folder tree, numbered as {e.reader}() numbers it: "
            f"vidload {command} {videos}{rest}{labels}"
        )
    return advice


@contextmanager
def dask_executor(args: argparse.Namespace) -> Iterator[tuple[Executor | None, int | None]]:
    """(executor, workers) for `--dask`: a Dask cluster's executor, or (None, --workers)."""
    if args.dask is None:
        yield None, args.workers
        return
    try:
        from distributed import Client, LocalCluster
    except ImportError as e:
        raise UsageError(
            f'--dask needs Dask\'s distributed package: pip install "vidload[dask]" ({e})'
        ) from e
    if args.dask == "local":
        n = args.workers or default_workers()
        cluster = LocalCluster(
            n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0"
        )
        with cluster:
            with Client(cluster) as client:
                yield client.get_executor(pure=False), None
        return
    if args.workers is not None:
        raise UsageError(
            "--workers applies to the local pool or --dask local; a cluster has its own"
        )
    try:
        client = Client(args.dask, timeout="30s")
    except OSError as e:
        raise OSError(f"--dask {args.dask}: cannot reach the scheduler ({e})") from e
    with client:
        yield client.get_executor(pure=False), None
