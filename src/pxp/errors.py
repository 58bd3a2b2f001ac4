"""The errors of :mod:`pxp`: one table of codes, a usage error and a protocol error.

Every error :mod:`pxp` raises is a :class:`PxpError` (a :class:`ValueError`) carrying a
stable machine ``code`` from :data:`CODES` (rendered in ``docs/codes/pxp.md``), an optional
finer ``reason`` and one sentence saying what was wrong and where. The table decides the
class:

* :class:`PxpUsageError`: the caller's own mistake (a naive ``now``, a bad option or
  configuration, a store that cannot be opened);
* :class:`PxpProtocolError`: the data came from a peer and is bad (a card, an envelope, a
  ledger, a room export, a link, an action out of turn), whatever its Python type.

:class:`LedgerError` is the protocol error of a ledger that failed verification; it adds
``index``, the first bad entry.

.. code-block:: python

    try:
        room.send("B", draft, now=now)
    except pxp.PxpProtocolError as exc:   # the proxy's envelope or timing is at fault
        reply(exc.code, exc.message)
"""

from __future__ import annotations

from _ppcodes import Code, CodedError, CodeTable, Kind

__all__ = ["CODES", "LedgerError", "PxpError", "PxpProtocolError", "PxpUsageError"]

_U: Kind = "usage"
_P: Kind = "protocol"

CODES = CodeTable(
    "pxp",
    [
        # call: what the caller passes that is not protocol data
        Code("time_invalid", _U, "call", "A time is not a timezone-aware datetime."),
        Code("via_invalid", _U, "call", "`via` is not `web` or `mcp`."),
        Code("mode_invalid", _U, "call", "A join's `mode` is not `builtin` or `external`."),
        Code(
            "room_invalid", _U, "call", "Room.open got a bad id, topic, max_turns, name or token."
        ),
        Code(
            "head_invalid", _U, "call", "The expected ledger head is not 64 lowercase hex digits."
        ),
        Code(
            "ledger_append",
            _U,
            "call",
            "Ledger.append got an entry type, time or data of the wrong type.",
        ),
        Code("config_invalid", _U, "call", "A server or store configuration value is invalid."),
        Code("random_invalid", _U, "call", "The randomness source returned something unusable."),
        Code("schema_unknown", _U, "call", "No schema of that name ships with pxp."),
        Code("schemas_missing", _U, "call", "The package's JSON Schemas are not installed."),
        Code("extra_missing", _U, "call", "An optional extra the feature needs is not installed."),
        Code("script_exhausted", _U, "call", "A scripted proxy or principal ran out of lines."),
        Code("room_not_active", _U, "call", "run_room was given a room that is not negotiating."),
        Code("room_runaway", _U, "call", "run_room stopped a room that would not finish."),
        Code("file_unreadable", _U, "cli", "A file named on the command line cannot be read."),
        Code("json_invalid", _U, "cli", "A file named on the command line is not JSON."),
        Code("listen_failed", _U, "cli", "The server cannot listen on the host and port given."),
        # parse: the shape of protocol data
        Code(
            "canonical_invalid",
            _P,
            "parse",
            "A value cannot be carried faithfully as canonical JSON.",
        ),
        Code("card_invalid", _P, "parse", "An intent card is malformed or over a limit."),
        Code("envelope_invalid", _P, "parse", "An envelope or envelope draft is malformed."),
        Code("proposal_invalid", _P, "parse", "Proposal terms are not a list of strings."),
        Code("answer_invalid", _P, "parse", "A principal's answer or its `confirms` is invalid."),
        Code("agent_invalid", _P, "parse", "An agent name is empty, too long or not a string."),
        Code("seat_invalid", _P, "parse", "A seat does not exist, or has no agent for the action."),
        Code(
            "argument_invalid",
            _P,
            "parse",
            "A tool argument, vector input or stored value is malformed.",
        ),
        Code("ledger_json", _P, "parse", "A ledger is not JSON, or the object has no `ledger`."),
        # ledger: the hash chain
        Code(
            "ledger_invalid",
            _P,
            "ledger",
            "A ledger fails verification (`reason` names the check).",
        ),
        # room: the transition table and the room's rules
        Code(
            "invalid_transition",
            _P,
            "room",
            "The action or entry is not allowed in the room's state.",
        ),
        Code("not_your_turn", _P, "room", "A seat sent while it was not its turn."),
        Code("not_your_escalation", _P, "room", "A seat answered the other seat's escalation."),
        Code("card_sealed", _P, "room", "The seat has already sealed its card."),
        Code("card_missing", _P, "room", "The seat has no drafted card to seal."),
        Code(
            "envelope_rejected",
            _P,
            "room",
            "An envelope breaks a room rule (backs, reviews, depends_on).",
        ),
        # import: a room export replayed entry by entry
        Code(
            "import_invalid",
            _P,
            "import",
            "A room export's bodies or entries do not fit its ledger.",
        ),
        # brief
        Code("brief_invalid", _P, "brief", "A brief given to brief_markdown is malformed."),
        # store
        Code("room_exists", _U, "store", "A room with that id is already stored."),
        Code("room_unknown", _P, "store", "No room with that id is stored."),
        Code("store_conflict", _P, "store", "The room changed since it was loaded; load it again."),
        Code("store_corrupt", _U, "store", "The store holds data that does not verify."),
        Code("store_unavailable", _U, "store", "The store cannot be reached."),
        # server: links and seats
        Code("link_unknown", _P, "server", "A link opens nothing on this server."),
        Code("link_revoked", _P, "server", "A link was revoked."),
        Code("link_expired", _P, "server", "A link has expired."),
        Code("invite_link", _P, "server", "An invite was given where only a seat link opens."),
        Code("seat_taken", _P, "server", "Another agent holds the seat."),
        Code("seat_contested", _P, "server", "The seat was contested; the room has ended."),
        Code("agent_limit", _P, "server", "The seat has seen as many agents as it may."),
        Code("builtin_unavailable", _P, "server", "The server has no built-in counterpart proxy."),
        Code("link_required", _P, "server", "get_brief was called without a seat link."),
        Code(
            "wait_invalid",
            _P,
            "server",
            "wait_for_turn's timeout_seconds is not a number from 1 to the server's maximum.",
        ),
        Code(
            "wait_limit",
            _P,
            "server",
            "A signed-in agent key already has as many wait_for_turn calls waiting as it may.",
        ),
    ],
)
"""Every code :mod:`pxp` raises: kind, stage and meaning (``docs/codes/pxp.md``)."""


