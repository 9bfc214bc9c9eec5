"""The test servers themselves: ranges come back right, faults and latency are what was asked."""

from __future__ import annotations

import http.client
import time
import urllib.error
import urllib.request

import pytest
from servers import _parse_range

DATA = bytes(range(256)) * 40  # 10240 bytes, every offset distinguishable mod 256


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes, dict[str, str]]:
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read(), dict(e.headers)


@pytest.mark.parametrize(
    ("header", "span"),
    [
        ("bytes=0-9", (0, 10)),
        ("bytes=10-", (10, 100)),
        ("bytes=-5", (95, 100)),
        ("bytes=90-200", (90, 100)),
        ("bytes=100-", None),
        ("bytes=-0", None),
        ("bytes=5-2", None),
        ("bytes=1-2,5-6", None),  # several ranges: not supported, answered as unsatisfiable
    ],
)
def test_parse_range(header, span):
    assert _parse_range(header, 100) == span


def test_http_range_and_log(http_dir):
    (http_dir.path / "sub").mkdir()
    (http_dir.path / "sub" / "a.bin").write_bytes(DATA)
    url = f"{http_dir.url}/sub/a.bin"
    status, body, headers = _get(url, {"Range": "bytes=1000-1099"})
    assert (status, body) == (206, DATA[1000:1100])
    assert headers["Content-Range"] == f"bytes 1000-1099/{len(DATA)}"
    assert _get(url)[:2] == (200, DATA)
    assert _get(url, {"Range": f"bytes={len(DATA)}-"})[0] == 416
    assert _get(f"{http_dir.url}/sub/missing.bin")[0] == 404
    status, listing, _ = _get(f"{http_dir.url}/sub/")
    assert status == 200 and b'href="a.bin"' in listing
    log = http_dir.faults.requests(path_contains="a.bin")
    assert [(r.method, r.range, r.status, r.bytes) for r in log] == [
        ("GET", "bytes=1000-1099", 206, 100),
        ("GET", None, 200, len(DATA)),
        ("GET", f"bytes={len(DATA)}-", 416, 0),
    ]


def test_http_faults_and_latency(http_dir):
    (http_dir.path / "a.bin").write_bytes(DATA)
    url = f"{http_dir.url}/a.bin"
    http_dir.faults.fail_next(1, "503")
    http_dir.faults.fail_next(1, "reset")
    assert _get(url)[0] == 503
    with pytest.raises((ConnectionError, http.client.HTTPException, urllib.error.URLError)):
        _get(url)
    assert http_dir.faults.pending() == 0
    assert _get(url)[:2] == (200, DATA)
    http_dir.faults.delay_s = 0.2
    t0 = time.monotonic()
    assert _get(url, {"Range": "bytes=0-0"})[1] == DATA[:1]
    assert time.monotonic() - t0 >= 0.2  # a lower bound the server itself enforces
    assert [r.status for r in http_dir.faults.requests()] == [503, 0, 200, 206]


def test_http_through_fsspec(http_dir):
    fsspec = pytest.importorskip("fsspec")
    pytest.importorskip("aiohttp")
    (http_dir.path / "a.bin").write_bytes(DATA)
    fs = fsspec.filesystem("http", skip_instance_cache=True)
    with fs.open(f"{http_dir.url}/a.bin", block_size=1024) as f:
        f.seek(5000)
        assert f.read(10) == DATA[5000:5010]
    assert fs.size(f"{http_dir.url}/a.bin") == len(DATA)
    ranges = [r.range for r in http_dir.faults.requests("GET", "a.bin")]
    assert ranges and all(r is not None and r.startswith("bytes=") for r in ranges)


@pytest.mark.slow
def test_s3_range_faults_and_log(s3_bucket, tmp_path):
    s3fs = pytest.importorskip("s3fs")
    (tmp_path / "tree" / "x").mkdir(parents=True)
    (tmp_path / "tree" / "x" / "a.bin").write_bytes(DATA)
    (tmp_path / "tree" / "b.txt").write_text("b")
    url = s3_bucket.upload(tmp_path / "tree", "pre/fix")
    assert url == f"{s3_bucket.url}/pre/fix"
    assert s3_bucket.keys() == ["pre/fix/b.txt", "pre/fix/x/a.bin"]
    assert s3_bucket.faults.requests() == []  # the admin upload is not logged

    fs = s3fs.S3FileSystem(skip_instance_cache=True, **s3_bucket.storage_options)
    key = f"{s3_bucket.name}/pre/fix/x/a.bin"
    assert fs.cat_file(key, start=1000, end=1100) == DATA[1000:1100]
    get = s3_bucket.faults.requests("GET", "a.bin")[-1]
    assert (get.range, get.status, get.bytes) == ("bytes=1000-1099", 206, 100)

    s3_bucket.faults.clear_log()
    s3_bucket.faults.fail_next(1, "503", match="a.bin")
    assert fs.cat_file(key, start=0, end=10) == DATA[:10]  # botocore retries the SlowDown
    assert [r.status for r in s3_bucket.faults.requests("GET", "a.bin")] == [503, 206]

    s3_bucket.faults.clear_log()
    s3_bucket.faults.fail_next(1, "reset", match="a.bin")
    assert fs.cat_file(key, start=0, end=10) == DATA[:10]
    assert [r.status for r in s3_bucket.faults.requests("GET", "a.bin")] == [0, 206]

    s3_bucket.faults.fail_next(1, "403", match="a.bin")
    with pytest.raises(PermissionError):
        fs.cat_file(key, start=0, end=10)

    s3_bucket.faults.delay_s = 0.2
    t0 = time.monotonic()
    assert fs.cat_file(key, start=10, end=20) == DATA[10:20]
    assert time.monotonic() - t0 >= 0.2


def test_s3_conditional_put_is_honoured(s3_bucket):
    """moto answers If-None-Match: * with 412 when the key exists (what the convert lock uses)."""
    pytest.importorskip("boto3")
    from botocore.exceptions import ClientError

    client = s3_bucket.server.admin()
    client.put_object(Bucket=s3_bucket.name, Key="lock", Body=b"a", IfNoneMatch="*")
    with pytest.raises(ClientError, match="PreconditionFailed"):
        client.put_object(Bucket=s3_bucket.name, Key="lock", Body=b"b", IfNoneMatch="*")
    assert s3_bucket.get("lock") == b"a"


def test_s3_buckets_are_fresh(s3_bucket, s3_server):
    assert s3_bucket.keys() == []
    assert s3_bucket.storage_options["client_kwargs"]["endpoint_url"] == s3_server.endpoint_url
    assert s3_server.endpoint_url.startswith("http://127.0.0.1:")
