"""PXP end to end: two proxies negotiate, one escalates to its principal, a brief comes out.

Run: ``python examples/demo_pxp.py``
"""

from __future__ import annotations

import json
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import pxp


def main() -> None:
    ticks = iter(datetime(2026, 3, 2, 9, 0, tzinfo=UTC) + timedelta(minutes=i) for i in range(99))

    def now() -> datetime:
        return next(ticks)

    print("PXP: proxies negotiate for their principals; every step lands in a hash-chained ledger.")
    room = pxp.Room.open("bike-sale", topic="Selling a road bike", now=now())
    ana = room.seal(
        "A",
        {
            "principal": {"name": "Ana"},
            "goal": "Sell my road bike this week.",
            "must_haves": ["At least 400 EUR"],
            "may_agree_to": ["Buyer collects in Porto"],
            "known_facts": ["The bike is a 2021 Trek Domane"],
        },
        now=now(),
    )
    ben = room.seal(
        "B",
        {
            "principal": {"name": "Ben"},
            "goal": "Buy a road bike for commuting.",
            "must_haves": ["At most 450 EUR"],
            "escalate_when": ["Price above 420 EUR"],
        },
        now=now(),
        via="mcp",
    )
    print(f"1. Both principals sealed their cards: A {ana.hash[:12]}..., B {ben.hash[:12]}...")
    print("   Each side sees only the other's name and card hash, never the card itself.")

    offer = room.send(
        "A",
        {
            "message": "440 EUR, you collect in Porto.",
            "claims": [
                {
                    "text": "The bike is a 2021 Trek Domane",
                    "origin": "stated",
                    "ref": "known_facts[0]",
                },
                {"text": "Similar bikes sell for 450 EUR", "origin": "stated"},
            ],
            "proposal": {
                "terms": ["440 EUR", "Buyer collects in Porto"],
                "depends_on": ["new1", "new2"],
            },
            "status": "continue",
        },
        now=now(),
    )
    print("2. A's proxy offers 440 EUR. It tagged a market price 'stated' without a source,")
    print(f"   so the room recorded it as assumed: {offer.flags[0]}")

    room.send(
        "B",
        {
            "message": "Above my limit; asking Ben.",
            "reviews": [
                {"claim_id": "A1.1", "verdict": "accept"},
                {"claim_id": "A1.2", "verdict": "challenge", "reason": "No source given."},
            ],
            "status": "escalate",
            "escalation": {"question": "Ana asks 440 EUR, above 420. Accept?"},
        },
        now=now(),
    )
    print(f"3. B's proxy challenges the price claim and escalates; the room is {room.status}.")
    room.answer("B", "Yes, 440 is fine if I can collect on Saturday.", now=now(), via="web")
    print("4. Ben answers; the answer is sealed into his card, which gets a new hash.")
    done = room.send("B", {"message": "Deal.", "status": "agree"}, now=now())
    accepted = done.envelope["accepts"]["proposal_hash"]
    print(f"5. B's proxy agrees to proposal {accepted[:12]}...: the room is {room.status}.")

    brief = room.brief()
    print()
    print(pxp.brief_markdown(brief))
    with tempfile.TemporaryDirectory() as tmp:
        store = pxp.SqliteRoomStore(Path(tmp) / "rooms.db")
        store.create(room)
        store.close()
        reopened = pxp.SqliteRoomStore(Path(tmp) / "rooms.db")
        again = reopened.load("bike-sale")
        reopened.close()
    print(
        f"Reloaded from SQLite, ledger re-verified: head {again.head[:16]}... matches the brief:",
        again.head == brief["ledger"]["head"],
    )
    tampered = json.loads(json.dumps(room.export()["ledger"]))
    tampered[4]["data"]["status"] = "agree"
    try:
        pxp.verify_ledger(tampered)
    except pxp.errors.LedgerError as exc:
        print(f"Changing one recorded status breaks the chain at entry {exc.index}: {exc.reason}.")


if __name__ == "__main__":
    main()
