"""The next batch's round in flight while this one decodes (issue 33, item 3):
`make_loader(fetch_ahead=...)`, `vidload.prefetch.FetchAheadSampler` (each worker told its
next batch) and `vidload._dataset.batch` (the round sent ahead, taken only where a batch's own
plan fits it). Requests and rounds are counted at the servers of `tests/servers.py` (moto, the
Range HTTP server); frames are read back by their painted numbers against per-item reads.
"""

from __future__ import annotations

import shutil
import warnings

import numpy as np
import pytest
import torch
from media import paint
from test_video_remote import long_video  # noqa: F401 (a fixture)
from torch.utils.data import DataLoader, Dataset, Subset, get_worker_info

from vidload import ClipDataset, make_loader
from vidload._dataset import batch as rounds
from vidload._dataset.batch import Lead, following, getitems
from vidload.loader import ShardSampler
from vidload.prefetch import FetchAheadSampler
from vidload.sources.hdf5 import Hdf5Source, write_hdf5
from vidload.sources.jpeg import JpegSource, write_jpeg_folder
from vidload.sources.jpeg_decode import encode_jpeg
from vidload.sources.npy import NpySource, write_npy

N = 24
W, H = 64, 48
VIDEOS = 12
VIDEO_LIST = [(f"a/x{k}.mp4", k % 3, N) for k in range(VIDEOS)]  # counts, as a manifest lists
KINDS = ["hdf5", "npy", "jpeg"]


# -- each worker is told its next batch (no storage: a dataset that records what it gets)


class Recorded(Dataset):
    """Each batch's `(worker id, its indices, the next batch it names)`."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        raise AssertionError("read by __getitems__ only")

    def __getitems__(self, indices):
        info = get_worker_info()
        return [(-1 if info is None else info.id, [int(i) for i in indices], following(indices))]


def _check_named(got, drop_last):
    """Each worker's batches in the order it read them: every batch names the worker's next
    one, and its last names none (a short last batch with drop_last is never named)."""
    by_worker: dict[int, list] = {}
    for worker, indices, named in got:
        by_worker.setdefault(worker, []).append((indices, named))
    for seq in by_worker.values():
        for (_, named), (after, _) in zip(seq, seq[1:], strict=False):
            assert named == tuple(after)
        assert seq[-1][1] is None


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("workers", [0, 2])
def test_each_worker_is_told_the_batch_it_reads_next(workers, drop_last):
    sampler = FetchAheadSampler(range(23), batch_size=4, drop_last=drop_last, workers=workers)
    loader = DataLoader(
        Recorded(23),
        batch_size=4,
        sampler=sampler,
        drop_last=drop_last,
        num_workers=workers,
        collate_fn=lambda x: x[0],
    )
    for _ in range(2):  # a second pass names its own batches again
        got = list(loader)
        assert [i for _, indices, _ in got for i in indices] == list(range(20 if drop_last else 23))
        _check_named(got, drop_last)


def test_the_sampler_yields_the_same_indices_and_keeps_their_position():
    """Plain ints to anyone but ClipDataset (equal, hashable, pickled with what they name);
    state and resume are the wrapped sampler's, counted by what this one yielded."""
    import pickle

    inner = ShardSampler(10, num_replicas=1, rank=0)
    sampler = FetchAheadSampler(inner, batch_size=3, drop_last=False, workers=2)
    assert list(sampler) == list(range(10)) and len(sampler) == 10
    leads = [i for i in sampler if isinstance(i, Lead)]
    assert [(int(i), i.following) for i in leads] == [(0, (6, 7, 8)), (3, (9,))]
    assert pickle.loads(pickle.dumps(leads[0])).following == (6, 7, 8)
    it = iter(sampler)
    [next(it) for _ in range(4)]
    assert sampler.state_dict() == {"epoch": 0, "yielded": 4}
    assert inner.state_dict()["yielded"] > 4  # the wrapped one was read ahead
    again = FetchAheadSampler(ShardSampler(10, num_replicas=1, rank=0), batch_size=3,
                              drop_last=False, workers=2)  # fmt: skip
    again.load_state_dict(sampler.state_dict())
    assert list(again) == list(range(4, 10))
    assert again.split_state(3) == {"sampler": "ShardSampler", "world_size": 1, "items": 3}


