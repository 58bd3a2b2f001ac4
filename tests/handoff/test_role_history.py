"""§3 ownership over time (issue 19 #5): a role change never makes history unreadable.

A store stamps each record with the version of the roles it was admitted under and checks
it under those roles, never under the current ones (a record's ``ts`` is the sender's word
and proves nothing). Reading a plain file, records the current roles refuse are reported
as ``role_changed``, never silently dropped. Real SQLite files; the CLI as a subprocess.

Private imports: ``handoff._store._SCHEMA`` is the store's first on-disk schema (version 1,
before roles stamps), written by hand to test the migration of a store an older release
made.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import handoff

from .ext_fixtures import ROLES_JSON, rec

ITEM = handoff.ItemId("acts", "web", "k1")
NEW_ROLES_JSON: dict[str, Any] = {
    **ROLES_JSON,
    "requesters": {"web": ["agent-1", "registrar-2"]},
    "roles": {"registrar": ["registrar-2"]},
}


def _records() -> list[dict[str, Any]]:
    raised = rec("n1", "raised", "requester", "registrar", terms={"text": "Renew"}, terms_rev=1)
    claim = rec("c1", "claimed", "registrar", "registrar", outcome="done")
    return [raised, claim]


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "handoff", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_store_keeps_reading_records_admitted_under_old_roles(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    old = handoff.Roles.from_json(ROLES_JSON)
    new = handoff.Roles.from_json(NEW_ROLES_JSON)
    with handoff.stores.SQLiteStore(path, roles=old, extensions=handoff.EXTENSIONS) as store:
        for record in _records():
            assert store.append(record) == "accepted"
    with handoff.stores.SQLiteStore(path, roles=new, extensions=handoff.EXTENSIONS) as store:
        state = store.state(ITEM)
        assert (state.state, state.need, state.claims) == ("open", "n1", ("c1",))
        # the old registrar can add nothing now
        late = rec("c2", "claimed", "registrar", "registrar", outcome="done")
        with pytest.raises(handoff.HandoffError) as caught:
            store.append(late)
        assert caught.value.code == "ownership"
    with sqlite3.connect(path) as db:
        stamps = db.execute("SELECT DISTINCT roles_version FROM handoff_records").fetchall()
    assert stamps == [(1,)]


def test_cli_state_of_a_store_after_a_role_change(tmp_path: Path) -> None:
    records = tmp_path / "records.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in _records()), encoding="utf-8")
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps({"roles": ROLES_JSON}), encoding="utf-8")
    new.write_text(json.dumps({"roles": NEW_ROLES_JSON}), encoding="utf-8")
    db = f"sqlite:{tmp_path / 'h.sqlite'}"
    assert _cli("add", str(records), "--state", db, "--config", str(old)).returncode == 0
    done = _cli("state", "--state", db, "--config", str(new), "--json")
    assert done.returncode == 0, done.stderr
    [item] = json.loads(done.stdout)["items"]
    assert (item["state"], item["claims"]) == ("open", ["c1"])


def test_cli_state_of_a_file_reports_role_changed(tmp_path: Path) -> None:
    records = tmp_path / "records.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in _records()), encoding="utf-8")
    new = tmp_path / "new.json"
    new.write_text(json.dumps({"roles": NEW_ROLES_JSON}), encoding="utf-8")
    done = _cli("state", str(records), "--config", str(new), "--json")
    out = json.loads(done.stdout)
    assert [r["at"] for r in out["role_changed"]] == [1, 2]
    assert out["rejected"] == 0
    text = _cli("state", str(records), "--config", str(new))
    assert "records.jsonl:1: role_changed ownership/not_requester" in text.stderr
    assert "2 role_changed" in text.stdout


def test_a_store_written_before_stamps_is_migrated(tmp_path: Path) -> None:
    from handoff._store import _SCHEMA  # the first schema version, as older stores hold

    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(_SCHEMA)
        for record in _records():
            db.execute(
                "INSERT INTO handoff_records (id, digest, ext, project, key, body)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (record["id"], handoff.digests.digest(record), "acts", "web", "k1",
                 handoff.digests.canonical(record).decode()),
            )  # fmt: skip
    new = handoff.Roles.from_json(NEW_ROLES_JSON)
    with handoff.stores.SQLiteStore(path, roles=new, extensions=handoff.EXTENSIONS) as store:
        registry = store.registry()
        assert [r["at"] for r in registry.role_changed()] == ["n1", "c1"]
    with sqlite3.connect(path) as db:
        assert (
            db.execute("PRAGMA user_version").fetchone()[0]
            == handoff.stores.SQLiteStore.SCHEMA_VERSION
        )
