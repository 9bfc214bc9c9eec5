"""ClipDataset's video list in flat arrays (vidload._entries): the same entries as the list of
VideoEntry it replaces, pickling (plain and ForkingPickler), and spawned DataLoader workers."""

from __future__ import annotations

import dataclasses
import pickle
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest

from vidload._entries import SharedArrays, VideoEntries, entries_of
from vidload.manifest import VideoEntry, load_videos

WINDOWS = "start" in {f.name for f in dataclasses.fields(VideoEntry)}

#: ids with spaces, non-ASCII letters, a lone surrogate (an undecodable file name's byte, as
#: os.fsdecode gives it) and a newline
ODD_IDS = ["a b/c d.mp4", "ünï/çødé 視頻.mkv", "bad\udcff name.mp4", "line\nbreak.mp4", "x"]


def _varied() -> list[VideoEntry]:
    entries = [
        VideoEntry("a b/c d.mp4", 3),
        VideoEntry("ünï/çødé 視頻", 1, 250, 300, offset=5, labels=(1, 4), absolute=True),
        VideoEntry("bad\udcff name.mp4", -1, extra={"split": "train", "note": ""}),
        VideoEntry("q/r", 0, 0, None, offset=0, labels=(), extra={"note": "x y"}),
        VideoEntry("q/r", 2**62, None, 7, offset=12, labels=None, absolute=False),
        VideoEntry("z.mp4", -(2**63), extra={"split": "val", "note": "ü"}),
    ]
    if WINDOWS:
        entries.append(VideoEntry("w.mp4", 5, **{"start": 1.5, "end": 4.0}))
        entries.append(VideoEntry("w.mp4", 6, **{"start": 0.0, "end": None}))
    return entries


def test_entries_are_exactly_the_list_it_was_built_from():
    listed = _varied()
    entries = VideoEntries.from_entries(listed)
    assert len(entries) == len(listed)
    assert list(entries) == listed
    assert [entries[i] for i in range(-len(listed), len(listed))] == listed + listed
    assert entries[1:4] == listed[1:4] and entries[::-2] == listed[::-2]
    for got, want in zip(entries, listed, strict=True):
        for f in dataclasses.fields(VideoEntry):  # same values and types, field by field
            assert getattr(got, f.name) == getattr(want, f.name)
            assert type(getattr(got, f.name)) is type(getattr(want, f.name)) or f.name == "extra"
    assert entries.video_ids() == [e.video_id for e in listed]
    assert [entries.video_id(i) for i in range(len(listed))] == entries.video_ids()
    with pytest.raises(IndexError, match=r"video index \(8\) must be in \[-\d, \d\)"):
        entries[len(listed) + 2 :] or entries[8]
    assert VideoEntries.from_entries(entries) is entries


@pytest.mark.skipif(not WINDOWS, reason="VideoEntry has no start/end window in this version")
def test_windows_are_kept():
    listed = [VideoEntry("a.mp4", 0, **{"start": 2.5, "end": 3.25}), VideoEntry("a.mp4", 1)]
    entries = VideoEntries.from_entries(listed)
    assert list(entries) == listed
    assert entries[1].start is None and entries[0].end == 3.25  # type: ignore[attr-defined]


def test_columns_left_out_when_every_entry_has_the_default():
    """A list of (video_id, label) pairs is ids and labels only."""
    entries = entries_of([("a.mp4", 0), ("b.mp4", 1)])
    assert set(entries._cols._arrays) == {"id_bytes", "id_ends", "label"}
    full = VideoEntries.from_entries(_varied())
    assert {"known_frames", "reported_frames", "offset", "flags", "labels_ends"} <= set(
        full._cols._arrays
    )


def test_tuple_errors_are_load_videos_errors():
    """A bad value leaves the fast path: the message is load_videos' (it names the item)."""
    for videos, error in [
        ([("a.mp4", 0), ("b.mp4", True)], TypeError),
        ([("a.mp4", 0), ("/abs.mp4", 1)], ValueError),
        ([("a.mp4", 0), ("b.mp4", 2**63)], ValueError),
        ([("a.mp4", 0, -1)], ValueError),
        ([("a.mp4", 0), ("b.mp4",)], TypeError),
        ([("a\0.mp4", 0)], ValueError),
    ]:
        with pytest.raises(error) as want:
            load_videos(videos)
        with pytest.raises(error) as got:
            entries_of(videos)
        assert str(got.value) == str(want.value)


def test_values_the_columns_cannot_hold_are_refused_by_name():
    with pytest.raises(TypeError, match=r"video 'b': known_frames must be an int or None, got '7'"):
        VideoEntries.from_entries([VideoEntry("a", 0), VideoEntry("b", 0, "7")])  # type: ignore[arg-type]
    with pytest.raises(
        ValueError, match=r"video 'a': reported_frames \(-9223372036854775808\) must"
    ):
        VideoEntries.from_entries([VideoEntry("a", 0, None, -(2**63))])
    with pytest.raises(TypeError, match=r"video 'a': extra \('k': 1\) must map a str column"):
        VideoEntries.from_entries([VideoEntry("a", 0, extra={"k": 1})])  # type: ignore[dict-item]


def test_pickling_round_trips():
    """Plain pickle copies the arrays; ForkingPickler (what a spawned worker is started with,
    torch's reductions registered) sends shared-memory handles: a few hundred bytes whatever
    the list's length, and the entries come back the same."""
    listed = _varied() * 500
    entries = VideoEntries.from_entries(listed)
    plain = pickle.dumps(entries)
    assert list(pickle.loads(plain)) == listed
    forked = bytes(ForkingPickler.dumps(entries))
    assert len(forked) < 4096 < len(plain) / 10
    back = pickle.loads(forked)
    assert list(back) == listed
    # the sender now reads the shared pages too; a second pickling sends the same handles
    assert entries._cols._shared is not None
    assert all(t.is_shared() for t in entries._cols.shared().values())
    assert (
        list(entries) == listed and list(pickle.loads(bytes(ForkingPickler.dumps(back)))) == listed
    )


def test_shared_arrays_are_views_after_sharing():
    arrays = SharedArrays({"a": np.arange(5), "empty": np.zeros(0, np.uint8)})
    tensors = arrays.shared()
    tensors["a"][0] = 42  # the arrays now read the shared tensors
    assert arrays["a"][0] == 42 and len(arrays["empty"]) == 0


class _Zeros:
    """Every video has 40 frames; reads give frames whose pixels hold the frame index."""

    def reported_frames(self, video_id):
        return 40

    def actual_frames(self, video_id):
        return 40

    def read(self, video_id, indices):
        out = np.zeros((len(indices), 4, 4, 3), np.uint8)
        out[:] = np.asarray(indices, np.uint8)[:, None, None, None]
        return out
