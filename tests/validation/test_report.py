"""`mdm-theory report` end to end at tiny size, resuming after an interruption, and its links.

The browser check of the page (headless Chromium screenshots) is tests/validation/test_screenshots.py.
"""

import json
import re

import pytest
from click.testing import CliRunner

from validation.cli import main
from validation.experiments import EXPERIMENTS
from validation.experiments._base import STATUS_LEGEND, ExperimentResult, Plot
from validation.report import broken_links, build_report
from validation.setup_text import MAKE_REPORT_MINUTES, run_time_sentence


def _no_constants(token):
    raise ValueError(f"non-standard JSON token {token}")


def strict_load(path):
    """json.loads refusing NaN / Infinity (RFC 8259), as other JSON readers do."""
    return json.loads(path.read_text(), parse_constant=_no_constants)


@pytest.mark.xdist_group("tiny-report")
def test_report_command_end_to_end(tiny_report_run):
    out, summary = tiny_report_run.out, tiny_report_run.summary  # `report --tiny --json`, run once (conftest)
    assert tiny_report_run.exit_code == 0, (tiny_report_run.output, summary)
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
        saved = strict_load(out / "results" / f"{name}.json")
        assert saved["result"]["status"] == info["status"]
        assert saved["provenance"]["versions"]["numpy"]
        for line in info["missing"]:  # what is missing is said in the page
            assert line.split(":")[0] in page
        # the section's heading carries the status badge, never a green ok for a non-ok status
        heading = re.search(rf'<h2 id="{name}">.*?</h2>', page).group(0)
        assert f'class="badge {info["status"]}"' in heading
        if info["status"] != "ok":
            assert 'class="badge ok"' not in heading
    for status in STATUS_LEGEND:  # the legend explains every badge
        assert f'<span class="badge {status}">{status}</span>' in page
    assert "MATH.md" not in page and "NEURAL.md" not in page  # files that are not in the repository
    assert run_time_sentence().split("`")[0] in page and f"about {MAKE_REPORT_MINUTES} minutes" in page
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


def _log_of_nothing(result):
    """A figure matplotlib cannot save: an infinite perplexity at every N on a log-N axis, as
    `report --checkpoint` met on a model of a pruned language ("Data cannot be log-scaled")."""
    from validation.experiments._style import new_figure

    fig, axes = new_figure()
    axes[0, 0].plot([1, 2], [float("inf")] * 2)
    axes[0, 0].axhline(3.4)
    axes[0, 0].set_xscale("log", base=2)
    return [Plot("broken", fig, "a figure that cannot be drawn")] + real_cost_plot(result)


real_cost_plot = EXPERIMENTS["cost"].plot


def test_a_figure_that_cannot_be_drawn_is_reported_and_the_page_is_written(tmp_path, monkeypatch):
    monkeypatch.setattr(EXPERIMENTS["cost"], "plot", _log_of_nothing)
    outcome = build_report(tmp_path, scale="tiny", only=["cost"], progress=False)
    page = outcome.index.read_text()
    assert "Figure <code>broken</code> could not be drawn:</strong> ValueError: Data cannot be log-scaled" in page
    assert not (tmp_path / "figures" / "cost_broken.png").exists()
    assert not list((tmp_path / "figures").glob(".*"))  # no half-written temporary file left
    assert (tmp_path / "figures" / "cost_nfe_vs_steps.png").is_file()  # the other figure is still there
    assert broken_links(outcome.index) == []


def test_a_plot_function_that_raises_is_reported_and_the_page_is_written(tmp_path, monkeypatch):
    def boom(result):
        raise RuntimeError("plotting bug")

    monkeypatch.setattr(EXPERIMENTS["cost"], "plot", boom)
    outcome = build_report(tmp_path, scale="tiny", only=["cost"], progress=False)
    assert "could not be drawn:</strong> RuntimeError: plotting bug" in outcome.index.read_text()


def test_non_finite_results_are_written_as_strict_json_and_shown(tmp_path, monkeypatch):
    """An infinite perplexity (a pruned language) is legal data: strict JSON on disk, shown as such."""
    cost = EXPERIMENTS["cost"]

    def infinite(cfg, cache=None, progress=False, strict=False):
        out = ExperimentResult("cost", cost.TITLE, config={"x": float("inf")},
                               tables={"t": [{"gen_ppl": float("inf"), "kl": float("nan"), "ok": 1.0}]})
        out.findings.append("a finding")
        return out.finish(0.0)

    monkeypatch.setattr(cost, "run", infinite)
    monkeypatch.setattr(cost, "plot", lambda result: [])
    outcome = build_report(tmp_path, scale="tiny", only=["cost"], progress=False)
    saved = strict_load(tmp_path / "results" / "cost.json")
    row = saved["result"]["tables"]["t"][0]
    assert row["ok"] == 1.0 and row["gen_ppl"] is None and row["kl"] is None  # null, with the reason beside it
    assert row["null_reason"]["gen_ppl"].startswith("+inf") and row["null_reason"]["kl"].startswith("NaN")
    assert saved["result"]["status"] == "finding"
    page = outcome.index.read_text()
    assert "&infin;" in page and 'class="badge finding"' in page and "a finding" in page


