"""A batch in one round (issue 23): `vidload._dataset.batch.getitems` (what
`ClipDataset.__getitems__` runs) gives exactly the items of `__getitem__` one by one, and reads a
bucket in one concurrent round per batch (counted at the server: every request of the round is
inside the server's delay at once), with the heads of videos never opened before in one round before
it.

The servers are the shared ones of `tests/servers.py` (moto; the Range HTTP server).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from media import paint

from vidload import ClipDataset
from vidload._dataset.batch import getitems
from vidload.sources.hdf5 import Hdf5Source, write_hdf5
from vidload.sources.jpeg import JpegSource, write_jpeg_folder
from vidload.sources.jpeg_decode import encode_jpeg
from vidload.sources.npy import NpySource, write_npy

# minutes of servers and subprocesses: the full tier only (`pytest -m "not slow"` skips it)
pytestmark = pytest.mark.slow

N = 24
W, H = 96, 72
VIDEOS = 6
KINDS = ["jpeg", "hdf5", "npy-mmap", "npy-read"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """One folder per storage with videos `a/x0` ... `a/x5` (N frames each, painted) and a
    broken one, `a/bad`."""
    jpegs = [encode_jpeg(paint(i, W, H), quality=90) for i in range(N)]
    roots = {}
    for kind, write, suffix in (
        ("jpeg", write_jpeg_folder, ""),
        ("hdf5", write_hdf5, ".h5"),
        ("npy", write_npy, ".npy"),
    ):
        root = tmp_path_factory.mktemp(kind)
        for k in range(VIDEOS):
            write(root / f"a/x{k}{suffix}", jpegs)
        if suffix:  # a broken video: not a container
            (root / f"a/bad{suffix}").write_bytes(b"not a container " * 64)
        else:  # frame files that are not JPEGs
            (root / "a/bad").mkdir()
            for i in range(N):
                (root / f"a/bad/img_{i + 1:05d}.jpg").write_bytes(b"not a JPEG " * 64)
        roots[kind] = root
    return roots


def source(kind: str, root, **kw):
    if kind == "jpeg":
        return JpegSource(root, **kw)
    if kind == "hdf5":
        return Hdf5Source(root, fps=25.0, **kw)
    return NpySource(root, mode=kind.split("-")[1], fps=25.0, **kw)


def storage(kind: str) -> str:
    return kind.split("-")[0]


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and np.array_equal(a, b)
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


VIDEO_LIST = [(f"a/x{k}.mp4", k % 3) for k in range(VIDEOS)]
OPTIONS = {
    "plain": {},
    "info+clips": {"return_info": True, "clips_per_video": 2},
    "geometry": {"short_side": (40, 60), "crop": 32, "flip": True},
    "views": {
        "train": False,
        "crop": 48,
        "spatial_views": 3,
        "clips_per_video": 2,
        "stack_views": True,
        "return_info": True,
    },
    "skip": {"on_error": "skip", "return_info": True},
    "learned": {},
}


def _videos(option: str) -> list[tuple]:
    if option == "skip":  # a broken video: skipped, counted, warned
        return [*VIDEO_LIST[:2], ("a/bad.mp4", 0), *VIDEO_LIST[2:]]
    if option == "learned":  # the list claims more frames than exist: learned, resampled
        return [(vid, label, N + 8) for vid, label in VIDEO_LIST]
    return VIDEO_LIST


def _pair(kind, root, option, **kw):
    make = [
        ClipDataset(
            _videos(option), source(kind, root, **kw), num_frames=4, seed=3, **OPTIONS[option]
        )
        for _ in range(2)
    ]
    return make


def _check_equal(batch_ds, one_ds, indices):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = getitems(batch_ds, indices)
        want = [one_ds[i] for i in indices]
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert _same(g, w), f"item {indices[i]} differs"
    assert batch_ds.num_skipped == one_ds.num_skipped
    assert batch_ds.learned_frames == one_ds.learned_frames
    assert batch_ds.broken_videos == one_ds.broken_videos


@pytest.mark.parametrize("option", list(OPTIONS))
@pytest.mark.parametrize("kind", KINDS)
def test_getitems_equals_items_one_by_one_over_s3(kind, option, tree, s3_bucket):
    url = s3_bucket.upload(tree[storage(kind)], "data")
    batch_ds, one_ds = _pair(kind, url, option, storage_options=s3_bucket.storage_options)
    for epoch in (0, 1):  # cold heads, then warm
        batch_ds.set_epoch(epoch)
        one_ds.set_epoch(epoch)
        indices = list(range(len(batch_ds)))[::-1]
        _check_equal(batch_ds, one_ds, indices)


@pytest.mark.parametrize("kind", KINDS)
def test_getitems_equals_items_one_by_one_over_http(kind, tree, http_dir):
    pytest.importorskip("aiohttp")
    import shutil

    shutil.copytree(tree[storage(kind)], http_dir.path, dirs_exist_ok=True)
    batch_ds, one_ds = _pair(kind, http_dir.url, "info+clips")
    _check_equal(batch_ds, one_ds, [5, 0, 3, 3, 7])


@pytest.mark.parametrize("option", list(OPTIONS))
@pytest.mark.parametrize("kind", KINDS)
def test_getitems_on_local_disk_is_the_items_one_by_one(kind, option, tree, monkeypatch):
    """Local roots plan nothing and fetch nothing: `__getitems__` is a plain loop."""
    from vidload._dataset import batch as _batch

    calls = []
    monkeypatch.setattr(_batch, "fetch_started", lambda *a: calls.append(a))
    batch_ds, one_ds = _pair(kind, tree[storage(kind)], option)
    _check_equal(batch_ds, one_ds, list(range(len(batch_ds))))
    assert calls == []


#: The server's latency while a round is counted: every request of one round must reach the
#: server within it for `peak_in_flight` to see them all at once. 0.3 s was not enough on a
#: loaded 2-core CI machine (11 of a round's 12 requests in flight together, the last one sent
#: more than 0.3 s after the first); a later round still starts only after an answer.
ROUND_DELAY_S = 1.0


def _heads_then_frames(kind, ds, faults, indices):
    """(requests, peak in flight) of a batch, the server slowed so that every request of one
    round overlaps the others."""
    faults.clear_log()
    faults.delay_s = ROUND_DELAY_S
    try:
        getitems(ds, indices)
    finally:
        faults.delay_s = 0.0
    # the sidecar of heads (or its absence) is asked once per process, before the first batch
    reqs = [r for r in faults.requests() if not r.path.endswith("/manifest-heads.npz")]
    return reqs, faults.peak_in_flight


def _is_head(r) -> bool:
    """A request that opens a video: its size (HEAD), its first bytes (HDF5's 64 KiB, npy's
    4 KiB), its last (a suffix range), or a listing."""
    rng = r.range or ""
    head = rng in ("bytes=0-65535", "bytes=0-4095") or rng.startswith("bytes=-")
    return r.method == "HEAD" or "prefix" in r.query or head


@pytest.mark.parametrize("kind", KINDS)
def test_a_batch_is_one_round_of_requests(kind, tree, s3_bucket):
    """Never-opened videos: their heads in one concurrent round (all requests in flight at
    once), then all the batch's frames in one. Opened videos: one round for the batch."""
    url = s3_bucket.upload(tree[storage(kind)], "data")
    ds = ClipDataset(
        VIDEO_LIST, source(kind, url, storage_options=s3_bucket.storage_options), num_frames=4
    )
    batch = list(range(VIDEOS))
    reqs, peak = _heads_then_frames(kind, ds, s3_bucket.faults, batch)
    heads = sum(map(_is_head, reqs))
    frames = len(reqs) - heads
    assert heads >= VIDEOS and frames >= VIDEOS  # each video opened, each read
    assert peak == max(heads, frames), (peak, heads, frames)  # each phase all at once
    ds.set_epoch(1)
    reqs, peak = _heads_then_frames(kind, ds, s3_bucket.faults, batch)
    assert all(r.method == "GET" and not _is_head(r) for r in reqs)
    assert peak == len(reqs)  # the whole batch: one round
    if kind != "jpeg":  # 4 frames of ~3 KB lie within the coalescing gap: one GET a video
        assert len(reqs) == VIDEOS


