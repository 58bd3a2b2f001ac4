"""The SQLite store: the same runtime rules, durable, and exact spend across processes.

Private imports: ``parley._sqlite.MIGRATIONS`` and ``SCHEMA_VERSION`` build a database of an
older schema version to test the store's migration history; ``parley._recovery.machine_id``
and ``owner_gone`` write and read the lease owner the store records (machine, boot,
process), the on-disk field by which a replica tells that a crashed process's lease is
stale.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

import parley

from .runtime_harness import AGENT, PRINCIPAL, ROOT, grant, load_shop

SHOP = load_shop()
NOW = 1_790_000_000


def service(path: Path) -> parley.Service:
    store = parley.stores.SQLiteStore(str(path))
    return SHOP.build_service(trusted=[PRINCIPAL.public], store=store, clock=lambda: NOW)


def proof(verb: str, target: str) -> dict[str, Any]:
    return parley.sign_proof(AGENT, aud="shop.example", verb=verb, target=target, ts=NOW)


def intent(fid: str, grants: list[str], params: dict[str, Any]) -> dict[str, Any]:
    return {
        "parley": 1,
        "id": fid,
        "verb": "INTENT",
        "capability": "shop.order",
        "params": params,
        "grants": grants,
        "proof": proof("INTENT", "shop.order"),
    }


def commit(fid: str, p: dict[str, Any], grants: list[str]) -> dict[str, Any]:
    return {
        "parley": 1,
        "id": fid,
        "verb": "COMMIT",
        "proposal": p["id"],
        "hash": p["hash"],
        "grants": grants,
        "proof": proof("COMMIT", p["hash"]),
    }


def test_state_survives_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    g = [grant(now=NOW)]
    first = service(db)
    proposal = first.handle(intent("i", g, {"item": "latte"}))[-1]["proposals"][0]
    receipt = first.handle(commit("c", proposal, g))[-1]["receipt"]
    second = service(db)  # a new process would see the same
    again = second.handle(commit("c2", proposal, g))[-1]
    assert again["replay"] is True
    assert again["receipt"] == receipt
    undo = {
        "parley": 1,
        "id": "u",
        "verb": "UNDO",
        "receipt": receipt["id"],
        "grants": g,
        "proof": proof("UNDO", receipt["id"]),
    }
    assert second.handle(undo)[-1]["receipt"]["undoes"] == receipt["id"]
    assert first.handle(dict(undo, id="u2"))[-1]["replay"] is True
    ask = {
        "parley": 1,
        "id": "a",
        "verb": "ASK",
        "capability": "shop.search",
        "budget": 150,
        "proof": proof("ASK", "shop.search"),
    }
    handle = first.handle(ask)[-1]["more"][0]["handle"]
    expand = {
        "parley": 1,
        "id": "e",
        "verb": "EXPAND",
        "handle": handle,
        "proof": proof("EXPAND", handle),
    }
    assert second.handle(expand)[-1]["kind"] == "ANSWER"


def test_auto_memory_is_shared(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    g = [grant(now=NOW)]
    frame = {
        "parley": 1,
        "id": "auto-x",
        "verb": "INTENT",
        "capability": "shop.order",
        "auto": True,
        "params": {"item": "latte", "ship": "pickup"},
        "grants": g,
        "proof": proof("INTENT", "auto:shop.order:auto-x"),
    }
    a, b = service(db), service(db)
    first = a.handle(frame)[-1]
    second = b.handle(frame)[-1]
    assert first["kind"] == "RECEIPT"
    assert second["replay"] is True
    assert second["receipt"] == first["receipt"]


def test_threads_on_one_sqlite_store_never_pass_the_cap(tmp_path: Path) -> None:
    svc = service(tmp_path / "state.db")
    spend = [grant(now=NOW, extra=[{"spend": {"max": 1000, "currency": "USD"}}], nonce="t")]
    params = {"item": "espresso", "ship": "pickup"}
    proposals = [svc.handle(intent(f"i{n}", spend, params))[-1]["proposals"][0] for n in range(64)]
    replies: list[dict[str, Any]] = []
    barrier = threading.Barrier(64)

    def go(n: int) -> None:
        barrier.wait()
        replies.append(svc.handle(commit(f"c{n}", proposals[n], spend))[-1])

    threads = [threading.Thread(target=go, args=(n,)) for n in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    price = proposals[0]["cost"]["amount"]
    assert sum(r["kind"] == "RECEIPT" for r in replies) == 1000 // price


WORKER = textwrap.dedent(
    """
    import json, sys, threading
    sys.path.insert(0, sys.argv[3])
    import parley
    from tests.parley.runtime_harness import AGENT, PRINCIPAL, load_shop
    NOW = 1_790_000_000
    store = parley.stores.SQLiteStore(sys.argv[1])
    svc = load_shop().build_service(trusted=[PRINCIPAL.public], store=store, clock=lambda: NOW)
    work = json.loads(sys.argv[2])
    def proof(t):
        return parley.sign_proof(AGENT, aud="shop.example", verb="COMMIT", target=t, ts=NOW)
    out = []
    barrier = threading.Barrier(len(work["proposals"]))
    def go(n, p):
        barrier.wait()
        frame = {"parley": 1, "id": f"c{n}", "verb": "COMMIT", "proposal": p["id"],
                 "hash": p["hash"], "grants": work["grants"], "proof": proof(p["hash"])}
        out.append(svc.handle(frame)[-1]["kind"])
    ts = [threading.Thread(target=go, args=(n, p)) for n, p in enumerate(work["proposals"])]
    sys.stdin.readline()
    for t in ts: t.start()
    for t in ts: t.join()
    print(json.dumps(out))
    """
)


def test_two_processes_sharing_one_database_never_pass_the_cap(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    svc = service(db)
    spend = [grant(now=NOW, extra=[{"spend": {"max": 1000, "currency": "USD"}}], nonce="p")]
    block = parley.decode_grant(spend[0]).block_ids[-1]
    params = {"item": "espresso", "ship": "pickup"}
    proposals = [svc.handle(intent(f"i{n}", spend, params))[-1]["proposals"][0] for n in range(64)]
    procs = []
    for half in (proposals[:32], proposals[32:]):
        work = json.dumps({"proposals": half, "grants": spend})
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", WORKER, str(db), work, str(ROOT)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        )
    for proc in procs:  # release both together
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    kinds: list[str] = []
    for proc in procs:
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0
        kinds.extend(json.loads(out))
    price = proposals[0]["cost"]["amount"]
    assert kinds.count("RECEIPT") == 1000 // price
    assert len(kinds) == 64
    check = parley.stores.SQLiteStore(str(db))
    assert check.spent([block])[block] == kinds.count("RECEIPT") * price <= 1000


def test_sqlite_maps_are_bounded(tmp_path: Path) -> None:
    store = parley.stores.SQLiteStore(str(tmp_path / "s.db"), max_proposals=2)
    svc = SHOP.build_service(trusted=[PRINCIPAL.public], store=store, clock=lambda: NOW)
    g = [grant(now=NOW)]
    assert svc.handle(intent("a", g, {"item": "latte"}))[-1]["kind"] == "PROPOSALS"
    # full: the oldest open proposals are forgotten, new INTENTs are not refused
    assert svc.handle(intent("b", g, {"item": "latte"}))[-1]["kind"] == "PROPOSALS"
    assert store.sizes()["proposals"] == 2


CRASHER = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, sys.argv[3])
    import parley
    from tests.parley.runtime_harness import PRINCIPAL, load_shop
    store = parley.stores.SQLiteStore(sys.argv[1])
    svc = load_shop().build_service(
        trusted=[PRINCIPAL.public], store=store, clock=lambda: 1_790_000_000
    )
    def stuck(proposal, ctx):
        print("committing", flush=True)
        sys.stdin.readline()  # the parent kills this process here, mid-commit
    svc.capabilities["shop.order"].commit = stuck
    svc.handle(json.loads(sys.argv[2]))
    """
)


