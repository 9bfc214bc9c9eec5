"""The manifest names every container (issue 30): what `vidload convert` wrote reads over HTTP,
with its own manifest, exactly as it reads locally, and no source guesses a name.

The inputs hold two videos with one stem (`a/x.avi`, `a/x.mp4`: containers `a/x.avi.npy` and
`a/x.mp4.npy`) and originals that are not MP4 (`.avi`, `.mkv`, `.mov`); each output is copied as
it is behind an HTTP server that refuses to list a folder (as nginx without `autoindex`), and
every request it answers is counted there, HEAD included.
"""

from __future__ import annotations

import shutil
import zipfile

import numpy as np
import pytest
import torch
from media import encode_frames, frame_number

from vidload import ClipDataset
from vidload._dataset.batch import getitems
from vidload._layout import ContainerNames
from vidload.convert import convert
from vidload.manifest import read_manifest
from vidload.sources._heads import HEADS_NAME, read_heads
from vidload.sources.hdf5 import Hdf5Source
from vidload.sources.jpeg import JpegSource
from vidload.sources.npy import NpySource
from vidload.sources.video import VideoSource

W, H = 64, 48
#: id -> frames; two ids share the stem `a/x`
VIDEOS = {"a/x.avi": 12, "a/x.mp4": 10, "b/y.mkv": 14, "b/z.mov": 9, "c/w.mp4": 11}
KINDS = ["video", "hdf5", "npy", "jpeg"]
SOURCES = {"video": VideoSource, "hdf5": Hdf5Source, "npy": NpySource, "jpeg": JpegSource}
#: the containers convert names (the collided stem keeps its extension)
NAMES = {
    "npy": {
        "a/x.avi": "a/x.avi.npy",
        "a/x.mp4": "a/x.mp4.npy",
        "b/y.mkv": "b/y.npy",
        "b/z.mov": "b/z.npy",
        "c/w.mp4": "c/w.npy",
    },
    "video": {
        "a/x.avi": "a/x.avi.mp4",
        "a/x.mp4": "a/x.mp4.mp4",
        "b/y.mkv": "b/y.mp4",
        "b/z.mov": "b/z.mp4",
        "c/w.mp4": "c/w.mp4",
    },
}
FAST_VIDEO = {"gop": 4, "crf": 18, "preset": "ultrafast"}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("names-in")
    for k, (vid, n) in enumerate(VIDEOS.items()):
        codec = "mpeg4" if vid.endswith(".avi") else "libx264"
        # each video's frames painted from its own first index: a clip tells its video apart
        indices = range(100 * k, 100 * k + n)
        encode_frames(folder / vid, indices, codec=codec, width=W, height=H, options={"g": "4"})
    return folder


@pytest.fixture(scope="module")
def outputs(inputs, tmp_path_factory):
    out = {}
    for kind in KINDS:
        folder = tmp_path_factory.mktemp(f"names-{kind}")
        options = FAST_VIDEO if kind == "video" else {}
        report = convert(inputs, folder, to=kind, workers=1, progress=False, **options)
        assert report.ok and len(report.converted) == len(VIDEOS), report
        out[kind] = folder
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_convert_names_every_container_in_its_manifest(kind, outputs):
    rows = {r.video_id: r for r in read_manifest(outputs[kind] / "manifest.csv")}
    suffix = {"video": ".mp4", "hdf5": ".h5", "npy": ".npy", "jpeg": ""}[kind]
    want = {v: n.replace(".npy", suffix) for v, n in NAMES["npy"].items()}
    if kind == "video":
        want = NAMES["video"]
    assert {v: r.container for v, r in rows.items()} == want
    for name in want.values():
        assert (outputs[kind] / name).exists(), name


def _epoch(ds, batch=2):
    """Every item of an epoch, read as a DataLoader reads a batch (`__getitems__`)."""
    out = []
    for start in range(0, len(ds), batch):
        out.extend(getitems(ds, list(range(start, min(start + batch, len(ds))))))
    return out


def _same(a, b) -> bool:
    return len(a) == len(b) and all(
        torch.equal(x[0], y[0]) and x[1] == y[1] for x, y in zip(a, b, strict=True)
    )


