"""Train a small (2+1)D CNN on generated action videos, then test it with multi-view averaging.

The whole training job on built-in data, end to end:

1. generates sample videos in three shapes (4:3, 16:9 and portrait) whose four classes differ
   only in motion (a disc falling, rising, growing or shrinking: `vidload.synth.ACTIONS`);
2. reads 8-frame clips straight from the videos with `ClipDataset(short_side=..., crop=...,
   flip=True, layout="CTHW")`: random scale, crop and flip per clip when training, fused with
   decoding; every clip comes out 3 x 8 x 64 x 64 whatever the video's shape;
3. loads them with `make_loader` (uint8 batches, worker count from the CPUs this process may
   use) and normalises each batch on the device with `vidload.normalize`;
4. tests on held-out videos with `clips_per_video=2, spatial_views=3, stack_views=True`: six
   views per video in one item, logits averaged over them.

It prints loss, accuracy and clips/s per epoch; chance is 25%.

`--augment device` adds colour jitter, grayscale and blur on the device to each normalised
training batch (`vidload.augment.ClipAugment`, in float16 on a GPU): one draw per clip from
(seed, epoch, item index), the items' indices coming from `return_info=True`.

    python examples/train.py [--data DIR] [--epochs 6] [--workers N] [--device cuda] [--quick]
                             [--augment {none,device}]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch
from torch import nn

from vidload import ClipDataset, VideoSource, epochs, make_loader, normalize
from vidload.augment import ClipAugment
from vidload.normalization import KINETICS_MEAN, KINETICS_STD
from vidload.synth import ACTIONS, SynthSpec, make_sample_videos

#: (width, height) of the generated videos: mixed shapes, one clip shape out.
SHAPES = ((160, 120), (192, 108), (96, 128))
NUM_FRAMES, CROP, SHORT_SIDE = 8, 64, (72, 88)


def make_videos(root: Path, per_class: int, seconds: float) -> tuple[list, list]:
    """Generate `per_class` videos per class in each of SHAPES under `root` (reused when already
    there); every third video of each class and shape is held out for testing. Returns
    (train, test) lists of (video_id, label)."""
    train, test = [], []
    for k, (width, height) in enumerate(SHAPES):
        folder = f"{width}x{height}"
        spec = SynthSpec(
            num_videos=per_class * len(ACTIONS),
            width=width,
            height=height,
            fps=12,
            seconds=seconds,
            seed=k,
            actions=True,
        )
        ids = make_sample_videos(root / folder, spec, progress=False)
        for n, vid in enumerate(ids):  # sorted: class by class
            label = ACTIONS.index(vid.split("/")[0])
            (test if n % per_class % 3 == 2 else train).append((f"{folder}/{vid}", label))
    return train, test


def conv2plus1d(cin: int, cout: int, stride_t: int, stride_s: int) -> nn.Sequential:
    """A (2+1)D block (R(2+1)D): a spatial 1x3x3 conv, then a temporal 3x1x1 conv."""
    return nn.Sequential(
        nn.Conv3d(cin, cout, (1, 3, 3), (1, stride_s, stride_s), (0, 1, 1), bias=False),
        nn.BatchNorm3d(cout),
        nn.ReLU(inplace=True),
        nn.Conv3d(cout, cout, (3, 1, 1), (stride_t, 1, 1), (1, 0, 0), bias=False),
        nn.BatchNorm3d(cout),
        nn.ReLU(inplace=True),
    )


def build_model(num_classes: int) -> nn.Module:
    """(B, 3, T, H, W) float -> (B, num_classes) logits; about 40k parameters."""
    return nn.Sequential(
        conv2plus1d(3, 16, 1, 2),
        conv2plus1d(16, 32, 2, 2),
        conv2plus1d(32, 64, 2, 2),
        nn.AdaptiveAvgPool3d(1),
        nn.Flatten(),
        nn.Dropout(0.2),
        nn.Linear(64, num_classes),
    )


def train_epoch(
    model, loader, optimizer, schedule, device, augment=None, epoch=0
) -> tuple[float, float, int]:
    """One pass over `loader`; (mean loss, accuracy, clips). With `augment` (a ClipAugment)
    the loader's items are (clip, label, info) and each batch is augmented on the device."""
    model.train()
    total_loss, correct, seen = 0.0, 0, 0
    for clips, labels, *info in loader:  # uint8 (B, 3, T, H, W), int64 (B,)[, info]
        if augment is None:
            x = normalize(clips, KINETICS_MEAN, KINETICS_STD, device=device, layout="CTHW")
        else:  # float16 where the device has it; the model takes float32
            half = torch.float16 if device.type == "cuda" else torch.float32
            x = normalize(
                clips, KINETICS_MEAN, KINETICS_STD, device=device, dtype=half, layout="CTHW"
            )
            x = augment(x, info[0]["index"], epoch=epoch).float()
        labels = labels.to(device)
        logits = model(x)
        loss = nn.functional.cross_entropy(logits, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        schedule.step()
        total_loss += loss.item() * len(labels)
        correct += int((logits.argmax(1) == labels).sum())
        seen += len(labels)
    return total_loss / seen, correct / seen, seen


@torch.no_grad()
def evaluate(model, loader, device) -> tuple[float, float, int]:
    """Multi-view test: items are (V, 3, T, H, W) stacks; logits averaged over the V views.
    Returns (accuracy of the averaged logits, accuracy of single views, views seen)."""
    model.eval()
    correct, single, videos, views = 0, 0, 0, 0
    for stacks, labels in loader:  # uint8 (B, V, 3, T, H, W)
        x = normalize(stacks, KINETICS_MEAN, KINETICS_STD, device=device, layout="CTHW")
        b, v = x.shape[:2]
        logits = model(x.flatten(0, 1)).view(b, v, -1)
        labels = labels.to(device)
        correct += int((logits.mean(1).argmax(1) == labels).sum())
        single += int((logits.argmax(2) == labels[:, None]).sum())
        videos += b
        views += b * v
    return correct / videos, single / views, views


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "vidload-train")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--workers", type=int, default=None, help="default: this process's CPUs")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 epoch on tiny data")
    parser.add_argument(
        "--augment",
        choices=("none", "device"),
        default="none",
        help="device: colour jitter / grayscale / blur per clip on the device (ClipAugment)",
    )
    args = parser.parse_args(argv)

    # --quick: the smallest run that still has every shape, class and test view (a smoke test)
    per_class, seconds, train_clips = (3, 1.0, 1) if args.quick else (9, 3.0, 4)
    epochs_total = 1 if args.quick else args.epochs
    root = args.data / ("quick" if args.quick else "videos")
    start = time.perf_counter()
    train_videos, test_videos = make_videos(root, per_class, seconds)
    print(
        f"{len(train_videos)} training and {len(test_videos)} test videos in {root} "
        f"(shapes {', '.join(f'{w}x{h}' for w, h in SHAPES)}; "
        f"{time.perf_counter() - start:.1f} s)"
    )

    source = VideoSource(root)
    common = dict(num_frames=NUM_FRAMES, crop=CROP, layout="CTHW", seed=args.seed)
    train_ds = ClipDataset(
        train_videos,
        source,
        clips_per_video=train_clips,
        short_side=SHORT_SIDE,
        flip=True,
        return_info=args.augment == "device",  # info["index"] seeds the augmentation
        **common,
    )
    test_ds = ClipDataset(
        test_videos,
        source,
        train=False,
        short_side=SHORT_SIDE[0],
        clips_per_video=2,
        spatial_views=3,
        stack_views=True,
        **common,
    )
    train_loader = make_loader(train_ds, batch_size=args.batch_size, num_workers=args.workers)
    test_loader = make_loader(test_ds, batch_size=4, num_workers=args.workers)
    print(f"train: {train_ds}\ntest:  {test_ds}")
    print(f"device {args.device}, {train_loader.num_workers} loader workers")

    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    model = build_model(len(ACTIONS)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    steps = epochs_total * len(train_loader)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=3e-3, total_steps=steps)
    augment = None
    if args.augment == "device":
        augment = ClipAugment(KINETICS_MEAN, KINETICS_STD, seed=train_ds.seed, layout="CTHW")
        print(f"augmenting on {device}: {augment}")
    for epoch in epochs(train_loader, epochs_total):
        tick = time.perf_counter()
        loss, acc, clips = train_epoch(
            model, train_loader, optimizer, schedule, device, augment, epoch
        )
        rate = clips / (time.perf_counter() - tick)
        tick = time.perf_counter()
        test_acc, view_acc, views = evaluate(model, test_loader, device)
        test_rate = views / (time.perf_counter() - tick)
        print(
            f"epoch {epoch + 1}/{epochs_total}: loss {loss:.3f}, train accuracy {acc:.1%} "
            f"({rate:.1f} clips/s) | test accuracy {test_acc:.1%} over "
            f"{len(test_ds)} videos x {views // len(test_ds)} views "
            f"(single view {view_acc:.1%}; {test_rate:.1f} clips/s)"
        )
    print(f"done in {time.perf_counter() - start:.0f} s; chance is {1 / len(ACTIONS):.0%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
