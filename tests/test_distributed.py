"""make_loader and ClipDataset under a real torch.distributed (gloo) process group, and the
affinity- and rank-aware default worker counts."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.distributed as dist

from vidload import ClipDataset, NpySource, make_loader
from vidload.loader import ShardSampler
from vidload.sources.jpeg_decode import encode_jpeg
from vidload.sources.npy import write_npy

# minutes of servers and subprocesses: the full tier only (`pytest -m "not slow"` skips it)
pytestmark = pytest.mark.slow

RANK_SCRIPT = Path(__file__).with_name("_dist_rank.py")
NUM_VIDEOS = 7  # odd: 2 ranks need padding when training


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """Seven npy videos; frame i of video k is a flat grey of value 20 * k + i."""
    root = tmp_path_factory.mktemp("npy")
    for k in range(NUM_VIDEOS):
        frames = [np.full((16, 16, 3), 20 * k + i, np.uint8) for i in range(12)]
        write_npy(root / f"v{k}.npy", [encode_jpeg(f) for f in frames])
    return root


def test_two_ranks_share_a_seed_and_split_the_items(root, tmp_path):
    world = 2
    procs = []
    for rank in range(world):
        cmd = [sys.executable, str(RANK_SCRIPT), str(rank), str(world)]
        cmd += [str(tmp_path / "store"), str(root), str(tmp_path / f"rank{rank}.pt")]
        env = {**os.environ, "PYTHONWARNINGS": "ignore"}
        procs.append(subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env))
    errors = []
    for proc in procs:
        try:
            errors.append(proc.communicate(timeout=120)[1])
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            pytest.fail("a rank hung")
        assert proc.returncode == 0, errors[-1]
    ranks = [torch.load(tmp_path / f"rank{r}.pt", weights_only=False) for r in range(world)]

    # seed=None: rank 0's seed on every rank (else every rank would sample other clips)
    assert ranks[0]["seed"] == ranks[1]["seed"] and ranks[0]["test_seed"] == ranks[1]["test_seed"]
    assert ranks[0]["seed"] != ranks[0]["test_seed"]
    # training: DistributedSampler, same length on every rank, every item, order per epoch
    assert [r["sampler"] for r in ranks] == ["ResumableDistributedSampler"] * 2
    reference = ClipDataset(
        [(f"v{k}.mp4", k) for k in range(NUM_VIDEOS)],
        NpySource(root),
        num_frames=4,
        seed=ranks[0]["seed"],
    )
    orders = []
    for epoch in (0, 1):
        parts = [r["epochs"][epoch][0] for r in ranks]
        assert len(parts[0]) == len(parts[1]) == 4  # 7 items padded to 8
        assert set(parts[0] + parts[1]) == set(range(NUM_VIDEOS))
        orders.append(parts)
        reference.set_epoch(epoch)
        for r in ranks:  # a clip is the same on any rank: a function of (seed, epoch, index)
            labels, clips = r["epochs"][epoch]
            for label, clip in zip(labels, clips, strict=True):
                assert torch.equal(clip, reference[label][0])
    assert orders[0] != orders[1]
    # evaluation: every item exactly once over the ranks, nothing padded
    assert [r["test_sampler"] for r in ranks] == ["ShardSampler"] * 2
    assert sorted(ranks[0]["test_labels"] + ranks[1]["test_labels"]) == list(range(NUM_VIDEOS))
    assert ranks[0]["test_labels"] == [0, 2, 4, 6] and ranks[1]["test_labels"] == [1, 3, 5]
    # said once, on rank 0 only
    assert errors[0].count("torch.distributed is initialised (world size 2)") == 1
    assert "torch.distributed" not in errors[1]


@pytest.fixture
def one_rank_group(tmp_path):
    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1
    )
    try:
        yield
    finally:
        dist.destroy_process_group()


def test_one_rank_group_and_explicit_choices(root, one_rank_group):
    videos = [(f"v{k}.mp4", k) for k in range(NUM_VIDEOS)]
    ds = ClipDataset(videos, NpySource(root), num_frames=4, seed=3)
    assert ds.seed == 3  # a given seed is kept
    loader = make_loader(ds, batch_size=3, num_workers=0, read_ahead=False)
    assert isinstance(loader.sampler, torch.utils.data.DistributedSampler)
    assert sorted(label for _, labels in loader for label in labels.tolist()) == list(range(7))
    # a sampler given is used as it is
    mine = torch.utils.data.SequentialSampler(ds)
    assert make_loader(ds, sampler=mine, num_workers=0, read_ahead=False).sampler is mine
    test = make_loader(ds, shuffle=False, num_workers=0, read_ahead=False)
    assert isinstance(test.sampler, ShardSampler) and list(test.sampler) == list(range(7))


def test_shard_sampler_checks():
    assert list(ShardSampler(5, num_replicas=3, rank=2)) == [2]
    assert len(ShardSampler(5, num_replicas=3, rank=0)) == 2
    assert list(ShardSampler(1, num_replicas=3, rank=1)) == []
    with pytest.raises(ValueError, match=r"rank \(2\) must be < num_replicas \(2\)"):
        ShardSampler(5, num_replicas=2, rank=2)
    with pytest.raises(ValueError, match=r"num_replicas \(0\) must be >= 1"):
        ShardSampler(5, num_replicas=0, rank=0)


_DEFAULTS = """
import argparse
from vidload import ClipDataset, NpySource, make_loader
from vidload._commands.bench import config_from_args
from vidload.cli import build_parser
from vidload._parallel import resolve_workers
ds = ClipDataset([("v0.mp4", 0)], NpySource({root!r}), num_frames=2, seed=0)
bench = config_from_args(build_parser().parse_args(["bench"])).workers
print(make_loader(ds).num_workers, resolve_workers(None, None)[0], bench)
"""


@pytest.mark.skipif(shutil.which("taskset") is None, reason="no taskset")
@pytest.mark.parametrize(
    ("cpus", "local_world", "expected"),
    [("0", None, "1 1 1"), ("0,1", None, "2 2 2"), ("0,1", "2", "1 1 1")],
)
def test_default_workers_follow_affinity_and_local_ranks(root, cpus, local_world, expected):
    if len(os.sched_getaffinity(0)) < len(cpus.split(",")):
        pytest.skip(f"needs CPUs {cpus}")
    env = {k: v for k, v in os.environ.items() if k != "LOCAL_WORLD_SIZE"}
    if local_world is not None:
        env["LOCAL_WORLD_SIZE"] = local_world
    code = _DEFAULTS.format(root=str(root))
    cmd = ["taskset", "-c", cpus, sys.executable, "-c", code]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == expected
