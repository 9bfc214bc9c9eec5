"""Sources reading from a bucket (issue 17): the same pixels over S3 and HTTP as from local
disk, few concurrent requests per clip, faults with clear messages, the local cache.

The servers are the shared ones of `tests/servers.py` (moto on 127.0.0.1, a Range-capable HTTP
server), with per-request delay, injected faults and a request log.
"""

from __future__ import annotations

import numpy as np
import pytest
from media import frame_number, paint

from vidload.errors import VideoReadError
from vidload.sources._timestamps import write_timestamps
from vidload.sources.hdf5 import Hdf5Source, write_hdf5
from vidload.sources.jpeg import JpegSource, write_jpeg_folder
from vidload.sources.jpeg_decode import encode_jpeg
from vidload.sources.npy import NpySource, write_npy

# minutes of servers and subprocesses: the full tier only (`pytest -m "not slow"` skips it)
pytestmark = pytest.mark.slow

N = 24
W, H = 96, 72
KINDS = ["jpeg", "hdf5", "npy-mmap", "npy-read"]
CLIP = [3, 0, 7, 7, 20]


@pytest.fixture(scope="module")
def local_tree(tmp_path_factory):
    """One folder per storage, each holding videos `a/x1` (N frames) and `b/y2.mp4.*` (the
    full-id name convert uses for colliding ids), with stored timestamps for `a/x1`."""
    jpegs = [encode_jpeg(paint(i, W, H), quality=90) for i in range(N)]
    roots = {}
    for kind, write, suffix in (
        ("jpeg", write_jpeg_folder, ""),
        ("hdf5", lambda p, f: write_hdf5(p, f, attrs={"fps": 25.0}), ".h5"),
        ("npy", write_npy, ".npy"),
    ):
        root = tmp_path_factory.mktemp(kind)
        write(root / f"a/x1{suffix}", jpegs)
        write(root / f"b/y2.mp4{suffix}", jpegs[:6])
        write_timestamps(root / f"a/x1{suffix}", np.arange(N) / 10.0)
        write_timestamps(root / f"b/y2.mp4{suffix}", np.arange(6) / 5.0)
        roots[kind] = root
    return roots


def source(kind: str, root, **kw):
    if kind == "jpeg":
        return JpegSource(root, **kw)
    if kind == "hdf5":
        return Hdf5Source(root, **kw)
    return NpySource(root, mode=kind.split("-")[1], **kw)


def storage(kind: str) -> str:
    return kind.split("-")[0]


@pytest.mark.parametrize("kind", KINDS)
def test_s3_reads_the_pixels_local_disk_reads(kind, local_tree, s3_bucket):
    local = source(kind, local_tree[storage(kind)])
    url = s3_bucket.upload(local_tree[storage(kind)], "data")
    remote = source(kind, url, storage_options=s3_bucket.storage_options)
    for vid, clip in (("a/x1.mp4", CLIP), ("b/y2.mp4", [5, 1])):
        want = local.read(vid, clip)
        got = remote.read(vid, clip)
        assert np.array_equal(got, want)
        assert remote.actual_frames(vid) == local.actual_frames(vid)
        assert remote.reported_frames(vid) == local.reported_frames(vid)
    assert [frame_number(f) for f in remote.read("a/x1", CLIP)] == CLIP
    assert np.array_equal(remote.timestamps("a/x1"), local.timestamps("a/x1"))
    assert np.array_equal(remote.timestamps("b/y2.mp4"), local.timestamps("b/y2.mp4"))
    assert remote.files("a/x1") == [] and remote.byte_ranges("a/x1", CLIP) == []


@pytest.mark.parametrize("kind", KINDS)
def test_http_reads_the_pixels_local_disk_reads(kind, local_tree, http_dir):
    pytest.importorskip("aiohttp")
    import shutil

    shutil.copytree(local_tree[storage(kind)], http_dir.path, dirs_exist_ok=True)
    local = source(kind, local_tree[storage(kind)])
    remote = source(kind, http_dir.url)
    assert np.array_equal(remote.read("a/x1", CLIP), local.read("a/x1", CLIP))
    assert np.array_equal(remote.read("b/y2.mp4", [2]), local.read("b/y2.mp4", [2]))
    assert remote.actual_frames("a/x1") == N