def test_long_tables_start_collapsed_and_short_ones_open(tmp_path, monkeypatch):
    from validation.report import OPEN_TABLE_ROWS

    cost = EXPERIMENTS["cost"]

    def tables(cfg, cache=None, progress=False, strict=False):
        return ExperimentResult("cost", cost.TITLE, config={}, tables={
            "short": [{"a": k} for k in range(OPEN_TABLE_ROWS)],
            "long": [{"a": k} for k in range(OPEN_TABLE_ROWS + 1)]}).finish(0.0)

    monkeypatch.setattr(cost, "run", tables)
    monkeypatch.setattr(cost, "plot", lambda result: [])
    page = build_report(tmp_path, scale="tiny", only=["cost"], progress=False).index.read_text()
    assert "<details open><summary>Table <code>short</code>" in page
    assert "<details><summary>Table <code>long</code>" in page
    assert page.count('<div class="tablewrap">') >= 2  # a wide table scrolls in its box, not the page


def test_only_option_lists_every_experiment():
    from validation.commands.report import report_cmd
    from validation.experiments import EXPERIMENTS

    only = next(p for p in report_cmd.params if p.name == "only")
    assert list(only.type.choices) == list(EXPERIMENTS)


def test_module_docstrings_are_shown_as_text_not_markup():
    from validation.report import _doc_paragraphs

    html = _doc_paragraphs("Title.\n\nThe *simulated* and **exact** ``N`` (:func:`numerics.schedules.make_schedule`).\n\n"
                           "* first\n* second <b>")
    assert "<em>simulated</em>" in html and "<strong>exact</strong>" in html and "<code>N</code>" in html
    assert "<code>numerics.schedules.make_schedule</code>" in html
    assert "<li>first</li>" in html and "second &lt;b&gt;" in html and "*" not in html


def test_a_warm_up_lane_releases_its_sections_after_its_tiny_runs(tmp_path, monkeypatch, capsys):
    """--jobs 2 with a warm-up lane (validation.report.WARM_LANES): the lane's tiny run happens first (its line
    printed, nothing of it cached), then its sections run, with the results of the one-at-a-time run."""
    import validation.report as report

    only = ["schedules", "thresholds"]
    monkeypatch.setattr(report, "WARM_LANES", (((("thresholds", {"points": 5}),), ("thresholds",)), ((), ())))
    one = build_report(tmp_path / "a", scale="tiny", only=only, progress=False)
    two = build_report(tmp_path / "b", scale="tiny", only=only, progress=True, jobs=2)
    err = capsys.readouterr().err
    assert "lane 1: tiny runs of thresholds" in err and "lane 1 compiled in" in err and not two.errors
    done = re.search(r"section \d/2 thresholds: \w+ in", err)
    assert done and err.index("lane 1 compiled in") < done.start()  # the section ran after its lane
    assert two.cache_counts == one.cache_counts  # the tiny run stored nothing
    for name in only:
        assert json.dumps(two.results[name].tables, sort_keys=True, default=str) == json.dumps(
            one.results[name].tables, sort_keys=True, default=str)


def test_sections_run_two_at_a_time_give_the_same_report(tmp_path):
    """make report's --jobs 2: the sections in two worker processes give the results, order and cache
    counts of the one-at-a-time run (they share only the cache)."""
    only = ["schedules", "thresholds", "lossless"]
    one = build_report(tmp_path / "a", scale="tiny", only=only, progress=False)
    two = build_report(tmp_path / "b", scale="tiny", only=only, progress=False, jobs=2)
    assert list(two.results) == only and not two.errors
    for name in only:
        assert two.results[name].status == one.results[name].status
        assert json.dumps(two.results[name].tables, sort_keys=True, default=str) == json.dumps(
            one.results[name].tables, sort_keys=True, default=str)
    assert two.cache_counts == one.cache_counts and two.cache_counts["miss"] > 0
    figures = sorted(f.name for f in (tmp_path / "a" / "figures").iterdir())  # drawn by the workers, the same
    assert figures and figures == sorted(f.name for f in (tmp_path / "b" / "figures").iterdir())
    assert all(f'src="figures/{f}"' in two.index.read_text() for f in figures if f.endswith(".png"))
