"""Resume on another number of ranks (or batch size): the samplers' split of one global order,
property-tested in one process with ranks given explicitly; stateful loaders of simulated ranks;
and gloo runs 4 -> 2 and 2 -> 3 with workers, across an epoch boundary."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
from _resume_run import write_videos
from hypothesis import given, settings
from hypothesis import strategies as st

from vidload import ClipDataset, NpySource, make_loader, set_epoch
from vidload._dataset.counts import merge_learned
from vidload._loader.position import share
from vidload.loader import EpochShuffleSampler, ResumableDistributedSampler, ShardSampler
from vidload.sources._timestamps import write_timestamps
from vidload.sources.jpeg_decode import encode_jpeg
from vidload.sources.npy import write_npy

KINDS = ("shuffle", "padded", "dropped", "shard", "in order")


def _samplers(kind: str, n: int, world: int, seed: int) -> list:
    """One sampler per rank of `world`, each told its rank."""
    if kind == "shuffle":  # one process: world 1 only
        return [EpochShuffleSampler(n, seed=seed)]
    if kind == "shard":
        return [ShardSampler(n, num_replicas=world, rank=r) for r in range(world)]
    return [
        ResumableDistributedSampler(
            range(n),
            num_replicas=world,
            rank=r,
            shuffle=kind != "in order",
            seed=seed,
            drop_last=kind == "dropped",
        )
        for r in range(world)
    ]


def _steps(samplers: list, batch: int, limit: int | None = None) -> list[list[list[int]]]:
    """Per step, each rank's batch (ranks step together; a rank whose share ran out gives [])."""
    iterators = [iter(s) for s in samplers]
    steps: list[list[list[int]]] = []
    while limit is None or len(steps) < limit:
        step = [list(itertools.islice(it, batch)) for it in iterators]
        if not any(step):
            break
        steps.append(step)
    return steps


def _flat(steps: list[list[list[int]]]) -> list[int]:
    """The steps' items in the global order's positions: step by step, element j of every
    rank's batch before element j + 1."""
    out = []
    for step in steps:
        for j in range(max(len(b) for b in step)):
            out += [b[j] for b in step if j < len(b)]
    return out


def _global_order(kind: str, n: int, seed: int, epoch: int) -> list[int]:
    """The epoch's one order: what a single rank yields."""
    (one,) = _samplers("padded" if kind == "dropped" else kind, n, 1, seed)
    one.set_epoch(epoch)
    return list(one)


@st.composite
def _resumes(draw):
    kind = draw(st.sampled_from(KINDS))
    n = draw(st.integers(0, 40))
    single = kind == "shuffle"
    world = 1 if single else draw(st.integers(1, 6))
    world2 = 1 if single else draw(st.integers(1, 6))
    batch, batch2 = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    seed, epoch = draw(st.integers(0, 2**31)), draw(st.integers(0, 3))
    whole = len(_steps(_set(_samplers(kind, n, world, seed), epoch), batch))
    stop = draw(st.integers(0, max(whole - 1, 0)))  # steps before the stop: not the last
    return kind, n, world, world2, batch, batch2, seed, epoch, stop


def _set(samplers: list, epoch: int, items: int = 0) -> list:
    for sampler in samplers:
        sampler.set_epoch(epoch, items=items)
    return samplers


@settings(max_examples=400, deadline=None)
@given(_resumes())
def test_a_stopped_epoch_continues_on_any_world_size(case):
    kind, n, world, world2, batch, batch2, seed, epoch, stop = case
    first = _set(_samplers(kind, n, world, seed), epoch)
    head = _steps(first, batch, stop)
    assert head == _steps(_set(_samplers(kind, n, world, seed), epoch), batch)[:stop]
    split = first[0].split_state(stop * batch)  # rank 0's, as a loader records it
    items = split["items"]
    assert split["world_size"] == world and items == min(stop * batch * world, n)
    assert Counter(_flat(head)) == Counter(_global_order(kind, n, seed, epoch)[:items])

    second = _set(_samplers(kind, n, world2, seed), epoch, items)
    rest = _steps(second, batch2)
    # the rest of the one global order, dealt out step by step (padding wraps to its start)
    order = _global_order(kind, n, seed, epoch)
    got = _flat(rest)
    pad, drop = kind in ("padded", "in order"), kind == "dropped"
    positions = [share(n, items, r, world2, pad=pad, drop=drop) for r in range(world2)]
    assert got == [order[p % n] for p in sorted(itertools.chain(*positions))]
    seen = Counter(_flat(head) + got)
    if kind == "dropped":  # at most once; fewer than world2 left out (DistributedSampler's drop)
        assert max(seen.values(), default=1) == 1 and n - len(seen) < world2
    else:
        assert set(seen) == set(range(n))  # every item
        repeats = sum(seen.values()) - n
        assert repeats <= (world2 - 1 if pad else 0)
        # the repeats are all in the last step
        before_last = _flat(head) + _flat(rest[:-1])
        assert len(before_last) == len(set(before_last))
    # every rank's share: the same length (padded) or within one (shard)
    lengths = {len(s) for s in second}
    assert max(lengths, default=0) - min(lengths, default=0) <= (kind == "shard")
    # the next epoch is an uninterrupted world2 run's, whole again
    after = _steps(_set(second, epoch + 1), batch2)
    assert after == _steps(_set(_samplers(kind, n, world2, seed), epoch + 1), batch2)