#: Requests a process makes the first time it reads a video, and per clip after that.
#: Requests to open a video, all in one concurrent round: the head (and for HDF5 the tail,
#: where its frame table lies), their answers saying the size (`Location.read_ends`), or a
#: listing.
FIRST = {"hdf5": 2, "npy-mmap": 1, "npy-read": 1, "jpeg": 1}
PER_CLIP = {"hdf5": 1, "npy-mmap": 1, "npy-read": 1, "jpeg": len(set(CLIP))}


@pytest.mark.parametrize("kind", KINDS)
def test_requests_per_clip(kind, local_tree, s3_bucket):
    url = s3_bucket.upload(local_tree[storage(kind)], "data")
    remote = source(kind, url, storage_options=s3_bucket.storage_options)
    faults = s3_bucket.faults
    faults.clear_log()
    remote.actual_frames("a/x1")
    opening = faults.requests()
    assert len(opening) == FIRST[kind], opening
    faults.clear_log()
    clip = [0, 1, 2, 3, 20] if kind != "jpeg" else CLIP  # adjacent rows/frames: coalesced
    remote.read("a/x1", clip)
    reads = faults.requests()
    assert len(reads) == PER_CLIP[kind], reads
    assert all(r.method == "GET" for r in reads)
    faults.clear_log()
    remote.read("a/x1", clip)  # the frame table / header / listing is kept
    assert len(faults.requests()) == PER_CLIP[kind]


def test_a_clip_s_ranges_are_fetched_concurrently(local_tree, s3_bucket):
    """Far-apart frames are separate ranges, fetched together: the server sees them inside
    its per-request delay at the same time (counted, not timed)."""
    url = s3_bucket.upload(local_tree["hdf5"], "data")
    remote = Hdf5Source(url, storage_options=s3_bucket.storage_options)
    remote.actual_frames("a/x1")
    s3_bucket.faults.clear_log()
    remote.read_encoded("a/x1", [0, 23])
    ranges = [r.range for r in s3_bucket.faults.requests()]
    assert len(ranges) == 1  # 2 frames of ~3 KB lie within COALESCE_GAP: one request
    from vidload._storage import remote as _remote

    old = _remote.COALESCE_GAP
    _remote.COALESCE_GAP = 0
    try:
        s3_bucket.faults.clear_log()
        s3_bucket.faults.delay_s = 0.2  # long enough that concurrent requests overlap
        remote.read_encoded("a/x1", [0, 5, 10, 23])
    finally:
        _remote.COALESCE_GAP = old
        s3_bucket.faults.delay_s = 0.0
    assert len(s3_bucket.faults.requests()) == 4
    # sent at once, not one after another: more than one was inside the server's delay together
    assert s3_bucket.faults.peak_in_flight >= 2, s3_bucket.faults.peak_in_flight


# --- faults -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_missing_object_names_the_url(kind, local_tree, s3_bucket):
    url = s3_bucket.upload(local_tree[storage(kind)], "data")
    remote = source(kind, url, storage_options=s3_bucket.storage_options)
    name = {"jpeg": "", "hdf5": ".h5"}.get(storage(kind), ".npy")
    with pytest.raises(VideoReadError, match=rf"^{url}/a/nope{name}: not found$"):
        remote.read("a/nope.mp4", [0])


