"""VideoSource against sequential decoding, on every hard case of `conftest.hard_videos`."""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import pickle

import av
import av.error
import numpy as np
import pytest
from conftest import HardCase
from media import (
    decode_until_bad,
    frame_number,
    make_video,
    real_clip,
    sequential_decode,
    shared_videos,
)

from vidload.errors import FrameCountError, VideoReadError
from vidload.sources import _video_file, _video_index, _video_seek
from vidload.sources.video import VideoInfo, VideoSource

SHARED_VIDEOS = shared_videos()

CASE_IDS = [
    "h264_bframes_long_gop.mp4",
    "h264_gop1.mp4",
    "h264_open_gop.mkv",
    "mpeg4_bframes.avi",
    "h264_open_gop.avi",
    "mpeg2.mpg",
    "vp9.webm",
    "hevc.mp4",
    "av1.mkv",
    "h264_10bit.mkv",
    "hevc_10bit.mp4",
    "no_count.mkv",
    "raw.h264",
    "h264.ts",
    "short.mp4",
    "vfr.mp4",
    "start_offset.mp4",
    "start_offset.mkv",
    "two_streams.mp4",
    "count_too_large.mp4",
    "truncated.mkv",
    "truncated.avi",
]


@pytest.fixture(scope="session")
def references(hard_video_dir, hard_videos) -> dict[str, list[np.ndarray]]:
    """Frames of a sequential decode of the stream vidload picks, per hard case."""
    refs = {}
    for vid, case in hard_videos.items():
        path = hard_video_dir / vid
        if case.frames is None:  # truncated: sequential decoding up to where the data goes bad
            refs[vid] = decode_until_bad(path, case.stream_index)
        else:
            refs[vid] = sequential_decode(path, case.stream_index)
    return refs


def index_sets(n: int, seed: int) -> list[list[int]]:
    """First, last, sorted, unsorted, with duplicates, every frame backwards."""
    rng = np.random.default_rng(seed)
    k = min(8, n)
    rand = rng.choice(n, size=k, replace=False)
    return [
        [0],
        [n - 1],
        sorted(rand.tolist()),
        rand.tolist(),
        rng.integers(0, n, size=12).tolist() + [0, n - 1, 0],
        list(range(n - 1, -1, -1)),
    ]


def assert_frames(got: np.ndarray, ref: list[np.ndarray], indices: list[int], vid: str) -> None:
    assert got.dtype == np.uint8
    assert got.shape == (len(indices), *ref[0].shape)
    for j, i in enumerate(indices):
        assert np.array_equal(got[j], ref[i]), f"{vid}: read({indices})[{j}] != frame {i}"


# ------------------------------------------------------------------ counts and header


@pytest.mark.parametrize("vid", CASE_IDS)
def test_counts_agree_with_sequential_decode(vid, hard_video_dir, hard_videos, references):
    case: HardCase = hard_videos[vid]
    ref = references[vid]
    src = VideoSource(hard_video_dir)
    if case.frames is not None:
        assert len(ref) == case.frames
        assert [frame_number(f) for f in ref] == list(
            range(case.painted_offset, case.painted_offset + case.frames)
        )
    else:
        assert 0 < len(ref) < case.encoded
    frames = list(src.iter_frames(vid))
    assert len(frames) == len(ref)
    assert all(np.array_equal(a, b) for a, b in zip(frames, ref, strict=True))
    assert src.actual_frames(vid) == len(ref)
    assert VideoSource(hard_video_dir).actual_frames(vid) == len(ref)  # without iter_frames


@pytest.mark.parametrize("vid", CASE_IDS)
def test_info_reads_the_header(vid, hard_video_dir, hard_videos, references):
    case = hard_videos[vid]
    info = VideoSource(hard_video_dir).info(vid)
    assert isinstance(info, VideoInfo)
    assert info.stream_index == case.stream_index
    assert (info.height, info.width) == references[vid][0].shape[:2]
    with av.open(str(hard_video_dir / vid)) as c:
        assert info.codec == c.streams.video[case.stream_index].codec_context.name
    family = {"h264": "h264", "hevc": "hevc", "mpeg4": "mpeg4", "mpeg2": "mpeg2video", "vp9": "vp9"}
    prefix = vid.split("_")[0].split(".")[0]
    if prefix in family:
        assert info.codec == family[prefix], vid
    assert info.reported_frames is None or info.reported_frames > 0
    assert VideoSource(hard_video_dir).reported_frames(vid) == info.reported_frames