def test_make_loader_fetches_ahead_at_a_url_root_only(tmp_path, http_dir):
    from vidload._loader.position import innermost

    pytest.importorskip("aiohttp")
    _write(tmp_path, "npy")
    local = ClipDataset(VIDEO_LIST, NpySource(tmp_path), num_frames=4)
    assert not isinstance(make_loader(local, num_workers=0).sampler, FetchAheadSampler)
    shutil.copytree(tmp_path, http_dir.path, dirs_exist_ok=True)
    remote = ClipDataset(VIDEO_LIST, NpySource(http_dir.url), num_frames=4)
    loader = make_loader(remote, num_workers=0)
    assert isinstance(loader.sampler, FetchAheadSampler)  # and no read-ahead hints under it
    assert type(innermost(loader.sampler)).__name__ == "EpochShuffleSampler"
    cached = ClipDataset(VIDEO_LIST, NpySource(http_dir.url, cache_dir=tmp_path / "c"))
    assert not isinstance(make_loader(cached, num_workers=0).sampler, FetchAheadSampler)
    unordered = make_loader(remote, num_workers=0, in_order=False)
    assert not isinstance(unordered.sampler, FetchAheadSampler)
    with pytest.raises(TypeError, match=r"fetch_ahead=True needs a ClipDataset, got Subset"):
        make_loader(Subset(remote, [0, 1]), num_workers=0, fetch_ahead=True)
    with pytest.raises(TypeError, match=r"fetch_ahead must be a bool"):
        make_loader(remote, num_workers=0, fetch_ahead=1)


# -- the round sent ahead, counted at the server


def _write(root, kind: str) -> None:
    """VIDEOS painted videos of N frames under `root/a/` in `kind`'s containers."""
    jpegs = [encode_jpeg(paint(i, W, H), quality=90) for i in range(N)]
    write = {"hdf5": write_hdf5, "npy": write_npy, "jpeg": write_jpeg_folder}[kind]
    suffix = {"hdf5": ".h5", "npy": ".npy", "jpeg": ""}[kind]
    for k in range(VIDEOS):
        write(root / f"a/x{k}{suffix}", jpegs)


def _source(kind: str, root, **kw):
    if kind == "jpeg":
        return JpegSource(root, **kw)
    if kind == "hdf5":
        return Hdf5Source(root, fps=25.0, **kw)
    return NpySource(root, fps=25.0, **kw)


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    roots = {}
    for kind in KINDS:
        roots[kind] = tmp_path_factory.mktemp(kind)
        _write(roots[kind], kind)
    return roots


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return a == b


def _pair(kind, url, opts, local):
    """(a dataset at `url`, the same over the local folder `local`: the per-item reference,
    which sends no request to the server)."""
    return (
        ClipDataset(VIDEO_LIST, _source(kind, url, storage_options=opts), num_frames=4, seed=7),
        ClipDataset(VIDEO_LIST, _source(kind, local), num_frames=4, seed=7),
    )


def _led(batch, named):
    return [Lead(batch[0], named), *batch[1:]]


def _sent_round_done(ds) -> int:
    """Wait for the round sent ahead for `ds` (left in place); its requests."""
    got = rounds._SENT.get(id(ds))
    assert got is not None and got[0]() is ds, "no round was sent ahead"
    for future in got[1].futures:
        if future is not None:
            future.result()
    return sum(len(g) for g in got[1].groups)