@pytest.mark.parametrize("kind", ["hdf5", "npy-read"])
def test_a_batch_at_one_range_a_request_over_http_is_one_round(kind, tree, http_dir, monkeypatch):
    """A server that answers one range a request (S3's shape, here over HTTP: a Range of
    several answered whole): a batch of opened videos is one round of concurrent
    single-range GETs, the frames of each video merged (4 frames of ~3 KB lie within the
    coalescing gap: one GET a video), the same items as one by one. (Ranges farther apart:
    `test_byteranges`.)"""
    pytest.importorskip("aiohttp")
    import shutil

    from vidload._storage import byteranges

    monkeypatch.setattr(byteranges, "_UNSUPPORTED", set())  # this test's server alone
    shutil.copytree(tree[storage(kind)], http_dir.path, dirs_exist_ok=True)
    http_dir.faults.multi_ranges = False
    ds = ClipDataset(VIDEO_LIST, source(kind, http_dir.url), num_frames=4, seed=3)
    batch = list(range(VIDEOS))
    getitems(ds, batch)  # the videos opened
    ds.set_epoch(1)
    reqs, peak = _heads_then_frames(kind, ds, http_dir.faults, batch)
    assert len(reqs) == VIDEOS and peak == len(reqs)  # one round, one GET a video
    assert all(r.status == 206 and "," not in (r.range or ",") for r in reqs)
    one = ClipDataset(VIDEO_LIST, source(kind, http_dir.url), num_frames=4, seed=3)
    one.set_epoch(1)
    ds.set_epoch(1)
    _check_equal(ds, one, batch)


