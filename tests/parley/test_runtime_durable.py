"""``parley serve`` keeps its state across ``kill -9``, and settles commits cut short.

Every test runs the real command line as a server process on loopback, kills it with
SIGKILL (the crash tests make the server kill itself at an exact step of a COMMIT or
UNDO), restarts it on the same state and talks to it with the real agent (issue 18 #2, #3).

Private imports: it drives the command line in process through ``parley._cli.main(argv)``:
the CLI's public contract is its argv, output and exit status, which these tests hold (our
decision: no public ``cli`` modules).
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest

import parley
from parley._cli import main

from .runtime_harness import AGENT, grant
from .serve_process import ServeProcess

CRASH_APP = Path(__file__).with_name("crash_app.py")
CAP = 1200
pytestmark = pytest.mark.slow  # real servers and processes


class Server(ServeProcess):
    """``parley serve`` of the crash app (``crash_app.py``) with the ``state`` arguments
    (``[]``: the default state; ``["--state", URL]``) and ``env`` (crash points)."""

    def __init__(self, home: Path, state: list[str], env: dict[str, str] | None = None) -> None:
        super().__init__(home, CRASH_APP, state, env)


def _spend_grant() -> str:
    return grant(extra=[{"spend": {"max": CAP, "currency": "USD"}}], nonce="spend")


async def _client(server: Server, grants: list[str]) -> parley.Client:
    client = await parley.connect(server.url, parley.Agent(AGENT, grants))
    assert (await client.hello()).kind == "BRIEF"
    return client


def _spent(db: Path, token: str) -> int:
    block = parley.decode_grant(token).block_ids[-1]
    store = parley.stores.SQLiteStore(str(db))
    try:
        return store.spent([block])[block]
    finally:
        store.close()


def test_default_state_survives_kill_9(tmp_path: Path, servers: list[Server]) -> None:
    token = _spend_grant()
    home = tmp_path / "home"

    async def before() -> tuple[dict[str, Any], dict[str, Any]]:
        client = await _client(servers[-1], [token])
        async with client:
            frame = client.agent.intent("shop.order", {"item": "latte", "qty": 2}, auto=True)
            auto = await client.request(frame)
            assert auto.kind == "RECEIPT", auto.reply
            assert auto.reply is not None
            shown = await client.intent("shop.order", {"item": "latte", "qty": 2})
            assert shown.reply is not None
            assert (await client.commit(shown.reply["proposals"][0])).kind == "RECEIPT"
            return frame, auto.reply["receipt"]

    async def after(frame: dict[str, Any]) -> tuple[dict[str, Any], list[Any], dict[str, Any]]:
        client = await _client(servers[-1], [token])
        async with client:
            client.agent.pending[frame["id"]] = parley.Result(frame)
            replayed = await client.request(frame)  # the very same auto INTENT again
            assert replayed.reply is not None
            orders = await client.ask("shop.orders")
            assert orders.reply is not None
            shown = await client.intent("shop.order", {"item": "latte", "qty": 2})
            assert shown.reply is not None
            third = await client.commit(shown.reply["proposals"][0])
            assert third.reply is not None
            return replayed.reply, orders.reply["data"]["orders"], third.reply

    servers.append(Server(home, []))
    frame, receipt = asyncio.run(before())
    servers[-1].stop()
    db = home / "state" / "shop.example.sqlite"
    assert db.exists()
    servers.append(Server(home, []))
    replayed, orders, third = asyncio.run(after(frame))
    assert replayed["kind"] == "RECEIPT"
    assert replayed["receipt"]["id"] == receipt["id"]
    assert replayed.get("replay") is True
    assert len(orders) == 2  # the replay placed no second order
    assert (third["kind"], third["code"]) == ("ERROR", "consent_required"), third
    assert "spend" in third["message"]
    servers[-1].stop()
    assert _spent(db, token) == 1100 <= CAP


def test_memory_state_only_when_asked_with_a_warning(
    tmp_path: Path, servers: list[Server], capsys: pytest.CaptureFixture[str]
) -> None:
    servers.append(Server(tmp_path, ["--state", ":memory:"]))
    assert any(line.startswith("warning: --state :memory:") for line in servers[-1].log)
    assert not (tmp_path / "state").exists()
    for bad in ("mysql://db", "sqlite:", "postgresql://db/x"):
        argv = ["serve", "parley://127.0.0.1:1", "--app", f"{CRASH_APP}:build_service"]
        assert main([*argv, "--state", bad]) == 1
        assert "state" in capsys.readouterr().err


async def _commit_first(server: Server, token: str) -> dict[str, Any]:
    client = await _client(server, [token])
    async with client:
        shown = await client.intent("shop.order", {"item": "latte", "qty": 2})
        assert shown.reply is not None
        proposal: dict[str, Any] = shown.reply["proposals"][0]
        with pytest.raises(parley.ParleyError) as cut:
            await client.commit(proposal)
        assert cut.value.code == "unavailable"
        return proposal


async def _retry(server: Server, token: str, proposal: dict[str, Any]) -> dict[str, Any]:
    client = await _client(server, [token])
    async with client:
        done = await client.commit(proposal)
        assert done.reply is not None
        return done.reply


async def _orders(server: Server, token: str) -> list[Any]:
    client = await _client(server, [token])
    async with client:
        got = await client.ask("shop.orders")
        assert got.reply is not None
        orders: list[Any] = got.reply["data"]["orders"]
        return orders


@pytest.mark.parametrize(
    ("step", "outcome"),
    [("before_effect", "released"), ("after_effect", "done"), ("before_receipt", "done")],
)
def test_commit_killed_at_each_step_is_reconciled(
    tmp_path: Path, servers: list[Server], step: str, outcome: str
) -> None:
    token = _spend_grant()
    db = tmp_path / "shop.sqlite"
    state = ["--state", f"sqlite:{db}"]
    servers.append(Server(tmp_path, state, {"PARLEY_TEST_CRASH": step}))
    proposal = asyncio.run(_commit_first(servers[-1], token))
    assert servers[-1].killed() == -signal.SIGKILL
    servers.append(Server(tmp_path, state))
    assert f"recovered commit {proposal['id']}: {outcome}" in servers[-1].log
    reply = asyncio.run(_retry(servers[-1], token, proposal))
    assert reply["kind"] == "RECEIPT", reply
    assert bool(reply.get("replay")) is (outcome == "done")
    assert reply["receipt"]["proposal"] == proposal["id"]
    orders = asyncio.run(_orders(servers[-1], token))
    assert [o["order"] for o in orders] == ["o1"]  # exactly one effect
    assert reply["receipt"]["result"] == {"order": "o1"}
    servers[-1].stop()
    assert _spent(db, token) == proposal["cost"]["amount"]


def test_unreconcilable_commit_is_unavailable_until_an_operator_resolves_it(
    tmp_path: Path, servers: list[Server], capsys: pytest.CaptureFixture[str]
) -> None:
    token = _spend_grant()
    db = tmp_path / "shop.sqlite"
    state = ["--state", f"sqlite:{db}"]
    servers.append(Server(tmp_path, state, {"PARLEY_TEST_CRASH": "after_effect"}))
    proposal = asyncio.run(_commit_first(servers[-1], token))
    servers[-1].killed()
    servers.append(Server(tmp_path, state, {"PARLEY_TEST_NO_RECONCILE": "1"}))
    assert any("unresolved" in line for line in servers[-1].log)
    for _ in range(2):  # never `busy`, however often it is retried
        refused = asyncio.run(_retry(servers[-1], token, proposal))
        assert (refused["code"], refused["reason"]) == ("unavailable", "commit_unresolved")
    assert _spent(db, token) == proposal["cost"]["amount"]  # the reservation stays held
    assert main(["state", "list", "--state", f"sqlite:{db}"]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["kind"], r["id"], r["state"]) for r in listed] == [
        ("commit", proposal["id"], "unresolved")
    ]
    argv = ["state", "resolve", "--state", f"sqlite:{db}", "commit", proposal["id"]]
    assert main([*argv, "--happened", "--result", '{"order": "o1"}']) == 0
    written = json.loads(capsys.readouterr().out)
    reply = asyncio.run(_retry(servers[-1], token, proposal))
    assert (reply["kind"], reply.get("replay")) == ("RECEIPT", True)
    assert reply["receipt"] == written
    assert main([*argv, "--not-happened"]) == 1  # nothing left in flight
    assert "not_in_flight" in capsys.readouterr().err


def test_undo_killed_after_its_effect_is_reconciled(tmp_path: Path, servers: list[Server]) -> None:
    token = _spend_grant()
    state = ["--state", f"sqlite:{tmp_path / 'shop.sqlite'}"]

    async def commit_then_undo() -> dict[str, Any]:
        client = await _client(servers[-1], [token])
        async with client:
            shown = await client.intent("shop.order", {"item": "latte"})
            assert shown.reply is not None
            done = await client.commit(shown.reply["proposals"][0])
            assert done.reply is not None
            receipt: dict[str, Any] = done.reply["receipt"]
            with pytest.raises(parley.ParleyError):
                await client.undo(receipt["id"])
            return receipt

    async def undo_again(receipt: dict[str, Any]) -> dict[str, Any]:
        client = await _client(servers[-1], [token])
        async with client:
            again = await client.undo(receipt["id"])
            assert again.reply is not None
            return again.reply

    servers.append(Server(tmp_path, state, {"PARLEY_TEST_CRASH": "undo_after_effect"}))
    receipt = asyncio.run(commit_then_undo())
    assert servers[-1].killed() == -signal.SIGKILL
    started = time.monotonic()
    servers.append(Server(tmp_path, state))
    assert f"recovered undo {receipt['id']}: done" in servers[-1].log
    reply = asyncio.run(undo_again(receipt))
    assert time.monotonic() - started < 30
    assert (reply["kind"], reply.get("replay")) == ("RECEIPT", True)
    assert reply["receipt"]["undoes"] == receipt["id"]
    assert reply["receipt"]["result"]["cancelled"] == "o1"


async def _auto(server: Server, token: str, frame: dict[str, Any] | None) -> Any:
    """Send the auto INTENT ``frame`` (a new one when ``None``); the reply or the error."""
    client = await _client(server, [token])
    async with client:
        if frame is None:
            frame = client.agent.intent("shop.order", {"item": "latte"}, auto=True)
        client.agent.pending[frame["id"]] = parley.Result(frame)
        try:
            done = await client.request(frame)
        except parley.ParleyError as exc:
            return frame, exc
        return frame, done.reply


@pytest.mark.parametrize(
    ("step", "outcome"), [("before_effect", "released"), ("after_effect", "done")]
)
def test_auto_intent_killed_mid_commit_is_settled_at_restart(
    tmp_path: Path, servers: list[Server], step: str, outcome: str
) -> None:
    # Review F4: the replay claim of an auto INTENT cut short by a crash answered `busy`
    # for its whole replay time (10 minutes) and its receipt could never be fetched.
    token = _spend_grant()
    db = tmp_path / "shop.sqlite"
    state = ["--state", f"sqlite:{db}"]
    servers.append(Server(tmp_path, state, {"PARLEY_TEST_CRASH": step}))
    frame, cut = asyncio.run(_auto(servers[-1], token, None))
    assert isinstance(cut, parley.ParleyError), cut
    assert servers[-1].killed() == -signal.SIGKILL
    servers.append(Server(tmp_path, state))
    assert f"recovered auto {frame['id']}: {outcome}" in servers[-1].log, servers[-1].log
    _, reply = asyncio.run(_auto(servers[-1], token, frame))  # the very same frame again
    assert isinstance(reply, dict), reply
    assert reply["kind"] == "RECEIPT", reply
    assert bool(reply.get("replay")) is (outcome == "done")
    assert reply["receipt"]["result"] == {"order": "o1"}
    _, again = asyncio.run(_auto(servers[-1], token, frame))
    assert (again["kind"], again.get("replay")) == ("RECEIPT", True)
    assert again["receipt"] == reply["receipt"]
    orders = asyncio.run(_orders(servers[-1], token))
    assert [o["order"] for o in orders] == ["o1"]  # exactly one effect
    servers[-1].stop()
    assert _spent(db, token) == reply["receipt"]["cost"]["amount"]
