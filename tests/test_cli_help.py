"""`vidload --help` and each command's help name what the code has: every command of
`cli.COMMANDS` and every storage kind of the table (`vidload._kinds`), with the class that
reads it, read from the table, never typed into the help (issue 31: the help once named three
kinds and three sources when there were four)."""

from __future__ import annotations

import pytest

from vidload import _kinds
from vidload._kinds import get_kind, kind_names, register
from vidload.cli import main


@pytest.fixture
def dummy():
    """A kind only this test registers: tests/raw_kind.py's raw frames."""
    register("raw", "raw_kind:RawFormat")
    try:
        yield get_kind("raw")
    finally:
        _kinds.unregister("raw")


def _help(argv, capsys) -> str:
    assert main([*argv, "--help"]) == 0
    return " ".join(capsys.readouterr().out.split())  # argparse wraps anywhere


def test_the_top_level_help_names_every_command_and_kind(dummy, capsys):
    from vidload.cli import COMMANDS

    text = _help([], capsys)
    names = [c.__name__.rpartition(".")[2] for c in COMMANDS]
    assert names == ["convert", "probe", "choose", "bench"]
    assert f"{', '.join(names[:-1])} and {names[-1]}." in text
    for name in names:
        assert f" {name} " in text  # the command's line in the list
    for name in kind_names():
        kind = get_kind(name)
        reader = kind.source.__name__
        assert f"{name}: {kind.described} ({reader})" in text, name
    assert "raw: .rgb files of raw frames (RawSource)" in text
    # convert's one-line summary there names every kind too
    assert (
        "JPEG frame folders, .h5 files, .npy files, video files, LMDB environments of JPEG "
        "frames or .rgb files of raw frames" in text
    )


def test_convert_help_names_every_kind_and_its_reader(dummy, capsys):
    text = _help(["convert"], capsys)
    for name in ("jpeg", "hdf5", "npy", "video", "lmdb", "raw"):
        kind = get_kind(name)
        reader = kind.source.__name__
        assert f"--to {name}: {kind.described}, read by {reader}(OUTPUT)" in text, name
    assert "{jpeg,hdf5,npy,video,lmdb,raw}" in text  # the choices


def test_probe_help_names_every_kind(dummy, capsys):
    from vidload._kinds import input_kinds

    text = _help(["probe"], capsys)
    assert "video files, JPEG frame folders, .h5 files or .npy files" in text
    # what probe takes: video files and the kinds the table says convert and probe take
    assert [k.name for k in input_kinds()] == ["jpeg", "hdf5", "npy"]
    assert ".rgb files" not in text  # the raw kind is not an input kind


def test_without_the_dummy_it_is_gone(capsys):
    assert "raw" not in _help([], capsys).split()
    assert ".rgb files" not in _help(["convert"], capsys)


def test_a_kind_whose_extra_is_missing_is_named_with_what_to_install(capsys):
    """A kind whose module cannot import (LMDB without `vidload[lmdb]`, as in the wheel's
    fresh venv) never breaks `vidload --help` or a command: it is named with its extra."""
    register("absent", "vidload_no_such_module:Format", extra="absent")
    try:
        for argv in ([], ["convert"], ["probe"]):
            text = _help(argv, capsys)
            if argv != ["probe"]:  # probe names its input kinds only
                assert "pip install 'vidload[absent]'" in text, argv
    finally:
        _kinds.unregister("absent")


def test_bench_help_names_every_kind(dummy, capsys):
    """bench's summary names the kinds from the table (it once typed four and left out lmdb)."""
    text = _help(["bench"], capsys)
    assert f"every storage kind: {', '.join(kind_names())})" in text
    assert "lmdb" in kind_names() and "raw" in kind_names()
