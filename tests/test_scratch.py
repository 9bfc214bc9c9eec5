"""Reused decode memory (`vidload._scratch`): a clip a user receives is never a buffer that a
later read overwrites, and clips read through the scratch are the same bytes as before."""

from __future__ import annotations

import os
import pickle
import threading

import numpy as np
import pytest
import torch
from media import frame_number, paint

from vidload import ClipDataset
from vidload._dataset.items import to_tensor
from vidload._scratch import Scratch
from vidload.sources.encoded import ContainerSource
from vidload.sources.hdf5 import Hdf5Source, write_hdf5
from vidload.sources.jpeg import JpegSource, write_jpeg_folder
from vidload.sources.jpeg_decode import decode_many, encode_jpeg
from vidload.sources.npy import NpySource, write_npy

NUM = 12


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, ContainerSource]:
    base = tmp_path_factory.mktemp("scratch")
    jpegs = [encode_jpeg(paint(i, 64, 48), 95, subsampling="444") for i in range(NUM)]
    write_jpeg_folder(base / "jpeg" / "v", jpegs)
    write_hdf5(base / "hdf5" / "v.h5", jpegs)
    write_npy(base / "npy" / "v.npy", jpegs)
    return {
        "jpeg": JpegSource(base / "jpeg", fps=25.0),
        "hdf5": Hdf5Source(base / "hdf5", fps=25.0),
        "npy": NpySource(base / "npy", fps=25.0),
    }


def test_scratch_reuses_one_buffer_per_thread_and_grows():
    s = Scratch()
    a = s.array((2, 3))
    b = s.array((3, 2))
    assert np.shares_memory(a, b) and b.shape == (3, 2) and b.dtype == np.uint8
    big = s.array((100,))
    assert not np.shares_memory(a, big)  # grown: a new buffer
    assert np.shares_memory(big, s.array((10,)))
    other: list[np.ndarray] = []
    t = threading.Thread(target=lambda: other.append(s.array((10,))))
    t.start()
    t.join()
    assert not np.shares_memory(other[0], big)  # another thread, another buffer


def test_scratch_is_per_process_and_pickles_empty():
    s = Scratch()
    a = s.array((16,))
    s._local.pid = os.getpid() + 1  # as a fork child sees it: the buffer is the parent's
    assert not np.shares_memory(s.array((16,)), a)
    copy = pickle.loads(pickle.dumps(s))
    assert getattr(copy._local, "buf", None) is None
    assert copy.array((4,)).shape == (4,)


def test_decode_many_takes_out_or_scratch_not_both():
    jpeg = encode_jpeg(paint(3, 64, 48))
    out = np.empty((1, 48, 64, 3), np.uint8)
    with pytest.raises(ValueError, match="out or scratch, not both"):
        decode_many([jpeg], out=out, scratch=Scratch())
    s = Scratch()
    first = decode_many([jpeg], scratch=s)
    assert np.shares_memory(first, decode_many([encode_jpeg(paint(5, 64, 48))], scratch=s))
    assert frame_number(first[0]) == 5  # overwritten: the scratch is never handed to a user


@pytest.mark.parametrize("name", ["jpeg", "hdf5", "npy"])
@pytest.mark.parametrize("geometry", [{}, {"short_side": 24, "crop": 20, "flip": True}])
def test_read_returns_the_callers_own_array_and_transient_the_same_frames(sources, name, geometry):
    src = sources[name]
    ds = ClipDataset([("v", 0)], src, num_frames=4, seed=1, **geometry)
    plan = ds.options.geometry.plan(np.random.default_rng(0), 0) if geometry else None
    first = src.read("v", [1, 5, 5, 9], geometry=plan)
    kept = first.copy()
    transient = src.read_transient("v", [1, 5, 5, 9], geometry=plan)
    np.testing.assert_array_equal(transient, first)
    again = src.read("v", [0, 2, 3, 4], geometry=plan)
    src.read_transient("v", [0, 2, 3, 4], geometry=plan)
    assert not np.shares_memory(first, again) and not np.shares_memory(first, transient)
    np.testing.assert_array_equal(first, kept)  # later reads did not touch it
    if not geometry:
        assert [frame_number(f) for f in first] == [1, 5, 5, 9]


@pytest.mark.parametrize("name", ["jpeg", "hdf5", "npy"])
@pytest.mark.parametrize("geometry", [{}, {"short_side": 24, "crop": 20, "flip": True}])
def test_dataset_clips_are_independent_and_equal_to_the_sources_read(sources, name, geometry):
    src = sources[name]
    ds = ClipDataset([("v", 0)] * 4, src, num_frames=4, seed=3, return_info=True, **geometry)
    items = [ds[i] for i in range(4)]
    copies = [clip.clone() for clip, _, _ in items]
    for i in range(4):  # every item again: the first ones are untouched by the later reads
        ds[i]
    for (clip, _, info), before in zip(items, copies, strict=True):
        assert torch.equal(clip, before)
        if not geometry:  # the same bytes as the public read, made a tensor
            expected = to_tensor(src.read("v", info["indices"].numpy()), "TCHW")
            assert torch.equal(clip, expected)
            assert [frame_number(f) for f in clip.permute(0, 2, 3, 1).numpy()] == (
                info["indices"].tolist()
            )
    ptrs = {clip.untyped_storage().data_ptr() for clip, _, _ in items}
    assert len(ptrs) == len(items)


def test_a_subclass_that_overrides_read_is_still_what_the_dataset_reads(sources):
    base = sources["hdf5"]

    class Marked(Hdf5Source):
        def read(self, video_id, indices, *, geometry=None):
            frames = super().read(video_id, indices, geometry=geometry)
            frames[:] = 7
            return frames

    clip, _ = ClipDataset([("v", 0)], Marked(base.root), num_frames=4, seed=0)[0]
    assert bool((clip == 7).all())


def test_two_workers_give_the_same_clips_as_one_process(sources):
    """Each worker decodes into its own scratch (a fork child never reuses the parent's)."""
    src = sources["npy"]
    src.read_transient("v", [0, 1, 2, 3])  # the parent has a scratch buffer before the fork
    ds = ClipDataset([("v", 0)] * 6, src, num_frames=4, seed=5)
    expected = torch.stack([ds[i][0] for i in range(6)])
    loader = torch.utils.data.DataLoader(ds, batch_size=3, num_workers=2)
    got = torch.cat([clips for clips, _ in loader])
    assert torch.equal(got, expected)
