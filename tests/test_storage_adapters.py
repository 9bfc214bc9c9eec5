"""The two adapters that hold every use of fsspec's and s3fs's undocumented parts
(`vidload._storage.http_adapter`, `vidload._storage.s3_adapter`): the installed libraries still
have what they use (a release that moves one fails here, by name), and each function does what
vidload relies on, against the test Range server and the local S3 server."""

from __future__ import annotations

import os

import pytest

from vidload._storage import filesystems, http_adapter, s3_adapter


def _run(fs, coro_fn):
    from fsspec.asyn import sync

    return sync(fs.loop, coro_fn)


def test_fsspec_http_still_has_what_the_adapter_uses():
    pytest.importorskip("aiohttp", reason="aiohttp is not installed (fsspec's HTTP)")
    assert http_adapter.contract_problems() == []


def test_s3fs_still_has_what_the_adapter_uses():
    pytest.importorskip("s3fs", reason="s3fs is not installed (vidload[s3])")
    assert s3_adapter.contract_problems() == []


def test_the_adapters_know_their_filesystems_by_protocol():
    pytest.importorskip("aiohttp")
    pytest.importorskip("s3fs")
    from fsspec.implementations.http import HTTPFileSystem
    from fsspec.implementations.memory import MemoryFileSystem
    from s3fs import S3FileSystem

    http, s3 = HTTPFileSystem(skip_instance_cache=True), S3FileSystem(anon=True)
    memory = MemoryFileSystem()
    assert [http_adapter.is_http(f) for f in (http, s3, memory)] == [True, False, False]
    assert [s3_adapter.is_s3(f) for f in (http, s3, memory)] == [False, True, False]


@pytest.mark.slow
def test_http_adapter_reads_a_range_with_the_filesystem_s_headers(http_dir):
    pytest.importorskip("aiohttp")
    data = os.urandom(5000)
    (http_dir.path / "a.bin").write_bytes(data)
    fs = filesystems.filesystem("http", {"headers": {"X-Vidload-Test": "kept"}})
    url = f"{http_dir.url}/a.bin"

    async def one(path, headers):
        async with http_adapter.get(fs, path, headers) as r:
            body = await r.read()
            http_adapter.raise_for_status(fs, r, path)
            return r.status, body

    http_dir.faults.clear_log()
    assert _run(fs, lambda: one(url, {"Range": "bytes=10-19"})) == (206, data[10:20])
    (request,) = http_dir.faults.requests()
    assert request.range == "bytes=10-19"
    assert http_adapter.url_of(fs, url) == url
    with pytest.raises(FileNotFoundError):
        _run(fs, lambda: one(f"{http_dir.url}/missing.bin", {}))


@pytest.mark.slow
def test_s3_adapter_gets_a_range_and_its_etag(s3_bucket):
    data = os.urandom(3000)
    s3_bucket.put("k/a", data)
    fs = filesystems.filesystem("s3", s3_bucket.storage_options)
    got, etag = _run(fs, lambda: s3_adapter.get_object(fs, f"{s3_bucket.name}/k/a", 100, 200))
    assert got == data[100:200]
    whole, etag_whole = _run(
        fs, lambda: s3_adapter.get_object(fs, f"{s3_bucket.name}/k/a", None, None)
    )
    assert whole == data and etag and etag == etag_whole
    with pytest.raises(FileNotFoundError):
        _run(fs, lambda: s3_adapter.get_object(fs, f"{s3_bucket.name}/k/none", 0, 10))


def test_no_module_but_the_adapters_uses_what_the_libraries_do_not_document():
    import pathlib
    import re

    import vidload

    private = re.compile(r"\bfs\.(_call_s3|_raise_not_found_for_status|set_session|encode_url)\b")
    private_kwargs = re.compile(r"\bfs\.kwargs\b")
    root = pathlib.Path(vidload.__file__).parent
    users = sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*.py")
        if private.search(p.read_text()) or private_kwargs.search(p.read_text())
    )
    assert users == ["_storage/http_adapter.py", "_storage/s3_adapter.py"]
