"""ReadAheadSampler: yields the wrapped sampler's elements unchanged, hints the bytes the items
read (not whole files, where the source can name them)."""

from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.data import BatchSampler, DistributedSampler, SequentialSampler, Subset

from vidload import prefetch
from vidload.dataset import ClipDataset
from vidload.errors import VideoReadError
from vidload.prefetch import (
    HasByteRanges,
    HasFiles,
    ReadAheadSampler,
    ReadAheadWarning,
    item_files,
    item_ranges,
)
from vidload.sources.hdf5 import Hdf5Source, write_hdf5
from vidload.sources.jpeg import JpegSource, write_jpeg_folder
from vidload.sources.jpeg_decode import encode_jpeg
from vidload.sources.npy import NpySource, write_npy
from vidload.sources.video import VideoSource

NUM_VIDEOS = 6
NUM_FRAMES = 5
FADV = "POSIX_FADV_WILLNEED"


def _jpegs(k: int) -> list[bytes]:
    return [encode_jpeg(np.full((16, 24, 3), 10 * k + i, np.uint8)) for i in range(NUM_FRAMES)]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """The same six videos as npy files, HDF5 files and JPEG folders."""
    root = tmp_path_factory.mktemp("store")
    for k in range(NUM_VIDEOS):
        write_npy(root / "npy" / f"v{k}.npy", _jpegs(k))
        write_hdf5(root / "h5" / f"v{k}.h5", _jpegs(k))
        write_jpeg_folder(root / "jpeg" / f"v{k}", _jpegs(k))
    return root


def _videos(n: int = NUM_VIDEOS) -> list[tuple[str, int]]:
    return [(f"v{k}.mp4", k) for k in range(n)]


@pytest.fixture(scope="module")
def npy_ds(store) -> ClipDataset:
    return ClipDataset(_videos(), NpySource(store / "npy"), num_frames=2, seed=0)


class Recorder:
    """Stands in for os.posix_fadvise: records (file, offset, length, advice) of each call,
    the file as its (st_dev, st_ino)."""

    def __init__(self) -> None:
        self.calls: list[tuple[tuple[int, int], int, int, int]] = []
        self.lock = threading.Lock()

    def __call__(self, fd: int, offset: int, length: int, advice: int) -> None:
        st = os.fstat(fd)
        with self.lock:
            self.calls.append(((st.st_dev, st.st_ino), offset, length, advice))

    @property
    def files(self) -> list[tuple[int, int]]:
        return [c[0] for c in self.calls]


@pytest.fixture
def fadvise(monkeypatch) -> Recorder:
    rec = Recorder()
    monkeypatch.setattr(os, "posix_fadvise", rec, raising=False)
    if not hasattr(os, FADV):
        monkeypatch.setattr(os, FADV, 3, raising=False)
    return rec


def _ids(paths) -> list[tuple[int, int]]:
    """(st_dev, st_ino) of each path, as Recorder.files lists them."""
    return [(os.stat(p).st_dev, os.stat(p).st_ino) for p in paths]


def _runs(files: list) -> list:
    """`files` with consecutive repeats collapsed (an item's ranges in one file hint it once)."""
    return [f for k, f in enumerate(files) if k == 0 or files[k - 1] != f]


@settings(max_examples=60, deadline=None)
@given(
    order=st.lists(st.integers(0, NUM_VIDEOS - 1), max_size=30),
    lookahead=st.integers(0, 40),
    batch=st.integers(0, 4),
)
@pytest.mark.slow
def test_yields_exactly_the_wrapped_elements_in_order(npy_ds, order, lookahead, batch):
    elements = [order[i : i + batch] for i in range(0, len(order), batch)] if batch else order
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "posix_fadvise", Recorder(), raising=False)
        mp.setattr(os, FADV, getattr(os, FADV, 3), raising=False)
        sampler = ReadAheadSampler(elements, npy_ds, lookahead=lookahead)
        assert list(sampler) == elements
        assert list(sampler) == elements  # and again: each iteration is fresh


