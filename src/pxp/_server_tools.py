"""The eight MCP tools of the PXP room server: names, input schemas, hints and descriptions.

Names, argument names, types and ``required`` lists are those of the reference server (Behalf),
so an MCP client configured for the reference finds the same tools here. The descriptions are
ours; they are what a language model reads to decide how to call each tool.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TOOL_SPECS", "ToolSpec"]

_STR: dict[str, Any] = {"type": "string"}
_STRS: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
_LINK = {"link": _STR}


def _obj(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


_CARD = _obj(
    {
        "principal": _obj({"name": _STR, "role": _STR, "org": _STR}, ["name"]),
        "goal": _STR,
        "must_haves": _STRS,
        "may_agree_to": _STRS,
        "must_never": _STRS,
        "escalate_when": _STRS,
        "known_facts": _STRS,
    },
    ["principal", "goal", "must_haves"],
)
_CLAIM = _obj(
    {
        "text": _STR,
        "origin": {"type": "string", "enum": ["stated", "sourced", "assumed"]},
        "ref": _STR,
    },
    ["text", "origin"],
)
_REVIEW = _obj(
    {
        "claim_id": _STR,
        "verdict": {"type": "string", "enum": ["accept", "challenge", "conflict"]},
        "reason": _STR,
    },
    ["claim_id", "verdict"],
)


class ToolSpec:
    """One tool: its ``name``, ``input_schema``, ``annotations`` (camelCase hints) and text."""

    __slots__ = ("annotations", "description", "input_schema", "name")

    def __init__(
        self,
        name: str,
        input_schema: dict[str, Any],
        annotations: dict[str, bool],
        description: str,
    ) -> None:
        self.name = name
        self.input_schema = input_schema
        self.annotations = annotations
        self.description = description


_WRITE = {"destructiveHint": False, "idempotentHint": False, "openWorldHint": True}
_READ = {"readOnlyHint": True, "openWorldHint": True}

TOOL_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "create_room",
        _obj(
            {
                "topic": _STR,
                "your_principal": _STR,
                "counterpart": _STR,
                "counterpart_proxy": {"type": "string", "enum": ["external", "builtin"]},
                "passcode": _STR,
            },
            ["topic", "your_principal", "counterpart"],
        ),
        dict(_WRITE),
        "Open a PXP negotiation room for your principal (seat A) and a counterpart (seat B). "
        "Returns your seat link (pass it to every other tool; keep it secret), the counterpart's "
        "invite to forward to them (external counterpart), and, for your principal's eyes only, "
        "the link to their web page. If the server requires sign-in, send your principal agent key "
        "as the HTTP header 'Authorization: Bearer <key>'. 'builtin' seats a proxy run by the "
        "server; 'passcode' is accepted and ignored (sign-in uses the header).",
    ),
    ToolSpec(
        "join_room",
        # ours: join_id, an optional secret of the joining agent (a retry with it is answered
        # again rather than contesting the seat, spec 9a)
        _obj({"link": _STR, "agent_name": _STR, "join_id": _STR}, ["link"]),
        # ours: not idempotent, unlike the reference's hint: an invite joins once, and a
        # client retrying on the hint would contest its own seat
        {"idempotentHint": False, "openWorldHint": True},
        "Take your seat in a room with the link you were given, naming the agent that sits in "
        "it (recorded in the ledger). Returns the room as your seat sees it. An invite joins "
        "once: the answer's your_link is your seat link for every later call; presenting the "
        "invite again contests the seat and ends the room. To be able to retry a join whose "
        "answer you lost, send a join_id of your own (16 to 200 random characters, never "
        "shown to anyone) and the same join_id and agent_name again within two minutes.",
    ),
    ToolSpec(
        "seal_intent_card",
        _obj({"link": _STR, "card": _CARD}, ["link", "card"]),
        dict(_WRITE),
        "Seal your principal's intent card (goal, must_haves, may_agree_to, must_never, "
        "escalate_when, known_facts) once your principal has confirmed it. Its hash goes into the "
        "ledger; the other side sees only your principal's name and the hash.",
    ),
    ToolSpec(
        "get_room",
        _obj(_LINK, ["link"]),
        dict(_READ),
        "Return the room as your seat sees it: status, whose turn it is, the transcript, both "
        "parties' names and card hashes, your own card, and any escalation you are waiting on.",
    ),
    ToolSpec(
        "wait_for_turn",
        _obj(
            {"link": _STR, "timeout_seconds": {"type": "number", "minimum": 1, "maximum": 25}},
            ["link"],
        ),
        dict(_READ),
        "Wait until it is your turn, the room pauses for an escalation, or it ends (at most "
        "timeout_seconds, default 20). Returns the room with 'ready' true when you should act.",
    ),
    ToolSpec(
        "send_envelope",
        _obj(
            {
                "link": _STR,
                "message": _STR,
                "claims": {"type": "array", "items": _CLAIM},
                "reviews": {"type": "array", "items": _REVIEW},
                "proposal": _obj({"terms": _STRS, "depends_on": _STRS}, ["terms"]),
                "status": {"type": "string", "enum": ["continue", "agree", "escalate"]},
                "escalation": _obj({"question": _STR, "reason": _STR}, ["question"]),
            },
            ["link", "message", "status"],
        ),
        dict(_WRITE),
        "Send your turn: a message, the claims you rely on (origin stated/sourced need a ref), a "
        "review of every new claim from the other side, an optional proposal (terms, and the claim "
        "ids they depend on, 'newN' for claim N of this envelope), and a status: continue, agree "
        "(accepts the other side's latest proposal), or escalate (with one question for your "
        "principal). The server enforces the protocol and returns the envelope as stored, with "
        "any protocol flags.",
    ),
    ToolSpec(
        "answer_escalation",
        _obj({"link": _STR, "answer": _STR}, ["link", "answer"]),
        dict(_WRITE),
        "Relay your principal's answer to the escalation your seat raised. It is sealed into "
        "your card as an amendment and recorded as relayed by the agent (via 'mcp'); answers "
        "given on the principal's own web page are recorded as via 'web'.",
    ),
    ToolSpec(
        "get_brief",
        {"type": "object", "properties": {"room_id": _STR, "link": _STR}},
        dict(_READ),
        "Return the decision brief (JSON and Markdown) and the ledger of a room. Needs a seat "
        "link of that room; room_id, when given, must name the same room.",
    ),
)
"""The tools in the reference server's order."""
