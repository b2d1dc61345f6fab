"""Hypothesis profiles: `dev` (default, random), `ci` (derandomized, set by .ci/run via
HYPOTHESIS_PROFILE=ci so a CI run is reproducible) and `quick` (engine environments)."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("dev", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
# CI: derandomized, half the default budget (the engine-free suites run in the core env, and
# in an engine env only where its numpy/pandas/pyarrow differ: scripts/pinned_tests.py);
# the dev profile keeps exploring new examples on every run.
settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True,
                          max_examples=50, suppress_health_check=[HealthCheck.too_slow])
# The engine-free tests an engine environment re-runs: a lighter pass there.
settings.register_profile("quick", parent=settings.get_profile("ci"), max_examples=8)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
