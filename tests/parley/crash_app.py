"""The example shop, made to SIGKILL its own server process at one step (crash tests).

``PARLEY_TEST_CRASH`` names the step: ``before_effect`` (the commit callable starts, no
order yet), ``after_effect`` (the order is placed, the callable has not returned),
``before_receipt`` (the callable returned, the receipt is not stored yet) and
``undo_after_effect`` (the order is cancelled, the undo receipt is not stored).
``PARLEY_TEST_NO_RECONCILE=1`` removes the shop's reconcilers. Loaded by ``parley serve
--app tests/parley/crash_app.py:build_service``.
"""

from __future__ import annotations

import importlib.util
import os
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import parley

_SHOP = Path(__file__).resolve().parents[2] / "examples" / "parley_shop.py"


def _load_shop() -> Any:
    spec = importlib.util.spec_from_file_location("parley_shop_for_crashes", _SHOP)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class _DiesBeforeReceipt:
    """A store that kills the process when asked to store a receipt."""

    def __init__(self, inner: parley.stores.Store) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def finish_commit(
        self, record: parley.stores.ReceiptRecord, *, now: int, owner: str | None = None
    ) -> bool:
        _die()
        return False


def build_service(
    *, trusted: Sequence[str], store: parley.stores.Store | None = None
) -> parley.Service:
    """The shop, with the crash of ``$PARLEY_TEST_CRASH`` wired in."""
    step = os.environ.get("PARLEY_TEST_CRASH", "")
    svc: parley.Service = _load_shop().build_service(trusted=trusted, store=store)
    cap = svc.capabilities["shop.order"]
    commit, undo = cap.commit, cap.undo
    assert commit is not None
    assert undo is not None

    def crashing_commit(proposal: dict[str, Any], ctx: parley.Context) -> Any:
        if step == "before_effect":
            _die()
        out = commit(proposal, ctx)
        if step == "after_effect":
            _die()
        return out

    def crashing_undo(receipt: dict[str, Any], ctx: parley.Context) -> Any:
        out = undo(receipt, ctx)
        if step == "undo_after_effect":
            _die()
        return out

    cap.commit, cap.undo = crashing_commit, crashing_undo
    if step == "before_receipt" and store is not None:
        svc.store = _DiesBeforeReceipt(store)  # type: ignore[assignment]
    if os.environ.get("PARLEY_TEST_NO_RECONCILE"):
        cap.reconcile = cap.reconcile_undo = None
    return svc
