"""Exact mid-epoch resume: make_loader(..., stateful=True) through torch.save in a fresh process,
with 0 and 2 workers and on 2 gloo ranks; the samplers' positions; set_epoch(start_batch=k)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from _resume_run import write_videos
from torch.utils.data import DataLoader

from vidload import ClipDataset, NpySource, epochs, make_loader, set_epoch
from vidload.loader import EpochShuffleSampler, ResumableDistributedSampler, ShardSampler
from vidload.prefetch import ReadAheadSampler

pytest.importorskip("torchdata.stateful_dataloader")

RUN = Path(__file__).with_name("_resume_run.py")
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """14 npy videos of 8 noise frames (16x16: crops and flips show) and a broken one."""
    root = tmp_path_factory.mktemp("resume")
    write_videos(root)
    return root


def _run(phase: str, root: Path, out: Path, workers: int, group: tuple = ()) -> list:
    cmd = [sys.executable, str(RUN), phase, str(root), str(out), str(workers), *map(str, group)]
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return [subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env)]


def _wait(procs: list) -> list[str]:
    errors = []
    for proc in procs:
        try:
            errors.append(proc.communicate(timeout=180)[1])
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            pytest.fail("a resume process hung")
        assert proc.returncode == 0, errors[-1]
    return errors


def _assert_same(expected: list, got: list) -> None:
    assert len(got) == len(expected)
    for n, (a, b) in enumerate(zip(expected, got, strict=True)):
        for x, y in zip(a, b, strict=True):
            assert torch.equal(x, y), f"batch {n} differs"


def _check(first: dict, resumed: dict, stderr: str, per_epoch: int) -> None:
    full, head, rest = first["full"], first["head"], resumed["rest"]
    assert len(full) == 2 * per_epoch
    _assert_same(full[:3], head)  # the interrupted run saw what the uninterrupted one did
    _assert_same(full[3:], rest)  # the rest of epoch 0 and all of epoch 1, tensor for tensor
    # the epoch 1 clips and order differ from epoch 0's: the epoch reached the resumed workers
    assert not torch.equal(full[per_epoch][2], full[0][2])
    # the broken video learned before the save is known at load: not decoded (nor warned) again
    assert first["broken_at_save"] == ["bad.mp4"] == resumed["broken_at_load"]
    assert "skipping video" not in stderr


@pytest.mark.slow
@pytest.mark.parametrize("workers", [0, 2])
def test_resume_in_a_fresh_process(root, tmp_path, workers):
    out = tmp_path / "run.pt"
    errors = _wait(_run("first", root, out, workers))
    assert "skipping video 'bad.mp4'" in errors[0]  # found broken in the first run
    first = torch.load(out, weights_only=False)
    stderr = _wait(_run("resume", root, out, workers))[0]
    _check(first, torch.load(out, weights_only=False), stderr, per_epoch=8)


@pytest.mark.slow
def test_resume_on_two_gloo_ranks(root, tmp_path):
    world = 2
    outs = [tmp_path / f"rank{r}.pt" for r in range(world)]
    for phase in ("first", "resume"):
        procs = []
        for rank, out in enumerate(outs):
            group = (rank, world, tmp_path / f"store-{phase}")
            procs += _run(phase, root, out, 0, group)
        if phase == "first":
            _wait(procs)
            firsts = [torch.load(out, weights_only=False) for out in outs]
        else:
            stderrs = _wait(procs)
    for rank, out in enumerate(outs):
        resumed = torch.load(out, weights_only=False)
        # 15 items padded to 16: 8 per rank, 4 batches of 2 per epoch
        full, rest = firsts[rank]["full"], resumed["rest"]
        _assert_same(full[:3], firsts[rank]["head"])
        _assert_same(full[3:], rest)
        assert len(full) == 8 and not torch.equal(full[4][2], full[0][2])
        assert "skipping video" not in stderrs[rank] or not firsts[rank]["broken_at_save"]
    # each rank resumed its own share: together they still cover every item each epoch
    for epoch in (0, 1):
        seen = torch.cat([firsts[r]["full"][4 * epoch + b][2] for r in range(2) for b in range(4)])
        assert set(seen.tolist()) == set(range(15))


# ------------------------------------------------------------------ in-process


def _dataset(root, **kwargs):
    videos = [(f"v{k}.mp4", k) for k in range(5)]
    return ClipDataset(videos, NpySource(root), num_frames=2, seed=3, **kwargs)


def _labels(loader) -> list[list[int]]:
    return [labels.tolist() for _, labels in loader]


def test_a_state_saved_at_an_epochs_end_resumes_at_the_next_epoch(root):
    loader = make_loader(_dataset(root), batch_size=2, num_workers=0, stateful=True)
    set_epoch(loader, 0)
    epoch0 = _labels(loader)
    after_pass = loader.state_dict()  # the pass ended (StopIteration)
    set_epoch(loader, 1)
    epoch1 = _labels(loader)
    assert after_pass["finished"] and epoch0 != epoch1
    for state in (after_pass,):
        resumed = make_loader(_dataset(root), batch_size=2, num_workers=0, stateful=True)
        resumed.load_state_dict(state)
        assert resumed.resume_epoch == 1
        assert [(e, _labels(resumed)) for e in epochs(resumed, 2)] == [(1, epoch1)]
    # the last batch received, the pass not ended yet: the same
    loader = make_loader(_dataset(root), batch_size=2, num_workers=0, stateful=True)
    set_epoch(loader, 0)
    iterator = iter(loader)
    for _ in range(len(loader)):
        next(iterator)
    state = loader.state_dict()
    assert state["batches"] == 3 and state["finished"]
    resumed = make_loader(_dataset(root), batch_size=2, num_workers=0, stateful=True)
    resumed.load_state_dict(state)
    assert [(e, _labels(resumed)) for e in epochs(resumed, 2)] == [(1, epoch1)]


def test_a_loaded_state_waits_for_its_epoch(root):
    loader = make_loader(_dataset(root), batch_size=2, num_workers=0, stateful=True)
    set_epoch(loader, 2)
    next(iter(loader))
    state = loader.state_dict()
    assert state["epoch"] == 2 and state["batches"] == 1
    resumed = make_loader(_dataset(root), batch_size=2, num_workers=0, stateful=True)
    resumed.load_state_dict(state)
    assert resumed.state_dict()["batches"] == 1  # handed on before the pass begins
    with pytest.raises(ValueError, match=r"state of epoch 2 .*set epoch 2"):
        set_epoch(resumed, 0)
    with pytest.raises(ValueError, match="format"):
        resumed.load_state_dict({"epoch": 0})
    resumed.load_state_dict({})  # dropped: any epoch again
    set_epoch(resumed, 0)


def test_a_state_resumes_with_another_worker_count(root):
    def labels_after(state, workers):
        loader = make_loader(_dataset(root), batch_size=2, num_workers=workers, stateful=True)
        loader.load_state_dict(state)
        return [_labels(loader) for _ in epochs(loader, 2)]

    loader = make_loader(_dataset(root), batch_size=2, num_workers=2, stateful=True)
    set_epoch(loader, 0)
    iterator = iter(loader)
    next(iterator)
    state = loader.state_dict()
    del iterator, loader
    assert state["num_workers"] == 2 and state["batches"] == 1
    same = labels_after(state, 2)  # torchdata's own restore
    assert labels_after(state, 0) == same  # restarted at batch 1 through the sampler
    whole = make_loader(_dataset(root), batch_size=2, num_workers=0)
    expected = [_labels(whole) for _ in epochs(whole, 2)]
    assert same == [expected[0][1:], expected[1]]


def test_learned_state_round_trip_and_errors(root):
    ds = _dataset(root)
    assert ds.learned_state() == {"learned": [], "broken": []}
    ds.load_learned_state({"learned": [["v1.mp4", 0, 5]], "broken": [["v2.mp4", 0]]})
    assert ds.learned_frames == {"v1.mp4": 5} and ds.broken_videos == ["v2.mp4"]
    assert ds.learned_state() == {"learned": [["v1.mp4", 0, 5]], "broken": [["v2.mp4", 0]]}
    with pytest.raises(ValueError, match="'nope.mp4'.*not in this dataset's video list"):
        ds.load_learned_state({"broken": [["nope.mp4", 0]]})
    with pytest.raises(ValueError, match="must be >= 1"):
        ds.load_learned_state({"learned": [["v1.mp4", 0, 0]]})


def test_a_learned_state_is_never_dropped_by_a_loader_over_another_dataset(root):
    loader = make_loader(_dataset(root), batch_size=2, stateful=True)
    set_epoch(loader, 0)
    state = loader.state_dict()
    assert state["dataset"] == {"learned": [], "broken": []}
    other = make_loader(list(range(4)), batch_size=2, stateful=True)
    with pytest.raises(ValueError, match="learned frame counts, but this loader's dataset is a l"):
        other.load_state_dict(state)


@pytest.mark.parametrize("read_ahead", [False, True])
def test_plain_dataloader_start_batch(root, read_ahead):
    def loader():
        return make_loader(_dataset(root), batch_size=2, num_workers=0, read_ahead=read_ahead)

    whole = loader()
    set_epoch(whole, 4)
    expected = _labels(whole)
    resumed = loader()
    set_epoch(resumed, 4, start_batch=1)
    assert _labels(resumed) == expected[1:]
    assert _labels(resumed) == expected  # the pass after a resumed one is whole again
    with pytest.raises(ValueError, match=r"start_batch \(4\) must be <= .* \(3\)"):
        set_epoch(resumed, 4, start_batch=4)
    plain = DataLoader(_dataset(root), batch_size=2)
    with pytest.raises(TypeError, match="start_batch needs one of vidload's samplers"):
        set_epoch(plain, 0, start_batch=1)


def test_sampler_states(root):
    ds = _dataset(root)
    samplers = [
        EpochShuffleSampler(10, seed=1),
        ShardSampler(10, num_replicas=3, rank=1),
        ResumableDistributedSampler(range(10), num_replicas=3, rank=2, shuffle=True, seed=4),
        ReadAheadSampler(EpochShuffleSampler(len(ds), seed=2), ds, lookahead=2),
    ]
    for sampler in samplers:
        sampler.set_epoch(3)
        whole = list(sampler)
        it = iter(sampler)
        head = [next(it), next(it)]
        state = sampler.state_dict()
        assert state == {"epoch": 3, "yielded": 2}, type(sampler).__name__
        sampler.set_epoch(0)
        sampler.load_state_dict(state)
        assert head + list(sampler) == whole
        with pytest.raises(ValueError, match="must be <= the sampler's length"):
            sampler.load_state_dict({"epoch": 0, "yielded": len(sampler) + 1})
        with pytest.raises(ValueError, match="'epoch' and 'yielded'"):
            sampler.load_state_dict({"yielded": 0})
    # the distributed one is torch's DistributedSampler, order and all
    torch_one = torch.utils.data.DistributedSampler(
        range(10), num_replicas=3, rank=2, shuffle=True, seed=4
    )
    torch_one.set_epoch(3)
    assert list(samplers[2]) == list(torch_one)


def test_stateful_without_torchdata_names_the_extra(root, monkeypatch):
    monkeypatch.setitem(sys.modules, "torchdata.stateful_dataloader", None)
    monkeypatch.delitem(sys.modules, "vidload._loader.stateful", raising=False)
    with pytest.raises(ModuleNotFoundError, match=r"vidload\[stateful\]"):
        make_loader(_dataset(root), batch_size=2, num_workers=0, stateful=True)


def test_stateful_in_order_loader_resumes_too(root):
    def build():
        ds = _dataset(root, train=False)
        return make_loader(ds, batch_size=2, num_workers=0, stateful=True, read_ahead=False)

    loader = build()
    assert isinstance(loader.sampler, ShardSampler)  # not torch's SequentialSampler
    iterator = iter(loader)
    next(iterator)
    resumed = build()
    resumed.load_state_dict(loader.state_dict())
    assert _labels(resumed) == [[2, 3], [4]]