def _check(got, ds_one, indices):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = [ds_one[i] for i in indices]
    assert len(got) == len(want)
    for i, g, w in zip(indices, got, want, strict=True):
        assert _same(g, w), f"item {i} differs"


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_a_batch_takes_the_round_sent_ahead_and_sends_nothing(kind, trees, s3_bucket):
    """Batch 0 names batch 1: batch 1's requests all go out, in one round (all in flight at
    once at the slowed server), during batch 0's call; batch 1 then sends no request and its
    items equal per-item reads. Over the two batches, the same requests as without
    fetching ahead."""
    url = s3_bucket.upload(trees[kind], "data")
    opts = s3_bucket.storage_options
    ds, one = _pair(kind, url, opts, trees[kind])
    plain, _ = _pair(kind, url, opts, trees[kind])
    first, second = [0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11]
    for d in (ds, plain):  # the heads opened: counts below are of frames only
        d.set_epoch(1)
        getitems(d, first + second)
        d.set_epoch(0)
    faults = s3_bucket.faults
    faults.clear_log()
    getitems(plain, first)
    getitems(plain, second)
    without = sorted((r.path, r.range) for r in faults.requests())
    faults.clear_log()
    faults.delay_s = 0.5
    try:
        _check(getitems(ds, _led(first, second)), one, first)
        sent = _sent_round_done(ds)
    finally:
        faults.delay_s = 0.0
    with_ahead = sorted((r.path, r.range) for r in faults.requests())
    assert faults.peak_in_flight >= sent >= len(second)  # the round ahead: all at once
    faults.clear_log()
    before = dict(rounds.STATS)
    _check(getitems(ds, second), one, second)
    assert faults.requests() == []  # taken whole from the round sent ahead
    assert rounds.STATS["taken"] - before["taken"] >= len(second)  # objects (JPEG: files)
    assert rounds.STATS["again"] == before["again"]
    assert with_ahead == without  # nothing more, nothing less


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["hdf5", "jpeg"])
def test_a_cold_batch_sent_ahead_opens_its_heads_first(kind, trees, s3_bucket):
    """Videos never opened: batch 1's heads are opened while batch 0 is planned (the round
    batch 1 would have waited for), and its frames sent ahead; batch 1 sends nothing."""
    url = s3_bucket.upload(trees[kind], "cold")
    ds, one = _pair(kind, url, s3_bucket.storage_options, trees[kind])
    first, second = [0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11]
    _check(getitems(ds, _led(first, second)), one, first)
    _sent_round_done(ds)
    s3_bucket.faults.clear_log()
    _check(getitems(ds, second), one, second)
    assert s3_bucket.faults.requests() == []


@pytest.mark.slow
@pytest.mark.parametrize(
    "change", ["epoch", "another batch", "learned count", "reordered", "fewer items"]
)
def test_a_changed_plan_wastes_the_round_never_a_frame(change, trees, s3_bucket):
    """The batch that arrives is not what was planned ahead: its frames are still exactly
    the per-item reads (bytes are taken by object and range, and only where the batch's own
    plan fits them); an object whose plan changed is fetched again, whole."""
    url = s3_bucket.upload(trees["npy"], "changed")
    opts = s3_bucket.storage_options
    listed = [(v, label, N + 8 if change == "learned count" else N) for v, label, _ in VIDEO_LIST]
    ds, one = (
        ClipDataset(listed, NpySource(root, **kw), num_frames=4, seed=3)
        for root, kw in ((url, {"storage_options": opts, "fps": 25.0}), (trees["npy"], {}))
    )
    first, second = [0, 1, 2], [6, 7, 8, 9]
    if change == "learned count":  # every video claims 8 frames more than it has
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _check(getitems(ds, _led(first, second)), one, first)
            _sent_round_done(ds)
            for i in second:  # learned by reading them once (in one process, as a worker)
                ds[i]
        assert ds.learned_frames == {f"a/x{k}.mp4": N for k in [*first, *second]}
    else:
        _check(getitems(ds, _led(first, second)), one, first)
        _sent_round_done(ds)
    read = {
        "epoch": second,
        "another batch": [3, 4, 5],
        "learned count": second,
        "reordered": second[::-1],
        "fewer items": second[:2],
    }[change]
    if change == "epoch":
        ds.set_epoch(1)
        one.set_epoch(1)
    before = dict(rounds.STATS)
    s3_bucket.faults.clear_log()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _check(getitems(ds, read), one, read)
    requests = len(s3_bucket.faults.requests())
    if change in ("reordered", "fewer items"):  # the same clips: taken, nothing sent
        assert requests == 0 and rounds.STATS["again"] == before["again"]
    else:  # other frames: fetched now
        assert requests > 0


# -- through make_loader, with workers, and resumed


def _batches(loader, epoch=0, stop=None):
    from vidload import set_epoch

    set_epoch(loader, epoch)
    out = []
    for batch in loader:
        out.append(batch)
        if len(out) == stop:
            break
    return out


