"""`vidload._storage`: one way into storage, local paths and URLs (issue 17).

The S3 tests run against moto's threaded server on 127.0.0.1 (started here until the shared
fixtures of `tests/servers.py` land); without s3fs/moto they skip.
"""

from __future__ import annotations

import os
import pickle
import socket
import subprocess
import sys

import pytest

from vidload._storage import Location, MissingExtraError, coalesce, is_url, read_many, redact_url
from vidload.errors import VideoReadError

BACKENDS = ("fsspec", "s3fs", "gcsfs", "aiohttp", "botocore", "aiobotocore")


@pytest.mark.slow
def test_import_vidload_pulls_in_no_fsspec_backend():
    code = (
        "import sys, vidload, vidload.sources, vidload.dataset, vidload._storage, vidload.cli\n"
        f"bad = [m for m in {BACKENDS!r} if m in sys.modules]\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr


def test_is_url_and_local_paths():
    assert is_url("s3://b/k") and is_url("https://h/x") and is_url("file:///tmp/x")
    assert not is_url("C:\\data\\x") and not is_url("data/s3:/x") and not is_url("/abs")
    assert str(Location("file:///tmp/x").local_file()) == "/tmp/x"
    assert Location("s3://b/k").local_file() is None  # a URL is never taken as a local path
    with pytest.raises(TypeError, match="a path or URL"):
        Location(3)  # type: ignore[arg-type]


def test_a_scheme_without_a_filesystem_names_what_to_install():
    with pytest.raises(MissingExtraError, match=r"zz:// URLs.*zz backend"):
        Location("zz://bucket/x").read_bytes()


def test_redact_url_drops_user_info_and_query():
    assert redact_url("https://u:pw@h.example/a/b?X-Amz-Signature=s3cr3t") == (
        "https://h.example/a/b?..."
    )
    assert str(Location("https://u:pw@h/x?token=abc")) == "https://h/x?..."


def test_coalesce_merges_near_ranges():
    assert coalesce([(100, 200), (0, 10), (210, 300), (10_000, 10_010)], 20) == [
        (0, 10),
        (100, 300),
        (10_000, 10_010),
    ]


def test_local_location(tmp_path):
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "x.bin").write_bytes(bytes(range(256)))
    (tmp_path / "d" / "sub" / "y.bin").write_bytes(b"hello")
    root = Location(tmp_path / "d")
    assert root.list_dir() == {"sub": None, "x.bin": 256}
    assert root.walk_files() == ["sub/y.bin", "x.bin"]
    x = root / "x.bin"
    assert x.size() == 256 and x.exists() and not (root / "nope").exists()
    assert x.read_ranges([(5, 8), (0, 2)]) == [b"\x05\x06\x07", b"\x00\x01"]
    assert read_many([x, root / "sub/y.bin"])[1] == b"hello"
    with pytest.raises(VideoReadError, match=r"nope: not found"):
        (root / "nope").read_bytes()


def test_capabilities_are_declared_by_each_location(tmp_path):
    """What callers ask instead of which class they hold (docs/development.md, "Storage")."""
    local = Location(tmp_path)
    assert (local.can_list, local.over_network) == (True, False)
    assert local.local_file() == tmp_path
    s3 = Location("s3://bucket/d")
    assert (s3.can_list, s3.over_network) == (True, True)
    web = Location("https://host/d")
    assert (web.can_list, web.over_network) == (False, True)
    assert s3.local_file() is None and web.local_file() is None


# --- S3 (moto) -------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def s3():
    pytest.importorskip("s3fs")
    server_mod = pytest.importorskip("moto.server")
    boto3 = pytest.importorskip("boto3")
    port = _free_port()
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="testing-key-id",
        aws_secret_access_key="testing-secret-key",
        region_name="us-east-1",
    )
    client.create_bucket(Bucket="bucket")
    client.put_object(Bucket="bucket", Key="d/x.bin", Body=bytes(range(256)) * 100)
    client.put_object(Bucket="bucket", Key="d/sub/y.bin", Body=b"hello")
    options = {
        "key": "testing-key-id",
        "secret": "testing-secret-key",
        "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"},
    }
    try:
        yield endpoint, options
    finally:
        server.stop()


