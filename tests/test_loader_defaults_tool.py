"""tools/loader_defaults.py (the README's DataLoader-recipe figures) runs end to end."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest


@pytest.fixture
def tool(monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "tools"))
    return importlib.import_module("loader_defaults")


def test_quick_run_prints_every_row_and_ratio(tool, tmp_path, capsys):
    assert tool.main(["--quick", "--work", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for row in ("0 workers", r"default \(\d+ workers\)", "prefetch 4", "not persistent"):
        assert len(re.findall(rf"^{row} +(\d+ +){{3}}\d+$", out, flags=re.M)) == 1, row
    assert "load average" in out
    assert "/ 0 workers (steady, best):" in out
    assert "prefetch 4 / prefetch 2 (steady, best):" in out
    assert "restarting workers each epoch" in out
    assert (tmp_path / "npy" / "manifest.csv").is_file()  # built under --work, kept


def test_too_few_epochs_is_refused(tool, capsys):
    with pytest.raises(SystemExit):
        tool.main(["--epochs", "1"])
    assert "--epochs must be >= 2" in capsys.readouterr().err
