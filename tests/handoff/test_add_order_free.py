"""§10 ordering (second review L1): ``Registry.add`` answers the same as ``add_lines``, in any
order.

A repeat (an unsigned record at another ts, a signed one with other signature bytes) can
replace the held record by its lower-digest twin; ``add`` used to keep the state it had
cached before. Property: for every shuffle of records with repeats and rewrites, the
state after ``add`` one at a time equals the state of ``add_lines`` and of a fresh fold.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import handoff

from .ext_fixtures import TS, rec, registry

ITEM = handoff.ItemId("acts", "web", "k1")
A = rec("n1", "raised", "requester", "agent-1", "k1", terms={"text": "Pay k1"}, terms_rev=1)
A2 = dict(A, ts="2026-12-01T00:00:00Z")  # a repeat (unsigned: ts is not content)
B = dict(A, x=1)  # a rewrite
PROOF = "eyJhbGciOiJFZERTQSJ9.."


def _settled(sig: str, **more: Any) -> dict[str, Any]:
    return rec("s1", "settled", "principal", "alice-desk", "k1", terms_rev=1, outcome="done",
               authority={"kind": "principal", "decider": "alice"},
               evidence={"proof": PROOF + sig}, ts=TS, **more)  # fmt: skip


POOL = [A, A2, B, _settled("AAAA"), _settled("BBBB"), _settled("CCCC"), _settled("AAAA", y=2)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(range(len(POOL))), min_size=1, max_size=8))
def test_add_equals_add_lines_and_a_fresh_fold(picks: list[int]) -> None:
    records = [POOL[i] for i in picks]
    one = registry()
    for record in records:
        added = one.add(record)
        assert added.state == one.state(ITEM)
    bulk = registry()
    bulk.add_lines([json.dumps(r) for r in records])
    fresh = registry()
    for record in sorted(records, key=handoff.digests.digest):
        fresh.add(record)
    assert one.state(ITEM) == bulk.state(ITEM) == fresh.state(ITEM)
    assert one.records(ITEM) == bulk.records(ITEM) == fresh.records(ITEM)
