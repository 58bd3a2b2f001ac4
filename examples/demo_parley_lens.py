"""Parley Lens and budgets, end to end: render, fit to a budget, EXPAND the rest."""

from __future__ import annotations

import json

import parley

MENU = [
    {"sku": f"M{i:03d}", "name": f"Dish {i}", "price": 450 + 25 * i, "calories": 300 + i}
    for i in range(60)
]
ALICE = "ed25519:alice-agent-key"


def main() -> None:
    reply = {"parley": 1, "id": "s1", "re": "1", "kind": "ANSWER", "data": {"menu": MENU}}
    full = parley.lens.lens(reply)
    minified = json.dumps(reply["data"], separators=(",", ":"))
    print("1. Lens renders the 60-item menu as a table that names its keys once:")
    print("   " + "\n   ".join(full.split("\n")[:4]) + "\n   ...")
    print(
        f"   {parley.lens.estimate(full)} estimated tokens, against "
        f"{parley.lens.estimate(minified)} for minified JSON.\n"
    )

    fitted, parked = parley.lens.fit(reply, 200, handles=parley.lens.new_handle)
    text = parley.lens.lens(fitted)
    print("2. The agent asked for at most 200 tokens; the service elides and says so:")
    print("   " + "\n   ".join(text.split("\n")[-3:]))
    print(f"   now {parley.lens.estimate(text)} tokens.\n")

    store = parley.lens.MemoryHandleStore()
    parley.lens.park(store, parked, key=ALICE, now=1790000000)
    handle = fitted["more"][0]["handle"]
    rows = list(fitted["data"]["menu"])
    print("3. EXPAND fetches the rest in slices that fit each request's budget:")
    while True:
        answer = parley.lens.expand(store, handle, 400, key=ALICE, now=1790000010)
        rows.extend(answer["data"]["items"])
        print(f"   slice of {len(answer['data']['items'])} items")
        if "more" not in answer:
            break
        handle = answer["more"][0]["handle"]
    print(f"   reassembled {len(rows)} items; identical: {rows == MENU}\n")

    print("4. The handle is bound to the agent's proof key; another agent gets not_found:")
    try:
        parley.lens.expand(
            store, fitted["more"][0]["handle"], 400, key="ed25519:mallory", now=1790000010
        )
    except parley.ParleyError as exc:
        print(f"   {exc}")

    proposal = {
        "kind": "PROPOSALS",
        "proposals": [
            {
                "id": "p_1",
                "summary": "Order 2 oat bowls",
                "effects": [{"op": "charge", "target": "card/visa", "to": 900}],
                "cost": {"amount": 900, "currency": "USD"},
                "risk": "low",
                "undo": {"window": 900},
                "expires": 1790000600,
                "hash": "Qm9x",
            }
        ],
    }
    print("\n5. A proposal in Lens (what a model, or a human, approves):")
    print("   " + "\n   ".join(parley.lens.lens(proposal).split("\n")))


if __name__ == "__main__":
    main()
