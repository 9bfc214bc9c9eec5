"""The defaults and candidate lists the docs quote are the code's (issue 31).

`tests/test_docs.py` runs the snippets; a sentence such as "`--quality` to 95" or "`--to
video` at GOP 1/CRF 18, GOP 8/CRF 18, ..." is not a snippet, and once drifted from the code
unnoticed (choose tries `gop8:crf20`). Each test here either builds the sentence the page must
hold from the code's own values and looks for it, or reads the value the page gives and compares
it with the code. A changed default fails here until its docs are changed with it.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _text(page: str) -> str:
    """The page's text with every run of whitespace one space (a sentence may wrap anywhere)."""
    return " ".join((ROOT / page).read_text(encoding="utf-8").split())


def _default(func, name: str):
    return inspect.signature(func).parameters[name].default


def _joined(items: list[str]) -> str:
    """`a, b and c` as the docs write a list."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _subsampling(value: str) -> str:
    """ "420" as the docs write it: 4:2:0."""
    return ":".join(value)


def test_choose_candidates_are_the_ones_choose_tries():
    from vidload._choose.storages import default_storages

    specs = default_storages()
    assert specs[0].to == "original"
    video = [f"GOP {s.gop}/CRF {s.crf:g}" for s in specs if s.to == "video"]
    by_quality: dict[str, list[str]] = {}
    for s in specs:
        if s.quality is not None:
            by_quality.setdefault(s.to, []).append(str(s.quality))
    names = {"hdf5": "HDF5", "lmdb": "LMDB"}
    jpeg = [
        f"{names.get(to, to)} at {'JPEG quality ' if i == 0 else ''}{_joined(qualities)}"
        for i, (to, qualities) in enumerate(by_quality.items())
    ]
    sentence = f"(default: the originals; `--to video` at {_joined(video)}; {'; '.join(jpeg)})"
    assert sentence in _text("docs/guides/choosing-storage.md")
    # every default candidate is a row of the measured tables (the tables show what choose tries)
    tables = _text("docs/guides/choosing-storage.md")
    for spec in specs:
        assert re.search(rf"\* {re.escape(spec.name)} ", tables), spec.name


def test_choose_sample_default():
    from vidload.choose import choose

    assert f"`--sample K` (default {_default(choose, 'sample')})" in _text(
        "docs/guides/choosing-storage.md"
    )


def test_convert_defaults():
    from vidload._convert import options as opts
    from vidload.shards import DEFAULT_SHARD_SIZE

    q, sub = opts.DEFAULT_QUALITY, _subsampling(opts.DEFAULT_SUBSAMPLING)
    gop, crf = opts.DEFAULT_GOP, opts.DEFAULT_CRF
    preset, tune = opts.DEFAULT_PRESET, opts.DEFAULT_TUNE
    converting = _text("docs/guides/converting.md")
    assert f"`--quality` to {q};" in converting
    assert f"`--quality` ({q}) and `--subsampling` ({sub}," in converting
    assert f"The default stays q{q} {sub}:" in converting
    assert f"defaults: --gop {gop} --crf {crf:g} --preset {preset} --tune {tune}" in converting
    assert f"`--shard-size` videos (default {DEFAULT_SHARD_SIZE}," in converting
    for page in ("README.md", "docs/index.md"):
        assert f"(JPEG, quality {q}, {sub} chroma by default:" in _text(page), page
    choosing = _text("docs/guides/choosing-storage.md")
    assert f"(GOP {gop}, CRF {crf:g}: `convert --to video`'s default," in choosing
    assert f"its defaults: preset {preset}, tune {tune})" in choosing
    assert f"the default (CRF {crf:g})" in choosing


def test_convert_help_names_the_shard_size_default():
    import argparse

    from vidload._commands.args import add_common
    from vidload.shards import DEFAULT_SHARD_SIZE

    p = argparse.ArgumentParser()
    add_common(p)
    shard = next(a for a in p._actions if a.dest == "shard_size")
    assert f"default {DEFAULT_SHARD_SIZE}," in shard.help


def test_make_loader_defaults():
    pytest.importorskip("torch")
    from vidload import make_loader

    training = _text("docs/guides/training.md")
    assert f"`prefetch_factor={_default(make_loader, 'prefetch_factor')}`" in training
    assert _default(make_loader, "persistent_workers") is True
    assert "persistent workers (restarting them each epoch cost" in training
    assert _default(make_loader, "pin_memory") is None  # None: when CUDA is available
    assert "`pin_memory` when CUDA is available." in training


def test_read_ahead_is_on_where_the_docs_say(tmp_path):
    pytest.importorskip("torch")
    from media import make_video

    from vidload import ClipDataset
    from vidload._kinds import get_kind
    from vidload.convert import convert
    from vidload.loader import _ahead_defaults

    def _can_read_ahead(dataset):  # make_loader's read_ahead=None
        return _ahead_defaults(dataset)[0]

    training = _text("docs/guides/training.md")
    sentence = "For HDF5, npy and video files a `vidload.prefetch.ReadAheadSampler` (on by default)"
    assert sentence in training
    assert "It is off by default for JPEG folders" in training
    assert _default(__import__("vidload").make_loader, "read_ahead") is None  # None: the rule
    make_video(tmp_path / "videos/a/x.mp4", 4, width=32, height=32)
    on = {"video": _can_read_ahead(ClipDataset([("a/x.mp4", 0)], get_kind("video").open(
        tmp_path / "videos"), num_frames=2))}  # fmt: skip
    for kind in ("hdf5", "npy", "jpeg"):
        convert(tmp_path / "videos", tmp_path / kind, to=kind, workers=1, progress=False)
        src = get_kind(kind).open(tmp_path / kind)
        on[kind] = _can_read_ahead(ClipDataset([("a/x.mp4", 0)], src, num_frames=2))
    assert on == {"video": True, "hdf5": True, "npy": True, "jpeg": False}


def test_bucket_defaults():
    from vidload._storage import cache
    from vidload._storage.cache import _RESCAN_EVERY, DEFAULT_CACHE_BYTES
    from vidload._storage.filesystems import HTTP_CONNECTIONS, S3_CONNECTIONS

    buckets = _text("docs/guides/buckets.md")
    assert DEFAULT_CACHE_BYTES % (1 << 30) == 0
    assert f"`cache_max_bytes` (default {DEFAULT_CACHE_BYTES >> 30} GiB)" in buckets
    assert f"vidload gives s3fs {S3_CONNECTIONS} pooled connections per process" in buckets
    assert f"Over HTTP(S) it gives aiohttp {HTTP_CONNECTIONS}" in buckets
    assert f"its own additions pass the bound or after {_RESCAN_EVERY} of them" in buckets
    assert "until they fill 90 % of it" in buckets
    assert "int(self.max_bytes * 0.9)" in inspect.getsource(cache)  # the 90 % the page says


def test_augment_defaults_table():
    pytest.importorskip("torch")
    from vidload.augment import ClipAugment

    page = (ROOT / "docs/guides/device-augmentation.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| (\w+) +\|.*\| (.+?) +\|$", page, flags=re.M))
    d = {name: _default(ClipAugment, name) for name in inspect.signature(ClipAugment).parameters}
    for name in ("brightness", "contrast", "saturation", "hue"):
        assert rows[name] == f"a = {d[name]}", name
    assert rows["grayscale"] == f"p = {d['grayscale']}"
    assert rows["blur"] == f"p = {d['blur']}, {d['blur_sigma']}"


#: `name="value"` (default) and "By default ... (`name="value"`)", as the guides write a
#: keyword's default.
KEYWORD_DEFAULT = (
    re.compile(r"`(\w+)=([^`]+)`\s*\((?:the )?default\)"),
    re.compile(r"[Bb]y default[^.(]*\(`(\w+)=([^`]+)`\)"),
)


def _public_callables() -> list:
    import vidload
    from vidload import datasets

    names = [n for n in vidload.__all__ if callable(getattr(vidload, n))]
    out = [getattr(vidload, n) for n in names]
    out += [f for n in datasets.__all__ if inspect.isfunction(f := getattr(datasets, n))]
    try:  # make_loader(stateful=True)'s loader: the guides quote its defaults too
        from torchdata.stateful_dataloader import StatefulDataLoader
    except ImportError:
        pass
    else:
        out.append(StatefulDataLoader)
    return [f for f in out if _has_signature(f)]


def _has_signature(f) -> bool:
    try:
        inspect.signature(f)
    except (TypeError, ValueError):
        return False
    return True


def test_every_keyword_default_the_docs_quote():
    """Each `name=value` a page calls the default is the default of every public callable that
    takes `name` (and at least one does)."""
    pytest.importorskip("torch")
    import ast

    callables = _public_callables()
    quoted = []
    for page in PAGES:
        text = " ".join(page.read_text(encoding="utf-8").split())
        for pattern in KEYWORD_DEFAULT:
            quoted += [(page, *m.groups()) for m in pattern.finditer(text)]
    assert len(quoted) >= 5, quoted  # the pattern still finds what the guides write
    for page, name, value in quoted:
        where = f"{page.relative_to(ROOT)}: {name}={value}"
        owners = [f for f in callables if name in inspect.signature(f).parameters]
        assert owners, f"{where}: no public callable takes {name}"
        wrong = [
            f"{f.__qualname__}: {_default(f, name)!r}"
            for f in owners
            if _default(f, name) != ast.literal_eval(value)
        ]
        assert not wrong, f"{where}, but the code says {wrong}"


def test_unlabelled_videos_train_as_the_guides_say(tmp_path):
    """converting.md once said train=True refuses an unlabelled list; training.md said the
    opposite. Both now say what the code does: label -1, read with train=True."""
    pytest.importorskip("torch")
    from media import make_video

    from vidload import ClipDataset, VideoSource

    assert "`ClipDataset` reads them with `train=True` (self-supervised pretraining" in _text(
        "docs/guides/converting.md"
    )
    assert "`train=True` on unlabelled videos (label -1) is allowed" in _text(
        "docs/guides/training.md"
    )
    make_video(tmp_path / "x.mp4", 4, width=32, height=32)
    ds = ClipDataset([("x.mp4", -1)], VideoSource(tmp_path), num_frames=2, train=True, seed=0)
    clip, label = ds[0]
    assert label == -1 and tuple(clip.shape) == (2, 3, 32, 32)


def test_choose_help_defaults_are_choose_s():
    """`vidload choose --help` says each option's default as "(N)"; it is `choose()`'s, and
    an option's own default, where it has one, is too."""
    import argparse

    from vidload._commands import choose as command
    from vidload.choose import choose

    sub = argparse.ArgumentParser().add_subparsers()
    parser = command.add_parser(sub)
    params = inspect.signature(choose).parameters
    checked = []
    for action in parser._actions:
        m = re.search(r"\((\w+)\)$", action.help or "")
        if m is None or action.dest not in params:
            continue
        want = params[action.dest].default
        assert m.group(1) == str(want), f"--{action.dest}: help says {m.group(1)}, code {want}"
        if action.default is not None:
            assert action.default == want, f"--{action.dest}: {action.default} vs {want}"
        checked.append(action.dest)
    assert {"sample", "num_frames", "clips", "rounds", "seed", "sampling"} <= set(checked)
