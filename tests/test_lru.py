"""vidload._lru.ProcessLRU: the per-process cache of open handles every source keeps."""

from __future__ import annotations

import os
import pickle

import pytest

from vidload._lru import ProcessLRU

CLOSED: list[str] = []


def close(value: str) -> None:
    CLOSED.append(value)


@pytest.fixture(autouse=True)
def _clear_closed():
    CLOSED.clear()


def test_least_recently_used_is_evicted_and_closed():
    lru: ProcessLRU[str, str] = ProcessLRU(2, close)
    assert lru.put("a", "A") and lru.put("b", "B")
    assert lru.get("a") == "A"  # now "b" is the least recently used
    lru.put("c", "C")
    assert list(lru) == ["a", "c"] and CLOSED == ["B"]
    assert lru.get("b") is None


def test_replacing_discarding_and_clearing_close_the_entries():
    lru: ProcessLRU[str, str] = ProcessLRU(None, close)
    for key in "abc":
        lru.put(key, key.upper())
    lru.put("a", "A2")
    lru.put("a", "A2")  # the same value again is not closed
    lru.discard("b")
    lru.discard("missing")
    assert CLOSED == ["A", "B"] and lru.items() == [("c", "C"), ("a", "A2")]
    lru.clear()
    assert sorted(CLOSED) == ["A", "A2", "B", "C"] and len(lru) == 0


def test_capacity_zero_keeps_nothing_and_leaves_the_value_to_the_caller():
    lru: ProcessLRU[str, str] = ProcessLRU(0, close)
    assert lru.put("a", "A") is False
    assert len(lru) == 0 and CLOSED == []


def test_entries_of_another_process_are_dropped_never_closed():
    lru: ProcessLRU[str, str] = ProcessLRU(4, close)
    lru.put("a", "A")
    lru._pid = -1  # as in a child forked after "a" was opened
    assert lru.get("a") is None and len(lru) == 0
    lru.put("b", "B")
    lru.clear()
    assert CLOSED == ["B"]


def test_a_real_fork_starts_empty():
    lru: ProcessLRU[str, str] = ProcessLRU(4, close)
    lru.put("a", "A")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report what it sees, without running pytest's teardown
        seen = f"{len(lru)} {lru.get('a')} {len(CLOSED)}"
        os.write(write, seen.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        seen = f.read()
    os.waitpid(pid, 0)
    assert seen == "0 None 0"
    assert lru.get("a") == "A"  # the parent's entry is untouched


def test_pickles_empty_with_its_settings():
    lru: ProcessLRU[str, str] = ProcessLRU(3, close)
    lru.put("a", "A")
    copy = pickle.loads(pickle.dumps(lru))
    assert len(copy) == 0 and copy.capacity == 3
    copy.put("b", "B")
    copy.clear()
    assert CLOSED == ["B"]


def test_capacity_is_checked():
    with pytest.raises(ValueError, match=r"capacity \(-1\) must be >= 0"):
        ProcessLRU(-1)
    with pytest.raises(TypeError, match="capacity must be an int or None"):
        ProcessLRU(True)


def test_entries_of_another_process_can_be_handed_over():
    parked: list[str] = []
    lru: ProcessLRU[str, str] = ProcessLRU(4, close, inherited=parked.append)
    lru.put("a", "A")
    lru._pid = -1
    assert len(lru) == 0 and parked == ["A"] and CLOSED == []


def test_get_or_make_makes_once_and_keeps_it():
    made: list[str] = []
    lru: ProcessLRU[str, str] = ProcessLRU(1, close)
    assert lru.get_or_make("a", lambda: made.append("A") or "A") == "A"
    assert lru.get_or_make("a", lambda: made.append("A2") or "A2") == "A"
    assert made == ["A"]
    assert lru.get_or_make("b", lambda: "B") == "B" and CLOSED == ["A"]  # capacity 1


def test_get_or_make_with_a_lock_makes_a_miss_under_it():
    import threading

    lock = threading.Lock()
    lru: ProcessLRU[str, str] = ProcessLRU(None)

    def make() -> str:
        assert lock.locked()
        return "A"

    assert lru.get_or_make("a", make, lock) == "A"
    assert lru.get_or_make("a", lambda: "B", lock) == "A" and not lock.locked()
