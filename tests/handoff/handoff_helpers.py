"""Shared builders for the handoff tests (a deployment, an extension registry, records)."""

from __future__ import annotations

from typing import Any

import handoff

ROLES = handoff.Roles.from_json(
    {
        "principal": "alice",
        "principal_side": ["alice-pa"],
        "requesters": {"house": ["bot-1", "registrar"]},
        "roles": {"auditor": ["audit-1"]},
    }
)
KEEP = handoff.Extension(
    "demo-keep",
    "0.3",
    "act",
    policy="keep",
    outcomes=frozenset({"done", "declined"}),
    reasons=frozenset({"obsolete"}),
)
STOP = handoff.Extension(
    "demo-stop",
    "0.3",
    "decide",
    policy="stop",
    outcomes=frozenset({"done", "declined"}),
    reasons=frozenset({"obsolete"}),
)
EXTS = handoff.ExtensionRegistry([KEEP, STOP])
TS = "2026-10-27T10:00:00Z"


def rec(rid: str, type_: str, origin: str, by: str, key: str = "k1", **more: Any) -> dict[str, Any]:
    """A record of project ``house`` in ``demo-keep/0.3`` unless ``ext`` is given."""
    out: dict[str, Any] = {
        "ph": "0.3",
        "ext": more.pop("ext", "demo-keep/0.3"),
        "id": rid,
        "type": type_,
        "origin": origin,
        "by": by,
        "key": key,
        "project": "house",
        "ts": TS,
    }
    out.update(more)
    return out


def raised(rid: str = "n1", key: str = "k1", **more: Any) -> dict[str, Any]:
    return rec(rid, "raised", "requester", "bot-1", key, terms={"text": "Pay"}, terms_rev=1, **more)


def amended(rid: str, rev: int, sup: list[str], key: str = "k1", **more: Any) -> dict[str, Any]:
    terms = {"text": f"Pay rev {rev}"}
    return rec(
        rid,
        "amended",
        "requester",
        "bot-1",
        key,
        terms=terms,
        terms_rev=rev,
        supersedes=sup,
        **more,
    )


def withdrawn(rid: str, sup: list[str], key: str = "k1", **more: Any) -> dict[str, Any]:
    return rec(
        rid, "withdrawn", "requester", "bot-1", key, reason="obsolete", supersedes=sup, **more
    )


def settled(rid: str, rev: int = 1, key: str = "k1", **more: Any) -> dict[str, Any]:
    more.setdefault("authority", {"kind": "principal", "decider": "alice"})
    more.setdefault("outcome", "done")
    return rec(rid, "settled", "principal", "alice-pa", key, terms_rev=rev, **more)


def reopened(rid: str, sup: list[str], key: str = "k1", **more: Any) -> dict[str, Any]:
    return rec(rid, "reopened", "principal", "alice-pa", key, supersedes=sup, **more)


def claimed(rid: str, key: str = "k1", **more: Any) -> dict[str, Any]:
    return rec(rid, "claimed", "agent", "helper-9", key, outcome="done", **more)


def registry() -> handoff.Registry:
    return handoff.Registry(roles=ROLES, extensions=EXTS)
