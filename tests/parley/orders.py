"""The coffee order the authorization-core tests propose, consent to and commit.

One copy of the proposal (and of the ``COMMIT`` check against it) that the caveat, grant
verification, spend and consent, key store and terminal tests share; each test states
the members it changes (``order(cost=None, risk="high")``).
"""

from __future__ import annotations

from typing import Any

import parley

NOW = 1_790_000_000
P = parley.key_from_seed(b"\x01" * 32)  # the principal
A = parley.key_from_seed(b"\x02" * 32)  # the agent
OP = parley.key_from_seed(b"\x05" * 32)  # another principal


def order(**over: Any) -> dict[str, Any]:
    """A fresh "Order 2 coffees" proposal: 12.50 USD, low risk, undoable for ten minutes,
    expiring ten minutes after ``NOW``; ``over`` replaces members."""
    base: dict[str, Any] = {
        "id": "p_1",
        "capability": "shop.order",
        "summary": "Order 2 coffees",
        "effects": [{"op": "charge", "target": "card", "to": 1250}],
        "cost": {"amount": 1250, "currency": "USD"},
        "risk": "low",
        "undo": {"window": 600},
        "expires": NOW + 600,
    }
    return base | over


def commit_context(**kw: Any) -> parley.GrantContext:
    """The ``COMMIT`` of the order at ``shop.example``, at ``NOW``; ``kw`` replaces fields of
    the context (``proposal=None``, ``verb="UNDO"``, …)."""
    shown = order()
    facts = parley.ProposalFacts.from_json({**shown, "hash": parley.proposal_hash(shown)})
    base: dict[str, Any] = {
        "service": "shop.example",
        "verb": "COMMIT",
        "capability": "shop.order",
        "now": NOW,
        "proposal": facts,
    }
    return parley.GrantContext(**(base | kw))


def commit_check(token: str | list[str], **kw: Any) -> parley.GrantCheck:
    """Verify ``token`` for the agent's ``COMMIT`` of the order, trusting both principals."""
    trusted = [P.public, OP.public]
    return parley.verify_grant(token, trusted=trusted, proof_key=A.public, ctx=commit_context(**kw))
