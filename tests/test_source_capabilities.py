"""What a dataset may ask of a source is declared by `FrameSourceBase` (None: not offered), and a
source that does not subclass it is adapted once, when the dataset is built: a plain class with
only the three calls reads its painted frames, and the optional methods it defines itself
(timestamps, missing_videos, a read that takes a geometry) are the ones used. Options are the
dataset's declared, read-only attributes. No module of vidload probes a source."""

from __future__ import annotations

import ast
import logging
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from media import frame_number, paint

from vidload.dataset import ClipDataset
from vidload.sources._adapted import OPTIONAL_METHODS, AdaptedSource
from vidload.sources.base import FrameSourceBase, as_index_array
from vidload.transforms import apply_geometry

H, W, N, FPS = 24, 32, 40, 10.0


class Plain:
    """A user's source with the three calls only: video `vid` has N frames, frame i painted
    with `base + i` (`base` from the id, so that two videos differ)."""

    def __init__(self):
        self.reads: list[tuple[str, dict]] = []

    def reported_frames(self, video_id):
        return N

    def actual_frames(self, video_id):
        return N

    def read(self, video_id, indices):
        self.reads.append((video_id, {}))
        base = 100 * int(video_id[1])
        return np.stack([paint(base + int(i), W, H) for i in as_index_array(indices)])


class Timed(Plain):
    """`Plain` that also defines `timestamps` (FPS frames a second), `missing_videos` (only
    "v0" and "v1" exist) and a `root` of its own."""

    root = "/my/frames"

    def timestamps(self, video_id):
        return np.arange(N) / FPS

    def missing_videos(self, video_ids):
        return [v for v in video_ids if v not in ("v0", "v1")]


class Fused(Plain):
    """`Plain` whose read takes a geometry: it is handed the clip's plan."""

    def read(self, video_id, indices, *, geometry=None):
        frames = super().read(video_id, indices)
        self.reads[-1] = (video_id, {"geometry": geometry})
        return apply_geometry(frames, geometry)


class Based(FrameSourceBase):
    """The same frames from a subclass of the base: no adapter, geometry applied in `read`."""

    def __init__(self):
        self.inner = Plain()

    def reported_frames(self, video_id):
        return N

    def actual_frames(self, video_id):
        return N

    def read(self, video_id, indices, *, geometry=None):
        return apply_geometry(self.inner.read(video_id, indices), geometry)

    def timestamps(self, video_id):
        return np.arange(N) / FPS


def _numbers(clip: torch.Tensor) -> list[int]:
    return [frame_number(f) for f in clip.permute(0, 2, 3, 1).numpy()]


VIDEOS = [("v0", 0), ("v1", 1)]


def test_a_plain_source_is_adapted_once_and_reads_its_painted_frames(caplog):
    src = Plain()
    caplog.set_level(logging.WARNING, logger="vidload.dataset")
    ds = ClipDataset(VIDEOS, src, num_frames=5, return_info=True, seed=3)
    assert ds.source is src  # the user's object, as given
    adapted = ds.options.adapted
    assert isinstance(adapted, AdaptedSource) and adapted.inner is src
    assert adapted.source_name == "Plain" and adapted.root is None and adapted.store is None
    assert all(getattr(adapted, name) is None for name in OPTIONAL_METHODS)
    for i, (vid, _) in enumerate(VIDEOS):
        clip, label, info = ds[i]
        base = 100 * int(vid[1])
        assert label == i and clip.dtype == torch.uint8 and clip.shape == (5, 3, H, W)
        assert _numbers(clip) == [base + k for k in info["indices"].tolist()]
        assert bool(info["timestamps"].isnan().all())  # no timestamps: NaN, as documented
    # not checked for missing videos, said so; a window needs timestamps; fps needs them too
    assert any("Plain has no missing_videos" in r.getMessage() for r in caplog.records)
    with pytest.raises(TypeError, match=r"window \[0, 1\) s, and Plain has no timestamps"):
        ClipDataset([("v0", 0, 0.0, 1.0)], Plain())
    with pytest.raises(TypeError, match="fps / clip_seconds need frame timestamps, and Plain"):
        ClipDataset(VIDEOS, Plain(), fps=5)[0]
    # a copy (a DataLoader worker's) reads the same
    again = pickle.loads(pickle.dumps(ds))
    assert torch.equal(again[1][0], ds[1][0])


