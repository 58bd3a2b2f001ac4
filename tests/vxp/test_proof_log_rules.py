"""VXP Proof §5 the log (docs/spec/vxp-proof.md): inclusion at the leaf, chain order,
witnesses and their cosignature times, saved and live witnesses, live consistency; each
attack that once passed."""

from __future__ import annotations

import copy
import math
from datetime import datetime, timedelta
from typing import Any

import pytest

import vxp
from tests.vxp.demo_facts import COMPANY, LOG_ORIGIN, T0, rfc3339
from vxp import demo_key, demo_operation
from vxp.checkpoints import Checkpoint, SignedCheckpoint, cosign_checkpoint, sign_checkpoint
from vxp.codec import encode_hash
from vxp.statements import jwt_digest, leaf_data


def _failure(package: Any, metadata: Any, jwks: Any, *, live: Any = None, now: Any) -> Any:
    verdict = vxp.verify(package, metadata, jwks, live=live, now=now)
    assert verdict.valid is False
    assert verdict.derived_assurance == ()
    assert verdict.failure is not None
    return (verdict.failure["code"], verdict.failure.get("reason"))


@pytest.mark.parametrize("who", ["log", "operator", "company"])
def test_issuer_keys_never_count_as_witnesses(who: str) -> None:
    """The log key (or a signing key) listed as a witness made logged: true self-asserted."""
    op = demo_operation("succeeded")
    metadata = copy.deepcopy(op.metadata)
    metadata["vxp_proof"]["log"]["witnesses"] = [vxp.key_thumbprint(demo_key(who))]
    package = copy.deepcopy(op.package)
    signed = SignedCheckpoint.from_json(package["log"]["checkpoint"])
    cosigned = cosign_checkpoint(signed, demo_key(who), time=int(op.now.timestamp()))
    package["log"]["checkpoint"] = cosigned.to_json()
    assert _failure(package, metadata, op.jwks, now=op.now) == (
        "metadata_invalid",
        "witness_not_independent",
    )
    with pytest.raises(vxp.VxpError):
        vxp.build_metadata(
            COMPANY,
            jwks_uri=COMPANY + "/jwks",
            keys=[],
            custody="operator_hosted",
            log_origin=LOG_ORIGIN,
            log_kid=vxp.key_thumbprint(demo_key("log")),
            witnesses=[vxp.key_thumbprint(demo_key("log"))],
        )


def test_statements_must_sit_in_the_log_in_chain_order() -> None:
    """Re-log the draft's statements with two swapped: every proof verifies, order does not."""
    op = demo_operation("succeeded")
    package = copy.deepcopy(op.package)
    log = vxp.MerkleLog(LOG_ORIGIN)
    order = [0, 1, 3, 2, 4, 5]
    index = {}
    for i in order:
        jws = package["statements"][i].split("~", 1)[0]
        logged_at = package["log"]["entries"][i]["logged_at"]
        index[i] = log.append(leaf_data(jwt_digest(jws), logged_at))
    signed = sign_checkpoint(Checkpoint(LOG_ORIGIN, log.size, log.root()), demo_key("log"))
    package["log"]["checkpoint"] = signed.to_json()
    for i, entry in enumerate(package["log"]["entries"]):
        entry["index"] = index[i]
        entry["proof"] = [encode_hash(h) for h in log.inclusion_proof(index[i], log.size)]
    assert _failure(package, op.metadata, op.jwks, now=op.now) == ("log_invalid", "leaf_order")


def _resigned(op: Any, *, origin: str = LOG_ORIGIN, size_delta: int = 0) -> Any:
    package = copy.deepcopy(op.package)
    cp = package["log"]["checkpoint"]["checkpoint"]
    root = vxp.codec.decode_hash(cp["root"], "root")
    signed = sign_checkpoint(
        Checkpoint(origin, cp["tree_size"] + size_delta, root), demo_key("log")
    )
    package["log"]["checkpoint"] = signed.to_json()
    return package


def test_log_attacks_fail_closed() -> None:
    op = demo_operation("succeeded")
    # A checkpoint of another log signed by the same log key.
    other = _resigned(op, origin=LOG_ORIGIN + "-b")
    assert _failure(other, op.metadata, op.jwks, now=op.now) == (
        "log_invalid",
        "checkpoint_origin_mismatch",
    )
    # The packaged tree size does not match the proofs (same root, size + 1 and - 1).
    for delta in (1, -1):
        bad = _resigned(op, size_delta=delta)
        assert _failure(bad, op.metadata, op.jwks, now=op.now) == ("log_invalid", "inclusion")
    # An inclusion proof (and index) of another statement.
    swapped = copy.deepcopy(op.package)
    entries = swapped["log"]["entries"]
    for member in ("index", "proof"):
        entries[3][member], entries[4][member] = entries[4][member], entries[3][member]
    assert _failure(swapped, op.metadata, op.jwks, now=op.now) == ("log_invalid", "inclusion")
    # A live checkpoint of another origin.
    live = copy.deepcopy(op.live)
    live["checkpoint"] = _resigned(op, origin="elsewhere")["log"]["checkpoint"]
    assert _failure(op.package, op.metadata, op.jwks, live=live, now=op.now) == (
        "log_invalid",
        "checkpoint_origin_mismatch",
    )


