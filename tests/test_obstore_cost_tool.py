"""tools/obstore_cost.py: a tiny run prints one row per client with the CPU per request of
HTTP and S3-protocol reads from nginx (run only where nginx and obstore are installed; CI needs
neither: `pip install "vidload[obstore]"`)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parent.parent / "tools"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_a_tiny_run_prints_every_client_s_cpu_per_request(capsys):
    pytest.importorskip("obstore", reason="obstore is not installed (vidload[obstore])")
    pytest.importorskip("s3fs", reason="s3fs is not installed (vidload[s3])")
    latency = _load("bucket_latency")
    try:
        latency.find_nginx()
    except SystemExit as e:
        pytest.skip(str(e))
    tool = _load("obstore_cost")
    argv = ["--objects", "2", "--ranges", "2", "--rounds", "1", "--min-time", "0"]
    assert tool.main(argv) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    clients = [r.split("|")[1].strip() for r in rows[1:]]
    assert clients == [
        "fsspec, batch", "vidload, batch", "obstore, batch", "fsspec, one by one",
        "obstore, one by one",
    ]  # fmt: skip
    for row in rows[1:]:
        cells = [c.strip() for c in row.split("|")[2:-1]]
        assert all(float(c) > 0 for c in cells), row
