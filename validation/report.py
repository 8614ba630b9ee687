"""The proof-companion report: run the experiments (resuming from the cache) and write one HTML page.

Layout of the output folder::

    OUT/index.html              the report (self-contained: inline CSS, no remote resources)
    OUT/figures/NAME_PLOT.png   every plot, embedded in the page
    OUT/figures/NAME_PLOT.svg   the same plot as vector graphics (linked under each figure)
    OUT/results/NAME.json       each experiment's result with its config and provenance

The experiments compute their points through a :class:`validation.cache.ResultCache`, so a re-run
resumes where an interrupted run stopped and recomputes only stale or corrupt entries.
Each experiment's section carries badges for what happened in it (:data:`STATUS_LEGEND`: ok,
vacuous, finding, partial, error) with the reasons listed; a part that was not measured (no
checkpoint given) is said to be missing, nothing is made up in its place. The page is always
written: a figure that cannot be drawn, or a section that cannot be rendered, says so in its
place. Every JSON file written here is strict JSON (RFC 8259: no ``NaN``/``Infinity`` tokens).
"""

from __future__ import annotations

import html
import io
import json
import platform
import re
import sys
import time
import traceback
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from numerics.provenance import atomic_write_bytes, provenance, to_jsonable

from .cache import ResultCache, canonical
from .experiments import EXPERIMENTS, config_for
from .experiments._base import STATUS_LEGEND, ExperimentResult
from .progress import seconds
from .setup_text import SECTION_SECONDS, setup_sentences

__all__ = ["ReportOutcome", "build_report", "run_experiments", "write_report", "broken_links", "strict_json"]

FIG_DPI = 110
OPEN_TABLE_ROWS = 12  # a table with more rows starts collapsed

def strict_json(payload: Any) -> str:
    """``payload`` as strict JSON text (RFC 8259): non-finite floats become JSON-safe values
    (:func:`numerics.provenance.to_jsonable`), and ``NaN``/``Infinity`` tokens are refused."""
    return json.dumps(to_jsonable(payload), indent=1, sort_keys=True, allow_nan=False)


