"""VXP Proof §7 issuer metadata, JWKS and key periods: material of any shape fails
closed, live metadata never widens what saved metadata allows."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from joserfc.jwk import ECKey

import vxp
from vxp import demo_key, demo_operation


def _failure(package: Any, metadata: Any, jwks: Any, *, live: Any = None, now: Any) -> Any:
    verdict = vxp.verify(package, metadata, jwks, live=live, now=now)
    assert verdict.valid is False
    assert verdict.derived_assurance == ()
    assert verdict.failure is not None
    return (verdict.failure["code"], verdict.failure.get("reason"))


def test_live_metadata_cutting_a_key_short_wins_even_when_live_jwks_drops_it() -> None:
    """Live metadata retires the company key before it signed; the live JWKS no longer
    carries it. Saved material used to re-validate it (live only decided when its JWKS
    held the key)."""
    op = demo_operation("succeeded")
    company_kid = vxp.key_thumbprint(demo_key("company"))
    live = copy.deepcopy(op.live)
    for record in live["metadata"]["vxp_proof"]["keys"]:
        if record["kid"] == company_kid:
            record["not_after"] = "2026-10-01T00:00:00.000Z"
    live["jwks"] = {"keys": [k for k in live["jwks"]["keys"] if k["kid"] != company_kid]}
    assert _failure(op.package, op.metadata, op.jwks, live=live, now=op.now) == (
        "key_untrusted",
        "key_not_valid_at_time",
    )


@pytest.mark.parametrize(
    "change",
    [{"alg": "ES384"}, {"alg": "RS256"}, {"use": "enc"}, {"key_ops": ["encrypt"]}],
)
def test_jwks_key_published_for_another_alg_or_use_is_refused(change: dict[str, Any]) -> None:
    op = demo_operation("succeeded")
    jwks = copy.deepcopy(op.jwks)
    for key in jwks["keys"]:
        key.update(change)
    assert _failure(op.package, op.metadata, jwks, now=op.now) == ("metadata_invalid", "jwks_use")


def test_jwks_key_on_another_curve_is_metadata_invalid() -> None:
    op = demo_operation("succeeded")
    other = ECKey.generate_key("P-384")
    jwk = {**other.as_dict(private=False), "kid": other.thumbprint()}
    jwks = {"keys": [*op.jwks["keys"], jwk]}
    assert _failure(op.package, op.metadata, jwks, now=op.now) == ("metadata_invalid", "jwks")


def test_jwks_key_without_kid_is_refused() -> None:
    op = demo_operation("succeeded")
    jwks = copy.deepcopy(op.jwks)
    del jwks["keys"][0]["kid"]
    assert _failure(op.package, op.metadata, jwks, now=op.now) == ("metadata_invalid", "jwks_kid")


def test_live_metadata_never_revalidates_a_key_saved_metadata_retired() -> None:
    """Saved metadata says the company key retired before it signed; live metadata lists
    it as active: live used to decide alone and re-validated it."""
    op = demo_operation("succeeded")
    company_kid = vxp.key_thumbprint(demo_key("company"))
    saved = copy.deepcopy(op.metadata)
    for record in saved["vxp_proof"]["keys"]:
        if record["kid"] == company_kid:
            record["not_after"] = "2026-10-01T00:00:00.000Z"
    assert _failure(op.package, saved, op.jwks, live=op.live, now=op.now) == (
        "key_untrusted",
        "key_not_valid_at_time",
    )


def test_key_used_before_its_validity_starts_is_refused() -> None:
    op = demo_operation("succeeded")
    company_kid = vxp.key_thumbprint(demo_key("company"))
    late = copy.deepcopy(op.metadata)
    for record in late["vxp_proof"]["keys"]:
        if record["kid"] == company_kid:
            record["not_before"] = "2026-10-22T22:30:29.357Z"  # 1 ms after the terms
    assert _failure(op.package, late, op.jwks, now=op.now) == (
        "key_untrusted",
        "key_not_valid_at_time",
    )
    at_start = copy.deepcopy(op.metadata)
    for record in at_start["vxp_proof"]["keys"]:
        if record["kid"] == company_kid:
            record["not_before"] = "2026-10-22T22:30:29.356Z"  # exactly the terms' time
    assert vxp.verify(op.package, at_start, op.jwks, now=op.now).valid


_FUZZ_OP = demo_operation("witnessed")


_WORDS = st.sampled_from(
    ["operator", "company", "EC", "OKP", "P-256", "Ed25519", "ES256", "sig", "https://x", "A"]
)


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2**64) | st.text(max_size=6) | _WORDS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(_WORDS | st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)


def _all_paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            out += _all_paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            out += _all_paths(value, (*prefix, i))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(target=st.sampled_from(["metadata", "jwks"]), data=st.data(), value=_VALUES)
def test_trust_material_of_any_shape_gives_a_failure_code(
    target: str, data: Any, value: Any
) -> None:
    docs = {"metadata": _FUZZ_OP.metadata, "jwks": _FUZZ_OP.jwks}
    doc = copy.deepcopy(docs[target])
    path = data.draw(st.sampled_from(_all_paths(doc)))
    if path:
        node = doc
        for step in path[:-1]:
            node = node[step]
        node[path[-1]] = value
    else:
        doc = value
    docs[target] = doc
    for live in (None, {**_FUZZ_OP.live, target: doc}):
        verdict = vxp.verify(
            _FUZZ_OP.package, docs["metadata"], docs["jwks"], live=live, now=_FUZZ_OP.now
        )
        if not verdict.valid:
            assert verdict.failure is not None
            assert verdict.derived_assurance == ()


@pytest.mark.parametrize("version", [True, 1.5, "1", None])
def test_metadata_version_boolean_is_refused(version: Any) -> None:
    """§7: ``vxp_proof.version`` is the number 1; ``true`` is not 1 (metadata_invalid/version)."""
    op = demo_operation("succeeded")
    metadata = {**op.metadata, "vxp_proof": {**op.metadata["vxp_proof"], "version": version}}
    verdict = vxp.verify(op.package, metadata, op.jwks, now=op.now)
    assert verdict.failure is not None
    assert (verdict.failure["code"], verdict.failure["reason"]) == ("metadata_invalid", "version")
    with pytest.raises(vxp.VxpProtocolError):
        vxp.Verifier(metadata, op.jwks)


@pytest.mark.parametrize("kid", [None, 7, b"k", ["k"], {"k": 1}])
def test_records_of_a_kid_that_is_not_a_string_is_the_callers_mistake(kid: Any) -> None:
    """docs/spec/vxp.md §5: a query of the caller's with a wrong type is argument_invalid,
    never an empty answer that reads as "the issuer lists no such key"."""
    op = demo_operation("succeeded")
    trust = vxp.trust.load_trust(op.metadata, op.jwks)
    with pytest.raises(vxp.VxpUsageError) as info:
        trust.records_for(kid)
    assert info.value.code == "argument_invalid"


def test_metadata_version_one_point_zero_compares_by_value() -> None:
    """§7: numbers compare by value: 1.0 is version 1."""
    op = demo_operation("succeeded")
    metadata = {**op.metadata, "vxp_proof": {**op.metadata["vxp_proof"], "version": 1.0}}
    assert vxp.verify(op.package, metadata, op.jwks, now=op.now).valid
