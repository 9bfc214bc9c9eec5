"""ClipDataset's video list in flat arrays (vidload._dataset.entries): the same entries as the
list of VideoEntry it replaces, pickling (plain and ForkingPickler), and spawned DataLoader
workers."""

from __future__ import annotations

import dataclasses
import json
import pickle
import warnings
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest
import torch
from media import make_video

from vidload._dataset.entries import VideoEntries, entries_of
from vidload._shared_arrays import SharedArrays
from vidload.dataset import ClipDataset
from vidload.loader import make_loader
from vidload.manifest import ManifestRow, VideoEntry, load_videos, write_manifest

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


def test_every_input_form_gives_what_load_videos_gives(tmp_path):
    """Tuples (fast path, and the slow one for ids that need normalising or bad values),
    mmaction2 text and JSON lists (offsets, multi-labels, absolute paths) and manifests with
    extra columns: ClipDataset.videos equals load_videos' list, entry by entry."""
    pairs = [(vid, k) for k, vid in enumerate(ODD_IDS)]
    triples = [("a.mp4", 0, 10), ("b.mp4", 1, None), ("c.mp4", 2, 0)]
    odd = [("a//b/./c.mp4", 0), ["d.mp4", np.int64(2)], ("e.mp4", 3, np.int32(9))]
    text = tmp_path / "rawframes.txt"
    text.write_text("ab/x 20 1 3\nüy 30 2\n/abs/z 10 4\n", encoding="utf-8")
    js = tmp_path / "list.json"
    js.write_text(
        json.dumps(
            [
                {"filename": "v é.mp4", "label": [1, 2]},
                {"frame_dir": "f", "total_frames": 9, "label": 0, "offset": 3},
            ]
        )
    )
    manifest = tmp_path / "manifest.csv"
    write_manifest(
        manifest,
        [
            ManifestRow("m/1.mp4", 0, 50, 48, extra={"split": "train", "who": "x"}),
            ManifestRow("m/2 é.mp4", None, None, 30, extra={"split": "val", "who": ""}),
        ],
    )
    cases = [
        (pairs, {}),
        (triples, {}),
        (odd, {}),
        (_varied(), {}),
        (str(text), {"multi_label": True}),
        (js, {"multi_label": True}),
        (manifest, {}),
    ]
    for videos, kwargs in cases:
        classes = {"num_classes": 5} if kwargs else {}
        ds = ClipDataset(videos, _Zeros(), 4, train=False, **kwargs, **classes)
        assert isinstance(ds.videos, VideoEntries)
        assert list(ds.videos) == load_videos(videos, **kwargs), videos


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
    with pytest.raises(TypeError, match=r"video 'b': start must be a number or None, got 'x'"):
        VideoEntries.build(["a", "b"], [0, 1], start=[None, "x"])  # type: ignore[list-item]


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
    # a dataset: its entries and its counts' arrays both travel as handles
    ds = ClipDataset(listed, _Zeros(), 4, train=False)
    assert list(pickle.loads(pickle.dumps(ds)).videos) == listed
    again = pickle.loads(bytes(ForkingPickler.dumps(ds)))
    assert list(again.videos) == listed and again.videos is again._counts._entries


def test_shared_arrays_are_views_after_sharing():
    arrays = SharedArrays({"a": np.arange(5), "empty": np.zeros(0, np.uint8)})
    tensors = arrays.shared()
    tensors["a"][0] = 42  # the arrays now read the shared tensors
    assert arrays["a"][0] == 42 and len(arrays["empty"]) == 0


def test_learned_counts_and_state_per_slot_after_the_change():
    """A video listed twice (same offset) shares one slot; another offset is its own;
    state() and learned_frames are sorted by (video_id, offset) as before."""
    videos = [VideoEntry("b", 0, 10), VideoEntry("a", 1, 10), VideoEntry("b", 2, 10, offset=3)]
    videos.append(VideoEntry("b", 3, 10))
    ds = ClipDataset(videos, _Zeros(), 4, train=False)
    counts = ds._counts
    counts.learn(3, 7, warn=None)  # the slot of entries 0 and 3
    counts.learn(2, 5, warn=None)
    counts.mark_broken(1)
    assert ds.learned_frames == {"b": 5} and ds.broken_videos == ["a"]
    assert ds.learned_state() == {"learned": [["b", 0, 7], ["b", 3, 5]], "broken": [["a", 0]]}
    other = ClipDataset(videos, _Zeros(), 4, train=False)
    other.load_learned_state(ds.learned_state())
    assert other.learned_state() == ds.learned_state() and other._counts.is_broken(1)
    with pytest.raises(ValueError, match=r"names video 'b' \(offset 9\), which is not in"):
        other.load_learned_state({"learned": [["b", 9, 4]]})


class _Zeros:
    """Every video has 40 frames at 25 fps; reads give frames whose pixels hold the frame
    index."""

    def reported_frames(self, video_id):
        return 40

    def actual_frames(self, video_id):
        return 40

    def timestamps(self, video_id):
        return np.arange(40) / 25.0

    def read(self, video_id, indices):
        out = np.zeros((len(indices), 4, 4, 3), np.uint8)
        out[:] = np.asarray(indices, np.uint8)[:, None, None, None]
        return out


@pytest.mark.slow
def test_spawned_workers_give_the_batches_forked_ones_do(tmp_path):
    """make_loader with multiprocessing_context="spawn": the workers receive the dataset as
    shared-memory handles and load the same batches as forked workers, learned counts
    included (a short video found by a spawned worker is known to the main process)."""
    from vidload.sources.video import VideoSource

    for k, n in enumerate((20, 26, 31, 24)):
        make_video(tmp_path / f"c{k % 2} é/v {k}.mp4", n, width=32, height=32, options={"g": "5"})
    videos = [(f"c{k % 2} é/v {k}.mp4", k % 2, 40 if k == 1 else None) for k in range(4)]
    results = {}
    for context in ("fork", "spawn"):
        ds = ClipDataset(videos, VideoSource(tmp_path), 4, clips_per_video=2, seed=3)
        loader = make_loader(
            ds, 3, num_workers=2, read_ahead=False, multiprocessing_context=context
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the list's wrong count for v 1
            results[context] = [(c.clone(), lab.clone()) for c, lab in loader]
        assert ds.learned_frames == {"c1 é/v 1.mp4": 26}
    assert len(results["spawn"]) == 3
    for (c0, l0), (c1, l1) in zip(results["fork"], results["spawn"], strict=True):
        assert torch.equal(c0, c1) and torch.equal(l0, l1)
