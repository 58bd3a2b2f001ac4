"""§10 (ours): an id reused by another owner or type never displaces a record.

Every version is held, the fold chooses none for a same-id conflict, and the answer does
not depend on arrival order (moved here from the review regressions).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import handoff

from .handoff_helpers import EXTS, ROLES, claimed, raised, rec, registry, settled

ITEM = handoff.ItemId("demo-keep", "house", "k1")


def _lower_than(record: dict[str, Any], make: Any) -> dict[str, Any]:
    """A record from ``make(n)`` whose digest is below ``record``'s (ground, as an attacker)."""
    target = handoff.digests.digest(record)
    return next(r for r in (make(n) for n in range(10_000)) if handoff.digests.digest(r) < target)


def _spoofs() -> list[dict[str, Any]]:
    s1 = settled("s1")
    claim = _lower_than(s1, lambda n: claimed("s1", context=f"grind {n}"))
    need = _lower_than(
        s1,
        lambda n: rec("s1", "raised", "requester", "bot-1", terms={"text": f"x{n}"}, terms_rev=1),
    )
    note = _lower_than(
        s1, lambda n: rec("s1", "note", "agent", "helper-9", about={"key": "k1"}, note=f"{n}")
    )
    return [claim, need, note]


@pytest.mark.parametrize("index", range(3))
@pytest.mark.parametrize("first", [True, False])
def test_an_id_reused_by_another_type_never_displaces_the_settlement(
    index: int, first: bool
) -> None:
    spoof = _spoofs()[index]
    reg = registry()
    reg.add(raised())
    order = [spoof, settled("s1")] if first else [settled("s1"), spoof]
    statuses = [reg.add(r).status for r in order]
    assert statuses == ["accepted", "accepted"]
    state = reg.state(ITEM)
    assert (state.state, state.settlement, state.outcome) == ("settled", "s1", "done")
    assert [c.kind for c in state.conflicts if c.kind == "id_reused"] == ["id_reused"]
    assert sorted(r["type"] for r in reg.records(ITEM) if r["id"] == "s1") == sorted(
        ["settled", spoof["type"]]
    )


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_stores_keep_the_settlement_whose_id_is_reused(tmp_path: Path, kind: str) -> None:
    store: Any
    if kind == "memory":
        store = handoff.stores.MemoryStore(roles=ROLES, extensions=EXTS)
    else:
        store = handoff.stores.SQLiteStore(tmp_path / "h.sqlite", roles=ROLES, extensions=EXTS)
    store.append(raised())
    store.append(settled("s1"))
    store.append(_spoofs()[0])
    assert store.state(ITEM).state == "settled"
    assert store.state(ITEM).settlement == "s1"


def test_a_same_id_conflict_holds_every_version_and_chooses_none() -> None:
    v1, v2 = claimed("c1", context="a"), claimed("c1", context="b")
    both = sorted((v1, v2), key=lambda r: json.dumps(r, sort_keys=True, ensure_ascii=False))
    for order in ([v1, v2], [v2, v1]):
        reg = registry()
        assert [reg.add(r).status for r in order] == ["accepted", "conflict"]
        assert reg.records(ITEM) == both
        [conflict] = reg.state(ITEM).conflicts
        assert (conflict.kind, conflict.chosen) == ("same_id", None)
        # a claimant's own slot never makes the owners' item conflicted
        assert reg.state(ITEM).state == "unknown"


_POOL = [
    raised(),
    raised("x"),
    settled("s1"),
    settled("x", rev=2, supersedes=["s1"]),
    claimed("s1"),
    claimed("x", context="other"),
    claimed("x", context="again"),
    rec("n1", "note", "agent", "helper-9", about={"key": "k1"}, note="reuses the need id"),
    rec("s1", "reopened", "principal", "alice-pa", supersedes=["x"]),
]


@given(st.permutations(_POOL), st.lists(st.sampled_from(_POOL), max_size=4))
@settings(max_examples=60, deadline=None)
def test_the_fold_is_order_free_with_ids_reused_across_owners(
    order: list[dict[str, Any]], again: list[Any]
) -> None:
    reference = registry()
    reference.add_many(_POOL)
    reg = registry()
    reg.add_many([*order, *again])
    assert reg.states() == reference.states()
    assert reg.conflicts() == reference.conflicts()
    lines = registry()
    lines.add_lines([handoff.digests.canonical(r) for r in [*again, *order]])
    assert lines.states() == reference.states()
