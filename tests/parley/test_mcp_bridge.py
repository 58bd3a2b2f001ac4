"""The MCP bridge (``parley mcp``) driven by the SDK's own client over stdio.

The bridge runs as a real process (``python -m parley mcp``) with the example shop as its
own child process (a ``stdio:`` URL); the agent key, the grant and the principal key come
from real key folders.
"""

from __future__ import annotations

import asyncio
import re
import stat
from pathlib import Path

import parley

from .mcp_harness import (
    Homes,
    Human,
    bridge,
    failure,
    proposal_ids,
    receipt_id,
    shop_url,
    text,
)
from .runtime_harness import AGENT

REFERENCE_TOOLS = {
    "parley_ask": (["service"], {"service", "capability", "params", "handle", "budget"}),
    "parley_intent": (
        ["service", "capability"],
        {"service", "capability", "params", "goal", "auto", "budget"},
    ),
    "parley_commit": (["service", "proposal"], {"service", "proposal"}),
    "parley_undo": (["service", "receipt"], {"service", "receipt"}),
}


def test_tools_instructions_ask_intent_commit_undo(tmp_path: Path) -> None:
    homes = Homes(tmp_path)

    async def main() -> None:
        async with bridge(homes, shop_url()) as client:
            listed = (await client.list_tools()).tools
            assert {
                t.name: (t.input_schema["required"], set(t.input_schema["properties"]))
                for t in listed
            } == REFERENCE_TOOLS
            instructions = client.instructions or ""
            assert instructions.startswith("Parley services. Read with parley_ask")
            assert "# Example Coffee (shop.example)" in instructions
            assert "intent shop.order(" in instructions

            brief = await text(client, "parley_ask", {"service": "shop.example"})
            assert brief.startswith("# Example Coffee (shop.example)")
            menu = await text(
                client,
                "parley_ask",
                {
                    "service": "shop.example",
                    "capability": "shop.search",
                    "params": {"query": "latte"},
                },
            )
            assert menu.splitlines()[0] == "items[2]{sku,name,usd}:"
            assert "C01,latte,275" in menu

            offered = await text(
                client,
                "parley_intent",
                {
                    "service": "shop.example",
                    "capability": "shop.order",
                    "params": {"item": "latte"},
                },
            )
            assert offered.startswith("2 proposals — risk: low · undo: 30m")
            first, _second = proposal_ids(offered)
            done = await text(
                client, "parley_commit", {"service": "shop.example", "proposal": first}
            )
            lines = done.splitlines()
            assert lines[0] == "… sending the order to the barista (50%)"
            assert lines[1].startswith("✓ 1 x latte (pickup, in 10 min) (receipt r_")
            assert "order: o1" in done

            receipt = receipt_id(done)
            undone = await text(
                client, "parley_undo", {"service": "shop.example", "receipt": receipt}
            )
            assert undone.startswith(f"↶ undid {receipt}"), undone
            assert "cancelled: o1" in undone
            # committing the undone proposal again is not reported as a standing order
            again = await failure(
                client, "parley_commit", {"service": "shop.example", "proposal": first}
            )
            assert f"was committed (receipt {receipt}) and that receipt was undone" in again
            again = await failure(
                client, "parley_undo", {"service": "shop.example", "receipt": "r_nope"}
            )
            assert again.startswith("✗ not_found")

            # auto: within the grant and undoable, committed at once in one round trip
            auto = await text(
                client,
                "parley_intent",
                {
                    "service": "shop.example",
                    "capability": "shop.order",
                    "params": {"item": "mocha", "ship": "pickup"},
                    "auto": True,
                },
            )
            assert auto.splitlines()[-1] == "    order: o2", auto
            assert "✓ 1 x mocha (pickup, in 10 min)" in auto
            # a gift card cannot be undone: auto shows the proposal instead, to commit later
            gift = await text(
                client,
                "parley_intent",
                {
                    "service": "shop.example",
                    "capability": "shop.gift_card",
                    "params": {"to": "ana@example.com", "usd": 5},
                    "auto": True,
                },
            )
            assert gift.startswith("1 proposal:"), gift
            (card,) = proposal_ids(gift)
            out = await failure(
                client, "parley_commit", {"service": "shop.example", "proposal": card}
            )
            assert out.startswith("✗ consent_required"), out  # medium risk, over the grant

    asyncio.run(main())


