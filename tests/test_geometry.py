"""Clip geometry through every source and ClipDataset, checked by painted content.

Frames are `media.paint_gradient`: red gives the source column, green the source row, blue the
frame. The videos are lossless (ffv1, RGB), so `VideoSource` must give the painted pixels
exactly where no resize happens; the containers come from `vidload.convert` (JPEG q95) and are
compared within a tolerance far below one pixel's step of the gradient.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from media import encode_rgb, paint_gradient

from vidload.convert import convert
from vidload.dataset import ClipDataset
from vidload.loader import make_loader
from vidload.sampling import sample_clip
from vidload.sources._fused import decode_size_for
from vidload.sources.hdf5 import Hdf5Source
from vidload.sources.jpeg import JpegSource
from vidload.sources.jpeg_decode import reduced_size
from vidload.sources.npy import NpySource
from vidload.sources.video import VideoSource
from vidload.transforms import apply_geometry, plan_geometry

W, H, N = 80, 60, 12
KINDS = ("video", "jpeg", "hdf5", "npy")
# (name, width, height): 4:3, 16:9 and portrait
SHAPES = [("four_three.mkv", 80, 60), ("wide.mkv", 96, 54), ("portrait.mkv", 45, 80)]


def _painted(width: int, height: int) -> np.ndarray:
    return np.stack([paint_gradient(i, width, height) for i in range(N)])


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("geometry")
    videos = root / "videos"
    for name, w, h in SHAPES:
        encode_rgb(videos / name, list(_painted(w, h)))
    out = {"video": VideoSource(videos)}
    for kind, cls in (("jpeg", JpegSource), ("hdf5", Hdf5Source), ("npy", NpySource)):
        report = convert(videos, root / kind, to=kind, workers=1, progress=False)
        assert not report.failed and len(report.converted) == len(SHAPES)
        out[kind] = cls(root / kind)
    return out


def _channel_diff(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Mean absolute difference per channel (R, G, B)."""
    return np.abs(a.astype(np.int16) - b.astype(np.int16)).mean(axis=(0, 1, 2))


def _assert_same_place(got: np.ndarray, want: np.ndarray, plan, height: int, width: int) -> None:
    """`got` shows the same region as `want` to within half an output pixel.

    A fused path cuts its box on the grid of the frame it scaled or DCT-reduced (VideoSource:
    the swscale output; containers: the reduced JPEG), so its box may sit up to half a pixel of
    that grid away from `apply_geometry`'s box on the source grid. Red and green rise by `step`
    per output pixel across and down the box; a half-pixel shift moves their mean by step / 2.
    """
    r = plan.resolve(height, width)
    _, _, box_h, box_w = r.box
    step_x = 255 / (width - 1) * box_w / r.out[1]
    step_y = 255 / (height - 1) * box_h / r.out[0]
    diff = _channel_diff(got, want)
    assert diff[0] <= 0.6 * step_x + 1.5, (diff, step_x)
    assert diff[1] <= 0.6 * step_y + 1.5, (diff, step_y)
    assert diff[2] <= 2.0, diff


@pytest.mark.parametrize("kind", KINDS)
def test_crop_box_and_flip_land_where_the_plan_says(sources, kind):
    src = sources[kind]
    painted = _painted(W, H)
    indices = [3, 0, 3, 11]
    flips = set()
    for seed in range(6):
        plan = plan_geometry(crop=(24, 32), flip=True, train=True, rng=np.random.default_rng(seed))
        top, left, bh, bw = plan.resolve(H, W).box
        want = painted[indices, top : top + bh, left : left + bw]
        if plan.flip:
            want = want[:, :, ::-1]
        got = src.read("four_three.mkv", indices, geometry=plan)
        assert got.shape == (4, 24, 32, 3) and got.dtype == np.uint8
        flips.add(plan.flip)
        if kind == "video":
            np.testing.assert_array_equal(got, want)  # lossless: exactly the painted box
        else:
            # one pixel's shift would change red by 3.2 and green by 4.3 on average
            assert (_channel_diff(got, want) < 1.2).all(), _channel_diff(got, want)
    assert flips == {True, False}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("name", "width", "height"), SHAPES)
