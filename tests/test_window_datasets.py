"""vidload.datasets.epic_kitchens and .charades on miniature copies of their layouts: videos
(`P01/videos/P01_01.MP4`, `<id>.mp4`) and EPIC's frame folders (`P01/rgb_frames/P01_01/
frame_0000000001.jpg`), every frame painted with its video's base plus its number, windows whose
bounds fall between frames (`00:00:01.37` at 25 fps). Every clip's frames must lie inside its
window, through VideoSource, JpegSource and a converted HDF5 container, and a whole-window clip
must be exactly the window's frames."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from media import encode_frames, frame_number, paint

from vidload.convert import convert
from vidload.dataset import ClipDataset
from vidload.datasets import DatasetList, charades, epic_kitchens
from vidload.manifest import load_videos
from vidload.sources.hdf5 import Hdf5Source
from vidload.sources.jpeg import JpegSource, write_jpeg_folder
from vidload.sources.jpeg_decode import encode_jpeg
from vidload.sources.video import VideoSource

W, H, FPS = 64, 48, 25
#: video: (frames, painted base): frame i (at i / 25 s) is painted base + i
EPIC_VIDEOS = {"P01_01": (100, 0), "P02_01": (80, 1000)}
EPIC_TEMPLATE = "frame_{:010d}.jpg"
EPIC_HEADER = (
    "narration_id,participant_id,video_id,narration_timestamp,start_timestamp,stop_timestamp,"
    "start_frame,stop_frame,narration,verb,verb_class,noun,noun_class,all_nouns,"
    "all_noun_classes"
)
#: (video, start, stop, start_frame, stop_frame, verb, verb_class, noun, noun_class)
EPIC_ROWS = [
    ("P01_01", "00:00:01.37", "00:00:02.01", 36, 51, "open", 3, "door", 8),
    ("P01_01", "00:00:00.10", "00:00:00.90", 4, 23, "take", 0, "cup", 13),
    ("P02_01", "00:00:00.50", "00:00:01.00", 14, 26, "open", 3, "cup", 13),
    ("P02_01", "00:00:02.00", "00:00:03.15", 51, 80, "put", 1, "door", 8),
]


def in_seconds(hms: str) -> float:
    h, m, s = hms.split(":")
    return int(h) * 3600 + int(m) * 60 + float(s)


def by_time(video: str, start: str, stop: str) -> list[int]:
    """The painted numbers of the frames whose time lies in [start, stop)."""
    n, base = EPIC_VIDEOS[video]
    lo, hi = in_seconds(start), in_seconds(stop)
    return [base + i for i in range(n) if lo - 1e-9 <= i / FPS < hi - 1e-9]


def by_frame(video: str, first: int, stop: int) -> list[int]:
    """The painted numbers of 1-based frames first .. stop - 1."""
    return [EPIC_VIDEOS[video][1] + k - 1 for k in range(first, stop)]


@pytest.fixture(scope="module")
def epic(tmp_path_factory):
    root = tmp_path_factory.mktemp("epic")
    data = root / "EPIC-KITCHENS"
    for video, (n, base) in EPIC_VIDEOS.items():
        person = video.split("_")[0]
        encode_frames(data / person / "videos" / f"{video}.MP4", [base + i for i in range(n)],
                      width=W, height=H, fps=FPS)  # fmt: skip
        jpegs = [encode_jpeg(paint(base + i, W, H), quality=90) for i in range(n)]
        write_jpeg_folder(data / person / "rgb_frames" / video, jpegs, template=EPIC_TEMPLATE)
    lines = [EPIC_HEADER]
    for k, (video, start, stop, f0, f1, verb, vc, noun, nc) in enumerate(EPIC_ROWS):
        person, nouns = video.split("_")[0], f"\"['{noun}']\",[{nc}]"
        lines.append(f"{video}_{k},{person},{video},{start},{start},{stop},{f0},{f1},"
                     f"{verb} {noun},{verb},{vc},{noun},{nc},{nouns}")  # fmt: skip
    (root / "EPIC_100_train.csv").write_text("\n".join(lines) + "\n")
    (root / "EPIC_100_verb_classes.csv").write_text(
        "id,key,instances,category\n0,take,\"['take']\",retrieve\n1,put,\"['put']\",leave\n"
        "2,wash,\"['wash']\",clean\n3,open,\"['open']\",access\n"
    )
    return root


def painted(clip: torch.Tensor) -> list[int]:
    return [frame_number(f.permute(1, 2, 0).numpy()) for f in clip]


def check_windows(entries, source, expected: list[list[int]]) -> None:
    """Every sampled frame lies in its entry's window; a whole-window clip is the window."""
    for seed in (0, 1):
        ds = ClipDataset(entries, source, num_frames=3, seed=seed)
        for i in range(len(ds)):
            assert set(painted(ds[i][0])) <= set(expected[i]), (i, painted(ds[i][0]))
    for i, want in enumerate(expected):
        whole = ClipDataset([entries[i]], source, num_frames=len(want), sampling="consecutive",
                            train=False)  # fmt: skip
        assert painted(whole[0][0]) == want, (i, want)


