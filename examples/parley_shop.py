"""An example Parley service: a small coffee shop.

Capabilities: ``shop.search`` and ``shop.orders`` (ask), ``shop.order`` (intent: two
proposals, standard or express delivery, each with a cost and a 30-minute undo window;
an ambiguous item name gets a CLARIFY), and ``shop.gift_card`` (intent, irreversible and
medium risk: never auto-committed).

Run it: ``python examples/parley_shop.py parley://127.0.0.1:7447 --trust ed25519:...``
or as a child process over stdio (``stdio:python examples/parley_shop.py stdio: --trust
...``); the URL forms are those of ``parley serve``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

import parley

MENU = [
    {"sku": f"C{n:02d}", "name": name, "usd": 250 + 25 * n}
    for n, name in enumerate(
        ["espresso", "latte", "flat white", "cappuccino", "mocha", "cold brew", "iced latte"]
        + [f"seasonal blend {k}" for k in range(1, 54)]
    )
]
BY_SKU = {item["sku"]: item for item in MENU}


def build_service(
    *,
    trusted: Sequence[str],
    store: parley.Store | None = None,
    rand: Callable[[int], bytes] | None = None,
    clock: Callable[[], float] | None = None,
) -> parley.Service:
    """Return the shop service trusting the given principal keys."""
    extra: dict[str, Any] = {}
    if rand is not None:
        extra["rand"] = rand
    if clock is not None:
        extra["clock"] = clock
    svc = parley.Service(
        "shop.example",
        name="Example Coffee",
        summary="Order coffee for pickup or delivery.",
        trusted=trusted,
        store=store,
        **extra,
    )
    orders: dict[str, dict[str, Any]] = {}
    lock = threading.Lock()

    @svc.ask("shop.search", summary="Search the menu", params={"query?": "string"})
    def search(params: dict[str, Any], ctx: parley.Context) -> Any:
        query = (params.get("query") or "").lower()
        return {"items": [i for i in MENU if query in i["name"]]}

    @svc.ask("shop.orders", summary="Your orders")
    def list_orders(params: dict[str, Any], ctx: parley.Context) -> Any:
        with lock:
            return {"orders": [o for o in orders.values() if o["by"] == ctx.principal]}

    @svc.intent(
        "shop.order",
        summary="Order drinks",
        params={"item": "string — sku or name", "qty?": "int", "ship?": "pickup|delivery"},
        risk="low",
    )
    def order(params: dict[str, Any], ctx: parley.Context) -> Any:
        wanted = params["item"].lower()
        found = [i for i in MENU if wanted in (i["sku"].lower(), i["name"])]
        if not found:
            found = [i for i in MENU if wanted in i["name"]]
        if not found:
            raise parley.ServiceError(
                "invalid_params",
                f"nothing on the menu matches {params['item'][:40]!r}",
                fix=[{"say": "order a latte", "params": {"item": "latte"}}],
            )
        if len(found) > 1:
            options = [(i["name"], {"item": i["sku"]}) for i in found[:5]]
            return parley.clarify(f"Which {params['item'][:40]}?", options)
        item, qty = found[0], params.get("qty") or 1
        if not 1 <= qty <= 99:
            raise parley.ServiceError(
                "invalid_params",
                "`qty` must be between 1 and 99",
                fix=[{"say": "order one", "params": {"qty": 1}}],
            )
        offers = []
        for ship, fee, when in (("pickup", 0, "in 10 min"), ("delivery", 300, "in 40 min")):
            if params.get("ship") not in (None, ship):
                continue
            total = item["usd"] * qty + fee
            offers.append(
                parley.offer(
                    f"{qty} x {item['name']} ({ship}, {when})",
                    [
                        {"op": "create", "target": "order", "detail": f"{qty} x {item['sku']}"},
                        {"op": "charge", "target": "card on file", "to": total},
                    ],
                    cost=(total, "USD"),
                    undo=1800,
                    plan={"sku": item["sku"], "qty": qty, "ship": ship},
                )
            )
        return offers

    @order.on_commit
    def place(proposal: dict[str, Any], ctx: parley.Context) -> Any:
        ctx.event("sending the order to the barista", 0.5)
        with lock:
            number = f"o{len(orders) + 1}"
            orders[number] = {"order": number, **ctx.plan, "by": ctx.principal, "open": True}
        return {"order": number}

    @order.on_undo
    def cancel(receipt: dict[str, Any], ctx: parley.Context) -> Any:
        number = receipt["result"]["order"]
        with lock:
            if number in orders:  # this demo keeps orders in memory only
                orders[number]["open"] = False
        return {"cancelled": number, "refund": receipt["cost"]}

    @svc.intent(
        "shop.gift_card",
        summary="Send a gift card by email (cannot be undone)",
        params={"to": "string — email", "usd": "int"},
        risk="medium",
    )
    def gift(params: dict[str, Any], ctx: parley.Context) -> Any:
        if not 1 <= params["usd"] <= 500:
            raise parley.ServiceError(
                "invalid_params",
                "`usd` must be between 1 and 500",
                fix=[{"say": "send 25 USD", "params": {"usd": 25}}],
            )
        cents = params["usd"] * 100
        return [
            parley.offer(
                f"Send a {params['usd']} USD gift card to {params['to'][:60]}",
                [
                    {"op": "charge", "target": "card on file", "to": cents},
                    {"op": "send", "target": params["to"][:200], "detail": "gift card"},
                ],
                cost=(cents, "USD"),
                undo=None,
            )
        ]

    @gift.on_commit
    def send_gift(proposal: dict[str, Any], ctx: parley.Context) -> Any:
        return {"card": "g1"}

    return svc


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the shop on a URL (``parley://``, ``parleys://``, ``stdio:``, ``http://``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="where to serve, e.g. parley://127.0.0.1:7447 or stdio:")
    parser.add_argument("--trust", action="append", default=[], help="a trusted principal key")
    args = parser.parse_args(argv)
    service = build_service(trusted=args.trust)
    if args.url.startswith("stdio:"):
        parley.serve_stdio(service)
        return 0
    asyncio.run(parley.serve_forever(args.url, service))
    return 0


if __name__ == "__main__":
    sys.exit(main())
