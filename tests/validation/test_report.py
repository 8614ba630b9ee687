"""`mdm-theory report` end to end at tiny size, resuming after an interruption, and its links."""

import json

import pytest
from click.testing import CliRunner

from validation.cli import main
from validation.experiments import EXPERIMENTS
from validation.report import broken_links, build_report


def test_report_command_end_to_end(tmp_path):
    out = tmp_path / "rep"
    res = CliRunner().invoke(main, ["report", "--tiny", "--out", str(out), "--no-progress", "--json"])
    summary = json.loads(res.output.strip().splitlines()[-1])
    assert res.exit_code == 0, (res.output, summary)
    index = out / "index.html"
    assert summary["index"] == str(index) and index.is_file()
    assert set(summary["experiments"]) == set(EXPERIMENTS)  # every registered experiment ran
    assert broken_links(index) == []
    page = index.read_text()
    # every figure is embedded as PNG with its SVG beside it, and every experiment has its JSON
    pngs = sorted(p.name for p in (out / "figures").glob("*.png"))
    assert pngs, "the report has no figures"
    for png in pngs:
        assert f'src="figures/{png}"' in page
        assert (out / "figures" / png.replace(".png", ".svg")).is_file()
    for name, info in summary["experiments"].items():
        saved = json.loads((out / "results" / f"{name}.json").read_text())
        assert saved["result"]["status"] == info["status"]
        assert saved["provenance"]["versions"]["numpy"]
        for line in info["missing"]:  # what is missing is said in the page
            assert line.split(":")[0] in page
    assert "commit" in page and "Provenance" in page
    # a second run reuses every point
    res2 = CliRunner().invoke(main, ["report", "--tiny", "--out", str(out), "--no-progress", "--json"])
    assert res2.exit_code == 0, res2.output
    assert json.loads(res2.output.strip().splitlines()[-1])["cache"]["stale"] == 0


def test_interrupted_report_resumes_without_recomputing(tmp_path, monkeypatch):
    from validation.experiments import cost

    real = cost._simulated_point
    calls = []

    def interrupted(*args):
        if len(calls) == 3:
            raise KeyboardInterrupt  # like Ctrl-C in the middle of the run
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(cost, "_simulated_point", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build_report(tmp_path, scale="tiny", only=["cost"], progress=False)
    assert len(calls) == 3
    monkeypatch.setattr(cost, "_simulated_point", lambda *a: calls.append(a) or real(*a))
    outcome = build_report(tmp_path, scale="tiny", only=["cost"], progress=False)
    n_points = len(outcome.results["cost"].tables["nfe"])
    assert len(calls) == n_points  # 3 before the interruption + only the rest after it
    assert outcome.cache_counts["hit"] >= 3


def test_broken_links_are_found(tmp_path):
    (tmp_path / "there.png").write_bytes(b"x")
    page = tmp_path / "p.html"
    page.write_text('<html><body id="top"><img src="there.png"><img src="missing.png">'
                    '<a href="#top">t</a><a href="#nowhere">n</a><a href="sub/x.json">j</a>'
                    '<a href="https://example.org/">remote</a></body></html>')
    bad = broken_links(page)
    assert sorted(bad) == sorted(["missing.png (no such file)", "#nowhere (no element with this id)",
                                  "sub/x.json (no such file)"])


def test_report_renders_in_headless_chromium(tmp_path):
    """The real-browser check (validation/screenshot.py); skipped where no Chromium is installed."""
    from validation.screenshot import browser_check, find_chromium

    if find_chromium() is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium)")
    outcome = build_report(tmp_path / "rep", scale="tiny", only=["cost"], progress=False)
    res = browser_check(outcome.index, tmp_path / "shot.png", height=1600)
    assert res["images_ok"] and res["images_ok"] > 0, res
    assert res["images_broken"] == 0 and res["broken_links"] == []
    assert res["screenshot_bytes"] > 10_000


def test_only_option_lists_every_experiment():
    from validation.commands.report import report_cmd
    from validation.experiments import EXPERIMENTS

    only = next(p for p in report_cmd.params if p.name == "only")
    assert list(only.type.choices) == list(EXPERIMENTS)
