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
import json
import sqlite3
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypedDict

import parley


class MenuItem(TypedDict):
    """One drink: its stock-keeping unit, name and price in US cents."""

    sku: str
    name: str
    usd: int


MENU: list[MenuItem] = [
    {"sku": f"C{n:02d}", "name": name, "usd": 250 + 25 * n}
    for n, name in enumerate(
        ["espresso", "latte", "flat white", "cappuccino", "mocha", "cold brew", "iced latte"]
        + [f"seasonal blend {k}" for k in range(1, 54)]
    )
]
BY_SKU = {item["sku"]: item for item in MENU}


class Orders:
    """The shop's own record of orders, keyed by the committing proposal's id.

    Placing an order and remembering which proposal placed it are one SQLite transaction,
    so after a crash the reconciler can say for sure whether a commit's order exists. With
    ``path`` ``None`` the orders live in memory (tests, the demo).
    """

    def __init__(self, path: str | None = None) -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            path or ":memory:", isolation_level=None, check_same_thread=False
        )
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS orders (proposal TEXT PRIMARY KEY, number TEXT NOT NULL,"
            " plan TEXT NOT NULL, by TEXT, open INTEGER NOT NULL)"
        )

    def place(self, proposal: str, plan: dict[str, Any], by: str | None) -> str:
        """Place the order of ``proposal`` once; return its number (the same on a retry)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                row = self._db.execute(
                    "SELECT number FROM orders WHERE proposal = ?", (proposal,)
                ).fetchone()
                if row is None:
                    (count,) = self._db.execute("SELECT COUNT(*) FROM orders").fetchone()
                    row = (f"o{count + 1}",)
                    self._db.execute(
                        "INSERT INTO orders VALUES (?, ?, ?, ?, 1)",
                        (proposal, row[0], json.dumps(plan), by),
                    )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
            return str(row[0])

    def find(self, proposal: str) -> tuple[str, bool] | None:
        """``(number, open)`` of the order placed by ``proposal``, or ``None``."""
        with self._lock:
            row = self._db.execute(
                "SELECT number, open FROM orders WHERE proposal = ?", (proposal,)
            ).fetchone()
        return None if row is None else (str(row[0]), bool(row[1]))

    def cancel(self, number: str) -> None:
        """Close an order (idempotent)."""
        with self._lock:
            self._db.execute("UPDATE orders SET open = 0 WHERE number = ?", (number,))

    def of(self, by: str | None) -> list[dict[str, Any]]:
        """The orders placed for principal ``by``."""
        with self._lock:
            rows = self._db.execute(
                "SELECT number, plan, by, open FROM orders ORDER BY rowid"
            ).fetchall()
        return [
            {"order": n, **json.loads(plan), "by": who, "open": bool(is_open)}
            for n, plan, who, is_open in rows
            if who == by
        ]

    def count(self) -> int:
        """How many orders were ever placed."""
        with self._lock:
            (count,) = self._db.execute("SELECT COUNT(*) FROM orders").fetchone()
        return int(count)


def build_service(
    *,
    trusted: Sequence[str],
    store: parley.stores.Store | None = None,
    rand: Callable[[int], bytes] | None = None,
    clock: Callable[[], float] | None = None,
) -> parley.Service:
    """Return the shop service trusting the given principal keys.

    ``store`` is the service state (``parley serve`` passes the one its ``--state`` names);
    with a :class:`parley.stores.SQLiteStore`, the shop keeps its orders durably beside it
    (``<state file>.orders``), so a crashed commit can be reconciled after a restart.
    """
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
    orders = Orders(
        store.path + ".orders" if isinstance(store, parley.stores.SQLiteStore) else None
    )
    svc.orders = orders  # type: ignore[attr-defined]  # for tests and operators

    @svc.ask("shop.search", summary="Search the menu", params={"query?": "string"})
    def search(params: dict[str, Any], ctx: parley.Context) -> Any:
        query = (params.get("query") or "").lower()
        return {"items": [i for i in MENU if query in i["name"]]}

    @svc.ask("shop.orders", summary="Your orders")
    def list_orders(params: dict[str, Any], ctx: parley.Context) -> Any:
        return {"orders": orders.of(ctx.principal)}

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
        assert ctx.idempotency_key is not None
        return {"order": orders.place(ctx.idempotency_key, ctx.plan, ctx.principal)}

    @order.on_reconcile
    def placed(proposal: dict[str, Any], ctx: parley.Context) -> parley.service.Outcome:
        assert ctx.idempotency_key is not None
        found = orders.find(ctx.idempotency_key)
        return (
            parley.service.not_happened()
            if found is None
            else parley.service.happened({"order": found[0]})
        )

    @order.on_undo
    def cancel(receipt: dict[str, Any], ctx: parley.Context) -> Any:
        number = receipt["result"]["order"]
        orders.cancel(number)
        return {"cancelled": number, "refund": receipt["cost"]}

    @order.on_reconcile_undo
    def cancelled(receipt: dict[str, Any], ctx: parley.Context) -> parley.service.Outcome:
        found = orders.find(receipt["proposal"])
        if found is None or found[1]:
            return parley.service.not_happened()
        return parley.service.happened({"cancelled": found[0], "refund": receipt["cost"]})

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
        parley.net.serve_stdio(service)
        return 0
    asyncio.run(parley.serve_forever(args.url, service))
    return 0


if __name__ == "__main__":
    sys.exit(main())