def test_the_optional_methods_a_plain_source_defines_are_used():
    src = Timed()
    ds = ClipDataset(VIDEOS, src, num_frames=4, return_info=True, seed=1)
    adapted = ds.options.adapted
    assert adapted.timestamps == src.timestamps and adapted.missing_videos == src.missing_videos
    assert adapted.root == "/my/frames" and adapted.prepare is None and adapted.files is None
    clip, _, info = ds[1]
    assert _numbers(clip) == [100 + k for k in info["indices"].tolist()]
    assert np.allclose(info["timestamps"].numpy(), info["indices"].numpy() / FPS)
    copied = pickle.loads(pickle.dumps(ds))  # a spawned worker's copy: the same methods offered
    assert copied.options.adapted.timestamps is not None
    assert copied.options.adapted.timestamps.__self__ is copied.source
    assert torch.equal(copied[1][2]["timestamps"], info["timestamps"])
    # a window, found by the source's own timestamps: every frame inside [1.0, 2.0) s
    windowed = ClipDataset([("v0", 0, 1.0, 2.0)], Timed(), num_frames=4, return_info=True)
    clip, _, info = windowed[0]
    assert all(10 <= k < 20 for k in _numbers(clip)) and info["indices"].tolist() == _numbers(clip)
    # fps resampling through them: 5 frames a second of a 10 fps video, every other frame
    clip, _ = ClipDataset([("v0", 0)], Timed(), num_frames=N // 2, fps=5, train=False)[0]
    assert _numbers(clip) == list(range(0, N, 2))
    # its missing_videos decides `missing=`, and the message names its root
    with pytest.raises(
        FileNotFoundError, match=r"1 of the 3 videos .* Timed\('/my/frames'\): 'v2'"
    ):
        ClipDataset([*VIDEOS, ("v2", 2)], Timed())
    with pytest.warns(UserWarning, match="left out"):
        kept = ClipDataset([*VIDEOS, ("v2", 2)], Timed(), missing="skip")
    assert [e.video_id for e in kept.videos] == ["v0", "v1"]


@pytest.mark.parametrize("crop", [None, 16])
def test_geometry_reaches_a_read_that_takes_it_and_is_applied_for_one_that_does_not(crop):
    kw = {"num_frames": 4, "short_side": 20, "crop": crop, "flip": True, "seed": 5}
    plain, fused = Plain(), Fused()
    based = ClipDataset(VIDEOS, Based(), **kw)
    for src in (plain, fused):
        ds = ClipDataset(VIDEOS, src, **kw)
        for i in range(len(ds)):
            clip, _ = ds[i]
            assert torch.equal(clip, based[i][0])
            assert clip.shape[-2:] == ((16, 16) if crop else (20, 27))  # 32 x 20 / 24, rounded
    assert all(kw == {} for _, kw in plain.reads)  # full frames, the geometry applied after
    plans = [kw["geometry"] for _, kw in fused.reads]
    assert plans and all(p is not None for p in plans)  # the plan handed to the read


def test_a_subclass_of_the_base_is_not_adapted_and_declares_what_it_defines():
    src = Based()
    ds = ClipDataset([("v0", 0, 1.0, 2.0)], src, num_frames=3, seed=0)
    assert ds.options.adapted is src and src.timestamps is not None
    assert src.missing_videos is None and src.fetch_plan is None and src.source_name == "Based"
    assert all(10 <= k < 20 for k in _numbers(ds[0][0]))


def test_vidloads_sources_declare_their_capabilities(tmp_path):
    from vidload.sources import Hdf5Source, JpegSource, NpySource, VideoSource

    for make in (VideoSource, JpegSource, Hdf5Source, NpySource):
        src = make(tmp_path)
        assert isinstance(src, FrameSourceBase), make
        for name in ("timestamps", "missing_videos", "prepare", "fetch_plan", "files"):
            assert getattr(src, name) is not None, (make, name)
        assert src.root == tmp_path and src.store is not None
    for make in (JpegSource, Hdf5Source, NpySource):
        assert make(tmp_path).byte_ranges is not None and make(tmp_path).settle is not None
    assert VideoSource(tmp_path).byte_ranges is None


def test_an_object_without_the_three_calls_is_refused():
    class NoRead:
        def reported_frames(self, video_id):
            return 1

        def actual_frames(self, video_id):
            return 1

    with pytest.raises(TypeError, match="source must provide reported_frames, .* got NoRead"):
        ClipDataset(VIDEOS, NoRead())


def test_options_are_read_only_attributes():
    from vidload._dataset.options import OPTION_NAMES, Option, OptionAttributes

    declared = {name for name, value in vars(OptionAttributes).items() if isinstance(value, Option)}
    assert declared == OPTION_NAMES  # one attribute per option, none forgotten
    ds = ClipDataset(VIDEOS, Plain(), num_frames=3, seed=2)
    assert ClipDataset.num_frames.name == "num_frames"  # declared on the class
    with pytest.raises(AttributeError, match="num_frames is an option of the dataset"):
        ds.num_frames = 4
    assert ds.num_frames == 3 and ds.options.num_frames == 3


# ------------------------------------------------------------------ no probing


_PROBES = ("getattr", "hasattr")
_ADAPTER = Path("vidload/sources/_adapted.py")


def _probes(path: Path, root: Path) -> list[str]:
    """`getattr`/`hasattr` of something named like a source, `except AttributeError`
    around a source's call, and `inspect.signature` of a `read`, in `path`."""
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    where = path.relative_to(root)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            first = ast.unparse(node.args[0]) if node.args else ""
            second = node.args[1] if len(node.args) > 1 else None
            asked = second.value if isinstance(second, ast.Constant) else None
            declared = asked in (*OPTIONAL_METHODS, "source", "store", "root", "heads_kind")
            if name in _PROBES and ("source" in first or first in ("make", "store") or declared):
                found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
            if name.endswith("signature") and ".read" in first:
                found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
        if isinstance(node, ast.Try):
            caught = [ast.unparse(h.type) for h in node.handlers if h.type is not None]
            body = ast.unparse(node.body[0]) if node.body else ""
            if any("AttributeError" in c for c in caught) and "source" in body:
                found.append(f"{where}:{node.lineno}: except AttributeError around {body!r}")
    return found


def test_no_module_probes_a_source():
    root = Path(__file__).resolve().parents[1]
    found = [
        hit
        for path in sorted((root / "vidload").rglob("*.py"))
        if path.relative_to(root) != _ADAPTER
        for hit in _probes(path, root)
    ]
    assert not found, "\n".join(found)


def test_a_subclass_whose_read_predates_geometry_reads_full_frames(tmp_path):
    """A subclass of a vidload source that overrides `read(video_id, indices)` (no geometry)
    is read by it, as before, when the dataset has no geometry to apply."""
    from vidload.sources.jpeg_decode import encode_jpeg
    from vidload.sources.npy import NpySource, write_npy

    write_npy(
        tmp_path / "v0.npy", [encode_jpeg(paint(i, W, H), 95, subsampling="444") for i in range(N)]
    )

    class Counted(NpySource):
        calls = 0

        def read(self, video_id, indices):
            Counted.calls += 1
            return super().read(video_id, indices)

    ds = ClipDataset(
        [("v0", 0)], Counted(tmp_path, fps=FPS), num_frames=4, return_info=True, seed=0
    )
    clip, _, info = ds[0]
    assert Counted.calls == 1 and _numbers(clip) == info["indices"].tolist()
