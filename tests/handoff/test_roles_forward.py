"""§3 ownership in stores (second review M2): a stale device cannot re-admit a revoked party
into a store.

Roles versions move forward only: once a store holds records stamped with newer roles,
an append under older roles is refused (``store``/``roles_stale``); a row stamped with
roles older than those already in force at its place (written before this rule) is read
under the roles in force, and reported ``role_changed`` when they refuse it. Real
SQLite files; the CLI as a real subprocess.
"""

from __future__ import annotations

import copy
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import handoff

from .ext_fixtures import ROLES_JSON, rec

OLD = handoff.Roles.from_json(ROLES_JSON)
NEW_JSON: dict[str, Any] = copy.deepcopy(ROLES_JSON)
NEW_JSON["requesters"]["web"] = ["agent-2", "registrar"]  # agent-1 revoked
NEW = handoff.Roles.from_json(NEW_JSON)
N1 = rec("n1", "raised", "requester", "agent-1", "roof", terms={"text": "Pay 800"}, terms_rev=1)
N2 = rec("n2", "raised", "requester", "agent-2", "gutter", terms={"text": "Fix"}, terms_rev=1)
N9 = rec("n9", "raised", "requester", "agent-1", "wire", terms={"text": "Wire 9000"}, terms_rev=1)
WIRE = handoff.ItemId("acts", "web", "wire")


def test_an_append_under_older_roles_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    with handoff.stores.SQLiteStore(path, roles=OLD, extensions=handoff.EXTENSIONS) as store:
        assert store.append(N1) == "accepted"
    with handoff.stores.SQLiteStore(path, roles=NEW, extensions=handoff.EXTENSIONS) as store:
        assert store.append(N2) == "accepted"
    with handoff.stores.SQLiteStore(path, roles=OLD, extensions=handoff.EXTENSIONS) as stale:
        with pytest.raises(handoff.HandoffError) as caught:
            stale.append(N9)
        assert (caught.value.code, caught.value.reason) == ("store", "roles_stale")
        assert len(stale) == 2
        # reading under old roles still works: history is never unreadable
        assert stale.state(handoff.ItemId("acts", "web", "roof")).state == "open"


def test_a_row_stamped_with_older_roles_is_read_under_the_roles_in_force(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    with handoff.stores.SQLiteStore(path, roles=OLD, extensions=handoff.EXTENSIONS) as store:
        store.append(N1)
    with handoff.stores.SQLiteStore(path, roles=NEW, extensions=handoff.EXTENSIONS) as store:
        store.append(N2)
    # what a stale device wrote before this rule: stamped 1, after a row stamped 2
    body = handoff.digests.canonical(N9).decode("utf-8")
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT INTO handoff_records (id, digest, ext, project, key, body, roles_version)"
            " VALUES ('n9', ?, 'acts', 'web', 'wire', ?, 1)",
            (handoff.digests.digest(N9), body),
        )
    with handoff.stores.SQLiteStore(path, roles=NEW, extensions=handoff.EXTENSIONS) as store:
        reg = store.registry()
        assert reg.state(WIRE).state == "unknown"
        assert [(r["at"], r["code"]) for r in reg.role_changed()] == [("n9", "ownership")]


def test_cli_add_from_a_stale_device_is_refused(tmp_path: Path) -> None:
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps({"roles": ROLES_JSON}), encoding="utf-8")
    new.write_text(json.dumps({"roles": NEW_JSON}), encoding="utf-8")
    a, b, c = (tmp_path / f"{n}.jsonl" for n in "abc")
    a.write_text(json.dumps(N1) + "\n", encoding="utf-8")
    b.write_text(json.dumps(N2) + "\n", encoding="utf-8")
    c.write_text(json.dumps(N9) + "\n", encoding="utf-8")
    db = str(tmp_path / "h.sqlite")

    def cli(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "handoff", *argv],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    assert cli("add", str(a), "--db", db, "--config", str(old)).returncode == 0
    assert cli("add", str(b), "--db", db, "--config", str(new)).returncode == 0
    done = cli("add", str(c), "--db", db, "--config", str(old))
    assert done.returncode == 1
    # a store that refuses the configuration refuses every line alike: add stops at the first
    assert done.stderr.startswith("error: store/roles_stale: "), done.stderr
    assert "nothing appended" in done.stderr
    shown = json.loads(cli("state", "--db", db, "--config", str(new), "--json").stdout)
    assert [i["key"] for i in shown["items"]] == ["gutter", "roof"]
