"""Parameter and method docs shared by the sources, written once (torchcodec's `_COMMON_DOCS`).

A docstring line holding only `<<name>>` (any indentation; also the docstring's first line) is
replaced by `DOCS[name]`, indented to the marker's column (to the body's, on the first line):
`@shared_docs` on a class fills its docstring and those of its methods. A marker without an
entry raises at import, so a typo cannot ship.
"""

from __future__ import annotations

import re
import textwrap
from typing import TypeVar

T = TypeVar("T")

DOCS: dict[str, str] = {
    "decode_size": """\
decode_size: optional minimum (height, width) to decode to: JPEG DCT scaling by 1/2,
    1/4 or 1/8 gives the smallest frames still at least this size, `(ceil(H / s),
    ceil(W / s))` for stored H x W (see `jpeg_decode.reduced_size`); faster than a full
    decode and a resize. None decodes at the stored size. Not used by a read with a
    `geometry`, which picks its own scale.""",
    "fps": """\
fps: frame rate for `timestamps` when a container has no stored times
    (`<container>.timestamps`, written by `vidload convert`): frame i at i / fps.""",
    "storage": """\
storage_options: for a URL root, passed to its fsspec filesystem unchanged (s3fs:
    `key`, `secret`, `endpoint_url`, `client_kwargs`, ...); None uses the standard
    configuration (AWS: environment, `~/.aws`, `AWS_ENDPOINT_URL`, instance roles).
cache_dir: for a URL root, a local folder that keeps a copy of each object read (whole, on
    its first read), so that later epochs read locally (`vidload._storage.LocalCache`:
    least recently used objects evicted beyond `cache_max_bytes`). None reads the bucket
    every time, by byte ranges.
cache_max_bytes: the bound of `cache_dir` (default 32 GiB).""",
    "read": """\
Frames `indices` (0-based, any order, duplicates allowed) as uint8 (k, H, W, 3) RGB, in
the order asked.""",
    "read_container": """\
Frames `indices` (0-based, any order, duplicates allowed) as uint8 (k, H, W, 3) RGB, in
the order asked: `read_encoded` (the stored JPEG bytes of each distinct frame) decoded by
`EncodedFrames.decode` (libjpeg-turbo, at `decode_size`).

With a `geometry` (a `vidload.transforms.ClipGeometry`) the frames come back as uint8
(k, out_h, out_w, 3), decoded at a reduced DCT scale and cropped, resized and flipped on the
way (`sources._fused`).

Raises:
    IndexError: a negative index.
    FrameCountError: an index >= `actual_frames(video_id)`.
    VideoReadError: a missing, empty, truncated or corrupt container, or a frame that is not
        a complete, decodable JPEG (naming the file and the frame).""",
    "read_encoded": """\
The stored JPEG bytes of frames `indices` (0-based, any order, duplicates allowed), not
decoded: each distinct frame read once, `EncodedFrames.order` giving the order asked. This
is all the storage work of `read`, which is `read_encoded(...).decode(...)`. Raises
IndexError for a negative index, FrameCountError for an index >= `actual_frames(video_id)`,
VideoReadError for a container that cannot be read.""",
}

_MARKER = re.compile(r"^([ \t]*)<<(\w+)>>[ \t]*$", re.MULTILINE)


def fill(doc: str) -> str:
    """`doc` with every `<<name>>` line replaced by `DOCS[name]`, indented to the marker."""

    lines = doc.splitlines()
    # the body's lines, and the closing quotes' line (indented like the body)
    body = [line for line in lines[1:] if line.strip()] + lines[-1:] * (not lines[-1].strip())
    body_indent = min((len(line) - len(line.lstrip()) for line in body), default=0)

    def replace(m: re.Match[str]) -> str:
        indent, name = m.group(1), m.group(2)
        if name not in DOCS:
            raise KeyError(f"docstring marker <<{name}>> has no entry in sources._docs.DOCS")
        first, _, after = DOCS[name].partition("\n")
        # a marker on the docstring's first line: the text after it is indented like the body
        rest = " " * body_indent if m.start() == 0 else indent
        return f"{indent}{first}\n{textwrap.indent(after, rest)}"

    return _MARKER.sub(replace, doc)


def shared_docs(cls: T) -> T:
    """Class decorator: fill the markers of `cls`'s docstring and its own methods'."""
    if cls.__doc__:
        cls.__doc__ = fill(cls.__doc__)
    for value in vars(cls).values():
        func = getattr(value, "__func__", value)
        doc = getattr(func, "__doc__", None)
        if callable(func) and doc and "<<" in doc:
            func.__doc__ = fill(doc)
    return cls
