"""The docs site: generated CLI reference, lemma pages and nav, `mkdocs build --strict`, rendered math.

The site is built once per module from a copy of docs/ (plus one extra methods page, to show that
every page under docs/methods/ is listed by itself) and three of its pages -- home, a lemma page
with math, the findings -- are screenshot in headless Chromium. ``MDM_SCREENSHOTS=DIR`` keeps the
PNGs for looking at them.
"""

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from PIL import Image

from validation.cli import main
from validation.docs import (
    SETUP_BEGIN,
    SETUP_END,
    cli_reference,
    findings_excerpt,
    mkdocs_yml,
    setup_block,
    theory_entries,
    theory_nav,
)
from validation.screenshot import browser_check

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.xdist_group("docs-site")  # one worker builds the site (module fixture) once, not each worker
EXTRA_METHOD = "zz-added-by-a-test.md"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("docs-site")
    docs = root / "docs"
    shutil.copytree(REPO / "docs", docs)
    (docs / "methods").mkdir(exist_ok=True)
    (docs / "methods" / EXTRA_METHOD).write_text("# A method page nobody listed\n\nIts math: $e^{i\\pi} = -1$.\n")
    res = CliRunner().invoke(main, ["docs", "--docs-dir", str(docs), "--check-instances", "2", "--build",
                                    "--site", str(root / "site"), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output.strip().splitlines()[-1])
    return {"docs": docs, "site": Path(out["site"]), "written": out["written"], "root": root}


def test_cli_reference_lists_every_command():
    text = cli_reference(main)
    for command in ("mdm-theory report", "mdm-theory docs", "mdm-theory bench"):
        assert f"`{command}`" in text
    assert "--full" in text and "--out" in text


def test_docs_command_generates_and_builds_strict(site):
    docs, built = site["docs"], site["site"]
    assert str(docs / "cli.md") in site["written"] and str(site["root"] / "mkdocs.yml") in site["written"]
    # the offline plugin writes page.html (no directory URLs), so the site opens from the file system
    for page in ("index.html", "cli.html", "findings.html", "theory/index.html", "search/search_index.js"):
        assert (built / page).is_file(), page
    entries = theory_entries()
    pages = sorted(p.name for p in (docs / "theory").glob("*.md"))
    assert len(pages) == len(entries) + 1 and "index.md" in pages
    c5 = (docs / "theory" / "c-5.md").read_text()
    for section in ("## Statement", "## How the engine checks it", "## Proof-step claims", "## Check", "## Findings"):
        assert section in c5
    assert (built / "theory" / "c-5.html").is_file()


def test_site_config_renders_math_offline_with_search_and_lemma_navigation(site):
    yml = (site["root"] / "mkdocs.yml").read_text()
    for needed in ("name: material", "pymdownx.arithmatex", "generic: true", "- search", "- offline",
                   "assets/katex/katex.min.js", "font: false"):
        assert needed in yml
    assert "http://" not in yml and "https://" not in yml  # nothing fetched at view time
    for asset in re.findall(r"^\s+- (assets/\S+)$", yml, flags=re.M):
        assert (site["docs"] / asset).is_file(), asset
    for claim in theory_entries():  # navigation by lemma
        assert f'"{claim.paper}": theory/' in yml
    assert f"methods/{EXTRA_METHOD}" in yml and '"A method page nobody listed"' in yml
    html = (site["site"] / "theory" / "c-5.html").read_text()
    assert 'class="arithmatex"' in html and "katex.min.js" in html


def test_committed_generated_files_are_up_to_date():
    """mkdocs.yml and the set-up block of getting-started.md as `mdm-theory docs` writes them now
    (a new docs/methods page or a changed run time needs `mdm-theory docs` run once)."""
    assert (REPO / "mkdocs.yml").read_text() == mkdocs_yml(REPO / "docs", theory_nav())
    text = (REPO / "docs" / "getting-started.md").read_text()
    assert setup_block() in text and text.count(SETUP_BEGIN) == 1 and text.count(SETUP_END) == 1
    # README's quick start and docs/performance.md's timing read the same measurement (validation/setup_text.py)
    from validation.docs import quick_start_block, report_timing_block

    assert quick_start_block() in (REPO / "README.md").read_text()
    assert report_timing_block() in (REPO / "docs" / "performance.md").read_text()


def test_findings_excerpts_are_whole_paragraphs_and_tables():
    findings = (REPO / "docs" / "findings.md").read_text()
    text = findings_excerpt(findings, ["C.5", "C.5.jensen", "C.5.concavity"])
    # a whole paragraph, from its first word to its last, and the formula it introduces
    assert "The proof of Lemma C.5 bounds" in text and "which it calls concave. It is not:" in text
    assert "f''(x) = (l-1)" in text
    # a table appears whole: with its header and separator, never as a lone row
    rows = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("|")]
    if rows:
        assert rows[0].startswith("| claim") and set(rows[1]) <= set("|-: ")
    # links are re-pointed from docs/theory/
    assert "](../findings.md#1-false" in text
    toy = "## 1. A\n\nFirst sentence about X.1. Second one.\n\n| a | b |\n|---|---|\n| X.1 | 2 |\n| Y | 3 |\n"
    got = findings_excerpt(toy, ["X.1"])
    assert "    First sentence about X.1. Second one." in got
    assert "    | a | b |\n    |---|---|\n    | X.1 | 2 |\n    | Y | 3 |" in got
    assert findings_excerpt(toy, ["X.10"]) == ""


_PATH = re.compile(r"`((?:numerics|theory|neural|validation|tests|docs)/[\w./*-]+\.(?:py|md))(?:::\w+)?`")


def test_docs_cite_only_files_in_the_repository():
    pages = [p for p in (REPO / "docs").rglob("*.md")]
    for page in pages:
        text = page.read_text()
        assert "MATH.md" not in text and "NEURAL.md" not in text, page
        for ref in _PATH.findall(text):
            assert list(REPO.glob(ref)), f"{page.relative_to(REPO)} cites {ref}, which is not in the repository"


@pytest.mark.parametrize("page, math", [("index.html", False), ("theory/c-5.html", True), ("findings.html", True)])
def test_docs_pages_render_in_headless_chromium(site, chromium, tmp_path, page, math):
    keep = os.environ.get("MDM_SCREENSHOTS")
    shot = (Path(keep) if keep else tmp_path) / f"docs-{page.replace('/', '-')}.png"
    res = browser_check(site["site"] / page, shot, width=1280)
    assert res["images_broken"] == 0 and res["broken_links"] == [], res
    assert res["page_width"] == 1280, "the page scrolls sideways"
    assert res["math_errors"] == 0
    if math:  # KaTeX ran (offline) and typeset the formulas: no raw LaTeX left for the reader
        assert res["math_rendered"] > 0, res
    with Image.open(shot) as img:
        assert img.size == (1280, res["page_height"])
