"""Hypothesis profiles: `dev` (default, random) and `ci` (derandomized, set by .ci/run via
HYPOTHESIS_PROFILE=ci so a CI run is reproducible)."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("dev", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
