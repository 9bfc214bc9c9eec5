"""Where a run reads: the INPUT, a local path or a URL, one class written against its
`Location` (as `output` is for where it writes). `convert`'s planner and `probe` find their
inputs through it and never ask which kind it is.

What an input does: find its videos (`find`: the items, the folder their ids are relative to,
the class map of a folder INPUT, and for a URL the root a job downloads its item from), which
the output checks it does not overlap (`vidload._convert.output.Output.check_input`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from vidload._convert.inputs import InputItem, Inputs, find_inputs_at, label_inputs
from vidload._storage import Location
from vidload.errors import UsageError
from vidload.labels import folder_class_map, label_by_folder, read_class_map, warn_unpinned

__all__ = ["Input", "Inputs"]

#: A path argument that may be left out (`root`, `labels`).
PathArg = str | os.PathLike[str] | None


class Input:
    """The INPUT `input_path`: a local folder, video file, container or annotation list, found
    on disk, or at a URL (with its fsspec `storage_options`) a bucket folder, one object, or a
    list or manifest, found by one listing (`vidload._convert.inputs.find_inputs_at`)."""

    def __init__(self, input_path: str | os.PathLike[str], storage_options: Any = None) -> None:
        self.input_path = input_path
        self.source = Location(os.fspath(input_path), storage_options)

    def find(self, kinds: Sequence[str], *, root: PathArg, labels: PathArg) -> Inputs:
        """The inputs of `kinds`, labelled (`labels`: a folder INPUT's class map, refused
        for another INPUT; `root`: what a local annotation list's entries are relative to).

        Raises:
            FileNotFoundError: nothing there.
            ValueError: nothing of `kinds` there, `labels` for an INPUT that is not a
                folder, `root` for an INPUT URL (UsageError).
        """
        local = self.source.local_file()
        if local is None and root is not None:
            raise UsageError(f"root ({str(root)!r}) does not apply to an INPUT URL")
        base, items, listed = find_inputs_at(self.source, kinds, root=root)
        if local is not None:
            items, class_map = label_inputs(self.input_path, items, labels)
            return Inputs(base, items, class_map, listed)
        class_map = folder_labels(items, labels) if base == self.source else None
        if labels is not None and class_map is None:
            raise UsageError(f"labels ({str(labels)!r}) applies to a folder INPUT only")
        if class_map is not None:
            found = label_by_folder([it.video_id for it in items], class_map, where="labels")
            items = [replace(it, label=lab) for it, lab in zip(items, found, strict=True)]
        return Inputs(base, items, class_map, listed)


def folder_labels(
    items: Sequence[InputItem], labels: str | os.PathLike[str] | None
) -> dict[str, int] | None:
    """The class map of a folder INPUT's items (`vidload.labels.input_class_map`'s rule)."""
    if labels is not None:
        return read_class_map(labels)
    class_map = folder_class_map([it.video_id for it in items])
    if class_map:  # a bucket's class list files are not looked for; the order is checked
        warn_unpinned("the INPUT URL", class_map, None)
    return class_map or None