def test_a_missing_video_fails_only_its_own_item(tree, s3_bucket):
    from vidload.errors import VideoReadError

    url = s3_bucket.upload(tree["hdf5"], "data")
    ds = ClipDataset(VIDEO_LIST[:4], Hdf5Source(url, storage_options=s3_bucket.storage_options))
    s3_bucket._admin.delete_object(Bucket=s3_bucket.name, Key="data/a/x3.h5")  # gone since
    with pytest.raises(VideoReadError, match=r"a/x3.h5: not found"):
        getitems(ds, [0, 1, 2, 3])
    assert len(getitems(ds, [0, 1, 2])) == 3


# -- a cold batch in one round: the heads sidecar (`vidload.sources._heads`)

HEAD_KINDS = ["hdf5", "npy-mmap", "npy-read"]


def _with_heads(kind, tree, tmp_path):
    """A copy of `tree`'s folder for `kind` with the sidecar of heads written (as convert
    writes it)."""
    import shutil

    from vidload.sources._heads import HEADS_NAME, write_heads

    root = tmp_path / "data"
    shutil.copytree(tree[storage(kind)], root)
    assert write_heads(source(kind, root), [v for v, _ in VIDEO_LIST]) == VIDEOS
    assert (root / HEADS_NAME).is_file()
    return root


@pytest.mark.parametrize("kind", HEAD_KINDS)
def test_a_cold_batch_is_one_round_with_the_heads_sidecar(kind, tree, s3_bucket, tmp_path):
    """Never-opened videos listed in the sidecar: no round before the frames. The batch's
    requests (frames and the check of each head) are all in flight at once: one round; the
    sidecar itself is read once per process. (The video list gives the counts, as a manifest
    does: a count asked of the source opens the head, the sidecar's heads wait for their
    check.)"""
    url = s3_bucket.upload(_with_heads(kind, tree, tmp_path), f"heads-{kind}")
    opts = s3_bucket.storage_options
    listed = [(v, label, N) for v, label in VIDEO_LIST]  # counts as a manifest lists them
    ds = ClipDataset(listed, source(kind, url, storage_options=opts), num_frames=4, seed=3)
    one = ClipDataset(listed, source(kind, url, storage_options=opts), num_frames=4, seed=3)
    assert ds.source._sidecar() is not None  # read once per process, before the batch
    batch = list(range(VIDEOS))
    reqs, peak = _heads_then_frames(kind, ds, s3_bucket.faults, batch)
    assert all(r.method == "GET" for r in reqs), reqs  # no size request
    assert len(reqs) >= VIDEOS and peak == len(reqs), (peak, len(reqs))  # one round
    assert ds.source._pending_heads.get(VIDEO_LIST[0][0]) is None  # checked and kept
    ds.set_epoch(0)
    _check_equal(ds, one, batch[::-1])
    ds.set_epoch(1)  # warm: one round, frames only
    reqs, peak = _heads_then_frames(kind, ds, s3_bucket.faults, batch)
    assert peak == len(reqs) == VIDEOS