def test_witness_cosignatures_unknown_ignored_duplicates_refused() -> None:
    op = demo_operation("witnessed")
    signed = SignedCheckpoint.from_json(op.package["log"]["checkpoint"])
    stranger = cosign_checkpoint(signed, demo_key("stranger"), time=int(op.now.timestamp()))
    package = {**op.package, "log": {**op.package["log"], "checkpoint": stranger.to_json()}}
    verdict = vxp.verify(package, op.metadata, op.jwks, now=op.now)
    assert verdict.valid
    assert verdict.witnesses == 1  # the stranger is not counted
    doubled = copy.deepcopy(op.package)
    cosigs = doubled["log"]["checkpoint"]["cosignatures"]
    cosigs.append(copy.deepcopy(cosigs[0]))
    metadata = copy.deepcopy(op.metadata)
    metadata["vxp_proof"]["log"]["quorum"] = 2
    code = _failure(doubled, metadata, op.jwks, now=op.now)
    assert code[0] == "log_invalid"
    # quorum 2 with one real witness: valid, but not logged.
    single = vxp.verify(op.package, metadata, op.jwks, now=op.now)
    assert single.valid
    assert single.logged is False
    assert "witnessed_log" not in single.derived_assurance


def _at(seconds: float) -> Any:
    return T0 + timedelta(seconds=seconds)


def _failed_with(verdict: vxp.Verdict) -> tuple[str, str | None]:
    assert verdict.valid is False
    assert verdict.failure is not None
    return verdict.failure["code"], verdict.failure.get("reason")


def _last_logged(package: dict[str, Any]) -> int:
    times = [datetime.fromisoformat(e["logged_at"]) for e in package["log"]["entries"]]
    return math.floor(max(times).timestamp())


def test_live_metadata_cannot_make_a_saved_signing_key_its_witness() -> None:
    op = demo_operation("succeeded")
    operator = demo_key("operator")
    package = op.builder.package(
        log_key=demo_key("log"), witnesses=[(operator, _last_logged(op.package) + 1)]
    )
    live = copy.deepcopy(op.metadata)
    op_kid = vxp.key_thumbprint(operator)
    live["vxp_proof"]["keys"] = [k for k in live["vxp_proof"]["keys"] if k["kid"] != op_kid]
    live["vxp_proof"]["log"]["witnesses"] = [op_kid]
    with pytest.raises(vxp.VxpError) as info:
        vxp.Verifier(op.metadata, op.jwks, live_metadata=live, live_jwks=op.jwks)
    assert (info.value.code, info.value.reason) == ("live_invalid", "witness_not_independent")
    live_data = {**op.live, "metadata": live, "jwks": op.jwks}
    verdict = vxp.verify(package, op.metadata, op.jwks, live=live_data, now=op.now)
    assert _failed_with(verdict) == ("live_invalid", "witness_not_independent")


def test_saved_witness_listed_live_as_a_signing_key_is_refused() -> None:
    op = demo_operation("witnessed")
    witness_kid = vxp.key_thumbprint(demo_key("witness"))
    live = copy.deepcopy(op.metadata)
    live["vxp_proof"]["log"]["witnesses"] = []
    live["vxp_proof"]["keys"].append(
        {"kid": witness_kid, "role": "operator", "not_before": rfc3339(_at(-100)),
         "not_after": None}
    )  # fmt: skip
    with pytest.raises(vxp.VxpError) as info:
        vxp.Verifier(op.metadata, op.jwks, live_metadata=live, live_jwks=op.jwks)
    assert (info.value.code, info.value.reason) == ("live_invalid", "witness_not_independent")


def test_live_quorum_never_lowers_the_saved_quorum() -> None:
    op = demo_operation("witnessed")
    saved = copy.deepcopy(op.metadata)
    saved["vxp_proof"]["log"]["quorum"] = 2
    assert vxp.Verifier(saved, op.jwks).verify(op.package, now=op.now).logged is False
    both = vxp.Verifier(saved, op.jwks, live_metadata=op.metadata, live_jwks=op.jwks)
    verdict = both.verify(op.package, now=op.now)
    assert verdict.valid, verdict.failure
    assert verdict.logged is False
    # and the other way round: live raises the quorum, the stricter one holds
    stricter = vxp.Verifier(op.metadata, op.jwks, live_metadata=saved, live_jwks=op.jwks)
    assert stricter.verify(op.package, now=op.now).logged is False
    assert vxp.Verifier(op.metadata, op.jwks).verify(op.package, now=op.now).logged is True


