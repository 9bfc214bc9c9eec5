"""Something-Something v2 as downloaded: `something-something-v2-labels.json` (`{"Approaching
something with your camera": "0", ...}`: 174 templates, ids as strings),
`something-something-v2-{train,validation,test}.json` (`[{"id": "78687", "label": "holding potato
next to vicks vaporub bottle", "template": "Holding [something] next to [something]",
"placeholders": [...]}, ...]`; the test file has ids only) and the videos `<id>.webm` in one
folder.
"""

from __future__ import annotations

import os

from vidload._lists import VideoEntry, parse_json, read_file
from vidload.datasets._common import DatasetList


def ssv2(
    labels_json: str | os.PathLike[str], annotations_json: str | os.PathLike[str]
) -> DatasetList:
    """The videos of an SSv2 annotation file, labelled by their template.

    A video's label is the labels JSON's number for its `template` with the brackets removed
    ("Holding [something] next to [something]" -> "Holding something next to something"), as
    the official code does; `classes` lists the templates in label order. Entries without a
    template (the test file) are unlabelled (-1). Ids are `<id>.webm`.

    Raises:
        ValueError: a labels file whose numbers are not 0..N-1, or an entry without an id or
            whose template the labels file does not name (file and entry named).
    """
    labels = parse_json(read_file(labels_json)[1], labels_json)
    if not isinstance(labels, dict):
        raise ValueError(f"{labels_json}: the labels JSON is an object {{template: number}}")
    try:
        numbering = {str(name): int(k) for name, k in labels.items()}
    except (TypeError, ValueError) as e:
        raise ValueError(f"{labels_json}: a label is not a number: {e}") from e
    if sorted(numbering.values()) != list(range(len(numbering))):
        raise ValueError(f"{labels_json}: the labels must be 0..{len(numbering) - 1}, each once")
    names = sorted(numbering, key=numbering.__getitem__)
    items = parse_json(read_file(annotations_json)[1], annotations_json)
    if not isinstance(items, list):
        raise ValueError(f"{annotations_json}: the annotations JSON is a list of objects")
    entries = []
    for k, item in enumerate(items):
        where = f"{annotations_json}: entry {k}"
        if not isinstance(item, dict) or "id" not in item:
            raise ValueError(f"{where}: {item!r} has no 'id'")
        template = item.get("template")
        if template is None:
            label = -1
        else:
            key = str(template).replace("[", "").replace("]", "")
            if key not in numbering:
                raise ValueError(f"{where}: template {key!r} is not in {labels_json}")
            label = numbering[key]
        entries.append(VideoEntry(f"{item['id']}.webm", label))
    return DatasetList(entries, names)
