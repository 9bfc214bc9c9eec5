"""The pieces behind `vidload choose` (private; the public entry point is `vidload.choose`).

storages: the candidate storages (`StorageSpec`), building each with `vidload.convert` and its
          conversion CPU time, and the source that reads it.
frontier: which rows no other row beats, and the smallest storage that meets a need.
measure:  the sample, the clips, PSNR against the original decode, warm and cold timings.
report:   the table and the plot.
"""
