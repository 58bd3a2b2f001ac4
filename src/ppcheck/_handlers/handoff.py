"""Vector operations of Principal Handoff Core (``handoff.*``), through the public API."""

from __future__ import annotations

from typing import Any

import handoff

from .._registry import handler


def _config(input_: dict[str, Any]) -> tuple[handoff.Roles, handoff.ExtensionRegistry]:
    return (
        handoff.Roles.from_json(input_["roles"]),
        handoff.ExtensionRegistry.from_json(input_["extensions"]),
    )


@handler("handoff.validate")
def validate(input_: dict[str, Any]) -> dict[str, Any]:
    """Admit one record (``record`` object or ``line`` text); return its verdict."""
    roles, extensions = _config(input_)
    record = handoff.parse_record(input_["line"]) if "line" in input_ else input_["record"]
    return handoff.check_record(record, roles=roles, extensions=extensions).to_json()


@handler("handoff.fold")
def fold(input_: dict[str, Any]) -> dict[str, Any]:
    """Add ``records`` in order to a fresh registry; return statuses, states and conflicts."""
    roles, extensions = _config(input_)
    registry = handoff.Registry(roles=roles, extensions=extensions)
    statuses: list[dict[str, Any]] = []
    for record in input_["records"]:
        try:
            added = registry.add(record)
        except handoff.HandoffError as exc:
            entry: dict[str, Any] = {"status": "rejected", "code": exc.code}
            if exc.reason is not None:
                entry["reason"] = exc.reason
            statuses.append(entry)
            continue
        status: dict[str, Any] = {"status": added.status}
        if added.why is not None:
            status["why"] = added.why
        statuses.append(status)
    return {
        "statuses": statuses,
        "items": [state.to_json() for state in registry.states().values()],
        "conflicts": [c.to_json() for c in registry.conflicts()],
    }


@handler("handoff.schema")
def schema(input_: dict[str, Any]) -> dict[str, Any]:
    """Validate ``instance`` against ``schema`` with both validators (they must agree)."""
    verdicts = []
    for fast in (False, True):
        try:
            handoff.schemas.check_schema(input_["schema"], input_["instance"], fast=fast)
        except handoff.HandoffError as exc:
            if exc.code != "schema":
                raise
            verdicts.append(False)
        else:
            verdicts.append(True)
    if verdicts[0] != verdicts[1]:
        raise RuntimeError(f"the two validators disagree on {input_!r}")
    return {"valid": verdicts[0]}


@handler("handoff.digest")
def digest(input_: dict[str, Any]) -> dict[str, Any]:
    """Return the JCS form and the ``sha-256:`` digest of ``value``."""
    value = input_["value"]
    return {
        "canonical": handoff.digests.canonical(value).decode("utf-8"),
        "digest": handoff.digests.digest(value),
    }
