"""A one-capability service for the replica tests: every replica places its orders in one
shared order book (``$PARLEY_TEST_ORDERS``, a SQLite file standing for the payment system
both replicas call), so any replica can reconcile a commit another one left in flight.

``PARLEY_TEST_DIE_AT=N`` makes the process SIGKILL itself right after the effect of its
N-th commit (the order is placed, the receipt not yet stored). Loaded by ``parley serve
--app tests/parley/replica_app.py:build_service``.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import signal
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import parley

_SHOP = Path(__file__).resolve().parents[2] / "examples" / "parley_shop.py"


def _orders(path: str) -> Any:
    spec = importlib.util.spec_from_file_location("parley_shop_for_replicas", _SHOP)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Orders(path)


def build_service(
    *, trusted: Sequence[str], store: parley.stores.Store | None = None
) -> parley.Service:
    """The service; its orders go to the shared book named by ``$PARLEY_TEST_ORDERS``."""
    orders = _orders(os.environ["PARLEY_TEST_ORDERS"])
    die_at = int(os.environ.get("PARLEY_TEST_DIE_AT", "0"))
    commits = itertools.count(1)
    lock = threading.Lock()
    svc = parley.Service(
        "shop.example", name="Replica shop", summary="Pay for things.", trusted=trusted, store=store
    )

    @svc.intent("pay", summary="Pay an amount", params={"cents": "int"}, risk="low")
    def pay(params: dict[str, Any], ctx: parley.Context) -> Any:
        cents = int(params["cents"])
        effects = [{"op": "charge", "target": "card on file", "to": cents}]
        return [parley.offer(f"pay {cents}", effects, cost=(cents, "USD"), plan={})]

    @pay.on_commit
    def charge(proposal: dict[str, Any], ctx: parley.Context) -> Any:
        assert ctx.idempotency_key is not None
        number = orders.place(ctx.idempotency_key, {"cents": proposal["cost"]["amount"]}, None)
        with lock:
            nth = next(commits)
        if nth == die_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return {"order": number}

    @pay.on_reconcile
    def charged(proposal: dict[str, Any], ctx: parley.Context) -> parley.service.Outcome:
        assert ctx.idempotency_key is not None
        found = orders.find(ctx.idempotency_key)
        return (
            parley.service.not_happened()
            if found is None
            else parley.service.happened({"order": found[0]})
        )

    return svc
