"""A cold batch of `--to video` clips in one round (issue 23): the sidecar of heads
(`vidload.sources._heads`, kind "video") holds every video's persisted frame index, so a
`VideoSource` in a bucket plans a batch of videos it never opened (header, packets, the
sidecar's check spans) without first fetching each video's own index. Rounds are counted at
the server (moto S3 slowed so that every request of one round is in flight at once); the items
equal per-item reads byte for byte; a video rewritten since the sidecar was written is read
from its own (new) index, never through the old one.
"""

from __future__ import annotations

import shutil
import warnings

import pytest
from media import encode_frames, frame_number, make_video

from vidload._dataset.batch import getitems
from vidload._layout import index_path
from vidload.sources._heads import HEADS_NAME, read_heads, write_heads
from vidload.sources.video import VideoSource

torch = pytest.importorskip("torch")
from vidload import ClipDataset  # noqa: E402

# minutes of servers and subprocesses: the full tier only (`pytest -m "not slow"` skips it)
pytestmark = pytest.mark.slow

N = 40
VIDEOS = 6
IDS = [f"a/x{k}.mp4" for k in range(VIDEOS)]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Short-GOP MP4s, as `vidload convert --to video` lays them out, each with its persisted
    index, and the sidecar of heads."""
    root = tmp_path_factory.mktemp("vheads") / "data"
    for vid in IDS:
        make_video(root / vid, N, options={"g": "8", "bf": "0"})
    src = VideoSource(root)
    for vid in IDS:
        src.write_index(vid)
    assert write_heads(VideoSource(root), IDS) == VIDEOS
    return root


def _listed(n: int = N) -> list[tuple[str, int, int]]:
    return [(vid, k % 3, n) for k, vid in enumerate(IDS)]  # counts as a manifest lists them


def _dataset(url, opts, seed=3):
    return ClipDataset(_listed(), VideoSource(url, storage_options=opts), num_frames=4, seed=seed)


#: The server's latency while a round is counted: every request of one round must reach the
#: server within it for `peak_in_flight` to see them all at once. 0.3 s was not enough on a
#: loaded 2-core CI machine (11 of a round's 12 requests in flight together, the last one sent
#: more than 0.3 s after the first); a later round still starts only after an answer.
ROUND_DELAY_S = 1.0


def _round(ds, faults, indices):
    """(the batch's requests, the peak in flight, the items), the server slowed so that every
    request of one round overlaps the others."""
    faults.clear_log()
    faults.delay_s = ROUND_DELAY_S
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            items = getitems(ds, indices)
    finally:
        faults.delay_s = 0.0
    return faults.requests(), faults.peak_in_flight, items


def _same(a, b) -> bool:
    return len(a) == len(b) and all(
        torch.equal(x[0], y[0]) and x[1] == y[1] for x, y in zip(a, b, strict=True)
    )


def test_the_sidecar_holds_each_videos_index(folder):
    heads = read_heads(VideoSource(folder).store.location, "video")
    assert heads is not None and len(heads) == VIDEOS
    record = heads.get(IDS[0])
    assert record is not None and record.raw == index_path(folder / IDS[0]).read_bytes()
    assert record.size == (folder / IDS[0]).stat().st_size


def test_a_cold_batch_of_videos_is_one_round(folder, s3_bucket):
    """Never-opened videos listed in the sidecar: their headers, packets and check spans in
    one concurrent round, no video's own index asked; the items equal per-item reads of a
    source without the sidecar (their own indexes), byte for byte."""
    url = s3_bucket.upload(folder, "heads")
    opts = s3_bucket.storage_options
    ds = _dataset(url, opts)
    assert ds.source._video_heads() is not None  # read once per process, before the batch
    batch = list(range(VIDEOS))
    reqs, peak, items = _round(ds, s3_bucket.faults, batch)
    assert all(r.method == "GET" and r.range for r in reqs), reqs  # no size, no listing
    assert not any(r.path.endswith(".vidload-index") for r in reqs)
    assert len(reqs) >= VIDEOS and peak == len(reqs), (peak, len(reqs))  # one round
    plain = folder.parent / "plain"
    if not plain.exists():
        shutil.copytree(folder, plain)
        (plain / HEADS_NAME).unlink()
    ref = _dataset(s3_bucket.upload(plain, "plain"), opts)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _same(items, [ref[i] for i in batch])
    ds.set_epoch(1)  # warm: at most one round, packets only (small videos: all held)
    reqs, peak, _ = _round(ds, s3_bucket.faults, batch)
    assert peak == len(reqs) and not any(r.path.endswith(".vidload-index") for r in reqs)


def test_a_video_rewritten_since_the_sidecar_is_read_from_its_own_index(
    folder, s3_bucket, tmp_path
):
    """One video rewritten (other frames, its own index rewritten with it), the sidecar left
    stale: its items are the new object's frames (never the old index with new bytes), read
    through its own index; the others keep the sidecar's."""
    root = tmp_path / "data"
    shutil.copytree(folder, root)
    encode_frames(root / IDS[1], range(100, 100 + N - 9), options={"g": "5", "bf": "0"})
    index_path(root / IDS[1]).unlink()
    VideoSource(root).write_index(IDS[1])
    url = s3_bucket.upload(root, "stale")
    listed = _listed(N - 9)
    src = VideoSource(url, storage_options=s3_bucket.storage_options)
    ds = ClipDataset(listed, src, num_frames=4, seed=5)
    local = ClipDataset(listed, VideoSource(root), num_frames=4, seed=5)
    s3_bucket.faults.clear_log()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = getitems(ds, list(range(VIDEOS)))
    own = [r.path.split("/stale/", 1)[1] for r in s3_bucket.faults.requests()]
    own = [p for p in own if p.endswith(".vidload-index")]
    assert own == [f"{IDS[1]}.vidload-index"], own  # only the rewritten one's own index
    assert _same(got, [local[i] for i in range(VIDEOS)])
    assert frame_number(src.read(IDS[1], [0])[0]) == 100  # the new object's frames
    assert all(src._remote.get(v).check is None for v in IDS)  # each checked
    # the sidecar is stale for one: this process asks its version once (it is unchanged: kept)
    s3_bucket.faults.clear_log()
    heads = src._video_heads()
    assert heads is not None and src._video_heads() is heads
    asked = s3_bucket.faults.requests(path_contains=HEADS_NAME)
    assert [r.method for r in asked] == ["HEAD"], asked


def test_originals_with_an_index_are_one_round_too(s3_bucket, tmp_path):
    """The same sidecar over original videos with a persisted index (B-frames, long GOPs:
    `vidload probe --write-index` writes the index; `write_heads` the sidecar): a cold batch
    is one round and equals local disk's items."""
    root = tmp_path / "orig"
    ids = [f"o{k}.mp4" for k in range(3)]
    for vid in ids:
        make_video(root / vid, 60, options={"g": "20", "bf": "3"})
        VideoSource(root).write_index(vid)
    assert write_heads(VideoSource(root), ids) == len(ids)
    url = s3_bucket.upload(root, "orig")
    listed = [(vid, 0, 60) for vid in ids]
    src = VideoSource(url, storage_options=s3_bucket.storage_options)
    ds = ClipDataset(listed, src, num_frames=4, seed=7)
    local = ClipDataset(listed, VideoSource(root), num_frames=4, seed=7)
    assert src._video_heads() is not None
    reqs, peak, items = _round(ds, s3_bucket.faults, list(range(len(ids))))
    assert not any(r.path.endswith(".vidload-index") for r in reqs)
    assert len(reqs) >= len(ids) and peak == len(reqs), (peak, len(reqs))  # one round
    assert _same(items, [local[i] for i in range(len(ids))])
