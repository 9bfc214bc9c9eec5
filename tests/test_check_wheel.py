"""tools/check_wheel.py's content rules (the build and the fresh venv run in .ci/run)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parent.parent / "tools"


@pytest.fixture(scope="module")
def check_wheel():
    sys.path.insert(0, str(TOOLS))
    try:
        yield importlib.import_module("check_wheel")
    finally:
        sys.path.remove(str(TOOLS))


GOOD_WHEEL = [
    "vidload/__init__.py",
    "vidload/py.typed",
    "vidload/sources/npy.py",
    "vidload-0.1.0.dist-info/licenses/LICENSE",
    "vidload-0.1.0.dist-info/METADATA",
]
GOOD_SDIST = [
    "vidload-0.1.0",
    "vidload-0.1.0/LICENSE",
    "vidload-0.1.0/README.md",
    "vidload-0.1.0/pyproject.toml",
    "vidload-0.1.0/PKG-INFO",
    "vidload-0.1.0/vidload/py.typed",
    "vidload-0.1.0/vidload/__init__.py",
]


def test_good_wheel_and_sdist_pass(check_wheel):
    assert check_wheel.wheel_problems(GOOD_WHEEL) == []
    assert check_wheel.sdist_problems(GOOD_SDIST) == []


@pytest.mark.parametrize(
    ("extra", "missing", "problem"),
    [
        (["tests/test_x.py"], None, "'tests/test_x.py', outside the package"),
        (["tools/micro.py"], None, "'tools/micro.py', outside the package"),
        (["vidload/__pycache__/cli.cpython-311.pyc"], None, "a cache file"),
        ([], "vidload/py.typed", "lacks vidload/py.typed"),
        ([], "vidload-0.1.0.dist-info/licenses/LICENSE", "lacks the license"),
    ],
)
def test_wheel_junk_or_gaps_are_named(check_wheel, extra, missing, problem):
    names = [n for n in GOOD_WHEEL if n != missing] + extra
    found = check_wheel.wheel_problems(names)
    assert len(found) == 1 and problem in found[0], found


@pytest.mark.parametrize(
    ("extra", "missing", "problem"),
    [
        (["vidload-0.1.0/tests/test_x.py"], None, "holds vidload-0.1.0/tests/test_x.py"),
        ([], "vidload-0.1.0/LICENSE", "lacks LICENSE"),
        ([], "vidload-0.1.0/README.md", "lacks README.md"),
        ([], "vidload-0.1.0/vidload/py.typed", "lacks vidload/py.typed"),
        (["other/x"], None, "2 top-level folders"),
    ],
)
def test_sdist_junk_or_gaps_are_named(check_wheel, extra, missing, problem):
    names = [n for n in GOOD_SDIST if n != missing] + extra
    found = check_wheel.sdist_problems(names)
    assert len(found) == 1 and problem in found[0], found
