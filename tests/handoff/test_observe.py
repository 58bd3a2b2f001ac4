"""§12 observer (issue 19 #9): claims' ``evidence.basis`` is reported; ``handoff observe``
exists."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import handoff

from .ext_fixtures import ROLES_JSON, TS, ed_key, raised, rec, registry

ITEM = handoff.ItemId("acts", "web", "k1")


def _claims() -> list[dict[str, object]]:
    with_basis = rec("c1", "claimed", "agent", "helper", outcome="done",
                     evidence={"basis": "bank statement line 4"})  # fmt: skip
    without = rec("c2", "claimed", "agent", "helper", outcome="done")
    return [with_basis, without]


def test_observe_reports_each_claims_basis() -> None:
    reg = registry()
    [item] = handoff.observe([raised(), *_claims()], reg)
    assert item["claim_evidence"] == [
        {"claim": "c1", "by": "helper", "outcome": "done", "basis": "bank statement line 4"},
        {"claim": "c2", "by": "helper", "outcome": "done", "basis": None},
    ]


def test_handoff_observe_command(tmp_path: Path) -> None:
    reg = registry()
    reg.add(raised())
    settled = handoff.attach_proof(
        handoff.make_settlement(reg, ITEM, "done", by="alice-desk", ts=TS), ed_key()
    )
    records = tmp_path / "records.jsonl"
    lines = [raised(), *_claims(), settled]
    records.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    config = tmp_path / "config.json"
    side = {"jwks": handoff.public_jwks(ed_key())}
    config.write_text(json.dumps({"roles": ROLES_JSON, "side": side}), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "handoff", "observe", str(records), "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    [item] = json.loads(done.stdout)["items"]
    assert item["evidence"] == {"presented": "match", "proof": "valid"}
    assert [c["basis"] for c in item["claim_evidence"]] == ["bank statement line 4", None]


def test_an_observer_whose_own_jwks_is_unusable_is_told_not_shown_forgeries() -> None:
    """§12 observer (ours, issue 25): a JWKS the observer cannot use is its own error
    (``key``/``jwks_invalid``), never a verdict that the principal's genuine proof is invalid."""
    import pytest

    from .ext_fixtures import settlement

    held = registry()
    held.add(raised())
    signed = handoff.attach_proof(settlement(held), ed_key())
    broken = {"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "AA", "d": "AA"}]}
    with pytest.raises(handoff.HandoffUsageError) as caught:
        handoff.observe([raised(), signed], registry(), jwks=broken)
    assert (caught.value.code, caught.value.reason) == ("key", "jwks_invalid")
    held.add(signed)
    side = handoff.PrincipalSide(jwks=broken, verifiable=True)
    with pytest.raises(handoff.HandoffUsageError):
        handoff.settlement_evidence(held, ITEM, side)
    good = handoff.observe([raised(), signed], registry(), jwks=handoff.public_jwks(ed_key()))
    assert good[0]["evidence"]["proof"] == "valid"
