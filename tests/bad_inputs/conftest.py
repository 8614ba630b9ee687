"""The one uninterrupted report the report faults compare against (computed once per test process)."""

from __future__ import annotations

import pytest

from tests.bad_inputs._helpers import REPORT, cache_entries, invoke, report_result
from tests.strict_json import strict_json


@pytest.fixture(scope="session")
def reference(tmp_path_factory):
    """An uninterrupted report: ``(folder, summary, result)``."""
    out = tmp_path_factory.mktemp("reference") / "report"
    r = invoke([*REPORT, "--out", out])
    assert r.exit_code == 0, r.output
    summary = strict_json(r.stdout)
    assert summary["cache"]["miss"] == len(cache_entries(out)) > 1
    return out, summary, report_result(out)