def test_reported_frames_can_be_missing_or_wrong(hard_video_dir):
    src = VideoSource(hard_video_dir)
    assert src.reported_frames("raw.h264") is None  # elementary stream: no header count
    assert src.reported_frames("no_count.mkv") == 50  # from duration x frame rate
    assert src.reported_frames("count_too_large.mp4") == 60
    assert src.actual_frames("count_too_large.mp4") < 60


# ------------------------------------------------------------------ frame-exact reads


@pytest.mark.parametrize("vid", CASE_IDS)
def test_read_is_frame_exact(vid, hard_video_dir, references):
    ref = references[vid]
    n = len(ref)
    shared = VideoSource(hard_video_dir)  # keeps its open file and index between reads
    for indices in index_sets(n, seed=len(vid)):
        assert_frames(VideoSource(hard_video_dir).read(vid, indices), ref, indices, vid)
        assert_frames(shared.read(vid, indices), ref, indices, vid)
        assert [frame_number(f) for f in shared.read(vid, indices)] == [
            frame_number(ref[i]) for i in indices
        ]
    alone = VideoSource(hard_video_dir)
    for i in range(n):  # one frame per read: a seek to the keyframe before each
        assert_frames(alone.read(vid, [i]), ref, [i], vid)
    counted = VideoSource(hard_video_dir)
    counted.actual_frames(vid)  # reads now use the index of a full decode
    for indices in index_sets(n, seed=1):
        assert_frames(counted.read(vid, indices), ref, indices, vid)


@pytest.mark.parametrize("threads", [0, 2])
def test_read_with_decoder_threads(threads, hard_video_dir, references):
    vid = "h264_bframes_long_gop.mp4"
    src = VideoSource(hard_video_dir, threads=threads)
    for indices in index_sets(len(references[vid]), seed=3):
        assert_frames(src.read(vid, indices), references[vid], indices, vid)


@pytest.mark.parametrize("cache_size", [0, 1])
def test_read_with_small_handle_cache(cache_size, hard_video_dir, references):
    src = VideoSource(hard_video_dir, cache_size=cache_size)
    for vid in ("hevc.mp4", "vp9.webm", "hevc.mp4", "mpeg4_bframes.avi", "vp9.webm"):
        indices = index_sets(len(references[vid]), seed=4)[3]
        assert_frames(src.read(vid, indices), references[vid], indices, vid)
    assert len(src._handles) == cache_size


def test_second_video_stream_is_counted_and_decoded(hard_video_dir):
    path = hard_video_dir / "two_streams.mp4"
    src = VideoSource(hard_video_dir, stream=1)
    ref = sequential_decode(path, 1)
    assert src.info("two_streams.mp4").stream_index == 1
    assert src.actual_frames("two_streams.mp4") == len(ref) == 60
    got = src.read("two_streams.mp4", [59, 0, 30, 30])
    assert [frame_number(f) for f in got] == [1059, 1000, 1030, 1030]
    assert_frames(got, ref, [59, 0, 30, 30], "two_streams.mp4")
    assert VideoSource(hard_video_dir).actual_frames("two_streams.mp4") == 40


def test_read_empty_index_list(hard_video_dir):
    got = VideoSource(hard_video_dir).read("hevc.mp4", [])
    assert got.shape == (0, 64, 96, 3) and got.dtype == np.uint8


