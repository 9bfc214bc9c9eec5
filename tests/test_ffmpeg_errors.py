"""FFmpeg's errors reach the user as words (issue 31): a truncated MP4 or a text file named
`.mp4` is "truncated or not a video file", naming the file, wherever a PyAV open or decode
error becomes a `VideoReadError` (the source's reads and counts, probe, convert), never
`[Errno 1094995529] Invalid data found when processing input`."""

from __future__ import annotations

import av.error
import pytest
from media import make_video, truncate_copy

from vidload import VideoReadError, VideoSource
from vidload.sources._video_file import ffmpeg_words

WORDS = "truncated or not a video file"


@pytest.fixture(scope="module")
def broken(tmp_path_factory):
    """A folder with a good video, MP4s cut inside their data and inside their header, and
    a text file named .mp4."""
    root = tmp_path_factory.mktemp("ffmpeg_errors")
    make_video(root / "good.mp4", 30, width=64, height=48)
    truncate_copy(root / "good.mp4", root / "cut_early.mp4", 0.05)  # FFmpeg: invalid data
    truncate_copy(root / "good.mp4", root / "cut_late.mp4", 0.6)  # no stream FFmpeg can decode
    (root / "text.mp4").write_text("hello, this is not a video\n" * 20)
    return root


BROKEN = ["cut_early.mp4", "cut_late.mp4", "text.mp4"]


@pytest.mark.parametrize("name", BROKEN)
@pytest.mark.parametrize("call", ["reported_frames", "actual_frames", "read", "timestamps"])
def test_the_source_says_truncated_or_not_a_video(broken, name, call):
    src = VideoSource(broken)
    args = (name, [0]) if call == "read" else (name,)
    with pytest.raises(VideoReadError, match=rf"{name}: not a readable video: .*{WORDS}") as e:
        getattr(src, call)(*args)
    assert "Errno" not in str(e.value) and "1094995529" not in str(e.value)
    assert e.value.path == str(broken / name)


def test_probe_and_convert_name_the_file_and_the_words(broken, tmp_path, capsys):
    from vidload.cli import main
    from vidload.convert import convert
    from vidload.probe import probe

    rows = {r.video_id: r for r in probe(broken, workers=1, progress=False)}
    assert rows["good.mp4"].status == "ok"
    for name in BROKEN:
        assert rows[name].status == "failed" and WORDS in rows[name].error, rows[name].error
        assert "Errno" not in rows[name].error
    for name in ("cut_early.mp4", "text.mp4"):  # FFmpeg's error: the file named in the reason
        assert f"{broken / name}'" in rows[name].error
    report = convert(broken, tmp_path / "h5", to="hdf5", workers=1, progress=False)
    failed = {f.video_id: f.error for f in report.failed}
    assert sorted(failed) == BROKEN
    assert all(WORDS in err and "Errno" not in err for err in failed.values()), failed
    assert main(["probe", str(broken), "-q"]) == 1
    out = capsys.readouterr()
    text = out.out + out.err
    assert "text.mp4" in text and WORDS in text and "Errno" not in text


def test_ffmpeg_words_say_what_an_error_means():
    invalid = av.error.InvalidDataError(1094995529, "Invalid data found when processing input", "x")
    assert ffmpeg_words(invalid, opening=True) == (
        "truncated or not a video file (FFmpeg: Invalid data found when processing input: 'x')"
    )
    assert ffmpeg_words(invalid) == (
        "the data is damaged or the file truncated (FFmpeg: Invalid data found when processing "
        "input: 'x')"
    )
    other = av.error.ExternalError(-542398533, "Generic error in an external library")
    assert ffmpeg_words(other) == "FFmpeg: Generic error in an external library"
