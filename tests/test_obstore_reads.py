"""S3 reads through obstore (`vidload[obstore]`, `vidload._storage.objectstore`): chosen only
for S3 with options it maps and explicit credentials; the same bytes, requests and errors as
through s3fs, for ranges, whole objects, a batch and a versioned read; DataLoader workers
(forked) read through it. Skips where obstore is not installed (the s3fs path is every other
bucket test's then)."""

from __future__ import annotations

import pytest

from vidload._storage import Location, fetch, objectstore, read_many
from vidload._storage.faults import CHANGED
from vidload.errors import VideoReadError

# minutes of servers and subprocesses: the full tier only (`pytest -m "not slow"` skips it)
pytestmark = pytest.mark.slow

pytest.importorskip("obstore", reason="obstore is not installed (vidload[obstore])")


@pytest.fixture(params=["obstore", "s3fs"])
def client(request, monkeypatch):
    """Each test once through obstore (this process taken for a DataLoader worker) and once
    through s3fs."""
    if request.param == "s3fs":
        monkeypatch.setattr(objectstore, "reader", lambda protocol, options: None)
    else:
        monkeypatch.setattr(objectstore, "_reads_here", lambda: True)
    return request.param


def test_the_reader_is_chosen_only_where_it_serves(monkeypatch):
    assert objectstore.reader("s3", {"anon": True}) is None  # not a DataLoader worker
    monkeypatch.setattr(objectstore, "_reads_here", lambda: True)
    opts = {"key": "k", "secret": "s", "client_kwargs": {"endpoint_url": "http://127.0.0.1:9"}}
    assert objectstore.reader("s3", opts) is not None
    assert objectstore.reader("gs", opts) is None and objectstore.reader("http", None) is None
    assert objectstore.reader("s3", {**opts, "requester_pays": True}) is None  # not mapped
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    assert objectstore.reader("s3", {"client_kwargs": {"region_name": "eu-west-1"}}) is None
    assert objectstore.reader("s3", {"anon": True}) is not None


def test_reads_are_the_same_bytes_and_requests(client, s3_bucket):
    data = bytes(range(256)) * 64
    s3_bucket.put("k/a", data)
    s3_bucket.put("k/b", b"hello")
    s3_bucket.put("k/empty", b"")
    opts = s3_bucket.storage_options
    a, b = (Location(f"{s3_bucket.url}/k/{n}", opts) for n in ("a", "b"))
    s3_bucket.faults.clear_log()
    assert a.read_ranges([(10_000, 16_384), (0, 10)]) == [data[10_000:16_384], data[:10]]
    assert a.read_range(16_000, 20_000) == data[16_000:]  # short at the end
    assert read_many([a, b]) == [data, b"hello"]
    assert Location(f"{s3_bucket.url}/k/empty", opts).read_bytes() == b""
    got = fetch([(a, [(0, 4), (8_000, 8_004)]), (b, None)])
    assert got == [[data[:4], data[8_000:8_004]], [b"hello"]]
    methods = {r.method for r in s3_bucket.faults.requests()}
    assert methods == {"GET"}  # no HEAD before a whole object
    with pytest.raises(VideoReadError, match=r"/k/nope: not found$"):
        Location(f"{s3_bucket.url}/k/nope", opts).read_range(0, 4)
    s3_bucket.faults.fail_next(1, "403")
    with pytest.raises(VideoReadError, match=r"/k/a: access denied \("):
        a.read_range(0, 4)
    s3_bucket.faults.fail_next(2, "503")
    assert a.read_range(0, 4) == data[:4]  # retried by vidload (faults.call)


def test_a_versioned_read_through_either_client_sees_a_change(client, s3_bucket):
    s3_bucket.put("k/o", b"\x01" * 1000)
    loc = Location(f"{s3_bucket.url}/k/o", s3_bucket.storage_options).versioned()
    assert loc.read_range(0, 4) == b"\x01" * 4
    s3_bucket.put("k/o", b"\x02" * 1000)
    with pytest.raises(VideoReadError, match=CHANGED):
        loc.read_range(10, 14)
    assert isinstance(fetch([(loc, [(0, 2)])])[0], VideoReadError)


_WORKERS = """
import json, sys
import torch
from torch.utils.data import DataLoader, Dataset
from vidload._storage import Location, objectstore

url, options = sys.argv[1], json.loads(sys.argv[2])

class Reads(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        used = objectstore.reader("s3", options) is not None
        data = Location(url, options).read_range(i * 10, i * 10 + 10)
        return torch.tensor(list(data)), used

Location(url, options).read_bytes()  # the parent reads too (s3fs: it may fork)
out = [(b[0].tolist(), b[1].tolist()) for b in DataLoader(Reads(), batch_size=1, num_workers=2)]
print(json.dumps(out))
"""


def test_dataloader_workers_read_through_it_and_forks_never_hang(s3_bucket, monkeypatch):
    """Workers forked from a process that never started obstore read through it; a process
    forked after obstore ran in its parent reads through s3fs (obstore's runtime is dead
    there: its first request would wait forever)."""
    import json
    import os
    import subprocess
    import sys

    pytest.importorskip("torch")
    s3_bucket.put("k/w", bytes(range(40)))
    url, options = f"{s3_bucket.url}/k/w", s3_bucket.storage_options
    run = subprocess.run(
        [sys.executable, "-c", _WORKERS, url, json.dumps(options)],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert [data for data, _ in got] == [[list(range(i * 10, i * 10 + 10))] for i in range(4)]
    assert all(used == [True] for _, used in got)  # every worker read through obstore

    monkeypatch.setattr(objectstore, "_reads_here", lambda: True)
    loc = Location(url, options)
    assert loc.read_range(0, 2) == bytes([0, 1])  # obstore's runtime started here
    assert objectstore._RUNTIME_PID == [os.getpid()]
    pid = os.fork()
    if pid == 0:  # a forked child: s3fs, and an answer
        ok = objectstore.reader("s3", options) is None and loc.read_range(2, 4) == bytes([2, 3])
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


def test_read_ends_is_the_same_and_two_gets_through_obstore(client, s3_bucket):
    data = bytes(range(256)) * 40
    s3_bucket.put("k/e", data)
    s3_bucket.put("k/empty", b"")
    opts = s3_bucket.storage_options
    loc = Location(f"{s3_bucket.url}/k/e", opts)
    s3_bucket.faults.clear_log()
    st, first, last = loc.read_ends(100, 50)
    assert (st.size, first, last) == (len(data), data[:100], data[-50:])
    methods = sorted(r.method for r in s3_bucket.faults.requests())
    assert methods == ["GET", "GET"]  # the size from their answers, either client
    assert loc.read_ends(1 << 20, 1 << 20)[1:] == (data, data)  # ends past the object's
    s3_bucket.faults.clear_log()
    with pytest.raises(
        VideoReadError, match=r"/k/empty: cannot read the ends: .*(416|not satisfiable)"
    ):
        Location(f"{s3_bucket.url}/k/empty", opts).read_ends(100, 50)  # as s3fs says it
    assert len(s3_bucket.faults.requests()) <= 5  # a 416 is not retried
    with pytest.raises(VideoReadError, match=r"/k/nope: not found$"):
        Location(f"{s3_bucket.url}/k/nope", opts).read_ends(100, 50)
