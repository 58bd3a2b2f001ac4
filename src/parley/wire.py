"""Parley on the wire: frames, base64url, and typed views of every reply.

The typed views are :class:`typing.TypedDict` classes (the objects stay plain JSON dicts at
run time): a reply is the union :data:`Reply` told apart by its ``kind``
(:data:`ReplyKind`), an ``ERROR`` carries an :data:`ErrorCode` of SPEC.md section 7.
:class:`parley.Result` returns them from its accessors.

>>> from parley.wire import encode_frame, parse_frame
>>> parse_frame(encode_frame({"parley": 1, "id": "a1", "verb": "HELLO"}))["verb"]
'HELLO'
"""

from __future__ import annotations

from ._b64 import b64url_decode, b64url_encode
from ._frames import MAX_FRAME, LineBuffer, encode_frame, parse_frame
from ._wire import (
    AnswerReply,
    BriefCapability,
    BriefReply,
    BriefService,
    ClarifyOption,
    ClarifyReply,
    ConsentRequestJSON,
    CostJSON,
    EffectJSON,
    ErrorCode,
    ErrorReply,
    EventFrame,
    FinalReply,
    FixJSON,
    GrantBlockJSON,
    GrantInspection,
    MoreJSON,
    ProposalJSON,
    ProposalsReply,
    ReceiptJSON,
    ReceiptReply,
    Reply,
    ReplyKind,
    Risk,
)

__all__ = [
    "MAX_FRAME",
    "AnswerReply",
    "BriefCapability",
    "BriefReply",
    "BriefService",
    "ClarifyOption",
    "ClarifyReply",
    "ConsentRequestJSON",
    "CostJSON",
    "EffectJSON",
    "ErrorCode",
    "ErrorReply",
    "EventFrame",
    "FinalReply",
    "FixJSON",
    "GrantBlockJSON",
    "GrantInspection",
    "LineBuffer",
    "MoreJSON",
    "ProposalJSON",
    "ProposalsReply",
    "ReceiptJSON",
    "ReceiptReply",
    "Reply",
    "ReplyKind",
    "Risk",
    "b64url_decode",
    "b64url_encode",
    "encode_frame",
    "parse_frame",
]
