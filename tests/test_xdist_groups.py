"""The suite's ``--dist loadgroup`` keeps an ``xdist_group`` on one worker (the tiny report, the docs site and the
kernel groups are built once per run because of it).

pytest 9.2 gave nodes a structured id, and pytest-xdist 3.8's loadgroup, which marks a grouped test by appending
``@group`` to its node id, silently stopped grouping (pytest-xdist issue 1386): every group was built on both
workers. pyproject.toml keeps pytest below 9.2 until xdist follows; this test fails if the grouping is lost again.
"""

import pytest


@pytest.mark.xdist_group("grouping-check")
def test_a_grouped_test_carries_its_group_to_the_scheduler(request):
    if getattr(request.config.option, "loadgroup", False):  # an xdist worker under --dist loadgroup (make test)
        assert request.node.nodeid.endswith("@grouping-check"), request.node.nodeid
