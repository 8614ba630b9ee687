"""``mdm-theory plot``: any sweep table or calibrate result as a figure (matplotlib, no pandas).

Rows come from a sweep's JSONL table (``mdm-theory sweep --out T.jsonl``: each row's ``config`` and
``result`` flattened into one set of columns) or a calibrate JSON result (``mdm-theory calibrate
--json > C.json``: one row per setting visited, with ``calls`` and the searched metric under its
name, ``ser``, ``ter`` or ``kl``). A column holding an estimate record (docs/schema.md) plots its
value with its interval as an error bar: the record's ``ci_low``/``ci_high`` (Monte Carlo; an exact
value has none). ``--by`` splits the rows into labelled series, one marker and colour each. The
caption names the methods of the plotted values, the samples behind them and what the bars are.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["CREATOR", "load_rows", "plot_rows", "series"]

CREATOR = "mdm-theory plot"
"""Written into every figure's metadata; a file that does not carry it is never overwritten."""

_MARKERS = "osD^v<>PXh*"


def _is_estimate(v: Any) -> bool:
    return isinstance(v, dict) and "value" in v and "method" in v


def _flat_sweep_row(row: dict) -> dict:
    out: dict = {}
    for part in ("config", "result"):
        for k, v in (row.get(part) or {}).items():
            if k == "inputs" or (isinstance(v, dict) and not _is_estimate(v)):
                continue
            out.setdefault(k, v)
    for k, v in (row.get("config") or {}).items():  # the config's own spelling wins (steps, sampler, ...)
        out[k] = v
    if "steps" in out:
        out.setdefault("n_steps", out["steps"])
    return out


def _calibrate_rows(result: dict) -> list[dict]:
    metric = result.get("metric", "metric")
    rows = []
    for fam in result.get("families", []):
        for s in fam.get("settings", []):
            rows.append({"language": result.get("language"), "length": result.get("length"), "family": s["family"],
                         "sampler": s["family"], "parameter": s["parameter"], "value": s["value"], "label": s["label"],
                         "calls": s["calls"], metric: s["metric"], "quantity": s.get("quantity"),
                         "status": s.get("status")})
    return rows


def load_rows(path: str | Path) -> list[dict]:
    """The rows of a sweep JSONL table or a calibrate JSON result, flattened (``ValueError`` otherwise)."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, dict) and "families" in whole:
        return _calibrate_rows(whole)
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: line {n} is not JSON ({exc.msg}); give a sweep .jsonl table or a "
                             "calibrate --json result") from None
        if not isinstance(row, dict) or "result" not in row:
            raise ValueError(f"{path}: line {n} is not a sweep row (no 'result'); give a sweep .jsonl table or a "
                             "calibrate --json result")
        rows.append(_flat_sweep_row(row))
    if not rows:
        raise ValueError(f"{path} holds no rows")
    return rows


def _number(v: Any) -> tuple[float | None, float | None, float | None]:
    """(value, low, high) of a plain number or an estimate record (low/high ``None``: no interval)."""
    if _is_estimate(v):
        value = v.get("value")
        if value is None:
            return None, None, None
        lo, hi = v.get("ci_low"), v.get("ci_high")
        if v.get("exact") or lo is None or hi is None or lo == hi:
            return float(value), None, None
        return float(value), float(lo), float(hi)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None, None, None
    return float(v), None, None


def series(rows: Sequence[dict], x: str, y: str, by: Sequence[str]) -> dict[str, list[tuple]]:
    """``label -> [(x, y, y_low, y_high), ...]`` sorted by ``x``; ``ValueError`` naming a column no row has."""
    columns = {k for r in rows for k in r}
    for role, name in [("--x", x), ("--y", y)] + [("--by", b) for b in by]:
        if name not in columns:
            raise ValueError(f"{role} {name}: no such column; the rows have {', '.join(sorted(columns))}")
    out: dict[str, list[tuple]] = {}
    for r in rows:
        xv, _, _ = _number(r.get(x))
        yv, lo, hi = _number(r.get(y))
        if xv is None or yv is None:
            continue
        label = ", ".join(f"{b}={r.get(b)}" for b in by) if by else y
        out.setdefault(label, []).append((xv, yv, lo, hi))
    return {k: sorted(v) for k, v in out.items()}


def _caption(rows: Sequence[dict], x: str, y: str) -> str:
    methods = sorted({str(r[y]["method"]) for r in rows if _is_estimate(r.get(y)) and r[y].get("value") is not None})
    samples = sorted({int(r[y]["samples"]) for r in rows if _is_estimate(r.get(y)) and r[y].get("samples")})
    conf = sorted({r[y].get("confidence") for r in rows if _is_estimate(r.get(y)) and r[y].get("confidence")})
    parts = [f"{y} against {x}."]
    if methods:
        parts.append("Method: " + "; ".join(methods) + ".")
    if samples:
        parts.append(f"Monte Carlo samples per point: {', '.join(map(str, samples))}; bars: the "
                     f"{', '.join(f'{100 * c:.0f}%' for c in conf) or ''} interval of each estimate; "
                     "exact values have none.")
    else:
        parts.append("Every value exact (no bars).")
    return " ".join(parts)


def plot_rows(rows: Sequence[dict], x: str, y: str, by: Sequence[str] = (), *, logx: bool = False,
              logy: bool = False, title: str | None = None) -> tuple[Any, str]:
    """The figure of ``y`` against ``x``, one series per value of the ``by`` columns, and its caption."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = series(rows, x, y, by)
    if not data:
        raise ValueError(f"no row has a finite {x} and {y}")
    caption = _caption(rows, x, y)
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    for k, (label, pts) in enumerate(data.items()):
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        err = [[p[1] - p[2] if p[2] is not None else 0.0 for p in pts],
               [p[3] - p[1] if p[3] is not None else 0.0 for p in pts]]
        ax.errorbar(xs, ys, yerr=err if any(any(e) for e in err) else None, marker=_MARKERS[k % len(_MARKERS)],
                    markersize=5, linewidth=1, capsize=2, label=label, color=f"C{k % 10}")
    if logx:
        ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    if title:
        ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.text(0.01, 0.01, caption, fontsize=7, wrap=True, va="bottom", ha="left")
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig, caption