def test_read_decodes_only_the_stretch_it_needs(hard_video_dir, references, monkeypatch):
    """Frames near the end of a long GOP file: one seek to the last keyframe, no decode from 0."""
    decoded: list[int] = []
    real = _video_index.decode_packets

    def counting(ctx, packets, on_packet=None, **kwargs):
        frames = real(ctx, packets, on_packet, **kwargs)
        while True:
            try:
                frame = next(frames)
            except StopIteration as stop:
                return stop.value
            decoded.append(frame.pts)
            yield frame

    for module in (_video_index, _video_seek):  # sequential decodes, seek-and-decode
        monkeypatch.setattr(module, "decode_packets", counting)
    vid = "h264_bframes_long_gop.mp4"  # 90 frames, keyframes at 0 and 60
    src = VideoSource(hard_video_dir)
    src.read(vid, [0])
    ((_, index),) = src._indexes.items()
    assert [sp.pos for sp in index.seek_points] == [0, 60]
    decoded.clear()
    indices = [85, 62, 70, 62]
    assert_frames(src.read(vid, indices), references[vid], indices, vid)
    assert len(decoded) <= 30, f"decoded {len(decoded)} frames for 3 frames after keyframe 60"
    decoded.clear()
    indices = [1, 3, 5, 7, 9]  # one stretch, decoded once: no seek between them
    assert_frames(src.read(vid, indices), references[vid], indices, vid)
    assert len(decoded) <= 12


def test_index_that_disagrees_with_the_decoder_is_replaced(hard_video_dir, references):
    """A packet-scan index listing a frame the decoder never outputs (a packet that yields no
    frame) is caught by the per-frame pts check and replaced by the index of a full decode;
    its wrong frames are never returned."""
    vid = "h264_bframes_long_gop.mp4"  # keyframes at 0 and 60
    src = VideoSource(hard_video_dir)
    src.read(vid, [0])
    ((key, index),) = src._indexes.items()
    assert not index.exact
    keys = list(index.keys)
    keys.insert(41, (keys[40] + keys[41]) // 2)
    src._indexes.put(key, _video_index.FrameIndex(len(keys), keys, False, index.seek_points))
    assert_frames(src.read(vid, [45, 40]), references[vid], [45, 40], vid)
    replaced = src._indexes.get(key)
    assert replaced is not None and replaced.exact and replaced.keys == index.keys


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    "vid", ["count_too_large.mp4", "truncated.mkv", "truncated.avi", "short.mp4"]
)
def test_index_past_the_actual_count_raises(vid, hard_video_dir, hard_videos, references):
    n = len(references[vid])
    for src in (VideoSource(hard_video_dir), VideoSource(hard_video_dir)):
        with pytest.raises(FrameCountError, match=rf"frame {n} requested but only {n} frames") as e:
            src.read(vid, [0, n, n - 1])
        assert (e.value.video_id, e.value.actual, e.value.index) == (vid, n, n)
        assert e.value.reported == src.reported_frames(vid)
        assert isinstance(e.value, IndexError)
        assert_frames(src.read(vid, [n - 1, 0]), references[vid], [n - 1, 0], vid)
        src.actual_frames(vid)  # the second round runs with the count known up front
    with pytest.raises(FrameCountError, match=r"frame 1000 requested"):
        VideoSource(hard_video_dir).read(vid, [1000])


def test_truncated_file_reports_frames_before_the_damage(hard_video_dir):
    src = VideoSource(hard_video_dir)
    assert src.reported_frames("count_too_large.mp4") == 60
    assert src.actual_frames("count_too_large.mp4") == 12  # the first GOP survives


def test_file_where_no_frame_decodes_raises(tmp_path):
    """Header intact (moov first), every frame's data cut off."""
    full = make_video(tmp_path / "full.mp4", 30, width=96, height=64,
                      container_options={"movflags": "faststart"})  # fmt: skip
    with av.open(str(full)) as container:
        first_packet_at = next(container.demux(container.streams.video[0])).pos
    (tmp_path / "cut.mp4").write_bytes(full.read_bytes()[: first_packet_at + 10])
    src = VideoSource(tmp_path)
    assert src.reported_frames("cut.mp4") == 30
    for call in (
        lambda: src.actual_frames("cut.mp4"),
        lambda: src.read("cut.mp4", [0]),
        lambda: list(src.iter_frames("cut.mp4")),
    ):
        with pytest.raises(VideoReadError, match=r"cut\.mp4: no frame of the video stream decodes"):
            call()


def test_negative_index_raises(hard_video_dir):
    with pytest.raises(IndexError, match="must be >= 0"):
        VideoSource(hard_video_dir).read("hevc.mp4", [3, -1])