@pytest.mark.parametrize("kind", HEAD_KINDS)
def test_a_container_rewritten_since_the_sidecar_is_read_from_itself(
    kind, tree, s3_bucket, tmp_path
):
    """The sidecar is stale for one container (rewritten with other frames): its head fails
    the check, its items open it themselves, and every item equals a read without the
    sidecar; the others keep the sidecar's heads."""
    root = _with_heads(kind, tree, tmp_path)
    jpegs = [encode_jpeg(paint(i + 7, W, H), quality=70) for i in range(N - 5)]
    (write_hdf5 if kind == "hdf5" else write_npy)(
        root / f"a/x1{'.h5' if kind == 'hdf5' else '.npy'}", jpegs
    )
    url = s3_bucket.upload(root, f"stale-{kind}")
    opts = s3_bucket.storage_options
    plain = tmp_path / "plain"
    import shutil

    shutil.copytree(root, plain)
    (plain / "manifest-heads.npz").unlink()
    url_plain = s3_bucket.upload(plain, f"plain-{kind}")
    listed = [(v, label, N) for v, label in VIDEO_LIST]
    ds = ClipDataset(listed, source(kind, url, storage_options=opts), num_frames=4, seed=5)
    ref = ClipDataset(listed, source(kind, url_plain, storage_options=opts), num_frames=4, seed=5)
    s3_bucket.faults.clear_log()
    _check_equal(ds, ref, list(range(VIDEOS)))
    heads_of = sorted(
        r.path.rsplit("/", 1)[-1]
        for r in s3_bucket.faults.requests()
        if f"/stale-{kind}/" in r.path and _is_head(r) and "heads" not in r.path
    )
    # only the rewritten one is opened from itself (the sidecar aside: read once)
    assert set(heads_of) == {f"x1{'.h5' if kind == 'hdf5' else '.npy'}"}, heads_of
    assert "a/x1.mp4" not in ds.source._pending_heads._own()
    # the sidecar is stale for one: this process asks its version once (it is unchanged: kept)
    s3_bucket.faults.clear_log()
    heads = ds.source._sidecar()
    assert heads is not None and ds.source._sidecar() is heads
    asked = s3_bucket.faults.requests(path_contains="manifest-heads.npz")
    assert [r.method for r in asked] == ["HEAD"], asked
    kept = ds.source._heads if kind == "hdf5" else None
    if kept is not None:  # the rewritten one was opened from itself: its own frame count
        assert kept.get("a/x1.mp4").offsets.shape[0] - 1 == N - 5
        assert kept.get("a/x0.mp4").offsets.shape[0] - 1 == N


def test_a_head_from_the_sidecar_names_its_object(tree, s3_bucket, tmp_path):
    """An HDF5 container read through the sidecar's head (never opened) names its object in
    its clip's frames, as one opened from itself does (errors name it from there)."""
    url = s3_bucket.upload(_with_heads("hdf5", tree, tmp_path), "heads-names")
    opts = s3_bucket.storage_options
    listed = [(v, label, N) for v, label in VIDEO_LIST]
    ds = ClipDataset(listed, source("hdf5", url, storage_options=opts), num_frames=4, seed=3)
    getitems(ds, list(range(VIDEOS)))  # the heads come from the sidecar
    vid = VIDEO_LIST[0][0]
    assert ds.source._pending_heads.get(vid) is None  # checked and kept
    named = ds.source.read_encoded(vid, [0]).paths
    opened = source("hdf5", url, storage_options=opts).read_encoded(vid, [0]).paths
    assert named == opened and str(named).startswith("s3://"), (named, opened)


