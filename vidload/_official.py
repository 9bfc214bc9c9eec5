"""Never a silently wrong label: official split files read through the generic list path.

UCF101's `trainlist0N.txt` is a `path label` list with labels 1..101; read as an mmaction2 list,
its last class is out of range (a device-side assert on the GPU) and every other one shifted by
one (a smaller model trains on it silently). An HMDB51 `<class>_test_split<N>.txt` file is a
`video tag` list whose tags (1 train, 2 test, 0 unused) would become labels. Both have shapes the
generic reader can recognise; it refuses them naming the reader that reads them right
(`vidload.datasets`). Any other list whose labels run from 1 with no 0 (a renamed or
concatenated trainlist, a 1-based manifest) is read as given, with a warning.

The refusal is an `OfficialFileError`: what the file is, and the reader call that reads it, so
the command line can say what to do from the shell instead (`vidload._commands.args`).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence

from vidload._storage import Location
from vidload.errors import OneBasedLabelsWarning

#: UCF101's class index file, beside its split lists in `ucfTrainTestlist/`.
UCF101_CLASS_INDEX = "classInd.txt"
#: An HMDB51 split file's name, `<class>_test_split<N>.txt`: `vidload.datasets.hmdb51` reads them.
HMDB51_SPLIT = re.compile(r"^(?P<cls>.+)_test_split(?P<n>\d+)\.txt$")
_UCF101_LIST = re.compile(r"^(train|test)list0?(?P<n>\d+)\.txt$", re.IGNORECASE)


class OfficialFileError(ValueError):
    """An official dataset file read as a plain annotation list.

    Attributes:
        what: what the file is and why it cannot be read as a list (file named).
        call: the `vidload.datasets` call that reads it right (`ucf101('ann', split=1, ...)`).
        reader: the reader's name (`ucf101`).
        labels: where the official numbering comes from for a class folder tree
            (`ann/classInd.txt`: `--labels` takes it), "" where the sorted class folders give
            it, None where a tree does not (Kinetics, SSv2).
    """

    def __init__(self, what: str, call: str, after: str = "", labels: str | None = None) -> None:
        self.what, self.call, self.labels = what, call, labels
        self.reader = call.partition("(")[0]
        super().__init__(f"{what}. Read it with vidload.datasets.{call}{after}")

    def __reduce__(self):  # a plain ValueError's message across a process boundary
        return (ValueError, (str(self),))


def _beside(path: Location, name: str) -> bool:
    if path.over_network:
        return False  # one request more per list read; the shape checks below still apply
    return (path.parent / name).is_file()


def _ucf101_call(path: Location, subset: str) -> str:
    """The `ucf101(...)` call that reads the UCF101 split list `path` (split 1 unless its name
    gives one)."""
    n = _UCF101_LIST.match(path.name)
    return f"ucf101({str(path.parent)!r}, split={n['n'] if n else '1'}, subset={subset!r})"


def check_plain_list(path: Location, entries: Sequence) -> None:
    """Refuse a plain list that is an official split file (see the module docstring).

    Raises:
        ValueError: labels 1..N with no 0 and UCF101's `classInd.txt` beside the list; every
            label in {0, 1, 2} in a file named `<class>_test_split<N>.txt` (HMDB51).
    """
    labels = {e.label for e in entries}
    hmdb = HMDB51_SPLIT.match(path.name)
    if hmdb and labels and labels <= {0, 1, 2}:
        raise OfficialFileError(
            f"{path}: an HMDB51 split file ({hmdb['cls']!r}, split {hmdb['n']}): its numbers "
            f"are split tags (1 train, 2 test, 0 unused), not labels",
            f"hmdb51({str(path.parent)!r}, split={hmdb['n']}, subset='train')",
            labels="",
        )
    if labels and min(labels) == 1 and _beside(path, UCF101_CLASS_INDEX):
        raise OfficialFileError(
            f"{path}: labels run from 1 (1..{max(labels)}, no 0) and {UCF101_CLASS_INDEX} is "
            f"beside it: a UCF101 split list, whose labels are 1-based",
            _ucf101_call(path, "train"),
            f", which numbers the classes 0..N-1 by {UCF101_CLASS_INDEX}",
            labels=str(path.parent / UCF101_CLASS_INDEX),
        )


def check_kinetics_csv(path: Location, first: str) -> None:
    """Refuse a Kinetics CSV (`label,youtube_id,time_start,time_end,...`) read as a list
    (`first`: the list's first line).

    Raises:
        ValueError: its header names `youtube_id` and `time_start`, naming the reader.
    """
    if "youtube_id" in first and "time_start" in first:
        raise OfficialFileError(
            f"{path}: a Kinetics CSV ({first.strip()!r}), not an annotation list: its rows "
            f"name YouTube segments, not files",
            f"kinetics({str(path)!r}, root=VIDEOS)",
            ", which finds the downloaded files and counts the missing ones",
        )


def json_list_error(error: Exception, text: str) -> ValueError:
    """The error for a JSON list that `error` refused: an `OfficialFileError` naming
    `ssv2()` when the file is Something-Something v2's, else `error`'s message."""
    head = text.lstrip()[:4096]
    call = "ssv2(LABELS_JSON, ANNOTATIONS_JSON)"
    if '"template"' in head or (head.startswith("[") and '"id"' in head):
        return OfficialFileError(
            f"{error}. This looks like a Something-Something v2 annotation file", call
        )
    if head.startswith("{"):
        return OfficialFileError(
            f"{error}. A JSON object: if it is Something-Something v2's labels file, it is "
            "read with its annotations",
            call,
        )
    return ValueError(str(error))


def line_error(path: Location, line_no: int, error: Exception) -> ValueError:
    """The error for line `line_no` of a list that `error` refused: an `OfficialFileError`
    naming `ucf101(subset='test')` for a line without a label in UCF101's `testlist0N.txt`
    (paths only, `classInd.txt` beside it), else the line's error."""
    where = f"{path}:{line_no}: {error}"
    if "has no label" not in str(error) or not _beside(path, UCF101_CLASS_INDEX):
        return ValueError(where)
    return OfficialFileError(
        f"{where}. {UCF101_CLASS_INDEX} is beside it: a UCF101 test list, labelled by its "
        "class folders",
        _ucf101_call(path, "test"),
        labels=str(path.parent / UCF101_CLASS_INDEX),
    )


def warn_one_based(entries: Sequence, where: str) -> None:
    """Warn (`OneBasedLabelsWarning`) when the labels (two or more distinct ones) run from
    1 with no 0."""
    if any(e.labels is not None for e in entries):
        return  # multi-label: label 0 absent from every line is common and no sign of a base
    warn_one_based_labels(
        {e.label for e in entries if e.label >= 0}, where, stacklevel=6
    )  # ClipDataset -> entries_of -> load_videos -> here


def warn_one_based_labels(labels: set[int], where: str, *, stacklevel: int) -> None:
    """`warn_one_based` for the distinct labels >= 0 of a single-label list (`stacklevel`
    as `warnings.warn` counts it from here)."""
    if len(labels) > 1 and min(labels) == 1:
        warnings.warn(
            f"{where}: labels run from 1 to {max(labels)} with no 0: is this a 1-based list "
            f"(UCF101's trainlist, a classInd numbering)? Labels must start at 0 for "
            f"cross_entropy; vidload.datasets reads the official files with 0-based labels",
            OneBasedLabelsWarning,
            stacklevel=stacklevel,
        )
