"""Fault injection: damaged files, foreign exceptions and odd inputs, generated in the tests.

Each test names the cause of issue 10 it covers (A: foreign exceptions from container sources,
B: damaged video vs sequential decode, C: errors through DataLoader workers, G: non-regular
files, H: manifest and list edges, I: bench on damaged folders).
"""

from __future__ import annotations

import pickle
import sys

import pytest
import torch
from media import make_video
from torch.utils.data import DataLoader, Dataset

from vidload import ClipDataset, VideoSource
from vidload.errors import FrameCountError, VideoReadError, VidloadError

W, H = 64, 48
#: Attributes cross a worker boundary in an exception note (Python >= 3.11); the type always.
NOTES = sys.version_info >= (3, 11)


@pytest.fixture(scope="module")
def small_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("faults")
    make_video(folder / "good.mp4", 12, width=W, height=H, options={"g": "4"})
    (folder / "broken.mp4").write_bytes(b"this is not a video\n" * 30)
    return folder


class _ReadPastTheEnd(Dataset):
    """Reads frame 50 of a 12-frame video: a FrameCountError raised inside the worker."""

    def __init__(self, root):
        self.source = VideoSource(root)

    def __len__(self):
        return 1

    def __getitem__(self, i):
        return torch.from_numpy(self.source.read("good.mp4", [0, 50]))


def first_error(loader) -> Exception:
    """The exception the first batch raises, its traceback dropped so that the loader's
    workers shut down now (a traceback kept alive holds the iterator and its workers)."""
    it = iter(loader)
    try:
        next(it)
    except Exception as e:
        return e.with_traceback(None)
    finally:
        del it
    raise AssertionError("the loader raised nothing")


# --------------------------------------------------------------- C: worker boundary


@pytest.mark.parametrize("workers", [0, 1, 2])
def test_c_video_read_error_keeps_type_and_attributes_through_workers(small_dir, workers):
    ds = ClipDataset([("broken.mp4", 0)], VideoSource(small_dir), num_frames=2)
    loader = DataLoader(ds, batch_size=1, num_workers=workers)
    err = first_error(loader)
    assert type(err) is VideoReadError, err
    assert "not a readable video" in str(err)
    if workers and not NOTES:
        return
    assert err.path == str(small_dir / "broken.mp4")
    assert "not a readable video" in err.reason
    assert err.index is None


@pytest.mark.parametrize("workers", [0, 1, 2])
def test_c_frame_count_error_keeps_type_and_attributes_through_workers(small_dir, workers):
    loader = DataLoader(_ReadPastTheEnd(small_dir), batch_size=1, num_workers=workers)
    err = first_error(loader)
    assert type(err) is FrameCountError, err
    assert "frame 50" in str(err)
    assert isinstance(err, IndexError)
    if workers and not NOTES:
        return
    assert (err.video_id, err.actual, err.index) == ("good.mp4", 12, 50)


def test_c_one_argument_form_and_pickling():
    plain = VideoReadError("a message without a record")
    assert str(plain) == "a message without a record"
    assert (plain.path, plain.reason, plain.index) == (None, None, None)
    for err in (
        VideoReadError("x.mp4", "corrupt", 3),
        FrameCountError("x.mp4", 10, 8, 9),
        FrameCountError("x.mp4", None, 8, 9, message="custom"),
        plain,
    ):
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err) and str(back) == str(err)
        assert vars(back) == vars(err)
    assert issubclass(VideoReadError, VidloadError)
