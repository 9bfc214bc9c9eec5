"""matplotlib for `--plot` (bench's bars, choose's frontier), imported only when a chart is
drawn, on the Agg backend (no display needed), with one error naming the extra to install."""

from __future__ import annotations


def pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise RuntimeError(
            "--plot needs matplotlib, which is not installed: pip install matplotlib "
            "(or pip install 'vidload[plot]')"
        ) from e
    return plt


def check_plotting() -> None:
    """Raise RuntimeError now, before a long run, if `plot` would fail for lack of matplotlib."""
    pyplot()
