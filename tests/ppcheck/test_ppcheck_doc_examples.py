"""The harness messages shown in docs/conformance.md are valid and name real vectors.

A port author copies these lines; they must match the schemas in schemas/conformance/ and
the vectors they name, or the document teaches a protocol the runner rejects.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

import ppcheck

TOP = Path(__file__).resolve().parents[2]
DOC = (TOP / "docs" / "conformance.md").read_text(encoding="utf-8")
_JSON_BLOCK = re.compile(r"^[ \t]*```json[ \t]*\n(.*?)^[ \t]*```", re.MULTILINE | re.DOTALL)


def _schema(name: str) -> Draft202012Validator:
    path = TOP / "schemas" / "conformance" / f"{name}.schema.json"
    return Draft202012Validator(json.loads(path.read_text(encoding="utf-8")))


def _messages() -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for block in _JSON_BLOCK.findall(DOC)
        for line in block.splitlines()
        if line.strip()
    ]


def test_the_documented_messages_are_valid_and_real() -> None:
    messages = _messages()
    requests = [m for m in messages if "suite" in m]
    responses = [m for m in messages if "suite" not in m]
    assert requests
    assert {k for r in responses for k in r} >= {"output", "error", "unsupported"}
    cases = {(s.suite, c["id"]): c for s in ppcheck.load_suites() for c in s.tests}
    by_id = {case_id: case for (_, case_id), case in cases.items()}
    for request in requests:
        _schema("request").validate(request)
        case = cases[(request["suite"], request["id"])]
        assert request["input"] == case["input"]
    for response in responses:
        _schema("response").validate(response)
        case = by_id[response["id"]]
        if "unsupported" not in response:
            assert ppcheck.check_result(case, response) is None, response


def test_the_response_schema_refuses_what_the_doc_forbids() -> None:
    validator = _schema("response")
    bad = [
        {"id": "x", "output": {}, "elapsed": 3},
        {"id": "x", "output": {}, "unsupported": True},
        {"id": "x", "error": {"code": "c", "detail": "d"}},
        {"id": "x", "unsupported": False},
        {"id": 1, "output": {}},
        {"id": "x"},
    ]
    for message in bad:
        assert not validator.is_valid(message), message
    assert validator.is_valid({"id": "x", "error": {"code": "c", "reason": "r", "message": "m"}})