def test_fused_path_matches_apply_geometry_on_full_frames(sources, kind, name, width, height):
    src = sources[kind]
    indices = [5, 1, 1, 9]
    full = src.read(name, indices)
    assert full.shape == (4, height, width, 3)
    options = [
        dict(short_side=(20, 40), crop=16, flip=True),
        dict(short_side=36, crop=(16, 24), crop_scale=(0.2, 1.0), flip=True),
        dict(short_side=(30, 120)),  # shrinking or growing, no crop
    ]
    for kwargs in options:
        for seed in range(4):
            plan = plan_geometry(**kwargs, train=True, rng=np.random.default_rng(seed))
            fused = src.read(name, indices, geometry=plan)
            reference = apply_geometry(full, plan)
            assert fused.shape == reference.shape
            _assert_same_place(fused, reference, plan, height, width)
            # the right frames, in the order asked
            blue = fused[..., 2].mean(axis=(1, 2))
            assert np.abs(blue - (40 + 12 * np.array(indices))).max() < 4


def test_containers_decode_at_a_reduced_dct_scale_when_the_box_allows():
    plan = plan_geometry(short_side=30, crop=24, train=False, rng=None)
    r = plan.resolve(60, 80)
    assert r.box == (6, 16, 48, 48)
    size = decode_size_for(60, 80, r)
    assert reduced_size(60, 80, size) == (30, 40)  # 1/2 scale: box 24 x 24, the output size
    small = plan_geometry(short_side=60, crop=56, train=False, rng=None).resolve(60, 80)
    assert reduced_size(60, 80, decode_size_for(60, 80, small)) == (60, 80)  # full size needed


@pytest.mark.parametrize("kind", KINDS)
def test_empty_read_has_the_output_size(sources, kind):
    plan = plan_geometry(short_side=30, crop=(16, 20), train=False, rng=None)
    assert sources[kind].read("wide.mkv", [], geometry=plan).shape == (0, 16, 20, 3)


def _videos():
    return [(name, k) for k, (name, _, _) in enumerate(SHAPES)]


def _loader_epoch(ds, workers):
    loader = make_loader(ds, batch_size=2, num_workers=workers, seed=3)
    batches = list(loader)
    return torch.cat([c for c, _ in batches]), torch.cat([y for _, y in batches])


@pytest.mark.parametrize("kind", ["video", "npy"])
def test_mixed_resolutions_give_one_shape_whatever_the_workers(sources, kind):
    def ds():
        return ClipDataset(
            _videos() * 2,
            sources[kind],
            num_frames=4,
            seed=5,
            short_side=128,
            crop=112,
            flip=True,
        )

    clips0, labels0 = _loader_epoch(ds(), 0)
    clips2, labels2 = _loader_epoch(ds(), 2)
    assert clips0.shape == (6, 4, 3, 112, 112) and clips0.dtype == torch.uint8
    assert torch.equal(clips0, clips2) and torch.equal(labels0, labels2)


def test_a_phone_video_among_mixed_resolutions_comes_back_upright_in_every_batch(tmp_path):
    # stored 80x60 landscape with a 90-degree display matrix: displayed portrait 60x80, whose
    # upright pixels are the gradient (red rises left -> right, green top -> bottom)
    upright = _painted(60, 80)
    videos = tmp_path / "videos"
    for name, w, h in SHAPES:
        encode_rgb(videos / name, list(_painted(w, h)))
    encode_rgb(videos / "phone.mkv", list(np.rot90(upright, -1, axes=(1, 2))), display_rotation=90)
    listing = [*_videos(), ("phone.mkv", len(SHAPES))]
    srcs = {"video": VideoSource(videos)}
    for kind, cls in (("jpeg", JpegSource), ("hdf5", Hdf5Source), ("npy", NpySource)):
        report = convert(videos, tmp_path / kind, to=kind, workers=1, progress=False)
        assert not report.failed
        srcs[kind] = cls(tmp_path / kind)
    for kind, src in srcs.items():
        opts = dict(num_frames=4, seed=5, short_side=128, crop=112)
        train = ClipDataset(listing, src, flip=True, **opts)
        clips0, labels0 = _loader_epoch(train, 0)
        assert clips0.shape == (len(listing), 4, 3, 112, 112)
        if kind in ("video", "npy"):
            clips2, labels2 = _loader_epoch(ClipDataset(listing, src, flip=True, **opts), 2)
            assert torch.equal(clips0, clips2) and torch.equal(labels0, labels2)
        test = ClipDataset(listing, src, train=False, **opts)
        phone, label = test[len(SHAPES)]
        assert label == len(SHAPES)
        red = phone[:, 0].float().mean(0)  # (112, 112)
        green = phone[:, 1].float().mean(0)
        # upright: red changes along x only, green along y only (sideways would swap them)
        assert red[:, -1].mean() - red[:, 0].mean() > 100, kind
        assert (red[-1] - red[0]).abs().max() < 8, kind
        assert green[-1].mean() - green[0].mean() > 100, kind
        assert (green[:, -1] - green[:, 0]).abs().max() < 8, kind


