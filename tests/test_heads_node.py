"""The sidecar of heads once per machine (issue 33): fetched by the first process into the local
cache (`vidload._storage.node_copy`), found there by every other process with no request,
fetched once when several processes start at once, and again when it is rewritten.

Counted at the test HTTP server (`tests/servers.py`); the processes are fresh interpreters whose
temporary cache (`TMPDIR`) is the test's own folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from media import paint

from vidload._storage import Location
from vidload._storage.cache import LocalCache
from vidload._storage.node_copy import node_copy
from vidload.sources._heads import HEADS_NAME, read_heads, write_heads
from vidload.sources.hdf5 import Hdf5Source, write_hdf5
from vidload.sources.jpeg_decode import encode_jpeg

pytestmark = pytest.mark.slow  # subprocesses and servers: the full tier only

N, VIDEOS = 16, 6
IDS = [f"a/x{k}.mp4" for k in range(VIDEOS)]
REPO = Path(__file__).resolve().parents[1]

#: One cold batch of every video, as a fresh process: [its rounds (the waits for storage the
#: process made: `STATS`), the frame numbers painted in each clip].
BATCH = """
import json, sys
from vidload import ClipDataset
from vidload._dataset.batch import getitems
from vidload.sources.hdf5 import Hdf5Source
from media import frame_number
ids = json.loads(sys.argv[2])
ds = ClipDataset([(v, 0, int(sys.argv[3])) for v in ids], Hdf5Source(sys.argv[1], fps=25.0),
                 num_frames=4, seed=1)
from vidload._storage.remote import STATS
assert ds.source._sidecar() is not None
before = dict(STATS)
items = getitems(ds, list(range(len(ids))))
frames = [[frame_number(f.permute(1, 2, 0).numpy()) for f in c] for c, _ in items]
print(json.dumps([STATS["rounds"] - before["rounds"], frames]))
"""


def _data(root: Path) -> Path:
    jpegs = [encode_jpeg(paint(i, 96, 72), quality=90) for i in range(N)]
    for vid in IDS:
        write_hdf5(root / vid.replace(".mp4", ".h5"), jpegs)
    assert write_heads(Hdf5Source(root), IDS) == VIDEOS
    return root


def _run(script: str, tmp: Path, *args: str) -> str:
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=f"{REPO}{os.pathsep}{REPO / 'tests'}")
    out = subprocess.run(
        [sys.executable, "-c", script, *args], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()[-1]


def test_a_second_process_sends_no_request_for_the_heads(http_dir, tmp_path):
    """Two fresh processes, one machine: the first fetches the sidecar (its version, then the
    file), the second finds it in the cache and sends nothing for it; both plan their cold
    batch from it (no request opens a container) and read the same painted frames."""
    _data(http_dir.path)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    args = (http_dir.url, json.dumps(IDS), str(N))
    first = _run(BATCH, tmp, *args)
    sidecar = http_dir.faults.requests(path_contains=HEADS_NAME)
    assert [r.method for r in sidecar if r.status < 300] == ["GET", "HEAD"], sidecar
    http_dir.faults.clear_log()
    second = _run(BATCH, tmp, *args)
    assert http_dir.faults.requests(path_contains=HEADS_NAME) == []
    rounds, clips = json.loads(second)
    assert rounds == 1  # a cold batch: the containers' frames and their heads' checks
    assert json.loads(first) == [1, clips]
    assert all(c == sorted(c) and 0 <= c[0] and c[-1] < N for c in clips), clips


#: Several processes at once: each asks for the machine's copy of the object at argv[1].
COPY = """
import sys
from vidload._storage import Location
from vidload._storage.cache import LocalCache
from vidload._storage.node_copy import node_copy
path, version = node_copy(Location(sys.argv[1]), LocalCache(sys.argv[2]))
print(path.read_bytes().decode())
"""


def test_processes_filling_the_cache_at_once_fetch_once(http_dir, tmp_path):
    """Four processes starting together (the server slowed so that they overlap): one
    download; every process reads the whole object."""
    body = "x" * 100_000
    (http_dir.path / "obj.bin").write_text(body)
    http_dir.faults.delay_s = 2.0  # the fetch (its version, then the object) takes 4 s
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cmd = [sys.executable, "-c", COPY, f"{http_dir.url}/obj.bin", str(tmp_path / "cache")]
    procs = [
        subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e[-2000:] for _, e in outs]
    assert all(o.strip() == body for o, _ in outs)
    asked = http_dir.faults.requests(path_contains="obj.bin")
    assert [r.method for r in asked] == ["GET", "HEAD"], asked  # the others waited for it
    left = [p.name for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert not any(n.endswith(".part") for n in left), left


def test_a_rewritten_sidecar_is_fetched_again_once_seen_stale(http_dir, tmp_path):
    """The copy is found with no request while nothing says it is stale; a process that saw
    a head fail its check (`Heads.suspect`) asks the version once and reads the rewritten
    sidecar, under its new version's name."""
    root = _data(http_dir.path)
    cache = LocalCache(tmp_path / "cache")
    where = Location(http_dir.url) / HEADS_NAME
    path, version = node_copy(where, cache)
    heads = read_heads(Location(http_dir.url), "hdf5", cache)
    assert heads is not None and heads.current() is heads
    jpegs = [encode_jpeg(paint(i + 3, 96, 72), quality=70) for i in range(N - 4)]
    write_hdf5(root / "a/x1.h5", jpegs)  # rewritten, and its sidecar with it
    assert write_heads(Hdf5Source(root), IDS) == VIDEOS
    os.utime(root / HEADS_NAME, (1, 1))  # another modification time: another version
    http_dir.faults.clear_log()
    assert node_copy(where, cache) == (path, version)  # nothing said it is stale
    assert read_heads(Location(http_dir.url), "hdf5", cache).get("a/x1.h5").size == (
        heads.get("a/x1.h5").size
    )
    assert http_dir.faults.requests() == []
    heads.suspect()
    now = heads.current()
    assert now is not heads and now is not None
    assert now.get("a/x1.h5").size == (root / "a/x1.h5").stat().st_size
    assert now.current() is now  # asked once per process
    new_path, new_version = node_copy(where, cache)  # the machine's copy is the new one
    assert new_version != version and new_path != path
