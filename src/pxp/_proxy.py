"""Proxies plugged into a room: the :class:`Proxy` interface, a scripted one, and a driver."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from ._room import Room, RoomView
from .errors import PxpError

__all__ = ["Answerer", "Proxy", "ScriptedPrincipal", "ScriptedProxy", "run_room"]

Step = Mapping[str, Any] | Callable[[RoomView], Mapping[str, Any]]


@runtime_checkable
class Proxy(Protocol):
    """An agent acting for one principal: given its seat's view, it returns the next draft.

    The draft holds the ``send_envelope`` fields (``message``, ``status``, ``claims``,
    ``reviews``, ``proposal``, ``escalation``). Built-in and external proxies go through
    the same :meth:`Room.send`, hence the same enforcement.
    """

    def next_envelope(self, view: RoomView) -> Mapping[str, Any]:
        """Return the next envelope draft for the seat of ``view``."""
        ...


@runtime_checkable
class Answerer(Protocol):
    """A human answering its proxy's escalation."""

    def answer(self, question: str, view: RoomView) -> str:
        """Return the principal's answer to ``question``."""
        ...


class ScriptedProxy:
    """A :class:`Proxy` that plays fixed steps in order (a draft or a function of the view)."""

    def __init__(self, steps: Iterable[Step]) -> None:
        self._steps = list(steps)
        self._next = 0

    @property
    def remaining(self) -> int:
        """How many steps are left."""
        return len(self._steps) - self._next

    def next_envelope(self, view: RoomView) -> Mapping[str, Any]:
        """Return the next scripted draft; ``script_exhausted`` when none is left."""
        if self._next >= len(self._steps):
            raise PxpError(
                "script_exhausted", f"the scripted proxy of seat {view.seat} has no step left"
            )
        step = self._steps[self._next]
        self._next += 1
        return step(view) if callable(step) else step


class ScriptedPrincipal:
    """A :class:`Answerer` that gives fixed answers in order."""

    def __init__(self, answers: Sequence[str]) -> None:
        self._answers = list(answers)
        self._next = 0

    def answer(self, question: str, view: RoomView) -> str:
        """Return the next scripted answer; ``script_exhausted`` when none is left."""
        if self._next >= len(self._answers):
            raise PxpError(
                "script_exhausted", f"the principal of seat {view.seat} has no answer left"
            )
        text = self._answers[self._next]
        self._next += 1
        return text


def run_room(
    room: Room,
    proxies: Mapping[str, Proxy],
    principals: Mapping[str, Answerer],
    *,
    clock: Callable[[], datetime],
    via: str = "web",
    max_steps: int = 1000,
) -> Room:
    """Drive a room while it can move without outside input; return it.

    The seat whose turn it is sends through its proxy; a pending escalation is answered by
    that seat's principal. The loop stops when the room is agreed or ended, or when the
    next move belongs to a seat with no proxy (or a principal not given) here: an external
    proxy's or principal's turn, for a server to wait on.
    """
    for _ in range(max_steps):
        if room.status in ("agreed", "ended"):
            return room
        if room.status == "paused":
            pending = room.pending
            assert pending is not None
            answerer = principals.get(pending.seat)
            if answerer is None:
                return room
            view = room.view(pending.seat)
            room.answer(pending.seat, answerer.answer(pending.question, view), now=clock(), via=via)
            continue
        if room.status != "active" or room.turn is None:
            raise PxpError("room_not_active", f"the room is {room.status}; seal both cards first")
        proxy = proxies.get(room.turn)
        if proxy is None:
            return room
        seat = room.turn
        room.send(seat, proxy.next_envelope(room.view(seat)), now=clock())
    raise PxpError("room_runaway", f"the room did not finish within {max_steps} steps")
