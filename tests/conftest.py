"""Shared test configuration: hypothesis profiles.

``make test`` sets ``CI`` and runs the derandomized ``ci`` profile, so a green run is
reproducible; ``make fuzz`` selects the long ``fuzz`` profile.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=100)
settings.register_profile(
    "fuzz",
    deadline=None,
    max_examples=20_000,
    suppress_health_check=[HealthCheck.too_slow],
)

_profile = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
settings.load_profile(_profile)
