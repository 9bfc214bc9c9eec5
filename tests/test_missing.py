"""ClipDataset(..., missing=): listed videos that are not there, found when the dataset is built,
with one directory listing per folder (counted here, not timed), converted names included; a
bucket with one listing request per prefix; an HTTP root per video; a custom source says once
that it was not checked."""

from __future__ import annotations

import logging
import shutil
import urllib.parse

import numpy as np
import pytest
from media import make_video

from vidload._storage.local import LocalLocation
from vidload.convert import convert
from vidload.dataset import ClipDataset
from vidload.sources.hdf5 import Hdf5Source
from vidload.sources.jpeg import JpegSource
from vidload.sources.npy import NpySource
from vidload.sources.video import VideoSource

W, H = 64, 48
THERE = ["a/x1.avi", "a/x2.avi", "b/y1.avi", "c d/z 1.avi"]
GONE = ["a/gone.avi", "b/gone.avi", "e/z.avi"]  # e/: a folder that is not there at all
LIST = ["a/x1.avi", "a/gone.avi", "a/x2.avi", "b/gone.avi", "b/y1.avi", "c d/z 1.avi", "e/z.avi"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("missing")
    for vid in THERE:
        make_video(root / "in" / vid, 4, width=W, height=H, codec="mpeg4")
    for to in ("hdf5", "jpeg", "npy"):
        assert convert(root / "in", root / to, to=to, workers=1, progress=False).ok
    assert convert(root / "in", root / "video", to="video", workers=1, progress=False).ok
    (root / "train.txt").write_text("".join(f"{v} {k % 3}\n" for k, v in enumerate(LIST)))
    return root


@pytest.fixture
def listings(monkeypatch):
    """The local folders listed (`LocalLocation.list_names` calls), in order."""
    seen: list[str] = []
    real = LocalLocation.list_names

    def counted(self):
        seen.append(str(self))
        return real(self)

    monkeypatch.setattr(LocalLocation, "list_names", counted)
    return seen


SOURCES = {
    "video": lambda r: VideoSource(r / "in"),
    "converted video": lambda r: VideoSource(r / "video"),  # a/x1.avi -> a/x1.mp4
    "hdf5": lambda r: Hdf5Source(r / "hdf5"),  # a/x1.avi -> a/x1.h5
    "jpeg": lambda r: JpegSource(r / "jpeg"),  # a/x1.avi -> a/x1/
    "npy": lambda r: NpySource(r / "npy"),
}


@pytest.mark.parametrize("kind", list(SOURCES))
def test_missing_videos_are_named_when_the_dataset_is_built(tree, kind, listings):
    source = SOURCES[kind](tree)
    with pytest.raises(
        FileNotFoundError,
        match=r"^3 of the 7 videos in .*train.txt are not in \w+Source\('.*'\): 'a/gone.avi', "
        r"'b/gone.avi', 'e/z.avi'; pass missing='skip' to leave them out",
    ):
        ClipDataset(tree / "train.txt", source, num_frames=2)
    # one listing per folder of the list (a, b, "c d", e), not one stat per video
    assert len(listings) == 4, listings
    with pytest.warns(UserWarning, match=r"3 of the 7 videos .* left out \(missing='skip'\)"):
        ds = ClipDataset(tree / "train.txt", source, num_frames=2, missing="skip")
    assert [e.video_id for e in ds.videos] == THERE
    assert len(ds) == 4 and ds[3][0].shape == (2, 3, H, W)


def test_a_complete_list_is_listed_once_per_folder_and_reads(tree, listings):
    videos = [(v, 0) for v in THERE * 50]  # 200 entries in 3 folders
    ds = ClipDataset(videos, VideoSource(tree / "in"), num_frames=2)
    assert len(ds) == 200 and len(listings) == 3


def test_many_missing_are_counted_and_the_first_few_shown(tree):
    videos = [(f"a/v{k:02d}.avi", 0) for k in range(12)] + [("a/x1.avi", 1)]
    with pytest.raises(FileNotFoundError, match=r"^12 of the 13 .*'a/v04.avi' and 7 more;"):
        ClipDataset(videos, VideoSource(tree / "in"))
    with pytest.raises(FileNotFoundError, match=r"1 of the 1 .*missing='skip' leaves no video"):
        ClipDataset([("nope.avi", 0)], VideoSource(tree / "in"), missing="skip")
    with pytest.raises(ValueError, match=r"missing \('ignore'\) must be one of"):
        ClipDataset(videos, VideoSource(tree / "in"), missing="ignore")


def test_a_bucket_is_listed_once_per_prefix(tree, s3_bucket):
    url = s3_bucket.upload(tree / "hdf5", "k400_h5")
    source = Hdf5Source(url, storage_options=s3_bucket.storage_options)
    s3_bucket.faults.clear_log()
    with pytest.raises(FileNotFoundError, match=r"^3 of the 7 .*'a/gone.avi', 'b/gone.avi'"):
        ClipDataset(tree / "train.txt", source, num_frames=2)
    requests = s3_bucket.faults.requests()
    assert all(r.method == "GET" and "list-type" in r.query for r in requests)
    prefixes = [urllib.parse.parse_qs(r.query)["prefix"][0] for r in requests]
    # one listing request per prefix (a, b, "c d", e); s3fs lists the parent once more to
    # tell that e/ is not there
    assert sorted(prefixes) == [f"k400_h5/{p}" for p in ("", "a/", "b/", "c d/", "e/")]


def test_an_http_root_is_checked_per_video(tree, http_dir):
    shutil.copytree(tree / "hdf5", http_dir.path, dirs_exist_ok=True)
    source = Hdf5Source(http_dir.url)
    with pytest.raises(FileNotFoundError, match=r"^3 of the 7 .*'a/gone.avi', 'b/gone.avi'"):
        ClipDataset(tree / "train.txt", source, num_frames=2)
    with pytest.warns(UserWarning, match="3 of the 7"):
        ds = ClipDataset(tree / "train.txt", source, num_frames=2, missing="skip")
    assert len(ds) == 4


class Custom:
    """A FrameSource of its own: nothing to list."""

    def reported_frames(self, video_id):
        return 4

    def actual_frames(self, video_id):
        return 4

    def read(self, video_id, indices):
        return np.zeros((len(indices), 8, 8, 3), np.uint8)


class CustomUnchecked(Custom):
    pass


def test_a_source_that_cannot_list_says_once_it_did_not_check(caplog):
    caplog.set_level(logging.WARNING, logger="vidload.dataset")
    for _ in range(3):
        ClipDataset([("nowhere.mp4", 0)], CustomUnchecked())
    said = [r for r in caplog.records if "did not check" in r.getMessage()]
    assert len(said) == 1
    assert said[0].getMessage().startswith("CustomUnchecked has no missing_videos(video_ids)")
