"""Every vector of every common-format suite: schema-valid, and reproduced by the library."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from jsonschema import Draft202012Validator

import ppcheck

SUITES = ppcheck.load_suites()
CASES = [(s, case) for s in SUITES for case in s.tests]


def test_there_are_suites() -> None:
    assert SUITES, "vectors/ holds no suite"


@pytest.mark.parametrize("suite_file", SUITES, ids=[s.path for s in SUITES])
def test_suite_file_is_valid(suite_file: ppcheck.SuiteFile) -> None:
    Draft202012Validator(ppcheck.vectors_schema()).validate(suite_file.data)
    package = suite_file.path.split("/")[0]
    assert suite_file.suite.startswith(package + "."), "a suite lives in its package's folder"
    used = {flag for case in suite_file.tests for flag in case["flags"]}
    assert used <= set(suite_file.data["notes"]), "every flag has a note"
    ids = [case["id"] for case in suite_file.tests]
    assert len(ids) == len(set(ids)), "vector ids are unique within a suite"


def _validate_part(suite: str, part: str, value: Any) -> None:
    """Validate with the package's own validator, so `$ref`s resolve exactly as in use."""
    package, _, operation = suite.partition(".")
    name = f"vectors/{operation}.{part}.json"
    assert ppcheck.operation_schema(suite, part) is not None, (
        f"operation {suite} has no {part} schema"
    )
    schemas = importlib.import_module(f"{package}._schemas")
    schemas.validator(name).validate(value)


@pytest.mark.parametrize(
    ("suite_file", "case"), CASES, ids=[f"{s.suite}::{c['id']}" for s, c in CASES]
)
def test_vector(suite_file: ppcheck.SuiteFile, case: dict[str, Any]) -> None:
    _validate_part(suite_file.suite, "input", case["input"])
    if "output" in case:
        _validate_part(suite_file.suite, "output", case["output"])
    result = ppcheck.run(suite_file.suite, case["input"]).as_json()
    problem = ppcheck.check_result(case, result)
    assert problem is None, problem
