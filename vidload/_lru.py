"""The per-process LRU cache of open handles (and other per-process state) the sources keep.

Sources are picklable and open files lazily, in the process that reads (STYLE.md, habit 5). A
`ProcessLRU` is the one place that rule is kept:

- it belongs to the process that filled it: the first call in another process (a forked
  DataLoader worker, or an unpickled copy) finds it empty. The parent's entries are never
  closed nor used there: an inherited file shares its offset with the parent, and an
  inherited decoder's threads do not exist in the child. They are dropped, or handed to
  `inherited` (`sources.video` parks them, unfreed: freeing such a decoder hangs);
- an entry evicted, replaced, discarded or cleared in its own process is closed at once
  (`close`, when given), so no open file waits for the garbage collector;
- it pickles empty (its settings only).

Not thread-safe, as the sources that use it are not; an unbounded one's `get_or_make` may be
called from several threads (a per-process memo: each step is one dict operation, and a key
never leaves it), where two threads that miss one key both make it and the second is kept.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import AbstractContextManager, nullcontext
from typing import Generic, TypeVar

from vidload._checks import check_optional_int

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

__all__ = ["ProcessLRU"]


class ProcessLRU(Generic[K, V]):
    """At most `capacity` entries of this process, least recently used evicted first.

    Args:
        capacity: entries kept; 0 keeps none (see `put`); None: unbounded.
        close: called on an entry that leaves the cache in the process that put it there.
        inherited: called, in a forked child, on each entry the parent left (instead of
            `close`); None drops them.

    The functions are pickled with the cache: module-level ones.
    """

    def __init__(
        self,
        capacity: int | None,
        close: Callable[[V], object] | None = None,
        *,
        inherited: Callable[[V], object] | None = None,
    ) -> None:
        self.capacity = check_optional_int("capacity", capacity, minimum=0)
        self._close = close
        self._inherited = inherited
        self._pid = os.getpid()
        self._entries: OrderedDict[K, V] = OrderedDict()

    def __getstate__(self) -> dict[str, object]:
        return {"capacity": self.capacity, "_close": self._close, "_inherited": self._inherited}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._pid = os.getpid()
        self._entries = OrderedDict()

    def _own(self) -> OrderedDict[K, V]:
        """This process's entries (a fresh, empty table after a fork)."""
        if self._pid != os.getpid():
            parents, self._entries = self._entries, OrderedDict()
            self._pid = os.getpid()
            if self._inherited is not None:
                for value in parents.values():
                    self._inherited(value)
        return self._entries

    def __len__(self) -> int:
        return len(self._own())

    def __iter__(self) -> Iterator[K]:
        """The keys, least recently used first."""
        return iter(list(self._own()))

    def items(self) -> list[tuple[K, V]]:
        """(key, entry) pairs, least recently used first (a list: safe to change the cache)."""
        return list(self._own().items())

    def values(self) -> list[V]:
        """The entries, least recently used first."""
        return list(self._own().values())

    def get(self, key: K) -> V | None:
        """The entry of `key`, marked most recently used; None when absent."""
        entries = self._own()
        value = entries.get(key)
        if value is not None:
            entries.move_to_end(key)
        return value

    def get_or_make(
        self, key: K, make: Callable[[], V], lock: AbstractContextManager[object] | None = None
    ) -> V:
        """The entry of `key` (`get`), else `make()` kept under it (`put`) and returned; with
        `lock`, a miss is checked again and made under it (one thread makes it)."""
        value = self.get(key)
        if value is None:
            with lock or nullcontext():
                value = self.get(key)
                if value is None:
                    value = make()
                    self.put(key, value)
        return value

    def put(self, key: K, value: V) -> bool:
        """Keep `value` under `key` (closing an entry it replaces, then the least recently
        used beyond `capacity`); False when `capacity` is 0 and nothing was kept: the caller
        still owns `value` and closes it after use."""
        entries = self._own()
        if self.capacity == 0:
            return False
        old = entries.get(key)
        entries[key] = value  # replaced in place: a key present stays present (`get_or_make`)
        entries.move_to_end(key)
        if old is not None and old is not value:
            self._closing(old)
        if self.capacity is not None:
            while len(entries) > self.capacity:
                _, evicted = entries.popitem(last=False)
                self._closing(evicted)
        return True

    def discard(self, key: K) -> None:
        """Remove (and close) the entry of `key`, if any."""
        value = self._own().pop(key, None)
        if value is not None:
            self._closing(value)

    def clear(self) -> None:
        """Remove and close every entry of this process."""
        entries = self._own()
        while entries:
            _, value = entries.popitem()
            self._closing(value)

    def _closing(self, value: V) -> None:
        if self._close is not None:
            self._close(value)
