"""Validate + fold throughput of Principal Handoff records, as a ratio to json.loads.

    python bench/bench_handoff_fold.py           100,000 records over 1,000 items
    python bench/bench_handoff_fold.py --full    1,000,000 records over 10,000 items

The baseline is ``json.loads`` of the same lines (the parsed objects kept, as a fold must),
measured in the same run, interleaved with each measured path; best and median ratios.
Measured: what a receiver does with a JSON Lines feed (strict parse, core and pair
schemas, record rules, the extension's hook, ownership and authority, then the fold):

- with a narrow extension (no hook, core schemas);
- with the shipped ``acts/0.3`` extension, its hook and schemas, as the CLI runs it;
- with every record delivered again, re-serialised in JCS as the store writes it;
- the CLI's own path, ``handoff state FILE`` (in process, output discarded).

Evidence checks are measured apart: each item's settlement verdict (presented digest
recomputed, proof verified) against the raw Ed25519 checks it contains. Target: within
4x of ``json.loads``.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import gc
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ed25519
from joserfc.jwk import OKPKey

import handoff
from handoff._cli import main as main_cli

ROLES = handoff.Roles.from_json(
    {
        "principal": "alice",
        "principal_side": ["alice-pa"],
        "requesters": {"*": ["bot-1", "bot-2"]},
    }
)
SHIPPED_ROLES = handoff.Roles.from_json(
    {
        "principal": "alice",
        "principal_side": ["alice-pa"],
        "requesters": {"*": ["bot-1", "bot-2"]},
        "roles": {"registrar": ["registrar"]},
    }
)
TS = "2026-10-27T10:00:00Z"
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


def timed(fn: Callable[[], object]) -> float:
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def store_bodies(lines: list[str]) -> list[str]:
    """Each record again, re-serialised the way a store writes it (JCS): delivered twice."""
    return [handoff.digests.canonical(json.loads(line)).decode("utf-8") for line in lines]


def signed_feed(items: int) -> tuple[handoff.Registry, Any, list[dict[str, Any]]]:
    """``items`` acts, each settled with a real Ed25519 proof over a real presented digest."""
    key = dict(OKPKey.import_key(ed25519.Ed25519PrivateKey.from_private_bytes(bytes(32)))
               .as_dict(private=True))  # fmt: skip
    registry = handoff.Registry(roles=SHIPPED_ROLES, extensions=handoff.EXTENSIONS)
    settlements = []
    for k in range(items):
        item = handoff.ItemId("acts", "proj-0", f"item-{k:05d}")
        registry.add(handoff.make_raised(registry, item, {"text": f"Pay invoice {k}"},
                                         by="bot-1", ts=TS))  # fmt: skip
        record = handoff.make_settlement(registry, item, "done", by="alice-pa", ts=TS)
        settlements.append(handoff.attach_proof(record, key))
    for record in settlements:
        registry.add(record)
    side = handoff.PrincipalSide(jwks=handoff.public_jwks(key), verifiable=True)
    return registry, side, settlements


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="1,000,000 records, 10,000 items")
    parser.add_argument("--records", type=int, default=None, help="number of records")
    parser.add_argument("--runs", type=int, default=None, help="interleaved rounds")
    args = parser.parse_args()
    total = args.records or (1_000_000 if args.full else 100_000)
    items = max(1, total // 100)
    lines = make_lines(total, items)
    doubled = lines + store_bodies(lines)
    runs = args.runs or (3 if total >= 1_000_000 else 7)
    tmp = tempfile.TemporaryDirectory()
    path = Path(tmp.name) / "records.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = Path(tmp.name) / "config.json"
    config.write_text(json.dumps({"roles": SHIPPED_ROLES.to_json()}), encoding="utf-8")

    def loads(feed: list[str]) -> Callable[[], None]:
        def run() -> None:
            decode = json.loads
            kept = [decode(line) for line in feed]  # parsed objects held, as a fold must
            del kept

        return run

    def fold(feed: list[str], roles: handoff.Roles, exts: handoff.ExtensionRegistry) -> Any:
        def run() -> None:
            registry = handoff.Registry(roles=roles, extensions=exts)
            registry.add_lines(feed)
            registry.states()

        return run

    def cli() -> None:
        with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
            main_cli(["state", str(path), "--config", str(config)])

    cases: dict[str, tuple[Callable[[], None], Callable[[], None], str]] = {
        "narrow extension (no hook)": (fold(lines, ROLES, EXTS), loads(lines), "lines"),
        "shipped acts/0.3 (hook, schemas)": (
            fold(lines, SHIPPED_ROLES, handoff.EXTENSIONS), loads(lines), "lines"),
        "acts/0.3, each record again as the store writes it": (
            fold(doubled, SHIPPED_ROLES, handoff.EXTENSIONS), loads(doubled), "lines x2"),
        "the CLI: handoff state FILE": (cli, loads(lines), "lines"),
    }  # fmt: skip
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    gc.disable()
    try:
        for _ in range(runs):
            # interleaved: every round measures each path right beside its own baseline
            for name, (measured, baseline, _) in cases.items():
                times[name].append((timed(baseline), timed(measured)))
    finally:
        gc.enable()
    print(f"handoff fold: {len(lines):,} records over {items:,} items, {runs} interleaved rounds")
    print("  ratio to json.loads of the same lines (objects kept); target <= 4x")
    for name, rounds in times.items():
        # each round's ratio is its path against the baseline measured right beside it
        ratios = sorted(m / b for b, m in rounds)
        best = min(m for _, m in rounds)
        middle = statistics.median(ratios)
        print(f"  {name:52s} best {ratios[0]:5.2f}x  median {middle:5.2f}x"
              f"  ({len(lines) / best:,.0f} records/s)")  # fmt: skip
    tmp.cleanup()

    # evidence checks, measured apart: every settlement's verdict (presented digest, proof)
    # against the raw signature checks they contain (Ed25519 over the signing input)
    n = max(10, min(2_000, items))
    registry, side, settlements = signed_feed(n)
    public = ed25519.Ed25519PrivateKey.from_private_bytes(bytes(32)).public_key()
    inputs = []
    for record in settlements:
        head, _, signature = record["evidence"]["proof"].split(".")
        payload = base64.urlsafe_b64encode(handoff.digests.signing_input(record)).rstrip(b"=")
        inputs.append((f"{head}.".encode() + payload, _unb64(signature)))

    def raw() -> None:
        for message, signature in inputs:
            public.verify(signature, message)

    def verdicts() -> None:
        for item in registry.items():
            checked = handoff.settlement_evidence(registry, item, side)
            assert checked is not None
            assert checked.verdict == "verified"

    pairs = []
    for _ in range(runs):
        pairs.append((timed(raw), timed(verdicts)))
    ratios = sorted(m / b for b, m in pairs)
    best = ratios[0]
    print(f"evidence: {n:,} settlements, verdict vs the raw Ed25519 checks they contain")
    middle = statistics.median(ratios)
    print(f"  settlement_evidence per item   best {best:5.2f}x  median {middle:5.2f}x")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


if __name__ == "__main__":
    main()
