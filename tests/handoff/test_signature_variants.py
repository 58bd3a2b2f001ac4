"""§10 signature variants (second review M1): a relay cannot downgrade or pre-empt a genuine
signed settlement.

A copy of a signed settlement with junk signature bytes is a *signature variant*: the
fold holds every variant and the evidence verdict is the best over them, so a junk copy
with a lower digest never displaces the genuine one; a store keeps every variant, and
where it is given the principal's keys it refuses a settlement whose proof fails, so a
forged first arrival (junk signature, or another outcome with the proof copied) cannot
win "first admitted wins". ``ts`` is signed, so for a signed record it counts in the
identity. Real SQLite, the CLI as a real subprocess.
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
N1 = rec("n1", "raised", "requester", "agent-1", "roof", terms={"text": "Pay 800"}, terms_rev=1)
SIDE = handoff.PrincipalSide(jwks=handoff.public_jwks(ed_key()), verifiable=True)


def _genuine() -> dict[str, Any]:
    reg = registry()
    reg.add(N1)
    record = handoff.make_settlement(reg, ITEM, "done", by="alice-desk", ts=TS)
    return handoff.attach_proof(record, ed_key())


def _junk(genuine: dict[str, Any], lower: bool = True) -> dict[str, Any]:
    head = genuine["evidence"]["proof"].split(".")[0]
    for n in range(10_000):
        copy = json.loads(json.dumps(genuine))
        copy["evidence"]["proof"] = f"{head}..junk{n}"
        if (handoff.digests.digest(copy) < handoff.digests.digest(genuine)) == lower:
            return copy
    raise AssertionError("unreachable")


def _preempt(genuine: dict[str, Any]) -> dict[str, Any]:
    copy = json.loads(json.dumps(genuine))
    copy["outcome"] = "failed"
    return copy


@pytest.mark.parametrize("lower", [True, False])
def test_fold_verdict_is_the_best_over_signature_variants(lower: bool) -> None:
    genuine = _genuine()
    junk = _junk(genuine, lower)
    verdicts = set()
    for order in ([N1, genuine, junk], [N1, junk, genuine], [junk, N1, genuine]):
        reg = registry()
        statuses = [reg.add(r).status for r in order]
        assert statuses.count("duplicate") == 1
        assert reg.state(ITEM).state == "settled"
        check = handoff.settlement_evidence(reg, ITEM, SIDE)
        assert check is not None
        verdicts.add(check.verdict)
        bulk = registry()
        bulk.add_lines([json.dumps(r) for r in order])
        assert handoff.settlement_evidence(bulk, ITEM, SIDE) == check
    assert verdicts == {"verified"}


def test_ts_counts_in_a_signed_records_identity() -> None:
    genuine = _genuine()
    moved = dict(genuine, ts="2027-01-01T00:00:00Z")
    assert handoff.digests.identity(moved) != handoff.digests.identity(genuine)
    reg = registry()
    reg.add(N1)
    reg.add(genuine)
    assert reg.add(moved).status == "conflict"
    # an unsigned record at another time is still the same record
    again = dict(N1, ts="2027-01-01T00:00:00Z")
    assert reg.add(again).status == "duplicate"


def test_store_without_keys_keeps_every_signature_variant(tmp_path: Path) -> None:
    genuine = _genuine()
    with handoff.stores.SQLiteStore(
        tmp_path / "db.sqlite", roles=ROLES, extensions=handoff.EXTENSIONS
    ) as store:
        store.append(N1)
        assert store.append(_junk(genuine)) == "accepted"
        assert store.append(genuine) == "accepted"
        assert store.append(genuine) == "duplicate"
        check = handoff.settlement_evidence(store.registry(), ITEM, SIDE)
        assert check is not None
        assert check.verdict == "verified"


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@pytest.mark.parametrize("attack", ["junk", "preempt"])
def test_store_with_keys_refuses_a_forged_first_arrival(
    tmp_path: Path, kind: str, attack: str
) -> None:
    genuine = _genuine()
    forged = _junk(genuine) if attack == "junk" else _preempt(genuine)
    store: Any
    keys = SIDE.key_set()
    if kind == "memory":
        store = handoff.stores.MemoryStore(
            roles=ROLES, extensions=handoff.EXTENSIONS, keys=keys, verifiable=True
        )
    else:
        store = handoff.stores.SQLiteStore(
            tmp_path / "db.sqlite",
            roles=ROLES,
            extensions=handoff.EXTENSIONS,
            keys=keys,
            verifiable=True,
        )
    store.append(N1)
    with pytest.raises(handoff.HandoffError) as caught:
        store.append(forged)
    assert caught.value.code == "proof"
    assert store.append(genuine) == "accepted"
    unsigned = {k: v for k, v in genuine.items() if k != "evidence"}
    with pytest.raises(handoff.HandoffError) as caught:
        store.append(dict(unsigned, id="s-unsigned"))
    assert (caught.value.code, caught.value.reason) == ("proof", "proof_missing")
    state = store.state(ITEM)
    assert (state.state, state.outcome) == ("settled", "done")


def test_cli_add_with_keys_refuses_the_relayed_junk_first(tmp_path: Path) -> None:
    genuine = _genuine()
    config = tmp_path / "config.json"
    side = {"jwks": handoff.public_jwks(ed_key()), "verifiable": True}
    config.write_text(json.dumps({"roles": ROLES_JSON, "side": side}), encoding="utf-8")
    records = tmp_path / "relay_first.jsonl"
    records.write_text(
        "".join(json.dumps(r) + "\n" for r in (N1, _preempt(genuine), _junk(genuine), genuine)),
        encoding="utf-8",
    )
    db = tmp_path / "db.sqlite"

    def cli(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "handoff", *argv, "--config", str(config)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    done = cli("add", str(records), "--db", str(db))
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert "rejected proof/" in lines[1]
    assert "rejected proof/" in lines[2]
    assert lines[3].endswith(": accepted")
    done = cli("state", "--db", str(db))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "acts/web/roof  settled  done  verified" in done.stdout


@pytest.mark.parametrize("project", [7, None, ["web"]])
def test_signature_variants_of_an_odd_record_are_just_its_own_copy(project: Any) -> None:
    genuine = _genuine()
    reg = registry()
    reg.add(N1)
    reg.add(genuine)
    odd = dict(genuine, project=project)
    assert reg.signature_variants(odd) == [json.loads(handoff.digests.canonical(odd))]
    # the held record's own variants are still found through its item
    assert len(reg.signature_variants(genuine)) == 1