@settings(max_examples=200, deadline=None)
@given(_resumes())
def test_a_same_size_resume_is_the_uninterrupted_pass(case):
    """Each rank's own sampler state, or rank 0's on every rank: the rest of each rank's pass,
    element for element (torchdata's restore), also after a pass that began mid-epoch."""
    kind, n, world, _, batch, _, seed, epoch, stop = case
    for items in (0, n // 3):
        first = _set(_samplers(kind, n, world, seed), epoch, items)
        whole = [list(s) for s in _set(_samplers(kind, n, world, seed), epoch, items)]
        _steps(first, batch, stop)
        states = [s.state_dict() for s in first]
        assert states[0].get("begin", 0) == items
        for rank, state in enumerate(states):
            for saved in (state, states[0]):
                if saved["yielded"] == len(first[0]) > len(first[rank]):
                    continue  # rank 0's pass ended, not rank's: a loader resumes the next epoch
                resumed = _samplers(kind, n, world, seed)[rank]
                resumed.load_state_dict(saved)
                assert list(resumed) == whole[rank][saved["yielded"] :]


def test_the_order_is_torchs_distributed_sampler_at_the_epochs_start():
    for n, world, drop in [(10, 3, False), (10, 3, True), (2, 4, False), (0, 2, False)]:
        for rank in range(world):
            kwargs = {"num_replicas": world, "rank": rank, "seed": 7, "drop_last": drop}
            mine = ResumableDistributedSampler(range(n), **kwargs)
            torch_one = torch.utils.data.DistributedSampler(range(n), **kwargs)
            mine.set_epoch(2, items=0)
            torch_one.set_epoch(2)
            assert list(mine) == list(torch_one) and len(mine) == len(torch_one)


def test_sampler_split_errors():
    sampler = ShardSampler(10, num_replicas=2, rank=1)
    with pytest.raises(ValueError, match=r"items \(11\) must be <= the items of the epoch's"):
        sampler.set_epoch(0, items=11)
    with pytest.raises(ValueError, match=r"start \(3\) must be <= the sampler's length \(2\)"):
        sampler.set_epoch(0, start=3, items=6)  # items 7 and 9 left for rank 1
    with pytest.raises(ValueError, match=r"'begin' \(12\) must be <= the items"):
        sampler.load_state_dict({"epoch": 0, "yielded": 0, "begin": 12})
    with pytest.raises(TypeError, match="'begin' must be an int"):
        sampler.load_state_dict({"epoch": 0, "yielded": 0, "begin": "3"})


def test_merge_learned():
    a = {"learned": [["b.mp4", 0, 5], ["w.mp4", 0, 9, 1.0, None]], "broken": [["x.mp4", 0]]}
    b = {"learned": [["b.mp4", 0, 4], ["a.mp4", 2, 7]], "broken": [["x.mp4", 0], ["c.mp4", 0]]}
    assert merge_learned([a, None, b]) == {
        "learned": [["a.mp4", 2, 7], ["b.mp4", 0, 4], ["w.mp4", 0, 9, 1.0, None]],
        "broken": [["c.mp4", 0], ["x.mp4", 0]],
    }
    assert merge_learned([]) == {"learned": [], "broken": []}


# ------------------------------------------------------------------ stateful loaders, one process


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """11 npy videos of 6 noise frames (16x16: crops and flips show)."""
    root = tmp_path_factory.mktemp("elastic")
    rng = np.random.default_rng(1)
    for k in range(11):
        frames = [rng.integers(0, 256, (16, 16, 3), dtype=np.uint8) for _ in range(6)]
        write_npy(root / f"v{k}.npy", [encode_jpeg(f) for f in frames])
        write_timestamps(root / f"v{k}.npy", np.arange(6) / 25)
    return root


def _dataset(root):
    videos = [(f"v{k}.mp4", k) for k in range(11)]
    return ClipDataset(videos, NpySource(root), num_frames=2, crop=12, flip=True, seed=5)


def _loader(root, world: int, rank: int, batch: int, **kwargs):
    """The loader of rank `rank` of `world` (the sampler make_loader would pick under
    torch.distributed, given explicitly)."""
    ds = _dataset(root)
    sampler = ResumableDistributedSampler(ds, num_replicas=world, rank=rank, seed=9)
    return make_loader(ds, batch, sampler=sampler, num_workers=0, stateful=True, **kwargs)


def _clips(loader) -> dict[int, list[torch.Tensor]]:
    """Each label's clips, in the order the loader gave them."""
    out: dict[int, list[torch.Tensor]] = {}
    for clips, labels in loader:
        for clip, label in zip(clips, labels.tolist(), strict=True):
            out.setdefault(label, []).append(clip)
    return out


def _ranks_after(root, state, world: int, batch: int, stop: int, **kwargs):
    """`world` loaders given `state`; each rank's clips by label, per epoch up to `stop`."""
    loaders = [_loader(root, world, r, batch, **kwargs) for r in range(world)]
    for loader in loaders:
        loader.load_state_dict(state)
    per_epoch = []
    for epoch in range(loaders[0].resume_epoch, stop):
        for loader in loaders:
            set_epoch(loader, epoch)
        per_epoch.append([_clips(loader) for loader in loaders])
    return loaders, per_epoch


@pytest.mark.parametrize(
    ("world", "batch", "world2", "batch2"), [(4, 1, 2, 1), (2, 2, 3, 1), (3, 1, 3, 2)]
)
def test_rank0s_state_resumes_on_other_ranks(root, world, batch, world2, batch2):
    whole = _dataset(root)  # the clip each item gets in each epoch, whatever the ranks
    expected = {}
    for epoch in (0, 1):
        whole.set_epoch(epoch)
        expected[epoch] = {k: whole[k][0] for k in range(11)}
    loaders = [_loader(root, world, r, batch) for r in range(world)]
    heads = []
    for loader in loaders:
        set_epoch(loader, 0)
        it = iter(loader)
        heads.append([next(it) for _ in range(2)])
    states = [loader.state_dict() for loader in loaders]
    state = states[0]
    assert state["world_size"] == world and state["batch_size"] == batch
    assert state["items"] == 2 * batch * world and state["sampler"].startswith("Distributed")

    _, per_epoch = _ranks_after(root, state, world2, batch2, 2)
    seen = [label for h in heads for _, labels in h for label in labels.tolist()]
    rest = per_epoch[0]
    seen += [label for r in rest for label, clips in r.items() for _ in clips]
    counts = Counter(seen)
    assert set(counts) == set(range(11)) and sum(counts.values()) - 11 < world2
    for r in rest:  # each item's clip is the one the uninterrupted run gives it
        for label, clips in r.items():
            assert all(torch.equal(c, expected[0][label]) for c in clips)
    # the next epoch is an uninterrupted world2 run's, rank for rank
    uninterrupted = [_loader(root, world2, r, batch2) for r in range(world2)]
    for rank, loader in enumerate(uninterrupted):
        set_epoch(loader, 1)
        got = per_epoch[1][rank]
        want = _clips(loader)
        assert got.keys() == want.keys()
        for label in got:
            assert all(torch.equal(a, b) for a, b in zip(got[label], want[label], strict=True))
            assert torch.equal(got[label][0], expected[1][label])


def test_a_resumed_pass_saves_and_resumes_again(root):
    """4 ranks -> 2 (batch 1 -> 2) -> 3: the second state counts from where the first one
    left off; over the three runs each item once."""
    first = [_loader(root, 4, r, 1) for r in range(4)]
    seen = []
    for loader in first:
        set_epoch(loader, 0)
        (batch,) = itertools.islice(loader, 1)
        seen += batch[1].tolist()
    state = first[0].state_dict()
    second = [_loader(root, 2, r, 2) for r in range(2)]
    for loader in second:
        loader.load_state_dict(state)
        set_epoch(loader, loader.resume_epoch)
        (batch,) = itertools.islice(loader, 1)
        seen += batch[1].tolist()
    state2 = second[0].state_dict()
    assert (state2["items"], state2["batches"], state2["world_size"]) == (4 + 4, 1, 2)
    _, per_epoch = _ranks_after(root, state2, 3, 1, 1)  # 3 left: one a rank
    seen += [label for r in per_epoch[0] for label, clips in r.items() for _ in clips]
    assert sorted(seen) == list(range(11))


def _labels(loader) -> list[list[int]]:
    return [labels.tolist() for _, labels in loader]


def test_a_resumed_pass_resumes_on_its_own_size_and_the_next_epoch_is_whole(root):
    """A state saved in a pass that began mid-epoch (4 ranks -> 2) resumes on those 2 ranks
    through torchdata's own restore (the samplers' "begin"); the epoch after it is whole."""
    first = [_loader(root, 4, r, 1) for r in range(4)]
    for loader in first:
        set_epoch(loader, 0)
        next(iter(loader))
    state = first[0].state_dict()  # 4 items handed out
    second = [_loader(root, 2, r, 1) for r in range(2)]
    rests, states = [], []
    for loader in second:
        loader.load_state_dict(state)
        set_epoch(loader, 0)
        assert len(loader) == 4  # 7 left: 4 a rank, one padded
        iterator = iter(loader)
        next(iterator)
        states.append(loader.state_dict())
        rests.append([labels.tolist() for _, labels in iterator])
    assert states[0]["items"] == 6 and states[0]["batches"] == 1
    for rank in range(2):
        resumed = _loader(root, 2, rank, 1)
        resumed.load_state_dict(states[0])  # same size, batch and workers: torchdata's restore
        set_epoch(resumed, 0)
        assert _labels(resumed) == rests[rank]
        set_epoch(resumed, 1, start_batch=5)  # 11 items on 2 ranks: 6 batches a rank again
        assert len(resumed) == 6 and len(_labels(resumed)) == 1
        with pytest.raises(ValueError, match=r"start_batch \(7\) must be <= .* \(6\)"):
            set_epoch(resumed, 1, start_batch=7)


def test_a_same_size_resume_from_rank0_and_from_each_rank(root):
    for own in (True, False):
        whole = [_loader(root, 2, r, 2) for r in range(2)]
        for loader in whole:
            set_epoch(loader, 0)
        expected = [[labels.tolist() for _, labels in loader] for loader in whole]
        first = [_loader(root, 2, r, 2) for r in range(2)]
        states = []
        for loader in first:
            set_epoch(loader, 0)
            next(iter(loader))
            states.append(loader.state_dict())
        for rank in range(2):
            resumed = _loader(root, 2, rank, 2)
            resumed.load_state_dict(states[rank] if own else states[0])
            set_epoch(resumed, 0)
            assert [labels.tolist() for _, labels in resumed] == expected[rank][1:]


def test_a_state_of_another_order_or_an_old_one_from_other_ranks_is_refused(root):
    loader = _loader(root, 2, 0, 2)
    set_epoch(loader, 0)
    next(iter(loader))
    state = loader.state_dict()
    shuffled = make_loader(_dataset(root), 2, num_workers=0, stateful=True)  # no process group
    with pytest.raises(ValueError, match=r"order is 'DistributedSampler.*EpochShuffleSampler"):
        shuffled.load_state_dict(state)
    split_keys = ("batch_size", "sampler", "world_size", "items")
    old = {k: v for k, v in state.items() if k not in split_keys}
    old["batches"] = 2  # of 3 on two ranks: not there on four (2 batches of 2 a rank)
    with pytest.raises(ValueError, match="another number of ranks .* older vidload"):
        _loader(root, 4, 0, 2).load_state_dict(old)
    old["batches"] = 1  # an old state on its own world size resumes as it always did
    resumed = _loader(root, 2, 0, 2)
    resumed.load_state_dict(old)
    set_epoch(resumed, 0)
    whole = _loader(root, 2, 0, 2)
    set_epoch(whole, 0)
    assert [b[1].tolist() for b in resumed] == [b[1].tolist() for b in whole][1:]


# ------------------------------------------------------------------ gloo ranks

RUN = Path(__file__).with_name("_elastic_run.py")
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def broken_root(tmp_path_factory):
    """tests/_elastic_run.py's videos: 14 npy videos of 8 noise frames and a broken one."""
    root = tmp_path_factory.mktemp("elastic-gloo")
    write_videos(root)
    return root


def _group(phase: str, root: Path, tmp: Path, world: int, workers: int) -> list[dict]:
    """Run `phase` of tests/_elastic_run.py on `world` gloo ranks: what each rank saved, and
    its stderr ("stderr")."""
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    procs = []
    for rank in range(world):
        cmd = [sys.executable, str(RUN), phase, str(root), str(tmp), str(workers)]
        cmd += [str(rank), str(world), str(tmp / f"store-{phase}")]
        procs.append(subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env))
    errors = []
    for proc in procs:
        try:
            errors.append(proc.communicate(timeout=300)[1])
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            pytest.fail(f"a {phase} rank hung")
        assert proc.returncode == 0, errors[-1]
    results = [torch.load(tmp / f"{phase}-{r}.pt", weights_only=False) for r in range(world)]
    return [{**result, "stderr": err} for result, err in zip(results, errors, strict=True)]


