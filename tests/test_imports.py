"""The top level imports lazily: tools (convert, probe, the sources) never import torch."""

from __future__ import annotations

import subprocess
import sys

import pytest

import vidload

TORCH_FREE = [
    "vidload",
    "vidload.convert",
    "vidload.probe",
    "vidload.cli",
    "vidload.sources.jpeg",
    "vidload.sources.hdf5",
    "vidload.sources.npy",
    "vidload.sources.video",
]


def test_tools_and_sources_do_not_import_torch():
    code = (
        "import importlib, sys\n"
        f"for name in {TORCH_FREE!r}:\n"
        "    importlib.import_module(name)\n"
        "    assert 'torch' not in sys.modules, name + ' imported torch'\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_every_public_name_resolves_and_is_listed():
    for name in vidload.__all__:
        assert getattr(vidload, name) is not None
    assert set(vidload.__all__) <= set(dir(vidload))
    assert set(vidload.__all__) == set(vidload._LAZY)  # the export list and the lazy map agree
    assert len(set(vidload.__all__)) == len(vidload.__all__)
    from vidload.dataset import ClipDataset

    assert vidload.ClipDataset is ClipDataset


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="module 'vidload' has no attribute 'NoSuchThing'"):
        vidload.NoSuchThing  # noqa: B018
    assert not hasattr(vidload, "no_such_thing")