@pytest.mark.parametrize("kind", KINDS)
def test_an_output_behind_http_reads_with_its_own_manifest_as_locally(kind, outputs, http_dir):
    """Copied as-is behind a server that cannot list: every clip equals the local read, and
    no request is answered 4xx (HEAD included) over an epoch (and a second one)."""
    served = http_dir.path / "out"
    shutil.copytree(outputs[kind], served)
    http_dir.faults.listings = False
    url = f"{http_dir.url}/out"
    kw = {"num_frames": 4, "seed": 3}
    local = ClipDataset(str(outputs[kind] / "manifest.csv"), SOURCES[kind](outputs[kind]), **kw)
    http_dir.faults.clear_log()
    remote = ClipDataset(f"{url}/manifest.csv", SOURCES[kind](url), **kw)
    assert len(remote) == len(VIDEOS)
    built = [(r.method, r.path.rsplit("/", 2)[-2:], r.range) for r in http_dir.faults.requests()]
    assert built == [("GET", ["out", "manifest.csv"], None)], built  # one GET builds it
    for epoch in (0, 1):
        local.set_epoch(epoch)
        remote.set_epoch(epoch)
        got, want = _epoch(remote), [local[i] for i in range(len(local))]
        assert _same(got, want)
        for (clip, _label), vid in zip(got, remote.videos.video_ids(), strict=True):
            first = 100 * list(VIDEOS).index(vid)  # the frames of its own video
            numbers = [frame_number(f.permute(1, 2, 0).numpy()) for f in clip]
            assert all(first <= n < first + VIDEOS[vid] for n in numbers), (vid, numbers)
    refused = [r for r in http_dir.faults.requests() if r.status >= 400]
    assert refused == [], refused
    # a fresh source, item by item (no batch plan): named all the same; a frame folder's count
    # from the sidecar, its last file checked (no listing)
    one = ClipDataset(f"{url}/manifest.csv", SOURCES[kind](url), **kw)
    local.set_epoch(0)
    http_dir.faults.clear_log()
    assert _same([one[i] for i in range(len(one))], [local[i] for i in range(len(local))])
    refused = [r for r in http_dir.faults.requests() if r.status >= 400]
    assert refused == [], refused


@pytest.mark.parametrize("kind", ["npy", "video"])
def test_a_plain_list_and_a_window_list_take_the_roots_names(kind, outputs, http_dir, tmp_path):
    """Without the manifest as the list, the root's manifest names the containers (one GET
    when the dataset is built); the collided stem reads over HTTP as locally."""
    shutil.copytree(outputs[kind], http_dir.path / "out")
    http_dir.faults.listings = False
    url = f"{http_dir.url}/out"
    pairs = [(v, k) for k, v in enumerate(VIDEOS)]
    windows = tmp_path / "windows.csv"
    rows = "".join(f"{v},{k},0.04,0.3\n" for v, k in pairs)
    windows.write_text("video_id,label,start,end\n" + rows)
    kw = {"num_frames": 4, "seed": 1}
    for videos in (pairs, str(windows)):
        http_dir.faults.clear_log()
        remote = ClipDataset(videos, SOURCES[kind](url), **kw)
        local = ClipDataset(videos, SOURCES[kind](outputs[kind]), **kw)
        assert _same(_epoch(remote), [local[i] for i in range(len(local))])
        reqs = http_dir.faults.requests()
        assert [r for r in reqs if r.status >= 400] == []
        assert len([r for r in reqs if r.path.endswith("/manifest.csv")]) == 1


def test_names_of_another_kind_are_not_taken(outputs):
    """An HDF5 output's names are not a VideoSource's: a source of the same folder finds its
    files by its rules (the names say `.h5`)."""
    names = {r.video_id: r.container for r in read_manifest(outputs["hdf5"] / "manifest.csv")}
    assert ContainerNames.of(names, ".mp4") is None
    assert not VideoSource(outputs["hdf5"]).use_containers(names)
    assert ContainerNames.of(names, ".h5") is not None


