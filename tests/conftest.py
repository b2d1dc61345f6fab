"""Hypothesis profiles: `dev` (default, random), `ci` (derandomized, set by .ci/run via
HYPOTHESIS_PROFILE=ci so a CI run is reproducible) and `quick` (engine environments)."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("dev", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
# CI: derandomized, half the default budget (the suite runs three times, once per env);
# the dev profile keeps exploring new examples on every run.
settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True,
                          max_examples=50, suppress_health_check=[HealthCheck.too_slow])
# The engine-free suites re-run inside each engine environment: a lighter pass there.
settings.register_profile("quick", parent=settings.get_profile("ci"), max_examples=8)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
