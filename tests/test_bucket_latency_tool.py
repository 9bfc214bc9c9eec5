"""tools/bucket_latency.py: it says how to install nginx where it is missing, and the nginx it
starts serves byte ranges and listings under each latency's prefix, counts requests, and is
stopped (run only where nginx and its lua module are installed; CI needs neither)."""

from __future__ import annotations

import importlib.util
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parent.parent / "tools" / "bucket_latency.py"


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("bucket_latency", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bucket_latency"] = module
    spec.loader.exec_module(module)
    return module


def test_missing_nginx_says_how_to_install_it(tool, monkeypatch, tmp_path):
    monkeypatch.setattr(tool.shutil, "which", lambda name: None)
    monkeypatch.setattr(tool.os, "access", lambda *a: False)
    with pytest.raises(SystemExit, match=r"apt-get install nginx-light libnginx-mod-http-lua"):
        tool.main(["--work", str(tmp_path)])
    monkeypatch.undo()
    monkeypatch.setattr(tool, "MODULE_DIRS", (str(tmp_path),))
    if tool.shutil.which("nginx") is not None:
        with pytest.raises(SystemExit, match=r"lua module not found.*apt-get install"):
            tool.find_nginx()


def test_nginx_serves_ranges_and_listings_with_latency_and_stops(tool, tmp_path):
    try:
        tool.find_nginx()
    except SystemExit:
        pytest.skip("nginx with its lua module is not installed (the benchmark's, not CI's)")
    pytest.importorskip("aiohttp")
    from vidload._storage import Location

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.bin").write_bytes(bytes(range(256)) * 40)
    listings = tmp_path / "listings"
    assert tool.write_listings(tmp_path, "d", listings) == 1
    server = tool.Nginx(tmp_path / ".", [0.0, 20.0], tool.SHAPES, listings)
    folder = server.dir
    try:
        for ms in ("0", "20"):
            loc = Location(f"{server.url}/ms{ms}/d/x.bin")
            assert loc.read_ranges([(1, 3), (5000, 5002)]) == [b"\x01\x02", b"\x88\x89"]
            assert loc.size() == 10240
            assert "x.bin" in Location(f"{server.url}/ms{ms}/d").list_dir()
        # one range a request: a Range of two is answered whole (200), one range by a 206
        for shape in ("one", "s3"):
            url = f"{server.urls[shape]}/ms0/d/x.bin"
            two = urllib.request.Request(url, headers={"Range": "bytes=1-2,5000-5001"})
            with urllib.request.urlopen(two) as r:
                assert r.status == 200 and len(r.read()) == 10240
            one = urllib.request.Request(url, headers={"Range": "bytes=1-2"})
            with urllib.request.urlopen(one) as r:
                assert r.status == 206 and r.read() == b"\x01\x02"
        missing = urllib.request.Request(f"{server.urls['one']}/ms0/d/nope.bin")
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen(missing)
        if importlib.util.find_spec("s3fs") is not None:  # path-style S3: bucket ms20
            opts = tool.s3_options(server.urls["s3"], "s3fs")
            loc = Location("s3://ms20/d/x.bin", opts)
            assert loc.read_ranges([(1, 3), (5000, 5002)]) == [b"\x01\x02", b"\x88\x89"]
            assert loc.size() == 10240
            # a listing, as S3 answers it (from the documents written above)
            assert Location("s3://ms20/d", opts).list_dir() == {"x.bin": 10240}
            assert Location("s3://ms20/d/nothing", opts).exists() is False
        deadline = time.monotonic() + 5  # nginx writes a log line after its answer
        while server.requests() < 9 and time.monotonic() < deadline:
            time.sleep(0.05)
        got = tool.statuses(server.lines())
        assert got[404] == 1 and got[200] >= 2 and sum(got.values()) >= 9, got
    finally:
        server.stop()
    assert not folder.exists() and server.proc.poll() is not None


def test_the_config_has_one_server_per_shape(tool, tmp_path):
    """Several ranges an answer (`multi`, nginx's default), one range a request (`one`, and
    `s3`: the path-style endpoint), each on its own port (a client learns per host that a
    server does not answer several ranges), each latency under its own prefix."""
    ports = {"multi": 8001, "one": 8002, "s3": 8003}
    conf = tool.nginx_conf(tmp_path / "data", [0.0, 20.0], ports, tmp_path, ["/m/lua.so"])
    servers = conf.split("  server {")[1:]
    assert len(servers) == 3
    for shape, text in zip(ports, servers, strict=True):
        assert f"listen 127.0.0.1:{ports[shape]};" in text
        assert ("max_ranges 1;" in text) == (shape != "multi")
        assert f"location /ms0/ {{ alias {tmp_path / 'data'}/;" in text
        assert "location /ms20/" in text and "ngx.sleep(0.0200)" in text
        assert text.count("ngx.sleep") == 1  # none at 0 ms
    assert "load_module /m/lua.so;" in conf and "$status" in conf
    with pytest.raises(ValueError, match=r"unknown server shape 'gcs'"):
        tool.nginx_conf(tmp_path, [0.0], {"gcs": 1}, tmp_path, [])


def test_each_server_row_reads_its_shape_with_its_client(tool, tmp_path):
    class FakeNginx:
        urls = {"multi": "http://h:1", "one": "http://h:2", "s3": "http://h:3"}

    nginx = FakeNginx()
    root, opts = tool.Backend("multi 20 ms", "multi", 20.0).root("npy", tmp_path, nginx)
    assert (root, opts) == ("http://h:1/ms20/npy", None)
    root, opts = tool.Backend("one 0 ms", "one", 0.0).root("npy", tmp_path, nginx)
    assert (root, opts) == ("http://h:2/ms0/npy", None)
    root, opts = tool.Backend("local", None).root("npy", tmp_path, nginx)
    assert (root, opts) == (str(tmp_path / "data" / "npy"), None)
    from vidload._storage import objectstore

    root, s3fs_opts = tool.Backend("s3fs 20 ms", "s3fs", 20.0).root("hdf5", tmp_path, nginx)
    assert root == "s3://ms20/hdf5"
    assert s3fs_opts["client_kwargs"]["endpoint_url"] == "http://h:3"
    root, fast_opts = tool.Backend("obstore 20 ms", "obstore", 20.0).root("hdf5", tmp_path, nginx)
    assert root == "s3://ms20/hdf5"
    # the s3fs row's options are ones vidload's obstore mapping does not take; the obstore
    # row's are (where obstore is installed)
    assert objectstore._make(s3fs_opts) is None
    if importlib.util.find_spec("obstore") is not None:
        assert objectstore._make(fast_opts) is not None


def test_statuses_count_the_log_lines(tool):
    lines = [
        b'1.0 0.020 GET /ms20/hdf5/c0000/a.h5 206 1000 "bytes=0-9"\n',
        b'1.1 0.020 GET /ms20/hdf5/c0000/a.avi.h5 404 150 "-"\n',
        b'1.2 0.020 HEAD /ms20/hdf5/c0001/a.h5 200 0 "-"\n',
        b'1.3 0.020 GET /ms20/hdf5/c0001/b.h5 404 150 "-"\n',
        b"\n",
    ]
    assert tool.statuses(lines) == {206: 1, 404: 2, 200: 1}


def test_the_spread_manifest_names_every_container_under_its_folder(tool, tmp_path):
    """Colliding stems (`a.avi`, `a.mp4`) keep their own rows; every cell naming a container
    of the base folder (the id, and the manifest's `container` column) is moved under the
    folder; the manifest reads back as the dataset's list."""
    from vidload.manifest import ManifestRow, load_videos, read_manifest, write_manifest

    base = tmp_path / "base"
    base.mkdir()
    for name in ("a.avi.h5", "a.mp4.h5", "b.h5"):
        (base / name).write_bytes(b"x")
    rows = [
        ManifestRow("a.avi", actual_frames=10, container="a.avi.h5"),
        ManifestRow("a.mp4", actual_frames=20, container="a.mp4.h5"),
        ManifestRow("b.webm", label=3, actual_frames=30, container="b.h5"),
    ]
    write_manifest(base / "manifest.csv", rows)
    storage = tool.Storage("hdf5", base, read_manifest(base / "manifest.csv"), 1.0)
    tool._spread(storage, tmp_path / "data", 2)
    out = tmp_path / "data" / "hdf5"
    assert sorted(p.name for p in (out / "c0001").iterdir()) == ["a.avi.h5", "a.mp4.h5", "b.h5"]
    got = read_manifest(out / "manifest.csv")
    assert [(r.video_id, r.container, r.label, r.actual_frames) for r in got] == [
        ("c0000/a.avi", "c0000/a.avi.h5", 0, 10),
        ("c0000/a.mp4", "c0000/a.mp4.h5", 0, 20),
        ("c0000/b.webm", "c0000/b.h5", 3, 30),
        ("c0001/a.avi", "c0001/a.avi.h5", 0, 10),
        ("c0001/a.mp4", "c0001/a.mp4.h5", 0, 20),
        ("c0001/b.webm", "c0001/b.h5", 3, 30),
    ]
    assert storage.entries == 6 and storage.copies == 2
    assert [e.video_id for e in load_videos(out / "manifest.csv")][:2] == [
        "c0000/a.avi",
        "c0000/a.mp4",
    ]


def test_the_inputs_keep_their_names_stems_colliding(tool, tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    (shared / "videos").mkdir(parents=True)
    (shared / "videos-extra").mkdir()
    for name in ("videos/a.mp4", "videos/a.avi", "videos/README.md", "videos-extra/b.webm"):
        (shared / name).write_bytes(b"x")
    monkeypatch.setattr(tool, "SHARED", shared)
    inputs = tool._inputs(tmp_path / "work")
    assert sorted(p.name for p in inputs.iterdir()) == ["a.avi", "a.mp4", "b.webm"]


def test_the_table_shows_ratios_4xx_and_failed_rows(tool):
    def row(backend, server, steady, overall, **kw):
        return {
            "storage": "npy",
            "backend": backend,
            "server": server,
            "workers": 2,
            "steady_median": steady,
            "steady_best": steady + 1,
            "overall_median": overall,
            "first_ms_median": 1500.0,
            "server_requests_per_clip": None if server is None else 9.7,
            "cpu_ms_per_clip": None,
            "client_rounds_per_batch": None,
            "answers_4xx": kw.get("codes", {}),
        }

    failed = {
        "storage": "video",
        "backend": "one 20 ms",
        "server": "one",
        "workers": 2,
        "error": "FileNotFoundError: 3 of the 4 videos ...",
        "answers_4xx": {"404": 3},
    }
    result = {
        "rows": [
            row("local", None, 40.0, 30.0),
            row("one 20 ms", "one", 30.0, 15.0, codes={"404": 2}),
            failed,
        ],
        "load": [6.8, 9.1],
    }
    text = tool.render(result)
    assert (
        "| npy | one 20 ms | 2 | 30.0 (31.0) | 0.75x | 15.0 | 0.50x | 1500 | 9.70 | 2 (404: 2) |"
        in (text)
    )
    assert "| video | one 20 ms | 2 | failed (1) |" in text and "3 (404: 3)" in text
    assert "failed (1): video, one 20 ms, 2 w: FileNotFoundError: 3 of the 4" in text
    assert "load average (1 min) over the run: 6.8-9.1" in text