def _call(src: VideoSource, method: str, vid: str):
    if method == "read":
        return src.read(vid, [0])
    if method == "iter_frames":
        return next(src.iter_frames(vid))
    return getattr(src, method)(vid)


METHODS = ["info", "reported_frames", "actual_frames", "read", "iter_frames"]


@pytest.mark.parametrize("method", METHODS)
def test_unreadable_files_raise_video_read_error(method, hard_video_dir, bad_videos):
    src = VideoSource(hard_video_dir)
    for vid, reason in bad_videos.items():
        with pytest.raises(VideoReadError, match=reason) as e:
            _call(src, method, vid)
        assert e.value.path == str(hard_video_dir / vid)
        if vid in ("empty.mp4", "not_a_video.mp4"):
            assert isinstance(e.value.__cause__, av.error.FFmpegError)
        if vid == "missing.mp4":
            assert isinstance(e.value.__cause__, FileNotFoundError)


def test_missing_stream_raises(hard_video_dir):
    with pytest.raises(VideoReadError, match="video stream 1 requested but the file has 1"):
        VideoSource(hard_video_dir, stream=1).read("hevc.mp4", [0])


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"threads": -1}, ValueError, r"threads \(-1\) must be >= 0"),
        ({"threads": "2"}, TypeError, "threads must be an int"),
        ({"cache_size": -2}, ValueError, r"cache_size \(-2\) must be >= 0"),
        ({"stream": -1}, ValueError, r"stream \(-1\) must be >= 0"),
        ({"stream": 1.0}, TypeError, "stream must be an int or None"),
    ],
)
def test_bad_arguments(kwargs, error, match, tmp_path):
    with pytest.raises(error, match=match):
        VideoSource(tmp_path, **kwargs)


def test_bad_video_id(hard_video_dir):
    with pytest.raises(ValueError, match="relative path inside the source root"):
        VideoSource(hard_video_dir).read("../x.mp4", [0])


def test_file_replaced_on_disk_is_reindexed(tmp_path):
    path = make_video(tmp_path / "v.mp4", 20, width=96, height=64)
    src = VideoSource(tmp_path)
    assert src.actual_frames("v.mp4") == 20
    src.read("v.mp4", [19])
    make_video(path, 30, width=96, height=64, options={"g": "5"})
    os.utime(path, ns=(1, 1))  # make sure the mtime differs even on coarse clocks
    assert src.actual_frames("v.mp4") == 30
    assert frame_number(src.read("v.mp4", [29])[0]) == 29


# ------------------------------------------------------------------ processes

#: Longest wait for child processes; a child that deadlocks fails the test instead of hanging it.
CHILD_TIMEOUT_S = 60


def _run_in_pool(method: str, func, jobs: list[tuple]) -> list:
    """func(*job) for each job in a pool of 2 `method` processes, failing after a timeout."""
    with mp.get_context(method).Pool(2) as pool:
        pending = pool.starmap_async(func, jobs)
        try:
            return pending.get(timeout=CHILD_TIMEOUT_S)
        except mp.TimeoutError:
            pool.terminate()
            pytest.fail(f"{method} child processes hung for {CHILD_TIMEOUT_S} s on {func.__name__}")


def test_pickles_without_handles(hard_video_dir, references):
    src = VideoSource(hard_video_dir, threads=2, stream=0, cache_size=3)
    src.read("vp9.webm", [3])
    blob = pickle.dumps(src)
    assert len(blob) < 1000
    copy = pickle.loads(blob)
    assert (copy.root, copy.threads, copy.stream, copy.cache_size) == (hard_video_dir, 2, 0, 3)
    assert not copy._handles and not copy._indexes
    assert_frames(copy.read("vp9.webm", [7, 3]), references["vp9.webm"], [7, 3], "vp9.webm")


