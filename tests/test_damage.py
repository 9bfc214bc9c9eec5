"""Damage the decoder does not report (issue 31, part 3): caught by the persisted index's
digests and count, and by the decoder's corrupt flag; healthy footage never flagged.

`damage.silent_damage` makes each kind of damage (bytes changed inside a P-frame's slice data,
a flipped bit in a keyframe, random runs of 256 and 4096 bytes mid-file, one flipped bit, in
8-bit and 10-bit H.264) and keeps only a copy whose seek reads without the checks (no persisted
index, the corrupt flag ignored) give another picture than the sequential decode, or a frame
past where it stops: so each test below fails where the checks do not work. With the index
written from the damaged file, every frame read is the sequential decode's, in any call order.
"""

from __future__ import annotations

import json
import shutil
import sys
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest
from damage import change_slice_bytes, packets, silent_damage, textured_video
from media import (
    decode_until_bad,
    frame_number,
    make_video,
    real_clip,
    sequential_decode,
    shared_videos,
)

from vidload._layout import index_path
from vidload._storage import Location
from vidload.cli import main
from vidload.convert import convert
from vidload.errors import FrameCountError, VideoReadError
from vidload.sources import video as video_module
from vidload.sources._heads import read_heads, write_heads
from vidload.sources._video_index import BadData
from vidload.sources._video_persist import load_index
from vidload.sources._video_remote import from_record
from vidload.sources.video import VideoSource

#: (kind of damage, pixel format of the textured H.264 source)
CASES = [
    ("p-slice", "yuv420p"),
    ("keyframe", "yuv420p"),
    ("run-256", "yuv420p"),
    ("run-4096", "yuv420p"),
    ("bit", "yuv420p"),
    ("bit", "yuv420p10le"),
]


def _unchecked_read(path: Path, i: int) -> np.ndarray:
    """Frame i of `path` by a fresh source without the checks: no persisted index, the
    decoder's corrupt flag ignored (the reader before issue 31)."""
    src = VideoSource(path.parent)
    src._check_corrupt = False
    return src.read(path.name, [i])[0]


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("damage_src")
    return {
        pix: textured_video(
            root / f"{pix}{'.mkv' if '10' in pix else '.mp4'}",
            60,
            pix_fmt=pix,
            options={"g": "12", "bf": "2"},
        )
        for pix in ("yuv420p", "yuv420p10le")
    }


@pytest.fixture(scope="module")
def damaged(sources, tmp_path_factory) -> dict[tuple[str, str], tuple[Path, list, str]]:
    """{case: (damaged file, its sequential decode, how unchecked seek reads differ)}, each
    file alone in its folder, without an index."""
    root = tmp_path_factory.mktemp("damaged_silent")
    out = {}
    for kind, pix in CASES:
        src = sources[pix]
        dst = root / f"{kind}-{pix}" / f"v{src.suffix}"
        out[(kind, pix)] = silent_damage(kind, src, dst, _unchecked_read)
    return out


def _orders(n: int, seed: int) -> list[list[int]]:
    """Calls that read every frame of n: one at a time in a random order, clips of random
    sizes with duplicates and unsorted, all of them backwards, and the last ones first."""
    rng = np.random.default_rng(seed)
    calls = [[int(i)] for i in rng.permutation(n)]
    for _ in range(6):
        k = int(rng.integers(1, 9))
        clip = rng.choice(n, k, replace=True).tolist()
        calls.append(clip + clip[:1])
    calls.append(list(range(n))[::-1])
    calls.append(list(range(n - 4, n)) + [0])
    return calls


def _copy_with_index(path: Path, dst: Path) -> Path:
    """A copy of `path` in `dst` with its index written (from its own sequential decode)."""
    dst.mkdir(parents=True, exist_ok=True)
    shutil.copy(path, dst / path.name)
    VideoSource(dst).write_index(path.name)
    return dst / path.name


