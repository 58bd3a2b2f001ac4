"""The shape of one adapter response (``schemas/conformance/response.schema.json``).

The harness checks every response line against that schema. It does so with this small
function rather than a JSON Schema engine so that the part of ppcheck that drives an
adapter imports nothing outside the standard library (``ppcheck.pyz`` runs on any Python
3.11+ with nothing installed). ``tests/ppcheck/test_ppcheck_response.py`` holds this
function to the schema through ``jsonschema`` on generated responses.
"""

from __future__ import annotations

from typing import Any

__all__ = ["response_problem"]

_KINDS = ("output", "error", "unsupported")
_MEMBERS = frozenset(("id", *_KINDS))
_ERROR_MEMBERS = frozenset(("code", "reason", "message"))


def _nonempty_string(value: Any) -> bool:
    return isinstance(value, str) and value != ""


def response_problem(response: Any) -> str | None:
    """Return why ``response`` is not a harness response, or ``None`` when it is one.

    A response is an object with a non-empty string ``id`` and exactly one of ``output``
    (an object), ``error`` (an object with a non-empty string ``code``, an optional
    non-empty string ``reason`` and an optional string ``message``, nothing else) or
    ``unsupported`` (``true``), and no other member.
    """
    if not isinstance(response, dict):
        return f"the response is a JSON {_json_type(response)}, not an object"
    extra = sorted(set(response) - _MEMBERS)
    if extra:
        return f"unexpected member {extra[0]!r}"
    if "id" not in response:
        return "the member 'id' is missing"
    if not _nonempty_string(response["id"]):
        return "'id' is not a non-empty string"
    kinds = [kind for kind in _KINDS if kind in response]
    if len(kinds) != 1:
        listed = " and ".join(repr(k) for k in kinds) if kinds else "none"
        return f"exactly one of 'output', 'error', 'unsupported' is required (got {listed})"
    kind = kinds[0]
    value = response[kind]
    if kind == "output":
        if not isinstance(value, dict):
            return f"'output' is a JSON {_json_type(value)}, not an object"
        return None
    if kind == "unsupported":
        if value is not True:
            return "'unsupported' is not true"
        return None
    if not isinstance(value, dict):
        return f"'error' is a JSON {_json_type(value)}, not an object"
    extra = sorted(set(value) - _ERROR_MEMBERS)
    if extra:
        return f"unexpected member {extra[0]!r} in 'error'"
    if not _nonempty_string(value.get("code")):
        return "'error.code' is missing or not a non-empty string"
    if "reason" in value and not _nonempty_string(value["reason"]):
        return "'error.reason' is not a non-empty string"
    if "message" in value and not isinstance(value["message"], str):
        return "'error.message' is not a string"
    return None


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"