def test_denied_access_says_so_without_the_credentials():
    """moto does not check signatures, so the refusal comes from a filesystem that answers
    as s3fs does to a 403 (PermissionError), holding the credentials it was given."""
    fsspec = pytest.importorskip("fsspec")
    from fsspec.implementations.memory import MemoryFileSystem

    from vidload._storage import Location

    class Refusing(MemoryFileSystem):
        protocol = "vidloadrefusing"

        def __init__(self, key=None, secret=None, **kw):
            super().__init__(**kw)
            self.secret = secret

        def cat_file(self, path, start=None, end=None, **kw):
            raise PermissionError(f"Access Denied for {path} signed with {self.secret}")

        info = cat_file

    fsspec.register_implementation("vidloadrefusing", Refusing, clobber=True)
    loc = Location(
        "vidloadrefusing://bucket/x.h5", {"key": "AKIAEXAMPLEKEY", "secret": "s3cr3t-v4lue"}
    )
    with pytest.raises(VideoReadError, match=r"^vidloadrefusing://bucket/x.h5: access denied") as e:
        Hdf5Source("vidloadrefusing://bucket", storage_options=loc.storage_options).read("x", [0])
    assert "s3cr3t-v4lue" not in str(e.value) and "***" in str(e.value)
    with pytest.raises(VideoReadError, match="access denied"):
        loc.read_range(0, 10)


@pytest.mark.parametrize("kind", ["503", "reset"])
def test_transient_errors_are_retried(kind, local_tree, s3_bucket):
    url = s3_bucket.upload(local_tree["npy"], "data")
    remote = NpySource(url, storage_options=s3_bucket.storage_options)
    want = NpySource(local_tree["npy"]).read("a/x1", CLIP)
    s3_bucket.faults.fail_next(2, kind)
    assert np.array_equal(remote.read("a/x1", CLIP), want)
    assert s3_bucket.faults.pending() == 0


def test_transient_errors_that_persist_end_in_a_read_error(local_tree, s3_bucket, monkeypatch):
    from vidload._storage import faults, filesystems

    monkeypatch.setattr(faults, "BACKOFF_S", (0.0,))
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # botocore's own retries: the AWS config
    filesystems._FS.clear()
    url = s3_bucket.upload(local_tree["npy"], "data")
    remote = NpySource(url, storage_options=s3_bucket.storage_options)
    remote.actual_frames("a/x1")
    s3_bucket.faults.clear_log()
    s3_bucket.faults.fail_next(1000, "503")
    with pytest.raises(VideoReadError, match=rf"^{url}/a/x1.npy: read byte ranges failed 4 times"):
        remote.read("a/x1", [0])
    tried = len(s3_bucket.faults.requests())
    assert tried == 4
    filesystems._FS.clear()


def test_http_503_then_success_and_missing(local_tree, http_dir, monkeypatch):
    pytest.importorskip("aiohttp")
    import shutil

    from vidload._storage import faults

    monkeypatch.setattr(faults, "BACKOFF_S", (0.0,))
    shutil.copytree(local_tree["hdf5"], http_dir.path, dirs_exist_ok=True)
    remote = Hdf5Source(http_dir.url)
    http_dir.faults.fail_next(2, "503")
    assert remote.actual_frames("a/x1") == N
    with pytest.raises(VideoReadError, match=rf"^{http_dir.url}/a/nope.h5: not found$"):
        remote.read("a/nope", [0])
    http_dir.faults.fail_next(100, "503")
    with pytest.raises(VideoReadError, match="failed 4 times"):
        Hdf5Source(http_dir.url).read("a/x1", [0])


# --- the cache --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_cache_dir_fills_once_then_reads_locally(kind, local_tree, s3_bucket, tmp_path):
    url = s3_bucket.upload(local_tree[storage(kind)], "data")
    opts = s3_bucket.storage_options
    want = source(kind, local_tree[storage(kind)]).read("a/x1", CLIP)
    first = source(kind, url, storage_options=opts, cache_dir=tmp_path / "cache")
    assert np.array_equal(first.read("a/x1", CLIP), want)
    assert s3_bucket.faults.requests()
    s3_bucket.faults.clear_log()
    again = source(kind, url, storage_options=opts, cache_dir=tmp_path / "cache")
    if kind == "jpeg":
        again.read("a/x1", [])  # the listing is per process
        s3_bucket.faults.clear_log()
    assert np.array_equal(again.read("a/x1", CLIP), want)
    assert s3_bucket.faults.requests() == []


# --- video files, lists and manifests, DataLoader workers -------------------------------------


