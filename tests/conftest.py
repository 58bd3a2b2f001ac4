"""Shared test configuration: hypothesis profiles, the order pytest-xdist hands out tests,
the throwaway PostgreSQL cluster.

``make test`` sets ``CI`` and runs the derandomized ``ci`` profile, so a green run is
reproducible; ``make fuzz`` selects the long ``fuzz`` profile.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from tests.pgcluster import Cluster, require_postgres, start_cluster

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``pytest -n`` (``make test``), hand out the ``slow`` tests first.

    pytest-xdist gives tests to its workers in collection order; a long test that starts
    last keeps one core busy while the other idles, so the tests marked ``slow`` (servers,
    processes, builds) go first and the many short ones fill in behind them. The sort is
    stable and the same in every worker, as xdist requires; a serial run keeps file order.
    """
    if "PYTEST_XDIST_WORKER" in os.environ:  # the workers collect; the controller does not
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)


# ---------------------------------------------------------------- PostgreSQL (issue 23)
# One throwaway cluster per test session, started on first use (tests/pgcluster.py); each
# test asking for ``postgres_url`` gets a fresh database, dropped after it.


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Cluster]:
    """The session's throwaway PostgreSQL cluster (skips, or fails under PP_REQUIRE_POSTGRES)."""
    found = start_cluster()
    if isinstance(found, str):
        require_postgres(found)
        raise AssertionError("unreachable")
    try:
        yield found
    finally:
        found.stop()


@pytest.fixture
def postgres_url(postgres_cluster: Cluster) -> Iterator[str]:
    """The URL of a fresh, empty database in the session's cluster."""
    url = postgres_cluster.create_database()
    try:
        yield url
    finally:
        postgres_cluster.drop_database(url)
