"""Strict record parsing: is calling ``JSONDecoder.scan_once`` directly worth a CPython internal?

    python bench/bench_handoff_json.py

``handoff.parse_record`` decodes with a strict :class:`json.JSONDecoder` (duplicate members,
number ranges and constants refused by hooks). Issue 25 asks whether calling the decoder's
C scanner (``scan_once``, an undocumented attribute) buys more than 20%. Three ways run
here on the same lines with the same hooks, interleaved round by round with ``json.loads``
(no hooks) as the baseline, best and median ratios printed: ``scan_once`` (the shortcut as
it was), ``raw_decode`` (documented; what ``parse_record`` now runs) and ``decode``.

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
ROUNDS = 40
LINES = 2_000


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
            "terms": {
                "text": f"Pay invoice {n} of {n * 7 % 1000} EUR",
                "amount": str(n % 9999),
                "currency": "EUR",
            },
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


def raw_decode(text: str) -> Any:
    """The documented ``JSONDecoder.raw_decode``, ``decode`` only when it stops short."""
    try:
        value, end = _json._DECODER.raw_decode(text)
    except ValueError:
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


def ratios(paths: dict[str, Callable[[list[str]], object]], fresh: bool) -> None:
    """Time ``json.loads`` and every path on the same lines in each round (order rotating);
    print the best time per line and best and median ratios to the same round's baseline.

    ``fresh``: every round parses lines no round parsed before (cold); otherwise one line
    repeated (warm).
    """
    every = {"json.loads": _loads, **paths}
    names = list(every)
    times: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(ROUNDS):
        feed = FEED[round_ * LINES : (round_ + 1) * LINES] if fresh else [FEED[0]] * LINES
        for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
            times[name].append(timed(lambda n=name, f=feed: every[n](f)) / LINES * 1e6)
    base = times["json.loads"]
    print(f"  {'json.loads':16s} {min(base):6.2f} us/line (best)")
    for name in paths:
        rel = [t / b for t, b in zip(times[name], base, strict=True)]
        print(
            f"  {name:16s} {min(times[name]):6.2f} us/line (best)"
            f"  ratio best {min(rel):5.2f}x  median {statistics.median(rel):5.2f}x"
        )


def _loads(feed: list[str]) -> None:
    for line in feed:
        json.loads(line)


def _over(decoder: Callable[[str], Any]) -> Callable[[list[str]], None]:
    def run(feed: list[str]) -> None:
        for line in feed:
            decoder(line)

    return run


FEED: list[str] = []


def main() -> None:
    """Print the ratios (the report quotes them)."""
    FEED.extend(make_lines(LINES * ROUNDS))
    one = FEED[0]
    for name, decoder in (("scan_once", scan_once), ("raw_decode", raw_decode), ("decode", decode)):
        assert decoder(one) == json.loads(one), name
    print(f"handoff strict parse: {LINES:,} lines a round, {ROUNDS} interleaved rounds")
    decoders = {
        "scan_once": _over(scan_once),
        "raw_decode": _over(raw_decode),
        "decode": _over(decode),
    }
    print("cold (every line new)")
    ratios(decoders, fresh=True)
    print("warm (one line again and again)")
    ratios(decoders, fresh=False)
    print("handoff.parse_record as shipped (cold)")
    ratios({"parse_record": _over(handoff.parse_record)}, fresh=True)

    def add_lines(feed: list[str]) -> None:
        handoff.Registry(roles=ROLES, extensions=handoff.EXTENSIONS).add_lines(feed)

    print("end to end: Registry.add_lines (cold)")
    ratios({"add_lines": add_lines}, fresh=True)


if __name__ == "__main__":
    main()