@pytest.fixture(scope="module")
def video_tree(tmp_path_factory):
    from media import make_video

    root = tmp_path_factory.mktemp("videos")
    make_video(root / "a" / "v1.mp4", 12)
    make_video(root / "b" / "v2.mp4", 9)
    (root / "train.txt").write_text("a/v1.mp4 0\nb/v2.mp4 1\n")
    return root


def test_video_source_reads_a_bucket_like_local_disk(video_tree, s3_bucket, tmp_path):
    from vidload.sources.video import VideoSource

    url = s3_bucket.upload(video_tree, "vids")
    local = VideoSource(video_tree)
    remote = VideoSource(url, storage_options=s3_bucket.storage_options, cache_dir=tmp_path)
    for vid, clip in (("a/v1.mp4", [0, 5, 11, 3]), ("b/v2.mp4", [8, 0])):
        assert np.array_equal(remote.read(vid, clip), local.read(vid, clip))
        assert remote.actual_frames(vid) == local.actual_frames(vid)
    s3_bucket.faults.clear_log()
    remote.read("a/v1.mp4", [1, 2])  # copied whole once: no request now
    assert s3_bucket.faults.requests() == []
    with pytest.raises(VideoReadError, match=rf"^{url}/a/nope.mp4: not found$"):
        remote.read("a/nope.mp4", [0])
    assert remote.files("a/v1.mp4") == []


def _loader_clips(ds, workers):
    import torch
    from torch.utils.data import DataLoader

    out = []
    for batch in DataLoader(ds, batch_size=2, num_workers=workers, shuffle=False):
        out.append(batch[0])
    return torch.cat(out)


@pytest.mark.parametrize("kind", ["hdf5", "npy-mmap", "jpeg"])
def test_clip_dataset_from_a_manifest_url_with_two_workers(kind, video_tree, s3_bucket, tmp_path):
    pytest.importorskip("torch")
    from vidload.convert import convert
    from vidload.dataset import ClipDataset

    to = storage(kind)
    out = tmp_path / to
    convert(video_tree, out, to=to, progress=False)
    url = s3_bucket.upload(out, "k400")
    opts = s3_bucket.storage_options
    local = ClipDataset(out / "manifest.csv", source(kind, out), num_frames=4, train=False)
    remote = ClipDataset(
        f"{url}/manifest.csv", source(kind, url, storage_options=opts), num_frames=4, train=False
    )
    assert [v.video_id for v in remote.videos] == [v.video_id for v in local.videos]
    want = _loader_clips(local, 0)
    assert want.shape[0] == 2
    assert (_loader_clips(remote, 2) == want).all()


def test_annotation_list_url_and_a_missing_one(video_tree, s3_bucket):
    from vidload.manifest import load_videos

    url = s3_bucket.upload(video_tree / "train.txt", "lists")
    opts = s3_bucket.storage_options
    entries = load_videos(f"{url}/train.txt", storage_options=opts)
    assert [(e.video_id, e.label) for e in entries] == [("a/v1.mp4", 0), ("b/v2.mp4", 1)]
    with pytest.raises(VideoReadError, match=rf"^{url}/nope.txt: not found$"):
        load_videos(f"{url}/nope.txt", storage_options=opts)


def test_on_error_skip_through_workers(local_tree, s3_bucket):
    pytest.importorskip("torch")
    from vidload.dataset import ClipDataset

    url = s3_bucket.upload(local_tree["npy"], "data")
    src = NpySource(url, storage_options=s3_bucket.storage_options)
    videos = [("a/x1", 0, N), ("a/gone", 1, N), ("a/x1", 2, N), ("a/gone2", 3, N)]
    # objects gone after the dataset was built (which finds missing ones: test_datasets.py)
    src.missing_videos = lambda ids: []
    ds = ClipDataset(videos, src, num_frames=4, train=False, on_error="skip")
    clips = _loader_clips(ds, 2)  # the workers warn in their own processes
    assert clips.shape[0] == 4  # the broken ones replaced by readable videos
    raising = ClipDataset(videos, src, num_frames=4, train=False)
    with pytest.raises(VideoReadError, match="a/gone.npy: not found"):
        _loader_clips(raising, 2)


