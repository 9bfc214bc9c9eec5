"""One contract for every storage kind in every place: each kind of the table
(`vidload._kinds`) is built by `convert` from the same painted videos and read through its own
source from local disk, an HTTP server with Range and the S3 test server (`tests/servers.py`).
A kind registered in the table is covered here with no change to this file; a kind whose
extra is not installed is skipped, naming it; a `local_only` kind (LMDB) refuses a URL root
with an error naming the URL.

The contract (DESIGN.md's FrameSource): `read(video_id, indices)` is uint8 (k, H, W, 3) RGB in
the order asked, duplicates allowed, the frames asked (painted numbers read back) and the same
pixels wherever the files are; `actual_frames` is the count that decodes, `reported_frames` what
the container says or None, `timestamps` one per actual frame; an index past the actual count is
a FrameCountError (an IndexError).
"""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
from media import frame_number, make_video

from vidload._kinds import get_kind, kind_names
from vidload._storage import MissingExtraError
from vidload.errors import FrameCountError, UsageError

N, W, H = 12, 96, 64
VIDEOS = {"a/x1.mp4": N, "b/y2.mp4": 6}
CLIP = [3, 0, 7, 7, 11]
PLACES = ["local", "http", "s3"]


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    folder = tmp_path_factory.mktemp("contract") / "videos"
    for vid, n in VIDEOS.items():
        make_video(folder / vid, n, width=W, height=H, options={"g": "4", "bf": "2"})
    return folder


@pytest.fixture(scope="module")
def converted(videos, tmp_path_factory):
    """{kind: its converted folder}, made once per kind when a test first asks."""
    from vidload.convert import convert

    made: dict[str, object] = {}

    def build(kind: str):
        if kind not in made:
            out = tmp_path_factory.mktemp(kind)
            report = convert(videos, out, to=kind, workers=1, quality=95, progress=False)
            assert not report.failed, report.failed
            made[kind] = out
        return made[kind]

    return build


@pytest.fixture
def place_root(request, converted):
    """(kind, root, source options) of the parametrised kind in the parametrised place."""
    kind, place = request.param
    try:
        get_kind(kind)
    except MissingExtraError as e:
        pytest.skip(str(e))
    local = converted(kind)
    if place == "local":
        return kind, str(local), {}
    if place == "http":
        pytest.importorskip("aiohttp")
        http_dir = request.getfixturevalue("http_dir")
        shutil.copytree(local, http_dir.path, dirs_exist_ok=True)
        return kind, http_dir.url, {}
    s3_bucket = request.getfixturevalue("s3_bucket")
    url = s3_bucket.upload(local, kind)
    return kind, url, {"storage_options": s3_bucket.storage_options}


CASES = [(kind, place) for kind in kind_names() for place in PLACES]


@pytest.mark.parametrize("place_root", CASES, ids=[f"{k}-{p}" for k, p in CASES], indirect=True)
def test_every_kind_reads_the_same_frames_everywhere(place_root, converted):
    kind, root, options = place_root
    if get_kind(kind).local_only and root != str(converted(kind)):
        with pytest.raises(UsageError, match=rf"{re.escape(root)}.*local only"):
            get_kind(kind).open(root, **options)
        return
    source = get_kind(kind).open(root, **options)
    local = get_kind(kind).open(converted(kind))
    for vid, n in VIDEOS.items():
        assert source.actual_frames(vid) == n
        assert source.reported_frames(vid) in (n, None)
        clip = [i for i in CLIP if i < n]
        frames = source.read(vid, clip)
        assert frames.dtype == np.uint8 and frames.shape == (len(clip), H, W, 3)
        assert [frame_number(f) for f in frames] == clip
        assert np.array_equal(frames, local.read(vid, clip))
        assert source.timestamps(vid).shape == (n,)
        with pytest.raises(FrameCountError) as e:
            source.read(vid, [n])
        assert isinstance(e.value, IndexError)
