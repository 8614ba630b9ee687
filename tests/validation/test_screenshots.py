"""The report as a reader sees it: the whole page in headless Chromium (validation/screenshot.py).

Set ``MDM_SCREENSHOTS=DIR`` to keep the PNGs for looking at them; otherwise they go to a
temporary folder. The docs site's screenshots are in tests/validation/test_docs.py.
"""

import os
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from validation.screenshot import MAX_HEIGHT, browser_check

WIDTH = 1280  # a laptop window
NARROW = 760  # a half-screen window: the page must still not scroll sideways


pytestmark = pytest.mark.xdist_group("tiny-report")  # the report of test_report.py's end-to-end run, built once


@pytest.fixture(scope="module")
def tiny_report(tiny_report_run):
    assert tiny_report_run.exit_code == 0, tiny_report_run.output
    return tiny_report_run.out / "index.html"


def _shots(tmp_path) -> Path:
    keep = os.environ.get("MDM_SCREENSHOTS")
    return Path(keep) if keep else tmp_path


def _painted_rows(png: Path) -> float:
    """Fraction of pixel rows that are not plain background (the page is not blank below the fold)."""
    img = np.asarray(Image.open(png).convert("L"), dtype=float)
    return float(np.mean(img.min(axis=1) < 200))


@pytest.mark.parametrize("width", [WIDTH, NARROW])
def test_whole_report_renders_without_sideways_scrolling(tiny_report, chromium, tmp_path, width):
    shot = _shots(tmp_path) / f"report-{width}.png"
    res = browser_check(tiny_report, shot, width=width)
    page = tiny_report.read_text()
    n_img = len(re.findall(r"<img ", page))
    assert n_img > 0 and res["images_ok"] == n_img and res["images_broken"] == 0, res
    assert res["broken_links"] == []
    assert res["page_width"] == width, "the page scrolls sideways"  # scrollWidth > window width otherwise
    with Image.open(shot) as img:  # the whole page, not the first screen (browser_check cuts it at MAX_HEIGHT)
        assert img.size == (width, min(res["page_height"], MAX_HEIGHT))
    assert res["page_height"] > 2000
    assert _painted_rows(shot) > 0.5  # text and figures all the way down, not a blank tail


# --- figures at the size a reader sees them (issue 19) ------------------------------------------------------
CONTENT_PX = 1140  # the report's body (max-width 1180px, less its padding) in a 1280 px window
READABLE_PX = 7.0  # smallest text height, in screen pixels, a reader can make out on a laptop


def _smallest_text_px(figure, dpi: float) -> tuple[float, str]:
    """The smallest visible text of ``figure`` in screen pixels once the page scales its PNG to fit
    :data:`CONTENT_PX` (``img{max-width:100%}``), and that text."""
    from matplotlib.text import Text

    scale = min(1.0, CONTENT_PX / (figure.get_figwidth() * dpi))
    sizes = [(t.get_fontsize() * dpi / 72 * scale, t.get_text()) for t in figure.findobj(Text)
             if t.get_visible() and t.get_text().strip()]
    return min(sizes, default=(float("inf"), ""))


def test_every_figure_is_readable_at_the_size_a_reader_sees_it(tiny_report):
    """Every text of every figure of the report is at least READABLE_PX tall on a laptop screen
    (the lemma-tightness axis was 85 ids at ~4 px: the figure was 13.6 in wide, scaled down, in 5 pt)."""
    import json

    import matplotlib.pyplot as plt

    from validation.experiments import EXPERIMENTS, ExperimentResult
    from validation.report import FIG_DPI

    checked, small = 0, []
    for path in sorted((tiny_report.parent / "results").glob("*.json")):
        name = path.stem
        result = ExperimentResult.from_json(json.loads(path.read_text())["result"])
        for p in EXPERIMENTS[name].plot(result):
            px, text = _smallest_text_px(p.figure, FIG_DPI)
            plt.close(p.figure)  # measured; the report has more than matplotlib's 20 open figures
            checked += 1
            if px < READABLE_PX:
                small.append(f"{name}/{p.name}: {text!r} at {px:.1f} px")
    assert checked >= 5
    assert not small, small


def test_the_lemma_tightness_figure_is_readable_with_every_claim():
    """The default report's 85 claims (the tiny report has few): one readable row per claim id."""
    from validation.experiments import ExperimentResult, lemmas
    from validation.report import FIG_DPI

    rows = [{"claim": f"C.{k}.step", "violations": 0, "instances": 20, "median_tightness": 2.0 + k,
             "min_tightness": 1.0 + k} for k in range(80)]
    rows += [{"claim": f"X.{k}", "violations": 3, "instances": 20, "median_tightness": 0.5, "min_tightness": 0.1}
             for k in range(5)]
    result = ExperimentResult("lemmas", "Lemmas", {}, tables={"claims": rows})
    (p,) = [p for p in lemmas.plot(result) if p.figure.axes]
    px, text = _smallest_text_px(p.figure, FIG_DPI)
    assert px >= READABLE_PX, (text, px)
    labels = [t.get_text() for ax in p.figure.axes for t in ax.get_yticklabels()]
    assert {r["claim"] for r in rows} <= set(labels)  # every id is on an axis, none dropped to make room
