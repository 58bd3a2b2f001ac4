"""Vector operations of the Parley runtime: frame parsing and one request against a service.

``parley.runtime`` builds the declarative test service described in docs/vectors/
parley-runtime.md from the vector's ``service``, loads ``state`` into an empty memory
store, answers ``frame`` at ``now`` and returns every reply frame.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

import parley

from .._registry import handler


@handler("parley.frame_parse")
def frame_parse(input_: dict[str, Any]) -> dict[str, Any]:
    line = input_["line"]
    data = bytes.fromhex(line["hex"]) if isinstance(line, dict) else line
    return {
        "frame": parley.wire.parse_frame(data, limit=input_.get("limit", parley.wire.MAX_FRAME))
    }


def _rand() -> Any:
    counter = itertools.count(0)

    def rand(n: int) -> bytes:
        return bytes([next(counter) % 200 + 1]) * n

    return rand


def _crash(*_: Any) -> Any:
    raise RuntimeError("vector capability crashed: internal detail that must not leak")


def _refuse(spec: dict[str, Any]) -> None:
    refusal = spec.get("refuse")
    if refusal is not None:
        raise parley.ServiceError(
            refusal["code"],
            refusal["message"],
            fix=refusal.get("fix", ()),
            retry=refusal.get("retry"),
        )


def _add(svc: parley.Service, spec: dict[str, Any]) -> None:
    crash = spec.get("crash")

    def run(params: dict[str, Any], ctx: parley.Context) -> Any:
        if crash == "handler":
            _crash()
        _refuse(spec)
        if spec["kind"] == "ask":
            return copy.deepcopy(spec.get("answer"))
        ask = spec.get("clarify")
        if ask is not None and ask["param"] not in params:
            return parley.clarify(
                ask["question"], [(o["label"], o["params"]) for o in ask["options"]]
            )
        return [
            parley.offer(
                o["summary"],
                o.get("effects", []),
                cost=o.get("cost"),
                risk=o.get("risk"),
                undo=o.get("undo"),
                data=o.get("data"),
                ttl=o.get("ttl"),
            )
            for o in spec.get("offers", [])
        ]

    cap = parley.service.Capability(
        spec["name"],
        spec["kind"],
        run,
        summary=spec.get("summary"),
        params=spec.get("params"),
        risk=spec.get("risk"),
    )
    if spec["kind"] == "intent":

        def commit(proposal: dict[str, Any], ctx: parley.Context) -> Any:
            if crash == "commit":
                _crash()
            for event in spec.get("events", []):
                ctx.event(event["message"], event.get("progress"))
            return copy.deepcopy(spec.get("result"))

        def undo(receipt: dict[str, Any], ctx: parley.Context) -> Any:
            if crash == "undo":
                _crash()
            return copy.deepcopy(spec.get("undo_result"))

        cap.on_commit(commit)
        cap.on_undo(undo)
        settle = spec.get("reconcile")
        if settle is not None:  # the answer a crashed commit's or undo's reconciler gives

            def reconcile(proposal: dict[str, Any], ctx: parley.Context) -> parley.service.Outcome:
                if settle != "happened":
                    return parley.service.not_happened()
                return parley.service.happened(copy.deepcopy(spec.get("result")))

            def reconcile_undo(
                receipt: dict[str, Any], ctx: parley.Context
            ) -> parley.service.Outcome:
                if settle != "happened":
                    return parley.service.not_happened()
                return parley.service.happened(copy.deepcopy(spec.get("undo_result")))

            cap.on_reconcile(reconcile)
            cap.on_reconcile_undo(reconcile_undo)
    svc.add(cap)


@handler("parley.runtime")
def runtime(input_: dict[str, Any]) -> dict[str, Any]:
    spec, now = input_["service"], input_["now"]
    store = parley.stores.MemoryStore(**spec.get("limits", {}))
    svc = parley.Service(
        spec["id"],
        name=spec["name"],
        summary=spec.get("summary"),
        trusted=spec.get("trusted", []),
        store=store,
        rand=_rand(),
        proposal_ttl=spec.get("proposal_ttl", 600),
    )
    for cap in spec["capabilities"]:
        _add(svc, cap)
    parley.stores.load_state(store, input_.get("state", {}), now=now)
    frame = input_["frame"]
    replies = svc.handle(frame if isinstance(frame, dict) else frame.encode("utf-8"), now=now)
    out: dict[str, Any] = {"replies": replies}
    watch = input_.get("watch")
    if watch:
        out["spent"] = store.spent(watch)
    return out
