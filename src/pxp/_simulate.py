"""A realistic scripted negotiation (``pxp simulate``, the demo and the docs use it)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from ._proxy import ScriptedPrincipal, ScriptedProxy, run_room
from ._room import Room

__all__ = ["simulate"]

CLIENT_CARD: dict[str, Any] = {
    "principal": {"name": "Maya Chen", "role": "owner", "org": "Chen Ceramics"},
    "goal": "Have the shop website rebuilt on Shopify before the spring collection launches.",
    "must_haves": ["Launch by 1 March", "Total price at most 4000 EUR"],
    "may_agree_to": ["Two revision rounds", "30% paid upfront"],
    "must_never": ["Share customer data with third parties"],
    "escalate_when": ["Price above 3500 EUR"],
    "known_facts": ["The shop runs on Shopify"],
}

DESIGNER_CARD: dict[str, Any] = {
    "principal": {"name": "Tom Okafor", "role": "freelance designer"},
    "goal": "Win the Chen Ceramics rebuild at a fair rate.",
    "must_haves": ["At least 3200 EUR", "30% paid upfront"],
    "may_agree_to": ["Launch by 1 March", "Two revision rounds"],
    "must_never": ["Unlimited revisions"],
    "escalate_when": ["Deadline shorter than 6 weeks"],
    "known_facts": ["My day rate is 400 EUR"],
}

CLIENT_STEPS: list[dict[str, Any]] = [
    {
        "message": "Maya wants the shop rebuilt on Shopify before 1 March. We offer 3000 EUR.",
        "claims": [
            {"text": "The shop runs on Shopify", "origin": "stated", "ref": "known_facts[0]"},
            {"text": "The rebuild needs about 8 days of work", "origin": "assumed"},
        ],
        "proposal": {
            "terms": [
                "Rebuild the shop website on Shopify",
                "Launch by 1 March",
                "Fixed price 3000 EUR",
                "Two revision rounds",
            ],
            "depends_on": ["new1", "new2"],
        },
        "status": "continue",
    },
    {
        "message": "The price is above what I may accept alone; asking Maya.",
        "reviews": [
            {"claim_id": "B2.1", "verdict": "accept"},
            {"claim_id": "B2.2", "verdict": "accept", "reason": "Custom themes take longer."},
            {"claim_id": "B2.3", "verdict": "accept"},
        ],
        "status": "escalate",
        "escalation": {
            "question": "Tom asks 3800 EUR, above your 3500 EUR limit. May I accept 3800 EUR?",
            "reason": "escalate_when[0]: Price above 3500 EUR",
        },
    },
    {
        "message": "Maya accepts 3800 EUR. Agreed.",
        "claims": [
            {
                "text": "Maya accepts up to 3800 EUR with launch by 1 March",
                "origin": "stated",
                "ref": "amendments[0]",
            }
        ],
        "status": "agree",
    },
]

DESIGNER_STEPS: list[dict[str, Any]] = [
    {
        "message": "8 days is short for a custom theme; Tom quotes 3800 EUR, 30% upfront.",
        "reviews": [
            {"claim_id": "A1.1", "verdict": "accept"},
            {
                "claim_id": "A1.2",
                "verdict": "challenge",
                "reason": "A custom Shopify theme rarely takes under 9 days.",
            },
        ],
        "claims": [
            {"text": "My day rate is 400 EUR", "origin": "stated", "ref": "known_facts[0]"},
            {"text": "A custom theme needs about 9.5 days of work", "origin": "assumed"},
            {"text": "Premium Shopify themes cost about 180 EUR", "origin": "stated"},
        ],
        "proposal": {
            "terms": [
                "Rebuild the shop website on Shopify",
                "Launch by 1 March",
                "Fixed price 3800 EUR",
                "30% paid upfront",
                "Two revision rounds",
            ],
            "depends_on": ["new1", "new2", "A1.1"],
        },
        "status": "continue",
    },
]


def simulate(start: datetime | None = None) -> Room:
    """Run the scripted deal (client and designer, one escalation) and return the room."""
    base = start or datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    ticks = iter(base + timedelta(seconds=30 * i) for i in range(10_000))
    clock: Callable[[], datetime] = lambda: next(ticks)  # noqa: E731
    room = Room.open(
        "simshoprebuild",  # letters and digits: an id `pxp serve --import` accepts
        topic="Shop website rebuild",
        now=clock(),
        names={"A": "Maya Chen", "B": "Tom Okafor"},
    )
    room.join("A", agent="behalf-builtin", now=clock(), mode="builtin")
    room.join("B", agent="claude-desktop", now=clock(), mode="external")
    room.seal("A", CLIENT_CARD, now=clock(), via="web")
    room.seal("B", DESIGNER_CARD, now=clock(), via="mcp")
    run_room(
        room,
        {"A": ScriptedProxy(CLIENT_STEPS), "B": ScriptedProxy(DESIGNER_STEPS)},
        {"A": ScriptedPrincipal(["Yes, up to 3800 EUR if launch stays by 1 March."])},
        clock=clock,
    )
    return room
