"""The per-clip fast paths of the container sources give what their general forms give.

Each clip's read names its video and checks its bytes; those steps have string / list fast
paths (issue 19: the sources at the in-memory decoder's speed). These tests hold each fast path
to the general one it stands in for, on generated inputs.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidload._layout import container_path, found_container_name, join_root
from vidload.sources.base import normalize_video_id, strip_video_ext
from vidload.sources.encoded import distinct_frames
from vidload.sources.jpeg_decode import _marker_problem, _markers_ok, encode_jpeg


class _Str(str):
    """A str subclass: takes the general (pathlib) path of the id functions."""


_parts = st.sampled_from(["a", "b.mp4", "x.MKV", ".", "..", "", "c.", ".avi", "d.e.webm", "é"])
_ids = st.lists(_parts, min_size=1, max_size=4).map("/".join) | st.text(
    alphabet="ab./\\\0", max_size=8
)


def _outcome(fn, value):
    try:
        return ("ok", fn(value))
    except (TypeError, ValueError) as e:
        return (type(e).__name__, str(e))


@settings(max_examples=400, deadline=None)
@given(_ids)
def test_video_id_fast_paths_agree_with_pathlib(video_id):
    assert _outcome(normalize_video_id, video_id) == _outcome(normalize_video_id, _Str(video_id))
    assert _outcome(strip_video_ext, video_id) == _outcome(strip_video_ext, _Str(video_id))


def _container_path_by_pathlib(root: Path, video_id: str, suffix: str) -> Path:
    """What `container_path` computed before its string form (pathlib throughout)."""
    vid = str(PurePosixPath(video_id))
    p = PurePosixPath(vid)
    short_id = str(p.with_suffix("")) if p.suffix.lower() in (".mp4", ".avi") else vid
    full, short = root / (vid + suffix), root / (short_id + suffix)
    return full if short != full and full.exists() else short


@pytest.mark.parametrize("suffix", ["", ".h5"])
@pytest.mark.parametrize("root_kind", ["absolute", "relative", "dot"])
def test_container_name_agrees_with_pathlib(tmp_path, monkeypatch, suffix, root_kind):
    monkeypatch.chdir(tmp_path)
    root = {"absolute": tmp_path / "r", "relative": Path("r"), "dot": Path(".")}[root_kind]
    (tmp_path / root).mkdir(exist_ok=True)
    (tmp_path / root / "c").mkdir()
    (tmp_path / root / f"x.avi{suffix}").mkdir()  # the full-id name exists: it wins
    for vid in ["x.avi", "x", "c/y.mp4", "c/y.txt", "c/z", "c/y.MP4"]:
        expected = _container_path_by_pathlib(root, vid, suffix)
        assert container_path(root, vid, suffix) == expected
        name = found_container_name(str(root), vid, suffix)
        assert join_root(str(root), name) == str(expected)
    assert join_root("/", "a") == "/a" and join_root(".", "a") == "a"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 300), max_size=80))
def test_distinct_frames_agrees_with_numpy_unique(indices):
    idx = np.array(indices, dtype=np.int64)
    frames, order = distinct_frames(idx, 301)
    assert frames.dtype == order.dtype == np.int64
    if idx.size:
        expected, inverse = np.unique(idx, return_inverse=True)
        np.testing.assert_array_equal(frames, expected)
        np.testing.assert_array_equal(order, inverse.reshape(-1))
        np.testing.assert_array_equal(frames[order], idx)
    else:
        assert frames.tolist() == [0] and order.size == 0


_JPEG = encode_jpeg(np.zeros((8, 8, 3), np.uint8))


@pytest.mark.parametrize(
    "data",
    [
        _JPEG,
        _JPEG + b"\0\0\0",  # zero padding after EOI: allowed, by the general check
        _JPEG[:-1],
        _JPEG[:-2] + b"\0\0",
        b"",
        b"\xff\xd8",
        b"\xff\xd8\xff\xd9",
        b"\0" + _JPEG[1:],
        _JPEG[:2] + b"\0" * 10,
    ],
)
def test_marker_fast_check_never_accepts_what_the_full_check_rejects(data):
    for buffer in (data, np.frombuffer(data, np.uint8)):
        full = _marker_problem(np.frombuffer(data, np.uint8))
        if _markers_ok(buffer):
            assert full is None
    assert _markers_ok(_JPEG) and not _markers_ok(_JPEG + b"\0")
