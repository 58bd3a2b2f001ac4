"""ppcheck's reports have no truth value: ``if ppcheck.run(...)`` cannot read as a pass.

A ``Result`` that carries an error, a ``CaseOutcome`` that failed and a ``SuiteReport``
with failures are all objects, and objects are true; so each of them refuses ``bool()``
with a ``TypeError`` naming what to read instead (the same rule as ``vxp.Verdict`` and
``parley.GrantCheck``).
"""

from __future__ import annotations

import pytest

import ppcheck


def _refused() -> ppcheck.Result:
    """The library's answer to the first shipped vector that expects a refusal."""
    for suite in ppcheck.load_suites():
        for case in suite.tests:
            if "error" in case:
                result = ppcheck.run(suite.suite, case["input"])
                assert result.error is not None
                return result
    raise AssertionError("no vector expects a refusal")


@pytest.mark.parametrize(
    "report",
    [
        _refused(),
        ppcheck.Result(output={}),
        ppcheck.CaseOutcome("a", "failed", "the first difference"),
        ppcheck.SuiteReport("vxp.x", "vxp/x.json", (ppcheck.CaseOutcome("a", "failed"),)),
    ],
    ids=["refused-result", "output-result", "failed-case", "failed-suite"],
)
def test_a_report_refuses_a_truth_value(report: object) -> None:
    """``bool(report)`` raises, and the message names the field to read."""
    with pytest.raises(TypeError, match="is a report; read"):
        bool(report)


def test_the_runner_still_reads_its_reports() -> None:
    """Running suites end to end never asks a report for its truth value."""
    suites = [s for s in ppcheck.load_suites() if s.data["suite"] == "vxp.merkle_tree_hash"]
    reports = ppcheck.run_suites(suites, jobs=1)
    assert ppcheck.failure_count(reports) == 0
    assert "passed" in ppcheck.summary_line(reports)
