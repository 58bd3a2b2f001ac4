"""One contract for the Handoff record stores: memory, SQLite and PostgreSQL (issue 23).

Each test runs against all three through the store interface; ``open_store()`` gives a
second handle on the same records (another connection: another writer). PostgreSQL only:
the database refuses rewrites itself, concurrent writers keep the id rule, and
``handoff add/state --state postgresql://…`` work from the command line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import handoff
from handoff.stores import PostgresStore

from .ext_fixtures import ROLES_JSON, rec

ITEM = handoff.ItemId("acts", "web", "k1")
ROLES = handoff.Roles.from_json(ROLES_JSON)
NEW_ROLES = handoff.Roles.from_json(
    {**ROLES_JSON, "requesters": {"web": ["agent-1", "registrar-2"]},
     "roles": {"registrar": ["registrar-2"]}}
)  # fmt: skip

Opener = Callable[..., Any]


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    opened: list[Any] = []
    memory: list[Any] = []

    def opener(roles: handoff.Roles = ROLES) -> Any:
        if request.param == "memory":
            if not memory:
                memory.append(
                    handoff.stores.MemoryStore(roles=roles, extensions=handoff.EXTENSIONS)
                )
            return memory[0]
        url = (
            f"sqlite:{tmp_path / 'h.sqlite'}"
            if request.param == "sqlite"
            else request.getfixturevalue("postgres_url")
        )
        store = handoff.open_store(url, roles=roles, extensions=handoff.EXTENSIONS)
        opened.append(store)
        return store

    opener.kind = request.param  # type: ignore[attr-defined]
    yield opener
    for store in opened:
        store.close()


def _need(rid: str = "n1", text: str = "Renew") -> dict[str, Any]:
    return rec(rid, "raised", "requester", "registrar", terms={"text": text}, terms_rev=1)


def test_append_is_idempotent_and_folds(open_store: Opener) -> None:
    store, other = open_store(), open_store()
    need = _need()
    claim = rec("c1", "claimed", "registrar", "registrar", outcome="done")
    assert store.append(need) == "accepted"
    assert other.append(json.dumps(need)) == "duplicate"
    assert store.append(claim) == "accepted"
    assert other.append(rec("x1", "raised", "requester", "registrar", ext="nope/9.9")) == "ignored"
    assert [r["id"] for r in other.records()] == ["n1", "c1"]
    assert [r["id"] for r in other.records(handoff.ItemId("acts", "web", "k2"))] == []
    state = other.state(ITEM)
    assert (state.state, state.need, state.claims) == ("open", "n1", ("c1",))
    assert set(other.states()) == {ITEM}


def test_an_id_names_one_content_forever(open_store: Opener) -> None:
    store, other = open_store(), open_store()
    assert store.append(_need()) == "accepted"
    with pytest.raises(handoff.HandoffError) as caught:
        other.append(_need(text="Something else"))
    assert (caught.value.code, caught.value.reason) == ("conflict", "same_id")
    # another item (its own key) may use the same id
    assert other.append(rec("n1", "raised", "requester", "registrar", "k2",
                            terms={"text": "x"}, terms_rev=1)) == "accepted"  # fmt: skip
    assert len(store.records()) == 2


def test_an_amended_must_raise_terms_rev(open_store: Opener) -> None:
    store = open_store()
    store.append(_need())
    first = rec("a1", "amended", "requester", "registrar", terms={"text": "More"}, terms_rev=3,
                supersedes=["n1"])  # fmt: skip
    assert store.append(first) == "accepted"
    lower = rec("a2", "amended", "requester", "registrar", terms={"text": "Less"}, terms_rev=2,
                supersedes=["a1"])  # fmt: skip
    with pytest.raises(handoff.HandoffError) as caught:
        open_store().append(lower)
    assert caught.value.reason == "terms_rev_not_raised"
    assert open_store().append(dict(lower, terms_rev=4)) == "accepted"


# a memory store holds one configuration: roles have a history in the durable stores only
@pytest.mark.parametrize("open_store", ["sqlite", "postgresql"], indirect=True)
def test_roles_move_forward_only(open_store: Opener) -> None:
    old = open_store(ROLES)
    old.append(_need())
    new = open_store(NEW_ROLES)
    assert new.append(rec("c9", "claimed", "registrar", "registrar-2", outcome="done")) == (
        "accepted"
    )
    with pytest.raises(handoff.HandoffError) as caught:  # a device left on the old roles
        old.append(rec("c2", "claimed", "registrar", "registrar", outcome="done"))
    assert caught.value.reason == "roles_stale"
    state = new.state(ITEM)
    assert state.claims == ("c9",)
    assert new.registry().rejected() == []


def test_concurrent_writers_keep_the_id_rule(open_store: Opener) -> None:
    """16 writers admit 16 different contents under one id at once: exactly one wins."""
    if open_store.kind == "memory":  # type: ignore[attr-defined]
        writers = [open_store()] * 16
    else:
        writers = [open_store() for _ in range(16)]
    # the roles are known already: writers hold the roles lock shared, not in turn
    writers[0].append(rec("n0", "raised", "requester", "registrar", "k0", terms={"text": "x"},
                          terms_rev=1))  # fmt: skip
    outcomes: list[str] = []
    start = threading.Barrier(16)

    def write(n: int) -> None:
        start.wait()
        try:
            outcomes.append(writers[n].append(_need(text=f"content {n}")))
        except handoff.HandoffError as exc:
            outcomes.append(f"{exc.code}/{exc.reason}")

    threads = [threading.Thread(target=write, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(outcomes) == ["accepted"] + ["conflict/same_id"] * 15
    assert len(writers[0].records(ITEM)) == 1


def test_open_store_refuses_what_is_no_store(tmp_path: Path) -> None:
    for bad in ("", "mysql://h/d", "records.jsonl", "sqlite:"):
        with pytest.raises(handoff.HandoffError) as caught:
            handoff.open_store(bad, roles=ROLES, extensions=handoff.EXTENSIONS)
        assert (caught.value.code, caught.value.reason) == ("usage", "url")
    missing = f"sqlite:{tmp_path / 'none.sqlite'}"
    with pytest.raises(handoff.HandoffError) as absent:
        handoff.open_store(missing, roles=ROLES, extensions=handoff.EXTENSIONS, create=False)
    assert absent.value.reason == "store_missing"
    assert not (tmp_path / "none.sqlite").exists()


# ---------------------------------------------------------------- PostgreSQL only


def test_postgres_records_cannot_be_rewritten_in_the_database(postgres_url: str) -> None:
    import psycopg

    with PostgresStore(postgres_url, roles=ROLES, extensions=handoff.EXTENSIONS) as store:
        store.append(_need())
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            for statement in (
                "UPDATE handoff_records SET body = '{}'",
                "DELETE FROM handoff_records",
                "TRUNCATE handoff_records",
                "UPDATE handoff_roles SET roles = '{}'",
                "DELETE FROM handoff_roles",
            ):
                with pytest.raises(psycopg.Error):
                    conn.execute(statement)
            # a row slipped in behind the store's back with a body that is not its digest's
            conn.execute(
                "INSERT INTO handoff_records (id, digest, ext, project, key, body, roles_version)"
                " VALUES ('n2', 'sha-256:00', 'acts', 'web', 'k1', '{}', 1)"
            )
        with pytest.raises(handoff.HandoffError) as caught:
            store.records()
        assert caught.value.reason == "store_tampered"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP TRIGGER handoff_records_fixed ON handoff_records")
    with pytest.raises(handoff.HandoffError) as gone:  # the guards are checked on open
        PostgresStore(postgres_url, roles=ROLES, extensions=handoff.EXTENSIONS)
    assert gone.value.reason == "store_tampered"


def test_postgres_store_missing_and_bad_url(postgres_url: str) -> None:
    with pytest.raises(handoff.HandoffError) as missing:
        PostgresStore(postgres_url, roles=ROLES, extensions=handoff.EXTENSIONS, create=False)
    assert missing.value.reason == "store_missing"
    bad = postgres_url.replace("user=postgres", "user=nobody_here")
    with pytest.raises(handoff.HandoffError) as refused:
        PostgresStore(bad, roles=ROLES, extensions=handoff.EXTENSIONS)
    assert refused.value.reason == "store_open"


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "handoff", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_cli_add_and_state_on_postgres(tmp_path: Path, postgres_url: str) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"roles": ROLES_JSON}), encoding="utf-8")
    records = tmp_path / "records.jsonl"
    claim = rec("c1", "claimed", "registrar", "registrar", outcome="done")
    records.write_text(json.dumps(_need()) + "\n" + json.dumps(claim) + "\n", encoding="utf-8")
    missing = _cli("state", "--state", postgres_url, "--config", str(config))
    assert missing.returncode != 0
    assert "store_missing" in missing.stderr + missing.stdout
    added = _cli("add", str(records), "--state", postgres_url, "--config", str(config))
    assert added.returncode == 0, added.stdout + added.stderr
    assert added.stdout.count(": accepted") == 2
    again = _cli("add", str(records), "--state", postgres_url, "--config", str(config))
    assert again.stdout.count(": duplicate") == 2
    state = _cli("state", "--state", postgres_url, "--config", str(config), "--json")
    assert state.returncode == 0, state.stderr
    items = {i["key"]: i for i in json.loads(state.stdout)["items"]}
    assert items["k1"]["state"] == "open"
    assert items["k1"]["claims"] == ["c1"]


def test_the_postgres_store_class_is_public_without_loading_psycopg() -> None:
    """``handoff.stores.PostgresStore`` is importable where psycopg is not installed: the
    store plumbing and the driver load when a store is opened, not before."""
    code = (
        "import sys\n"
        "sys.modules['psycopg'] = None\n"  # as if the postgres extra were not installed
        "from handoff.stores import PostgresStore\n"
        "print(PostgresStore.__module__, sorted(m for m in sys.modules"
        " if m.split('.')[0] in ('ppstore', 'psycopg') and sys.modules[m] is not None))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.split() == ["handoff._postgres", "[]"]


def test_a_replica_blocked_by_a_lock_gives_up_at_the_urls_lock_timeout(postgres_url: str) -> None:
    """Issue 25: a maintenance transaction holds the records table; an append waits the
    URL's lock_timeout, then fails with the store's own error, and the next one works."""
    import psycopg

    url = postgres_url + "&lock_timeout=300ms"
    other = rec("n2", "raised", "requester", "registrar", "k2", terms={"text": "Pay"}, terms_rev=1)
    with handoff.open_store(url, roles=ROLES, extensions=handoff.EXTENSIONS) as store:
        store.append(_need())
        holder = psycopg.connect(postgres_url)  # its transaction stays open until closed
        holder.execute("LOCK TABLE handoff_records IN ACCESS EXCLUSIVE MODE")
        try:
            started = time.monotonic()
            with pytest.raises(handoff.HandoffError) as caught:
                store.append(other)
            waited = time.monotonic() - started
        finally:
            holder.close()
        assert 0.3 <= waited < 3.0, waited
        assert (caught.value.code, caught.value.reason) == ("store", "store_write")
        assert "lock_timeout (300 ms)" in caught.value.message
        assert store.append(other) == "accepted"
        assert len(store.records()) == 2


@pytest.mark.parametrize("value", ["forever", "5 s", "1h"])
def test_a_bad_timeout_in_the_url_is_the_callers_mistake(tmp_path: Path, value: str) -> None:
    """Refused before any connection, as a bad URL (usage/url), never as an outage."""
    url = f"postgresql://app:TopSecret@db.invalid/handoff?lock_timeout={value}"
    with pytest.raises(handoff.HandoffUsageError) as caught:
        handoff.open_store(url, roles=ROLES, extensions=handoff.EXTENSIONS)
    assert (caught.value.code, caught.value.reason) == ("usage", "url")
    with pytest.raises(handoff.HandoffUsageError) as direct:
        PostgresStore(url, roles=ROLES, extensions=handoff.EXTENSIONS)
    assert (direct.value.code, direct.value.reason) == ("usage", "url")
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"roles": ROLES_JSON}), encoding="utf-8")
    done = _cli("state", "--state", url, "--config", str(config))
    assert done.returncode == 1
    assert done.stderr.startswith("error: usage/url: "), done.stderr
    assert "lock_timeout" in done.stderr
    assert "TopSecret" not in done.stderr


def test_every_store_offers_what_the_store_protocol_declares(open_store: Opener) -> None:
    """Docs review D2: ``handoff.Store`` declares what every store from ``open_store`` has,
    folding and closing included, and every store closes as a context manager."""
    declared = {"append", "records", "registry", "state", "states", "close"}
    assert declared <= set(dir(handoff.Store))
    with open_store() as store:
        assert all(callable(getattr(store, name)) for name in declared)
        store.append(_need())
        assert store.state(ITEM).state == "open"
        assert set(store.states()) == {ITEM}
        assert store.registry(ITEM).state(ITEM).state == "open"


def test_add_stops_at_a_store_outage_instead_of_rejecting_every_line(
    tmp_path: Path, postgres_url: str
) -> None:
    """Review adv #2: a store that cannot take a line now is not a bad record. ``add``
    stops at the first such line with one error naming it and what was appended, instead
    of waiting out the lock once per line and reporting each as rejected."""
    import psycopg

    config = tmp_path / "config.json"
    config.write_text(json.dumps({"roles": ROLES_JSON}), encoding="utf-8")
    url = postgres_url + "&lock_timeout=300ms"
    with handoff.open_store(url, roles=ROLES, extensions=handoff.EXTENSIONS) as store:
        store.append(_need())
    lines = [
        rec(f"n{n}", "raised", "requester", "registrar", f"k{n}", terms={"text": "Pay"},
            terms_rev=1)
        for n in range(2, 8)
    ]  # fmt: skip
    holder = psycopg.connect(postgres_url)
    holder.execute("LOCK TABLE handoff_records IN ACCESS EXCLUSIVE MODE")
    try:
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "handoff", "add", "-", "--state", url, "--config",
             str(config)],
            input="".join(json.dumps(line) + "\n" for line in lines),
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        waited = time.monotonic() - started
    finally:
        holder.close()
    assert done.returncode == 1, done
    assert "rejected" not in done.stdout
    (last,) = done.stderr.splitlines()
    assert last.startswith("error: store/store_write: -:1: "), last
    assert "lock_timeout (300 ms)" in last
    assert "nothing appended" in last
    assert waited < 8, waited  # one lock wait, not six
    with handoff.open_store(url, roles=ROLES, extensions=handoff.EXTENSIONS) as store:
        assert len(store.records()) == 1


@pytest.mark.parametrize("url", [None, 5, b"postgresql:///x"])
def test_a_postgres_store_url_that_is_not_text_is_a_usage_error(url: Any) -> None:
    """Review adv #4: it escaped as ppstore's own error, not a HandoffError."""
    with pytest.raises(handoff.HandoffUsageError) as caught:
        PostgresStore(url, roles=ROLES, extensions=handoff.EXTENSIONS)
    assert (caught.value.code, caught.value.reason) == ("usage", "url")