def test_s3_queries_and_reads(s3):
    _, options = s3
    root = Location("s3://bucket/d", options)
    assert root.list_dir() == {"sub": None, "x.bin": 25600}
    assert root.walk_files() == ["sub/y.bin", "x.bin"]
    x = root / "x.bin"
    assert x.size() == 25600 and x.exists() and not (root / "nope").exists()
    data = bytes(range(256)) * 100
    ranges = [(20_000, 25_600), (0, 10), (100, 200)]
    assert x.read_ranges(ranges) == [data[a:b] for a, b in ranges]
    assert read_many([x, root / "sub/y.bin"]) == [data, b"hello"]
    assert pickle.loads(pickle.dumps(x)).read_bytes() == data


def test_s3_missing_object_and_bucket_name_the_url(s3):
    _, options = s3
    with pytest.raises(VideoReadError, match=r"^s3://bucket/d/missing.bin: not found$"):
        Location("s3://bucket/d/missing.bin", options).read_bytes()
    with pytest.raises(VideoReadError, match=r"^s3://no-such-bucket/x: not found$"):
        Location("s3://no-such-bucket/x", options).read_range(0, 4)


def test_s3_after_fork_builds_its_own_client(s3):
    _, options = s3
    y = Location("s3://bucket/d/sub/y.bin", options)
    assert y.read_bytes() == b"hello"  # the parent's filesystem and event loop exist now
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.write(w, y.read_bytes())
        finally:
            os._exit(0)
    os.close(w)
    got = os.read(r, 100)
    os.waitpid(pid, 0)
    assert got == b"hello"


def test_s3_honours_the_standard_aws_configuration(s3, monkeypatch):
    endpoint, _ = s3
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing-key-id")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing-secret-key")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    assert Location("s3://bucket/d/sub/y.bin").read_bytes() == b"hello"


def test_s3_write_put_delete(s3, tmp_path):
    _, options = s3
    local = tmp_path / "f.bin"
    local.write_bytes(b"payload")
    target = Location("s3://bucket/out/f.bin", options)
    target.put_file(local)
    assert target.read_bytes() == b"payload"
    target.get_file(tmp_path / "back.bin")  # the inverse, remote and local
    Location(tmp_path / "back.bin").get_file(tmp_path / "copy.bin")
    assert (tmp_path / "copy.bin").read_bytes() == b"payload"
    (target.parent / "g.txt").write_bytes(b"text")
    assert target.parent.walk_files() == ["f.bin", "g.txt"]
    target.parent.delete(recursive=True)
    assert not target.exists()
    target.delete()  # nothing to remove: not an error


@pytest.mark.slow
def test_a_forked_child_s_reads_leave_the_parent_s_connections_working(http_dir):
    """A child forked after the parent read a URL builds its own client and keeps the
    parent's alive: collecting it would unregister the parent's pooled sockets from the epoll
    instance parent and child share, and the parent's next read over them would hang."""
    pytest.importorskip("aiohttp")
    (http_dir.path / "x").write_bytes(bytes(range(256)) * 400)
    loc = Location(f"{http_dir.url}/x")
    assert loc.read_ranges([(0, 2), (50_000, 50_002)]) == [b"\x00\x01", b"\x50\x51"]
    pid = os.fork()
    if pid == 0:  # the child: read, collect everything, leave
        import gc

        ok = loc.read_ranges([(1, 2), (60_000, 60_001)]) == [b"\x01", b"\x60"]
        gc.collect()
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    import concurrent.futures  # the parent's next read, bounded by a timeout

    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        got = pool.submit(loc.read_ranges, [(2, 3), (70_000, 70_001)])
        assert got.result(timeout=30) == [b"\x02", b"\x70"]
    finally:
        pool.shutdown(wait=False)
