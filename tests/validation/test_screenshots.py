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

from validation.report import build_report
from validation.screenshot import browser_check

WIDTH = 1280  # a laptop window
NARROW = 760  # a half-screen window: the page must still not scroll sideways


@pytest.fixture(scope="module")
def tiny_report(tmp_path_factory):
    return build_report(tmp_path_factory.mktemp("report"), scale="tiny", progress=False).index


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
    with Image.open(shot) as img:
        assert img.size == (width, res["page_height"])  # the whole page, not the first screen
    assert res["page_height"] > 2000
    assert _painted_rows(shot) > 0.5  # text and figures all the way down, not a blank tail