@dataclass
class ReportOutcome:
    """Where the report was written and what each experiment returned."""

    index: Path
    results: dict[str, ExperimentResult]
    errors: dict[str, str] = field(default_factory=dict)
    cache_counts: dict[str, int] = field(default_factory=dict)


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its finished children (the training pool's workers)."""
    import resource

    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _left(expected: dict[str, float] | None, names: list[str], spent: float, planned: float) -> str:
    """``", about ... left"``: the measured seconds of the sections still to run (:data:`SECTION_SECONDS`),
    scaled by how the finished sections compared with their measurement (load, a cold numba cache)."""
    if not expected or not names or any(n not in expected for n in names):
        return ""
    scale = spent / planned if planned > 0 else 1.0
    return f", about {seconds(scale * sum(expected[n] for n in names))} left"


#: The numba warm-up of a parallel report (``jobs > 1``): one lane per worker, each a tuple of tiny runs
#: (a section's tiny config, or ``(section, {config field: value})`` over it, nothing cached) and the
#: sections it releases when it is done (the last lane: every section no other lane names). Without it
#: two workers that reach the same kernel at once both compile it: from an empty numba cache (2026-11-27,
#: the idle 2-core machine) the adaptive, ter, cost and decoders sections cost 175, 156, 138 and 85 CPU-s
#: side by side, 12, 39, 46 and 3 with the kernels compiled; one after another in one process 192, 42, 45
#: and 60. Two compiling lanes duplicate the message-passing kernels every family calls (lanes of adaptive
#: and of decoders, noise and cost: 217 and 151 CPU-s at once beside the training, against about 185 in one
#: process), so one lane compiles everything, one tiny run after another (adaptive's also on the hmm,
#: whose kernels its tiny config lacks), and releases the sections that read those kernels (the runtimes
#: and lossless sections too: beside the lane they compiled its kernels again, 88 and 39 CPU-s against 9 and 4
#: warm); the other
#: worker meanwhile runs the sections that need few of them. A warm numba cache makes the lane a few seconds.
WARM_LANES: tuple[tuple[tuple, tuple[str, ...]], ...] = (
    ((("adaptive", {"ter_languages": ("2gram", "hmm")}), "decoders", "noise", "cost"),
     ("adaptive", "ter", "ser", "calls", "decoders", "cost", "noise", "runtimes", "lossless")),
    ((), ()),
)


def run_experiments(configs: dict[str, Any], cache: ResultCache, progress: bool = True,
                    strict: bool = False, expected: dict[str, float] | None = None, jobs: int = 1,
                    fig_dir: Path | None = None, drawn: dict[str, list] | None = None
                    ) -> tuple[dict[str, ExperimentResult], dict[str, str]]:
    """Run each experiment of ``configs`` (name -> config); an exception is recorded, not fatal.

    With ``strict`` an exception propagates (tests). ``expected``: section -> measured seconds, for
    the estimate of the time left in the progress lines. ``jobs > 1``: the numba warm-up's lanes
    (:data:`WARM_LANES`) in ``jobs`` worker processes, each lane's sections after it, ``jobs`` at a time,
    the longest measured first, while this process runs the ``learned`` section (whose training pool is
    its own) from the start; the real-text section, which reads the models that section trains,
    after it. The sections share nothing but the cache, whose entries are locked and written atomically.
    With ``fig_dir`` and ``jobs > 1`` each section's figures are drawn there as soon as it finishes, in the
    process that ran it, and recorded in ``drawn`` (name -> figures; :func:`write_report` reuses them
    instead of drawing them at the end). Returns results (in the order of ``configs``) and errors
    (name -> traceback).
    """
    results: dict[str, ExperimentResult] = {}
    errors: dict[str, str] = {}
    drawn = {} if drawn is None else drawn
    names = list(configs)
    t0 = time.perf_counter()
    state = {"done": 0, "planned": 0.0}  # sections finished, and their measured seconds

    def report_done(name: str, r: ExperimentResult, cpu: float) -> None:
        state["done"] += 1
        state["planned"] += (expected or {}).get(name, 0.0)
        if progress:
            spent = time.perf_counter() - t0
            left = [n for n in names if n not in results]
            print(f"[report] section {state['done']}/{len(names)} {name}: {r.status} in {seconds(r.elapsed_s)} "
                  f"({cpu:.0f} CPU-s); {seconds(spent)} elapsed"
                  f"{_left(expected, left, spent, state['planned']) if jobs <= 1 else ''}", file=sys.stderr, flush=True)

    def start(name: str) -> None:
        if progress:
            print(f"[report] section {names.index(name) + 1}/{len(names)} {name}: {EXPERIMENTS[name].TITLE}",
                  file=sys.stderr, flush=True)

    if jobs <= 1 or strict or len(names) < 2:
        for name in names:
            start(name)
            results[name], err, cpu = _run_section(name, configs[name], cache, progress, strict)
            if err is not None:
                errors[name] = err
            report_done(name, results[name], cpu)
        return results, errors
    import multiprocessing
    import threading
    from concurrent.futures import ProcessPoolExecutor, as_completed

    here = [n for n in names if n == "learned"]  # this process: its training pool's workers are its own
    after = [n for n in names if n == "realtext" and here]  # reads the models the learned section trains
    rest = sorted((n for n in names if n not in here + after), key=lambda n: -(expected or {}).get(n, 0.0))
    lanes = [tuple(e for e in warm if _warm_name(e) in names) for warm, _ in WARM_LANES[:jobs]]
    released = [[n for n in rest if n in frees] for _, frees in WARM_LANES[:jobs]]
    if released:
        released[-1] = [n for n in rest if not any(n in r for r in released[:-1])]
    else:
        lanes, released = [()], [rest]
    futures: dict = {}
    lock = threading.Lock()
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:

        def submit(batch: list[str]) -> None:
            with lock:
                for name in batch:  # the longest measured first, so the last to finish is a short one
                    start(name)
                    futures[pool.submit(_section_worker, name, configs[name], cache.root, progress, fig_dir)] = name

        def warm_then_submit(i: int) -> None:  # a lane's sections wait for its warm-up; the learned section does not
            warm0 = time.perf_counter()
            if lanes[i]:
                if progress:
                    print(f"[report] compiling numba kernels, lane {i + 1}: tiny runs of "
                          f"{', '.join(_warm_name(e) for e in lanes[i])}", file=sys.stderr, flush=True)
                try:
                    cpu = pool.submit(_warm_worker, lanes[i]).result()
                except Exception as err:  # noqa: BLE001 -- the sections still run (and compile for themselves)
                    print(f"[report] lane {i + 1}'s warm-up failed: {type(err).__name__}: {err}", file=sys.stderr,
                          flush=True)
                    cpu = float("nan")
                if progress:
                    print(f"[report] lane {i + 1} compiled in {seconds(time.perf_counter() - warm0)} ({cpu:.0f} "
                          f"CPU-s)", file=sys.stderr, flush=True)
            submit(released[i])

        submitters = [threading.Thread(target=warm_then_submit, args=(i,), daemon=True) for i in range(len(lanes))]
        for t in submitters:
            t.start()
        for name in here:  # meanwhile, the learned section here (its training oversubscribes the cores a while)
            start(name)
            results[name], err, cpu = _run_section(name, configs[name], cache, progress, strict)
            if err is not None:
                errors[name] = err
            figs = _draw(name, results[name], fig_dir)
            if figs is not None:
                drawn[name] = figs
            report_done(name, results[name], cpu)
        for t in submitters:
            t.join()
        submit(after)
        with lock:
            pending = dict(futures)
        for fut in as_completed(pending):
            name = pending[fut]
            results[name], err, cpu, events, figs = fut.result()
            cache.events.extend(events)
            if figs is not None:
                drawn[name] = figs
            if err is not None:
                errors[name] = err
            report_done(name, results[name], cpu)
    return {n: results[n] for n in names}, errors


def _draw(name: str, result: ExperimentResult, fig_dir: Path | None) -> list | None:
    """The section's figures drawn into ``fig_dir`` now (None: not asked to, or nothing to draw)."""
    if fig_dir is None or (result.status == "error" and not result.tables):
        return None
    return _save_plots(name, result, fig_dir)


def _warm_name(entry: str | tuple) -> str:
    """The section of a :data:`WARM_LANES` entry."""
    return entry if isinstance(entry, str) else entry[0]


def _warm_worker(lane: tuple) -> float:
    """Compile the kernels of ``lane``'s sections: their tiny configs (with the entry's fields), nothing
    cached; CPU seconds spent. A section whose tiny run raises is left to its real run, which reports it."""
    from dataclasses import replace

    cpu0 = _cpu_seconds()
    for entry in lane:
        name, fields = (entry, {}) if isinstance(entry, str) else entry
        module = EXPERIMENTS[name]
        try:
            module.run(replace(module.Config.tiny(), **fields), cache=ResultCache(None), progress=False)
        except Exception:  # noqa: BLE001,S112 -- the real run of the section reports the error
            continue
    return _cpu_seconds() - cpu0


def _run_section(name: str, cfg: Any, cache: ResultCache, progress: bool, strict: bool
                 ) -> tuple[ExperimentResult, str | None, float]:
    """One experiment: its result (an ``error`` result with the traceback's text when it raised) and CPU seconds."""
    module = EXPERIMENTS[name]
    started, cpu0 = time.perf_counter(), _cpu_seconds()
    try:
        return module.run(cfg, cache=cache, progress=progress, strict=strict), None, _cpu_seconds() - cpu0
    except Exception:  # noqa: BLE001 -- one failing experiment must not hide the others
        if strict:
            raise
        result = ExperimentResult(name, module.TITLE, config=canonical(cfg), status="error",
                                  missing=["the experiment raised an exception (traceback below)"],
                                  elapsed_s=time.perf_counter() - started)
        return result, traceback.format_exc(), _cpu_seconds() - cpu0


def _section_worker(name: str, cfg: Any, cache_root: Path | None, progress: bool, fig_dir: Path | None) -> tuple:
    """:func:`_run_section` in a worker process, with the cache events it saw (for the parent's counts) and
    the figures it drew into ``fig_dir`` (None: not asked to)."""
    cache = ResultCache(cache_root)
    result, err, cpu = _run_section(name, cfg, cache, progress, strict=False)
    return result, err, cpu, list(cache.events), _draw(name, result, fig_dir)


# --------------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:1180px;
margin:1.5em auto;padding:0 1em;color:#222;line-height:1.45;overflow-wrap:break-word}
h1{font-size:1.6em;margin-bottom:.2em} h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
p,li,figcaption,summary{overflow-wrap:anywhere}
.tablewrap{max-width:100%;overflow-x:auto}
table{border-collapse:collapse;font-size:.82em;margin:.6em 0}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:right} th{background:#f2f2f2}
td.s,th.s{text-align:left} td.s{white-space:nowrap}
figure{margin:1em 0} figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.85em;color:#444}
pre{background:#f7f7f7;padding:.6em;overflow-x:auto;font-size:.8em;white-space:pre-wrap}
details>summary{cursor:pointer}
.badge{display:inline-block;padding:1px 8px;border-radius:8px;font-size:.75em;color:#fff;vertical-align:middle;
margin-left:.2em}
.ok{background:#2e7d32}.vacuous{background:#9e9d24}.finding{background:#6a1b9a}.partial{background:#ef6c00}
.error{background:#c62828}
.reasons{margin:.4em 0 .8em 0;padding:.4em .8em;background:#fafafa;border-left:4px solid #ccc;font-size:.92em}
.reasons ul{margin:.2em 0}
.figfail{color:#8a1c1c}
.doc{color:#333;font-size:.92em}
.legend{font-size:.85em} .legend td{text-align:left;border:none;padding:1px 6px}
nav ul{columns:2}
"""

# Marks the page once every image has loaded or failed: a headless browser reads
# data-images-ok / data-images-broken and the page height from the DOM (validation/screenshot.py).
_IMG_CHECK_JS = """
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var broken = imgs.filter(function (i) { return !(i.complete && i.naturalWidth > 0); });
  document.body.setAttribute('data-images-ok', String(imgs.length - broken.length));
  document.body.setAttribute('data-images-broken', String(broken.length));
  document.body.setAttribute('data-page-height', String(document.documentElement.scrollHeight));
  document.body.setAttribute('data-page-width', String(document.documentElement.scrollWidth));
});
"""

_REASON_TITLES = {
    "error": "Errors (a part raised; a bug)",
    "partial": "Not measured, or short of a validation target",
    "finding": "Findings (a claim or bound violated)",
    "vacuous": "Vacuous checks (trivially true, so they say nothing)",
}


def _esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _code(text: str) -> str:
    """Escape ``text`` and turn `backticks` into <code>."""
    return re.sub(r"`([^`]+)`", lambda m: f"<code>{m.group(1)}</code>", _esc(text))


def _fmt(v: Any) -> str:
    if v is None:
        return "&mdash;"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if v != v:
            return "nan"
        if v in (float("inf"), float("-inf")):
            return "&infin;" if v > 0 else "&minus;&infin;"
        if v == 0:
            return "0"
        a = abs(v)
        return f"{v:.4g}" if 1e-3 <= a < 1e6 else f"{v:.3e}"
    if isinstance(v, (list, dict)):
        text = json.dumps(to_jsonable(v), allow_nan=False)
        return _esc(text if len(text) <= 200 else text[:199] + "\u2026")
    return _esc(v)


def _table(rows: list[dict], max_rows: int = 400) -> str:
    if not rows:
        return "<p><em>(empty)</em></p>"
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    numeric = {c: all(isinstance(r.get(c), (int, float)) or r.get(c) is None for r in rows) for c in cols}
    head = "".join(f'<th class="{"" if numeric[c] else "s"}">{_esc(c)}</th>' for c in cols)
    body = []
    for r in rows[:max_rows]:
        body.append("<tr>" + "".join(
            f'<td class="{"" if numeric[c] else "s"}">{_fmt(r.get(c))}</td>' for c in cols) + "</tr>")
    more = f"<p><em>{len(rows) - max_rows} more rows in the JSON results.</em></p>" if len(rows) > max_rows else ""
    return (f'<div class="tablewrap"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody>'
            f"</table></div>{more}")


def _inline(text: str) -> str:
    """One docstring paragraph as HTML: ``code`` and :role:`x` become <code>, **x** <strong>, *x* <em>."""
    text = re.sub(r"``(.+?)``", lambda m: f"<code>{m.group(1)}</code>", _esc(text))
    text = re.sub(r":(?:func|class|meth|mod|data):`~?([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"\*\*([^*\s][^*]*?)\*\*", r"<strong>\1</strong>", text)
    return re.sub(r"(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])", r"<em>\1</em>", text)


def _doc_paragraphs(doc: str | None) -> str:
    """The module docstring's paragraphs as HTML (``*`` bullets become a list)."""
    if not doc:
        return ""
    out = []
    for para in [p.strip() for p in doc.strip().split("\n\n") if p.strip()][:6]:
        items = [" ".join(i.split()) for i in re.split(r"(?m)^\* ", para) if i.strip()] if para.startswith("* ") else None
        if items:
            out.append('<ul class="doc">' + "".join(f"<li>{_inline(t)}</li>" for t in items) + "</ul>")
        else:
            out.append(f'<p class="doc">{_inline(" ".join(para.split()))}</p>')
    return "".join(out)


def _badges(result: ExperimentResult) -> str:
    """One badge per status that applies, with the section's counts (``vacuous 2/173``)."""
    return "".join(f'<span class="badge {b}" title="{_esc(STATUS_LEGEND[b])}">{_esc(result.badge_label(b))}</span>'
                   for b in result.badges())


def _legend_html() -> str:
    rows = "".join(f'<tr><td><span class="badge {k}">{_esc(k)}</span></td><td>{_esc(v)}</td></tr>'
                   for k, v in STATUS_LEGEND.items())
    return f'<table class="legend" id="badges"><tbody>{rows}</tbody></table>'


def _reasons_html(result: ExperimentResult, error: str | None) -> str:
    """Why the section has the badges it has: one list per status other than ok."""
    first_line = {part: tb.strip().splitlines()[0] if tb.strip() else "" for part, tb in result.errors.items()}
    lists = {"error": [f"{part}: {line}" for part, line in first_line.items()]
             + (["the experiment raised an exception (traceback below)"] if error else []),
             "partial": list(result.missing), "finding": result.all_findings(), "vacuous": list(result.vacuous)}
    blocks = [f"<p><strong>{_esc(_REASON_TITLES[k])}:</strong></p><ul>"
              + "".join(f"<li>{_esc(m)}</li>" for m in lists[k]) + "</ul>"
              for k in ("error", "partial", "finding", "vacuous") if lists[k]]
    return f'<div class="reasons">{"".join(blocks)}</div>' if blocks else ""


@dataclass(frozen=True)
class _Figure:
    """One figure of a section: saved (``png``/``svg`` paths) or not drawable (``error`` says why)."""

    name: str
    caption: str
    png: str | None = None
    svg: str | None = None
    error: str | None = None
    traceback: str | None = None


def _save_plots(name: str, result: ExperimentResult, fig_dir: Path) -> list[_Figure]:
    """Save each plot as PNG and SVG. A plot that cannot be made or saved is returned with the
    reason instead (and nothing half-written is left behind); the others are saved all the same."""
    import matplotlib.pyplot as plt

    module = EXPERIMENTS[name]
    try:
        plots = module.plot(result)
    except Exception as err:  # noqa: BLE001 -- a plotting bug is reported in the page
        return [_Figure("all", "the figures of this experiment", error=f"{type(err).__name__}: {err}",
                        traceback=traceback.format_exc())]
    saved = []
    fig_dir.mkdir(parents=True, exist_ok=True)
    for p in plots:
        stem = f"{name}_{p.name}"
        try:
            for ext in ("png", "svg"):  # through a buffer and a unique temporary file: two reports may share OUT
                buffer = io.BytesIO()
                p.figure.savefig(buffer, dpi=FIG_DPI, format=ext, metadata={"Date": None} if ext == "svg" else None)
                atomic_write_bytes(fig_dir / f"{stem}.{ext}", buffer.getvalue())
        except Exception as err:  # noqa: BLE001 -- e.g. matplotlib cannot log-scale the data
            for ext in ("png", "svg"):
                (fig_dir / f"{stem}.{ext}").unlink(missing_ok=True)  # never show a stale figure
            saved.append(_Figure(p.name, p.caption, error=f"{type(err).__name__}: {err}",
                                 traceback=traceback.format_exc()))
        else:
            saved.append(_Figure(p.name, p.caption, png=f"figures/{stem}.png", svg=f"figures/{stem}.svg"))
        finally:
            plt.close(p.figure)
    return saved


def _figures_html(figs: list[_Figure]) -> str:
    parts = []
    for f in figs:
        if f.error:
            parts.append(f'<p class="figfail"><strong>Figure <code>{_esc(f.name)}</code> could not be drawn:</strong> '
                         f"{_esc(f.error.rstrip('.'))}. The numbers are in the tables below. "
                         "<em>It would have shown:</em> "
                         f"{_esc(f.caption)}</p><details><summary>Traceback</summary><pre>{_esc(f.traceback)}"
                         f"</pre></details>")
        else:
            parts.append(f'<figure><img src="{_esc(f.png)}" alt="{_esc(f.caption[:120])}">'
                         f'<figcaption>{_esc(f.caption)} <a href="{_esc(f.svg)}">[SVG]</a></figcaption></figure>')
    return "".join(parts)


def _section(name: str, result: ExperimentResult, error: str | None, out_dir: Path, figs: list | None = None
             ) -> str:
    module = EXPERIMENTS[name]
    rel_json = f"results/{name}.json"
    if figs is None:
        figs = _save_plots(name, result, out_dir / "figures") if result.status != "error" or result.tables else []
    parts = [f'<h2 id="{name}">{_esc(result.title)} {_badges(result)}</h2>', _reasons_html(result, error),
             _doc_paragraphs(module.__doc__)]
    if error:
        parts.append(f"<details open><summary>Traceback</summary><pre>{_esc(error)}</pre></details>")
    for part, tb in result.errors.items():
        parts.append(f"<details><summary>Traceback of the failed part <em>{_esc(part)}</em></summary>"
                     f"<pre>{_esc(tb)}</pre></details>")
    parts.append(_figures_html(figs))
    if result.notes:
        parts.append("<ul>" + "".join(f"<li>{_esc(n)}</li>" for n in result.notes) + "</ul>")
    for tname, rows in result.tables.items():
        parts.append(f"<details{' open' if len(rows) <= OPEN_TABLE_ROWS else ''}><summary>Table "
                     f"<code>{_esc(tname)}</code> ({len(rows)} rows)</summary>{_table(rows)}</details>")
    parts.append(f"<details><summary>Config and raw results</summary><pre>{_esc(strict_json(result.config))}</pre>"
                 f'<p><a href="{rel_json}">{rel_json}</a> &middot; computed in {result.elapsed_s:.1f} s</p></details>')
    return f'<section>{"".join(parts)}</section>'


def _section_or_failure(name: str, result: ExperimentResult, error: str | None, out_dir: Path,
                        figs: list | None = None) -> str:
    """The section, or -- if rendering it raised -- a section that says so (the page is still written)."""
    try:
        return _section(name, result, error, out_dir, figs)
    except Exception:  # noqa: BLE001 -- one bad section must not cost the page
        return (f'<section><h2 id="{name}">{_esc(result.title)} <span class="badge error">error</span></h2>'
                f"<p>This section could not be rendered; its results are in <code>results/{name}.json</code>.</p>"
                f"<pre>{_esc(traceback.format_exc())}</pre></section>")


def _key_result(name: str, result: ExperimentResult) -> str:
    """One line of "Key results" per section: its findings first (a claim violated), else its first note; the
    section holds the rest."""
    notes = result.all_findings() or list(result.notes)
    more = len(dict.fromkeys([*result.findings, *result.notes])) - 1
    rest = f' <a href="#{name}">({more} more in the section)</a>' if more > 0 else ""
    text = notes[0] if len(notes[0]) <= 400 else notes[0][:399] + "\u2026"
    return f'<li><a href="#{name}">{_esc(result.title)}</a>: {_esc(text)}{rest}</li>'


def write_report(out_dir: Path, results: dict[str, ExperimentResult], errors: dict[str, str],
                 scale: str, cache: ResultCache, elapsed_s: float, drawn: dict[str, list] | None = None) -> Path:
    """Write figures, per-experiment JSON and ``index.html`` into ``out_dir``; returns the page.
    ``drawn``: sections whose figures are already in ``out_dir/figures`` (:func:`run_experiments`)."""
    out_dir = Path(out_dir)
    prov = provenance()
    generated = datetime.now(timezone.utc).isoformat(timespec="seconds")
    sections, toc = [], []
    for name, result in results.items():
        atomic_write_bytes(out_dir / "results" / f"{name}.json", (strict_json({
            "result": result.to_json(), "provenance": prov, "generated_utc": generated, "scale": scale,
            "error": errors.get(name),
        }) + "\n").encode())
        sections.append(_section_or_failure(name, result, errors.get(name), out_dir, (drawn or {}).get(name)))
        toc.append(f'<li><a href="#{name}">{_esc(result.title)}</a> {_badges(result)}</li>')

    summary_items = [_key_result(name, r) for name, r in results.items() if r.notes]
    summary_html = f"<ul>{''.join(summary_items)}</ul>" if summary_items else "<p><em>No results yet.</em></p>"
    counts = cache.counts()
    problems = cache.problems()
    versions = "".join(f"<tr><td class=\"s\">{_esc(k)}</td><td class=\"s\">{_esc(v)}</td></tr>"
                       for k, v in {**prov["versions"], "python": platform.python_version(),
                                    "platform": platform.platform()}.items())
    cache_html = (f"<p>Cache <code>{_esc(cache.root)}</code>: {counts['hit']} points reused, {counts['miss']} computed, "
                  f"{counts['stale']} stale and {counts['corrupt']} corrupt entries recomputed.</p>")
    if problems:
        cache_html += "<ul>" + "".join(f"<li>{_esc(p.what)}: {_esc(p.path)} ({_esc(p.reason)})</li>"
                                       for p in problems[:50]) + "</ul>"
    setup_html = "".join(f"<p>{_code(t)}</p>" for t in setup_sentences())
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>mdm-theory: proof-companion report</title>
<style>{_CSS}</style></head>
<body>
<h1>Masked diffusion LMs: theory vs exact numbers</h1>
<p>Proof-companion report for <em>Theoretical Benefit and Limitation of Diffusion Language Model</em>
(arXiv 2502.09622): the oracle (best possible) factorized sampler computed exactly or with stated
error bars, each bound overlaid, every lemma checked. Scale <strong>{_esc(scale)}</strong>;
generated {_esc(generated)} in {elapsed_s:.1f} s; commit <code>{_esc(prov['commit'])}</code>.</p>
<nav><ul>{''.join(toc)}</ul></nav>
{_legend_html()}
<h2 id="summary">Key results</h2>
{summary_html}
{''.join(sections)}
<h2 id="provenance">Provenance</h2>
<div class="tablewrap"><table><tbody>{versions}</tbody></table></div>
{cache_html}
<p>Every figure is re-plotted from <code>results/*.json</code>. Regenerate this page with
<code>mdm-theory report{' --full' if scale == 'full' else ''}</code> (the computed points are cached).</p>
<h2 id="setup">Running it yourself</h2>
{setup_html}
<script>{_IMG_CHECK_JS}</script>
</body></html>
"""
    index = out_dir / "index.html"
    atomic_write_bytes(index, page.encode())
    return index


def build_report(out_dir: str | Path = "report", scale: str = "default", cache_dir: str | Path | None = None,
                 only: Iterable[str] | None = None, overrides: dict[str, dict] | None = None,
                 progress: bool = True, strict: bool = False, jobs: int = 1) -> ReportOutcome:
    """Run the experiments at ``scale`` (resuming from the cache) and write the report.

    Parameters
    ----------
    out_dir : folder of the report (``index.html``, ``figures/``, ``results/``).
    scale : ``"tiny"`` (tests), ``"default"`` (2-core CPU, <= 10 minutes) or ``"full"`` (paper).
    cache_dir : cache folder (default ``OUT/cache``); ``None`` keeps it inside ``out_dir``.
    only : experiment names to run (default: all).
    jobs : sections run at once after the learned section (:func:`run_experiments`); 1: one after another.
    overrides : experiment name -> {config field: value} applied on top of the scale's config
        (e.g. checkpoints for ``learned`` and ``cost``).
    """
    from dataclasses import replace

    started = time.perf_counter()
    out_dir = Path(out_dir)
    names = list(EXPERIMENTS) if only is None else list(only)
    unknown = [n for n in names if n not in EXPERIMENTS]
    if unknown:
        raise ValueError(f"unknown experiment(s) {unknown}; known: {list(EXPERIMENTS)}")
    configs = {}
    for n in names:
        cfg = config_for(n, scale)
        extra = {k: v for k, v in (overrides or {}).get(n, {}).items() if hasattr(cfg, k)}
        configs[n] = replace(cfg, **extra) if extra else cfg
    configs = _shared_training(configs)
    cache = ResultCache(Path(cache_dir) if cache_dir is not None else out_dir / "cache")
    drawn: dict[str, list] = {}
    results, errors = run_experiments(configs, cache, progress=progress, strict=strict, jobs=jobs,
                                      expected=SECTION_SECONDS if _as_measured(scale, configs) else None,
                                      fig_dir=out_dir / "figures", drawn=drawn)
    index = write_report(out_dir, results, errors, scale, cache, time.perf_counter() - started, drawn)
    return ReportOutcome(index, results, errors, cache.counts())


def _as_measured(scale: str, configs: dict[str, Any]) -> bool:
    """Whether the run is the one :data:`SECTION_SECONDS` measured (``make report``: default scale, training)."""
    learned = configs.get("learned")
    return scale == "default" and (learned is None or bool(learned.train))


def _shared_training(configs: dict[str, Any]) -> dict[str, Any]:
    """When both the learned and the real-text section train, the learned section's pool also trains the
    real-text models (same run configs, so the real-text section finds them finished): one pool keeps
    both cores busy, where two pools one after the other leave one idle while their longest run ends."""
    from dataclasses import replace

    learned, text = configs.get("learned"), configs.get("realtext")
    if (learned is None or text is None or not learned.train or not text.train or not text.learned
            or learned.preset != text.learned_preset or learned.seed != text.seed):
        return configs
    return {**configs, "learned": replace(learned, also_train=tuple(text.learned))}


# --------------------------------------------------------------------------------------------
# link check (pure Python; the browser check is validation/screenshot.py)
# --------------------------------------------------------------------------------------------

class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if key in ("src", "href") and value is not None:
                self.refs.append(value)
            if key == "id" and value:
                self.ids.add(value)


def broken_links(html_path: str | Path) -> list[str]:
    """Every ``src``/``href`` of the page that points to a missing local file or anchor.

    Remote URLs (``http:``, ``https:``, ``mailto:``) are not followed (the report has none).
    """
    html_path = Path(html_path)
    parser = _Links()
    parser.feed(html_path.read_text(encoding="utf-8"))
    bad = []
    for ref in parser.refs:
        url = urlparse(ref)
        if url.scheme in ("http", "https", "mailto", "data"):
            continue
        if url.scheme not in ("", "file"):
            bad.append(f"{ref} (unsupported scheme)")
            continue
        if not url.path:
            if url.fragment and url.fragment not in parser.ids:
                bad.append(f"{ref} (no element with this id)")
            continue
        target = Path(unquote(url.path)) if url.scheme == "file" else html_path.parent / unquote(url.path)
        if not target.is_file():
            bad.append(f"{ref} (no such file)")
    return bad
