"""The errand: one purchase across PXP, Handoff, Parley and VXP, audited link by link.

In process (``ppbind.demo_errand``) every attack the issue names, and the ones we added,
must be caught by the audit and named by its link. Across processes (``examples/errand.py``)
every party runs in its own process on loopback; the report it writes is read in a real
headless browser.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import ppbind

TOP = Path(__file__).resolve().parents[1]

# attack -> (code, link, reason): the audit names each broken link
ATTACKS = {
    "change-price-after-decision": ("binding_terms_changed", "decision", None),
    "commit-another-proposal": ("binding_wrong_proposal", "decision->parley", "commit"),
    "forge-approval": ("binding_forged_approval", "parley->vxp", None),
    "decision-other-key": ("binding_wrong_key", "decision", None),
    "grant-other-nonce": ("binding_grant_mismatch", "decision->parley", "nonce"),
    "decision-rejected": ("binding_not_approved", "decision", None),
    "reuse-decision": ("binding_wrong_proposal", "decision->parley", "commit"),
    "act-other-item": ("binding_act_item", "vxp->act", "item"),
}


@pytest.fixture(scope="module")
def errand() -> dict[str, Any]:
    return ppbind.demo_errand()


def test_the_errand_in_process_is_audited_whole(errand: dict[str, Any]) -> None:
    report = ppbind.verify_errand(errand)
    assert report["item"] == "ben-shop/bike-2291"
    assert (report["amount"], report["currency"]) == (44000, "EUR")
    assert report["decision"]["terms_rev"] == 1
    assert report["vxp"] == {
        "company": "https://bikes.ben.example/vxp",
        "terms_digest": report["vxp"]["terms_digest"],
        "final_state": "succeeded",
        "logged": True,
        "statements": 6,
    }
    assert report["act"] == "done"
    assert ppbind.raw_key(errand["principal"]).hex() == report["principal"]
    # byte-reproducible: the vectors depend on it
    assert json.dumps(ppbind.demo_errand()) == json.dumps(errand)


def test_every_attack_is_listed_here() -> None:
    assert set(ATTACKS) | {"act-open"} == set(ppbind.ATTACKS)


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_each_broken_link_is_named(attack: str) -> None:
    code, link, reason = ATTACKS[attack]
    bundle = ppbind.demo_errand(attack)
    with pytest.raises(ppbind.BindingError) as caught:
        ppbind.verify_errand(bundle)
    assert (caught.value.code, caught.value.link, caught.value.reason) == (code, link, reason)


def test_a_dropped_log_entry_is_caught(errand: dict[str, Any]) -> None:
    bundle = json.loads(json.dumps(errand))
    bundle["vxp"]["package"]["statements"].pop(4)
    bundle["vxp"]["package"]["log"]["entries"].pop(4)
    with pytest.raises(ppbind.BindingError) as caught:
        ppbind.verify_errand(bundle)
    assert (caught.value.code, caught.value.link) == ("vxp_invalid", "vxp")


def test_reordered_records_fold_to_the_same_report(errand: dict[str, Any]) -> None:
    bundle = json.loads(json.dumps(errand))
    bundle["handoff"]["records"].reverse()
    assert ppbind.verify_errand(bundle) == ppbind.verify_errand(errand)
    ledger = bundle["pxp"]["ledger"]
    ledger[2], ledger[3] = ledger[3], ledger[2]
    with pytest.raises(ppbind.BindingError) as caught:
        ppbind.verify_errand(bundle)
    assert caught.value.code == "pxp_invalid"


def test_key_confusion_across_protocols_is_caught(errand: dict[str, Any]) -> None:
    """The audit is told another person (whose key the side also holds) is the principal."""
    bundle = json.loads(json.dumps(errand))
    bundle["principal"] = ppbind.PersonKey.from_label("bindings mallory").public_jwk
    with pytest.raises(ppbind.BindingError) as caught:
        ppbind.verify_errand(bundle)
    assert (caught.value.code, caught.value.reason) == ("parley_invalid", "untrusted_issuer")
    bundle["principal"] = ppbind.PersonKey.from_label("bindings ana").public_jwk
    assert ppbind.verify_errand(bundle)["act"] == "done"  # her JWK is her Parley key


def test_an_open_act_is_reported_and_can_be_required() -> None:
    bundle = ppbind.demo_errand("act-open")
    assert ppbind.verify_errand(bundle)["act"] == "open"
    bundle["policy"]["require_act_done"] = True
    with pytest.raises(ppbind.BindingError) as caught:
        ppbind.verify_errand(bundle)
    assert (caught.value.code, caught.value.link) == ("binding_act_open", "act")


def test_a_late_answer_gets_a_fresh_offer_never_a_lapsed_commit() -> None:
    bundle = ppbind.demo_errand(late_answer=True)
    report = ppbind.verify_errand(bundle)
    assert report["decision"]["terms_rev"] == 2
    records = {r["id"]: r for r in bundle["handoff"]["records"]}
    assert records["d-late"]["outcome"] == "approve"  # her late answer is kept
    consent = records["d-fresh"]["terms"]["x_binding"]["parley"]["consent"]
    assert bundle["parley"]["receipt"]["at"] < consent["expires"]
    assert report["parley"]["proposal"] == consent["proposal"]


def test_errand_verify_command(tmp_path: Path, errand: dict[str, Any]) -> None:
    (tmp_path / "errand.json").write_text(json.dumps(errand), encoding="utf-8")
    ok = subprocess.run(
        [sys.executable, "-m", "ppbind", "verify", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("OK")
    broken = ppbind.demo_errand("forge-approval")
    (tmp_path / "errand.json").write_text(json.dumps(broken), encoding="utf-8")
    bad = subprocess.run(
        [sys.executable, "-m", "ppbind", "verify", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert bad.returncode == 1
    assert json.loads(bad.stdout)["error"]["code"] == "binding_forged_approval"
    (tmp_path / "errand.json").write_text("{", encoding="utf-8")
    unusable = subprocess.run(
        [sys.executable, "-m", "ppbind", "verify", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert unusable.returncode == 2
