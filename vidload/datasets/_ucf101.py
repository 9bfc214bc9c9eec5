"""UCF101 as downloaded: `UCF101TrainTestSplits-RecognitionTask.zip` unpacks to
`ucfTrainTestlist/` with `classInd.txt` (`1 ApplyEyeMakeup` ... `101 YoYo`), `trainlist01.txt`
.. `03` (`ApplyEyeMakeup/v_ApplyEyeMakeup_g08_c01.avi 1`: labels 1-based) and `testlist01.txt`
.. `03` (paths only); `UCF101.rar` unpacks to `UCF-101/<class>/<video>.avi`. The files have CRLF
line ends.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from vidload._lists import VideoEntry
from vidload._official import UCF101_CLASS_INDEX
from vidload.datasets._common import (
    DatasetList,
    check_split,
    class_numbering,
    split_lines,
)
from vidload.labels import class_of, read_numbered_classes
from vidload.sources.base import normalize_video_id


def ucf101(
    annotations_dir: str | os.PathLike[str],
    *,
    split: int = 1,
    subset: Literal["train", "test"] = "train",
    classes: list[str] | tuple[str, ...] | str | os.PathLike[str] | None = None,
) -> DatasetList:
    """The videos of one UCF101 split, labelled 0..100 by `classInd.txt` (its number - 1).

    Args:
        annotations_dir: the unpacked `ucfTrainTestlist/` folder.
        split: 1, 2 or 3: reads `trainlist0N.txt` / `testlist0N.txt`.
        subset: "train" or "test".
        classes: pins the numbering instead of `classInd.txt`: class names in label order,
            or a class file (a name per line, or numbered `N name` lines).

    Ids are the lists' paths (`ApplyEyeMakeup/v_ApplyEyeMakeup_g08_c01.avi`), relative to the
    `UCF-101/` folder. A train list's label must agree with `classInd.txt`'s number of the
    video's class folder; a test list's videos get the label of their class folder.

    Raises:
        FileNotFoundError: `classInd.txt` or the split's list is not there (named).
        ValueError: a line whose class folder `classInd.txt` does not name, or whose label
            disagrees with it (file and line named).
    """
    split, chosen = check_split(split, subset)
    folder = Path(annotations_dir)
    index_path = folder / UCF101_CLASS_INDEX
    index = read_numbered_classes([ln for _, ln in split_lines(index_path)], where=str(index_path))
    numbering, names = class_numbering(sorted(index, key=index.__getitem__), classes, str(folder))
    path = folder / f"{chosen}list{split:02d}.txt"
    entries = []
    for line_no, line in split_lines(path):
        where = f"{path}:{line_no}"
        fields = line.rsplit(None, 1)
        given: int | None = None
        if len(fields) == 2 and fields[1].lstrip("-").isdigit():
            given = int(fields[1])
            line = fields[0]
        vid = normalize_video_id(line)
        name = class_of(vid)
        if name is None or name not in index:
            raise ValueError(
                f"{where}: {vid!r} is not in a class folder named in {UCF101_CLASS_INDEX}"
            )
        if given is not None and given - 1 != index[name]:
            raise ValueError(
                f"{where}: {vid!r} has label {given}, but {UCF101_CLASS_INDEX} numbers its "
                f"class {name!r} {index[name] + 1}"
            )
        entries.append(VideoEntry(vid, numbering[name]))
    return DatasetList(entries, names)
