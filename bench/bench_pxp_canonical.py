"""Does PXP's canonical JSON need CPython's private C encoder? (issue 25, DESIGN.md "Speed
without hidden state").

``pxp``'s canonical form first tries a C-speed encoding and falls back to its own writer only
for values the C encoder cannot write as JavaScript does. The fast path can be built two ways:

* **public**: ``json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
  allow_nan=False, check_circular=False).encode``, the documented API (it builds the C
  encoder inside ``encode`` on every call);
* **internal**: ``json.encoder.c_make_encoder`` called positionally once, the encoder object
  kept and called directly (an undocumented CPython internal).

Both run here side by side on the same values, interleaved round by round, with
``json.dumps(value, sort_keys=True, separators=(",", ":"))`` as the baseline every ratio is
divided by (the work any implementation must do). Workloads: ledger entry bodies, and
``verify_ledger`` of a 60-entry room ledger (what a store load and an import pay). Cold
inputs are fresh objects with unique strings on every call; warm ones are the same object
again. The internal path is kept (in ``src/pxp/_fast.py``) only if it is more than 20%
faster than the public one on these; the run prints the verdict.

Run: ``python bench/bench_pxp_canonical.py [--rounds N]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import json.encoder

import pxp
import pxp._canonical as canonical_module

_STRING = json.encoder.encode_basestring
_INTERNAL: Any = json.encoder.c_make_encoder(  # type: ignore[attr-defined]
    None, lambda v: (_ for _ in ()).throw(TypeError()), _STRING, None, ":", ",", True, False, False
)
_PUBLIC = json.JSONEncoder(
    sort_keys=True,
    separators=(",", ":"),
    ensure_ascii=False,
    allow_nan=False,
    check_circular=False,
).encode


def internal(value: Any) -> str:
    """The fast path on the positional C encoder."""
    return "".join(_INTERNAL(value, 0))


def public(value: Any) -> str:
    """The fast path on the documented encoder."""
    return _PUBLIC(value)


def baseline(value: Any) -> str:
    """The work any implementation must do: one json.dumps with sorted keys."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


LEDGERS = 10
"""Ledgers verified per timed sample (each of 31 entries)."""


def _floor(entry: dict[str, Any]) -> str:
    """Per entry, what any verifier must do: encode the body, hash prev + body."""
    body = {k: entry[k] for k in ("n", "type", "at", "data")}
    return hashlib.sha256((entry["prev"] + baseline(body)).encode()).hexdigest()


def _body(i: int, tag: str) -> dict[str, Any]:
    return {
        "at": f"2026-01-01T00:00:{i % 60:02d}.000Z",
        "data": {
            "seq": i,
            "seat": "AB"[i % 2],
            "status": "continue",
            "envelope_hash": f"{tag}{i:060x}",
        },
        "n": i,
        "type": "envelope",
    }


def _ledger(tag: str) -> list[dict[str, Any]]:
    room = pxp.Room.open("bench-" + tag, topic=f"Bench {tag}", now=_NOW, max_turns=100)
    room.seal(
        "A", {"principal": {"name": "Ana " + tag}, "goal": "Sell", "must_haves": ["x"]}, now=_NOW
    )
    room.seal(
        "B", {"principal": {"name": "Bo " + tag}, "goal": "Buy", "must_haves": ["y"]}, now=_NOW
    )
    for i in range(28):
        room.send("AB"[i % 2], {"message": f"{tag} {i}", "status": "continue"}, now=_NOW)
    return room.export()["ledger"]


_NOW = __import__("datetime").datetime(2026, 1, 1, tzinfo=__import__("datetime").UTC)


def _time(call: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    call()
    return time.perf_counter() - t0


def main() -> int:
    """Print best and median of interleaved rounds, cold and warm, as ratios to json.dumps."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    per = 6000
    warm_bodies = [_body(i, "w") for i in range(per)]
    warm_ledger = _ledger("warm")
    results: dict[tuple[str, str], list[float]] = {}

    def record(key: tuple[str, str], seconds: float) -> None:
        results.setdefault(key, []).append(seconds)

    for r in range(args.rounds):
        cold = [_body(i, f"c{r:03d}") for i in range(per)]
        cold_ledgers = {
            name: [_ledger(f"{name}{r}-{k}") for k in range(LEDGERS)]
            for name in ("internal", "public")
        }
        for name, encode in (("baseline", baseline), ("internal", internal), ("public", public)):
            record((f"bodies cold {name}", ""), _time(lambda e=encode, c=cold: [e(b) for b in c]))
            record((f"bodies warm {name}", ""), _time(lambda e=encode: [e(b) for b in warm_bodies]))
        for name, encode in (("internal", internal), ("public", public)):
            canonical_module._fast = encode  # the one switch: which fast path canonical() uses
            ledgers = cold_ledgers[name]
            record(
                (f"verify_ledger cold {name}", ""),
                _time(lambda ls=ledgers: [pxp.verify_ledger(x) for x in ls]),
            )
            record(
                (f"verify_ledger warm {name}", ""),
                _time(lambda: [pxp.verify_ledger(warm_ledger) for _ in range(LEDGERS)]),
            )
        base = [e for x in cold_ledgers["internal"] for e in x]
        record(("verify_ledger cold baseline", ""), _time(lambda b=base: [_floor(e) for e in b]))
        record(
            ("verify_ledger warm baseline", ""),
            _time(lambda: [_floor(e) for _ in range(LEDGERS) for e in warm_ledger]),
        )
    server: list[float] = []
    for workload in ("bodies cold", "bodies warm", "verify_ledger cold", "verify_ledger warm"):
        floor = min(results[(f"{workload} baseline", "")])
        line = [f"{workload:20s}"]
        for name in ("internal", "public"):
            times = results[(f"{workload} {name}", "")]
            best, median = min(times) / floor, statistics.median(times) / floor
            line.append(f"{name} best {best:5.2f}x median {median:5.2f}x")
        gain = 1 - min(results[(f"{workload} internal", "")]) / min(
            results[(f"{workload} public", "")]
        )
        if workload.startswith("verify_ledger"):
            server.append(gain)
        line.append(f"internal saves {gain:+.0%} of public")
        print("  ".join(line))
    # what a server sees is the verification of whole ledgers, not the encoder call alone
    keep = min(server) > 0.20
    verdict = "keep" if keep else "drop"
    print(f"verdict: {verdict} the internal encoder (verify_ledger saving {min(server):+.0%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