class PxpError(CodedError):
    """Raised for bad input or a failed check anywhere in :mod:`pxp` (a :class:`ValueError`).

    ``code`` is a short, stable machine code from :data:`CODES`; ``reason`` an optional
    finer, equally stable code; the message one sentence saying what was wrong and where.
    ``PxpError(code, message)`` builds the class the code's kind names.
    """

    codes = CODES


class PxpUsageError(PxpError):
    """The caller broke the rules: a naive ``now``, a bad option, configuration or store."""

    kind = "usage"


class PxpProtocolError(PxpError):
    """The peer's data is bad: a card, envelope, ledger, export, link or out-of-turn action."""

    kind = "protocol"


class LedgerError(PxpProtocolError):
    """A ledger failed verification; ``index`` is the 0-based position of the first bad entry.

    For a ledger that does not end at the expected head, ``index`` is where the two
    histories part: ``len(entries)`` for a truncated ledger, the first extra entry for an
    extended one. ``code`` is ``ledger_invalid`` and ``reason`` names the failing check.
    """

    index: int
    """The 0-based position of the first bad entry."""

    def __init__(self, reason: str, message: str, *, index: int) -> None:
        super().__init__("ledger_invalid", message, reason=reason)
        self.index = index

    def __new__(cls, reason: str, message: str, *, index: int) -> LedgerError:  # noqa: D102
        return super().__new__(cls, "ledger_invalid", message)
