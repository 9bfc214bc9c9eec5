"""Build vidload's sdist and wheel and check that a user can install and use the wheel.

    python tools/check_wheel.py [--keep DIR]        # .ci/run runs it; ~1 min with local caches

1. `python -m build` on a clean copy of the source tree: the sdist, then the wheel built from
   that sdist (so the sdist must carry everything the build needs).
2. The wheel holds the package and its metadata only (no tests, tools, examples, docs, caches),
   with `vidload/py.typed` and the license; the sdist holds LICENSE, README.md, pyproject.toml
   and `vidload/py.typed`, and no tests (they need the repository: docs/, the real clips).
3. A fresh virtual environment (no system site-packages), the CPU build of torch
   (`TORCH_SPEC`, default torch==2.13.0, as tools/bootstrap.sh) and the wheel; then, from a
   folder outside the source tree and without PYTHONPATH: `vidload --version`,
   `python -c "import vidload"` (from the venv, not the tree) and a 2-frame read of a
   generated video with `VideoSource`, checked against a sequential decode.

Exits 0 when every check passes; otherwise prints what failed and exits 1.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Names in the source tree that are not source: never copied into the build.
IGNORED = (
    ".git",
    ".venv",
    "venv",
    "build",
    "dist",
    "site",
    "__pycache__",
    "*.egg-info",
    ".pytest_cache",
    ".ruff_cache",
    ".mypy_cache",
    ".hypothesis",
    "*.pyc",
    "out",
)

#: Run in the fresh venv: a generated video, 2 frames read, compared with sequential decode.
READ_CHECK = """
import av, numpy as np, vidload
from vidload import VideoSource
with av.open("v.mp4", "w") as c:
    s = c.add_stream("libx264", rate=25)
    s.width, s.height, s.pix_fmt = 64, 48, "yuv420p"
    for i in range(12):
        img = np.full((48, 64, 3), 20 * i, np.uint8)
        for packet in s.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
            c.mux(packet)
    for packet in s.encode():
        c.mux(packet)
with av.open("v.mp4") as c:
    decoded = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
clip = VideoSource(".").read("v.mp4", [3, 9])
assert clip.dtype == np.uint8 and clip.shape == (2, 48, 64, 3), (clip.dtype, clip.shape)
assert (clip[0] == decoded[3]).all() and (clip[1] == decoded[9]).all(), "frames differ"
print("read ok", vidload.__file__)
"""


def wheel_problems(names: Sequence[str], package: str = "vidload") -> list[str]:
    """What is wrong with a wheel holding `names` (its zip entries); [] when nothing."""
    problems = []
    for name in names:
        top = name.split("/", 1)[0]
        if top != package and not top.endswith(".dist-info"):
            problems.append(f"wheel holds {name!r}, outside the package and its metadata")
        elif "__pycache__/" in name or name.endswith((".pyc", ".pyo")):
            problems.append(f"wheel holds {name!r}, a cache file")
    if f"{package}/py.typed" not in names:
        problems.append(f"wheel lacks {package}/py.typed (PEP 561: the type hints)")
    if not any(n.split("/")[0].endswith(".dist-info") and n.endswith("LICENSE") for n in names):
        problems.append("wheel lacks the license file in its .dist-info")
    return problems


def sdist_problems(names: Sequence[str], package: str = "vidload") -> list[str]:
    """What is wrong with an sdist holding `names` (its tar members); [] when nothing."""
    tops = {n.split("/", 1)[0] for n in names}
    if len(tops) != 1:
        return [f"sdist has {len(tops)} top-level folders, not one: {sorted(tops)}"]
    top = tops.pop()
    inside = {n.split("/", 1)[1] for n in names if "/" in n}
    problems = [
        f"sdist lacks {needed}"
        for needed in ("LICENSE", "README.md", "pyproject.toml", "PKG-INFO", f"{package}/py.typed")
        if needed not in inside
    ]
    problems += [
        f"sdist holds {top}/{n} (tests need the repository)"
        for n in inside
        if n.startswith("tests/")
    ]
    return problems


def _run(cmd: Sequence[str | os.PathLike[str]], *, cwd: Path, env: dict[str, str]) -> str:
    out = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    if out.returncode != 0:
        raise RuntimeError(
            f"{' '.join(map(str, cmd))} exited {out.returncode}:\n{out.stdout[-3000:]}"
            f"\n{out.stderr[-3000:]}"
        )
    return out.stdout


def _clean_env() -> dict[str, str]:
    """This environment without what would make Python import the source tree."""
    env = dict(os.environ)
    for name in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV"):
        env.pop(name, None)
    return env


def check(work: Path) -> list[str]:
    env = _clean_env()
    src, dist, venv, run_dir = work / "src", work / "dist", work / "venv", work / "run"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(*IGNORED))
    print("building the sdist and the wheel from it", flush=True)
    _run([sys.executable, "-m", "build", "--outdir", dist, src], cwd=work, env=env)
    wheels, sdists = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        return [f"build made {[p.name for p in dist.iterdir()]}, not one wheel and one sdist"]
    with zipfile.ZipFile(wheels[0]) as z:
        problems = wheel_problems(z.namelist())
    with tarfile.open(sdists[0]) as t:
        problems += sdist_problems(t.getnames())
    print(f"installing {wheels[0].name} into a fresh venv", flush=True)
    _run([sys.executable, "-m", "venv", venv], cwd=work, env=env)
    python = venv / "bin" / "python"
    torch_spec = env.get("TORCH_SPEC", "torch==2.13.0")
    _run([python, "-m", "pip", "install", "--quiet", torch_spec], cwd=work, env=env)
    _run([python, "-m", "pip", "install", "--quiet", wheels[0]], cwd=work, env=env)
    run_dir.mkdir()
    version = _run([venv / "bin" / "vidload", "--version"], cwd=run_dir, env=env).strip()
    expected = f"vidload {wheels[0].name.split('-')[1]}"
    if version != expected:
        problems.append(f"vidload --version printed {version!r}, not {expected!r}")
    where = _run([python, "-c", "import vidload; print(vidload.__file__)"], cwd=run_dir, env=env)
    if not Path(where.strip()).is_relative_to(venv):
        problems.append(f"import vidload found {where.strip()}, not the installed wheel")
    read = _run([python, "-c", READ_CHECK], cwd=run_dir, env=env)
    if not read.startswith("read ok"):
        problems.append(f"2-frame read printed {read!r}")
    print(f"{version}; {read.strip()}", flush=True)
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="work in DIR and keep it (default: a temp dir)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="vidload-wheel-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        try:
            problems = check(work)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            problems = [str(e)]
    for p in problems:
        print(f"check_wheel: {p}", file=sys.stderr)
    if not problems:
        print("check_wheel: the wheel installs and works; wheel and sdist hold what they should")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
