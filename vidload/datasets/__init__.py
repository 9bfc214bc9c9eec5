"""Datasets as they are downloaded: the official UCF101, HMDB51, Kinetics and
Something-Something v2 files, and the window datasets EPIC-KITCHENS-100 and Charades, read in one
line, with 0-based labels that are never silently wrong.

```python
from vidload.datasets import ucf101, hmdb51, kinetics, ssv2

train = ucf101("ucfTrainTestlist", split=1, subset="train")   # a DatasetList of VideoEntry
ds = ClipDataset(train, VideoSource("UCF-101"), num_frames=8)
train.classes[0]                                              # 'ApplyEyeMakeup'
```

Each reader returns a `DatasetList`: a list of `VideoEntry` (ids relative to the videos' root)
with `.classes` (names in label order) and `.missing` (Kinetics: rows whose video is not under
the root). EPIC-KITCHENS-100's and Charades' entries are windows of their videos. The docs'
"Datasets" guide shows each download layout and its conversion.
"""

from vidload.datasets._charades import charades
from vidload.datasets._common import DatasetList
from vidload.datasets._epic_kitchens import epic_kitchens
from vidload.datasets._hmdb51 import hmdb51
from vidload.datasets._kinetics import kinetics
from vidload.datasets._ssv2 import ssv2
from vidload.datasets._ucf101 import ucf101

__all__ = ["DatasetList", "charades", "epic_kitchens", "hmdb51", "kinetics", "ssv2", "ucf101"]
