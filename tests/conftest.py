"""Shared pytest configuration: hypothesis profiles, and the suite's statistical false-failure budget.

Hypothesis: numba compiles on first call, so no deadline. The default profile is derandomized,
so a CI run is reproducible (the examples are a fixed function of each test);
``HYPOTHESIS_PROFILE=thorough`` explores fresh random examples.

Budget (:mod:`tests.gof`): every statistical assertion is counted; a session that makes more than
``MAX_STATISTICAL_TESTS`` of them fails, since its false-failure probability would exceed the
stated ``SUITE_FALSE_FAILURE_BUDGET``. Under pytest-xdist the workers report their counts to the
controller, which checks the total.
"""

import os
import sys

import pytest
from hypothesis import HealthCheck, settings

from tests import gof

settings.register_profile(
    "default", deadline=None, max_examples=40, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("thorough", deadline=None, max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

_WORKER_COUNTS: list[int] = []


@pytest.fixture(autouse=True)
def _close_figures():
    """Close every pyplot figure a test left open: a worker that ran 20 figure-making tests would
    otherwise turn matplotlib's "more than 20 figures" RuntimeWarning into a failure of whichever
    test happens to open the 21st."""
    yield
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close("all")


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):  # xdist controller: collect each worker's count
    _WORKER_COUNTS.append(int(getattr(node, "workeroutput", {}).get("statistical_tests", 0)))


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if hasattr(config, "workeroutput"):  # an xdist worker: report to the controller
        config.workeroutput["statistical_tests"] = gof.statistical_tests_run()
        return
    total = gof.statistical_tests_run() + sum(_WORKER_COUNTS)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if total > gof.MAX_STATISTICAL_TESTS:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        message = (f"the suite made {total} statistical assertions, more than MAX_STATISTICAL_TESTS = "
                   f"{gof.MAX_STATISTICAL_TESTS}: its false-failure budget {gof.SUITE_FALSE_FAILURE_BUDGET} no longer holds "
                   "(raise MAX_STATISTICAL_TESTS in tests/gof.py, which lowers ALPHA)")
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_line(message, red=True)
    elif reporter is not None and total:
        reporter.ensure_newline()
        reporter.write_line(f"statistical assertions: {total} of at most {gof.MAX_STATISTICAL_TESTS} "
                            f"(each at level {gof.ALPHA:.0e}; suite false-failure budget {gof.SUITE_FALSE_FAILURE_BUDGET})")