def test_a_witness_counts_only_when_saved_and_live_both_recognise_it() -> None:
    op = demo_operation("witnessed")
    none_saved = copy.deepcopy(op.metadata)
    none_saved["vxp_proof"]["log"]["witnesses"] = []
    # saved material recognises no witness; live adds one: it does not count yet
    added = vxp.Verifier(none_saved, op.jwks, live_metadata=op.metadata, live_jwks=op.jwks)
    verdict = added.verify(op.package, now=op.now)
    assert verdict.valid, verdict.failure
    assert (verdict.logged, verdict.witnesses) == (False, 0)
    # live drops a witness saved material recognised: it no longer counts
    dropped = vxp.Verifier(op.metadata, op.jwks, live_metadata=none_saved, live_jwks=op.jwks)
    verdict = dropped.verify(op.package, now=op.now)
    assert (verdict.logged, verdict.witnesses) == (False, 0)
    both = vxp.Verifier(op.metadata, op.jwks, live_metadata=op.metadata, live_jwks=op.jwks)
    verdict = both.verify(op.package, now=op.now)
    assert (verdict.logged, verdict.witnesses) == (True, 1)


@pytest.mark.parametrize("args", [(None, "x"), ("x", None), (1, 2), (b"d", "t")])
def test_a_log_entry_of_other_types_is_a_malformed_package(args: tuple[Any, Any]) -> None:
    # leaf_data reads a package's statement digest and logged_at (review i25 vxp #6)
    with pytest.raises(vxp.VxpProtocolError) as caught:
        leaf_data(*args)
    assert (caught.value.code, caught.value.reason) == ("package_malformed", "log")


# ---- §5 witness cosignature times: not before the last statement, not after now


def _recosign(signed_json: dict[str, Any], time: int) -> dict[str, Any]:
    signed = SignedCheckpoint.from_json(signed_json)
    bare = sign_checkpoint(signed.checkpoint, demo_key("log"))
    return cosign_checkpoint(bare, demo_key("witness"), time=time).to_json()


def _witnessed_with(time: int) -> Any:
    op = demo_operation("witnessed")
    package = {**op.package, "log": {**op.package["log"]}}
    package["log"]["checkpoint"] = _recosign(op.package["log"]["checkpoint"], time)
    live = {**op.live, "checkpoint": _recosign(op.live["checkpoint"], time)}
    return op, package, live


def test_witness_cosignature_before_a_statement_was_logged_fails() -> None:
    """§5: a cosignature dated before the last statement was logged vouches for nothing
    (log_invalid/witness_time), saved or live."""
    op = demo_operation("witnessed")
    assert vxp.verify(op.package, op.metadata, op.jwks, live=op.live, now=op.now).logged
    # cosigned at _at(3), the outcome logged at _at(4)
    _, package, live = _witnessed_with(int(_at(3).timestamp()))
    verdict = vxp.verify(package, op.metadata, op.jwks, now=op.now)
    assert _failed_with(verdict) == ("log_invalid", "witness_time")
    verdict = vxp.verify(package, op.metadata, op.jwks, live=live, now=op.now)
    assert _failed_with(verdict) == ("log_invalid", "witness_time")


def test_witness_cosignature_a_day_before_the_outcome_fails() -> None:
    """§5: nor one a day before the outcome."""
    op = demo_operation("witnessed")
    _, package, _ = _witnessed_with(int(_at(4 - 86400).timestamp()))
    verdict = vxp.verify(package, op.metadata, op.jwks, now=op.now)
    assert _failed_with(verdict) == ("log_invalid", "witness_time")


def test_witness_cosignature_after_now_fails_unless_within_leeway() -> None:
    """§5: a cosignature after ``now`` counts only within ``leeway``."""
    op = demo_operation("witnessed")
    later = int((op.now + timedelta(days=90)).timestamp())
    _, package, _ = _witnessed_with(later)
    verdict = vxp.verify(package, op.metadata, op.jwks, now=op.now)
    assert _failed_with(verdict) == ("log_invalid", "witness_time")
    ok = vxp.verify(package, op.metadata, op.jwks, now=op.now, leeway=91 * 86400)
    assert ok.valid
    assert ok.logged
    verifier = vxp.Verifier(op.metadata, op.jwks)
    assert _failed_with(verifier.verify(package, now=op.now, leeway=0))[1] == "witness_time"


def test_witness_cosignature_in_the_same_second_as_the_last_statement_counts() -> None:
    """§5: cosignature times are whole seconds: the last statement's second counts."""
    op = demo_operation("witnessed")
    _, package, _ = _witnessed_with(int(_at(4).timestamp()))  # truncated to the second
    assert vxp.verify(package, op.metadata, op.jwks, now=op.now).logged