def _loader(url, *, fetch_ahead, workers, stateful=False):
    ds = ClipDataset(VIDEO_LIST, NpySource(url, fps=25.0), num_frames=4, seed=11)
    return make_loader(
        ds, batch_size=2, num_workers=workers, fetch_ahead=fetch_ahead, stateful=stateful,
        pin_memory=False,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("workers", [0, 2])
def test_a_loader_fetching_ahead_reads_the_same_batches_with_the_same_requests(
    workers, trees, http_dir
):
    """Over the Range server: the batches of an epoch equal those read without fetching
    ahead, with the same requests at the server (every byte sent ahead was used: each
    worker's next batch was the one it was told)."""
    pytest.importorskip("aiohttp")
    shutil.copytree(trees["npy"], http_dir.path, dirs_exist_ok=True)
    counts = {}
    got = {}
    for on in (False, True):
        loader = _loader(http_dir.url, fetch_ahead=on, workers=workers)
        assert isinstance(loader.sampler, FetchAheadSampler) == on
        _batches(loader, epoch=0)  # heads opened in every worker; the next epoch is counted
        http_dir.faults.clear_log()
        got[on] = _batches(loader, epoch=1)
        counts[on] = sorted((r.method, r.path, r.range or "") for r in http_dir.faults.requests())
        del loader
    assert len(got[True]) == VIDEOS // 2
    assert all(_same(a, b) for a, b in zip(got[True], got[False], strict=True))
    assert counts[True] == counts[False]


@pytest.mark.slow
def test_a_resumed_loader_fetching_ahead_reads_what_the_uninterrupted_run_read(trees, http_dir):
    """A stateful loader's state after 2 batches, loaded into a new loader (2 workers,
    fetching ahead): the rest of the epoch equals the uninterrupted run's and a resumed run
    without fetching ahead, with the same requests at the server as that run."""
    pytest.importorskip("torchdata.stateful_dataloader")
    pytest.importorskip("aiohttp")
    shutil.copytree(trees["npy"], http_dir.path, dirs_exist_ok=True)
    whole = _batches(_loader(http_dir.url, fetch_ahead=False, workers=0), epoch=2)
    first = _loader(http_dir.url, fetch_ahead=True, workers=2, stateful=True)
    head = _batches(first, epoch=2, stop=2)
    state = first.state_dict()
    del first
    rest, counts = {}, {}
    for on in (True, False):
        again = _loader(http_dir.url, fetch_ahead=on, workers=2, stateful=True)
        again.load_state_dict(state)
        http_dir.faults.clear_log()
        rest[on] = _batches(again, epoch=2)
        counts[on] = sorted((r.method, r.path, r.range or "") for r in http_dir.faults.requests())
        del again
    assert all(_same(a, b) for a, b in zip([*head, *rest[True]], whole, strict=True))
    assert len(head) + len(rest[True]) == len(whole)
    assert all(_same(a, b) for a, b in zip(rest[True], rest[False], strict=True))
    assert counts[True] == counts[False]


@pytest.mark.slow
def test_videos_by_byte_ranges_take_the_round_sent_ahead(
    http_dir,
    tmp_path,
    long_video,  # noqa: F811 (the fixture imported above)
):
    """`VideoSource` at a URL (videos with persisted indexes, read by byte ranges): batch 1's
    headers and packets go out during batch 0; batch 1 then sends nothing, and its frames
    equal local disk's."""
    from test_video_remote import LONG, index_path

    from vidload.sources.video import VideoSource

    copies = [f"v{k}.mp4" for k in range(4)]
    local_dir = tmp_path / "local"
    local_dir.mkdir()
    for name in copies:
        shutil.copy(long_video, http_dir.path / name)
        shutil.copy(index_path(long_video), http_dir.path / f"{name}.vidload-index")
        (local_dir / name).symlink_to(long_video)
        (local_dir / f"{name}.vidload-index").symlink_to(index_path(long_video))
    listed = [(name, k, LONG) for k, name in enumerate(copies)]
    remote, local = (
        ClipDataset(listed, VideoSource(root), num_frames=8, seed=3)
        for root in (http_dir.url, local_dir)
    )
    _check(getitems(remote, _led([0, 1], [2, 3])), local, [0, 1])
    assert _sent_round_done(remote) >= 2
    http_dir.faults.clear_log()
    _check(getitems(remote, [2, 3]), local, [2, 3])
    assert http_dir.faults.requests() == []