class _PlainSource:
    """A user source whose read takes no geometry: the dataset applies it."""

    def __init__(self, inner):
        self.inner = inner

    def reported_frames(self, video_id):
        return self.inner.reported_frames(video_id)

    def actual_frames(self, video_id):
        return self.inner.actual_frames(video_id)

    def read(self, video_id, indices):
        return self.inner.read(video_id, indices)


def _expected_clip(ds: ClipDataset, full_source, item: int, view: int = 0):
    """(the clip item `item` should be, its plan, (H, W) of its video): indices, then the
    plan, drawn from the clip's rng."""
    j = item // ds.spatial_views
    vid = ds.videos[j // ds.clips_per_video].video_id
    rng = np.random.default_rng([ds.seed, ds.epoch, j])
    indices = sample_clip(
        ds.sampling,
        N,
        ds.num_frames,
        train=ds.train,
        rng=rng,
        clip_index=j % ds.clips_per_video,
        num_clips=ds.clips_per_video,
    )
    plan = plan_geometry(
        short_side=ds.short_side,
        crop=ds.crop,
        crop_scale=ds.crop_scale,
        flip=ds.flip,
        train=ds.train,
        rng=rng,
        view=view,
        num_views=ds.spatial_views,
    )
    full = full_source.read(vid, indices)
    return apply_geometry(full, plan), plan, full.shape[1:3]


@pytest.mark.parametrize("kind", ["video", "hdf5"])
def test_dataset_clip_is_the_planned_geometry_of_the_sampled_frames(sources, kind):
    src = sources[kind]
    kwargs = dict(num_frames=4, seed=9, short_side=(40, 60), crop=32, crop_scale=(0.3, 1.0))
    fused = ClipDataset(_videos(), src, flip=True, **kwargs)
    plain = ClipDataset(_videos(), _PlainSource(src), flip=True, **kwargs)
    fused.set_epoch(2)
    plain.set_epoch(2)
    for i in range(len(fused)):
        want, plan, size = _expected_clip(plain, src, i)
        got_plain, _ = plain[i]
        got_fused, label = fused[i]
        assert label == i
        assert got_plain.shape == got_fused.shape == (4, 3, 32, 32)
        # the fallback applies exactly apply_geometry; the fused read agrees within resampling
        np.testing.assert_array_equal(got_plain.permute(0, 2, 3, 1).numpy(), want)
        _assert_same_place(got_fused.permute(0, 2, 3, 1).numpy(), want, plan, *size)


def test_test_mode_is_a_centre_crop_without_flip(sources):
    ds = ClipDataset(
        [("four_three.mkv", 0)], sources["video"], num_frames=3, train=False, short_side=30,
        crop=24, flip=True, seed=1,
    )  # fmt: skip
    clips = [ds[0][0] for _ in range(2)] + [ds[0][0]]
    ds.set_epoch(5)
    clips.append(ds[0][0])
    for clip in clips[1:]:
        assert torch.equal(clip, clips[0])  # nothing random at test time
    clip = clips[0].permute(0, 2, 3, 1).numpy().astype(float)
    # 80x60 scaled to 40x30, centre 24x24 -> source box rows [6, 54), columns [16, 64)
    red, green = clip[0, :, :, 0].mean(0), clip[0, :, :, 1].mean(1)
    assert red[0] < red[-1]  # not flipped
    assert abs(red.mean() - 127.5) < 1.5 and abs(green.mean() - 127.5) < 1.5  # centred
    assert abs(red[0] - 255 * 16.5 / 79) < 2 and abs(red[-1] - 255 * 62.5 / 79) < 2


@pytest.mark.parametrize("layout", ["TCHW", "CTHW"])
def test_stacked_views_hold_every_clip_and_view(sources, layout):
    kwargs = dict(
        num_frames=4, train=False, clips_per_video=2, short_side=40, crop=32, spatial_views=3,
        layout=layout, seed=4,
    )  # fmt: skip
    stacked = ClipDataset(_videos(), sources["npy"], stack_views=True, **kwargs)
    single = ClipDataset(_videos(), sources["npy"], **kwargs)
    assert len(stacked) == 3 and len(single) == 3 * 2 * 3
    assert stacked.items_per_video == 1 and single.items_per_video == 6
    for v in range(3):
        clip, label = stacked[v]
        assert label == v
        assert clip.shape == ((6, 4, 3, 32, 32) if layout == "TCHW" else (6, 3, 4, 32, 32))
        for n in range(6):
            one, one_label = single[6 * v + n]
            assert one_label == v
            want, plan, size = _expected_clip(single, sources["npy"], 6 * v + n, view=n % 3)
            # stacked views: one full read, apply_geometry per view; single items: fused
            got = clip[n] if layout == "TCHW" else clip[n].permute(1, 0, 2, 3)
            np.testing.assert_array_equal(got.permute(0, 2, 3, 1).numpy(), want)
            one = one if layout == "TCHW" else one.permute(1, 0, 2, 3)
            _assert_same_place(one.permute(0, 2, 3, 1).numpy(), want, plan, *size)
        # views 0, 1, 2 go left -> right (top -> bottom for the portrait video)
        tchw = clip if layout == "TCHW" else clip.permute(0, 2, 1, 3, 4)
        channel = 1 if SHAPES[v][1] < SHAPES[v][2] else 0
        means = [float(tchw[n, :, channel].float().mean()) for n in range(3)]
        assert means[0] < means[1] < means[2]


def test_cthw_is_tchw_transposed(sources):
    kwargs = dict(num_frames=4, seed=2, short_side=40, crop=32, flip=True)
    a = ClipDataset(_videos(), sources["jpeg"], **kwargs)
    b = ClipDataset(_videos(), sources["jpeg"], layout="CTHW", **kwargs)
    for i in range(3):
        assert b[i][0].shape == (3, 4, 32, 32) and b[i][0].is_contiguous()
        assert torch.equal(a[i][0].permute(1, 0, 2, 3), b[i][0])


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(layout="THWC"), ValueError, r"layout \('THWC'\) must be one of"),
        (dict(stack_views=1), TypeError, r"stack_views must be a bool"),
        (dict(crop=8, spatial_views=3), ValueError, r"spatial_views \(3\) > 1 is for testing"),
        (dict(spatial_views=3, train=False), ValueError, r"spatial_views \(3\) needs crop"),
        (dict(crop_scale=(0.5, 1.0)), ValueError, r"crop_scale .* needs crop"),
        (dict(short_side=(3, 2)), ValueError, r"lo <= hi"),
    ],
)
def test_bad_geometry_arguments_raise(sources, kwargs, error, match):
    with pytest.raises(error, match=match):
        ClipDataset(_videos(), sources["npy"], **kwargs)


