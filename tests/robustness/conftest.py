"""Hypothesis settings for the robustness suite.

Two profiles: ``ci`` (the default: a few examples per property, so the suite stays well
inside the test command's time) and ``slow`` (many examples, for a long run), chosen by
``RETAIN_HYPOTHESIS_PROFILE=slow`` or ``pytest --slow``; ``RETAIN_HYPOTHESIS_EXAMPLES=N``
sets the examples per property of the profile chosen (``bench/reliability.py`` passes
its count this way). No profile has a deadline: how long an example takes depends on
how busy the machine is, never on whether it is right.

The properties take the ``service`` fixture, one store per test and backend, and each
example opens a realm of its own on it (``tests.robustness.strategies.fresh``), so no
example sees another's rows; that is why Hypothesis's warning about function-scoped
fixtures (which are not reset between examples) is silenced.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

_QUIET = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large]

settings.register_profile(
    "ci", max_examples=8, deadline=None, suppress_health_check=_QUIET, database=None
)
settings.register_profile("slow", max_examples=400, deadline=None, suppress_health_check=_QUIET)


def pytest_configure(config: pytest.Config) -> None:
    slow = config.getoption("--slow", default=False)
    profile = "slow" if slow else os.environ.get("RETAIN_HYPOTHESIS_PROFILE", "ci")
    examples = os.environ.get("RETAIN_HYPOTHESIS_EXAMPLES")
    if examples:
        settings.register_profile(
            f"{profile}-{examples}", settings.get_profile(profile), max_examples=int(examples)
        )
        profile = f"{profile}-{examples}"
    settings.load_profile(profile)
