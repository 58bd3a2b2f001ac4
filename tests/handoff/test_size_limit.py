"""§13 size limit (second review H2): the size limit holds on the canonical form every store writes.

A 300 KB line of ``1e20`` numbers is 1.3 MB in JCS (``100000000000000000000``); an object
given directly (``check_record``, ``Registry.add``, a store's ``append``) had no limit at
all. Both are refused by the one admission function, before anything is stored; a store
holding an over-limit row (written before the limit) reads every other row and reports
that one. Real SQLite, the CLI as a real subprocess.
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
from handoff.records import MAX_RECORD_BYTES

from .ext_fixtures import ROLES, ROLES_JSON, rec

N1 = rec("n1", "raised", "requester", "agent-1", "roof", terms={"text": "Pay"}, terms_rev=1)


def _number_line() -> str:
    big = dict(N1, id="n-big", key="other")
    return json.dumps(big)[:-1] + ', "x": [' + ",".join(["1e20"] * 60000) + "]}"


def _huge_object() -> dict[str, Any]:
    return rec(
        "nb",
        "raised",
        "requester",
        "agent-1",
        "big",
        terms={"text": "Pay"},
        terms_rev=1,
        context="A" * (MAX_RECORD_BYTES + 10),
    )


def _refused(call: Any) -> None:
    with pytest.raises(handoff.HandoffError) as caught:
        call()
    assert (caught.value.code, caught.value.reason) == ("parse", "too_large")


def test_text_under_the_limit_whose_jcs_form_is_over_is_refused() -> None:
    line = _number_line()
    assert len(line) < MAX_RECORD_BYTES < len(handoff.digests.canonical(json.loads(line)))
    record = handoff.parse_record(line)  # the text is within the limit: it parses
    _refused(lambda: handoff.check_record(record, roles=ROLES, extensions=handoff.EXTENSIONS))
    reg = handoff.Registry(roles=ROLES, extensions=handoff.EXTENSIONS)
    _refused(lambda: reg.add(line))
    _refused(lambda: reg.add_lines([line]))
    assert len(reg) == 0


def test_objects_have_the_limit_too(tmp_path: Path) -> None:
    big = _huge_object()
    _refused(lambda: handoff.check_record(big, roles=ROLES, extensions=handoff.EXTENSIONS))
    reg = handoff.Registry(roles=ROLES, extensions=handoff.EXTENSIONS)
    _refused(lambda: reg.add(big))
    memory = handoff.stores.MemoryStore(roles=ROLES, extensions=handoff.EXTENSIONS)
    _refused(lambda: memory.append(big))
    with handoff.stores.SQLiteStore(
        tmp_path / "db.sqlite", roles=ROLES, extensions=handoff.EXTENSIONS
    ) as store:
        assert store.append(N1) == "accepted"
        _refused(lambda: store.append(big))
        _refused(lambda: store.append(_number_line()))
        assert len(store) == 1
        assert store.states()[handoff.ItemId("acts", "web", "roof")].state == "open"


def _plant(db: Path) -> None:
    """Write an over-limit row straight into the table (as a store before the limit did)."""
    body = handoff.digests.canonical(json.loads(_number_line())).decode("utf-8")
    digest = "sha-256:" + __import__("hashlib").sha256(body.encode()).hexdigest()
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO handoff_records (id, digest, ext, project, key, body, roles_version)"
            " VALUES ('n-big', ?, 'acts', 'web', 'other', ?, 1)",
            (digest, body),
        )


def test_one_over_limit_row_never_makes_the_store_unreadable(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    with handoff.stores.SQLiteStore(db, roles=ROLES, extensions=handoff.EXTENSIONS) as store:
        store.append(N1)
    _plant(db)
    with handoff.stores.SQLiteStore(db, roles=ROLES, extensions=handoff.EXTENSIONS) as store:
        reg = store.registry()
        assert [s.state for s in reg.states().values()] == ["open"]
        [bad] = reg.rejected()
        assert (bad["at"], bad["code"], bad["reason"]) == ("n-big", "parse", "too_large")
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"roles": ROLES_JSON}), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "handoff", "state", "--db", str(db), "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "acts/web/roof  open" in done.stdout
    assert "too_large" in done.stderr


def test_a_row_stored_under_the_character_limit_stays_readable(tmp_path: Path) -> None:
    """Review adv #1: before issue 25 the limit counted characters, so a store may hold a
    row of wide text over 1 MiB of UTF-8 but within 1 Mi characters. Admitted then, it is
    read now (the store is append-only: a refused row could never be removed, and
    ``settle``/``md sync`` would refuse the store for good); a new one is refused."""
    wide = rec("n-wide", "raised", "requester", "agent-1", "wide", terms={"text": "Pay"},
               terms_rev=1, context="é" * 600_000)  # fmt: skip
    body = handoff.digests.canonical(wide).decode("utf-8")
    assert len(body) <= MAX_RECORD_BYTES < len(body.encode("utf-8"))
    db = tmp_path / "db.sqlite"
    with handoff.stores.SQLiteStore(db, roles=ROLES, extensions=handoff.EXTENSIONS) as store:
        store.append(N1)
        _refused(lambda: store.append(wide))
    digest = "sha-256:" + __import__("hashlib").sha256(body.encode()).hexdigest()
    with sqlite3.connect(db) as conn:  # as a store before issue 25 wrote it
        conn.execute(
            "INSERT INTO handoff_records (id, digest, ext, project, key, body, roles_version)"
            " VALUES ('n-wide', ?, 'acts', 'web', 'wide', ?, 1)",
            (digest, body),
        )
    with handoff.stores.SQLiteStore(db, roles=ROLES, extensions=handoff.EXTENSIONS) as store:
        assert [r["id"] for r in store.records()] == ["n1", "n-wide"]
    _plant(db)  # and one over any limit there ever was
    with handoff.stores.SQLiteStore(db, roles=ROLES, extensions=handoff.EXTENSIONS) as store:
        reg = store.registry()
        assert [(b["at"], b["reason"]) for b in reg.rejected()] == [("n-big", "too_large")]
        assert store.state(handoff.ItemId("acts", "web", "wide")).state == "open"
