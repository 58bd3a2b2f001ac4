"""Bad input of any shape raises only HandoffError from the extension API (never a crash)."""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import handoff

from . import handoff_helpers as core
from .ext_fixtures import ed_key, raised, registry, settlement

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 10) | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


def _base() -> tuple[handoff.Registry, dict[str, Any]]:
    reg = registry()
    reg.add(raised())
    return reg, handoff.attach_proof(settlement(reg), ed_key())


REG, SIGNED = _base()
JWKS = handoff.public_jwks(ed_key())
SIDE = handoff.PrincipalSide(jwks=JWKS, verifiable=True)


def _replace(record: dict[str, Any], path: list[str], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(record)
    node: Any = out
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return out


PATHS = [
    ["evidence"],
    ["evidence", "proof"],
    ["evidence", "presented"],
    ["authority"],
    ["authority", "kind"],
    ["terms_rev"],
    ["outcome"],
    ["key"],
    ["ext"],
    ["type"],
]


@settings(max_examples=150)
@given(path=st.sampled_from(PATHS), value=JSON)
def test_checks_raise_only_handoff_errors(path: list[str], value: Any) -> None:
    record = _replace(SIGNED, path, value)
    for check in (
        lambda: handoff.verify_proof(record, JWKS),
        lambda: handoff.check_principal_side_record(record, REG, SIDE),
        lambda: handoff.check_requester_record(record, REG),
    ):
        with contextlib.suppress(handoff.HandoffError):
            check()


@settings(max_examples=100)
@given(jwks=JSON, record=JSON)
def test_verify_proof_on_any_json(jwks: Any, record: Any) -> None:
    for args in ((record, JWKS), (SIGNED, jwks)):
        with contextlib.suppress(handoff.HandoffError):
            handoff.verify_proof(*args)


@settings(max_examples=100)
@given(text=st.text(max_size=200))
def test_any_text_is_a_state_document(text: str) -> None:
    doc = "## Acts\n" + text
    try:
        result = handoff.markdown.sync_state_document(
            doc, registry(), project="web", registrar="registrar", now="2026-11-30T10:00:00Z"
        )
    except handoff.HandoffError:
        return
    again = handoff.markdown.sync_state_document(
        result.document,
        registry(),
        project="web",
        registrar="registrar",
        now="2026-11-30T10:00:00Z",
    )
    assert len(again.records) == len(result.records)


@settings(max_examples=100)
@given(ext=JSON, key=JSON, rev=JSON, terms=JSON, proposal=JSON)
def test_presentation_on_any_json(ext: Any, key: Any, rev: Any, terms: Any, proposal: Any) -> None:
    try:
        shown = handoff.evidence.presentation(
            ext=ext, project="web", key=key, terms_rev=rev, terms=terms, proposal=proposal
        )
    except handoff.HandoffError:
        return
    assert handoff.digests.presented_digest(shown).startswith("sha-256:")


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**60), 2**60),
    st.floats(allow_nan=False),
    st.text(max_size=6),
)


_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


_MEMBERS = sorted({*core.settled("s1"), "authority", "evidence", "relation", "about", "terms"})


@given(
    st.sampled_from([core.raised(), core.settled("s1"), core.claimed("c1")]),
    st.lists(st.tuples(st.sampled_from(_MEMBERS), _JSON), min_size=1, max_size=3),
    _JSON,
)
@settings(max_examples=150, deadline=None)
def test_malformed_core_records_and_configurations_raise_only_handoff_errors(
    base: dict[str, Any], changes: list[tuple[str, Any]], other: Any
) -> None:
    record = dict(base)
    for member, value in changes:
        record[member] = value
    reg = registry()
    calls: list[Any] = [
        lambda: handoff.check_record(record, roles=core.ROLES, extensions=core.EXTS),
        lambda: core.registry().add(record),
        lambda: handoff.Record.from_json(record),
        lambda: handoff.verify_proof(record, other),
        lambda: handoff.evidence.presentation_for(reg, record),
        lambda: handoff.check_principal_side_record(record, reg, handoff.PrincipalSide()),
        lambda: handoff.Roles.from_json(other),
        lambda: handoff.ExtensionRegistry.from_json(other),
        lambda: handoff.PrincipalSide.from_json(other),
        lambda: handoff.attach_proof(other, core.ROLES.to_json()),
    ]
    for call in calls:
        with contextlib.suppress(handoff.HandoffError):
            call()