def test_epic_kitchens_labels_verb_noun_and_action(epic):
    csv = epic / "EPIC_100_train.csv"
    verbs = epic_kitchens(csv, label="verb")
    assert [e.label for e in verbs] == [3, 0, 3, 1]
    assert verbs.classes == ("take", "put", "verb_class 2", "open")  # the CSV's own names
    named = epic_kitchens(csv, classes=epic / "EPIC_100_verb_classes.csv")
    assert named.classes == ("take", "put", "wash", "open")
    nouns = epic_kitchens(csv, label="noun")
    assert [e.label for e in nouns] == [8, 13, 13, 8] and nouns.classes[13] == "cup"
    actions = epic_kitchens(csv, label="action")  # sorted (verb_class, noun_class) pairs
    assert [e.label for e in actions] == [2, 0, 3, 1]
    assert actions.classes == ("take cup", "put door", "open door", "open cup")
    pinned = epic_kitchens(csv, label="action", actions=[(3, 13), (3, 8), (0, 13), (1, 8)])
    assert [e.label for e in pinned] == [1, 2, 0, 3]
    assert epic_kitchens(csv, label="action", actions=csv).classes == actions.classes
    first = verbs[0]
    assert (first.video_id, first.start, first.end) == ("P01/videos/P01_01.MP4", 1.37, 2.01)
    assert first.extra == {"narration_id": "P01_01_0"}


def test_epic_kitchens_windows_through_videos_frames_and_a_converted_container(epic, tmp_path):
    csv, data = epic / "EPIC_100_train.csv", epic / "EPIC-KITCHENS"
    times = [by_time(v, s, e) for v, s, e, *_ in EPIC_ROWS]
    frames = [by_frame(v, f0, f1) for v, _, _, f0, f1, *_ in EPIC_ROWS]
    assert times[0] == list(range(35, 51))  # 1.37 s falls between frames 34 and 35
    videos = VideoSource(data)
    check_windows(epic_kitchens(csv), videos, times)
    check_windows(epic_kitchens(csv, window="frames"), videos, frames)
    rgb = epic_kitchens(csv, media="rgb_frames")  # frames by default: no frame rate needed
    assert rgb[0].video_id == "P01/rgb_frames/P01_01" and rgb[0].offset == 35
    check_windows(rgb, JpegSource(data, template=EPIC_TEMPLATE), frames)
    by_times = epic_kitchens(csv, media="rgb_frames", window="timestamps")
    check_windows(by_times, JpegSource(data, template=EPIC_TEMPLATE, fps=FPS), times)
    out = tmp_path / "epic_h5"
    assert convert(data, out, to="hdf5", workers=1, progress=False).ok  # videos and folders
    check_windows(epic_kitchens(csv), Hdf5Source(out), times)
    check_windows(epic_kitchens(csv, window="frames"), Hdf5Source(out), frames)
    # the time windows as a written list, the documented way to convert and train
    epic_kitchens(csv).write(tmp_path / "epic_train.csv")
    check_windows(load_videos(tmp_path / "epic_train.csv"), Hdf5Source(out), times)


def test_epic_kitchens_errors(epic, tmp_path):
    csv = epic / "EPIC_100_train.csv"
    text = csv.read_text()
    bad = tmp_path / "bad.csv"
    bad.write_text(text.replace("00:00:01.37", "1.37"))
    with pytest.raises(ValueError, match=r"bad.csv:2: time '1.37' is not HH:MM:SS.ff"):
        epic_kitchens(bad)
    bad.write_text(text.replace(",36,51,", ",51,36,"))
    with pytest.raises(ValueError, match=r"bad.csv:2: frames \[51, 36\) hold no frame"):
        epic_kitchens(bad, window="frames")
    bad.write_text(text.replace(",36,51,", ",0,51,"))
    with pytest.raises(ValueError, match=r"bad.csv:2: start_frame \(0\) must be >= 1"):
        epic_kitchens(bad, window="frames")
    with pytest.raises(ValueError, match=r"EPIC_100_train.csv:3: action .*\(0, 13\) is not one"):
        epic_kitchens(csv, label="action", actions=[(3, 8)])
    with pytest.raises(ValueError, match=r"EPIC_100_train.csv:2: verb_class 3 is outside classes"):
        epic_kitchens(csv, classes=["take", "put"])
    with pytest.raises(ValueError, match=r"classes= names verb or noun classes"):
        epic_kitchens(csv, label="action", classes=["x"])
    with pytest.raises(ValueError, match=r"label \('object'\) must be one of"):
        epic_kitchens(csv, label="object")  # type: ignore[arg-type]
    bad.write_text("video_id,start_timestamp\nP01_01,00:00:01.00\n")
    with pytest.raises(ValueError, match=r"bad.csv:1: the header .* lacks \['participant_id'"):
        epic_kitchens(bad)
    video = epic_kitchens(csv, window="frames")
    with pytest.raises(ValueError, match=r"'P01/videos/P01_01.MP4' starts at frame offset 35"):
        video.write(tmp_path / "frames.txt")  # a list line cannot hold an offset into a video
    rgb = epic_kitchens(csv, media="rgb_frames")
    rgb.write(tmp_path / "rgb.txt")  # rawframes lines with an offset: read back alike
    assert [(e.offset, e.known_frames) for e in load_videos(tmp_path / "rgb.txt")] == [
        (e.offset, e.known_frames) for e in rgb
    ]