@pytest.fixture
def bad_data(monkeypatch) -> list[str]:
    """The reasons a seek read marked a file damaged (BadData), as they happen."""
    seen: list[str] = []
    real = video_module.read_seeking

    def counting(*args, **kwargs):
        try:
            return real(*args, **kwargs)
        except BadData as e:
            seen.append(str(e))
            raise

    monkeypatch.setattr(video_module, "read_seeking", counting)
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=["-".join(c) for c in CASES])
def test_silent_damage_is_read_as_the_sequential_decode_with_the_index(damaged, case, tmp_path):
    path, reference, why = damaged[case]
    assert why  # without the checks a seek read gives another frame (or one past the end)
    copy = _copy_with_index(path, tmp_path / "indexed")
    n = len(reference)
    assert load_index(copy, 0).index.num_frames == n
    for threads in (1, 2):
        for corrupt_flag in (True, False):  # the digests alone suffice
            src = VideoSource(copy.parent, threads=threads)
            src._check_corrupt = corrupt_flag
            with pytest.raises(FrameCountError, match=f"only {n} frames"):
                src.read(copy.name, [n])  # past the count: refused, even as the first read
            for call in _orders(n, seed=threads):
                got = src.read(copy.name, call)
                for frame, i in zip(got, call, strict=True):
                    assert np.array_equal(frame, reference[i]), (case, threads, i, why)
            with pytest.raises(FrameCountError):
                src.read(copy.name, [0, n + 3])


def _wrong_frames(path: Path, reference: list, corrupt_flag: bool) -> list[int]:
    """Frames of `path` a fresh source without an index reads wrong, one read per frame."""
    wrong = []
    for i, want in enumerate(reference):
        src = VideoSource(path.parent)
        src._check_corrupt = corrupt_flag
        if not np.array_equal(src.read(path.name, [i])[0], want):
            wrong.append(i)
    return wrong


@pytest.mark.slow
def test_the_corrupt_flag_alone_catches_some_concealed_damage(damaged, bad_data):
    """Without an index the decoder's corrupt flag (`VideoFrame.is_corrupt`) is the only
    signal besides its errors: it fires on some of the damage (those reads then give the
    sequential decode's frames), never makes a read worse, and misses the rest: only the
    index's digests catch all (docs/guides/broken-videos.md)."""
    fixed = []
    for case, (path, reference, _why) in damaged.items():
        before = _wrong_frames(path, reference, corrupt_flag=False)
        after = _wrong_frames(path, reference, corrupt_flag=True)
        assert set(after) <= set(before), (case, before, after)
        if len(after) < len(before):
            fixed.append(case)
    assert fixed, "the corrupt flag fired on none of the generated damage"
    assert any("flags frame" in r for r in bad_data)


def test_healthy_footage_is_never_flagged(hard_video_dir, hard_videos, tmp_path, bad_data):
    """Open GOPs, B-frames, VFR, 10-bit, every codec of the hard cases: read with their
    digests (and the corrupt flag) in random orders, every frame exact, no file marked
    damaged."""
    for vid, case in hard_videos.items():
        if case.frames is None or case.stream_index:
            continue  # truncated files: damaged on purpose
        copy = _copy_with_index(hard_video_dir / vid, tmp_path / vid.replace(".", "_"))
        src = VideoSource(copy.parent)
        reference = sequential_decode(copy)
        assert load_index(copy, 0).index.digests is not None, vid
        for call in _orders(len(reference), seed=len(vid))[::3]:
            got = src.read(copy.name, call)
            for frame, i in zip(got, call, strict=True):
                assert np.array_equal(frame, reference[i]), (vid, i)
        assert bad_data == [], vid


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(f"{folder}/{name}", marks=real_clip(f"../{folder}/{name}"))
        for folder, name in (
            ("videos", "mma_test.mp4"),
            ("videos", "mma_test.avi"),
            ("videos-extra", "chaplin.mp4"),
            ("videos-extra", "big_buck_bunny_0_30.webm"),
        )
    ],
)
def test_real_clips_are_never_flagged(name, tmp_path, bad_data):
    path = shared_videos().parent / name
    copy = _copy_with_index(path, tmp_path)
    reference = decode_until_bad(copy)
    src = VideoSource(tmp_path)
    rng = np.random.default_rng(7)
    for _ in range(12):
        clip = sorted(rng.choice(len(reference), 8, replace=False).tolist())
        got = src.read(copy.name, clip)
        for frame, i in zip(got, clip, strict=True):
            assert np.array_equal(frame, reference[i]), (name, i)
    assert bad_data == [], name  # no check, old or new, marks a real clip damaged


