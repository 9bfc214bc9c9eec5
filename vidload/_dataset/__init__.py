"""ClipDataset's private parts (`vidload.dataset` is the public module).

options:  ClipOptions, every option checked once, and a clip's frame indices drawn from them
          (the sampling functions, fps, windows); the video list checked against them.
entries:  the video list in flat arrays (VideoEntries), shared with workers without copies.
containers: the root's manifest's container names handed to the source, and missing='error'
          |'skip': the listed videos not in the source, found when built.
counts:   the count to sample from, and what short reads teach (shared by every worker).
items:    frames into what the collate batches: tensors, labels, info, errors in context.
batch:    __getitems__: a batch's reads in one concurrent round, then each item as __getitem__;
          the next batch's round sent while this one decodes.
"""
