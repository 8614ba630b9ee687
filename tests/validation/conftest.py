"""Fixtures of the validation tests: a real headless browser for the render checks.

CI runs as root on Debian: when no Chromium is installed the fixture installs Debian's package
(``validation.screenshot.install_chromium``, apt-get with a time limit). Where none can be had
the browser tests fail -- they are never skipped.
"""

import pytest

from validation.screenshot import install_chromium

APT_TIMEOUT_S = 900  # apt-get update + install on a cold CI machine


@pytest.fixture(scope="session")
def chromium():
    browser = install_chromium(timeout=APT_TIMEOUT_S)
    if browser is None:
        pytest.fail("no headless Chromium and none could be installed (apt-get install -y chromium as root); "
                    "the report and docs render checks need one")
    return browser