def test_an_index_without_digests_is_read_as_before(tmp_path, sources):
    """A format 2 sidecar (no digests) still serves reads; the count still bounds them."""
    copy = _copy_with_index(sources["yuv420p"], tmp_path)
    sidecar = index_path(copy)
    first, second = sidecar.read_bytes().split(b"\n", 1)
    doc = json.loads(first)
    assert doc["format"] == 3 and len(doc["digests"]) == (60 * 4 + 2) // 3 * 4
    del doc["digests"]
    doc["format"] = 2
    sidecar.write_bytes(json.dumps(doc).encode() + b"\n" + second)
    found = load_index(copy, 0)
    assert found is not None and found.index.digests is None
    src = VideoSource(tmp_path)
    reference = sequential_decode(copy)
    assert np.array_equal(src.read(copy.name, [37])[0], reference[37])
    with pytest.raises(FrameCountError):
        src.read(copy.name, [60])


@pytest.mark.parametrize("bad", ["@@@@", 17, "AAAA"])
def test_unreadable_digests_make_the_index_unused_with_the_reason(tmp_path, sources, bad):
    copy = _copy_with_index(sources["yuv420p"], tmp_path)
    sidecar = index_path(copy)
    first, second = sidecar.read_bytes().split(b"\n", 1)
    doc = json.loads(first)
    doc["digests"] = bad
    sidecar.write_bytes(json.dumps(doc).encode() + b"\n" + second)
    with pytest.warns(UserWarning, match="frame index not used: .*digests"):
        assert load_index(copy, 0) is None


def test_the_digests_travel_in_the_sidecar_of_heads(tmp_path, sources):
    """`--to video`'s sidecar of heads carries each index's bytes, digests included: a
    reader in a bucket checks its seek reads as a local one does; ~4 bytes a frame more."""
    copy = _copy_with_index(sources["yuv420p"], tmp_path / "root")
    root = copy.parent
    assert write_heads(VideoSource(root), [copy.name]) == 1
    record = read_heads(Location(str(root)), "video").get(copy.name)
    remote = from_record(Location(str(root)) / copy.name, record)
    local = load_index(copy, 0)
    assert remote is not None and remote.persisted.index.digests == local.index.digests
    doc = json.loads(record.raw.split(b"\n")[0])
    with_digests = len(zlib.compress(record.raw))
    del doc["digests"]
    without = len(zlib.compress(json.dumps(doc, separators=(",", ":")).encode()))
    without += len(zlib.compress(record.raw.split(b"\n", 1)[1])) - 8  # the byte layout line
    per_frame = (with_digests - without) / 60
    assert 3.5 < per_frame < 6, per_frame


