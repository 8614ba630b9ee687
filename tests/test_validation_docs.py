"""The docs site: generated CLI reference and lemma pages, and `mkdocs build --strict`."""

import shutil
from pathlib import Path

import pytest

from validation.docs import build_site, cli_reference, generate_docs, theory_entries

REPO = Path(__file__).resolve().parents[1]


def test_cli_reference_lists_every_command():
    text = cli_reference()
    for command in ("mdm-theory report", "mdm-theory docs", "mdm-theory bench"):
        assert f"`{command}`" in text
    assert "--full" in text and "--out" in text


def test_docs_generate_and_build_strict(tmp_path):
    pytest.importorskip("mkdocs")
    docs = tmp_path / "docs"
    docs.mkdir()
    for page in ("index.md", "getting-started.md", "derivations.md", "findings.md"):
        if (REPO / "docs" / page).exists():
            shutil.copy(REPO / "docs" / page, docs / page)
    written = generate_docs(docs, check_instances=2)
    assert docs / "cli.md" in written and tmp_path / "mkdocs.yml" in written
    entries = theory_entries()
    pages = sorted(p.name for p in (docs / "theory").glob("*.md"))
    assert "index.md" in pages
    if entries:
        assert len(pages) == len(entries) + 1
        c5 = (docs / "theory" / "c-5.md").read_text()
        assert "## Statement" in c5 and "## How the engine checks it" in c5 and "## Findings" in c5
    site = build_site(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert (site / "index.html").is_file() and (site / "cli" / "index.html").is_file()
    assert (site / "theory" / "index.html").is_file()
