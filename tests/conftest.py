"""Shared pytest configuration: hypothesis profiles (numba compiles on first call, so no deadline).

The default profile is derandomized, so a CI run is reproducible (the examples are a fixed
function of each test); ``HYPOTHESIS_PROFILE=thorough`` explores fresh random examples.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", deadline=None, max_examples=40, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("thorough", deadline=None, max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