def test_expand_a_handle_and_the_default_budget(tmp_path: Path) -> None:
    homes = Homes(tmp_path)

    async def main() -> None:
        async with bridge(homes, shop_url()) as client:
            args = {"service": "shop.example", "capability": "shop.search"}
            whole = await text(client, "parley_ask", args)  # default budget 1500: all 60 fit
            assert whole.splitlines()[0] == "items[60]{sku,name,usd}:"
            cut = await text(client, "parley_ask", {**args, "budget": 120})
            handle = re.search(r"\b(h_[A-Za-z]{24})\b", cut)
            assert handle is not None, cut
            rest = await text(
                client, "parley_ask", {"service": "shop.example", "handle": handle.group(1)}
            )
            shown = re.findall(r"\bC\d\d\b", cut + "\n" + rest)
            assert shown[:3] == ["C00", "C01", "C02"]
            assert len(set(shown)) > len(re.findall(r"\bC\d\d\b", cut))
            bad = await failure(client, "parley_ask", {"service": "shop.example", "handle": "h_x"})
            assert bad.startswith("✗ not_found")

    asyncio.run(main())


def test_commit_needing_consent_accepted_by_elicitation(tmp_path: Path) -> None:
    homes = Homes(tmp_path)
    human = Human("accept")

    async def main() -> None:
        async with bridge(homes, shop_url(), elicit=human) as client:
            offered = await text(
                client,
                "parley_intent",
                {
                    "service": "shop.example",
                    "capability": "shop.gift_card",
                    "params": {"to": "ana@example.com", "usd": 50},
                },
            )
            (gift,) = proposal_ids(offered)
            done = await text(
                client, "parley_commit", {"service": "shop.example", "proposal": gift}
            )
            assert done.startswith("✓ Send a 50 USD gift card to ana@example.com"), done
            assert "card: g1" in done

    asyncio.run(main())
    (message,) = human.messages
    lines = message.splitlines()
    assert lines[:7] == [
        "Approve this action for your agent?",
        "",
        "  service    shop.example",
        "  capability shop.gift_card",
        "  cost       50.00 USD",  # as the model reads it, not minor units
        "  risk       medium",
        "  undo       never",
    ]
    assert lines[7] == "  effect     $ charge card on file: - → 5000"
    assert lines[8] == "  effect     > send ana@example.com — gift card"
    assert lines[9].startswith("  proposal   p_")
    assert re.fullmatch(r"  valid until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(\d+\)", lines[10])
    assert lines[11] == f"  agent      {AGENT.public}"
    # the summary, the service's own words, comes last and labelled
    assert lines[12] == "  the service's own words: Send a 50 USD gift card to ana@example.com"
    (saved,) = homes.files("consents")
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    info = parley.inspect_grant(saved.read_text().strip())
    assert info["holder"] == AGENT.public
    assert {"verbs": ["COMMIT"]} in info["caveats"]


def test_commit_needing_consent_declined_signs_nothing(tmp_path: Path) -> None:
    homes = Homes(tmp_path)
    human = Human("decline")

    async def main() -> None:
        async with bridge(homes, shop_url(), elicit=human) as client:
            for answer, approve in (("decline", True), ("cancel", True), ("accept", False)):
                human.answer, human.approve = answer, approve
                offered = await text(
                    client,
                    "parley_intent",
                    {
                        "service": "shop.example",
                        "capability": "shop.gift_card",
                        "params": {"to": "ana@example.com", "usd": 50},
                    },
                )
                (gift,) = proposal_ids(offered)
                out = await failure(
                    client, "parley_commit", {"service": "shop.example", "proposal": gift}
                )
                assert out.startswith("✗ consent_required"), out
                assert "the user declined to approve it; nothing was committed" in out
                assert "parley approve" not in out
            orders = await text(
                client, "parley_ask", {"service": "shop.example", "capability": "shop.orders"}
            )
            assert orders == "orders: []", orders

    asyncio.run(main())
    assert len(human.messages) == 3
    assert homes.files("consents") == []


def test_a_cut_through_an_emoji_reaches_the_client_as_u_fffd(tmp_path: Path) -> None:
    from .mcp_harness import liar_url

    homes = Homes(tmp_path)

    async def main() -> None:
        async with bridge(homes, liar_url("none")) as client:
            args = {"service": "cafe.example", "capability": "shop.poem", "budget": 60}
            cut = await text(client, "parley_ask", args)
            assert "\ufffd…" in cut, cut
            assert cut.encode("utf-8")  # no lone surrogate left
            handle = re.search(r"\b(h_[A-Za-z]{24})\b", cut)
            assert handle is not None
            rest = await text(
                client, "parley_ask", {"service": "cafe.example", "handle": handle.group(1)}
            )
            assert "\ufffd\U0001f600" in rest, rest
            # the agent's grant is for shop.example: the cafe never sees it
            seen = await text(
                client, "parley_ask", {"service": "cafe.example", "capability": "shop.grants_seen"}
            )
            assert seen == "counts: [0, 0, 0, 0]", seen  # HELLO, ASK, EXPAND, ASK

    asyncio.run(main())
