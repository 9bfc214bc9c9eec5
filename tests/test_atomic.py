"""vidload._atomic: a folder replaced whole, or not at all."""

from __future__ import annotations

import builtins
import errno
import os
import pickle

import pytest

from vidload import _atomic
from vidload._atomic import is_temporary, replace_folder_durably, temp_path, write_bytes_atomic
from vidload.errors import DiskFullError

open_real = builtins.open


def _folder(path, files):
    path.mkdir()
    for name, text in files.items():
        (path / name).write_text(text)
    return path


def test_a_new_folder_takes_the_name(tmp_path):
    tmp = _folder(temp_path(tmp_path / "v"), {"a": "new"})
    replace_folder_durably(tmp, tmp_path / "v")
    assert [p.name for p in tmp_path.iterdir()] == ["v"]
    assert (tmp_path / "v" / "a").read_text() == "new"


def test_an_existing_folder_is_replaced_whole(tmp_path):
    _folder(tmp_path / "v", {"a": "old", "stale": "old"})
    tmp = _folder(temp_path(tmp_path / "v"), {"a": "new"})
    replace_folder_durably(tmp, tmp_path / "v")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v"]  # nothing moved aside is left
    assert sorted(p.name for p in (tmp_path / "v").iterdir()) == ["a"]
    assert (tmp_path / "v" / "a").read_text() == "new"


def test_the_old_folder_is_put_back_when_the_rename_fails(tmp_path, monkeypatch):
    _folder(tmp_path / "v", {"a": "old"})
    tmp = _folder(temp_path(tmp_path / "v"), {"a": "new"})
    real_replace = os.replace
    calls = []

    def failing_replace(src, dst):
        calls.append((src, dst))
        if len(calls) == 3:  # 1: onto the full folder (refused), 2: old aside, 3: new in place
            raise OSError(5, "Input/output error")
        return real_replace(src, dst)

    monkeypatch.setattr(_atomic.os, "replace", failing_replace)
    with pytest.raises(OSError, match="Input/output error"):
        replace_folder_durably(tmp, tmp_path / "v")
    assert (tmp_path / "v" / "a").read_text() == "old"
    left = sorted(p.name for p in tmp_path.iterdir() if p.name != "v")
    assert left == [tmp.name] and is_temporary(tmp.name)  # the caller removes its temporary


def test_a_file_at_the_name_is_not_replaced_by_a_folder(tmp_path):
    (tmp_path / "v").write_text("a user's file")
    tmp = _folder(temp_path(tmp_path / "v"), {"a": "new"})
    with pytest.raises(OSError):
        replace_folder_durably(tmp, tmp_path / "v")
    assert (tmp_path / "v").read_text() == "a user's file"


def test_a_full_disk_is_a_disk_full_error_and_still_an_oserror(tmp_path, monkeypatch):
    monkeypatch.setattr("builtins.open", _open_without_space)
    with pytest.raises(OSError, match=r"no space left on device writing .*m\.csv") as caught:
        write_bytes_atomic(tmp_path / "m.csv", b"video_id\n")
    e = caught.value
    assert isinstance(e, DiskFullError) and e.errno == errno.ENOSPC
    assert e.filename == e.path == str(tmp_path / "m.csv")
    copy = pickle.loads(pickle.dumps(e))
    assert (type(copy), str(copy), copy.path, copy.errno) == (DiskFullError, str(e), e.path, 28)
    assert list(tmp_path.iterdir()) == []  # the temporary is gone


class _NoSpaceFile:
    def __init__(self, path):
        self.path = path
        open_real(path, "wb").close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def write(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")


def _open_without_space(path, mode="r", *args, **kwargs):
    if "w" in mode:
        return _NoSpaceFile(path)
    return open_real(path, mode, *args, **kwargs)
