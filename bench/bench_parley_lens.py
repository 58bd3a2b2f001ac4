"""Parley Lens and budgets: size against JSON, fitting cost, lean speed.

    python bench/bench_parley_lens.py [--quick]

Prints, for a 60-item menu and for a mixed nested reply, the Lens size in estimated tokens
(SPEC.md section 8) against minified and pretty JSON; the cost of fitting a 10,000-row
answer to 2,000 tokens as a multiple of one Lens render of that answer (shipped fitter
and the plain reference loop); and lean() speed against json.dumps of the same value.
Every figure is a ratio against a baseline measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import parley
from parley._fit_oracle import fit_oracle


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


def sizes(label: str, value: Any, text: str) -> None:
    lens_t = parley.estimate(text)
    mini = parley.estimate(json.dumps(value, separators=(",", ":"), ensure_ascii=False))
    pretty = parley.estimate(json.dumps(value, indent=2, ensure_ascii=False))
    print(
        f"{label:28s} Lens {lens_t:6d} tokens | minified JSON {mini:6d} "
        f"({mini / lens_t:.2f}x) | pretty JSON {pretty:6d} ({pretty / lens_t:.2f}x)"
    )


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    repeat = 3 if args.quick else 7
    workloads: list[tuple[str, dict[str, Any], Any, int]] = []
    items = menu()
    workloads.append(("60-item menu", {"kind": "ANSWER", "data": {"items": items}}, None, 300))
    nested = nested_reply()
    workloads.append(("mixed nested reply", nested, None, 300))
    rows = rows_10k()
    workloads.append(("10,000-row answer", {"kind": "ANSWER", "data": {"rows": rows}}, None, 2000))

    print("== Lens size (estimated tokens, SPEC.md section 8) ==")
    for label, reply, _, _ in workloads:
        body = reply["data"] if reply["kind"] == "ANSWER" else reply
        sizes(label, body, parley.lens(reply))

    print("\n== Fitting cost, as a multiple of one Lens render of the same reply ==")
    for label, reply, _, budget in workloads:
        render = best_of(lambda r=reply: parley.lens(r), repeat)
        fast = best_of(
            lambda r=reply, b=budget: parley.fit(r, b, handles=parley.new_handle), repeat
        )
        plain = best_of(
            lambda r=reply, b=budget: fit_oracle(r, b, handles=parley.new_handle),
            1 if args.quick else 2,
        )
        fitted, _ = parley.fit(reply, budget, handles=parley.new_handle)
        got = parley.estimate(parley.lens(fitted))
        print(
            f"{label:20s} budget {budget:5d} -> {got:5d} | render {render * 1000:7.2f} ms "
            f"(baseline) | fit {fast / render:5.2f}x | plain loop {plain / render:6.2f}x"
        )
    print("(target: the 10,000-row answer fitted to 2,000 tokens costs <= 5x one render)")

    print("\n== lean() against json.dumps of the same value ==")
    for label, reply, _, _ in workloads:
        value = reply["data"] if reply["kind"] == "ANSWER" else reply
        base = best_of(lambda v=value: json.dumps(v), repeat)
        ours = best_of(lambda v=value: parley.lean(v), repeat)
        print(
            f"{label:20s} json.dumps {base * 1000:7.2f} ms (baseline) | lean "
            f"{ours * 1000:7.2f} ms = {ours / base:5.1f}x"
        )


if __name__ == "__main__":
    main()
