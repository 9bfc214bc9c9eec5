"""The CPU-count defaults follow the affinity mask and torchrun's local world size."""

import os
import subprocess
import sys

import pytest

from vidload._cpus import available_cpus, default_workers, local_world_size


def test_available_cpus_follows_affinity():
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no sched_getaffinity on this platform")
    assert available_cpus() == len(os.sched_getaffinity(0))


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no sched_setaffinity")
def test_default_workers_under_one_cpu_affinity():
    code = (
        "import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
        "from vidload._cpus import default_workers; print(default_workers())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1"


@pytest.mark.parametrize(("value", "expected"), [("2", 2), ("", 1), ("x", 1), ("0", 1)])
def test_local_world_size(monkeypatch, value, expected):
    monkeypatch.setenv("LOCAL_WORLD_SIZE", value)
    assert local_world_size() == expected


def test_default_workers_divides_among_local_ranks(monkeypatch):
    monkeypatch.setattr("vidload._cpus.available_cpus", lambda: 4)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    assert default_workers() == 2
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "8")
    assert default_workers() == 1
