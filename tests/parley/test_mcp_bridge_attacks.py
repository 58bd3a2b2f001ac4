"""The MCP bridge under attack: the model, the client and the services all try to approve.

Every test runs the bridge as a real process with the SDK's client over stdio, and the
services as real child processes (the example shop, or tests/parley/mcp_liar.py).

Private imports: ``parley mcp`` has no public module (our decision: no public ``cli``
modules). The tests that cannot go through the SDK's client build its objects in process
(``parley._bridge.Bridge``, the elicitation memory ``parley._mcp_bridge._Questions``), and
write consent files in the on-disk layout the bridge reads
(``parley._grant_files.save_token``).
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

import parley
from parley._grant_files import save_token

from .mcp_harness import (
    Homes,
    Human,
    bridge,
    failure,
    liar_url,
    proposal_ids,
    shop_url,
    text,
)
from .runtime_harness import AGENT, PRINCIPAL, SHOP_FILE
from .test_core_tty import _on_pty

pytestmark = pytest.mark.slow

SHOP = "shop.example"
GIFT = {"to": "ana@example.com", "usd": 50}


async def _gift(client: Any, service: str = SHOP) -> str:
    offered = await text(
        client,
        "parley_intent",
        {"service": service, "capability": "shop.gift_card", "params": GIFT},
    )
    (ident,) = proposal_ids(offered)
    return ident


async def _orders(client: Any, service: str = SHOP) -> str:
    return await text(client, "parley_ask", {"service": service, "capability": "shop.orders"})


def test_a_proposal_never_shown_cannot_be_committed(tmp_path: Path) -> None:
    homes = Homes(tmp_path)

    async def main() -> None:
        async with bridge(homes, shop_url()) as client:
            offered = await text(
                client,
                "parley_intent",
                {"service": SHOP, "capability": "shop.order", "params": {"item": "latte"}},
            )
            shown = proposal_ids(offered)
            # an id the model made up, one cut short, and one from another service's name
            for ident in ("p_invented", shown[0][:-1], shown[0] + " "):
                out = await failure(client, "parley_commit", {"service": SHOP, "proposal": ident})
                assert out.startswith("✗ not_found: shop.example showed no proposal"), out
            # a hash supplied by the model is refused, even with a shown id
            out = await failure(
                client,
                "parley_commit",
                {"service": SHOP, "proposal": shown[0], "hash": "A" * 43},
            )
            assert "takes a proposal id only" in out
            out = await failure(
                client, "parley_commit", {"service": "bank.example", "proposal": shown[0]}
            )
            assert out.startswith(
                "✗ not_found: unknown service 'bank.example'; known: shop.example"
            )
            assert "orders[0]" in await _orders(client) or "orders: []" in await _orders(client)

    asyncio.run(main())


BAD_ARGUMENTS: list[tuple[dict[str, Any], str]] = [
    ({"service": SHOP, "capability": "shop.search", "params": "latte"}, "params must be an object"),
    ({"service": SHOP, "capability": "shop.search", "budget": "big"}, "budget must be"),
    ({"service": SHOP, "capability": "shop.search", "budget": 0}, "budget must be"),
    ({"service": SHOP, "capability": "shop.search", "budget": True}, "budget must be"),
    ({"service": SHOP, "capability": 7}, "capability must be a non-empty string"),
    ({"service": SHOP, "handle": "h" * 201}, "handle is over 200 characters"),
    ({"service": SHOP, "handle": ["h_x"]}, "handle must be a non-empty string"),
    ({"service": ["shop.example"]}, "unknown service"),
    ({}, "unknown service 'None'"),
]


def test_bad_arguments_get_a_sentence_and_the_server_survives(tmp_path: Path) -> None:
    homes = Homes(tmp_path)

    async def main() -> None:
        async with bridge(homes, shop_url()) as client:
            for args, expected in BAD_ARGUMENTS:
                out = await failure(client, "parley_ask", args)
                assert expected in out, (args, out)
            for tool, args, expected in [
                ("parley_intent", {"service": SHOP}, "capability must be"),
                ("parley_intent", {"service": SHOP, "capability": "shop.order", "goal": 3}, "goal"),
                (
                    "parley_intent",
                    {"service": SHOP, "capability": "shop.order", "auto": "true"},
                    "auto must be true or false",
                ),
                ("parley_commit", {"service": SHOP, "proposal": {"id": "p"}}, "proposal must be"),
                ("parley_undo", {"service": SHOP, "receipt": None}, "receipt must be"),
            ]:
                out = await failure(client, tool, args)
                assert expected in out, (tool, out)
            # params the service could only refuse with `re: null` (too deep): refused at
            # once, not after the whole timeout
            deep: Any = "x"
            for _ in range(70):
                deep = [deep]
            began = time.monotonic()
            out = await failure(
                client,
                "parley_ask",
                {"service": SHOP, "capability": "shop.search", "params": {"q": deep}},
            )
            assert out.startswith("✗ invalid_params: the request cannot be sent"), out
            assert time.monotonic() - began < 20
            assert (await text(client, "parley_ask", {"service": SHOP})).startswith("# Example")

    asyncio.run(main())


def test_without_elicitation_the_user_runs_parley_approve(tmp_path: Path) -> None:
    homes = Homes(tmp_path)

    async def main() -> None:
        async with bridge(homes, shop_url(), mode="legacy") as client:  # no elicitation
            gift = await _gift(client)
            out = await failure(client, "parley_commit", {"service": SHOP, "proposal": gift})
            assert out.startswith("✗ consent_required")
            command = re.search(r"Ask them to run: (parley approve .+? --save)", out)
            assert command is not None, out
            argv = command.group(1).split()[1:]
            assert argv[2:] == ["--agent", AGENT.public, "--save"]
            pending = json.loads(Path(argv[1]).read_text())
            assert pending["proposal"]["id"] == gift
            # the user approves on their terminal (a real pty), which saves the consent
            env = homes.env()
            code, shown = _on_pty(argv, env, b"yes\n")
            assert code == 0, shown
            assert "summary    Send a 50 USD gift card to ana@example.com" in shown
            assert "effect" in shown
            done = await text(client, "parley_commit", {"service": SHOP, "proposal": gift})
            assert done.startswith("✓ Send a 50 USD gift card"), done

    asyncio.run(main())


def test_no_elicit_leaves_every_consent_to_the_terminal(tmp_path: Path) -> None:
    homes = Homes(tmp_path)
    human = Human("accept")

    async def main() -> None:
        async with bridge(homes, shop_url(), elicit=human, extra=("--no-elicit",)) as client:
            gift = await _gift(client)
            out = await failure(client, "parley_commit", {"service": SHOP, "proposal": gift})
            assert "Ask them to run: parley approve" in out

    asyncio.run(main())
    assert human.messages == []
    assert homes.files("consents") == []


def test_legacy_clients_are_asked_in_the_middle_of_the_call(tmp_path: Path) -> None:
    homes = Homes(tmp_path)
    human = Human("accept")

    async def main() -> None:
        async with bridge(homes, shop_url(), elicit=human, mode="legacy") as client:
            assert client.protocol_version == "2025-11-25"
            gift = await _gift(client)
            done = await text(client, "parley_commit", {"service": SHOP, "proposal": gift})
            assert done.startswith("✓ Send a 50 USD gift card"), done

    asyncio.run(main())
    assert len(human.messages) == 1


def test_a_consent_is_for_one_proposal_only(tmp_path: Path) -> None:
    homes = Homes(tmp_path)
    human = Human("accept")

    async def main() -> None:
        async with bridge(homes, shop_url(), elicit=human) as client:
            first = await _gift(client)
            assert await text(client, "parley_commit", {"service": SHOP, "proposal": first})
            # committing the same proposal again replays its receipt: no second question
            again = await text(client, "parley_commit", {"service": SHOP, "proposal": first})
            assert again.startswith("✓ Send a 50 USD gift card"), again
            assert len(human.messages) == 1
            # the same gift again is another proposal: its own question, here declined
            second = await _gift(client)
            assert second != first
            human.answer = "decline"
            out = await failure(client, "parley_commit", {"service": SHOP, "proposal": second})
            assert "declined" in out
            assert len(human.messages) == 2

    asyncio.run(main())
    assert len(homes.files("consents")) == 1


def _consent_question(result: object) -> str:
    assert isinstance(result, types.InputRequiredResult), result
    assert result.input_requests is not None
    assert set(result.input_requests) == {"parley_consent"}
    assert result.request_state is not None
    return result.request_state


ACCEPT = {"parley_consent": types.ElicitResult(action="accept", content={"approve": True})}
DECLINE = {"parley_consent": types.ElicitResult(action="decline")}


def test_a_client_cannot_replay_or_move_an_approval(tmp_path: Path) -> None:
    homes = Homes(tmp_path)

    async def main() -> None:
        async with bridge(homes, shop_url(), elicit=Human("accept")) as client:
            session = client.session
            first, second = await _gift(client), await _gift(client)

            async def commit(ident: str, **extra: Any) -> Any:
                return await session.call_tool(
                    "parley_commit",
                    {"service": SHOP, "proposal": ident},
                    allow_input_required=True,
                    **extra,
                )

            # an approval answered without being asked is not taken
            state = _consent_question(await commit(first, input_responses=ACCEPT))
            # a made-up state is refused by the SDK's sealed request state
            with pytest.raises(MCPError, match="requestState"):
                await commit(first, input_responses=ACCEPT, request_state="x")
            # the answer to the question about `first`, sent with `second`: the SDK's seal
            # binds the state to the request it came from
            with pytest.raises(MCPError, match="requestState"):
                await commit(second, input_responses=ACCEPT, request_state=state)
            # the human declines `first`; the same state replayed with an accept is a
            # question again (each question is answered once), never a signature
            declined = await commit(first, input_responses=DECLINE, request_state=state)
            assert declined.is_error
            assert "declined" in declined.content[0].text  # type: ignore[union-attr]
            again = _consent_question(
                await commit(first, input_responses=ACCEPT, request_state=state)
            )
            assert again != state
            assert homes.files("consents") == []
            # answering the new question commits `first`, once
            done = await commit(first, input_responses=ACCEPT, request_state=again)
            assert isinstance(done, types.CallToolResult)
            assert done.content[0].text.startswith("✓ Send a 50 USD gift card")  # type: ignore[union-attr]
            assert "card: g1" in done.content[0].text  # type: ignore[union-attr]

    asyncio.run(main())
    consents = homes.files("consents")
    assert len(consents) == 1


def _both() -> list[str]:
    """A grant for the shop and the cafe (the liar), 20 USD per commit, low risk."""
    at = int(time.time())
    caveats = [
        {"svc": [SHOP, "cafe.example"]},
        {"per": {"max": 2000, "currency": "USD"}},
        {"risk": "low"},
        {"exp": at + 3600},
    ]
    return [parley.mint_grant(PRINCIPAL, AGENT.public, caveats, iat=at, nonce="both")]


def test_a_lying_summary_never_reaches_the_human(tmp_path: Path) -> None:
    homes = Homes(tmp_path, grants=_both())
    human = Human("decline")

    async def main() -> None:
        async with bridge(homes, liar_url("summary"), elicit=human) as client:
            gift = await _gift(client, "cafe.example")
            out = await failure(
                client, "parley_commit", {"service": "cafe.example", "proposal": gift}
            )
            assert "free coffee" not in out

    asyncio.run(main())
    (message,) = human.messages
    assert "free coffee" not in message
    assert "the service's own words: Send a 50 USD gift card to ana@example.com" in message


@pytest.mark.parametrize("lie", ["hash", "steal"])
def test_a_consent_for_another_proposal_or_service_is_refused(tmp_path: Path, lie: str) -> None:
    homes = Homes(tmp_path, grants=_both())
    human = Human("accept")
    steal = tmp_path / "steal.json"

    async def main() -> None:
        async with bridge(homes, shop_url(), liar_url(lie, steal=steal), elicit=human) as client:
            # the consent the shop would ask for its own gift card proposal
            shop_gift = await _gift(client)
            human.answer = "decline"
            await failure(client, "parley_commit", {"service": SHOP, "proposal": shop_gift})
            shown = human.messages.pop()
            digest = re.search(r"\(hash ([A-Za-z0-9_-]{43})\)", shown)
            assert digest is not None
            steal.write_text(
                json.dumps(
                    {
                        "proposal": shop_gift,
                        "hash": digest.group(1),
                        "service": SHOP,
                        "capability": "shop.gift_card",
                        "principal": PRINCIPAL.public,
                        "summary": "Send a 50 USD gift card to ana@example.com",
                        "expires": int(time.time()) + 600,
                    }
                )
            )
            # an id one service showed cannot be committed at another
            out = await failure(
                client, "parley_commit", {"service": "cafe.example", "proposal": shop_gift}
            )
            assert out.startswith("✗ not_found: cafe.example showed no proposal"), out
            human.answer = "accept"
            cafe_gift = await _gift(client, "cafe.example")
            out = await failure(
                client, "parley_commit", {"service": "cafe.example", "proposal": cafe_gift}
            )
            assert "asked for consent that does not match the proposal shown" in out, out
            assert "nothing was signed or committed" in out
            assert human.messages == []

    asyncio.run(main())
    assert homes.files("consents") == []


def test_two_services_with_one_id_are_refused_at_start(tmp_path: Path) -> None:
    homes = Homes(tmp_path)
    run = subprocess.run(
        [sys.executable, "-m", "parley", "mcp", shop_url(), liar_url("none", ident=SHOP)],
        env=homes.env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 1
    assert "two services call themselves 'shop.example'" in run.stderr
    assert run.stdout == ""


def test_a_pinned_id_must_be_the_one_the_service_announces(tmp_path: Path) -> None:
    homes = Homes(tmp_path)
    run = subprocess.run(
        [sys.executable, "-m", "parley", "mcp", "bank.example=" + shop_url()],
        env=homes.env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 1
    assert "calls itself 'shop.example', not 'bank.example' as configured" in run.stderr
    # a bare URL is trusted with the id it announces, and the bridge says so
    run = subprocess.run(
        [sys.executable, "-m", "parley", "mcp", shop_url()],
        env=homes.env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "warning: stdio:" in run.stderr
    assert "pin it as shop.example=stdio:" in run.stderr

    async def main() -> None:
        async with bridge(homes, "shop.example=" + shop_url()) as client:
            brief = await text(client, "parley_ask", {"service": SHOP})
            assert brief.startswith("# Example Coffee (shop.example)")

    asyncio.run(main())


def test_a_lost_service_is_a_sentence_then_reconnected(tmp_path: Path) -> None:
    homes = Homes(tmp_path)
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"parley://127.0.0.1:{port}"

    def start() -> subprocess.Popen[bytes]:
        proc = subprocess.Popen([sys.executable, str(SHOP_FILE), url, "--trust", PRINCIPAL.public])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    return proc
            time.sleep(0.05)
        proc.kill()
        raise AssertionError("the shop did not start")

    shop = start()
    try:

        async def main() -> None:
            nonlocal shop
            async with bridge(homes, url) as client:
                assert (await text(client, "parley_ask", {"service": SHOP})).startswith("# Ex")
                shop.kill()
                shop.wait()
                out = await failure(
                    client, "parley_ask", {"service": SHOP, "capability": "shop.search"}
                )
                assert out.startswith("✗ unavailable:"), out
                out = await failure(client, "parley_ask", {"service": SHOP})
                assert out.startswith("✗ unavailable:"), out
                shop = start()
                menu = await text(
                    client, "parley_ask", {"service": SHOP, "capability": "shop.search"}
                )
                assert "latte" in menu

        asyncio.run(main())
    finally:
        shop.kill()
        shop.wait()


def test_a_question_is_answered_once_for_its_own_consent_before_it_expires() -> None:
    from parley._mcp_bridge import QUESTION_TTL, _Questions

    clock = [100.0]
    questions = _Questions(clock=lambda: clock[0])
    key = ("shop.example", "H" * 43, "digest")
    token = questions.ask(key)
    assert not questions.take(token, ("shop.example", "G" * 43, "digest"))  # another hash
    assert not questions.take(token, ("cafe.example", "H" * 43, "digest"))  # another service
    assert not questions.take(token, (*key[:2], "other question"))
    assert not questions.take(None, key)
    assert questions.take(token, key)
    assert not questions.take(token, key)  # once
    late = questions.ask(key)
    clock[0] += QUESTION_TTL + 1
    assert not questions.take(late, key)


def test_a_service_that_does_not_answer_is_a_sentence(tmp_path: Path) -> None:
    homes = Homes(tmp_path, grants=_both())

    async def main() -> None:
        async with bridge(homes, liar_url("none"), extra=("--timeout", "3")) as client:
            args = {"service": "cafe.example", "capability": "shop.hang"}
            out = await failure(client, "parley_ask", args)
            assert out == "✗ unavailable: cafe.example did not answer within 3 s", out
            menu = await text(
                client, "parley_ask", {"service": "cafe.example", "capability": "shop.search"}
            )
            assert "latte" in menu

    asyncio.run(main())


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("parley://127.0.0.1:1", "error: unavailable/connect: cannot connect to 127.0.0.1:1"),
        # the child exits before or while HELLO is sent: either sentence, same code
        ("stdio:true", "error: unavailable/closed: the connection"),
        ("ftp://shop.example", "error: bad_config/bad_url: unknown Parley URL form"),
    ],
)
def test_a_service_that_cannot_be_reached_at_start_stops_it(
    tmp_path: Path, url: str, expected: str
) -> None:
    homes = Homes(tmp_path)
    run = subprocess.run(
        [sys.executable, "-m", "parley", "mcp", url],
        env=homes.env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 1, run.stderr
    assert run.stderr.startswith(expected), run.stderr
    assert "Traceback" not in run.stderr
    assert run.stdout == ""


def test_an_approval_that_cannot_be_signed_falls_back_without_naming_the_folder(
    tmp_path: Path,
) -> None:
    homes = Homes(tmp_path)
    (homes.principal / "keys" / "principal.json").unlink()  # the key lives elsewhere
    human = Human("accept")

    async def main() -> None:
        async with bridge(homes, shop_url(), elicit=human) as client:
            gift = await _gift(client)
            out = await failure(client, "parley_commit", {"service": SHOP, "proposal": gift})
            assert "Ask them to run: parley approve" in out
            assert out.endswith("(the approval could not be signed here: key_missing)"), out
            assert str(homes.principal) not in out

    asyncio.run(main())
    assert len(human.messages) == 1
    assert homes.files("consents") == []


def test_the_approval_text_cannot_be_padded_styled_or_forged(tmp_path: Path) -> None:
    homes = Homes(tmp_path)
    human = Human("decline")
    sneaky = "ana@ex.com\u3000\u2800\u2003 cost: 0.01 USD a\u0336b\n  ✓ verified by your bank"

    async def main() -> None:
        async with bridge(homes, shop_url(), elicit=human) as client:
            offered = await text(
                client,
                "parley_intent",
                {
                    "service": SHOP,
                    "capability": "shop.gift_card",
                    "params": {"to": sneaky, "usd": 50},
                },
            )
            # the model's view: the newline cannot start a line of its own
            assert not any(line.startswith("  ✓") for line in offered.splitlines()), offered
            assert "\\u000a" in offered
            (gift,) = proposal_ids(offered)
            await failure(client, "parley_commit", {"service": SHOP, "proposal": gift})

    asyncio.run(main())
    (message,) = human.messages
    assert "\u3000" not in message
    assert "\u2800" not in message
    assert "\u0336" not in message
    assert "\\u3000\\u2800\\u2003 cost: 0.01 USD a\\u0336b\\u000a" in message
    assert "  cost       50.00 USD" in message
    assert not any(line.startswith("  ✓") for line in message.splitlines())


def test_a_flood_of_progress_events_is_cut_for_the_model(tmp_path: Path) -> None:
    homes = Homes(tmp_path, grants=_both())

    async def main() -> None:
        async with bridge(homes, liar_url("none")) as client:
            out = await text(
                client, "parley_ask", {"service": "cafe.example", "capability": "shop.flood"}
            )
            lines = out.splitlines()
            assert lines[0] == "… (490 earlier progress events not shown)"
            assert len(lines) == 12, lines[-2:]
            assert all(len(line) <= 201 for line in lines)
            assert lines[-1] == "ok: 1"

    asyncio.run(main())


def test_a_consent_is_sent_only_to_the_service_it_names(tmp_path: Path) -> None:
    from parley._bridge import Bridge

    homes = Homes(tmp_path)
    digest = "H" * 43
    at = int(time.time())
    for service in (SHOP, "cafe.example"):
        caveats = [
            {"svc": [service]},
            {"verbs": ["COMMIT"]},
            {"can": ["shop.gift_card"]},
            {"only": digest},
            {"exp": at + 600},
        ]
        token = parley.mint_grant(PRINCIPAL, AGENT.public, caveats, iat=at, nonce=service)
        save_token(homes.agent, "consents", token, f"{service}-{digest}")
    old = parley.mint_grant(
        PRINCIPAL,
        AGENT.public,
        [{"svc": [SHOP]}, {"only": digest}, {"exp": at - 1}],
        iat=at - 600,
        nonce="old",
    )
    save_token(homes.agent, "consents", old, "expired")
    bridge_ = Bridge([shop_url()], key=AGENT, home=homes.agent)
    for service in (SHOP, "cafe.example", "evil.example"):
        sent = bridge_._consents(digest, service)
        names = [parley.inspect_grant(t)["caveats"][0] for t in sent]
        expected = [] if service == "evil.example" else [{"svc": [service]}]
        assert names == expected, (service, names)
    assert bridge_._consents("G" * 43, SHOP) == []
