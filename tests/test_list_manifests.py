"""An OUTPUT says what it holds (issue 31): converting a list writes `manifest-<list stem>.csv`,
exactly that list's entries in its order, beside the whole OUTPUT's `manifest.csv`; two
different lists with one stem are refused, not merged."""

from __future__ import annotations

import io

import pytest
from media import encode_frames, frame_number

from vidload import ClipDataset
from vidload._convert.report import print_convert_summary
from vidload.convert import convert
from vidload.errors import UsageError
from vidload.manifest import read_manifest
from vidload.sources.npy import NpySource

W, H = 64, 48
CLASSES = ["ApplyEyeMakeup", "Basketball", "YoYo"]


def _ucf(cls: str, group: int) -> str:
    return f"{cls}/v_{cls}_g{group:02d}_c01.avi"


#: UCF101's split: groups 8.. train, 1..7 test (here 8, 9 and 1, 2)
TRAIN = [(_ucf(c, g), k) for k, c in enumerate(CLASSES) for g in (8, 9)]
TEST = [(_ucf(c, g), k) for k, c in enumerate(CLASSES) for g in (1, 2)]


@pytest.fixture(scope="module")
def ucf(tmp_path_factory):
    root = tmp_path_factory.mktemp("ucf")
    for n, (vid, _) in enumerate(TRAIN + TEST):
        encode_frames(root / vid, range(10 * n, 10 * n + 8), codec="mpeg4", width=W, height=H)
    (root / "trainlist01.txt").write_text("".join(f"{v} {k}\n" for v, k in TRAIN[::-1]))
    (root / "testlist01.txt").write_text("".join(f"{v} {k}\n" for v, k in TEST))
    return root


def _summary(report) -> str:
    out = io.StringIO()
    print_convert_summary(report, out)
    return out.getvalue()


def test_a_trainlist_then_a_testlist_leave_a_manifest_each(ucf, tmp_path):
    out = tmp_path / "out"
    train = convert(ucf / "trainlist01.txt", out, to="npy", workers=1, progress=False)
    test = convert(ucf / "testlist01.txt", out, to="npy", workers=1, progress=False)
    assert {r.video_id for r in read_manifest(out / "manifest.csv")} == {
        v for v, _ in TRAIN + TEST
    }  # the whole OUTPUT
    got_train = [(r.video_id, r.label) for r in read_manifest(out / "manifest-trainlist01.csv")]
    got_test = [(r.video_id, r.label) for r in read_manifest(out / "manifest-testlist01.csv")]
    assert got_train == TRAIN[::-1]  # exactly its entries, in its order
    assert got_test == TEST
    assert all(r.container for r in read_manifest(out / "manifest-testlist01.csv"))
    text = _summary(test)
    assert f"manifest: {out / 'manifest.csv'} (12 videos: everything OUTPUT holds" in text
    assert (
        f"list manifest: {out / 'manifest-testlist01.csv'} (6 entries of testlist01.txt, "
        "in its order): train from this one"
    ) in text
    assert train.list_entries == train.list_total == 6
    # training from the test list's manifest reads exactly the test videos
    ds = ClipDataset(str(out / "manifest-testlist01.csv"), NpySource(out), num_frames=2)
    assert ds.videos.video_ids() == [v for v, _ in TEST]
    for i, (vid, label) in enumerate(TEST):
        clip, got = ds[i]
        first = 10 * [v for v, _ in TRAIN + TEST].index(vid)
        assert got == label
        assert all(first <= frame_number(f.permute(1, 2, 0).numpy()) < first + 8 for f in clip)


def test_another_list_with_the_same_stem_is_refused(ucf, tmp_path):
    out = tmp_path / "out"
    convert(ucf / "trainlist01.txt", out, to="npy", workers=1, progress=False)
    other = ucf / "other"
    other.mkdir(exist_ok=True)
    (other / "trainlist01.txt").write_text("".join(f"{v} {k}\n" for v, k in TEST[:2]))
    before = sorted(p.name for p in out.rglob("*.npy"))
    with pytest.raises(UsageError, match=r"manifest-trainlist01.csv holds the entries of another"):
        convert(other / "trainlist01.txt", out, to="npy", root=ucf, workers=1, progress=False)
    assert sorted(p.name for p in out.rglob("*.npy")) == before  # nothing converted
    want = [(r.video_id, r.label) for r in read_manifest(out / "manifest-trainlist01.csv")]
    assert want == TRAIN[::-1]  # not merged
    # the same list again: its manifest, rewritten
    again = convert(ucf / "trainlist01.txt", out, to="npy", workers=1, progress=False)
    assert again.converted == () and again.list_entries == 6


def test_a_window_list_keeps_each_entry_and_its_window(ucf, tmp_path):
    """A video listed twice with two windows: two rows, each with its start and end, read
    back as the windows."""
    vid = TRAIN[0][0]
    windows = ucf / "windows.csv"
    windows.write_text(f"video_id,label,start,end\n{vid},0,0.0,0.12\n{vid},1,0.12,\n")
    out = tmp_path / "out"
    with pytest.warns(UserWarning, match="repeated entries"):
        report = convert(windows, out, to="npy", workers=1, progress=False)
    assert report.list_entries == 2
    rows = read_manifest(out / "manifest-windows.csv")
    assert [(r.video_id, r.label, r.extra) for r in rows] == [
        (vid, 0, {"start": "0.0", "end": "0.12"}),
        (vid, 1, {"start": "0.12", "end": ""}),
    ]
    ds = ClipDataset(str(out / "manifest-windows.csv"), NpySource(out), num_frames=3)
    first = 10 * [v for v, _ in TRAIN + TEST].index(vid)
    inside = [{frame_number(f.permute(1, 2, 0).numpy()) - first for f in ds[i][0]} for i in (0, 1)]
    assert max(inside[0]) <= 2 and min(inside[1]) >= 3, inside  # 25 fps: 0.12 s is frame 3


def test_a_list_into_a_bucket_leaves_its_manifest_there(ucf, s3_bucket, tmp_path):
    """The same into a bucket OUTPUT: each list's manifest an object beside `manifest.csv`,
    another list of the same stem refused."""
    pytest.importorskip("s3fs")
    out = f"{s3_bucket.url}/out"
    opts = s3_bucket.storage_options
    kw = {"to": "npy", "workers": 1, "progress": False, "storage_options": opts}
    train = convert(ucf / "trainlist01.txt", out, **kw)
    convert(ucf / "testlist01.txt", out, **kw)
    assert train.list_manifest_path == f"{out}/manifest-trainlist01.csv"

    def rows(name):
        path = tmp_path / name
        path.write_bytes(s3_bucket.get(f"out/{name}"))
        return [(r.video_id, r.label) for r in read_manifest(path)]

    assert rows("manifest-trainlist01.csv") == TRAIN[::-1]
    assert rows("manifest-testlist01.csv") == TEST
    assert sorted(rows("manifest.csv")) == sorted(TRAIN + TEST)
    other = ucf / "bucket-other"
    other.mkdir(exist_ok=True)
    (other / "testlist01.txt").write_text(f"{TRAIN[0][0]} 0\n")
    with pytest.raises(UsageError, match=r"manifest-testlist01.csv holds the entries of another"):
        convert(other / "testlist01.txt", out, root=ucf, **kw)
    assert rows("manifest-testlist01.csv") == TEST
