"""§9 presented terms (ext. §2; second review H1): terms swapped under a standing settlement at
the same revision.

The requester raises 800 EUR, amends to revision 2 with the same text, the principal
settles revision 2, then the requester sends a NEW amended record at revision 2 with
8000 EUR. The settlement must not show the 8000 as settled: the fold marks it stale, a
store refuses the amended that does not raise the revision, ``state`` exits 1 and ``md
sync`` does not tick. The CLI runs as a real subprocess on real files and real SQLite.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import handoff

from .ext_fixtures import ROLES, ROLES_JSON, TS, ed_key, rec, registry

ITEM = handoff.ItemId("acts", "web", "roof")
T800 = {"text": "Pay the roofer 800 EUR"}
T8000 = {"text": "Pay the roofer 8000 EUR"}
N1 = rec("n1", "raised", "requester", "agent-1", "roof", terms=T800, terms_rev=1)
N2 = rec(
    "n2", "amended", "requester", "agent-1", "roof", terms=T800, terms_rev=2, supersedes=["n1"]
)


def _settlement() -> dict[str, Any]:
    reg = registry()
    reg.add(N1)
    reg.add(N2)
    record = handoff.make_settlement(reg, ITEM, "done", by="alice-desk", ts=TS)
    return handoff.attach_proof(record, ed_key())


def _swap(supersedes: str = "n2", grind: int = 0) -> dict[str, Any]:
    return rec(
        "n3",
        "amended",
        "requester",
        "agent-1",
        "roof",
        terms=T8000,
        terms_rev=2,
        supersedes=[supersedes],
        **({"context": f"grind {grind}"} if grind else {}),
    )


def _records(swap: dict[str, Any]) -> list[dict[str, Any]]:
    return [N1, N2, _settlement(), swap]


@pytest.mark.parametrize("supersedes", ["n2", "n1"])
def test_fold_marks_a_settlement_stale_when_its_revision_was_rewritten(supersedes: str) -> None:
    for order in (_records(_swap(supersedes)), list(reversed(_records(_swap(supersedes))))):
        reg = registry()
        for record in order:
            reg.add(record)
        state = reg.state(ITEM)
        assert state.state == "settled"
        assert state.stale, state
        assert any(c.kind == "terms_rev_not_raised" for c in state.conflicts) == (
            supersedes == "n2"
        )


def test_unrelated_same_revision_terms_still_settle_cleanly() -> None:
    reg = registry()
    for record in (N1, N2, _settlement()):
        reg.add(record)
    state = reg.state(ITEM)
    assert state.state == "settled"
    assert not state.stale
    assert not state.conflicts


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_store_refuses_an_amended_that_does_not_raise_the_revision(
    tmp_path: Path, kind: str
) -> None:
    store: Any
    if kind == "memory":
        store = handoff.stores.MemoryStore(roles=ROLES, extensions=handoff.EXTENSIONS)
    else:
        store = handoff.stores.SQLiteStore(
            tmp_path / "db.sqlite", roles=ROLES, extensions=handoff.EXTENSIONS
        )
    for record in (N1, N2, _settlement()):
        assert store.append(record) == "accepted"
    with pytest.raises(handoff.HandoffError) as caught:
        store.append(_swap())
    assert (caught.value.code, caught.value.reason) == ("record", "terms_rev_not_raised")
    assert len(store.records(ITEM)) == 3
    # an amended at a higher revision is admitted and makes the settlement stale
    n3 = rec(
        "n3", "amended", "requester", "agent-1", "roof", terms=T8000, terms_rev=3, supersedes=["n2"]
    )
    assert store.append(n3) == "accepted"
    assert store.state(ITEM).stale


def test_builder_refuses_to_reuse_a_revision() -> None:
    reg = registry()
    reg.add(N1)
    reg.add(N2)
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.check_requester_record(_swap(), reg)
    assert caught.value.code == "conformance"


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "handoff", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _setup(tmp_path: Path, supersedes: str) -> tuple[str, str]:
    config = tmp_path / "config.json"
    side = {"jwks": handoff.public_jwks(ed_key()), "verifiable": True}
    config.write_text(json.dumps({"roles": ROLES_JSON, "side": side}), encoding="utf-8")
    path = tmp_path / "records.jsonl"
    lines = "".join(json.dumps(r) + "\n" for r in _records(_swap(supersedes)))
    path.write_text(lines, encoding="utf-8")
    return str(config), str(path)


@pytest.mark.parametrize("supersedes", ["n2", "n1"])
def test_cli_state_and_md_sync_refuse_the_swapped_terms(tmp_path: Path, supersedes: str) -> None:
    config, path = _setup(tmp_path, supersedes)
    done = _cli("state", path, "--config", config)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "stale" in done.stdout
    assert "terms_mismatch" in done.stdout
    shown = json.loads(_cli("state", path, "--config", config, "--json").stdout)
    [item] = shown["items"]
    assert item["stale"] is True
    document = tmp_path / "STATE.md"
    document.write_text("## Acts\n\n- [ ] Pay the roofer 800 EUR <!-- act:roof -->\n", "utf-8")
    argv = ["md", "sync", str(document), "--records", path, "--config", config]
    done = _cli(*argv, "--project", "web", "--registrar", "registrar", "--now", TS)
    text = document.read_text(encoding="utf-8")
    assert "[x]" not in text, text
    assert done.returncode == 1, done.stdout + done.stderr