def test_a_process_killed_mid_commit_is_reconciled_then_committed_once(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    svc = service(db)
    spend = [grant(now=NOW, extra=[{"spend": {"max": 1000, "currency": "USD"}}], nonce="k")]
    block = parley.decode_grant(spend[0]).block_ids[-1]
    params = {"item": "espresso", "ship": "pickup"}
    victim, *rest = [
        svc.handle(intent(f"i{n}", spend, params))[-1]["proposals"][0] for n in range(8)
    ]
    price = victim["cost"]["amount"]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            CRASHER,
            str(db),
            json.dumps(commit("c0", victim, spend)),
            str(ROOT),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "committing"
    finally:
        proc.kill()
        proc.communicate(timeout=30)  # reaps it and closes the pipes
    # a fresh process on the same file: the dead commit's reservation still counts until
    # the shop's reconciler says its order was never placed; then the retried COMMIT runs
    # once, and the cap holds for everything else
    again = service(db)
    assert again.store.spent([block])[block] == price
    done = again.handle(commit("c1", victim, spend))[-1]
    assert done["kind"] == "RECEIPT"
    assert again.store.spent([block])[block] == price
    kinds = [again.handle(commit(f"c{n + 2}", p, spend))[-1]["kind"] for n, p in enumerate(rest)]
    assert kinds.count("RECEIPT") == 1000 // price - 1
    assert again.store.spent([block])[block] <= 1000


def test_a_version_1_store_is_migrated_on_open(tmp_path: Path) -> None:
    import sqlite3

    from parley._sqlite import MIGRATIONS, SCHEMA_VERSION

    db = tmp_path / "v1.db"
    raw = sqlite3.connect(db)
    for statement in MIGRATIONS[0]:  # a file of version 1, written before versions were kept
        raw.execute(statement)
    raw.execute("INSERT INTO inflight VALUES ('p_old', 500, '[\"b1\"]')")
    raw.execute("INSERT INTO totals VALUES ('b1', 500)")
    raw.commit()
    raw.close()
    store = parley.stores.SQLiteStore(str(db))
    try:
        assert store.spent(["b1"]) == {"b1": 500}
        # a commit in flight from before leases existed: ownerless, so reconcilable
        lease = store.lease("commit", "p_old")
        assert lease is not None
        assert lease.owner == ""
        assert lease.until == 0
        version = store._db.execute("PRAGMA user_version").fetchone()[0]
        assert version == SCHEMA_VERSION
    finally:
        store.close()
    newer = sqlite3.connect(db)
    newer.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    newer.commit()
    newer.close()
    with pytest.raises(parley.ParleyError) as caught:
        parley.stores.SQLiteStore(str(db))
    assert caught.value.reason == "bad_store"


def test_a_lease_that_runs_out_is_reconciled_by_another_process(tmp_path: Path) -> None:
    db = tmp_path / "lease.db"
    first, second = service(db), service(db)
    first.commit_lease = 1
    g = [grant(now=NOW)]
    proposal = first.handle(intent("i", g, {"item": "latte"}))[-1]["proposals"][0]
    seen: list[str] = []
    cap = first.capabilities["shop.order"]
    place = cap.commit
    assert place is not None

    def slow(p: dict[str, Any], ctx: parley.Context) -> Any:
        # another process retries while this commit runs: busy while the lease lasts,
        # reconciled (the order exists by then) once it has run out
        seen.append(second.handle(commit("c2", p, g), now=NOW)[-1]["reason"])
        out = place(p, ctx)
        seen.append(second.handle(commit("c3", p, g), now=NOW + 2)[-1]["kind"])
        return out

    cap.commit = slow
    done = first.handle(commit("c1", proposal, g), now=NOW)[-1]
    assert seen == ["busy", "RECEIPT"]
    # the first process's late finish keeps the receipt the reconciliation wrote
    kept = second.store.receipt_for(proposal["id"])
    assert kept is not None
    assert done["receipt"] == kept.receipt
    assert first.orders.count() == 1  # type: ignore[attr-defined]


def test_the_lease_owner_names_the_process_and_a_forked_child_gets_its_own() -> None:
    import os

    from parley._recovery import machine_id

    svc = SHOP.build_service(trusted=[PRINCIPAL.public])
    first = svc.owner
    assert first.startswith(f"{machine_id()}:{os.getpid()}:")
    assert svc.owner == first
    # a real fork: the child reads the owner of the service it inherited
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child process
        try:
            os.write(write, svc.owner.encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        child_owner = pipe.read().decode()
    _, status = os.waitpid(pid, 0)
    assert status == 0
    assert child_owner.startswith(f"{machine_id()}:{pid}:")
    assert child_owner != first
    assert svc.owner == first  # the parent keeps its own
    named = parley.Service("x", name="x", owner="ops-1")
    assert named.owner == "ops-1"


def test_an_owner_with_this_host_name_in_another_pid_namespace_is_not_checked_by_pid() -> None:
    """Review of issue 23 (#1): replicas in containers share a host name, not their process
    ids. A dead pid of *another* namespace must not make a live commit look abandoned."""
    import os
    import socket
    import subprocess
    import sys

    from parley._recovery import machine_id, owner_gone

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # a pid that no longer exists here
    here = f"{machine_id()}:{child.pid}:nonce"
    assert owner_gone(here) is True
    if machine_id() == socket.gethostname():
        pytest.skip("no /proc here: the namespace cannot be named")
    host = socket.gethostname()
    boot, namespace = machine_id().split("/")[1:]
    for other in (f"{host}/{boot}/1", f"{host}/00000000/{namespace}", host):
        assert owner_gone(f"{other}:{child.pid}:nonce") is False, other
    assert os.getpid() != child.pid
