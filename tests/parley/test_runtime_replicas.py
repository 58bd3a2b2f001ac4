"""Two ``parley serve`` replicas on one PostgreSQL database (issue 23).

Real processes on loopback, the real agent, one throwaway PostgreSQL cluster: 64 commits
race across the two replicas against one spend cap while one replica SIGKILLs itself in
the middle of a commit (its effect done, its receipt not stored). The other replica
carries on, and settles the cut commit when the agent retries it there. Afterwards the
cap holds exactly, every effect has exactly one receipt, and the cap can be filled to
the last cent (no reservation leaked).

Private imports: it drives the command line in process through ``parley._cli.main(argv)``:
the CLI's public contract is its argv, output and exit status, which these tests hold (our
decision: no public ``cli`` modules).
"""

from __future__ import annotations

import asyncio
import signal
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import parley
from parley._cli import main

from .runtime_harness import AGENT, SERVICE_ID, grant
from .serve_process import ServeProcess as Replica

APP = Path(__file__).with_name("replica_app.py")
PRICE = 100
CAP = 4000  # 40 commits of 64
pytestmark = pytest.mark.slow  # real servers, processes and a database


async def _propose(replica: Replica, token: str) -> dict[str, Any]:
    client = await parley.connect(replica.url, parley.Agent(AGENT, [token], service=SERVICE_ID))
    async with client:
        shown = await client.intent("pay", {"cents": PRICE})
        assert shown.reply is not None
        assert shown.reply["kind"] == "PROPOSALS", shown.reply.get("message")
        proposal: dict[str, Any] = shown.reply["proposals"][0]
        return proposal


async def _commit(replica: Replica, token: str, proposal: dict[str, Any]) -> dict[str, Any] | str:
    """The reply to COMMIT, or ``"cut"`` when the replica went away under it."""
    try:
        client = await parley.connect(replica.url, parley.Agent(AGENT, [token], service=SERVICE_ID))
        async with client:
            done = await asyncio.wait_for(client.commit(proposal), 120)
    except parley.ParleyError as exc:
        if exc.code in ("unavailable", "internal"):
            return "cut"
        raise
    except (OSError, EOFError, asyncio.IncompleteReadError):
        return "cut"
    assert done.reply is not None
    return done.reply


def _outcome(reply: dict[str, Any] | str) -> str:
    if isinstance(reply, str):
        return reply
    if reply["kind"] == "RECEIPT":
        return "receipt"
    assert reply["code"] == "consent_required", reply
    assert "spend" in reply["message"], reply
    return "refused"


def test_two_replicas_share_one_cap_and_settle_a_killed_commit(
    tmp_path: Path, servers: list[Replica], postgres_url: str
) -> None:
    token = grant(extra=[{"spend": {"max": CAP, "currency": "USD"}}], nonce="replicas")
    block = parley.decode_grant(token).block_ids[-1]
    orders = tmp_path / "orders.sqlite"
    env = {"PARLEY_TEST_ORDERS": str(orders)}
    state = ["--state", postgres_url]
    # A dies at its fifth effect: the cap admits 40 commits and B is sent only 32, so A is
    # sure of 8 effects however the race goes (at its tenth, a run where B's commits all
    # landed first left A alive, and the test waiting for its death)
    a = Replica(tmp_path, APP, state, {**env, "PARLEY_TEST_DIE_AT": "5"})
    b = Replica(tmp_path, APP, state, env)
    servers += [a, b]
    assert "(state: postgresql://" in a.log[-1]

    async def race() -> tuple[list[dict[str, Any]], list[dict[str, Any] | str]]:
        # proposals are made on either replica; each is committed on the other one
        made = await asyncio.gather(*(_propose((a, b)[n % 2], token) for n in range(64)))
        replies = await asyncio.gather(
            *(_commit((b, a)[n % 2], token, p) for n, p in enumerate(made))
        )
        return list(made), list(replies)

    proposals, replies = asyncio.run(race())
    assert a.killed() == -signal.SIGKILL  # replica A died at its fifth commit
    assert b.proc.poll() is None  # B carried on
    on_a = [n for n in range(64) if n % 2 == 1]
    cut = [n for n, r in enumerate(replies) if r == "cut"]
    assert cut
    assert set(cut) <= set(on_a)  # nothing sent to B was cut
    assert any(_outcome(replies[n]) == "receipt" for n in range(0, 64, 2))

    async def retry() -> list[dict[str, Any] | str]:
        return list(await asyncio.gather(*(_commit(b, token, proposals[n]) for n in cut)))

    for n, reply in zip(cut, asyncio.run(retry()), strict=True):
        replies[n] = reply
    outcomes = [_outcome(r) for r in replies]
    assert set(outcomes) <= {"receipt", "refused"}
    # the commit cut after its effect was settled by B: a receipt for the order A placed
    recovered = [
        replies[n] for n in cut if isinstance(replies[n], dict) and replies[n].get("replay")
    ]
    assert len(recovered) >= 1, [replies[n] for n in cut]

    # fill the cap to the last cent on B: exactly CAP / PRICE commits in all
    async def top_up() -> int:
        extra = 0
        while True:
            reply = await _commit(b, token, await _propose(b, token))
            if _outcome(reply) == "refused":
                return extra
            extra += 1

    extra = asyncio.run(top_up())
    receipts = [r["receipt"] for r in replies if isinstance(r, dict) and r["kind"] == "RECEIPT"]
    assert len(receipts) + extra == CAP // PRICE

    # every effect has exactly one receipt, and every receipt one effect
    store = parley.stores.PostgresStore(postgres_url)
    try:
        assert store.spent([block])[block] == CAP
        assert store.leases("commit") == []  # nothing left in flight
        stored = {}
        for p in proposals:
            found = store.receipt_for(p["id"])
            if found is not None:
                stored[p["id"]] = found.receipt
    finally:
        store.close()
    assert len({r["id"] for r in receipts}) == len(receipts)  # each receipt once
    for seen in receipts:
        assert stored[seen["proposal"]] == seen  # the one in the database
    with sqlite3.connect(orders) as book:
        placed = dict(book.execute("SELECT proposal, number FROM orders").fetchall())
    assert len(placed) == CAP // PRICE
    assert {p: r["result"]["order"] for p, r in stored.items()} == {p: placed[p] for p in stored}
    b.stop()
    # an operator's `parley state list` on the shared database: nothing in flight
    assert main(["state", "list", "--state", postgres_url]) == 0