def test_credentials_never_in_errors_logs_or_manifests(local_tree, s3_bucket, caplog, tmp_path):
    import logging

    caplog.set_level(logging.DEBUG)
    url = s3_bucket.upload(local_tree["hdf5"], "data")
    opts = s3_bucket.storage_options
    src = Hdf5Source(url, storage_options=opts)
    messages = []
    s3_bucket.faults.fail_next(2, "503")
    src.read("a/x1", [0])
    for bad in ("a/nope", "b/nope.mp4"):
        with pytest.raises(VideoReadError) as e:
            src.read(bad, [0])
        messages.append(str(e.value))
    messages.append(repr(src))
    import pickle

    blob = pickle.dumps(src)
    secret = opts["secret"]
    assert all(secret not in m and opts["key"] not in m for m in messages)
    assert secret not in caplog.text
    assert secret.encode() in blob  # the options travel to workers, as they must


def test_cache_evicts_least_recently_used_beyond_its_bound(s3_bucket, tmp_path):
    import os
    import time

    from vidload._storage import LocalCache, Location

    for name in "abcd":
        s3_bucket.put(f"c/{name}", name.encode() * 1000)
    opts = s3_bucket.storage_options
    cache = LocalCache(tmp_path / "cache", max_bytes=3500)
    locs = {n: Location(f"{s3_bucket.url}/c/{n}", opts) for n in "abcd"}
    paths = {n: cache.get(locs[n]) for n in "abc"}
    for k, n in enumerate("bac"):  # recency: b oldest, then a, then c
        os.utime(paths[n], (time.time() - 100 + k, time.time() - 100 + k))
    cache.get(locs["d"])  # 4000 bytes > 3500: evict down to 90 % (3150): b goes
    left = sorted(p.name.split("~")[0] for p in (tmp_path / "cache").rglob("*") if p.is_file())
    assert left == ["a", "c", "d"]  # (each named by its version too: `name~<hash>`)
    assert cache.get(locs["b"]).read_bytes() == b"b" * 1000  # fetched again


def _fill(args):
    from vidload._storage import LocalCache, Location

    folder, url, opts, names = args
    cache = LocalCache(folder, max_bytes=10**9)
    return [cache.get(Location(f"{url}/{n}", opts)).read_bytes() for n in names]


def test_cache_is_safe_with_several_processes_filling_it(s3_bucket, tmp_path):
    import multiprocessing

    for k in range(6):
        s3_bucket.put(f"p/o{k}", bytes([k]) * 50_000)
    url, opts = f"{s3_bucket.url}/p", s3_bucket.storage_options
    jobs = [(tmp_path / "c", url, opts, [f"o{(j + k) % 6}" for k in range(6)]) for j in range(4)]
    with multiprocessing.get_context("fork").Pool(4) as pool:
        results = pool.map(_fill, jobs)
    for (_, _, _, names), got in zip(jobs, results, strict=True):
        assert got == [bytes([int(n[1:])]) * 50_000 for n in names]
    files = [p for p in (tmp_path / "c").rglob("*") if p.is_file()]
    names = sorted(p.name.split("~")[0] for p in files)
    assert names == [f"o{k}" for k in range(6)]  # no partial left


def test_bench_bucket_rows(s3_bucket, tmp_path, monkeypatch):
    pytest.importorskip("torch")
    import json

    from vidload import bench

    for name, value in s3_bucket.env().items():
        monkeypatch.setenv(name, value)
    out = tmp_path / "b.json"
    argv = ["--quick", "--no-progress", "--work", str(tmp_path / "w"), "--clips", "4"]
    argv += ["--workers", "0", "--json", str(out), "--bucket", f"{s3_bucket.url}/bench"]
    assert bench.main(argv) == 0
    rows = json.loads(out.read_text())["bucket"]
    assert set(rows) == {"hdf5", "npy", "jpeg"}
    assert rows["hdf5"]["requests_per_clip"] == 1  # tiny videos: a clip's frames coalesce
    assert rows["npy"]["requests_per_clip"] == 1
    assert rows["jpeg"]["requests_per_clip"] == 8  # one GET per frame
    assert all(r["bytes_per_clip"] > 0 and r["bucket"]["clips_per_s"] > 0 for r in rows.values())


