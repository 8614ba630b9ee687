"""Fixtures of the validation tests: a real headless browser for the render checks, and one tiny report.

CI runs as root on Debian: when no Chromium is installed the fixture installs Debian's package
(``validation.screenshot.install_chromium``, apt-get with a time limit). Where none can be had
the browser tests fail -- they are never skipped.
"""

import json
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from validation.screenshot import install_chromium

APT_TIMEOUT_S = 900  # apt-get update + install on a cold CI machine


@pytest.fixture(scope="session")
def chromium():
    browser = install_chromium(timeout=APT_TIMEOUT_S)
    if browser is None:
        pytest.fail("no headless Chromium and none could be installed (apt-get install -y chromium as root); "
                    "the report and docs render checks need one")
    return browser


@pytest.fixture(scope="session")
def tiny_report_run(tmp_path_factory):
    """``mdm-theory report --tiny --json`` run once: the end-to-end checks and the browser checks read the same page.

    Returns ``out`` (the report folder), ``exit_code``, ``output`` (the command's stdout) and ``summary`` (its
    last line's JSON). Tests that use it carry ``pytest.mark.xdist_group("tiny-report")``: ``--dist loadgroup``
    runs a group on one worker, so the report is built once per test run, not once per worker.
    """
    from validation.cli import main

    out = tmp_path_factory.mktemp("tiny-report") / "rep"
    res = CliRunner().invoke(main, ["report", "--tiny", "--out", str(out), "--no-progress", "--json"])
    summary = json.loads(res.output.strip().splitlines()[-1])
    return SimpleNamespace(out=out, exit_code=res.exit_code, output=res.output, summary=summary)