def test_hints_each_item_lookahead_elements_before_it_is_yielded(npy_ds, fadvise):
    log: list[str] = []
    order = [4, 2, 5, 0, 3]

    def logged():
        for i in order:
            log.append(f"pull {i}")
            yield i

    class Logged:
        def __iter__(self):
            return logged()

    for i in ReadAheadSampler(Logged(), npy_ds, lookahead=2):
        log.append(f"use {i}")
    assert log == [
        *["pull 4", "pull 2", "pull 5", "use 4"],
        *["pull 0", "use 2", "pull 3", "use 5", "use 0", "use 3"],
    ]
    root = npy_ds.source.root
    assert _runs(fadvise.files) == _ids(root / f"v{i}.npy" for i in order)
    assert {c[3] for c in fadvise.calls} == {os.POSIX_FADV_WILLNEED}
    assert all(c[2] > 0 for c in fadvise.calls)  # ranges, not whole files (length 0)


@pytest.mark.parametrize(
    ("make_source", "folder"),
    [(Hdf5Source, "h5"), (NpySource, "npy"), (JpegSource, "jpeg")],
)
def test_hints_the_files_each_source_reads(store, fadvise, make_source, folder):
    source = make_source(store / folder)
    assert isinstance(source, HasFiles) and isinstance(source, HasByteRanges)
    ds = ClipDataset(_videos(), source, num_frames=2, seed=0)
    sampler = ReadAheadSampler([3, 1], ds, lookahead=1)
    assert list(sampler) == [3, 1]
    expected = [r for k in (3, 1) for r in source.byte_ranges(*ds.planned_reads(k)[0])]
    assert [c[0] for c in fadvise.calls] == _ids(p for p, _, _ in expected)
    assert [c[1:3] for c in fadvise.calls] == [(a, n) for _, a, n in expected]
    assert sampler.num_hinted == len(expected) and sampler.num_failed == 0
    # and the files are exactly those the items read
    read = {source.path(f"v{k}.mp4") for k in (3, 1)} if folder != "jpeg" else set()
    for k in (3, 1):
        if folder == "jpeg":
            read |= {source.frame_path(f"v{k}.mp4", int(i)) for i in ds.planned_reads(k)[0][1]}
    assert set(fadvise.files) == set(_ids(read))


def test_source_files(store, tmp_path):
    jpeg = JpegSource(store / "jpeg")
    assert jpeg.files("v2.mp4") == [
        store / "jpeg" / "v2" / f"img_{i:05d}.jpg" for i in range(1, NUM_FRAMES + 1)
    ]
    with pytest.raises(VideoReadError, match="frame folder not found"):
        jpeg.files("nope")
    assert Hdf5Source(store / "h5").files("a/v2.mp4") == [store / "h5" / "a" / "v2.h5"]
    assert NpySource(store / "npy").files("a/v2") == [store / "npy" / "a" / "v2.npy"]


def test_video_source_hints_its_path(tmp_path, fadvise):
    (tmp_path / "a.mp4").write_bytes(b"not decoded by read-ahead")
    ds = ClipDataset([("a.mp4", 0)], VideoSource(tmp_path), num_frames=2, seed=0)
    video_id, files = item_files(ds)(0)
    assert video_id == "a.mp4" and files() == [tmp_path / "a.mp4"]
    assert list(ReadAheadSampler([0], ds)) == [0]
    assert fadvise.files == _ids([tmp_path / "a.mp4"])


def test_same_video_is_hinted_once_in_a_row(tmp_path, fadvise):
    for k in range(3):
        (tmp_path / f"v{k}.mp4").write_bytes(b"not decoded by read-ahead")
    ds = ClipDataset(_videos(3), VideoSource(tmp_path), num_frames=2, clips_per_video=4)
    assert list(ReadAheadSampler(SequentialSampler(ds), ds, lookahead=3)) == list(range(12))
    assert fadvise.files == _ids(tmp_path / f"v{k}.mp4" for k in range(3))


def test_same_range_is_hinted_once_in_a_row(store, fadvise):
    ds = ClipDataset(_videos(3), NpySource(store / "npy"), num_frames=2, clips_per_video=4)
    assert list(ReadAheadSampler(SequentialSampler(ds), ds, lookahead=3)) == list(range(12))
    assert len(set(fadvise.calls)) == len(fadvise.calls)  # the header: once per video
    assert _runs(fadvise.files) == _ids(store / "npy" / f"v{k}.npy" for k in range(3))


