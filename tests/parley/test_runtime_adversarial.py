"""Regressions for defects found by an adversarial review of the runtime and transports.

Private imports: ``parley._cli_runtime._seed`` is the ``--seed``/``--seed-
file``/``PARLEY_AGENT_SEED`` rule of ``parley call`` (no public ``cli`` module; our
decision); ``parley._transport_tcp._encoded`` forges what no public call produces, a reply
whose ids are lone surrogates, to test that it still leaves as an ERROR frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import parley

from .runtime_harness import AGENT, PRINCIPAL, SHOP_FILE, grant, need_uvicorn
from .test_runtime_service import NOW, Rig

HELLO = b'{"parley":1,"id":"last","verb":"HELLO"}'


def _receipt(n: int, *, until: int | None) -> parley.stores.ReceiptRecord:
    receipt = {
        "id": f"r{n}",
        "proposal": f"p{n}",
        "at": NOW,
        "undo": None if until is None else {"until": until},
    }
    return parley.stores.ReceiptRecord(receipt, "k", PRINCIPAL.public, "h")


def _commit(store: Any, n: int, *, until: int | None) -> None:
    assert store.begin_commit(f"p{n}", [], 0, "", now=NOW) == "new"
    store.finish_commit(_receipt(n, until=until), now=NOW)


def _stores(tmp_path: Path, **limits: int) -> list[Any]:
    return [
        parley.stores.MemoryStore(**limits),
        parley.stores.SQLiteStore(str(tmp_path / "s.db"), **limits),
    ]


# ------------------------------------------------------------------ receipts: bounded, not lossy


@pytest.mark.timeout(60)
def test_full_receipt_store_with_an_undo_running_does_not_hang(tmp_path: Path) -> None:
    # Was: the memory store's eviction loop spun forever (holding the service lock) when
    # the oldest receipt was being undone; every thread of the service then hung.
    for store in _stores(tmp_path, max_receipts=2):
        _commit(store, 1, until=NOW + 1800)
        _commit(store, 2, until=NOW + 1800)
        assert store.begin_undo("r1") == "new"
        with pytest.raises(parley.ParleyError) as exc:
            store.begin_commit("p3", [], 0, "", now=NOW)
        assert (exc.value.code, exc.value.reason) == ("limit", "store_full")
        store.abort_undo("r1")


def test_receipts_inside_their_undo_window_are_never_forgotten(tmp_path: Path) -> None:
    for store in _stores(tmp_path, max_receipts=2):
        _commit(store, 1, until=NOW + 1800)
        _commit(store, 2, until=None)  # irreversible: only serves replays
        _commit(store, 3, until=NOW + 1800)  # evicts r2, not the older undoable r1
        assert store.receipt("r1") is not None
        assert store.receipt("r2") is None
        with pytest.raises(parley.ParleyError):
            store.begin_commit("p4", [], 0, "", now=NOW)
        # once the windows close, the old receipts make room again
        assert store.begin_commit("p4", [], 0, "", now=NOW + 1800) == "new"


def test_service_refuses_a_commit_rather_than_lose_an_undo() -> None:
    rig = Rig(max_receipts=1)
    g = grant(now=NOW)
    first, second = rig.proposals({"item": "latte"}, grants=[g])
    receipt = rig.send(rig.commit(first, grants=[g]))["receipt"]
    refused = rig.send(rig.commit(second, grants=[g]))
    assert (refused["code"], refused["reason"]) == ("limit", "store_full")
    assert rig.store.sizes()["inflight"] == 0, "nothing stays reserved"
    assert rig.send(rig.undo(receipt["id"], grants=[g]))["kind"] == "RECEIPT"
    # the undone receipt may now be forgotten: the retried commit goes through
    assert rig.send(rig.commit(second, grants=[g]))["kind"] == "RECEIPT"


# ------------------------------------------------------------------ auto replay memory edge


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_auto_replay_memory_covers_the_last_second_of_proof_validity(
    backend: str, tmp_path: Path
) -> None:
    rig = Rig()
    if backend == "sqlite":
        rig.store = parley.stores.SQLiteStore(str(tmp_path / "r.db"))
        rig.service.store = rig.store
    g = grant(now=NOW)
    # the agent's clock is 300 s ahead: the proof is accepted from NOW to NOW + 600
    frame = rig.intent({"item": "latte", "ship": "pickup"}, grants=[g], auto=True, ts=NOW + 300)
    first = rig.send(frame)
    assert first["kind"] == "RECEIPT"
    assert "replay" not in first
    again = rig.send(frame, now=NOW + 600)  # was: a second order placed here
    assert again["kind"] == "RECEIPT"
    assert again["replay"] is True
    assert again["receipt"]["id"] == first["receipt"]["id"]
    late = rig.send(frame, now=NOW + 601)
    assert (late["code"], late["reason"]) == ("unauthorized", "proof_expired")


# ------------------------------------------------------------------ spend totals


def test_free_commits_take_no_spend_total_slot(tmp_path: Path) -> None:
    cap = [parley.grants.SpendCap("block-a", 1000, "USD")]
    for store in _stores(tmp_path):
        if isinstance(store, parley.stores.MemoryStore):
            store.max_blocks = 1
        for n in range(5):
            assert store.begin_commit(f"free{n}", cap, 0, "", now=NOW) == "new"
            store.finish_commit(_free(n), now=NOW)
        other = [parley.grants.SpendCap("block-b", 1000, "USD")]
        assert store.begin_commit("paid", other, 100, "USD", now=NOW) == "new"
        assert store.spent(["block-a", "block-b"]) == {"block-a": 0, "block-b": 100}
        sizes = store.sizes()
        assert sizes.get("blocks", sizes.get("totals")) == 1, "only the paid block is counted"


def _free(n: int) -> parley.stores.ReceiptRecord:
    receipt = {"id": f"rf{n}", "proposal": f"free{n}", "at": NOW, "undo": None}
    return parley.stores.ReceiptRecord(receipt, "k", PRINCIPAL.public, "h")


# ------------------------------------------------------------------ frames and offers


@pytest.mark.parametrize("number", [b"1e999", b"-1e400", b"123e4567"])
def test_numbers_too_large_to_be_finite_are_bad_frames(number: bytes) -> None:
    line = b'{"parley":1,"id":"n","verb":"ASK","capability":"shop.search","params":{"q":' + number
    reply = Rig().send(line + b"}}")
    assert (reply["code"], reply["reason"]) == ("bad_frame", "not_json")


def test_a_malformed_offer_is_internal_and_leaks_nothing() -> None:
    svc = parley.Service("x.example", name="x", trusted=[PRINCIPAL.public])

    @svc.intent("x.pay", params={"n": "int"})
    def pay(params: dict[str, Any], ctx: parley.Context) -> Any:
        return [parley.offer("pay", [], cost=(params["n"], "USD"))]

    frame = {"parley": 1, "id": "1", "verb": "INTENT", "capability": "x.pay", "params": {"n": -5}}
    reply = svc.handle(frame, now=NOW)[-1]
    assert (reply["code"], reply["reason"]) == ("internal", "bad_offer")
    assert "grant" not in reply["message"]
    assert "context" not in reply["message"]


def test_the_shop_refuses_absurd_quantities_with_a_fix() -> None:
    rig = Rig()
    for qty in (-3, 100, 10**20):
        reply = rig.send(rig.intent({"item": "latte", "qty": qty}))
        assert reply["code"] == "invalid_params"
        assert reply["fix"][0]["params"] == {"qty": 1}


# ------------------------------------------------------------------ transports


def _service_with_gate() -> tuple[parley.Service, threading.Event]:
    gate = threading.Event()
    svc = parley.Service("gate.example", name="gate")

    @svc.ask("gate.wait")
    def wait(params: dict[str, Any], ctx: parley.Context) -> Any:
        gate.wait(30)
        return {"ok": True}

    @svc.ask("gate.odd_event")
    def odd(params: dict[str, Any], ctx: parley.Context) -> Any:
        ctx.event("progress", data={1, 2})  # a set: not JSON
        return {"ok": True}

    return svc, gate


async def _eof(reader: asyncio.StreamReader) -> bytes:
    """Everything until the server hangs up (a reset after our own late writes counts)."""
    try:
        return await asyncio.wait_for(reader.read(), 30)
    except ConnectionError:
        return b""


def test_tcp_cuts_a_slowloris_but_not_a_peer_waiting_for_a_reply() -> None:
    async def run() -> None:
        svc, gate = _service_with_gate()
        server = await parley.net.serve_tcp(svc, "127.0.0.1", 0, frame_timeout=0.3)
        port = server.sockets[0].getsockname()[1]
        idle = await parley.net.serve_tcp(svc, "127.0.0.1", 0, idle_timeout=0.3)
        try:
            # trickling a frame that never ends: the server hangs up
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b'{"parley":1,"id":"slow","ver')
            await writer.drain()
            for _ in range(3):  # each byte arrives before the timeout; the frame never does
                await asyncio.sleep(0.2)
                with contextlib.suppress(ConnectionError):
                    writer.write(b" ")
                    await writer.drain()
            assert await _eof(reader) == b""
            writer.close()
            # trickling a frame behind a slow request: cut once the request is answered
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b'{"parley":1,"id":"w0","verb":"ASK","capability":"gate.wait"}\n{"p')
            await writer.drain()
            await asyncio.sleep(0.5)
            gate.set()
            assert json.loads(await asyncio.wait_for(reader.readline(), 30))["re"] == "w0"
            assert await _eof(reader) == b""
            writer.close()
            gate.clear()
            # a connection left empty past idle_timeout is closed too
            idle_port = idle.sockets[0].getsockname()[1]
            reader, writer = await asyncio.open_connection("127.0.0.1", idle_port)
            assert await _eof(reader) == b""
            writer.close()
            # and a client whose connection was closed fails fast instead of hanging
            client = await parley.connect(f"parley://127.0.0.1:{idle_port}", parley.Agent(AGENT))
            for _ in range(300):
                if client.closed:
                    break
                await asyncio.sleep(0.05)
            with pytest.raises(parley.ParleyError) as exc:
                await asyncio.wait_for(client.hello(), 30)
            assert (exc.value.code, exc.value.reason) == ("unavailable", "closed")
            await client.close()
            # a request whose answer takes longer than the idle timeout is still answered
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b'{"parley":1,"id":"w","verb":"ASK","capability":"gate.wait"}\n')
            await writer.drain()
            await asyncio.sleep(1.0)
            gate.set()
            reply = json.loads(await asyncio.wait_for(reader.readline(), 30))
            assert (reply["re"], reply["kind"]) == ("w", "ANSWER")
            writer.close()
        finally:
            gate.set()
            for srv in (server, idle):
                srv.close()
                await srv.wait_closed()

    asyncio.run(run())


def test_tcp_answers_a_last_frame_ended_by_eof_and_caps_connections() -> None:
    async def run() -> None:
        svc, _ = _service_with_gate()
        server = await parley.net.serve_tcp(svc, "127.0.0.1", 0, max_connections=1)
        port = server.sockets[0].getsockname()[1]
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b'{"parley":1,"id":"a","verb":"HELLO"}\n')
            await writer.drain()
            assert json.loads(await asyncio.wait_for(reader.readline(), 30))["re"] == "a"
            # a second connection beyond the cap closes the first, idle one (issue 18)
            extra_reader, extra = await asyncio.open_connection("127.0.0.1", port)
            assert await _eof(reader) == b""
            writer.close()
            reader, writer = extra_reader, extra
            # the newcomer works; a frame ended by EOF instead of a newline is answered
            writer.write(HELLO)
            writer.write_eof()
            out = await _eof(reader)
            assert json.loads(out)["re"] == "last"
            writer.close()
        finally:
            server.close()
            await server.wait_closed()

    asyncio.run(run())


def test_an_event_that_cannot_be_encoded_does_not_end_its_request_early() -> None:
    async def run() -> None:
        svc, _ = _service_with_gate()
        server = await parley.net.serve_tcp(svc, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            client = await parley.connect(f"parley://127.0.0.1:{port}", parley.Agent(AGENT))
            async with client:
                result = await client.ask("gate.odd_event")
                assert result.kind == "ANSWER"
                assert [e["kind"] for e in result.events] == ["EVENT"]
        finally:
            server.close()
            await server.wait_closed()

    asyncio.run(run())


def test_stdio_answers_a_last_line_without_newline() -> None:
    svc, _ = _service_with_gate()
    out = io.BytesIO()
    parley.net.serve_stdio(svc, io.BytesIO(b'{"parley":1,"id":"a","verb":"HELLO"}\n' + HELLO), out)
    replies = [json.loads(line) for line in out.getvalue().splitlines()]
    assert sorted(r["re"] for r in replies) == ["a", "last"]
    # and the real child process does the same
    child = subprocess.run(
        [sys.executable, str(SHOP_FILE), "stdio:", "--trust", PRINCIPAL.public],
        input=HELLO,
        capture_output=True,
        timeout=60,
        check=True,
    )
    assert json.loads(child.stdout)["re"] == "last"


def test_http_bridge_drops_a_body_that_trickles_in() -> None:
    need_uvicorn()

    async def run() -> None:
        svc, _ = _service_with_gate()
        server = await parley.net.serve_http(svc, "127.0.0.1", 0, body_timeout=0.3)
        port = server.servers[0].sockets[0].getsockname()[1]
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(
                b"POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 100\r\n\r\n{"
            )
            await writer.drain()
            out = await _eof(reader)
            assert out.startswith(b"HTTP/1.1 408")
            writer.close()
            # a header block that grows past the 64 KiB limit is refused, not buffered
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 300_000)
            with contextlib.suppress(ConnectionError):
                await writer.drain()
            out = await _eof(reader)
            assert out == b"" or out.startswith(b"HTTP/1.1 4")
            writer.close()
            status, _, _ = await parley._http_client.http_request(
                f"http://127.0.0.1:{port}/", "GET"
            )
            assert status == 200
        finally:
            server.should_exit = True
            await server.task

    asyncio.run(run())


# ------------------------------------------------------------------ replies, store, agent


def test_a_reply_json_cannot_carry_is_internal_not_the_peers_bad_frame() -> None:
    svc = parley.Service("x.example", name="x")

    @svc.ask("x.set")
    def odd(params: dict[str, Any], ctx: parley.Context) -> Any:
        return {"v": {1, 2}}

    reply = svc.handle({"parley": 1, "id": "1", "verb": "ASK", "capability": "x.set"}, now=NOW)[-1]
    assert (reply["code"], reply["reason"]) == ("internal", "bad_reply")
    assert "set" not in reply["message"]


def test_sqlite_store_refuses_a_tampered_schema_and_syncs_fully(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "t.db"
    good = parley.stores.SQLiteStore(str(path))
    assert good._db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    good.close()
    db = sqlite3.connect(path)
    db.execute("DROP TABLE totals")
    db.execute("CREATE TABLE totals (block TEXT PRIMARY KEY, amount REAL, note TEXT)")
    db.commit()
    db.close()
    with pytest.raises(parley.ParleyError) as exc:
        parley.stores.SQLiteStore(str(path))
    assert exc.value.reason == "bad_store"
    assert str(path) not in exc.value.message
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all " * 100)
    with pytest.raises(parley.ParleyError) as exc:
        parley.stores.SQLiteStore(str(junk))
    assert exc.value.reason == "bad_store"


def test_client_ignores_a_request_shaped_frame_and_bounds_what_it_remembers() -> None:
    async def run() -> None:
        sent: list[dict[str, Any]] = []

        async def send(frame: dict[str, Any]) -> None:
            sent.append(frame)

        agent = parley.Agent(AGENT, service="shop.example")
        client = parley.Client(agent, send)
        pending = asyncio.ensure_future(client.hello())
        await asyncio.sleep(0)
        client.deliver({"parley": 1, "id": "evil", "verb": "HELLO"})  # was: raised
        re = sent[0]["id"]
        many = [{"id": f"p{n}", "hash": "h"} for n in range(parley._agent.MAX_SHOWN + 50)]
        client.deliver({"parley": 1, "id": "s1", "re": re, "kind": "PROPOSALS", "proposals": many})
        result = await pending
        assert result.kind == "PROPOSALS"
        assert len(agent.shown) == parley._agent.MAX_SHOWN
        assert f"p{parley._agent.MAX_SHOWN + 49}" in agent.shown

    asyncio.run(run())


def test_http_client_gives_up_on_endless_response_headers() -> None:
    async def run() -> None:
        async def flood(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(b"HTTP/1.1 200 OK\r\n")
            with contextlib.suppress(ConnectionError, OSError):
                for n in range(10_000):
                    writer.write(b"X-%d: y\r\n" % n)
                    await writer.drain()
            writer.close()

        server = await asyncio.start_server(flood, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            with pytest.raises(parley.ParleyError) as exc:
                await parley._http_client.http_request(f"http://127.0.0.1:{port}/", "GET")
            assert exc.value.code == "unavailable"
        finally:
            server.close()
            await server.wait_closed()

    asyncio.run(run())


def test_call_reads_the_agent_seed_from_a_file_or_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import argparse

    from parley._cli_runtime import _seed

    seed = bytes(range(32))
    path = tmp_path / "seed"
    path.write_text(seed.hex() + "\n")
    args = argparse.Namespace(seed=None, seed_file=str(path))
    assert _seed(args) == seed
    monkeypatch.setenv("PARLEY_AGENT_SEED", bytes(32).hex())
    assert _seed(argparse.Namespace(seed="ff" * 32, seed_file=None)) == bytes(32)
    monkeypatch.delenv("PARLEY_AGENT_SEED")
    assert _seed(argparse.Namespace(seed=None, seed_file=None)) is None
    with pytest.raises(parley.ParleyError) as exc:
        _seed(argparse.Namespace(seed="abc", seed_file=None))
    assert exc.value.reason == "bad_seed"


def test_a_commit_that_loses_the_race_to_its_own_twin_is_a_replay() -> None:
    class Racy(parley.stores.MemoryStore):
        """Answers as if the twin COMMIT finished between the lookups and the claim."""

        stale: parley.stores.ProposalRecord | None = None

        def receipt_for(self, proposal_id: str) -> parley.stores.ReceiptRecord | None:
            return None if self.stale is not None else super().receipt_for(proposal_id)

        def proposal(self, proposal_id: str, *, now: int) -> parley.stores.ProposalRecord | None:
            stale, self.stale = self.stale, None
            return stale if stale is not None else super().proposal(proposal_id, now=now)

    rig = Rig()
    store = Racy()
    rig.store = store
    rig.service.store = store
    g = grant(now=NOW)
    proposal = rig.proposals({"item": "latte", "ship": "pickup"}, grants=[g])[0]
    first = rig.send(rig.commit(proposal, grants=[g]))
    assert "replay" not in first
    store.stale = parley.stores.ProposalRecord(proposal, AGENT.public, PRINCIPAL.public)
    twin = rig.send(rig.commit(proposal, grants=[g]))
    assert twin["kind"] == "RECEIPT"
    assert twin["replay"] is True, "was: a second fresh-looking receipt"
    assert twin["receipt"] == first["receipt"]


def test_auto_intents_without_a_grant_take_no_replay_memory() -> None:
    rig = Rig(max_replay=1)
    for _ in range(3):  # self-made keys, no grant: was one replay slot each, then `limit`
        frame = rig.intent(
            {"item": "latte", "ship": "pickup"}, key=parley.generate_key(), auto=True
        )
        assert rig.send(frame)["kind"] == "PROPOSALS"
    assert rig.store.sizes()["replay"] == 0
    g = grant(now=NOW)
    got = rig.send(rig.intent({"item": "latte", "ship": "pickup"}, grants=[g], auto=True))
    assert got["kind"] == "RECEIPT"


def test_tcp_answers_a_lone_surrogate_id_and_keeps_going() -> None:
    async def run() -> None:
        svc, _ = _service_with_gate()
        server = await parley.net.serve_tcp(svc, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            # was: no reply at all (the error naming that id could not be encoded)
            writer.write(b'{"parley":1,"id":"\\ud800","verb":"HELLO"}\n')
            writer.write(b'{"parley":1,"id":"ok","verb":"HELLO"}\n')
            await writer.drain()
            first = json.loads(await asyncio.wait_for(reader.readline(), 30))
            second = json.loads(await asyncio.wait_for(reader.readline(), 30))
            assert (first["re"], first["code"], first["reason"]) == (None, "bad_frame", "not_json")
            assert (second["re"], second["kind"]) == ("ok", "BRIEF")
            writer.close()
        finally:
            server.close()
            await server.wait_closed()

    asyncio.run(run())


def test_an_unsendable_reply_still_gets_an_error_frame() -> None:
    from parley._transport_tcp import _encoded

    line = _encoded({"parley": 1, "id": "\ud800", "re": "\udc00", "kind": "ANSWER", "data": 1})
    frame = json.loads(line)
    assert (frame["kind"], frame["code"], frame["re"]) == ("ERROR", "internal", None)


# ------------------------------------------------------------------ proofs bound to one request


def test_a_commit_proof_must_be_for_this_verb_target_audience_and_time() -> None:
    rig = Rig()
    g = grant(now=NOW)
    first, second = rig.proposals({"item": "latte"}, grants=[g])
    digest = first["hash"]

    def attempt(proof: dict[str, Any], now: int = NOW) -> dict[str, Any]:
        frame = rig.commit(first, grants=[g])
        frame["proof"] = proof
        return rig.send(frame, now=now)

    def signed(
        verb: str = "COMMIT", target: str = digest, aud: str = "shop.example", ts: int = NOW
    ):
        return parley.sign_proof(AGENT, aud=aud, verb=verb, target=target, ts=ts)

    for proof in (
        signed(verb="UNDO"),
        signed(verb="INTENT"),
        signed(target=second["hash"]),
        signed(aud="other.example"),
    ):
        got = attempt(proof)
        assert (got["code"], got["reason"]) == ("unauthorized", "bad_proof_signature")
    for skew in (-301, 301):
        assert attempt(signed(ts=NOW + skew))["reason"] == "proof_expired"
    assert "hash" not in json.dumps(attempt(signed(target=second["hash"])))
    # at the edge it is valid; the same proof under another frame id is only a replay
    done = attempt(signed(ts=NOW + 300))
    assert done["kind"] == "RECEIPT"
    again = attempt(signed(ts=NOW + 300))
    assert again["replay"] is True
    assert again["receipt"]["id"] == done["receipt"]["id"]
    assert rig.store.sizes()["receipts"] == 1


def test_sys_exit_in_a_capability_is_an_internal_error_not_a_dead_request() -> None:
    svc = parley.Service("x.example", name="x")

    @svc.ask("x.exit")
    def bail(params: dict[str, Any], ctx: parley.Context) -> Any:
        sys.exit(3)

    reply = svc.handle({"parley": 1, "id": "1", "verb": "ASK", "capability": "x.exit"}, now=NOW)
    assert (reply[-1]["re"], reply[-1]["code"]) == ("1", "internal")


@pytest.mark.parametrize(
    ("schema", "params"),
    [
        ({"qty": "int[]"}, {"qty": [1, "2"]}),
        ({"tags": "a|b[]"}, {"tags": ["a", "c"]}),
        ({"items": [{"sku": "string", "n": "int"}]}, {"items": [{"sku": "a", "n": "3"}]}),
        ({"items": [{"n": "int"}]}, {"items": [{"n": 1, "zz": 2}]}),
    ],
)
def test_every_fix_inside_an_array_is_a_merge_patch_that_repairs(
    schema: dict[str, Any], params: dict[str, Any]
) -> None:
    # was: {"qty": {"1": 2}}, which turns the array into an object when applied
    with pytest.raises(parley.ParleyError) as exc:
        parley.service.check_params(schema, params)
    fixes = exc.value.fix  # type: ignore[attr-defined]
    assert fixes
    for fix in fixes:
        parley.service.check_params(schema, parley.service.merge_patch(params, fix["params"]))


def test_no_fix_resends_a_huge_array() -> None:
    params = {"qty": [1] * 50_000 + ["2"]}
    with pytest.raises(parley.ParleyError) as exc:
        parley.service.check_params({"qty": "int[]"}, params)
    assert exc.value.fix == []  # type: ignore[attr-defined]


def test_discovery_of_a_hostile_endpoint_is_unavailable_not_a_crash() -> None:
    async def run() -> None:
        body = b"[" * 200_000 + b"]" * 200_000  # was: RecursionError out of discover()

        async def hostile(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError, OSError):
                await reader.readuntil(b"\r\n\r\n")
                head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body)
                writer.write(head + body)
                await writer.drain()
            writer.close()

        server = await asyncio.start_server(hostile, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            with pytest.raises(parley.ParleyError) as exc:
                await parley.net.discover(f"http://127.0.0.1:{port}/")
            assert exc.value.code == "unavailable"
        finally:
            server.close()
            await server.wait_closed()

    asyncio.run(run())


def test_the_store_never_reserves_across_currencies_or_past_a_cap(tmp_path: Path) -> None:
    caps = [parley.grants.SpendCap("blk", 1000, "USD")]
    for store in _stores(tmp_path):
        for amount, currency in ((10, "EUR"), (1001, "USD")):
            with pytest.raises(parley.ParleyError) as exc:
                store.begin_commit("p", caps, amount, currency, now=NOW)
            assert (exc.value.code, exc.value.reason) == ("consent_required", "spend_exceeded")
        assert store.spent(["blk"]) == {"blk": 0}
        assert store.sizes()["inflight"] == 0
        assert store.begin_commit("p", caps, 1000, "USD", now=NOW) == "new"
        store.abort_commit("p")  # a failed commit gives everything back
        assert store.spent(["blk"]) == {"blk": 0}
