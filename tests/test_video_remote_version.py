"""A remote video rewritten while a process holds its header (issue 23): the next read that
fetches its bytes notices (the GETs report another ETag than the header's) and opens the
video again, so the frame that comes back is the new object's, never old header with new
bytes; over moto, by a clip alone and by a batch's fetch (`ClipDataset.__getitems__`'s)."""

from __future__ import annotations

import warnings

import av
import numpy as np
import pytest
from media import frame_number, paint

from vidload._layout import INDEX_SUFFIX
from vidload._storage import Location, fetch
from vidload._storage.batch import holding
from vidload._storage.faults import CHANGED
from vidload.errors import VideoReadError
from vidload.sources.video import VideoSource

N, GOP = 64, 8
W, H, NOISE = 128, 96, 96  # painted number on top, noise below: ~1 MB, GOPs far apart
NEW = 100  # the rewritten object's frame i shows NEW + i


def _write(path, first: int) -> None:
    """`path`: N frames painted first.., laid out as `convert --to video` writes (a keyframe
    every GOP frames, no B-frames), its frame index beside it."""
    rng = np.random.default_rng(first)
    params = f"keyint={GOP}:min-keyint={GOP}:scenecut=0:bframes=0"
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = W, H + NOISE, "yuv420p"
        stream.options = {"preset": "ultrafast", "crf": "23", "x264-params": params}
        for i in range(first, first + N):
            noise = rng.integers(0, 256, (NOISE, W, 3), dtype=np.uint8)
            frame = av.VideoFrame.from_ndarray(np.vstack([paint(i, W, H), noise]), "rgb24")
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    VideoSource(path.parent).write_index(path.name)


@pytest.fixture(scope="module")
def versions(tmp_path_factory):
    """{"old", "new"}: a folder holding `x.mp4` painted 0.. or NEW.., each with its index."""
    out = {}
    for name, first in (("old", 0), ("new", NEW)):
        out[name] = tmp_path_factory.mktemp(name)
        _write(out[name] / "x.mp4", first)
    return out


def _put(s3_bucket, folder, *, sidecar: bool = True) -> None:
    s3_bucket.put("v/x.mp4", (folder / "x.mp4").read_bytes())
    if sidecar:
        s3_bucket.put(f"v/x.mp4{INDEX_SUFFIX}", (folder / f"x.mp4{INDEX_SUFFIX}").read_bytes())


def _frames(src, wanted):
    return [frame_number(f[:H]) for f in src.read("x.mp4", wanted)]


def test_a_clip_after_the_object_changed_is_the_new_object_s(versions, s3_bucket):
    _put(s3_bucket, versions["old"])
    src = VideoSource(f"{s3_bucket.url}/v", storage_options=s3_bucket.storage_options)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # read by ranges throughout: no whole download
        assert _frames(src, [3, 12]) == [3, 12]
        _put(s3_bucket, versions["new"])  # rewritten in place, with its new sidecar
        s3_bucket.faults.clear_log()
        assert _frames(src, [40, 57]) == [NEW + 40, NEW + 57]
        gets = s3_bucket.faults.requests(method="GET", path_contains="/v/x.mp4")
        assert gets and all(r.range is not None for r in gets if r.path.endswith(".mp4"))
        assert any(r.path.endswith(INDEX_SUFFIX) for r in gets)  # its sidecar read again
        assert _frames(src, [20]) == [NEW + 20]
    assert src.actual_frames("x.mp4") == N


def test_a_changed_object_with_a_stale_sidecar_is_read_whole_and_said(versions, s3_bucket):
    _put(s3_bucket, versions["old"])
    src = VideoSource(f"{s3_bucket.url}/v", storage_options=s3_bucket.storage_options)
    assert _frames(src, [5]) == [5]
    _put(s3_bucket, versions["new"], sidecar=False)  # the video alone rewritten
    with pytest.warns(UserWarning, match=r"x\.mp4: its frame index is not used: .*rewritten"):
        assert _frames(src, [50]) == [NEW + 50]


def test_a_batch_s_fetch_of_a_changed_object_is_not_held(versions, s3_bucket):
    """The batch path: a video's ranges fetched ahead in one round for a batch come back as
    CHANGED in its place (not held), and the item's own read opens the video again."""
    _put(s3_bucket, versions["old"])
    src = VideoSource(f"{s3_bucket.url}/v", storage_options=s3_bucket.storage_options)
    src.prepare(["x.mp4"])
    requests = src.fetch_plan("x.mp4", [2])
    got = fetch(requests)
    with holding(requests, got):
        assert _frames(src, [2]) == [2]
    _put(s3_bucket, versions["new"])
    requests = src.fetch_plan("x.mp4", [59])
    assert requests  # the packets of frame 59 are not held
    got = fetch(requests)
    assert isinstance(got[0], VideoReadError) and got[0].reason == CHANGED
    with holding(requests, got):
        assert _frames(src, [59]) == [NEW + 59]


def test_a_versioned_location_raises_changed_and_a_plain_one_does_not(s3_bucket):
    s3_bucket.put("k/o", bytes(range(256)) * 4)
    url = f"{s3_bucket.url}/k/o"
    versioned = Location(url, s3_bucket.storage_options).versioned()
    plain = Location(url, s3_bucket.storage_options)
    assert versioned.read_ranges([(0, 4), (600, 604)]) == [bytes(range(4)), bytes(range(88, 92))]
    s3_bucket.put("k/o", b"\xff" * 1024)
    with pytest.raises(VideoReadError, match=rf"^{url}: {CHANGED}$"):
        versioned.read_range(0, 4)
    assert plain.read_range(0, 4) == b"\xff" * 4
    assert np.array_equal(fetch([(plain, [(0, 2)])])[0], [b"\xff\xff"])
    assert Location("/tmp").versioned() == Location("/tmp")  # a local path is itself
