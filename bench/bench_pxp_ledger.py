"""PXP ledger throughput: append and verify 100,000 entries against the plain floor.

The floor is what any implementation must at least do per entry: ``json.dumps(body,
sort_keys=True)`` plus one SHA-256, on the same entries. Ratios are ours divided by the
floor (lower is better; the target is at most 1.5x). Run: ``python bench/bench_pxp_ledger.py``
(``--entries N`` to change the size).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import pxp


def _specs(count: int) -> list[tuple[str, str, dict[str, Any]]]:
    specs: list[tuple[str, str, dict[str, Any]]] = []
    for i in range(count):
        at = f"2026-01-01T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}.000Z"
        if i % 5 == 4:
            data: dict[str, Any] = {"seat": "AB"[i % 2], "seq": i, "question_hash": f"{i:064x}"}
            specs.append(("escalation", at, data))
        else:
            data = {
                "seq": i,
                "seat": "AB"[i % 2],
                "status": "continue",
                "envelope_hash": f"{i:064x}",
            }
            specs.append(("envelope", at, data))
    return specs


def _floor_append(specs: list[tuple[str, str, dict[str, Any]]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    prev = "0" * 64
    for n, (kind, at, data) in enumerate(specs, start=1):
        body = {"n": n, "type": kind, "at": at, "data": data}
        digest = hashlib.sha256((prev + json.dumps(body, sort_keys=True)).encode()).hexdigest()
        out.append({**body, "prev": prev, "hash": digest})
        prev = digest
    return out


def _floor_verify(entries: list[dict[str, Any]]) -> str:
    prev = "0" * 64
    for e in entries:
        body = {"n": e["n"], "type": e["type"], "at": e["at"], "data": e["data"]}
        digest = hashlib.sha256((prev + json.dumps(body, sort_keys=True)).encode()).hexdigest()
        if e["prev"] != prev or digest != e["hash"]:
            raise SystemExit("floor verification failed")
        prev = digest
    return prev


def _ours_append(specs: list[tuple[str, str, dict[str, Any]]]) -> pxp.ledger.Ledger:
    ledger = pxp.ledger.Ledger()
    for kind, at, data in specs:
        ledger.append(kind, at, data)
    return ledger


def _best(fn: Any, arg: Any, rounds: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(rounds):
        start = time.perf_counter()
        result = fn(arg)
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    specs = _specs(args.entries)
    floor_append, floor_entries = _best(_floor_append, specs, args.rounds)
    ours_append, ledger = _best(_ours_append, specs, args.rounds)
    entries = ledger.to_json()
    floor_verify, _ = _best(_floor_verify, floor_entries, args.rounds)
    ours_verify, head = _best(pxp.verify_ledger, entries, args.rounds)
    assert head == ledger.head
    n = args.entries
    print(f"PXP ledger, {n:,} entries (best of {args.rounds})")
    print(f"{'':18}{'ours':>12}{'floor':>12}{'ratio':>8}")
    for label, ours, floor in (
        ("append", ours_append, floor_append),
        ("verify", ours_verify, floor_verify),
    ):
        print(f"{label:18}{n / ours:>10,.0f}/s{n / floor:>10,.0f}/s{ours / floor:>7.2f}x")
    total = (ours_append + ours_verify) / (floor_append + floor_verify)
    print(f"{'append + verify':18}{'':>24}{total:>7.2f}x  (target <= 1.50x)")


if __name__ == "__main__":
    main()
