"""No public result object reads as true on failure (issue 25).

Every public dataclass of the distribution with a field that says how a check went (``ok``,
``valid``, ``passed``, ``failure``, ``error``, ``verdict``, or a ``status`` that can say
"failed"/"rejected") must refuse ``bool()``; the few classes whose ``status`` is a state, not
a verdict, are named here with the reason.
"""

from __future__ import annotations

import dataclasses
import inspect

from tests.public_surface import public_modules

PACKAGES = ("handoff", "parley", "ppbind", "ppcheck", "ppstore", "pxp", "vxp")
VERDICT_FIELDS = {"ok", "valid", "passed", "failed", "failure", "error", "errors", "verdict"}
STATE_FIELDS = {"status", "outcome"}
NOT_REPORTS = {
    "pxp.RoomView": "its status is the room's state (open, agreed, ...), not a check's answer",
    "pxp.SendResult": "what Room.send stored; a refused send raises instead",
    "handoff.ItemState": "an item's folded state; its outcome is the principal's settlement",
    "handoff.Record": "a record as written; its outcome is the settlement it carries",
}


def _classes() -> dict[str, type]:
    found: dict[str, type] = {}
    for package in PACKAGES:
        for module in public_modules(package):
            for name in module.__all__:
                value = getattr(module, name)
                if inspect.isclass(value) and dataclasses.is_dataclass(value):
                    found.setdefault(f"{module.__name__}.{name}", value)
    return found


def _refuses_bool(cls: type) -> bool:
    return any("__bool__" in vars(c) for c in cls.__mro__ if c is not object)


def test_every_report_refuses_a_truth_value() -> None:
    """A public dataclass carrying a verdict defines ``__bool__`` (which raises)."""
    unguarded = [
        name
        for name, cls in _classes().items()
        if {f.name for f in dataclasses.fields(cls)} & (VERDICT_FIELDS | STATE_FIELDS)
        and name not in NOT_REPORTS
        and not _refuses_bool(cls)
    ]
    assert not unguarded, f"reports without a __bool__ guard: {unguarded}"


def test_the_exceptions_are_still_public_and_still_unguarded() -> None:
    """Each named exception exists and still has no guard (else drop it from the list)."""
    classes = _classes()
    for name in NOT_REPORTS:
        assert name in classes, name
        assert not _refuses_bool(classes[name]), name


def test_the_guards_raise() -> None:
    """The guard raises ``TypeError`` rather than answering, for every guarded report."""
    for name, cls in _classes().items():
        guard = next((vars(c)["__bool__"] for c in cls.__mro__ if "__bool__" in vars(c)), None)
        if guard is None:
            continue
        try:
            guard(object.__new__(cls))
        except TypeError:
            continue
        raise AssertionError(f"{name}.__bool__ answered instead of raising")
