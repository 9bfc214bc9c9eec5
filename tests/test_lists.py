"""Every mmaction2 annotation list shape (its repository's tests/data/annotations, regenerated
here): rawframes with and without an offset, multi-label, JSON, absolute paths, duplicates."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import torch
from media import frame_number, make_video, paint

from vidload.convert import convert, find_inputs
from vidload.dataset import ClipDataset
from vidload.manifest import VideoEntry, load_videos, read_manifest
from vidload.probe import probe
from vidload.sources.jpeg import JpegSource, write_jpeg_folder
from vidload.sources.jpeg_decode import encode_jpeg
from vidload.sources.video import VideoSource

W, H = 64, 48


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("lists")
    write_jpeg_folder(root / "imgs", [encode_jpeg(paint(i, W, H)) for i in range(10)])
    make_video(root / "test.mp4", 10, width=W, height=H)
    return root


def write(path, text):
    path.write_text(text)
    return path


def test_rawframes_with_offset_reads_the_offset_frames(data):
    # mmaction2: frame_dir offset total_frames label; frames offset .. offset + total - 1
    lst = write(data / "rawframe_test_list_with_offset.txt", "imgs 2 5 127\nimgs 2 5 127\n")
    entries = load_videos(lst)
    assert entries[0] == VideoEntry("imgs", 127, 5, None, offset=2)
    ds = ClipDataset(lst, JpegSource(data), num_frames=5, sampling="consecutive", train=False)
    assert len(ds) == 2  # a repeated entry is its own item
    for i in range(2):
        clip, label = ds[i]
        got = [frame_number(f.permute(1, 2, 0).numpy()) for f in clip]
        assert got == [2, 3, 4, 5, 6] and label == 127
    # one more frame than the folder holds past the offset: resampled within the 8 there are
    short = write(data / "short.txt", "imgs 2 9 0\n")
    ds = ClipDataset(short, JpegSource(data), num_frames=9, sampling="consecutive", train=False)
    with pytest.warns(UserWarning, match="only 8 frames"):
        clip, _ = ds[0]
    assert frame_number(clip[0].permute(1, 2, 0).numpy()) == 2


def test_multi_label_lists_give_multi_hot_labels(data):
    raw = write(data / "rawframe_test_list_multi_label.txt", "imgs 5 1\nimgs 5 3 5\n")
    ds = ClipDataset(raw, JpegSource(data), num_frames=2, multi_label=True, num_classes=6)
    assert ds[0][1].tolist() == [0, 1, 0, 0, 0, 0]
    assert ds[1][1].dtype == torch.float32 and ds[1][1].tolist() == [0, 0, 0, 1, 0, 1]
    vid = write(data / "video_test_list_multi_label.txt", "test.mp4 0 3\ntest.mp4 0 2 4\n")
    ds = ClipDataset(vid, VideoSource(data), num_frames=2, multi_label=True, num_classes=5)
    batch = torch.utils.data.default_collate([ds[0], ds[1]])
    assert batch[1].tolist() == [[1, 0, 0, 1, 0], [1, 0, 1, 0, 1]]
    with pytest.raises(ValueError, match=r"has 2 labels.*multi_label=True"):
        ClipDataset(vid, VideoSource(data), num_frames=2)
    with pytest.raises(ValueError, match=r"label 4, outside \[0, num_classes=4\)"):
        ClipDataset(vid, VideoSource(data), num_frames=2, multi_label=True, num_classes=4)
    with pytest.raises(TypeError, match="num_classes must be an int, got None"):
        ClipDataset(vid, VideoSource(data), num_frames=2, multi_label=True)
    # a multi-label list with offsets says so
    off = write(data / "off_multi.txt", "imgs 2 5 1 3\n")
    (e,) = load_videos(off, multi_label=True, with_offset=True)
    assert (e.offset, e.known_frames, e.labels) == (2, 5, (1, 3))


def test_json_lists(data):
    videos = write(data / "video_test.json", json.dumps([{"filename": "test.mp4", "label": 1}]))
    ds = ClipDataset(videos, VideoSource(data), num_frames=3, train=False)
    assert ds[0][1] == 1 and ds[0][0].shape == (3, 3, H, W)
    frames = write(
        data / "rawframe_test.json",
        json.dumps([{"frame_dir": "imgs", "total_frames": 5, "label": [1, 2], "offset": 1}]),
    )
    ds = ClipDataset(frames, JpegSource(data), num_frames=5, sampling="consecutive",
                     train=False, multi_label=True, num_classes=3)  # fmt: skip
    clip, label = ds[0]
    assert [frame_number(f.permute(1, 2, 0).numpy()) for f in clip] == [1, 2, 3, 4, 5]
    assert label.tolist() == [0, 1, 1]
    bad = write(data / "bad.json", json.dumps([{"label": 1}]))
    with pytest.raises(ValueError, match=r"bad.json: entry 0: has neither 'filename'"):
        load_videos(bad)
    null = [{"frame_dir": "imgs", "total_frames": 5, "label": 1}, {"frame_dir": "imgs", "label": 1}]
    null[1]["offset"] = None  # null is not 0: named with the file and entry, never a bare TypeError
    bad = write(data / "null_offset.json", json.dumps(null))
    with pytest.raises(ValueError, match=r"null_offset.json: entry 1: offset must be an int"):
        load_videos(bad)


def test_absolute_paths_need_no_root(data, tmp_path):
    lst = write(tmp_path / "abs.txt", f"# absolute\n\n{data / 'test.mp4'} 4\n")
    (e,) = load_videos(lst)
    assert e.absolute and e.video_id == str(data / "test.mp4").lstrip("/")
    ds = ClipDataset(lst, VideoSource("/"), num_frames=4, sampling="consecutive", train=False)
    assert [frame_number(f.permute(1, 2, 0).numpy()) for f in ds[0][0]] == [3, 4, 5, 6]
    (row,) = probe(lst, workers=1, progress=False)
    assert (row.label, row.actual_frames, row.status) == (4, 10, "ok")
    report = convert(lst, tmp_path / "out", to="npy", workers=1, progress=False)
    assert report.ok and (tmp_path / "out" / (e.video_id[: -len(".mp4")] + ".npy")).exists()
    with pytest.raises(ValueError, match="are absolute paths"):
        probe(lst, root=data, workers=1, progress=False)


def test_duplicates_are_items_for_the_dataset_and_read_once_by_probe_and_convert(data, tmp_path):
    lst = write(tmp_path / "dup.txt", "test.mp4 0\ntest.mp4 0\n")
    lst_root = data
    assert len(ClipDataset(lst, VideoSource(lst_root), num_frames=2)) == 2
    with pytest.warns(UserWarning, match=r"2 repeated entries|1 repeated entries"):
        base, items = find_inputs(lst, root=lst_root)
    assert [it.video_id for it in items] == ["test.mp4"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = probe(lst, root=lst_root, workers=1, progress=False)
        report = convert(lst, tmp_path / "o", root=lst_root, to="hdf5", workers=1, progress=False)
    assert [r.video_id for r in rows] == ["test.mp4"]
    assert report.converted == ("test.mp4",)
    assert [r.video_id for r in read_manifest(tmp_path / "o" / "manifest.csv")] == ["test.mp4"]
    # the list still serves the converted container, one item per entry
    from vidload.sources.hdf5 import Hdf5Source

    ds = ClipDataset(lst, Hdf5Source(tmp_path / "o"), num_frames=2, train=False)
    assert len(ds) == 2 and np.asarray(ds[1][0]).shape == (2, 3, H, W)


def test_offset_and_multi_label_lists_convert_whole_folders(data, tmp_path):
    lst = write(tmp_path / "off.txt", "imgs 2 5 3\n")
    report = convert(lst, tmp_path / "o", root=data, to="npy", workers=1, progress=False)
    (row,) = report.rows
    assert (row.video_id, row.label, row.actual_frames) == ("imgs", 3, 10)  # the whole folder
    ml = write(tmp_path / "ml.txt", "test.mp4 0 2 4\n")
    (row,) = probe(ml, root=data, workers=1, progress=False)
    assert (row.label, row.actual_frames) == (0, 10)  # first label: a manifest row has one