def test_a_sidecar_of_a_kinetics_size_dataset_is_used_whole(tree, http_dir, tmp_path):
    """No size cap: a sidecar over the 128 MiB a process once kept (33,000 more containers of
    1,024 frames beside the real ones) is used, its cold batch one round with no head request,
    and the process holds only the small members of it (each record read by its own rows)."""
    import shutil

    from vidload.sources import _heads
    from vidload.sources._heads_file import StoredArrays

    root = http_dir.path
    shutil.copytree(tree["hdf5"], root, dirs_exist_ok=True)
    src = source("hdf5", root)
    records = dict(src.head_record(v) for v, _ in VIDEO_LIST)
    pad = _heads.HeadRecord(1 << 20, "00" * 20, records["a/x0.h5"].ints, records["a/x0.h5"].floats)
    pad.lengths = np.full(1024, 3000, np.uint32)
    records.update({f"pad/{i:06d}.h5": pad for i in range(33_000)})
    (root / _heads.HEADS_NAME).write_bytes(_heads.render_heads("hdf5", records))
    assert (root / _heads.HEADS_NAME).stat().st_size > 128 * 2**20
    listed = [(v, label, N) for v, label in VIDEO_LIST]
    ds = ClipDataset(listed, source("hdf5", http_dir.url), num_frames=4, seed=3)
    one = ClipDataset(listed, source("hdf5", root), num_frames=4, seed=3)
    heads = ds.source._sidecar()
    assert heads is not None and len(heads) == VIDEOS + 33_000
    assert isinstance(heads._t, StoredArrays)
    assert sum(a.nbytes for a in heads._t._arrays.values()) < 2**16  # fence, field names
    batch = list(range(VIDEOS))
    reqs, peak = _heads_then_frames("hdf5", ds, http_dir.faults, batch)
    assert not any(map(_is_head, reqs)), reqs  # every head from the sidecar
    assert len(reqs) >= 1 and peak == len(reqs), (peak, len(reqs))  # one round
    ds.set_epoch(0)
    _check_equal(ds, one, batch)


# -- JPEG folders: the frame files' names from the sidecar, no listing first


def test_a_cold_jpeg_batch_is_one_round_with_the_heads_sidecar(tree, s3_bucket, tmp_path):
    """Folders `vidload convert --to jpeg` wrote, listed in the sidecar (kind "jpeg": each
    folder's count and its last frame's check): the batch GETs the frame files by name, with
    the check, in one round; no listing. Equal to per-item reads byte for byte."""
    from vidload.sources._heads import read_heads

    root = _with_heads("jpeg", tree, tmp_path)
    from vidload._storage import Location

    heads = read_heads(Location(root), "jpeg")
    assert heads is not None and heads.get("a/x0").ints == {"frames": N, "start_index": 1}
    url = s3_bucket.upload(root, "heads-jpeg")
    opts = s3_bucket.storage_options
    listed = [(v, label, N) for v, label in VIDEO_LIST]
    ds = ClipDataset(listed, source("jpeg", url, storage_options=opts), num_frames=4, seed=3)
    one = ClipDataset(listed, source("jpeg", url, storage_options=opts), num_frames=4, seed=3)
    assert ds.source._sidecar() is not None
    batch = list(range(VIDEOS))
    reqs, peak = _heads_then_frames("jpeg", ds, s3_bucket.faults, batch)
    assert not any("prefix" in r.query for r in reqs), reqs  # no listing
    assert all(r.method == "GET" for r in reqs) and peak == len(reqs), (peak, len(reqs))
    assert len(reqs) >= VIDEOS * 4
    assert ds.source._pending_heads.get(VIDEO_LIST[0][0]) is None  # checked and kept
    ds.set_epoch(0)
    _check_equal(ds, one, batch[::-1])
    ds.set_epoch(1)  # warm: one round, frames only
    reqs, peak = _heads_then_frames("jpeg", ds, s3_bucket.faults, batch)
    assert not any("prefix" in r.query for r in reqs) and peak == len(reqs)


