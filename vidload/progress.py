"""A small dependency-free progress bar for the command-line tools: count, rate and ETA on stderr.

On a terminal the line is redrawn in place at most every `tty_interval` seconds; elsewhere (a log
file, CI) a plain line is printed at most every `log_interval` seconds, so logs stay short.
"""

from __future__ import annotations

import sys
import time
from contextlib import AbstractContextManager
from typing import TextIO

from vidload._checks import check_int


def format_duration(seconds: float) -> str:
    """`3725.0` -> `'1:02:05'`, `65.0` -> `'1:05'`."""
    if seconds != seconds or seconds < 0 or seconds == float("inf"):  # NaN, negative or infinite
        return "?"
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def format_bytes(n: float) -> str:
    """`1536` -> `'1.5 KiB'`."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


class Progress(AbstractContextManager["Progress"]):
    """Progress of `total` items, drawn on `stream` (default stderr).

    Use as a context manager, call `update()` once per finished item, and optionally
    `set_postfix(text)` for extra detail (e.g. frames per second). `enabled=False` draws nothing.
    """

    def __init__(
        self,
        total: int,
        *,
        desc: str = "",
        unit: str = "it",
        stream: TextIO | None = None,
        enabled: bool = True,
        tty_interval: float = 0.1,
        log_interval: float = 10.0,
    ) -> None:
        self.total = check_int("total", total, minimum=0)
        self.desc = desc
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.count = 0
        self.postfix = ""
        self._tty = self.stream.isatty()  # TextIO has it: io streams answer False
        self._interval = tty_interval if self._tty else log_interval
        self._start = time.perf_counter()
        self._last_draw = float("-inf")
        self._last_len = 0

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def elapsed(self) -> float:
        """Seconds since the bar started."""
        return time.perf_counter() - self._start

    def update(self, n: int = 1) -> None:
        """Count `n` more finished items and redraw if the interval has passed."""
        self.count += n
        now = time.perf_counter()
        if self.enabled and now - self._last_draw >= self._interval:
            self._draw(now)

    def set_postfix(self, text: str) -> None:
        """Extra text shown after the counts (drawn at the next redraw)."""
        self.postfix = text

    def line(self) -> str:
        """The current progress line, e.g. `convert  12/120  10%  3.1 video/s  ETA 0:35`."""
        elapsed = self.elapsed
        rate = self.count / elapsed if elapsed > 0 else 0.0
        parts = [self.desc] if self.desc else []
        width = len(str(self.total))
        parts.append(f"{self.count:>{width}}/{self.total}")
        if self.total:
            parts.append(f"{100 * self.count / self.total:3.0f}%")
        parts.append(f"{rate:.1f} {self.unit}/s")
        if self.count >= self.total:
            parts.append(f"in {format_duration(elapsed)}")
        else:
            eta = (self.total - self.count) / rate if rate > 0 else float("inf")
            parts.append(f"ETA {format_duration(eta)}")
        if self.postfix:
            parts.append(self.postfix)
        return "  ".join(parts)

    def _draw(self, now: float) -> None:
        self._last_draw = now
        text = self.line()
        if self._tty:
            pad = " " * max(0, self._last_len - len(text))
            self.stream.write("\r" + text + pad)
            self._last_len = len(text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """Draw the final state and end the line; once (the `with` block calls it)."""
        if not self.enabled:
            return
        self._draw(time.perf_counter())
        if self._tty:
            self.stream.write("\n")
            self.stream.flush()