def test_a_crop_larger_than_a_frame_names_the_video(sources):
    ds = ClipDataset(_videos(), sources["npy"], crop=70, seed=0)
    with pytest.raises(ValueError, match=r"crop \(70x70\) does not fit in the frame \(60x80"):
        ds[0]


def test_a_source_ignoring_the_geometry_is_caught(sources):
    class Liar(_PlainSource):
        def read(self, video_id, indices, *, geometry=None):
            return self.inner.read(video_id, indices)

    ds = ClipDataset(_videos(), Liar(sources["npy"]), crop=16, seed=0)
    with pytest.raises(TypeError, match=r"not the crop 16x16"):
        ds[0]


@pytest.mark.parametrize("stack", [False, True])
def test_read_ahead_finds_the_video_of_every_item(sources, stack):
    from vidload.prefetch import item_files

    ds = ClipDataset(
        _videos(), sources["npy"], train=False, clips_per_video=2, crop=32, short_side=40,
        spatial_views=3, stack_views=stack,
    )  # fmt: skip
    lookup = item_files(ds)
    for i in range(len(ds)):
        video_id, _ = lookup(i)
        assert video_id == ds.videos[i // ds.items_per_video].video_id
    assert {lookup(i)[0] for i in range(len(ds))} == {name for name, _, _ in SHAPES}


def test_video_crop_without_resize_is_the_sequential_decode_cropped(tmp_path):
    """YUV 4:2:0 H.264: a crop-only plan converts at the stored size, so the frames are exactly
    the sequentially decoded frames, cropped and flipped."""
    from media import make_video, sequential_decode

    make_video(tmp_path / "a.mp4", 12, width=96, height=64, options={"g": "6", "bf": "2"})
    frames = np.stack(sequential_decode(tmp_path / "a.mp4"))
    src = VideoSource(tmp_path)
    for seed in range(4):
        plan = plan_geometry(crop=(40, 56), flip=True, train=True, rng=np.random.default_rng(seed))
        top, left, bh, bw = plan.resolve(64, 96).box
        want = frames[[7, 2, 11], top : top + bh, left : left + bw]
        got = src.read("a.mp4", [7, 2, 11], geometry=plan)
        np.testing.assert_array_equal(got, want[:, :, ::-1] if plan.flip else want)
