"""Property and example tests of the pure samplers in vidload.sampling."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidload.sampling import (
    check_indices,
    consecutive_indices,
    sample_clip,
    segment_indices,
)

available = st.integers(1, 2000)
frames = st.integers(1, 64)
seeds = st.integers(0, 2**32 - 1)
policies = st.sampled_from(["repeat_last", "loop"])


@st.composite
def clip_views(draw):
    num_clips = draw(st.integers(1, 10))
    return draw(st.integers(0, num_clips - 1)), num_clips


def _check_basic(idx: np.ndarray, n: int, count: int) -> None:
    assert idx.dtype == np.int64
    assert idx.shape == (count,)
    assert idx.min() >= 0 and idx.max() < n


def _check_one_per_segment(idx: np.ndarray, n: int, count: int) -> None:
    """`_check_basic`, and with enough frames: increasing, index k in segment k of n // count."""
    _check_basic(idx, n, count)
    if n >= count:
        assert np.all(np.diff(idx) > 0)
        seg = np.arange(count)
        assert np.all(idx >= seg * n // count) and np.all(idx < (seg + 1) * n // count)


# ------------------------------------------------------------------ segment


@settings(max_examples=200, deadline=None)
@given(n=available, count=frames, seed=seeds, view=clip_views(), policy=policies)
def test_segment_train_in_range_sorted_one_per_segment(n, count, seed, view, policy):
    clip_index, num_clips = view
    idx = segment_indices(
        n,
        count,
        train=True,
        rng=np.random.default_rng(seed),
        clip_index=clip_index,
        num_clips=num_clips,
        short_policy=policy,
    )
    _check_one_per_segment(idx, n, count)


@settings(max_examples=200, deadline=None)
@given(n=available, count=frames, view=clip_views())
def test_segment_test_mode_deterministic_and_rng_unused(n, count, view):
    clip_index, num_clips = view
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    a = segment_indices(n, count, train=False, rng=rng, clip_index=clip_index, num_clips=num_clips)
    b = segment_indices(n, count, train=False, clip_index=clip_index, num_clips=num_clips)
    assert rng.bit_generator.state == state
    np.testing.assert_array_equal(a, b)
    _check_one_per_segment(a, n, count)


@settings(max_examples=100, deadline=None)
@given(n=available, count=frames, seed=seeds)
def test_same_seed_same_indices(n, count, seed):
    for fn in (segment_indices, consecutive_indices):
        a = fn(n, count, train=True, rng=np.random.default_rng(seed))
        b = fn(n, count, train=True, rng=np.random.default_rng(seed))
        np.testing.assert_array_equal(a, b)


def test_segment_test_mode_centre_and_multi_view():
    np.testing.assert_array_equal(segment_indices(80, 8, train=False), np.arange(5, 80, 10))
    views = [segment_indices(80, 8, train=False, clip_index=k, num_clips=2) for k in range(2)]
    np.testing.assert_array_equal(views[0], np.arange(2, 80, 10))
    np.testing.assert_array_equal(views[1], np.arange(7, 80, 10))


def test_segment_train_covers_each_segment_uniformly():
    rng = np.random.default_rng(1)
    draws = np.stack([segment_indices(40, 4, train=True, rng=rng) for _ in range(2000)])
    for k in range(4):
        values, counts = np.unique(draws[:, k], return_counts=True)
        np.testing.assert_array_equal(values, np.arange(10 * k, 10 * k + 10))
        assert counts.min() > 120  # 200 expected per value


@pytest.mark.parametrize(
    ("policy", "expected"),
    [("repeat_last", [0, 1, 2, 2, 2, 2, 2, 2]), ("loop", [0, 1, 2, 0, 1, 2, 0, 1])],
)
@pytest.mark.parametrize("train", [True, False])
def test_segment_short_video(policy, expected, train):
    idx = segment_indices(3, 8, train=train, rng=np.random.default_rng(0), short_policy=policy)
    np.testing.assert_array_equal(idx, expected)


# ------------------------------------------------------------------ consecutive


@settings(max_examples=200, deadline=None)
@given(
    n=available,
    count=frames,
    stride=st.integers(1, 8),
    seed=seeds,
    view=clip_views(),
    train=st.booleans(),
    policy=policies,
)
def test_consecutive_properties(n, count, stride, seed, view, train, policy):
    clip_index, num_clips = view
    idx = consecutive_indices(
        n,
        count,
        stride=stride,
        train=train,
        rng=np.random.default_rng(seed),
        clip_index=clip_index,
        num_clips=num_clips,
        short_policy=policy,
    )
    _check_basic(idx, n, count)
    if n >= (count - 1) * stride + 1:
        assert np.all(np.diff(idx) == stride)
    else:
        assert idx[0] == 0
        kept = np.arange(0, n, stride)[:count]
        np.testing.assert_array_equal(idx[: kept.size], kept)
        if policy == "repeat_last":
            assert np.all(idx[kept.size :] == kept[-1])
        else:
            np.testing.assert_array_equal(idx, np.resize(kept, count))


@settings(max_examples=100, deadline=None)
@given(n=st.integers(30, 500), count=st.integers(1, 8), stride=st.integers(1, 3))
def test_consecutive_test_views_spread_evenly(n, count, stride):
    span = (count - 1) * stride + 1
    starts = [
        consecutive_indices(n, count, stride=stride, train=False, clip_index=k, num_clips=3)[0]
        for k in range(3)
    ]
    assert starts == sorted(starts)
    assert starts[-1] + span <= n
    one = consecutive_indices(n, count, stride=stride, train=False)
    assert one[0] == (n - span + 1) // 2  # centred


def test_consecutive_train_start_uniform_over_valid_range():
    rng = np.random.default_rng(2)
    starts = [consecutive_indices(20, 4, stride=3, train=True, rng=rng)[0] for _ in range(3000)]
    values, counts = np.unique(starts, return_counts=True)
    np.testing.assert_array_equal(values, np.arange(0, 20 - 10 + 1))
    assert counts.min() > 180  # ~273 expected per value


def test_consecutive_short_examples():
    got = consecutive_indices(10, 5, stride=3, train=True, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(got, [0, 3, 6, 9, 9])
    got = consecutive_indices(7, 5, stride=3, train=False, short_policy="loop")
    np.testing.assert_array_equal(got, [0, 3, 6, 0, 3])
    np.testing.assert_array_equal(consecutive_indices(1, 4, train=False), [0, 0, 0, 0])


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize("fn", [segment_indices, consecutive_indices])
def test_argument_errors(fn):
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"num_available \(0\) must be > 0"):
        fn(0, 4, train=False)
    with pytest.raises(ValueError, match=r"num_frames \(0\) must be > 0"):
        fn(10, 0, train=False)
    with pytest.raises(ValueError, match=r"num_clips \(0\) must be > 0"):
        fn(10, 4, train=False, num_clips=0)
    with pytest.raises(ValueError, match=r"clip_index \(2\) must be in \[0, num_clips=2\)"):
        fn(10, 4, train=False, clip_index=2, num_clips=2)
    with pytest.raises(TypeError, match="rng must be a np.random.Generator"):
        fn(10, 4, train=True, rng=None)
    with pytest.raises(TypeError, match="num_available must be an int"):
        fn(10.0, 4, train=False)
    with pytest.raises(ValueError, match="short_policy .'wrap'. must be one of"):
        fn(10, 4, train=True, rng=rng, short_policy="wrap")
    with pytest.raises(ValueError, match=r"num_available \(3\) is too short .* 'error'"):
        fn(3, 4, train=True, rng=rng, short_policy="error")


def test_stride_errors():
    with pytest.raises(ValueError, match=r"stride \(0\) must be > 0"):
        consecutive_indices(10, 4, stride=0, train=False)
    with pytest.raises(ValueError, match=r"stride \(2\) must be 1 for sampling='segment'"):
        sample_clip("segment", 10, 4, train=False, rng=None, stride=2)


# ------------------------------------------------------------------ sample_clip


def test_sample_clip_dispatches_to_builtins():
    rng = lambda: np.random.default_rng(5)  # noqa: E731
    np.testing.assert_array_equal(
        sample_clip("segment", 100, 8, train=True, rng=rng()),
        segment_indices(100, 8, train=True, rng=rng()),
    )
    np.testing.assert_array_equal(
        sample_clip("consecutive", 100, 8, train=True, rng=rng(), stride=2),
        consecutive_indices(100, 8, stride=2, train=True, rng=rng()),
    )
    with pytest.raises(ValueError, match=r"sampling \('uniform'\) must be one of"):
        sample_clip("uniform", 100, 8, train=True, rng=rng())


def test_sample_clip_user_sampler_gets_documented_arguments():
    seen = {}

    def every_other(num_available, num_frames, *, train, rng, clip_index, num_clips):
        seen.update(train=train, clip_index=clip_index, num_clips=num_clips, rng=rng)
        return [2 * k % num_available for k in range(num_frames)]

    rng = np.random.default_rng(0)
    idx = sample_clip(every_other, 11, 4, train=False, rng=rng, clip_index=1, num_clips=3)
    np.testing.assert_array_equal(idx, [0, 2, 4, 6])
    assert idx.dtype == np.int64
    assert seen == {"train": False, "clip_index": 1, "num_clips": 3, "rng": rng}


@pytest.mark.parametrize(
    ("returned", "error", "match"),
    [
        ([[0, 1], [2, 3]], ValueError, r"shape \(2, 2\); they must be 1-D"),
        ([0.0, 1.0, 2.0, 3.0], TypeError, "dtype float64; they must be integers"),
        ([True, False, True, True], TypeError, "dtype bool"),
        ([0, 1, 2], ValueError, r"returned 3 indices; it must return num_frames \(4\)"),
        ([0, 1, 2, 10], ValueError, r"indices in \[0, 10\]; they must lie in \[0, 10\)"),
        ([-1, 1, 2, 3], ValueError, r"must lie in \[0, 10\)"),
    ],
)
def test_sample_clip_rejects_bad_user_indices(returned, error, match):
    def bad(num_available, num_frames, *, train, rng, clip_index, num_clips):
        return returned

    with pytest.raises(error, match="sampling function .*bad.* " + match):
        sample_clip(bad, 10, 4, train=False, rng=None)


def test_check_indices_accepts_numpy_ints():
    out = check_indices(np.array([3, 1, 1], np.int32), 4, 3, who="s")
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, [3, 1, 1])
