"""``mdm-theory plot``: a sweep table and a calibrate result drawn as PNG and SVG, never over a stranger's file."""

import json

from click.testing import CliRunner

from validation.cli import main
from validation.plot import load_rows, series


def _estimate(value, lo=None, hi=None, method="mc (x)", samples=100):
    return {"value": value, "stderr": 0.0, "ci_low": lo, "ci_high": hi, "confidence": 0.95 if lo is not None else None,
            "method": method, "samples": samples, "exact": lo is None}


def _sweep(path):
    rows = [{"config": {"language": "2gram", "length": 8, "steps": n, "sampler": s, "block_length": b},
             "result": {"ser": _estimate(v, v - 0.01, v + 0.02), "calls": _estimate(float(n), method="formula"),
                        "inputs": {"steps": n}}}
            for n, s, b, v in [(2, "random", None, 0.5), (4, "random", None, 0.3), (2, "llada", 4, 0.4), (4, "llada", 4, 0.2)]]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_series_split_by_columns_with_intervals(tmp_path):
    rows = load_rows(_sweep(tmp_path / "t.jsonl"))
    got = series(rows, "calls", "ser", ["sampler", "block_length"])
    assert got == {"sampler=random, block_length=None": [(2.0, 0.5, 0.49, 0.52), (4.0, 0.3, 0.29, 0.32)],
                   "sampler=llada, block_length=4": [(2.0, 0.4, 0.39, 0.42000000000000004), (4.0, 0.2, 0.19, 0.22)]}


def test_plot_writes_png_and_svg_and_refuses_a_strangers_file(tmp_path):
    table = _sweep(tmp_path / "t.jsonl")
    r = CliRunner().invoke(main, ["plot", str(table), "--x", "calls", "--y", "ser", "--by", "sampler", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert "Monte Carlo samples per point: 100" in out["caption"] and "mc (x)" in out["caption"]
    for ext in ("png", "svg"):
        assert (tmp_path / f"t_ser_vs_calls.{ext}").stat().st_size > 0
    again = CliRunner().invoke(main, ["plot", str(table), "--x", "calls", "--y", "ser"])
    assert again.exit_code == 0, again.output  # its own figure is replaced
    (tmp_path / "mine.png").write_text("notes")
    refused = CliRunner().invoke(main, ["plot", str(table), "--x", "calls", "--y", "ser", "--out", str(tmp_path / "mine")])
    assert refused.exit_code == 2 and "is not an mdm-theory plot figure" in refused.output
    assert (tmp_path / "mine.png").read_text() == "notes" and not (tmp_path / "mine.svg").exists()


def test_a_column_no_row_has_is_named(tmp_path):
    r = CliRunner().invoke(main, ["plot", str(_sweep(tmp_path / "t.jsonl")), "--x", "calls", "--y", "sre"])
    assert r.exit_code == 2 and "--y sre: no such column" in r.output and "ser" in r.output


def test_calibrate_results_plot_the_searched_metric(tmp_path):
    setting = {"family": "topk", "parameter": "steps", "value": 2.0, "label": "topk N=2", "calls": _estimate(2.0),
               "metric": _estimate(0.3, 0.2, 0.4), "quantity": "ser", "status": "meets"}
    cal = {"language": "2gram", "length": 4, "metric": "ser", "families": [{"family": "topk", "settings": [setting]}]}
    (tmp_path / "c.json").write_text(json.dumps(cal))
    rows = load_rows(tmp_path / "c.json")
    assert series(rows, "calls", "ser", ["sampler"]) == {"sampler=topk": [(2.0, 0.3, 0.2, 0.4)]}


def test_old_spellings_still_parse():
    r = CliRunner().invoke(main, ["bounds", "--lemma", "4.4", "--L", "40", "--N", "16", "--json"])
    new = CliRunner().invoke(main, ["bounds", "--lemma", "4.4", "-L", "40", "-N", "16", "--json"])
    assert r.exit_code == new.exit_code == 0 and json.loads(r.stdout)["lhs"] == json.loads(new.stdout)["lhs"]