def _jpeg_stale(tree, s3_bucket, tmp_path, name, change):
    """(dataset with the sidecar, dataset without it) over a copy of the JPEG tree whose
    folder `a/x1` was changed by `change(root)` after the sidecar was written."""
    import shutil

    root = _with_heads("jpeg", tree, tmp_path)
    plain = tmp_path / "plain"
    shutil.copytree(root, plain)
    (plain / "manifest-heads.npz").unlink()
    url = s3_bucket.upload(root, f"stale-{name}")
    url_plain = s3_bucket.upload(plain, f"plain-{name}")
    change(f"stale-{name}")
    change(f"plain-{name}")
    opts = s3_bucket.storage_options
    listed = [(v, label, N) for v, label in VIDEO_LIST]
    kw = {"num_frames": 4, "seed": 5, "on_error": "skip", "return_info": True}
    ds = ClipDataset(listed, source("jpeg", url, storage_options=opts), **kw)
    ref = ClipDataset(listed, source("jpeg", url_plain, storage_options=opts), **kw)
    return ds, ref


def _listings(s3_bucket, prefix):
    return [r for r in s3_bucket.faults.requests() if "prefix" in r.query and prefix in r.query]


def test_a_jpeg_folder_renamed_since_the_sidecar_is_listed(tree, s3_bucket, tmp_path):
    """The sidecar is stale for `a/x1`: its frames renumbered from 0 (another naming, one
    frame fewer under the source's template: each frame's painting one off). The last
    recorded file is absent, the check fails, the folder is listed and its items read as
    without the sidecar: never a wrong frame."""
    jpegs = [encode_jpeg(paint(i, W, H), quality=90) for i in range(N)]

    def renumber(prefix):
        for i in range(N):
            s3_bucket._admin.delete_object(
                Bucket=s3_bucket.name, Key=f"{prefix}/a/x1/img_{i + 1:05d}.jpg"
            )
        for i in range(N):
            s3_bucket.put(f"{prefix}/a/x1/img_{i:05d}.jpg", jpegs[i])

    ds, ref = _jpeg_stale(tree, s3_bucket, tmp_path, "renamed", renumber)
    s3_bucket.faults.clear_log()
    _check_equal(ds, ref, list(range(VIDEOS)))
    listed = _listings(s3_bucket, "stale-renamed")
    assert len(listed) == 1 and "x1" in listed[0].query, listed  # only the stale folder
    assert ds.source.actual_frames("a/x1.mp4") == N - 1
    assert ds.source.actual_frames("a/x0.mp4") == N


def test_a_jpeg_frame_missing_since_the_sidecar_falls_back(tree, s3_bucket, tmp_path):
    """Every frame file of `a/x1` but the last is gone (its check passes): the absent
    planned frames send the folder to its listing; the items equal reads without the
    sidecar (the folder has no readable frame run: skipped alike)."""

    def holes(prefix):
        for i in range(N - 1):
            s3_bucket._admin.delete_object(
                Bucket=s3_bucket.name, Key=f"{prefix}/a/x1/img_{i + 1:05d}.jpg"
            )

    ds, ref = _jpeg_stale(tree, s3_bucket, tmp_path, "holes", holes)
    s3_bucket.faults.clear_log()
    _check_equal(ds, ref, list(range(VIDEOS)))
    listed = _listings(s3_bucket, "stale-holes")
    # x1's folder (an item skipped from it may open another video unplanned, as alone)
    assert any("x1" in r.query for r in listed) and not any("x0" in r.query for r in listed)
    assert ds.source.actual_frames("a/x1.mp4") == 0


def test_a_jpeg_folder_with_fewer_frames_since_the_sidecar_is_listed(tree, s3_bucket, tmp_path):
    """`a/x1` rewritten with fewer, other frames (a stale count): the last recorded file is
    gone, the folder is listed, its own count learned as without the sidecar."""
    jpegs = [encode_jpeg(paint(i + 7, W, H), quality=70) for i in range(N - 5)]

    def fewer(prefix):
        for i in range(N):
            s3_bucket._admin.delete_object(
                Bucket=s3_bucket.name, Key=f"{prefix}/a/x1/img_{i + 1:05d}.jpg"
            )
        for i, data in enumerate(jpegs):
            s3_bucket.put(f"{prefix}/a/x1/img_{i + 1:05d}.jpg", data)

    ds, ref = _jpeg_stale(tree, s3_bucket, tmp_path, "fewer", fewer)
    _check_equal(ds, ref, list(range(VIDEOS)))
    assert ds.source.actual_frames("a/x1.mp4") == N - 5
