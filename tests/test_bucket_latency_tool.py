"""tools/bucket_latency.py: it says how to install nginx where it is missing, and the nginx it
starts serves byte ranges and listings under each latency's prefix, counts requests, and is
stopped (run only where nginx and its lua module are installed; CI needs neither)."""

from __future__ import annotations

import importlib.util
import sys
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
    server = tool.Nginx(tmp_path, [0.0, 20.0])
    folder = server.dir
    try:
        for ms in ("0", "20"):
            loc = Location(f"{server.url}/ms{ms}/d/x.bin")
            assert loc.read_ranges([(1, 3), (5000, 5002)]) == [b"\x01\x02", b"\x88\x89"]
            assert loc.size() == 10240
            assert "x.bin" in Location(f"{server.url}/ms{ms}/d").list_dir()
        assert server.requests() >= 6
    finally:
        server.stop()
    assert not folder.exists() and server.proc.poll() is not None
