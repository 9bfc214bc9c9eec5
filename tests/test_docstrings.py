"""The public surface's docstrings stay true to the signatures: where a docstring has an
`Args:` section, it names every parameter and no parameter that is gone."""

from __future__ import annotations

import inspect
import re

import pytest

import vidload
import vidload.shards
import vidload.sources
from vidload.convert import convert
from vidload.probe import probe


def _public() -> dict[str, object]:
    out: dict[str, object] = {f"vidload.{n}": getattr(vidload, n) for n in vidload.__all__}
    out |= {f"vidload.sources.{n}": getattr(vidload.sources, n) for n in vidload.sources.__all__}
    out |= {"vidload.convert.convert": convert, "vidload.probe.probe": probe}
    for name in ("plan_convert", "convert_shard", "run_plan"):
        out[f"vidload.shards.{name}"] = getattr(vidload.shards, name)
    return out


def _documented(doc: str) -> set[str] | None:
    """The names an `Args:` section lists (`name:` or `a, b:` at the section's indent), or
    None without one."""
    lines = inspect.cleandoc(doc).splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "Args:")
    except StopIteration:
        return None
    names: set[str] = set()
    indent = None
    for line in lines[start + 1 :]:
        if not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        indent = depth if indent is None else indent
        if depth < indent:
            break
        m = re.match(r"([A-Za-z_]\w*(?:, [A-Za-z_]\w*)*):", line.strip())
        if depth == indent and m:
            names.update(m.group(1).split(", "))
    return names


#: (name, the function whose signature counts, the names its docstring's Args: lists)
DOCUMENTED = [
    (name, obj.__init__ if inspect.isclass(obj) else obj, _documented(obj.__doc__))
    for name, obj in _public().items()
    if callable(obj) and obj.__doc__ and _documented(obj.__doc__) is not None
]


@pytest.mark.parametrize(("name", "fn", "documented"), DOCUMENTED, ids=[d[0] for d in DOCUMENTED])
def test_args_sections_match_the_signatures(name, fn, documented):
    params = {
        p.name
        for p in inspect.signature(fn).parameters.values()
        if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    }
    assert sorted(params - documented) == [], f"{name}: parameters its docstring does not name"
    assert sorted(documented - params) == [], f"{name}: documented parameters that are gone"


def test_the_check_reads_args_sections():
    assert {d[0] for d in DOCUMENTED} >= {
        "vidload.ClipDataset",
        "vidload.VideoSource",
        "vidload.NpySource",
        "vidload.make_loader",
        "vidload.convert.convert",
        "vidload.shards.plan_convert",
    }
    documented = _documented(vidload.ClipDataset.__doc__ or "")
    assert documented is not None and {"videos", "stack_views", "return_info"} <= documented
