"""Strict record parsing: is calling ``JSONDecoder.scan_once`` directly worth a CPython internal?

    python bench/bench_handoff_json.py

``handoff.parse_record`` decodes with a strict :class:`json.JSONDecoder` (duplicate members,
number ranges and constants refused by hooks). Issue 25 asks whether calling the decoder's
C scanner (``scan_once``, an undocumented attribute) instead of ``decode`` buys more than
20%. Both decoders run here on the same lines with the same hooks, interleaved round by
round with ``json.loads`` (no hooks) as the baseline; best and median ratios are printed.

- cold: every call parses a line never parsed before (fresh ids, texts and digests);
- warm: the same line parsed over and over;
- end to end: ``Registry.add_lines`` of the feed, the path a receiver runs, where the
  parse is one step among schema checks and the fold.
"""

from __future__ import annotations

import gc
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import handoff
from handoff import _json

ROLES = handoff.Roles.from_json(
    {"principal": "alice", "principal_side": ["alice-pa"], "requesters": {"*": ["bot-1"]}}
)
ROUNDS = 15
LINES = 40_000


def make_lines(total: int) -> list[str]:
    """Distinct raised records of about 300 bytes (an id, a key and a text of their own)."""
    out = []
    for n in range(total):
        record = {
            "ph": "0.3",
            "ext": "acts/0.3",
            "id": f"n-{n:08d}",
            "type": "raised",
            "origin": "requester",
            "by": "bot-1",
            "project": f"proj-{n % 13}",
            "key": f"item-{n:08d}",
            "ts": "2026-10-27T10:00:00Z",
            "terms": {"text": f"Pay invoice {n} of {n * 7 % 1000} EUR", "amount": str(n % 9999), "currency": "EUR"},
            "terms_rev": 1,
        }
        out.append(json.dumps(record, separators=(",", ":")))
    return out


_SCAN: Callable[[str, int], tuple[Any, int]] = _json._DECODER.scan_once  # type: ignore[attr-defined]


def scan_once(text: str) -> Any:
    """The shortcut: the C scanner directly, ``decode`` only when it stops short."""
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:
        end = -1
    if end != len(text):
        value = _json._DECODER.decode(text)
    return value


def decode(text: str) -> Any:
    """The documented call: ``JSONDecoder.decode``."""
    return _json._DECODER.decode(text)


def timed(fn: Callable[[], object]) -> float:
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def ratios(paths: dict[str, Callable[[], object]], base: Callable[[], object]) -> None:
    """Time the baseline and every path in each round (order rotating); print best and
    median ratios to the baseline of the same round, and the best time per line."""
    got: dict[str, list[float]] = {name: [] for name in paths}
    best: dict[str, float] = {name: float("inf") for name in ("json.loads", *paths)}
    names = list(paths)
    for round_ in range(ROUNDS):
        order = names[round_ % len(names) :] + names[: round_ % len(names)]
        b = timed(base)
        best["json.loads"] = min(best["json.loads"], b)
        for name in order:
            t = timed(paths[name])
            best[name] = min(best[name], t)
            got[name].append(t / b)
    print(f"  {'json.loads':44s} {best['json.loads'] / LINES * 1e6:6.2f} us/line")
    for name, values in got.items():
        print(
            f"  {name:44s} {best[name] / LINES * 1e6:6.2f} us/line"
            f"  best {min(values):5.2f}x  median {statistics.median(values):5.2f}x"
        )


def main() -> None:
    """Print the ratios (the report quotes them)."""
    lines = make_lines(LINES)
    one = lines[0]
    print(f"handoff strict parse: {LINES:,} lines, {ROUNDS} interleaved rounds, ratio to json.loads")
    for name, decoder in (("scan_once", scan_once), ("decode", decode)):
        assert decoder(one) == json.loads(one), name

    def cold(decoder: Callable[[str], Any]) -> Callable[[], None]:
        def run() -> None:
            for line in lines:
                decoder(line)

        return run

    def warm(decoder: Callable[[str], Any]) -> Callable[[], None]:
        def run() -> None:
            for _ in range(LINES):
                decoder(one)

        return run

    print("cold (every line new)")
    ratios({"scan_once": cold(scan_once), "decode": cold(decode)}, cold(json.loads))
    print("warm (one line again and again)")
    ratios({"scan_once": warm(scan_once), "decode": warm(decode)}, warm(json.loads))
    print("handoff.parse_record as shipped (cold)")
    ratios({"parse_record": cold(handoff.parse_record)}, cold(json.loads))

    def add_lines() -> None:
        handoff.Registry(roles=ROLES, extensions=handoff.EXTENSIONS).add_lines(lines)

    print("end to end: Registry.add_lines (cold)")
    ratios({"add_lines": add_lines}, cold(json.loads))


if __name__ == "__main__":
    main()
