"""Vector operations of Parley's Lens and budgets: estimate, lean, lens, fit, EXPAND."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import parley

from .._registry import handler


def _handles(input_: dict[str, Any]) -> Callable[[], str]:
    pool = list(input_.get("handles", []))

    def take() -> str:
        if not pool:
            raise parley.ParleyError(
                "internal", "the vector supplies too few handles", reason="no_handles"
            )
        return str(pool.pop(0))

    return take


@handler("parley.estimate")
def estimate(input_: dict[str, Any]) -> dict[str, Any]:
    return {"est": parley.lens.estimate(input_["text"])}


@handler("parley.lean")
def lean(input_: dict[str, Any]) -> dict[str, Any]:
    return {"lens": parley.lens.lean(input_["value"])}


@handler("parley.lens")
def lens(input_: dict[str, Any]) -> dict[str, Any]:
    return {"lens": parley.lens.lens(input_["reply"])}


@handler("parley.fit")
def fit(input_: dict[str, Any]) -> dict[str, Any]:
    fitted, parked = parley.lens.fit(input_["reply"], input_["budget"], handles=_handles(input_))
    text = parley.lens.lens(fitted)
    return {"fitted": fitted, "parked": parked, "lens": text, "est": parley.lens.estimate(text)}


@handler("parley.expand_slice")
def expand_slice(input_: dict[str, Any]) -> dict[str, Any]:
    answer, parked = parley.lens.expand_slice(
        input_["value"], input_["budget"], handles=_handles(input_)
    )
    return {"answer": answer, "parked": parked, "lens": parley.lens.lens(answer)}


@handler("parley.expand")
def expand(input_: dict[str, Any]) -> dict[str, Any]:
    store = parley.lens.MemoryHandleStore()
    stored = input_["stored"]
    store.put(
        stored["handle"],
        stored["value"],
        key=stored["key"],
        now=stored["at"],
        ttl=stored.get("ttl", parley.lens.HANDLE_TTL),
    )
    request = input_["request"]
    answer = parley.lens.expand(
        store,
        request["handle"],
        request["budget"],
        key=request["key"],
        now=request["now"],
        handles=_handles(input_),
    )
    return {"answer": answer, "lens": parley.lens.lens(answer)}
