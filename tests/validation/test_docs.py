"""The docs site: generated CLI reference and lemma pages, and `mkdocs build --strict`."""

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from validation.cli import main
from validation.docs import cli_reference, theory_entries

REPO = Path(__file__).resolve().parents[2]


def test_cli_reference_lists_every_command():
    text = cli_reference(main)
    for command in ("mdm-theory report", "mdm-theory docs", "mdm-theory bench"):
        assert f"`{command}`" in text
    assert "--full" in text and "--out" in text


def test_docs_command_generates_and_builds_strict(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for page in ("index.md", "getting-started.md", "derivations.md", "findings.md"):
        if (REPO / "docs" / page).exists():
            shutil.copy(REPO / "docs" / page, docs / page)
    res = CliRunner().invoke(main, ["docs", "--docs-dir", str(docs), "--check-instances", "2", "--build",
                                    "--site", str(tmp_path / "site"), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output.strip().splitlines()[-1])
    assert str(docs / "cli.md") in out["written"] and str(tmp_path / "mkdocs.yml") in out["written"]
    site = Path(out["site"])
    assert (site / "index.html").is_file() and (site / "cli" / "index.html").is_file()
    assert (site / "theory" / "index.html").is_file()
    entries = theory_entries()
    pages = sorted(p.name for p in (docs / "theory").glob("*.md"))
    assert "index.md" in pages
    if entries:
        assert len(pages) == len(entries) + 1
        c5 = (docs / "theory" / "c-5.md").read_text()
        for section in ("## Statement", "## How the engine checks it", "## Proof-step claims", "## Check",
                        "## Findings"):
            assert section in c5
        assert (site / "theory" / "c-5" / "index.html").is_file()
