"""tools/fetch_ahead.py: a small run over nginx prints the table, and with fetching ahead the
batches take the round sent ahead and fetch nothing again (run only where nginx with its lua
module and the real clips are there; CI needs neither)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parent.parent / "tools"
SHARED = Path(__file__).resolve().parents[2] / "shared"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_a_small_run_prints_the_waits_with_and_without(tmp_path, capsys):
    latency = _load("bucket_latency")
    try:
        latency.find_nginx()
    except SystemExit:
        pytest.skip("nginx with its lua module is not installed (the benchmark's, not CI's)")
    shared = next((p for p in (SHARED, Path("/work/shared")) if (p / "videos").is_dir()), None)
    if shared is None:
        pytest.skip("the real clips (../shared/videos) are not here")
    pytest.importorskip("aiohttp")
    tool = _load("fetch_ahead")
    out = tmp_path / "out.json"
    argv = ["--work", str(tmp_path / "w"), "--shared", str(shared), "--rounds", "1",
            "--clips", "16", "--batch-size", "4", "--workers", "0", "--storages", "npy",
            "--json", str(out)]  # fmt: skip
    assert tool.main(argv) == 0
    assert "wait ms/batch" in capsys.readouterr().out
    rows = {(r["backend"], r["fetch_ahead"]): r for r in json.loads(out.read_text())["rows"]}
    assert set(rows) == {("local", False), ("20 ms", False), ("20 ms", True)}
    on, off = rows[("20 ms", True)], rows[("20 ms", False)]
    assert on["taken_per_batch"] > 0 and on["again_per_batch"] == 0
    assert off["taken_per_batch"] == 0 and off["wait_ms_per_batch"] > 0