def test_files_inherited_through_a_fork_are_kept_not_closed(hard_video_dir, references):
    """In a child, the parent's open files are neither used nor freed: freeing a decoder whose
    threads live in the parent deadlocks. Simulated here by changing the recorded pids."""
    vid = "hevc.mp4"
    src = VideoSource(hard_video_dir, cache_size=2)
    src.read(vid, [5])
    src.read("vp9.webm", [5])
    parent_handles = list(src._handles.values())
    for handle in parent_handles:
        handle.pid = -1  # as if opened by the process this one was forked from
    _as_if_forked(src)
    parked = _video_file.VideoHandle.inherited
    n_parked = len(parked)
    try:
        assert_frames(src.read(vid, [5, 1]), references[vid], [5, 1], vid)
        assert src._handles._pid == os.getpid() and len(src._handles) == 1
        assert parked[n_parked:] == parent_handles
        assert all(len(h.container.streams) > 0 for h in parent_handles)  # still open
        src.close()
        assert not src._handles and parked[n_parked:] == parent_handles
    finally:
        del parked[n_parked:]
        for handle in parent_handles:  # give them back to this process, which opened them
            handle.pid, handle.closed = os.getpid(), False
            handle.close()
    assert all(len(h.container.streams) == 0 for h in parent_handles)


def test_files_are_closed_when_dropped_without_the_garbage_collector(hard_video_dir):
    """An unclosed PyAV container is cyclic garbage that only the garbage collector frees,
    maybe in a forked child (deadlock). Dropped handles are closed in the opening process."""
    gc.disable()
    try:
        evicting = VideoSource(hard_video_dir, threads=2, cache_size=1)
        evicting.read("hevc.mp4", [3])
        evicted = next(iter(evicting._handles.values())).container
        evicting.read("vp9.webm", [3])
        dropped = VideoSource(hard_video_dir, threads=2)
        dropped.read("hevc.mp4", [3])
        iterated = VideoSource(hard_video_dir, threads=2)
        frames = iterated.iter_frames("vp9.webm")
        next(frames)
        containers = [h.container for h in dropped._handles.values()]
        del dropped, frames
        assert len(evicted.streams) == 0
        assert containers and all(len(c.streams) == 0 for c in containers)
    finally:
        gc.enable()


#: Parent state a fork child inherits (a generator cannot be sent to a child).
_INHERITED_STATE: dict[str, object] = {}


def _use_inherited_state(vid: str, indices: list[int]) -> list[np.ndarray]:
    """In a fork child: read with every source the parent used, drop what the parent left
    behind (a half-read `iter_frames`, cyclic garbage), collect the garbage."""
    out = [src.read(vid, indices) for src in _INHERITED_STATE["sources"]]
    _INHERITED_STATE.pop("half_read", None)
    gc.collect()
    return out


@pytest.mark.slow
def test_fork_after_the_parent_decoded_with_threads(hard_video_dir, references):
    """Regression: a decoder opened with threads in the parent and freed in a fork child
    waited forever in avcodec_free_context (the children hung). The garbage collector stays
    off in the parent until the fork, so its leftovers reach the children deterministically."""
    vid = "h264_bframes_long_gop.mp4"
    ref = references[vid]
    gc.collect()
    gc.disable()
    try:
        sources = [VideoSource(hard_video_dir, threads=t) for t in (2, 0, 1)]
        for src in sources:
            assert_frames(src.read(vid, [70, 3]), ref, [70, 3], vid)
        left = VideoSource(hard_video_dir, threads=2)  # dropped with its files open
        left.read("vp9.webm", [4])
        left.read(vid, [4])
        half_read = VideoSource(hard_video_dir, threads=2).iter_frames("hevc.mp4")
        next(half_read)
        _INHERITED_STATE.update(sources=sources, half_read=half_read)
        del left, half_read
        jobs = [(vid, [i, 89 - i]) for i in (10, 50, 65, 80)]
        results = _run_in_pool("fork", _use_inherited_state, jobs)
    finally:
        _INHERITED_STATE.clear()
        gc.enable()
    for per_source, (_, indices) in zip(results, jobs, strict=True):
        for got in per_source:
            assert_frames(got, ref, indices, vid)
    for src in sources:  # the parent's own files still work
        assert_frames(src.read(vid, [71, 2]), ref, [71, 2], vid)


