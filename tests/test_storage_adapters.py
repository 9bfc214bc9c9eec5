"""The two adapters that hold every use of fsspec's and s3fs's undocumented parts
(`vidload._storage.http_adapter`, `vidload._storage.s3_adapter`): the installed libraries still
have what they use (a release that moves one fails here, by name), and each function does what
vidload relies on, against the test Range server and the local S3 server."""

from __future__ import annotations

import contextlib
import os

import pytest
from servers import _parse_range

from vidload._storage import Location, filesystems, http_adapter, s3_adapter


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
    got, etag, size = _run(fs, lambda: s3_adapter.get_object(fs, f"{s3_bucket.name}/k/a", 100, 200))
    assert got == data[100:200]
    whole, etag_whole, size_whole = _run(
        fs, lambda: s3_adapter.get_object(fs, f"{s3_bucket.name}/k/a", None, None)
    )
    assert whole == data and etag and etag == etag_whole
    # the object's size its answers report (a range's ContentRange total), and a suffix range
    tail, etag_tail, size_tail = _run(
        fs, lambda: s3_adapter.get_object(fs, f"{s3_bucket.name}/k/a", -50, None)
    )
    assert tail == data[-50:] and etag_tail == etag and size == size_whole == size_tail == 3000
    everything = _run(fs, lambda: s3_adapter.get_object(fs, f"{s3_bucket.name}/k/a", -5000, None))
    assert (everything[0], everything[2]) == (data, 3000)  # a suffix past the object: all of it
    with pytest.raises(FileNotFoundError):
        _run(fs, lambda: s3_adapter.get_object(fs, f"{s3_bucket.name}/k/none", 0, 10))


@pytest.mark.slow
def test_an_http_answer_reports_the_object_s_size(http_dir, monkeypatch):
    """`filesystems.cat_one` over the adapter: a range's and a suffix range's answers say the
    object's size (Content-Range's total); a server that ignores the Range (200, the whole
    body) is cut here and its length is the size; a 206 without Content-Range says none."""
    pytest.importorskip("aiohttp")
    data = os.urandom(5000)
    (http_dir.path / "s.bin").write_bytes(data)
    fs = filesystems.filesystem("http", None)
    url = f"{http_dir.url}/s.bin"
    got = [_run(fs, lambda a=a, b=b: filesystems.cat_one(fs, url, a, b)) for a, b in
           [(10, 20), (-30, None), (-9000, None), (None, None)]]  # fmt: skip
    assert [(g[0], g[2]) for g in got] == [
        (data[10:20], 5000), (data[-30:], 5000), (data, 5000), (data, 5000)
    ]  # fmt: skip
    assert len({g[1] for g in got}) == 1 and got[0][1]  # one version (Last-Modified)

    class Answer:  # what the adapter's GET hands back from a server that does less
        def __init__(self, status, headers, body):
            self.status, self.headers, self.body = status, headers, body

        async def read(self):
            return self.body

    def answering(status, headers):
        @contextlib.asynccontextmanager
        async def get(fs, path, asked):
            a, b = _parse_range(asked["Range"], len(data)) if status == 206 else (0, len(data))
            yield Answer(status, headers, data[a:b])

        return get

    # a server that ignores the Range (200, the whole body: its length is the size, the range
    # cut here), and one whose 206 says no Content-Range (no size: `read_ends` asks it after)
    monkeypatch.setattr(http_adapter, "raise_for_status", lambda *a: None)
    for status, headers, size in [(200, {}, 5000), (206, {"ETag": '"e"'}, None)]:
        monkeypatch.setattr(http_adapter, "get", answering(status, headers))
        tail, _, got_size = _run(fs, lambda: filesystems.cat_one(fs, url, -30, None))
        assert (tail, got_size) == (data[-30:], size)
        st, first, last = Location(url).read_ends(100, 30)
        assert (st.size, first, last) == (5000, data[:100], data[-30:])


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


def test_read_ends_on_a_filesystem_whose_answers_say_no_size_asks_it_in_the_same_call(
    monkeypatch,
):
    import threading

    import fsspec

    from vidload._storage import Location

    data = os.urandom(3000)
    fsspec.filesystem("memory").pipe("/ends/obj.bin", data)
    location = Location("memory://ends/obj.bin")
    asked_from = []
    stat = type(location).stat

    def recording_stat(self):
        asked_from.append(threading.current_thread() is threading.main_thread())
        return stat(self)

    monkeypatch.setattr(type(location), "stat", recording_stat)
    st, first, last = location.read_ends(100, 30)
    assert (st.size, first, last) == (3000, data[:100], data[-30:])
    assert asked_from == [False]  # once, beside the GETs (gcs: one round, not two)