def _items(batches) -> list[tuple[int, tuple]]:
    """(item index, (clip, label, info)) of every item of `batches` ((clips, labels, info))."""
    out = []
    for clips, labels, info in batches:
        for j, index in enumerate(info["index"].tolist()):
            out.append((index, (clips[j], int(labels[j]), {k: v[j] for k, v in info.items()})))
    return out


def _same(a: tuple, b: tuple) -> bool:
    """The same clip, label and info (video id, frame indices, timestamps, clip, view)."""
    (clip_a, label_a, info_a), (clip_b, label_b, info_b) = a, b
    if not torch.equal(clip_a, clip_b) or label_a != label_b or info_a.keys() != info_b.keys():
        return False
    for key, x in info_a.items():
        y = info_b[key]
        if not (torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y):
            return False
    return True


@pytest.mark.slow
@pytest.mark.parametrize(("world", "world2"), [(4, 2), (2, 3)])
def test_gloo_ranks_resume_on_another_number(broken_root, tmp_path, world, world2):
    """`world` gloo ranks with 2 workers stop after 2 steps and rank 0 saves; `world2` ranks
    load that state: each item of the epoch once (the last step's padding apart), with the
    clip and info the uninterrupted run gives it; the next epoch an uninterrupted world2 run's;
    the video a first rank found broken is in the state, and no resumed rank decodes it."""
    firsts = _group("first", broken_root, tmp_path, world, 2)
    resumed = _group("resume", broken_root, tmp_path, world2, 2)
    found = sorted({v for f in firsts for v in f["broken_at_save"]})
    assert found == ["bad.mp4"], "the seed no longer meets the broken video before the save"
    # a rank that did not find it (it read no item of that video) has it in its state too
    assert any(not f["broken_at_save"] for f in firsts)
    assert all(f["state_broken"] == found for f in firsts)
    # each item's clip and info in the uninterrupted run, per epoch (the same on any rank)
    uninterrupted: dict[tuple[int, int], tuple] = {}
    for epoch in (0, 1):
        for f in firsts:
            for index, item in _items(f["full"][epoch]):
                assert _same(uninterrupted.setdefault((epoch, index), item), item)
    assert len(uninterrupted) == 2 * 15
    seen = [index for f in firsts for index, _ in _items(f["head"])]
    before_last = list(seen)
    for r in resumed:
        assert r["broken_at_load"] == ["bad.mp4"] and "skipping video" not in r["stderr"]
        rest = r["rest"][0]
        assert len(rest) == len(resumed[0]["rest"][0])  # the ranks step together
        for index, item in _items(rest):
            assert _same(item, uninterrupted[(0, index)]), f"item {index} differs"
            seen.append(index)
        before_last += [index for index, _ in _items(rest[:-1])]
    counts = Counter(seen)
    assert set(counts) == set(range(15)) and sum(counts.values()) - 15 < world2
    assert len(before_last) == len(set(before_last))  # repeats only in the last step
    # epoch 1: the uninterrupted world2 run's, batch for batch on every rank
    for r in resumed:
        got, want = _items(r["rest"][1]), _items(r["whole"])
        assert [i for i, _ in got] == [i for i, _ in want]
        assert all(_same(a, b) for (_, a), (_, b) in zip(got, want, strict=True))