# --------------------------------------------------------------------------- Charades

CHARADES_HEADER = (
    "id,subject,scene,quality,relevance,verified,script,objects,descriptions,actions,length"
)
#: id: (frames, painted base, actions)
CHARADES = {
    "46GP8": (90, 0, "c092 1.37 2.01;c147 0.00 1.00;c010 1.37 2.01"),
    "N11GT": (60, 2000, "c147 0.50 1.70"),
    "0IH69": (40, 3000, ""),
}


@pytest.fixture(scope="module")
def chara(tmp_path_factory):
    root = tmp_path_factory.mktemp("charades")
    lines = [CHARADES_HEADER]
    for vid, (n, base, actions) in CHARADES.items():
        encode_frames(root / "Charades_v1_480" / f"{vid}.mp4", [base + i for i in range(n)],
                      width=W, height=H, fps=FPS)  # fmt: skip
        lines.append(f'{vid},HR43,Kitchen,6,7,Yes,"A person, a cup.",cup;table,"Opens.",'
                     f"{actions},{n / FPS:.2f}")  # fmt: skip
    (root / "Charades_v1_train.csv").write_text("\n".join(lines) + "\n")
    names = [f"c{k:03d} Class number {k}" for k in range(157)]
    (root / "Charades_v1_classes.txt").write_text("\n".join(names) + "\n")
    return root


def charades_frames(vid: str, start: float, end: float) -> list[int]:
    n, base, _ = CHARADES[vid]
    return [base + i for i in range(n) if start - 1e-9 <= i / FPS < end - 1e-9]


def test_charades_windows_are_multi_label_and_hold_only_their_frames(chara, tmp_path):
    csv = chara / "Charades_v1_train.csv"
    windows = charades(csv, classes=chara / "Charades_v1_classes.txt")
    got = [(e.video_id, e.label, e.labels, e.start, e.end) for e in windows]
    assert got == [
        ("46GP8.mp4", 10, (10, 92), 1.37, 2.01),  # two actions of one window: one entry
        ("46GP8.mp4", 147, (147,), 0.0, 1.0),
        ("N11GT.mp4", 147, (147,), 0.5, 1.7),
    ]  # 0IH69 has no action: no window
    assert windows.classes[92] == "Class number 92" and len(windows.classes) == 157
    expected = [charades_frames(e.video_id[:-4], e.start, e.end) for e in windows]
    check_windows(windows, VideoSource(chara / "Charades_v1_480"), expected)
    out = tmp_path / "h5"
    assert convert(chara / "Charades_v1_480", out, to="hdf5", workers=1, progress=False).ok
    check_windows(windows, Hdf5Source(out), expected)
    ds = ClipDataset(windows, Hdf5Source(out), num_frames=2, multi_label=True, num_classes=157)
    hot = ds[0][1]
    assert hot.dtype == torch.float32 and np.flatnonzero(hot.numpy()).tolist() == [10, 92]


def test_charades_whole_videos_with_all_their_labels(chara):
    videos = charades(chara / "Charades_v1_train.csv", items="videos")
    got = [(e.video_id, e.label, e.labels, e.window) for e in videos]
    assert got == [
        ("46GP8.mp4", 10, (10, 92, 147), None),
        ("N11GT.mp4", 147, (147,), None),
        ("0IH69.mp4", -1, None, None),  # no action: unlabelled, an all-zero multi-hot vector
    ]
    assert videos.classes[0] == "c000" and len(videos.classes) == 157
    ds = ClipDataset(videos, VideoSource(chara / "Charades_v1_480"), num_frames=2,
                     multi_label=True, num_classes=157)  # fmt: skip
    assert np.flatnonzero(ds[0][1].numpy()).tolist() == [10, 92, 147]
    assert ds[2][1].sum() == 0
    assert set(painted(ds[1][0])) <= set(charades_frames("N11GT", 0, 99))


