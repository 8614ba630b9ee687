"""Faults in what a run leaves behind: corrupt cached results and rows, two reports on one ``--out``.

A cached result or a table row that does not check out is recomputed (or, for a sweep table
without ``--drop-bad-rows``, refused by line number), never reused; two ``report`` processes on
one output folder compute each cache entry once and leave a whole report. The reference is one
uninterrupted ``report --tiny --only lemmas`` run (about two seconds of claims).
"""

from __future__ import annotations

import json
import shutil

from tests.bad_inputs._helpers import (
    REPORT,
    cache_entries,
    cli_process,
    invoke,
    refused,
    report_result,
    without_timing,
)
from tests.strict_json import strict_json


def test_corrupt_cached_results_are_recomputed_never_reused(reference, tmp_path):
    ref_out, _, ref_result = reference
    out = tmp_path / "report"
    shutil.copytree(ref_out, out)
    entries = cache_entries(out)
    edited, truncated, stale = entries[0], entries[1], entries[2]
    entry = json.loads(edited.read_text())
    entry["result"] = json.loads(json.dumps(entry["result"]).replace('"violations": 0', '"violations": 7'))
    assert json.dumps(entry["result"]) != json.dumps(json.loads(edited.read_text())["result"])
    edited.write_text(json.dumps(entry))  # valid JSON, a different result: only the checksum tells
    truncated.write_bytes(truncated.read_bytes()[:100])
    entry = json.loads(stale.read_text())
    stale.write_text(json.dumps({**entry, "format": entry["format"] - 1}))  # an older cache layout

    r = invoke([*REPORT, "--out", out])
    assert r.exit_code == 0, r.output
    counts = strict_json(r.stdout)["cache"]
    assert counts == {"hit": len(entries) - 3, "miss": 0, "stale": 1, "corrupt": 2}
    assert report_result(out) == ref_result  # the recomputed values, not the edited ones
    page = (out / "index.html").read_text()
    assert "1 stale and 2 corrupt entries recomputed" in page and "result checksum mismatch" in page
    again = invoke([*REPORT, "--out", out])  # the rewritten entries are whole again
    assert strict_json(again.stdout)["cache"] == {"hit": len(entries), "miss": 0, "stale": 0, "corrupt": 0}


def test_a_corrupt_sweep_row_is_refused_by_line_then_recomputed_on_request(tmp_path):
    table = tmp_path / "t.jsonl"
    sweep = ["sweep", "--languages", "2gram", "--lengths", "3", "-N", "2,3,4", "--out", table, "--no-progress"]
    assert invoke([*sweep, "--json"]).exit_code == 0
    lines = table.read_text().splitlines()
    good = {json.loads(line)["config_hash"]: without_timing(json.loads(line)["result"]) for line in lines}
    row = json.loads(lines[1])
    row["result"]["ser"]["value"] = 0.5  # an edited number: the row hash no longer matches
    table.write_text("\n".join([lines[0], json.dumps(row), lines[2][: len(lines[2]) // 2]]) + "\n")
    refused(sweep, r"2 bad row\(s\): line 2: result does not match its row_hash .*line 3: unreadable row")
    r = invoke([*sweep, "--drop-bad-rows", "--json"])
    assert r.exit_code == 0, r.output
    report = strict_json(r.stdout)
    assert report["computed"] == 2 and report["skipped"] == 1 and len(report["bad_rows"]) == 2
    rows = [json.loads(line) for line in table.read_text().splitlines()]
    assert {r["config_hash"]: without_timing(r["result"]) for r in rows} == good


def test_two_report_processes_on_one_out_compute_each_entry_once(reference, tmp_path):
    _, _, ref_result = reference
    out = tmp_path / "shared"
    logs = [tmp_path / f"report{k}.log" for k in range(2)]
    procs = [cli_process([*REPORT, "--out", out], log) for log in logs]
    for p in procs:
        p.wait(timeout=300)
    assert [p.returncode for p in procs] == [0, 0], [log.read_text() for log in logs]
    summaries = [strict_json(log.read_text().strip().splitlines()[-1]) for log in logs]
    n = len(cache_entries(out))
    assert sum(s["cache"]["miss"] for s in summaries) == n  # every entry computed by one process only
    assert sum(s["cache"]["hit"] for s in summaries) == n
    assert all(s["cache"]["corrupt"] == s["cache"]["stale"] == 0 for s in summaries)
    assert report_result(out) == ref_result
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp") or ".tmp." in p.name]
    r = invoke([*REPORT, "--out", out])
    assert strict_json(r.stdout)["cache"] == {"hit": n, "miss": 0, "stale": 0, "corrupt": 0}
