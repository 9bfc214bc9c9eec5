"""Video files over a URL read by byte ranges (issue 23, item 3): a clip of a long video fetches
its sidecar, then its header and the packets of its frames in one round, a small part of the
object; frames equal a sequential decode; a rewritten object is not read through a stale index;
videos without a usable index are downloaded whole and said so.

Requests and bytes are counted at the test servers (`tests/servers.py`); a round is one call
into the storage layer (`Location.read_bytes` / `read_ranges` / `read_range`), whose requests
`Location.read_ranges` sends concurrently (checked here by the servers' `peak_in_flight`).
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import av
import numpy as np
import pytest
from media import frame_number, make_video, paint, rgb, sequential_decode

from vidload._layout import index_path
from vidload._storage import RemoteLocation
from vidload.errors import VideoReadError
from vidload.sources.video import VideoSource

# minutes of servers and subprocesses: the full tier only (`pytest -m "not slow"` skips it)
pytestmark = pytest.mark.slow

W, H, NOISE = 128, 96, 64  # painted number on top, moving noise below (a realistic bitrate)
LONG = 3000  # 2 minutes at 25 fps
GOP = 8
CLIP = [12, 400, 1100, 1490, 1900, 2350, 2600, 2990]  # 8 frames in 8 GOPs, as segment sampling


def _long_frame(i: int, noise: np.ndarray) -> np.ndarray:
    return np.vstack([paint(i, W, H), np.roll(noise, 3 * i, axis=1)])


@pytest.fixture(scope="module")
def long_video(tmp_path_factory) -> Path:
    """A 2-minute H.264 MP4 laid out as `vidload convert --to video` writes one (a keyframe
    every GOP frames, no B-frames), ~7 MB, with its persisted frame index."""
    params = f"keyint={GOP}:min-keyint={GOP}:scenecut=0:bframes=0"
    return _write_long(
        tmp_path_factory.mktemp("long") / "long.mp4", LONG, 0, {"x264-params": params}
    )


def _write_long(path: Path, frames: int, seed: int, options: dict[str, str]) -> Path:
    """`frames` painted frames with moving noise (`_long_frame`) as H.264 at 25 fps in `path`
    (the container from its suffix), x264 `options` beside ultrafast/CRF 23, with its
    persisted frame index."""
    noise = np.random.default_rng(seed).integers(0, 256, (NOISE, W, 3), dtype=np.uint8)
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = W, H + NOISE, "yuv420p"
        stream.options = {"preset": "ultrafast", "crf": "23", **options}
        for i in range(frames):
            frame = av.VideoFrame.from_ndarray(_long_frame(i, noise), format="rgb24")
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    VideoSource(path.parent).write_index(path.name)
    return path


def sequential_frames(path: Path, wanted: list[int]) -> dict[int, np.ndarray]:
    """{i: frame i of a full sequential decode} for the wanted frames."""
    out = {}
    with av.open(str(path)) as container:
        for i, frame in enumerate(container.decode(container.streams.video[0])):
            if i in wanted:
                out[i] = rgb(frame)
    return out


class Rounds:
    """Counts calls into the storage layer's remote reads: each is one round of concurrent
    requests (`Location.read_range` is `read_ranges` of one range; `RemoteLocation` is the
    implementation a URL's `Location` is)."""

    def __init__(self, monkeypatch) -> None:
        self.calls: list[str] = []
        for name in ("read_bytes", "read_ranges"):
            real = getattr(RemoteLocation, name)
            monkeypatch.setattr(RemoteLocation, name, self._counted(name, real))

    def _counted(self, name, real):
        def call(loc, *args, **kwargs):
            self.calls.append(name)
            return real(loc, *args, **kwargs)

        return call


def served(kind: str, folder: Path, http_dir, s3_bucket_factory):
    """(URL of a folder holding `folder`'s files, storage options, faults)."""
    if kind == "http":
        for f in folder.iterdir():
            shutil.copy(f, http_dir.path / f.name)
        return http_dir.url, None, http_dir.faults
    bucket = s3_bucket_factory()
    return bucket.upload(folder, "videos"), bucket.storage_options, bucket.faults


@pytest.fixture
def s3_bucket_factory(request):
    return lambda: request.getfixturevalue("s3_bucket")


@pytest.mark.parametrize("kind", ["http", "s3"])
def test_a_clip_of_a_long_video_fetches_a_small_part_in_two_rounds(
    kind, long_video, http_dir, s3_bucket_factory, monkeypatch
):
    url, opts, faults = served(kind, long_video.parent, http_dir, s3_bucket_factory)
    size = long_video.stat().st_size
    want = sequential_frames(long_video, CLIP)
    faults.delay_s = 0.02
    faults.clear_log()
    rounds = Rounds(monkeypatch)
    src = VideoSource(url, storage_options=opts)  # a fresh process: nothing known yet
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback, no stale index
        clip = src.read("long.mp4", CLIP)
    assert [frame_number(f[:H]) for f in clip] == CLIP
    for got, i in zip(clip, CLIP, strict=True):
        assert np.array_equal(got, want[i]), i  # frame-exact against sequential decode
    log = faults.requests(path_contains="long.mp4")
    fetched = sum(r.bytes for r in log)
    assert fetched < 0.05 * size, (fetched, size)
    assert rounds.calls == ["read_ranges", "read_ranges"]  # the sidecar; header + packets
    assert all(r.method == "GET" for r in log), log
    video_gets = [r for r in log if not r.path.endswith(".vidload-index")]
    assert video_gets and all(r.range is not None for r in video_gets)  # no whole download
    if kind == "http":  # the second round's ranges in one request (multipart/byteranges)
        assert len(video_gets) == 1 and "," in str(video_gets[0].range), video_gets
    else:
        assert faults.peak_in_flight >= 2  # the second round's ranges were sent concurrently
    assert src._remote.get("long.mp4").misses == 0

    # another clip of the same video in this process: its packets only, one round
    faults.clear_log()
    rounds.calls.clear()
    other = [30, 800, 1601, 2222]
    assert [frame_number(f[:H]) for f in src.read("long.mp4", other)] == other
    assert rounds.calls == ["read_ranges"]
    log = faults.requests(path_contains="long.mp4")
    assert len(log) <= len(other) and sum(r.bytes for r in log) < 0.01 * size
    assert src.actual_frames("long.mp4") == LONG  # from the index: nothing fetched
    assert len(faults.requests(path_contains="long.mp4")) == len(log)


def test_local_reads_are_unchanged(long_video):
    """The same file read from local disk: the index is used, the frames are the same."""
    local = VideoSource(long_video.parent)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clip = local.read("long.mp4", CLIP)
    assert [frame_number(f[:H]) for f in clip] == CLIP
    assert local.files("long.mp4") == [long_video, index_path(long_video)]


@pytest.fixture(scope="module")
def originals(tmp_path_factory) -> Path:
    """Original videos with a persisted index (`vidload probe --write-index`): B-frames in MP4,
    MPEG-4 Part 2 in AVI, Matroska."""
    folder = tmp_path_factory.mktemp("orig")
    make_video(folder / "bframes.mp4", 60, options={"g": "20", "bf": "3"})
    make_video(folder / "x.avi", 40, codec="mpeg4", options={"g": "9"})
    make_video(folder / "v.mkv", 40, options={"g": "10", "bf": "2"})
    src = VideoSource(folder)
    for name in ("bframes.mp4", "x.avi", "v.mkv"):
        src.write_index(name)
    return folder


@pytest.mark.parametrize("name", ["bframes.mp4", "x.avi", "v.mkv"])
def test_originals_with_an_index_are_read_by_ranges_frame_exact(
    name, originals, http_dir, monkeypatch
):
    for f in originals.iterdir():
        shutil.copy(f, http_dir.path / f.name)
    frames = sequential_decode(originals / name)
    clip = [len(frames) - 1, 0, 17, 18, 5, 5, 33]
    http_dir.faults.clear_log()
    src = VideoSource(http_dir.url)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = src.read(name, clip)
    for g, i in zip(got, clip, strict=True):
        assert np.array_equal(g, frames[i]), (name, i)
    log = http_dir.faults.requests(path_contains=f"/{name}")
    assert all(r.range is not None for r in log if not r.path.endswith(".vidload-index"))
    assert src._remote.get(name).misses == 0  # the recorded layout sufficed
    assert src.actual_frames(name) == len(frames)
    assert np.allclose(src.timestamps(name), VideoSource(originals).timestamps(name))


def test_a_rewritten_object_is_not_read_through_its_stale_index(originals, http_dir):
    """The sidecar says which bytes it describes (size and a digest of both ends); a fresh
    process that finds the object rewritten warns and reads the object whole, the new frames."""
    shutil.copy(originals / "bframes.mp4", http_dir.path / "v.mp4")
    shutil.copy(index_path(originals / "bframes.mp4"), http_dir.path / "v.mp4.vidload-index")
    assert frame_number(VideoSource(http_dir.url).read("v.mp4", [59])[0]) == 59
    make_video(http_dir.path / "v.mp4", 30, options={"g": "5"})  # rewritten, index left stale
    want = sequential_decode(http_dir.path / "v.mp4")
    http_dir.faults.clear_log()
    src = VideoSource(http_dir.url)
    stale = r"v\.mp4: its frame index is not used: it describes another file"
    with pytest.warns(UserWarning, match=stale):
        got = src.read("v.mp4", [29, 3])
    assert np.array_equal(got, np.stack([want[29], want[3]]))
    assert src.actual_frames("v.mp4") == 30
    gets = http_dir.faults.requests(method="GET", path_contains="/v.mp4")
    assert any(r.range is None and r.path.endswith("/v.mp4") for r in gets)  # downloaded whole


def test_without_an_index_the_object_is_downloaded_whole_and_said(originals, http_dir):
    shutil.copy(originals / "x.avi", http_dir.path / "x.avi")
    shutil.copy(originals / "bframes.mp4", http_dir.path / "b.mp4")
    first = index_path(originals / "bframes.mp4").read_text().split("\n")[0]
    doc = {**json.loads(first), "format": 1}  # as format 1 wrote it: the first line alone
    (http_dir.path / "b.mp4.vidload-index").write_text(json.dumps(doc))
    src = VideoSource(http_dir.url)
    with pytest.warns(UserWarning, match=r"x\.avi: it has no persisted frame index .*whole"):
        assert frame_number(src.read("x.avi", [7])[0]) == 7
    src = VideoSource(http_dir.url)
    with pytest.warns(UserWarning, match=r"b\.mp4: its frame index \(format 1\) does not say"):
        assert frame_number(src.read("b.mp4", [7])[0]) == 7
    # a format 1 index still serves local reads, without a warning
    local = http_dir.path
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert VideoSource(local).actual_frames("b.mp4") == 60


def test_errors_name_the_url(long_video, http_dir, monkeypatch):
    from vidload._storage import faults

    monkeypatch.setattr(faults, "BACKOFF_S", (0.0,))
    for f in long_video.parent.iterdir():
        shutil.copy(f, http_dir.path / f.name)
    src = VideoSource(http_dir.url)
    src.read("long.mp4", [0])  # the sidecar and header fetched
    http_dir.faults.fail_next(20, "503", match="long.mp4")
    with pytest.raises(VideoReadError, match=rf"^{http_dir.url}/long\.mp4: read byte ranges"):
        src.read("long.mp4", [2000])
    http_dir.faults.reset()
    with pytest.raises(VideoReadError, match=rf"^{http_dir.url}/nope\.mp4: not found$"):
        with pytest.warns(UserWarning, match="no persisted frame index"):
            src.read("nope.mp4", [0])


def test_damaged_data_behaves_as_on_local_disk_and_names_the_url(long_video, http_dir, tmp_path):
    """A packet damaged in the middle (size and opening bytes unchanged, so the index is
    still taken as the object's): a read over the URL ends as the same read of the same file
    on local disk, and its error names the URL."""
    from media import damage_copy

    local = tmp_path / "local"
    local.mkdir()
    damage_copy(long_video, local / "long.mp4", 1500, seed=3, nbytes=2000)
    shutil.copy(index_path(long_video), index_path(local / "long.mp4"))
    for f in local.iterdir():
        shutil.copy(f, http_dir.path / f.name)
    outcomes = []
    for root in (local, http_dir.url):
        src = VideoSource(root)
        try:
            got = src.read("long.mp4", [1499, 1502])
            outcomes.append(("frames", got.tobytes()))
        except VideoReadError as e:
            assert e.path == f"{root}/long.mp4"
            outcomes.append(("error", e.reason))
    assert outcomes[0] == outcomes[1]


def test_dataloader_workers_read_by_ranges_like_local_disk(long_video, http_dir):
    """Two DataLoader workers (forked after the parent read the video: its open file and held
    bytes stay behind) give the clips local disk gives."""
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    from vidload import ClipDataset

    for f in long_video.parent.iterdir():
        shutil.copy(f, http_dir.path / f.name)
    videos = [("long.mp4", k) for k in range(4)]
    remote_src = VideoSource(http_dir.url)
    remote_src.read("long.mp4", [0])  # opened in the parent before the fork
    clips = {}
    for name, src, workers in (
        ("local", VideoSource(long_video.parent), 0),
        ("http", remote_src, 2),
    ):
        ds = ClipDataset(videos, src, num_frames=4, train=True, seed=7)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            batches = list(DataLoader(ds, batch_size=2, num_workers=workers))
        clips[name] = torch.cat([b[0] for b in batches])
    assert clips["http"].shape[0] == 4
    assert torch.equal(clips["http"], clips["local"])


def test_a_batch_of_cold_videos_is_two_rounds(long_video, http_dir, monkeypatch, tmp_path):
    """`ClipDataset.__getitems__` (`vidload._dataset.batch.getitems`) over videos never opened,
    without a sidecar of heads: their indexes in one concurrent round
    (`VideoSource.prepare`), then every clip's header and packets in one round
    (`fetch_started`); decoding then makes no request. The items equal local disk's."""
    pytest.importorskip("torch")
    import vidload._dataset.batch as batch
    from vidload import ClipDataset

    copies = [f"v{k}.mp4" for k in range(4)]
    for name in copies:
        shutil.copy(long_video, http_dir.path / name)
        shutil.copy(index_path(long_video), http_dir.path / f"{name}.vidload-index")
    manifest = tmp_path / "manifest.csv"
    rows = "".join(f"{name},{k},{LONG},{LONG}\n" for k, name in enumerate(copies))
    manifest.write_text("video_id,label,reported_frames,actual_frames\n" + rows)
    local_dir = tmp_path / "local"
    local_dir.mkdir()
    for name in copies:
        (local_dir / name).symlink_to(long_video)
        (local_dir / f"{name}.vidload-index").symlink_to(index_path(long_video))
    kw = {"num_frames": 8, "train": True, "seed": 3}
    remote = ClipDataset(manifest, VideoSource(http_dir.url), **kw)
    local = ClipDataset(manifest, VideoSource(local_dir), **kw)
    faults = http_dir.faults
    faults.delay_s = 0.02
    faults.clear_log()
    seen = {}
    real_fetch = batch.fetch_started

    def fetch_started(groups):  # the batch's requests, sent at once in groups
        seen["before"] = list(faults.requests())
        futures = real_fetch(groups)
        for f in futures:
            if f is not None:
                f.result()
        seen["after"] = len(faults.requests())
        return futures

    monkeypatch.setattr(batch, "fetch_started", fetch_started)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        items = batch.getitems(remote, [0, 1, 2, 3])
    before = sorted(r.path.rsplit("/", 1)[1] for r in seen["before"])
    # round 1: the indexes (the sidecar of heads, absent here, asked once per process before:
    # with it, a cold batch is one round, tests/test_video_heads.py)
    assert before == ["manifest-heads.npz", *(f"{name}.vidload-index" for name in copies)]
    assert len(faults.requests()) == seen["after"]  # round 2 was all: decoding asked nothing
    assert faults.peak_in_flight >= 2
    for k, (clip, label) in enumerate(items):
        want, want_label = local[k]
        assert label == want_label and np.array_equal(clip.numpy(), want.numpy())


@pytest.fixture(scope="module")
def matroska(tmp_path_factory) -> Path:
    """A 24-second Matroska original (H.264 in MKV, a keyframe every 25 frames) of ~1 MB, whose
    Cues FFmpeg's muxer writes at the end of the file, with its persisted index."""
    return _write_long(tmp_path_factory.mktemp("mkv") / "long.mkv", 600, 1, {"g": "25", "bf": "2"})


def test_a_matroska_original_is_one_round_after_its_index(matroska, http_dir, monkeypatch):
    """Matroska's demuxer reads the Cues (here at the end of the file) at the first seek, and
    lands on a cue's cluster, a little before its keyframe: the persisted layout holds the
    Cues with the opening bytes and each clip range starts before its seek point, so a cold
    clip is the sidecar, then one round, and FFmpeg asks for nothing it does not hold."""
    shutil.copy(matroska, http_dir.path / "long.mkv")
    shutil.copy(index_path(matroska), http_dir.path / "long.mkv.vidload-index")
    clip = [599, 0, 130, 260, 261, 444, 580]
    want = sequential_frames(matroska, clip)
    rounds = Rounds(monkeypatch)
    src = VideoSource(http_dir.url)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = src.read("long.mkv", clip)
    for g, i in zip(got, clip, strict=True):
        assert np.array_equal(g, want[i]), i
    assert [frame_number(f[:H]) for f in got] == clip
    assert src._remote.get("long.mkv").misses == 0
    assert rounds.calls == ["read_ranges", "read_ranges"]  # the sidecar; header + packets