def test_caches_are_dropped_after_a_fork(hard_video_dir):
    src = VideoSource(hard_video_dir)
    src.read("hevc.mp4", [5])
    parent_handles = src._handles.values()
    parent_indexes = src._indexes.values()
    _as_if_forked(src)
    src.read("hevc.mp4", [5])
    assert src._handles._pid == src._indexes._pid == os.getpid()
    assert len(src._handles) == len(src._indexes) == 1
    assert src._handles.values()[0] is not parent_handles[0]
    assert src._indexes.values()[0] is not parent_indexes[0]


def _as_if_forked(src: VideoSource) -> None:
    """As if this process were a fork of the one that filled `src`'s per-process caches."""
    for cache in (src._handles, src._indexes, src._actual, src._orientations):
        cache._pid = -1


def _read_in_child(src: VideoSource, vid: str, indices: list[int]) -> tuple[int, np.ndarray]:
    return os.getpid(), src.read(vid, indices)


@pytest.mark.parametrize("method, threads", [("fork", 1), ("fork", 2), ("spawn", 2)])
def test_used_in_parent_then_in_child_processes(method, threads, hard_video_dir, references):
    vid = "h264_bframes_long_gop.mp4"
    src = VideoSource(hard_video_dir, threads=threads)
    assert_frames(src.read(vid, [70]), references[vid], [70], vid)
    jobs = [(src, vid, [i, 89 - i]) for i in (10, 50, 65)]
    results = _run_in_pool(method, _read_in_child, jobs)
    for (pid, got), (_, _, indices) in zip(results, jobs, strict=True):
        assert pid != os.getpid()
        assert_frames(got, references[vid], indices, vid)
    assert_frames(src.read(vid, [71, 2]), references[vid], [71, 2], vid)


class _Clips:
    def __init__(self, src: VideoSource, vid: str, n: int) -> None:
        self.src, self.vid, self.n = src, vid, n

    def __len__(self) -> int:
        return 6

    def __getitem__(self, i: int) -> np.ndarray:
        return self.src.read(self.vid, [(7 * i + j) % self.n for j in range(4)])


def _collect_garbage(worker_id: int) -> None:
    gc.collect()  # frees what the parent left for the garbage collector, in the worker
    gc.enable()


@pytest.mark.slow
@pytest.mark.parametrize("num_workers, threads", [(0, 1), (2, 1), (2, 2)])
def test_dataloader_workers(num_workers, threads, hard_video_dir, references):
    """Fork workers after the parent decoded (with decoder threads too) and left garbage."""
    from torch.utils.data import DataLoader

    vid = "hevc.mp4"
    src = VideoSource(hard_video_dir, threads=threads)
    src.read(vid, [1])  # handles open in the parent before the workers fork
    ds = _Clips(src, vid, len(references[vid]))
    workers = {"multiprocessing_context": "fork", "timeout": CHILD_TIMEOUT_S} if num_workers else {}
    loader = DataLoader(ds, batch_size=None, num_workers=num_workers,
                        worker_init_fn=_collect_garbage, **workers)  # fmt: skip
    gc.disable()  # until the workers have forked: the parent's garbage goes with them
    try:
        left = VideoSource(hard_video_dir, threads=2)
        left.read("vp9.webm", [2])
        del left
        clips = list(loader)
    finally:
        gc.enable()
    assert len(clips) == len(ds)
    for i, clip in enumerate(clips):
        assert_frames(clip.numpy(), references[vid], [(7 * i + j) % ds.n for j in range(4)], vid)


# ------------------------------------------------------------------ real clips


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=real_clip(n)) for n in ["mma_test.mp4", "mma_test.avi"]]
)
@pytest.mark.slow
def test_real_clips_are_frame_exact(name):
    src = VideoSource(SHARED_VIDEOS)
    ref = sequential_decode(SHARED_VIDEOS / name, src.info(name).stream_index)
    rng = np.random.default_rng(0)
    for _ in range(4):
        edges = np.linspace(0, len(ref), 9).astype(int)
        indices = [int(rng.integers(a, b)) for a, b in zip(edges[:-1], edges[1:], strict=True)]
        assert_frames(src.read(name, indices), ref, indices, name)
    indices = rng.integers(0, len(ref), size=10).tolist()
    assert_frames(src.read(name, indices), ref, indices, name)
    assert src.actual_frames(name) == len(ref)
