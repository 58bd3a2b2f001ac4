"""§10 identifiers (issue 19 #1): a record id, once admitted, names one content forever.

The attack: the owner of the need register re-sends ``raised n1`` with "8000" instead of
"800" after the principal settled against "800". Through the library, a store and the
CLI (as a real subprocess), the rewrite never replaces the terms a settlement was made
against: a store refuses it (first admitted wins), the order-free fold reports the item
``conflicted`` with its terms unknown, and the CLI exits 1.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import handoff

from .ext_fixtures import ROLES_JSON, TS, ed_key, rec, registry

ITEM = handoff.ItemId("acts", "web", "roof")
TERMS = {"text": "Pay the roofer", "amount": "800", "currency": "EUR"}


def _raised(amount: str) -> dict[str, Any]:
    terms = {**TERMS, "amount": amount}
    return rec("n1", "raised", "requester", "agent-1", "roof", terms=terms, terms_rev=1)


def _genuine() -> tuple[dict[str, Any], dict[str, Any]]:
    """The need and the principal's signed settlement made against it."""
    need = _raised("800")
    reg = registry()
    reg.add(need)
    record = handoff.make_settlement(reg, ITEM, "done", by="alice-desk", ts=TS)
    return need, handoff.attach_proof(record, ed_key())


def _rewrite(need: dict[str, Any]) -> dict[str, Any]:
    """A rewrite of ``need`` (same id, 8000) whose digest is lower than the original's."""
    for n in range(10_000):
        candidate = {**_raised("8000"), "x_pad": n}
        if handoff.digests.digest(candidate) < handoff.digests.digest(need):
            return candidate
    raise AssertionError("no lower digest found")  # pragma: no cover


def test_fold_reports_a_rewritten_id_as_conflicted() -> None:
    need, settlement = _genuine()
    forged = _rewrite(need)
    for order in itertools.permutations([need, settlement, forged]):
        reg = registry()
        statuses = [reg.add(r).status for r in order]
        assert statuses.count("conflict") == 1
        state = reg.state(ITEM)
        assert state.state == "conflicted"
        assert state.terms is None
        assert state.outcome is None
        assert [c.kind for c in state.conflicts] == ["same_id"]
        assert state.conflicts[0].chosen is None
        # the settlement still binds the terms it was made against
        [seen] = handoff.observe([], reg, jwks=handoff.public_jwks(ed_key()))
        assert seen["state"] == "conflicted"
        assert seen["evidence"] == {"presented": "match", "proof": "valid"}
        assert seen["presented_terms"] == TERMS


def test_terms_at_never_answers_with_a_rewritten_version() -> None:
    need, settlement = _genuine()
    reg = registry()
    for record in (_rewrite(need), need, settlement):
        reg.add(record)
    assert handoff.evidence.terms_at(reg, ITEM, 1) is None
    # the settlement is checked against the version its digest names
    assert handoff.evidence.presented_terms(reg, settlement) == TERMS
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.make_settlement(reg, ITEM, "done", by="alice-desk", ts=TS)
    assert caught.value.reason == "conflicted"


@settings(max_examples=30, deadline=None)
@given(st.permutations(range(5)), st.lists(st.integers(0, 4), max_size=4))
def test_conflicted_fold_is_order_free(order: list[int], repeats: list[int]) -> None:
    need, settlement = _genuine()
    forged = _rewrite(need)
    other = {**need, "x_pad": "another"}
    claim = rec("c1", "claimed", "agent", "helper", "roof", outcome="done")
    pool = [need, settlement, forged, other, claim]
    reference = registry()
    for record in pool:
        reference.add(record)
    reg = registry()
    for index in [*order, *repeats]:
        reg.add(pool[index])
    assert reg.states() == reference.states()
    assert reg.conflicts() == reference.conflicts()


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_store_keeps_the_first_admitted_content(tmp_path: Path, kind: str) -> None:
    need, settlement = _genuine()
    store: Any
    if kind == "memory":
        store = handoff.stores.MemoryStore(roles=registry().roles, extensions=handoff.EXTENSIONS)
    else:
        store = handoff.stores.SQLiteStore(
            tmp_path / "h.sqlite", roles=registry().roles, extensions=handoff.EXTENSIONS
        )
    assert store.append(need) == "accepted"
    assert store.append(settlement) == "accepted"
    with pytest.raises(handoff.HandoffError) as caught:
        store.append(_rewrite(need))
    assert (caught.value.code, caught.value.reason) == ("conflict", "same_id")
    assert len(store.records()) == 2
    state = store.state(ITEM)
    assert (state.state, state.outcome, state.stale) == ("settled", "done", False)
    assert state.terms is not None
    assert state.terms["amount"] == "800"
    assert store.append(need) == "duplicate"


def _cli(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "handoff", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _files(tmp_path: Path, records: list[dict[str, Any]]) -> tuple[str, str]:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"roles": ROLES_JSON}), encoding="utf-8")
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(config), str(path)


def test_cli_add_refuses_the_rewrite_and_exits_1(tmp_path: Path) -> None:
    need, settlement = _genuine()
    config, path = _files(tmp_path, [need, settlement, _rewrite(need)])
    db = f"sqlite:{tmp_path / 'h.sqlite'}"
    done = _cli("add", path, "--state", db, "--config", config)
    assert done.returncode == 1, done.stdout + done.stderr
    assert ":3: rejected conflict/same_id" in done.stdout
    shown = _cli("state", "--state", db, "--config", config, "--json")
    assert shown.returncode == 0, shown.stderr
    [item] = json.loads(shown.stdout)["items"]
    assert (item["state"], item["terms"]["amount"]) == ("settled", "800")


def test_cli_state_of_a_file_with_a_rewrite_exits_1(tmp_path: Path) -> None:
    need, settlement = _genuine()
    config, path = _files(tmp_path, [need, settlement, _rewrite(need)])
    done = _cli("state", path, "--config", config)
    assert done.returncode == 1
    assert "acts/web/roof  conflicted" in done.stdout
    assert "8000" not in done.stdout


def test_cli_md_sync_never_ticks_rewritten_terms(tmp_path: Path) -> None:
    need, settlement = _genuine()
    config, path = _files(tmp_path, [need, settlement, _rewrite(need)])
    document = tmp_path / "STATE.md"
    document.write_text("## Acts\n\n- [ ] Pay the roofer <!-- act:roof -->\n", encoding="utf-8")
    argv = ["md", "sync", str(document), "--records", path, "--config", config]
    done = _cli(*argv, "--project", "web", "--registrar", "registrar", "--now", TS)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "conflicted" in done.stdout + done.stderr
    text = document.read_text(encoding="utf-8")
    assert "8000" not in text
    assert "[x]" not in text
    assert len(Path(path).read_text(encoding="utf-8").splitlines()) == 3