def test_the_cache_fetches_a_rewritten_object_again(s3_bucket, tmp_path):
    """The cache names a copy by the object's version (ETag): a process that finds the object
    rewritten fetches it again and never serves the stale copy."""
    from vidload._storage import LocalCache, Location, cache

    s3_bucket.put("v/x", b"old" * 100)
    loc = Location(f"{s3_bucket.url}/v/x", s3_bucket.storage_options)
    folder = tmp_path / "cache"
    assert LocalCache(folder).get(loc).read_bytes() == b"old" * 100
    s3_bucket.put("v/x", b"new!" * 100)  # rewritten, same key
    cache._VERSIONS.clear()  # a new process: versions are learned once per process
    s3_bucket.faults.clear_log()
    assert LocalCache(folder).get(loc).read_bytes() == b"new!" * 100
    assert [r.method for r in s3_bucket.faults.requests()] == ["HEAD", "GET"]
    s3_bucket.faults.clear_log()
    cache._VERSIONS.clear()  # unchanged since: one request for the version, then the copy
    assert LocalCache(folder).get(loc).read_bytes() == b"new!" * 100
    assert [r.method for r in s3_bucket.faults.requests()] == ["HEAD"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_cached_source_reads_a_rewritten_video_anew(kind, local_tree, s3_bucket, tmp_path):
    from vidload._storage import cache, filesystems

    url = s3_bucket.upload(local_tree[storage(kind)], "data")
    opts = s3_bucket.storage_options

    def read_in_a_new_process():
        cache._VERSIONS.clear()  # versions are learned once per process
        filesystems._FS.clear()  # and so are s3fs's listings
        src = source(kind, url, storage_options=opts, cache_dir=tmp_path / "c")
        return [frame_number(f) for f in src.read("a/x1", [0, 1])]

    assert read_in_a_new_process() == [0, 1]
    assert read_in_a_new_process() == [0, 1]  # from the cache
    jpegs = [encode_jpeg(paint(i + 10, W, H), quality=90) for i in range(N)]
    new = tmp_path / "new"
    {"jpeg": write_jpeg_folder, "hdf5": write_hdf5, "npy": write_npy}[storage(kind)](
        new / ("a/x1" + {"jpeg": "", "hdf5": ".h5", "npy": ".npy"}[storage(kind)]), jpegs
    )
    s3_bucket.upload(new, "data")  # a/x1 rewritten under the same name(s)
    assert read_in_a_new_process() == [10, 11]


def test_video_source_finds_converted_names_in_a_bucket_as_on_local_disk(s3_bucket, tmp_path):
    """`a/x.avi` reads the `a/x.mp4` that `convert --to video` made of it, in a bucket as on
    local disk (one listing of the folder per process), and the missing= check agrees."""
    from media import make_video

    from vidload import ClipDataset
    from vidload.convert import convert
    from vidload.sources.video import VideoSource

    make_video(tmp_path / "in" / "a" / "x.avi", 12, codec="mpeg4")
    convert(tmp_path / "in", tmp_path / "out", to="video", workers=1, progress=False)
    assert (tmp_path / "out" / "a" / "x.mp4").is_file()
    url = s3_bucket.upload(tmp_path / "out", "conv")
    opts = s3_bucket.storage_options
    local, remote = VideoSource(tmp_path / "out"), VideoSource(url, storage_options=opts)
    assert np.array_equal(remote.read("a/x.avi", [0, 7]), local.read("a/x.avi", [0, 7]))
    assert remote.missing_videos(["a/x.avi", "a/y.avi"]) == ["a/y.avi"]
    ds = ClipDataset([("a/x.avi", 0)], remote, num_frames=4)
    assert ds[0][0].shape[0] == 4