def test_missing_files_are_counted_and_warned_once(store, fadvise):
    videos = [("v0", 0), ("gone1", 1), ("v1", 2), ("gone2", 3)]
    for source in (NpySource(store / "npy"), JpegSource(store / "jpeg")):
        # files gone after the dataset was built (which finds missing ones: test_datasets.py)
        source.missing_videos = lambda ids: []
        ds = ClipDataset(videos, source, num_frames=2, seed=0)
        del source.missing_videos  # picklable again
        sampler = ReadAheadSampler([0, 1, 2, 3], ds, lookahead=1)
        with pytest.warns(ReadAheadWarning, match="could not hint .*gone1.*num_failed") as rec:
            assert list(sampler) == [0, 1, 2, 3]
        assert len([w for w in rec if w.category is ReadAheadWarning]) == 1
        assert sampler.num_failed == 2
        assert sampler.num_hinted == len(fadvise.calls)
        kept = [p for v in ("v0", "v1") for p in source.files(v)]
        assert fadvise.files and set(fadvise.files) <= set(_ids(kept))
        fadvise.calls.clear()


def test_bad_indices_are_counted_and_yielded(npy_ds, fadvise):
    sampler = ReadAheadSampler([1, 99, "x", -1], npy_ds, lookahead=0)
    with pytest.warns(ReadAheadWarning, match=r"could not hint item 99: index \(99\) must be"):
        assert list(sampler) == [1, 99, "x", -1]
    assert sampler.num_failed == 2 and sampler.num_hinted == len(fadvise.calls)
    root = npy_ds.source.root  # -1 is the last item, as ds[-1]
    assert _runs(fadvise.files) == _ids([root / "v1.npy", root / "v5.npy"])


def test_batch_sampler(npy_ds, fadvise):
    batches = BatchSampler(SequentialSampler(npy_ds), batch_size=4, drop_last=False)
    sampler = ReadAheadSampler(batches, npy_ds, lookahead=1)
    assert len(sampler) == 2
    assert list(sampler) == [[0, 1, 2, 3], [4, 5]]
    root = npy_ds.source.root
    assert _runs(fadvise.files) == _ids(root / f"v{k}.npy" for k in range(6))


def test_distributed_sampler_and_set_epoch(npy_ds, fadvise):
    for rank in (0, 1):
        plain = DistributedSampler(npy_ds, num_replicas=2, rank=rank, shuffle=True, seed=5)
        inner = DistributedSampler(npy_ds, num_replicas=2, rank=rank, shuffle=True, seed=5)
        wrapped = ReadAheadSampler(inner, npy_ds, lookahead=2)
        assert len(wrapped) == 3
        for epoch in (0, 7):
            plain.set_epoch(epoch)
            wrapped.set_epoch(epoch)
            assert inner.epoch == epoch
            assert list(wrapped) == list(plain)


def test_subset_maps_to_the_underlying_items(npy_ds, fadvise):
    sub = Subset(Subset(npy_ds, [5, 4, 3, 1]), [3, 0])  # -> items 1 and 5
    assert list(ReadAheadSampler([0, 1], sub)) == [0, 1]
    root = npy_ds.source.root
    assert _runs(fadvise.files) == _ids([root / "v1.npy", root / "v5.npy"])


def test_abandoned_iteration_stops_the_hint_thread(npy_ds, fadvise):
    it = iter(ReadAheadSampler(list(range(6)) * 50, npy_ds, lookahead=8))
    assert [next(it), next(it)] == [0, 1]
    assert any(t.name == "vidload-read-ahead" for t in threading.enumerate())
    it.close()
    assert not any(t.name == "vidload-read-ahead" for t in threading.enumerate())


