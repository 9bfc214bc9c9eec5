"""vidload.transforms: the plan (properties), and apply_geometry checked by painted content."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from media import paint_gradient

from vidload.transforms import ASPECT_RANGE, ClipGeometry, apply_geometry, plan_geometry


def _frames(width: int, height: int, k: int = 3) -> np.ndarray:
    return np.stack([paint_gradient(i, width, height) for i in range(k)])


sizes = st.integers(16, 400)
short_sides = st.one_of(
    st.none(),
    st.integers(8, 300),
    st.tuples(st.integers(8, 200), st.integers(0, 100)).map(lambda t: (t[0], t[0] + t[1])),
)
crops = st.one_of(st.none(), st.integers(4, 64), st.tuples(st.integers(4, 64), st.integers(4, 64)))
scales = st.one_of(
    st.none(),
    st.tuples(st.floats(0.05, 1.0), st.floats(0.0, 1.0)).map(
        lambda t: (t[0], t[0] + (1 - t[0]) * t[1])
    ),
)


@settings(max_examples=300, deadline=None)
@given(
    height=sizes,
    width=sizes,
    short_side=short_sides,
    crop=crops,
    crop_scale=scales,
    flip=st.booleans(),
    train=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
@pytest.mark.slow
def test_plan_box_inside_the_frame_and_output_shape(
    height, width, short_side, crop, crop_scale, flip, train, seed
):
    if crop is None:
        crop_scale = None
    kwargs = dict(short_side=short_side, crop=crop, crop_scale=crop_scale, flip=flip, train=train)
    plan = plan_geometry(**kwargs, rng=np.random.default_rng(seed))
    again = plan_geometry(**kwargs, rng=np.random.default_rng(seed))
    assert plan == again  # determined by the rng alone
    if short_side is None and crop is None and not (flip and train):
        assert plan is None
        return
    assert pickle.loads(pickle.dumps(plan)) == plan
    lo, hi = (short_side, short_side) if isinstance(short_side, int) else (short_side or (0, 0))
    if short_side is not None:
        assert lo <= plan.short_side <= hi
        if not train:
            assert plan.short_side == lo
    if not train:
        assert not plan.flip and plan.area is None
    crop_hw = (crop, crop) if isinstance(crop, int) else crop
    try:
        r = plan.resolve(height, width)
    except ValueError as e:  # only a plain crop larger than the scaled frame may fail
        assert crop is not None and (crop_scale is None or not train)
        assert "does not fit" in str(e)
        return
    top, left, bh, bw = r.box
    assert 0 <= top and 0 <= left and bh >= 1 and bw >= 1
    assert top + bh <= height and left + bw <= width
    if crop_hw is not None:
        assert r.out == crop_hw
    elif plan.short_side is not None:
        assert min(r.out) == plan.short_side
        assert abs(r.out[0] / r.out[1] - height / width) <= 1.5 / min(r.out)  # aspect kept
        assert r.box == (0, 0, height, width)
    else:
        assert r.out == (height, width)
    if not train and crop_hw is not None:  # centred
        assert abs(top - (height - bh) / 2) <= 0.5 and abs(left - (width - bw) / 2) <= 0.5


@settings(max_examples=200, deadline=None)
@given(
    height=st.integers(64, 400),
    width=st.integers(64, 400),
    a=st.floats(0.08, 1.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_random_resized_crop_area_and_aspect(height, width, a, seed):
    plan = plan_geometry(crop=32, crop_scale=(a, 1.0), train=True, rng=np.random.default_rng(seed))
    assert a <= plan.area <= 1.0
    assert ASPECT_RANGE[0] - 1e-9 <= plan.aspect <= ASPECT_RANGE[1] + 1e-9
    _, _, bh, bw = plan.resolve(height, width).box
    want_h = math.sqrt(plan.area * height * width / plan.aspect)
    want_w = math.sqrt(plan.area * height * width * plan.aspect)
    # the box has the drawn area and aspect, clipped to the frame where it does not fit
    assert abs(bh - min(height, want_h)) <= 1 and abs(bw - min(width, want_w)) <= 1


def test_training_positions_and_flips_vary_over_items():
    plans = [
        plan_geometry(crop=16, flip=True, train=True, rng=np.random.default_rng([0, 0, i]))
        for i in range(200)
    ]
    flips = sum(p.flip for p in plans)
    assert 70 < flips < 130  # p = 0.5
    tops = {p.resolve(64, 80).box[:2] for p in plans}
    assert len(tops) > 50


@pytest.mark.parametrize(
    ("height", "width", "axis"), [(60, 100, "x"), (100, 60, "y"), (64, 64, "x")]
)
def test_three_views_along_the_long_side(height, width, axis):
    boxes = [
        plan_geometry(crop=40, train=False, rng=None, view=v, num_views=3)
        .resolve(height, width)
        .box
        for v in range(3)
    ]
    if axis == "x":
        assert [b[1] for b in boxes] == [0, (width - 40) // 2, width - 40]
        assert {b[0] for b in boxes} == {(height - 40) // 2}
    else:
        assert [b[0] for b in boxes] == [0, (height - 40) // 2, height - 40]
        assert {b[1] for b in boxes} == {(width - 40) // 2}


def test_apply_geometry_crop_is_the_box_exactly_and_flip_mirrors_it():
    frames = _frames(80, 60)
    for seed in range(20):
        plan = plan_geometry(crop=(24, 32), flip=True, train=True, rng=np.random.default_rng(seed))
        top, left, bh, bw = plan.resolve(60, 80).box
        assert (bh, bw) == (24, 32)
        want = frames[:, top : top + 24, left : left + 32]
        if plan.flip:
            want = want[:, :, ::-1]
        got = apply_geometry(frames, plan)
        assert got.flags.c_contiguous
        np.testing.assert_array_equal(got, want)
        # by content: red tells the source column, green the source row
        red = got[0, 0, :, 0].astype(int)
        cols = np.arange(left, left + 32)
        expect_red = np.round(cols * 255 / 79)
        assert list(red) == list(expect_red[::-1] if plan.flip else expect_red)
        assert got[0, :, 0, 1].tolist() == np.round(np.arange(top, top + 24) * 255 / 59).tolist()


def test_apply_geometry_scales_the_box_to_the_output():
    frames = _frames(160, 120)
    plan = plan_geometry(short_side=60, crop=40, train=False, rng=None)
    r = plan.resolve(120, 160)
    assert r.box == (20, 40, 80, 80) and r.out == (40, 40)
    got = apply_geometry(frames, plan)
    assert got.shape == (3, 40, 40, 3)
    # output column c covers source columns [40 + 2c, 42 + 2c): red = their mean
    expect = np.round(np.arange(40, 120) * 255 / 159).reshape(40, 2).mean(1)
    assert np.abs(got[1, 5, :, 0] - expect).max() <= 1
    assert (got[:, :, :, 2] == np.array([40, 52, 64])[:, None, None]).all()  # frames kept


def test_short_side_only_keeps_the_aspect():
    frames = _frames(160, 90)
    plan = plan_geometry(short_side=45, train=True, rng=np.random.default_rng(0))
    got = apply_geometry(frames, plan)
    assert got.shape == (3, 45, 80, 3)


def test_frame_size_maps_the_box_onto_reduced_frames():
    full = _frames(160, 120)
    half = full[:, ::2, ::2]
    half = np.ascontiguousarray(half)
    plan = plan_geometry(crop=48, flip=True, train=True, rng=np.random.default_rng(5))
    a = apply_geometry(full, plan)
    b = apply_geometry(half, plan, frame_size=(120, 160))
    assert a.shape == b.shape == (3, 48, 48, 3)
    assert np.abs(a.astype(int) - b).mean() < 2.5


def test_no_geometry_is_none_and_leaves_frames_alone():
    assert plan_geometry(train=True, rng=np.random.default_rng(0)) is None
    assert plan_geometry(flip=True, train=False, rng=None) is None
    frames = _frames(20, 10)
    assert apply_geometry(frames, None) is frames


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(crop_scale=(0.5, 1.0)), ValueError, r"crop_scale .* needs crop"),
        (dict(crop=8, crop_scale=(0.0, 1.0)), ValueError, r"0 < a <= b <= 1"),
        (dict(crop=8, crop_scale=(0.9, 0.5)), ValueError, r"0 < a <= b <= 1"),
        (dict(crop=8, crop_scale=0.5), TypeError, r"crop_scale must be"),
        (dict(short_side=(9, 3)), ValueError, r"lo <= hi"),
        (dict(short_side=0), ValueError, r"short_side \(0\) must be >= 1"),
        (dict(crop=(8, 0)), ValueError, r"crop .* must be >= 1"),
        (dict(crop="8"), TypeError, r"crop must be None, an int"),
        (dict(flip=1), TypeError, r"flip must be a bool"),
        (dict(num_views=3), ValueError, r"spatial_views \(3\) needs crop"),
        (dict(crop=8, num_views=3, train=True), ValueError, r"is for testing"),
        (dict(crop=8, num_views=0, train=False), ValueError, r"spatial_views \(0\) must be >= 1"),
        (dict(crop=8, num_views=3, view=3, train=False), ValueError, r"view \(3\) must be in"),
    ],
)
def test_bad_options_raise(kwargs, error, match):
    kwargs.setdefault("train", True)
    with pytest.raises(error, match=match):
        plan_geometry(**kwargs, rng=np.random.default_rng(0))


def test_a_crop_larger_than_the_frame_names_both_sizes():
    plan = plan_geometry(short_side=100, crop=112, train=False, rng=None)
    with pytest.raises(ValueError, match=r"crop \(112x112\) does not fit .*100x133"):
        plan.resolve(240, 320)
    assert ClipGeometry(None, (8, 8), None, None, (0.5, 0.5), False).resolve(8, 9).box == (
        0,
        0,
        8,
        8,
    )
