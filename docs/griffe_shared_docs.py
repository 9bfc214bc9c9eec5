"""Griffe extension for the API reference: fill the sources' shared docstring markers.

The sources write a parameter or method doc shared by several classes once, as a `<<name>>`
line that `vidload.sources._docs.shared_docs` fills at import. Griffe reads the code without
importing it, so this extension applies the same `fill` to every docstring holding a marker:
the reference shows what `help()` shows.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import griffe

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from vidload.sources._docs import fill  # noqa: E402  (the checkout's, after the path is set)


class SharedDocs(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:  # noqa: ARG002
        if obj.docstring is not None and "<<" in obj.docstring.value:
            obj.docstring.value = fill(obj.docstring.value)