def test_platform_without_fadvise_warns_once_and_yields_all(npy_ds, monkeypatch):
    monkeypatch.delattr(os, "posix_fadvise", raising=False)
    prefetch._warn_unsupported.cache_clear()
    with pytest.warns(ReadAheadWarning, match="posix_fadvise is not available"):
        sampler = ReadAheadSampler([2, 0, 1], npy_ds)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = ReadAheadSampler([2, 0, 1], npy_ds)
    assert list(sampler) == list(again) == [2, 0, 1]
    assert sampler.num_hinted == 0
    prefetch._warn_unsupported.cache_clear()


class NoFiles:
    def reported_frames(self, video_id):
        return 4

    def actual_frames(self, video_id):
        return 4

    def read(self, video_id, indices):
        return np.zeros((len(indices), 2, 2, 3), np.uint8)


def test_bad_arguments(npy_ds):
    with pytest.raises(TypeError, match="needs a ClipDataset or a torch Subset of one, got list"):
        ReadAheadSampler([0], [1, 2, 3])
    with pytest.raises(TypeError, match="NoFiles has none"):
        ReadAheadSampler([0], ClipDataset([("a", 0)], NoFiles(), num_frames=2))
    with pytest.raises(ValueError, match=r"lookahead \(-1\) must be >= 0"):
        ReadAheadSampler([0], npy_ds, lookahead=-1)
    with pytest.raises(TypeError, match="lookahead must be an int"):
        ReadAheadSampler([0], npy_ds, lookahead=2.0)
    with pytest.raises(TypeError, match="sampler must be iterable"):
        ReadAheadSampler(3, npy_ds)


LONG = 60  # frames of the long video: a clip of 3 reads a small part of it


@pytest.fixture(scope="module")
def long_store(tmp_path_factory) -> Path:
    """One 60-frame video (frames of different byte sizes) as npy, HDF5 and a JPEG folder."""
    root = tmp_path_factory.mktemp("long")
    rng = np.random.default_rng(0)
    frames = [
        encode_jpeg(rng.integers(0, 1 + 60 * (i % 4), (16, 24, 3), dtype=np.uint8))
        for i in range(LONG)
    ]
    write_npy(root / "npy" / "long.npy", frames)
    write_hdf5(root / "h5" / "long.h5", frames)
    write_jpeg_folder(root / "jpeg" / "long", frames)
    return root


def _long_ds(source, **kw) -> ClipDataset:
    return ClipDataset([("long.mp4", 0)], source, num_frames=3, return_info=True, **kw)


def _hinted_mask(fadvise: Recorder, path: Path) -> np.ndarray:
    """bool (file size,): the bytes of `path` the recorded hints cover."""
    size = path.stat().st_size
    mask = np.zeros(size, bool)
    for f, a, n, _ in fadvise.calls:
        assert f == _ids([path])[0]
        mask[a : a + n if n else size] = True
    return mask


@pytest.mark.parametrize("clips", [1, 4])
def test_hdf5_hints_cover_exactly_the_frames_read_and_the_metadata(long_store, fadvise, clips):
    import h5py

    path = long_store / "h5" / "long.h5"
    ds = _long_ds(Hdf5Source(long_store / "h5", fps=25), clips_per_video=clips, seed=3)
    with h5py.File(path, "r") as f:
        base, offsets = f["frames"].id.get_offset(), f["offsets"][()]
    for item in range(clips):
        fadvise.calls.clear()
        assert list(ReadAheadSampler([item], ds, lookahead=0)) == [item]
        read = ds[item][2]["indices"].numpy()
        frames = np.zeros(path.stat().st_size, bool)
        for i in read:
            frames[base + offsets[i] : base + offsets[i + 1]] = True
        data = np.zeros_like(frames)
        data[base : base + offsets[-1]] = True
        hinted = _hinted_mask(fadvise, path)
        assert np.array_equal(hinted & data, frames)  # the frame bytes: exactly those read
        assert hinted[~data].all()  # and the metadata (superblock, headers, offsets)
        assert hinted[data].sum() < data.sum() / 4  # not the whole file