def test_a_rerun_adds_the_column_without_converting_again(inputs, tmp_path):
    """An output written before the column (its manifest without it, a sidecar listing names)
    reads as before; a rerun writes the column and converts nothing."""
    out = tmp_path / "old"
    convert(inputs, out, to="npy", workers=1, progress=False)
    manifest = out / "manifest.csv"
    lines = manifest.read_text().splitlines()
    assert lines[0].endswith(",container")  # as before the column: cut off
    manifest.write_text("".join(line.rsplit(",", 1)[0] + "\n" for line in lines))
    assert all(r.container is None for r in read_manifest(manifest))
    _old_sidecar(out)
    ds = ClipDataset(str(manifest), NpySource(out), num_frames=4, seed=2)
    assert ds.source.store.names is None  # nothing named: the rules, as before
    before = [ds[i] for i in range(len(ds))]
    assert read_heads(NpySource(out).store.location, "npy") is not None  # format 1 read
    stamps = {p: p.stat().st_mtime_ns for p in out.rglob("*.npy")}
    report = convert(inputs, out, to="npy", workers=1, progress=False)
    assert report.converted == () and len(report.skipped) == len(VIDEOS)
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*.npy")} == stamps  # none rewritten
    assert {r.video_id: r.container for r in read_manifest(manifest)} == NAMES["npy"]
    again = ClipDataset(str(manifest), NpySource(out), num_frames=4, seed=2)
    assert again.source.store.names is not None
    assert _same([again[i] for i in range(len(again))], before)


def _old_sidecar(out):
    """Rewrite `out`'s sidecar in format 1 (before the column): the names themselves."""
    path = out / HEADS_NAME
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    heads = read_heads(NpySource(out).store.location, "npy")
    assert heads is not None
    names = sorted(NAMES["npy"].values(), key=lambda n: heads._index(n))
    arrays.pop("keys")
    arrays["names"] = np.array(names, dtype=str)
    arrays["format"] = np.array(1)
    with zipfile.ZipFile(path, "w") as z:
        for name, arr in arrays.items():
            with z.open(f"{name}.npy", "w") as f:
                np.lib.format.write_array(f, np.asanyarray(arr), allow_pickle=False)


def test_a_bucket_root_reads_its_manifest_at_the_first_miss(outputs, s3_bucket):
    """A plain list over a bucket (a root that lists): no request more for ordinary names; the
    first container not under its stem's name reads the root's manifest (once), and every
    collided stem after it is opened by its recorded name, with no miss."""
    url = s3_bucket.upload(outputs["npy"], "npy")
    opts = s3_bucket.storage_options
    source = NpySource(url, storage_options=opts)
    ClipDataset([("c/w.mp4", 0)], source, num_frames=4)  # an ordinary name
    s3_bucket.faults.clear_log()
    assert source.read("c/w.mp4", [0]).shape[0] == 1
    assert not any(r.path.endswith("/manifest.csv") for r in s3_bucket.faults.requests())
    s3_bucket.faults.clear_log()
    for vid in ("a/x.avi", "a/x.mp4"):
        first = 100 * list(VIDEOS).index(vid)
        assert frame_number(source.read(vid, [1])[0]) == first + 1
    reqs = s3_bucket.faults.requests()
    # the first open's miss only (its size and head are asked at once: two requests)
    missed = {r.path for r in reqs if r.status == 404}
    assert missed == {f"/{s3_bucket.name}/npy/a/x.npy"}, missed
    at = [k for k, r in enumerate(reqs) if r.path.endswith("/manifest.csv")]
    assert len(at) == 1 and all(r.status < 400 for r in reqs[at[0] :]), reqs


def test_container_names_answer_for_the_ids_listed_only():
    """A name for each listed id (a collided stem's full name, the stem's otherwise), None for
    an id not listed (its reader's rules then apply), the same after pickling (a worker's)."""
    import pickle

    listed = {f"c{i % 7}/v{i}.mp4": f"c{i % 7}/v{i}.npy" for i in range(2000)}
    listed["a/x.avi"] = "a/x.avi.npy"
    names = pickle.loads(pickle.dumps(ContainerNames(listed, ".npy")))
    assert len(names) == len(listed)
    assert all(names.get(v) == n for v, n in listed.items())
    assert names.get("a/x.mp4") is None and names.get("c0/v1.mp4") is None
    with pytest.raises(ValueError, match=r"container 'a/y.h5' of 'a/y.mp4' is not a name of a"):
        ContainerNames({"a/y.mp4": "a/y.h5"}, ".npy")
