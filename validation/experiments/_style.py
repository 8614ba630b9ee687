"""Plot style shared by every figure: one color per language across all figures, Agg backend."""

from __future__ import annotations

from typing import Any, Sequence

import matplotlib

matplotlib.use("Agg")  # the report runs headless; must precede pyplot

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

__all__ = ["plt", "language_color", "new_figure", "band", "band_ci", "legend", "Z95", "length_styles"]

Z95 = 1.959963984540054  # two-sided 95% normal quantile for +-Z*stderr bands

_BASE_COLORS = {
    "2gram": "#1f77b4",
    "3gram": "#ff7f0e",
    "4gram": "#2ca02c",
    "hmm": "#d62728",
    "interval": "#9467bd",
    "learned": "#8c564b",
    "ar": "#e377c2",
}
_FALLBACK = ["#7f7f7f", "#bcbd22", "#17becf", "#aec7e8", "#ffbb78"]


def language_color(name: str) -> str:
    """The color of a language in every figure: ``2gram`` and ``2gram-pruned`` share one hue."""
    base = name.split("-pruned")[0]
    if base.startswith("interval"):
        base = "interval"
    if base in _BASE_COLORS:
        return _BASE_COLORS[base]
    return _FALLBACK[sum(map(ord, base)) % len(_FALLBACK)]


def length_styles(lengths: Sequence[int]) -> dict[int, dict[str, Any]]:
    """Line styles/markers distinguishing sequence lengths inside one language's color."""
    markers = ["o", "s", "^", "D", "v", "P", "X", "*"]
    dashes = ["-", "--", "-.", ":"]
    return {
        int(L): {"marker": markers[k % len(markers)], "linestyle": dashes[k % len(dashes)],
                 "alpha": 0.55 + 0.45 * (k + 1) / len(lengths)}
        for k, L in enumerate(sorted(lengths))
    }


def new_figure(ncols: int = 1, nrows: int = 1, width: float = 4.2, height: float = 3.3, **kw: Any):
    """A figure with ``nrows x ncols`` axes (always a 2-D array) and constrained layout."""
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows),
                             squeeze=False, layout="constrained", **kw)
    return fig, axes


def band(ax: Any, x: Sequence[float], y: Sequence[float], se: Sequence[float] | None, color: str,
         label: str | None = None, **line_kw: Any) -> None:
    """A line with a shaded 95% normal band ``y +- 1.96 se`` (no band where se is 0 or missing)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    ax.plot(x, y, color=color, label=label, **line_kw)
    if se is not None:
        s = np.asarray([np.nan if v is None else v for v in se], dtype=float)
        if np.any(s > 0):
            lo = y - Z95 * s
            if ax.get_yscale() == "log":  # a band reaching 0 or below is drawn down to y / 20
                lo = np.maximum(lo, y / 20)
            ax.fill_between(x, lo, y + Z95 * s, color=color, alpha=0.18, linewidth=0)


def band_ci(ax: Any, x: Sequence[float], y: Sequence[float], lo: Sequence[float | None],
            hi: Sequence[float | None], color: str, label: str | None = None, **line_kw: Any) -> None:
    """A line with a shaded band between given interval limits (skipped where a limit is missing)."""
    ax.plot(x, y, color=color, label=label, **line_kw)
    pts = [(a, b, c) for a, b, c in zip(x, lo, hi) if b is not None and c is not None
           and np.isfinite(b) and np.isfinite(c)]
    if pts:
        xs, los, his = zip(*pts)
        ax.fill_between(xs, los, his, color=color, alpha=0.18, linewidth=0)


def legend(ax: Any, **kw: Any) -> None:
    """``ax.legend(**kw)`` when something is labelled (matplotlib warns on an empty legend)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(**kw)
