"""Reusable uint8 memory for arrays that never leave vidload: a clip decoded only to be copied
into its tensor, or decoded at a reduced scale only to be resized.

Why: glibc serves a multi-MB `np.empty` from the heap once a block that size has been freed
(its mmap threshold follows the largest block freed), but when a clip's decoded array and its
tensor, ~2 MB each for 8 frames of 340x256, are freed together, the free top of the heap exceeds
the trim threshold (twice the mmap threshold) and goes back to the kernel, so the next item
faults every page in again on first write: ~980 minor faults per item. With the decode in
memory kept here, only the tensor is allocated per item and the heap keeps it: a full-size
`ClipDataset` item of 8 frames took 2.4-2.6 ms of CPU instead of 4.1-4.3 ms (~0 faults instead
of ~980) for each container source; with short_side=128, crop=112 both ways cost the same
(~2.1 ms, no faults either way). `python tools/read_paths.py --only items` measures both. In
DataLoader workers nothing changes (~5.5 ms of worker CPU per full-size item, either way): a
worker holds a whole batch of item tensors before the collate, and the batch itself is new
shared memory, so those pages fault whatever the decode writes into. (The cause was checked
by tuning glibc instead: with `MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=268435456`
the old path also ran at 2.4 ms with no faults; vidload does not tune the process's allocator.)

Cost: each thread that reads keeps a buffer the size of the largest clip it decoded (2 MB for
8 frames of 340x256, 50 MB for 8 frames of 1920x1080), for the life of the process.

A `Scratch` holds one buffer per thread (`threading.local`), so threads never share one, and
per process: a fork child (a DataLoader worker) finds the pid changed and starts its own rather
than writing into pages copied from the parent. An array from `Scratch.array` is valid until the
same thread asks the same `Scratch` again; it is never returned to a caller of vidload's public
functions.
"""

from __future__ import annotations

import math
import os
import threading

import numpy as np

__all__ = ["Scratch"]


class Scratch:
    """One growable uint8 buffer per (process, thread); see the module docstring."""

    def __init__(self) -> None:
        self._local = threading.local()

    def array(self, shape: tuple[int, ...]) -> np.ndarray:
        """A C-contiguous uint8 array of `shape` on this thread's buffer (contents undefined),
        overwritten by this thread's next call. The buffer grows to the largest size asked
        for and is kept."""
        n = math.prod(shape)
        local = self._local
        buf: np.ndarray | None = getattr(local, "buf", None)
        pid = os.getpid()
        if buf is None or local.pid != pid or buf.size < n:
            buf = np.empty(n, np.uint8)
            local.buf, local.pid = buf, pid
        return buf[:n].reshape(shape)

    def __reduce__(self) -> tuple[type[Scratch], tuple[()]]:
        return Scratch, ()  # pickles empty: the buffer never crosses a process boundary
