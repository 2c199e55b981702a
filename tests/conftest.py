"""Hypothesis profiles: 'ci' (default) is derandomised with a modest example count."""
import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=60, derandomize=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=300, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
