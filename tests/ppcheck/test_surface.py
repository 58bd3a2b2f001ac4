"""The public surface of ppcheck: the 24 names a port's author needs, each documented."""

from __future__ import annotations

import ppcheck
from tests.public_surface import check_surface

SURFACE = {
    "PROTOCOLS",
    "Adapter",
    "Answer",
    "CaseOutcome",
    "Handler",
    "Result",
    "RunnerError",
    "StoppedError",
    "SuiteFile",
    "SuiteReport",
    "check_result",
    "data_root",
    "failure_count",
    "first_difference",
    "handler",
    "handlers",
    "junit_xml",
    "load_suites",
    "operation_schema",
    "run",
    "run_suites",
    "summary_line",
    "table",
    "vectors_schema",
}


def test_the_top_level_is_the_runner_surface() -> None:
    assert sorted(ppcheck.__all__) == sorted(SURFACE)


def test_the_surface_follows_the_conventions() -> None:
    check_surface("ppcheck", ["ppcheck", "ppcheck.adapter"])


def test_every_package_with_vectors_has_operation_schemas() -> None:
    """operation_schema reads each package's own schemas (not its top-level surface)."""
    for suite_file in ppcheck.load_suites():
        assert ppcheck.operation_schema(suite_file.suite, "input") is not None, suite_file.suite