@pytest.mark.parametrize("clips", [1, 4])
def test_npy_hints_cover_exactly_the_rows_read_and_the_header(long_store, fadvise, clips):
    path = long_store / "npy" / "long.npy"
    ds = _long_ds(NpySource(long_store / "npy", fps=25), clips_per_video=clips, seed=3)
    rows = np.load(path, mmap_mode="r")
    base, cols = rows.offset, rows.shape[1]
    for item in range(clips):
        fadvise.calls.clear()
        assert list(ReadAheadSampler([item], ds, lookahead=0)) == [item]
        read = ds[item][2]["indices"].numpy()
        expected = np.zeros(path.stat().st_size, bool)
        expected[:base] = True
        for i in read:
            expected[base + i * cols : base + (i + 1) * cols] = True
        assert np.array_equal(_hinted_mask(fadvise, path), expected)
        assert expected.sum() < expected.size / 4


def test_npy_read_mode_hints_the_whole_file(long_store, fadvise):
    ds = _long_ds(NpySource(long_store / "npy", mode="read", fps=25))
    assert list(ReadAheadSampler([0], ds, lookahead=0)) == [0]
    assert [c[1:3] for c in fadvise.calls] == [(0, 0)]  # that mode reads the whole file


def test_jpeg_hints_exactly_the_frame_files_read(long_store, fadvise):
    source = JpegSource(long_store / "jpeg", fps=25)
    ds = _long_ds(source, clips_per_video=3, seed=1)
    for item in range(3):
        fadvise.calls.clear()
        assert list(ReadAheadSampler([item], ds, lookahead=0)) == [item]
        read = {int(i) for i in ds[item][2]["indices"]}
        assert sorted(fadvise.files) == sorted(_ids(source.frame_path("long.mp4", i) for i in read))
        assert {c[1:3] for c in fadvise.calls} == {(0, 0)}


@pytest.mark.parametrize(
    "kw",
    [
        {"train": True, "clips_per_video": 3},
        {"train": False, "clips_per_video": 2, "spatial_views": 3, "crop": 8},
        {"train": False, "clips_per_video": 2, "spatial_views": 2, "crop": 8, "stack_views": True},
        {"train": True, "sampling": "segment"},
    ],
)
def test_planned_reads_equal_what_the_items_read(long_store, kw):
    source = NpySource(long_store / "npy", fps=25)
    ds = ClipDataset(
        [("long.mp4", 0), ("long", 1)], source, num_frames=4, return_info=True, seed=9, **kw
    )
    for epoch in (0, 5):
        ds.set_epoch(epoch)
        for item in range(len(ds)):
            planned = ds.planned_reads(item)
            info = ds[item][2]
            read = info["indices"].numpy().reshape(-1, 4)
            if kw.get("stack_views"):  # the views of a clip share its frames
                read = read[:: kw["spatial_views"]]
            assert [vid for vid, _ in planned] == [info["video_id"]] * len(read)
            assert [list(p) for _, p in planned] == [list(r) for r in read]


class Unreported(NpySource):
    def reported_frames(self, video_id):
        return None

    def missing_videos(self, video_ids):  # plans only: the file need not be there
        return []


def test_planned_reads_without_a_known_count_fall_back_to_whole_files(tmp_path, fadvise):
    ds = ClipDataset([("long.mp4", 0)], Unreported(tmp_path), num_frames=2)
    with pytest.raises(LookupError, match="unknown without decoding"):
        ds.planned_reads(0)
    video_id, ranges = item_ranges(ds)(0)
    assert video_id == "long.mp4" and ranges() == [(tmp_path / "long.npy", 0, 0)]


def test_planned_reads_follow_on_error_skip_past_broken_videos(long_store):
    source = NpySource(long_store / "npy", fps=25)
    videos = [("long.mp4", 0), ("long", 1), ("./long", 2)]
    ds = ClipDataset(videos, source, num_frames=4, return_info=True, on_error="skip", seed=2)
    ds._counts.mark_broken(0)  # as if an earlier read had found it broken
    planned = ds.planned_reads(0)
    vid, idx = planned[0]
    item = ds[0][2]
    assert vid == item["video_id"] == "long" and list(idx) == list(item["indices"])
    for v in range(len(videos)):
        ds._counts.mark_broken(v)
    assert ds.planned_reads(0) == []
