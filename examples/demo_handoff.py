"""Principal Handoff Core, end to end: records, ownership, folding, conflicts, a durable store.

Run: python examples/demo_handoff.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import handoff

ROLES = handoff.Roles.from_json(
    {
        "principal": "alice",
        "principal_side": ["alice-assistant"],
        "requesters": {"house": ["builder-bot"]},
    }
)
ACTS = handoff.Extension(
    "demo-acts",
    "0.3",
    "act",
    policy="keep",
    outcomes=frozenset({"done", "declined"}),
    reasons=frozenset({"obsolete"}),
)
EXTS = handoff.ExtensionRegistry([ACTS])


def record(rid: str, type_: str, origin: str, by: str, **more: Any) -> dict[str, Any]:
    return {
        "ph": "0.3",
        "ext": "demo-acts/0.3",
        "id": rid,
        "type": type_,
        "origin": origin,
        "by": by,
        "project": "house",
        "key": "pay-roofer",
        "ts": "2026-10-27T10:00:00Z",
        **more,
    }


def show(label: str, state: handoff.ItemState | None) -> None:
    assert state is not None
    extra = []
    if state.outcome:
        extra.append(f"outcome={state.outcome}")
    if state.stale:
        extra.append("stale")
    if state.need_withdrawn:
        extra.append("need withdrawn")
    if state.claims:
        extra.append(f"claims={list(state.claims)}")
    text = state.terms["text"] if state.terms else "-"
    print(f"  {label:<44} -> {state.state:<8} {' '.join(extra)}  terms: {text!r}")


def main() -> None:
    print("Principal Handoff Core 0.3: one item, two registers, any arrival order.\n")
    raised = record(
        "n1", "raised", "requester", "builder-bot",
        terms={"text": "Pay the roofer 800 EUR"}, terms_rev=1,
    )  # fmt: skip
    claim = record(
        "c1", "claimed", "agent", "chat-agent",
        outcome="done", evidence={"basis": "Alice said 'I paid him' in chat"},
    )  # fmt: skip
    settled = record(
        "s1", "settled", "principal", "alice-assistant", terms_rev=1, outcome="done",
        authority={"kind": "confirmed", "decider": "alice"},
        evidence={"proposal": "c1"}, adopts=["c1"],
    )  # fmt: skip
    amended = record(
        "n2", "amended", "requester", "builder-bot",
        terms={"text": "Pay the roofer 900 EUR"}, terms_rev=2, supersedes=["n1"],
    )  # fmt: skip

    registry = handoff.Registry(roles=ROLES, extensions=EXTS)
    print("1. Records arrive one by one (Registry.add returns the item's new state):")
    show("requester raises the need", registry.add(raised).state)
    show("an agent claims it is paid (changes nothing)", registry.add(claim).state)
    show("alice confirms on her assistant", registry.add(settled).state)
    show("the requester amends the terms afterwards", registry.add(amended).state)
    show("the same amendment delivered again", registry.add(amended).state)

    print("\n2. Ownership: a requester cannot settle its own item.")
    forged = record(
        "s9", "settled", "principal", "builder-bot", terms_rev=2, outcome="done",
        authority={"kind": "principal", "decider": "alice"},
    )  # fmt: skip
    try:
        registry.add(forged)
    except handoff.HandoffError as exc:
        print(f"  rejected: {exc}")

    print("\n3. Order does not matter: the same records reversed fold to the same state.")
    states = handoff.fold([amended, settled, claim, raised], roles=ROLES, extensions=EXTS)
    [state] = states.values()
    print(f"  state={state.state} outcome={state.outcome} stale={state.stale} need={state.need}")

    print("\n4. Same id, different content: an id names one content forever.")
    other = dict(amended, terms={"text": "Pay the roofer 1000 EUR"})
    added = registry.add(other)
    print(f"  status={added.status} conflicts={[c.kind for c in added.conflicts]}")
    assert added.state is not None
    print(f"  the item is {added.state.state}: terms={added.state.terms} (unknown, none chosen)")

    print("\n5. A durable SQLite store survives a restart and folds on read.")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "handoff.sqlite"
        with handoff.stores.SQLiteStore(path, roles=ROLES, extensions=EXTS) as store:
            for r in (raised, claim, settled, amended, amended):
                print(f"  append {r['id']}: {store.append(r)}")
            try:
                store.append(other)
            except handoff.HandoffError as exc:
                print(f"  the store keeps the first content: {exc.code}/{exc.reason}")
        with handoff.stores.SQLiteStore(path, roles=ROLES, extensions=EXTS) as store:
            item = handoff.ItemId("demo-acts", "house", "pay-roofer")
            show("after reopening the store", store.state(item))


if __name__ == "__main__":
    main()
