"""Plot style shared by every figure: one color per language across all figures, Agg backend."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import matplotlib

matplotlib.use("Agg")  # the report runs headless; must precede pyplot

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ._base import Z95  # noqa: E402  (re-exported: the 95% bands of every figure)

__all__ = ["plt", "language_color", "new_figure", "panel_grid", "band", "band_ci", "legend", "figure_legend",
           "length_handles", "legend_key", "log_ticks", "Z95", "length_styles",
           "Panel", "language_panels"]


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


_ASSIGNED: dict[str, str] = {}  # languages outside _BASE_COLORS, in the order the figures met them


def _darker(color: str, by: float = 0.4) -> str:
    r, g, b = (int(color[k:k + 2], 16) for k in (1, 3, 5))
    return "#" + "".join(f"{int(c * (1 - by)):02x}" for c in (r, g, b))


def language_color(name: str) -> str:
    """The color of a language in every figure, a distinct one per language.

    ``2gram-pruned`` is a darker shade of ``2gram``'s hue (one family, two colors); the interval
    language's variants share its hue; any other language takes the next unused fallback color
    (not a hash, which let two languages collide).
    """
    pruned = "-pruned" in name
    base = name.split("-pruned")[0]
    if base.startswith("interval"):
        base = "interval"
    if base in _BASE_COLORS:
        color = _BASE_COLORS[base]
    else:
        if base not in _ASSIGNED:
            used = set(_ASSIGNED.values())
            _ASSIGNED[base] = next((c for c in _FALLBACK if c not in used), _FALLBACK[len(_ASSIGNED) % len(_FALLBACK)])
        color = _ASSIGNED[base]
    return _darker(color) if pruned else color


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
    """A line with a shaded band between given interval limits (skipped where a limit is missing).

    Points whose value is not a finite number (an infinite perplexity) are left out of the line;
    the tables show them.
    """
    keep = [k for k, v in enumerate(y) if v is not None and np.isfinite(v)]
    dropped = [(x[k], y[k]) for k in range(len(y)) if k not in keep]
    if dropped:  # said in the panel, so an empty-looking panel is not mistaken for "no data"
        ax.text(0.03, 0.03 + 0.07 * len(ax.texts), f"{label or 'curve'}:\n{_describe(dropped)}",
                transform=ax.transAxes, fontsize=6.5, color=color, ha="left", va="bottom")
    x, y, lo, hi = ([seq[k] for k in keep] for seq in (x, y, lo, hi))
    if not keep:
        return
    ax.plot(x, y, color=color, label=label, **line_kw)
    pts = [(a, b, c) for a, b, c in zip(x, lo, hi) if b is not None and c is not None
           and np.isfinite(b) and np.isfinite(c)]
    if pts:
        xs, los, his = zip(*pts)
        ax.fill_between(xs, los, his, color=color, alpha=0.18, linewidth=0)


def _describe(points: list[tuple[Any, Any]]) -> str:
    """``"infinite at N = 1, 2, not drawn"`` for points whose value is not finite."""
    kinds = {("infinite" if v is not None and np.isinf(v) else "undefined") for _, v in points}
    return f"{' or '.join(sorted(kinds))} at N = {', '.join(str(n) for n, _ in points)}, not drawn"


def legend(ax: Any, **kw: Any) -> None:
    """The axes' legend outside the axes, to their right, so it never covers data.

    Nothing is drawn when nothing is labelled (matplotlib warns on an empty legend). A ``loc``
    in ``kw`` places it as given instead.
    """
    if not ax.get_legend_handles_labels()[0]:
        return
    if "loc" not in kw:
        kw.update(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    ax.legend(**kw)


def figure_legend(fig: Any, axes: Any, extra: Sequence[Any] = (), ncol: int = 4, **kw: Any) -> None:
    """One legend below all panels of ``fig``: the labelled artists of ``axes`` (each label once)
    and the ``extra`` handles. Panels keep all of their area for the data."""
    handles: dict[str, Any] = {}
    for ax in np.ravel(axes):
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if not lab.startswith("_"):
                handles.setdefault(lab, h)
    for h in extra:
        handles.setdefault(h.get_label(), h)
    if handles:
        fig.legend(list(handles.values()), list(handles), loc="outside lower center",
                   ncol=min(ncol, len(handles)), fontsize=kw.pop("fontsize", 8), frameon=False, **kw)


def legend_key(label: str, **style: Any) -> Any:
    """A legend entry drawn with ``style`` (a line, a marker) that plots nothing."""
    from matplotlib.lines import Line2D

    return Line2D([], [], label=label, **style)


def length_handles(lengths: Sequence[int], styles: dict[int, dict[str, Any]]) -> list[Any]:
    """Legend handles in gray for the line style of each length (the color says the language)."""
    return [legend_key(f"L = {L}", color="0.35", marker=styles[L]["marker"], linestyle=styles[L]["linestyle"],
                       markersize=4) for L in lengths]


def panel_grid(n: int, max_cols: int = 2, width: float = 4.6, height: float = 3.2):
    """A figure with ``n`` panels in rows of at most ``max_cols`` (so each stays readable on the page);
    returns the figure and the first ``n`` axes as a flat list (unused cells removed)."""
    ncols = min(n, max_cols)
    nrows = -(-n // ncols)
    fig, axes = new_figure(ncols=ncols, nrows=nrows, width=width, height=height)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        fig.delaxes(ax)
    return fig, flat[:n]


def log_ticks(ax: Any, axis: str = "y") -> None:
    """Plain-number labels (2, 5, 10, 20 ...) on a log axis spanning less than two decades, where
    matplotlib would label at most one power of ten. Call after the limits are set."""
    from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

    lo, hi = ax.get_ylim() if axis == "y" else ax.get_xlim()
    if not (lo > 0 and hi / lo < 100):
        return
    target = ax.yaxis if axis == "y" else ax.xaxis
    subs = (1.0, 2.0, 3.0, 5.0) if hi / lo > 4 else tuple(float(k) for k in range(1, 10))
    target.set_major_locator(LogLocator(base=10, subs=subs))
    target.set_major_formatter(FormatStrFormatter("%g"))
    target.set_minor_formatter(NullFormatter())


class Panel(NamedTuple):
    """One language's panel: its axes, color and, per length ``L``, its rows sorted by ``steps``."""

    ax: Any
    language: str
    color: str
    series: dict[int, list[dict]]


def language_panels(rows: list[dict], keep: Callable[[dict], bool] = lambda r: True, log_y: bool = True):
    """A figure with one panel per language of ``rows`` (log2 ``N`` axis, log ``y`` if asked).

    Returns ``(fig, panels, lengths, styles)``: a :class:`Panel` per language whose ``series``
    holds, for each length, the rows that ``keep`` accepts, sorted by ``steps``; ``styles`` from
    :func:`length_styles`.
    """
    langs = list(dict.fromkeys(r["language"] for r in rows))
    lengths = sorted({r["length"] for r in rows})
    fig, axes = panel_grid(len(langs))
    panels = []
    for ax, lang in zip(axes, langs):
        ax.set_xscale("log", base=2)
        if log_y:
            ax.set_yscale("log")
        series = {L: sorted((r for r in rows if r["language"] == lang and r["length"] == L and keep(r)),
                            key=lambda r: r["steps"]) for L in lengths}
        panels.append(Panel(ax, lang, language_color(lang), series))
    return fig, panels, lengths, length_styles(lengths)