def test_charades_errors(chara, tmp_path):
    text = (chara / "Charades_v1_train.csv").read_text()
    bad = tmp_path / "bad.csv"
    for old, new, match in (
        ("c092 1.37 2.01", "c092 1.37", r"bad.csv:2: action 'c092 1.37' is not `cNNN start end`"),
        ("c092 1.37 2.01", "x092 1.37 2.01", r"bad.csv:2: action 'x092 1.37 2.01' is not"),
        ("c092 1.37 2.01", "c092 1.37 soon", r"bad.csv:2: action 'c092 1.37 soon': its times"),
        ("c147 0.50 1.70", "c147 -0.50 1.70", r"bad.csv:3: window start \(-0.5\) must be"),
        ("c147 0.50 1.70", "c157 0.50 1.70", r"bad.csv:3: action class c157 is beyond classes"),
    ):
        bad.write_text(text.replace(old, new))
        with pytest.raises(ValueError, match=match):
            charades(bad)
    bad.write_text(text.replace("c147 0.50 1.70", "c147 1.70 0.50;c001 1.00 1.00;c002 0 1"))
    with pytest.warns(
        UserWarning,
        match=r"bad.csv: left out 2 action window\(s\) that end where "
        r"or before they start \(line 3: c147 1.70 0.50; line 3: c001 1.00 1.00\)",
    ):
        kept = charades(bad)  # fmt: skip
    assert [(e.video_id, e.labels) for e in kept][-1] == ("N11GT.mp4", (2,))
    assert charades(bad, items="videos")[1].labels == (1, 2, 147)  # their labels still count
    classes = tmp_path / "classes.txt"
    classes.write_text("c000 Holding some clothes\nc002 Putting clothes somewhere\n")
    with pytest.raises(ValueError, match=r"classes.txt:2: .* is not `c001 <name>`"):
        charades(chara / "Charades_v1_train.csv", classes=classes)
    with pytest.raises(ValueError, match=r"items \('clips'\) must be one of"):
        charades(chara / "Charades_v1_train.csv", items="clips")  # type: ignore[arg-type]
    windows = charades(chara / "Charades_v1_train.csv")
    with pytest.raises(ValueError, match=r"'46GP8.mp4' has 2 labels and the list has windows"):
        windows.write(tmp_path / "w.csv")
    videos = charades(chara / "Charades_v1_train.csv", items="videos")
    videos.write(tmp_path / "v.txt")  # multi-label lines, read back with multi_label=True
    back = load_videos(tmp_path / "v.txt", multi_label=True)
    assert [e.labels for e in back] == [(10, 92, 147), (147,), (-1,)]
    assert isinstance(videos, DatasetList)


def test_frame_windows_from_one_start_frame_keep_their_own_lengths(epic, tmp_path):
    """Two actions from one start_frame share a count slot (one video, one offset): the count
    learned when the longer one runs past the video's end must not stretch the shorter one."""
    lines = (epic / "EPIC_100_train.csv").read_text().splitlines()[:2]
    lines.append(lines[1].replace(",36,51,", ",36,300,").replace("P01_01_0,", "P01_01_9,"))
    lines[1] = lines[1].replace(",36,51,", ",36,46,")
    (tmp_path / "two.csv").write_text("\n".join([lines[0], lines[2], lines[1]]) + "\n")
    entries = epic_kitchens(tmp_path / "two.csv", window="frames")
    assert [(e.offset, e.known_frames) for e in entries] == [(35, 264), (35, 10)]
    source = VideoSource(epic / "EPIC-KITCHENS")
    ds = ClipDataset(entries, source, num_frames=10, sampling="consecutive", train=False)
    with pytest.warns(UserWarning, match=r"264 frames from the video list, but only 65 frames"):
        got = painted(ds[0][0])  # 10 of the 65 frames 35 .. 99 that exist
    assert got == list(range(got[0], got[0] + 10)) and 35 <= got[0] and got[-1] <= 99
    assert painted(ds[1][0]) == list(range(35, 45))  # its own 10 frames, not 10 of 65


def test_epic_kitchens_test_csv_is_unlabelled(epic, tmp_path):
    test = tmp_path / "EPIC_100_test_timestamps.csv"  # the test file: times, no labels
    test.write_text(
        "narration_id,participant_id,video_id,start_timestamp,stop_timestamp,start_frame,"
        "stop_frame\nP01_01_0,P01,P01_01,00:00:01.37,00:00:02.01,36,51\n"
    )
    for label in ("verb", "noun", "action"):
        entries = epic_kitchens(test, label=label)  # type: ignore[arg-type]
        assert [(e.label, e.start, e.end) for e in entries] == [(-1, 1.37, 2.01)]
        assert entries.classes == ()
