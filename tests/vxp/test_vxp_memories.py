"""What the verifier remembers between verifications never changes an answer.

* Trust material is remembered by the exact content of the metadata and JWKS (their
  ``marshal`` encoding): the remembered value equals a fresh load, an input changed in
  place is seen at once, values that are not plain built-in types are never remembered,
  the shared result is read-only, and the memory is bounded.
* What a verification derives from its material (keys, periods, the header memory) is
  matched to that very material by identity, so a header learnt against one key set is
  never used against another.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

import vxp
from vxp import _metadata, _verifier
from vxp._metadata import load_trust, trust_of
from vxp._proof_demo import demo_key, demo_operation
from vxp._statements import HEADER_MEMORY_MAX, StatementBatch

OP = demo_operation("succeeded")
LIVE = demo_operation("witnessed")


def _verdict(op: Any, metadata: Any = None, jwks: Any = None) -> vxp.Verdict:
    return vxp.verify(
        op.package,
        op.metadata if metadata is None else metadata,
        op.jwks if jwks is None else jwks,
        now=op.now,
    )


def _clear() -> None:
    _metadata._TRUSTED.clear()
    _verifier._PREPARED.clear()


def _retire_operator(metadata: dict[str, Any]) -> None:
    for entry in metadata["vxp_proof"]["keys"]:
        if entry["role"] == "operator":
            entry["not_after"] = "2026-01-01T00:00:00.000Z"
            entry["not_before"] = "2025-01-01T00:00:00.000Z"


def _custody(metadata: dict[str, Any]) -> None:
    metadata["vxp_proof"]["custody"]["company_key"] = "company_held"


def _drop_operator_key(jwks: dict[str, Any]) -> None:
    kid = vxp.key_thumbprint(demo_key("operator"))
    jwks["keys"] = [k for k in jwks["keys"] if k["kid"] != kid]


def _integer_issuer(metadata: dict[str, Any]) -> None:
    metadata["issuer"] = 7


def _tuple_keys(metadata: dict[str, Any]) -> None:
    metadata["vxp_proof"]["keys"] = tuple(metadata["vxp_proof"]["keys"])


def _float_quorum(metadata: dict[str, Any]) -> None:
    metadata["vxp_proof"]["log"]["quorum"] = 1.0


def _true_quorum(metadata: dict[str, Any]) -> None:
    metadata["vxp_proof"]["log"]["quorum"] = True


METADATA_CHANGES: list[Callable[[dict[str, Any]], None]] = [
    _retire_operator,
    _custody,
    _integer_issuer,
    _tuple_keys,
    _float_quorum,
    _true_quorum,
]


@pytest.mark.parametrize("change", METADATA_CHANGES, ids=lambda f: f.__name__)
def test_a_metadata_change_gives_the_verdict_of_a_cold_verifier(
    change: Callable[[dict[str, Any]], None],
) -> None:
    metadata = copy.deepcopy(OP.metadata)
    change(metadata)
    _clear()
    cold = _verdict(OP, metadata)
    assert _verdict(OP).valid
    assert _verdict(OP, metadata) == cold
    assert _verdict(OP, metadata) == cold


def test_a_jwks_change_gives_the_verdict_of_a_cold_verifier() -> None:
    jwks = copy.deepcopy(OP.jwks)
    _drop_operator_key(jwks)
    _clear()
    cold = _verdict(OP, jwks=jwks)
    assert cold.failure is not None
    assert _verdict(OP).valid
    assert _verdict(OP, jwks=jwks) == cold


def test_material_changed_in_place_is_seen_at_once() -> None:
    metadata = copy.deepcopy(OP.metadata)
    jwks = copy.deepcopy(OP.jwks)
    first = _verdict(OP, metadata, jwks)
    assert first.valid
    assert first.custody_declared == "operator_hosted"
    _custody(metadata)
    assert _verdict(OP, metadata, jwks).custody_declared == "company_held"
    _retire_operator(metadata)
    assert _verdict(OP, metadata, jwks).failure == _verdict(OP, copy.deepcopy(metadata)).failure
    assert not _verdict(OP, metadata, jwks).valid
    _drop_operator_key(jwks)
    _clear()
    cold = _verdict(OP, copy.deepcopy(OP.metadata), jwks)
    assert _verdict(OP, OP.metadata, jwks) == cold


def test_remembered_trust_equals_a_fresh_load() -> None:
    _clear()
    fresh = load_trust(OP.metadata, OP.jwks)
    first, remembered = trust_of(OP.metadata, OP.jwks)
    again, _ = trust_of(copy.deepcopy(OP.metadata), copy.deepcopy(OP.jwks))
    assert remembered
    assert first == fresh
    assert again is first  # the same content: the remembered value
    assert dict(first.keys) == dict(fresh.keys)
    assert first.records_for(first.records[0].kid) == fresh.records_for(fresh.records[0].kid)


def test_the_shared_result_cannot_be_changed() -> None:
    trust, _ = trust_of(OP.metadata, OP.jwks)
    with pytest.raises(TypeError):
        trust.keys["someone"] = trust.keys[trust.log_kid]  # type: ignore[index]
    assert trust_of(OP.metadata, OP.jwks)[0] is trust


class _Dict(dict[str, Any]):
    """A mapping whose lookups lie: never remembered, always loaded afresh."""

    def __getitem__(self, name: str) -> Any:
        value = super().__getitem__(name)
        return "https://elsewhere.example" if name == "issuer" else value

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default


def test_values_that_are_not_plain_are_never_remembered() -> None:
    _clear()
    odd = _Dict(copy.deepcopy(OP.metadata))
    verdict = _verdict(OP, odd)
    assert verdict.failure is not None
    assert verdict.failure["code"] == "company_mismatch"
    assert not _metadata._TRUSTED
    assert _verdict(OP).valid
    assert _verdict(OP, odd) == verdict
    assert len(_metadata._TRUSTED) == 1  # the plain material only


def test_the_trust_memory_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_metadata, "_TRUSTED_MAX", 4)
    _clear()
    for i in range(20):
        metadata = copy.deepcopy(OP.metadata)
        metadata["vxp_proof"]["jwks_uri"] = f"https://store.example/jwks/{i}.json"
        assert _verdict(OP, metadata).valid
        assert len(_metadata._TRUSTED) <= 4
    large = copy.deepcopy(OP.metadata)
    large["vxp_proof"]["jwks_uri"] = "https://store.example/" + "j" * 20_000
    _clear()
    for _ in range(3):
        assert _verdict(OP, large).valid
    assert not _metadata._TRUSTED  # over 16 KiB: loaded, never kept
    assert not _verifier._PREPARED  # nor anything derived from it


def test_refused_material_is_never_remembered() -> None:
    _clear()
    metadata = copy.deepcopy(OP.metadata)
    _integer_issuer(metadata)
    assert not _verdict(OP, metadata).valid
    assert not _metadata._TRUSTED


def test_derived_material_is_matched_by_identity_not_by_value() -> None:
    _clear()
    a = load_trust(OP.metadata, OP.jwks)
    b = load_trust(OP.metadata, OP.jwks)
    assert a == b
    assert a is not b
    assert _verifier._prepare(a, None, True) is _verifier._prepare(a, None, True)
    assert _verifier._prepare(a, None, True) is not _verifier._prepare(b, None, True)
    assert _verifier._prepare(a, b, True) is not _verifier._prepare(a, None, True)
    assert _verifier._prepare(a, None, False) is not _verifier._prepare(a, None, False)


def test_the_derived_memory_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_verifier, "_PREPARED_MAX", 3)
    _clear()
    for _ in range(10):
        _verifier._prepare(load_trust(OP.metadata, OP.jwks), None, True)
        assert len(_verifier._PREPARED) <= 3


def test_a_header_learnt_for_one_key_set_is_not_used_for_another() -> None:
    # The statements' header segments are learnt (and matched to the operator's key)
    # against the full material; then the same statements against material whose JWKS
    # lacks that key must fail at once, exactly as they do cold.
    jwks = copy.deepcopy(OP.jwks)
    _drop_operator_key(jwks)
    _clear()
    assert _verdict(OP).valid
    warm = _verdict(OP, jwks=jwks)
    assert warm.failure is not None
    assert warm.failure["reason"] == "issuer_key_unknown"
    assert warm.failure["message"].startswith("statement 0:")
    _clear()
    assert _verdict(OP, jwks=jwks) == warm


def test_live_material_has_its_own_derived_memory() -> None:
    _clear()
    offline = vxp.verify(LIVE.package, LIVE.metadata, LIVE.jwks, now=LIVE.now)
    live = vxp.verify(LIVE.package, LIVE.metadata, LIVE.jwks, live=LIVE.live, now=LIVE.now)
    assert offline.valid
    assert live.valid
    assert offline.key_source == "issuer_metadata_saved"
    assert live.key_source == "issuer_metadata_live"
    assert len(_verifier._PREPARED) == 2


def test_rotation_after_a_verification_is_seen() -> None:
    _clear()
    assert _verdict(OP).valid
    # retired after it was published, before the statements were logged
    earlier = OP.now - timedelta(days=21)
    kid = vxp.key_thumbprint(demo_key("operator"))
    retired = vxp.retire_key(OP.metadata, kid, at=earlier)
    verdict = _verdict(OP, retired)
    assert verdict.failure is not None
    assert verdict.failure["code"] == "key_untrusted"


def test_the_header_memory_is_bounded() -> None:
    memory: dict[str, Any] = {}
    batch = StatementBatch({}, 0.0, None, memory)
    for i in range(3 * HEADER_MEMORY_MAX):
        batch._learn(f"segment{i}")
        assert len(memory) <= HEADER_MEMORY_MAX
    batch._learn("s" * 513)
    assert "s" * 513 not in memory


def test_what_is_kept_is_the_content_the_key_stands_for(monkeypatch: pytest.MonkeyPatch) -> None:
    # Another thread changes the caller's metadata between its encoding and its parse:
    # the memory must hold the parse of the encoded content, not of the changed objects.
    metadata = copy.deepcopy(OP.metadata)
    real_load = _metadata.load_trust

    def load_while_changed(m: Any, j: Any) -> Any:
        _retire_operator(metadata)
        return real_load(m, j)

    _clear()
    monkeypatch.setattr(_metadata, "load_trust", load_while_changed)
    trust, remembered = trust_of(metadata, OP.jwks)
    monkeypatch.setattr(_metadata, "load_trust", real_load)
    assert remembered
    assert trust == load_trust(OP.metadata, OP.jwks)  # the content before the change
    assert _verdict(OP).valid
    assert not _verdict(OP, metadata).valid  # the changed content, parsed as itself


class _LyingBytes(bytes):
    """Bytes equal to anything: marshal writes them as plain bytes."""

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    __hash__ = bytes.__hash__


def test_a_bytes_lookalike_is_judged_as_the_bytes_it_encodes_to() -> None:
    plain = copy.deepcopy(OP.metadata)
    plain["vxp_proof"]["version"] = b"1"
    lying = copy.deepcopy(OP.metadata)
    lying["vxp_proof"]["version"] = _LyingBytes(b"1")
    _clear()
    cold = _verdict(OP, plain)
    assert cold.failure is not None
    assert cold.failure["reason"] == "version"
    _clear()
    assert _verdict(OP, lying) == cold
    assert _verdict(OP, plain) == cold