def test_a_file_changed_since_its_index_is_refused_naming_it(tmp_path):
    """An index written from the healthy file, the file damaged since in its middle (its size
    and the ends its sidecar hashes unchanged, so the index is still taken as the file's):
    the frames the index promises cannot be given, and the read says so instead of returning
    another picture; the frames before the damage still come back."""
    clean = textured_video(tmp_path / "src" / "long.mp4", 160, options={"g": "24", "bf": "2"})
    healthy = sequential_decode(clean)
    copy = _copy_with_index(clean, tmp_path / "indexed")
    found = packets(clean)
    middle = next(p for p in found if p.pos > clean.stat().st_size // 2 and not p.key)
    change_slice_bytes(clean, copy, middle, nbytes=64, seed=1)
    assert 64 << 10 < middle.pos < copy.stat().st_size - (64 << 10)  # not in the hashed ends
    damaged = decode_until_bad(copy)
    assert any(not np.array_equal(a, b) for a, b in zip(damaged, healthy, strict=False))
    assert load_index(copy, 0) is not None
    src = VideoSource(copy.parent)
    refused = 0
    for i in range(0, len(healthy), 3):
        try:
            got = src.read(copy.name, [i])[0]
        except VideoReadError as e:
            assert "changed since" in e.reason and copy.name in str(e), e
            refused += 1
            continue
        assert np.array_equal(got, healthy[i]), i
    assert refused > 0


def test_probe_and_convert_write_digests_probe_decoding_once(tmp_path, monkeypatch):
    """`vidload probe --write-index` and `convert --to video` write format 3 indexes with every
    frame's digest; probe counts the frames with the decode that records them (one full
    decode a video, not two)."""
    folder = tmp_path / "in"
    make_video(folder / "a.mp4", 30, options={"g": "8", "bf": "2"})
    make_video(folder / "b.mkv", 20, options={"g": "5"})
    full_decodes = []
    real = VideoSource._decode_all

    def counting(self, path, recorder=None):
        if recorder is not None:
            full_decodes.append(str(path))
        return real(self, path, recorder)

    monkeypatch.setattr(VideoSource, "_decode_all", counting)
    assert main(["probe", str(folder), "--write-index", "-q", "--workers", "1"]) == 0
    assert sorted(Path(p).name for p in full_decodes) == ["a.mp4", "b.mkv"]
    monkeypatch.undo()
    for name, n in (("a.mp4", 30), ("b.mkv", 20)):
        found = load_index(folder / name, 0)
        assert found.index.num_frames == n and len(found.index.digests) == n
    out = tmp_path / "out"
    convert(folder, out, to="video", workers=1, progress=False)
    converted = load_index(out / "a.mp4", 0)
    assert converted is not None and len(converted.index.digests) == 30
    record = read_heads(Location(str(out)), "video").get("a.mp4")
    assert json.loads(record.raw.split(b"\n")[0])["digests"] is not None
    assert [frame_number(f) for f in VideoSource(out).read("a.mp4", [29, 3, 17])] == [29, 3, 17]


@pytest.mark.slow
def test_damaged_video_over_http_is_read_through_its_index_exactly(damaged, http_dir):
    """The index (digests and count) read over a URL, the video by byte ranges: the same
    frames as the local sequential decode, the count refused past."""
    for case in (("p-slice", "yuv420p"), ("bit", "yuv420p10le")):
        path, reference, _ = damaged[case]
        name = f"{case[0]}{path.suffix}"
        served = _copy_with_index(path, http_dir.path / "local")
        shutil.copy(served, http_dir.path / name)
        shutil.copy(index_path(served), http_dir.path / f"{name}.vidload-index")
        src = VideoSource(http_dir.url)
        n = len(reference)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # read by byte ranges, not downloaded whole
            with pytest.raises(FrameCountError):
                src.read(name, [n])
            for call in _orders(n, seed=5)[::2]:
                got = src.read(name, call)
                for frame, i in zip(got, call, strict=True):
                    assert np.array_equal(frame, reference[i]), (case, i)


@pytest.mark.slow
def test_the_cost_tool_runs_end_to_end(tmp_path, capsys):
    """tools/damage_check_cost.py on a tiny video (its figures are not checked: no timing in
    tests)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import damage_check_cost

    video = make_video(tmp_path / "v.mp4", 24, options={"g": "6", "bf": "2"})
    assert damage_check_cost.main([str(video), "--clips", "2", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    assert "v.mp4" in out and "the check" in out and "recording the digests" in out
