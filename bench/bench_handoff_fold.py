"""Validate + fold throughput of Principal Handoff records, as a ratio to json.loads.

    python bench/bench_handoff_fold.py           100,000 records over 1,000 items
    python bench/bench_handoff_fold.py --full    1,000,000 records over 10,000 items

The baseline is ``json.loads`` of the same lines, measured in the same run. The measured
path is what a receiver does with a JSON Lines feed: strict parse (I-JSON), core and pair
schema checks (compiled validator), record rules, ownership and authority, then the fold
(``Registry.add_lines`` + ``states()``). Target: within 4x of ``json.loads``.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections.abc import Callable

import handoff

ROLES = handoff.Roles.from_json(
    {
        "principal": "alice",
        "principal_side": ["alice-pa"],
        "requesters": {"*": ["bot-1", "bot-2"]},
    }
)
EXTS = handoff.ExtensionRegistry(
    [
        handoff.Extension(
            "acts",
            "0.3",
            "act",
            outcomes=frozenset({"done", "declined"}),
            reasons=frozenset({"obsolete"}),
        )
    ]
)


def make_lines(total: int, items: int) -> list[str]:
    """Records of ``items`` items: a need chain, claims, notes and settlements per item."""
    per_item = total // items
    lines: list[str] = []
    for n in range(per_item):
        for k in range(items):
            base = {
                "ph": "0.3",
                "ext": "acts/0.3",
                "id": f"r-{k:05d}-{n:04d}",
                "project": f"proj-{k % 13}",
                "key": f"item-{k:05d}",
                "ts": "2026-10-27T10:00:00Z",
            }
            step = n % 10
            if n == 0:
                record = {
                    **base,
                    "type": "raised",
                    "origin": "requester",
                    "by": "bot-1",
                    "terms": {"text": f"Pay invoice {k}"},
                    "terms_rev": 1,
                }
            elif step in (3, 8):
                record = {
                    **base,
                    "type": "claimed",
                    "origin": "agent",
                    "by": "helper",
                    "outcome": "done",
                    "evidence": {"basis": "heard it"},
                }
            elif step == 6:
                record = {
                    **base,
                    "type": "note",
                    "origin": "agent",
                    "by": "helper",
                    "about": {"key": base["key"]},
                    "note": "the due date moved",
                }
            elif step == 5:
                record = {
                    **base,
                    "type": "settled",
                    "origin": "principal",
                    "by": "alice-pa",
                    "terms_rev": n,
                    "outcome": "done",
                    "authority": {"kind": "principal", "decider": "alice"},
                    "evidence": {"presented": "sha-256:" + "ab" * 32},
                }
                if n > 10:
                    record["supersedes"] = [f"r-{k:05d}-{n - 10:04d}"]
            else:
                prev = n - 1
                while prev % 10 in (3, 5, 6, 8) and prev > 0:
                    prev -= 1
                record = {
                    **base,
                    "type": "amended",
                    "origin": "requester",
                    "by": "bot-1",
                    "terms": {"text": f"Pay invoice {k}, revision {n}"},
                    "terms_rev": n + 1,
                    "supersedes": [f"r-{k:05d}-{prev:04d}"],
                }
            lines.append(json.dumps(record, separators=(",", ":")))
    return lines  # fmt: skip


def timed(fn: Callable[[], None]) -> float:
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="1,000,000 records, 10,000 items")
    parser.add_argument("--records", type=int, default=None, help="number of records")
    parser.add_argument("--runs", type=int, default=None, help="runs of each (best kept)")
    args = parser.parse_args()
    total = args.records or (1_000_000 if args.full else 100_000)
    items = max(1, total // 100)
    lines = make_lines(total, items)
    runs = args.runs or (2 if total >= 1_000_000 else 5)

    def baseline() -> None:
        loads = json.loads
        for line in lines:
            loads(line)

    def baseline_kept() -> None:
        loads = json.loads
        kept = [loads(line) for line in lines]
        del kept

    def validate_only() -> None:
        parse = handoff.parse_record
        check = handoff._check.admit_fast  # the hot path Registry.add_lines uses
        for line in lines:
            check(parse(line), ROLES, EXTS)

    states: dict[handoff.ItemId, handoff.ItemState] = {}

    def validate_and_fold() -> None:
        registry = handoff.Registry(roles=ROLES, extensions=EXTS)
        registry.add_lines(lines)
        states.update(registry.states())

    # interleave the runs and keep the best of each, so that load from other processes
    # hits the baseline and the measured path alike
    base = kept = checked = folded = float("inf")
    gc.disable()
    try:
        for _ in range(runs):
            base = min(base, timed(baseline))
            kept = min(kept, timed(baseline_kept))
            checked = min(checked, timed(validate_only))
            folded = min(folded, timed(validate_and_fold))
    finally:
        gc.enable()
    settled = sum(1 for s in states.values() if s.state == "settled")
    print(f"handoff: {len(lines):,} records over {items:,} items ({settled:,} settled)")
    print(f"  json.loads           {base:8.3f} s  {len(lines) / base:12,.0f} records/s  1.00x")
    print(f"  json.loads, kept     {kept:8.3f} s  {len(lines) / kept:12,.0f} records/s"
          f"  {kept / base:.2f}x  (parsed objects held, as a fold must)")  # fmt: skip
    print(
        f"  parse + validate     {checked:8.3f} s  {len(lines) / checked:12,.0f} records/s"
        f"  {checked / base:.2f}x"
    )
    print(f"  validate + fold      {folded:8.3f} s  {len(lines) / folded:12,.0f} records/s"
          f"  {folded / base:.2f}x  (target <= 4x)")  # fmt: skip


if __name__ == "__main__":
    main()
