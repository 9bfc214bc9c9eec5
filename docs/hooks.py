"""MkDocs hook: the command-line reference, rendered from vidload's own argparse parsers at build
time (never retyped). A page line `<!-- cli: vidload -->` becomes the top-level help, and
`<!-- cli: vidload SUBCOMMAND -->` that subcommand's full help; `<!-- cli: all -->` expands to
the top level and then every subcommand, in the parser's order, each under its own heading.

The nav in mkdocs.yml lists every page of the docs layout; an entry whose page is not written
yet is left out of the build (logged), so a page lands by adding its file alone. A page not in
the nav still fails the strict build (`validation.omitted_files`).

The repository root goes first on sys.path, so the build documents the checkout it runs in.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MARKER = re.compile(r"^<!-- cli: ([\w -]+?) -->$", re.M)


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _help(parser: argparse.ArgumentParser) -> str:
    """`parser`'s help wrapped to 80 columns (argparse wraps to $COLUMNS: the same page on every
    machine, and as wide as the theme's code blocks)."""
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"
    try:
        return parser.format_help().rstrip()
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


def render(spec: str) -> str:
    from vidload.cli import build_parser

    top = build_parser()
    subs = _subparsers(top)
    words = spec.split()
    if words == ["all"]:
        parts = ["## vidload\n\n```text\n" + _help(top) + "\n```"]
        for name, sub in subs.items():
            text = _help(sub)
            parts.append(f"## vidload {name}\n\n```text\n{text}\n```")
        return "\n\n".join(parts)
    if words == ["vidload"]:
        return "```text\n" + _help(top) + "\n```"
    if len(words) == 2 and words[0] == "vidload" and words[1] in subs:
        return "```text\n" + _help(subs[words[1]]) + "\n```"
    raise ValueError(f"<!-- cli: {spec} -->: not a vidload command (known: {sorted(subs)})")


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 (MkDocs API)
    return MARKER.sub(lambda m: render(m.group(1)), markdown)


log = logging.getLogger("mkdocs.hooks.vidload")


def _existing(nav: list, docs_dir: Path) -> list:
    """`nav` without the entries whose page does not exist (and sections left empty)."""
    out = []
    for entry in nav:
        item = entry
        if isinstance(entry, dict):
            ((title, value),) = entry.items()
            if isinstance(value, list):
                value = _existing(value, docs_dir)
                if not value:
                    continue
            elif isinstance(value, str) and value.endswith(".md"):
                if not (docs_dir / value).is_file():
                    log.info("nav: %s (%s) is not written yet; left out", title, value)
                    continue
            item = {title: value}
        elif isinstance(entry, str) and entry.endswith(".md") and not (docs_dir / entry).is_file():
            continue
        out.append(item)
    return out


def on_config(config):
    if config["nav"]:
        config["nav"] = _existing(config["nav"], Path(config["docs_dir"]))
    return config
