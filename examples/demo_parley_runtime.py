"""Parley runtime, end to end: an agent orders coffee from the example shop over TCP.

Run: ``python examples/demo_parley_runtime.py``. The shop (examples/parley_shop.py) runs
in this process on 127.0.0.1; the agent holds a grant from its principal that allows
low-risk orders up to 20 USD, and every step prints the Lens a model would read.
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
from pathlib import Path
from typing import Any

import parley

HERE = Path(__file__).resolve().parent


def _shop() -> object:
    spec = importlib.util.spec_from_file_location("parley_shop", HERE / "parley_shop.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _show(title: str, result: parley.Result) -> None:
    print(f"\n== {title}")
    for event in result.events:
        print(parley.lens.lens(event))
    print(parley.lens.lens(result.reply or {}))


async def _run() -> None:
    principal = parley.key_from_seed(bytes([1]) * 32)
    agent_key = parley.key_from_seed(bytes([2]) * 32)
    service = _shop().build_service(trusted=[principal.public])  # type: ignore[attr-defined]
    server = await parley.net.serve_tcp(service, "127.0.0.1", 0)
    url = f"parley://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    now = int(time.time())
    policy: list[dict[str, Any]] = [
        {"svc": ["shop.example"]},
        {"per": {"max": 2000, "currency": "USD"}},
        {"risk": "low"},
        {"exp": now + 3600},
    ]
    grant = parley.mint_grant(principal, agent_key.public, policy, iat=now, nonce="demo")
    print("The principal grants the agent: shop.example, at most 20.00 USD a commit, low risk.")
    async with await parley.connect(url, parley.Agent(agent_key, [grant])) as client:
        _show(f"HELLO {url}", await client.hello())
        _show(
            "ASK shop.search (budget 120: the rest waits behind a handle)",
            await client.ask("shop.search", {"query": ""}, budget=120),
        )
        asked = await client.intent("shop.order", {"item": "blend"})
        _show("INTENT shop.order item=blend (ambiguous)", asked)
        assert asked.reply is not None
        assert asked.reply["kind"] == "CLARIFY"
        patch = asked.reply["options"][0]["params"]
        offered = await client.intent(
            "shop.order", parley.service.merge_patch({"item": "blend"}, patch)
        )
        _show("INTENT again with option 1 merged in", offered)
        proposals = offered.raise_for_error().proposals
        assert proposals is not None
        proposal = proposals[0]
        done = await client.commit(proposal)
        _show("COMMIT the first proposal (by its hash)", done)
        _show("COMMIT again: idempotent", await client.commit(proposal))
        receipt = done.receipt
        assert receipt is not None
        _show("UNDO within the window", await client.undo(receipt["id"]))
        _show(
            "INTENT auto=true inside the policy: one round trip",
            await client.intent("shop.order", {"item": "latte", "ship": "pickup"}, auto=True),
        )
        gift = await client.intent(
            "shop.gift_card", {"to": "ana@example.com", "usd": 25}, auto=True
        )
        _show("INTENT auto=true for an irreversible gift card: proposals instead", gift)
        card = (gift.proposals or [])[0]
        refused = await client.commit(card)
        _show("COMMIT the gift card: over the policy", refused)
        assert refused.consent is not None
        consent = parley.mint_consent_grant(principal, refused.consent, agent_key.public, iat=now)
        print("\nThe principal reads the consent request and signs a one-shot consent grant.")
        _show("COMMIT with the consent grant", await client.commit(card, grants=[consent]))
    server.close()
    await server.wait_closed()


def main() -> None:
    """Print the walk-through."""
    asyncio.run(_run())


if __name__ == "__main__":
    main()
