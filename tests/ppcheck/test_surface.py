"""The public surface of ppcheck: the 24 names a port's author needs, each documented."""

from __future__ import annotations

import ppcheck
from tests.public_surface import public_modules, two_homes, undocumented

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
    assert len(ppcheck.__all__) <= 40
    assert sorted(ppcheck.__all__) == sorted(SURFACE)


def test_the_public_modules_are_the_ones_documented() -> None:
    names = [m.__name__ for m in public_modules("ppcheck")]
    assert names == ["ppcheck", "ppcheck.adapter"]
    for module in public_modules("ppcheck"):
        assert (module.__doc__ or "").strip(), module.__name__


def test_every_public_name_has_a_docstring() -> None:
    missing = [n for m in public_modules("ppcheck") for n in undocumented(m)]
    assert not missing, missing


def test_every_public_name_has_one_public_home() -> None:
    assert not two_homes("ppcheck")


def test_every_package_with_vectors_has_operation_schemas() -> None:
    """operation_schema reads each package's own schemas (not its top-level surface)."""
    for suite_file in ppcheck.load_suites():
        assert ppcheck.operation_schema(suite_file.suite, "input") is not None, suite_file.suite
