"""Named numpy arrays shared with DataLoader workers: `SharedArrays`.

A plain `pickle` copies the arrays (an object saved to a file keeps them); `multiprocessing`'s
`ForkingPickler` (what a `spawn` or `forkserver` DataLoader worker is started with, with torch's
reductions registered) moves them once into shared-memory tensors and sends their handles, so
each spawned worker maps the same pages instead of unpickling its own copy. A forked worker
shares them anyway: numpy arrays have one object header each and their data pages are only read.

Apart from the video list (`vidload._dataset.entries`, its columns) because the learned frame counts
(`vidload._dataset.counts`) keep their index arrays the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from multiprocessing.reduction import ForkingPickler
from typing import Any

import numpy as np
import torch
import torch.multiprocessing  # noqa: F401  (registers torch's tensor reductions with ForkingPickler)

__all__ = ["SharedArrays"]


class SharedArrays:
    """Named numpy arrays. `pickle` copies them; `ForkingPickler` sends shared-memory handles.

    The first `ForkingPickler` pickling copies every array into a shared-memory torch tensor
    (`Tensor.share_memory_`) and from then on reads through numpy views of those tensors, so
    the memory is not held twice and later picklings send the same handles. The receiver's
    arrays are views of the same shared pages.
    """

    __slots__ = ("_arrays", "_shared")

    def __init__(self, arrays: Mapping[str, np.ndarray]) -> None:
        self._arrays = {name: np.ascontiguousarray(a) for name, a in arrays.items()}
        self._shared: dict[str, torch.Tensor] | None = None

    def __getitem__(self, name: str) -> np.ndarray:
        return self._arrays[name]

    def __contains__(self, name: object) -> bool:
        return name in self._arrays

    def get(self, name: str) -> np.ndarray | None:
        return self._arrays.get(name)

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays."""
        return sum(a.nbytes for a in self._arrays.values())

    def __getstate__(self) -> dict[str, np.ndarray]:
        return dict(self._arrays)

    def __setstate__(self, state: dict[str, np.ndarray]) -> None:
        self._arrays = dict(state)
        self._shared = None

    def shared(self) -> dict[str, torch.Tensor]:
        """The arrays as shared-memory tensors (moved there on the first call)."""
        if self._shared is None:
            tensors = {
                name: torch.from_numpy(np.array(a, copy=True)).share_memory_()
                for name, a in self._arrays.items()
            }
            self._arrays = {name: t.numpy() for name, t in tensors.items()}
            self._shared = tensors
        return self._shared


def _from_shared(tensors: dict[str, torch.Tensor]) -> SharedArrays:
    arrays = SharedArrays.__new__(SharedArrays)
    arrays._arrays = {name: t.numpy() for name, t in tensors.items()}
    arrays._shared = tensors
    return arrays


def _reduce_shared(arrays: SharedArrays) -> tuple[Any, tuple[dict[str, torch.Tensor]]]:
    return _from_shared, (arrays.shared(),)


ForkingPickler.register(SharedArrays, _reduce_shared)
