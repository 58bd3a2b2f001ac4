"""Parley's errors: the table of codes and reasons, and the three classes a caller catches.

Every error :mod:`parley` raises is a :class:`ParleyError` (a :class:`ValueError`) with a
``code`` from :data:`CODES` and, usually, a ``reason`` naming the precise failing check:

- :class:`ParleyProtocolError`: a peer's data is bad (a frame, a token, a proof, a reply,
  a consent object), or a service refused a request. Its ``code`` is one of the closed set
  of wire codes of the Parley v1 SPEC.md section 7 (``bad_frame``, ``unauthorized``, …), the
  same code an ``ERROR`` reply carries.
- :class:`ParleyUsageError`: the caller's own mistake (a naive ``datetime`` for ``now``, an
  option of the wrong type, a store URL that names nothing, a call made too early). Its codes
  are local: they never travel on the wire (a service that hits one while handling a
  request answers ``internal``).

``ParleyError("bad_frame", "…")`` builds a :class:`ParleyProtocolError`: the table decides
the class, and a code or reason the table lacks is refused. Special errors carry more
fields: :class:`parley.ReplyError` (a service's ``ERROR`` reply, raised by
:meth:`parley.Result.raise_for_error`), :class:`parley.ServiceError` (what a capability
raises to refuse), :class:`parley.service.ParamsError` and :class:`parley.grants.CaveatError`;
all four are protocol errors. The generated page is ``docs/codes/parley.md``.

>>> from parley.errors import ParleyError, ParleyProtocolError
>>> err = ParleyError("bad_frame", "the frame is not JSON", reason="not_json")
>>> isinstance(err, ParleyProtocolError), err.stage
(True, 'frame')
"""

from __future__ import annotations

from typing import Final

from _ppcodes import Code, CodedError, CodeTable, Kind

__all__ = ["CODES", "WIRE_CODES", "ParleyError", "ParleyProtocolError", "ParleyUsageError"]

_P: Final[Kind] = "protocol"
_U: Final[Kind] = "usage"

_CODES = [
    # the wire codes of SPEC.md section 7, in the order the runtime checks a request
    Code("bad_frame", _P, "frame", "The frame (or a reply) is not a well-formed Parley frame."),
    Code("unknown_capability", _P, "capability", "The service has no capability of that name."),
    Code(
        "invalid_params",
        _P,
        "params",
        "A parameter, or protocol data passed as one (a key, a caveat, a consent), is invalid.",
    ),
    Code("unauthorized", _P, "auth", "The proof of possession or the grant does not verify."),
    Code("forbidden", _P, "policy", "The grant verifies but does not allow this request."),
    Code(
        "consent_required",
        _P,
        "policy",
        "The request exceeds a soft limit; the principal must approve it.",
    ),
    Code("not_found", _P, "state", "The proposal, receipt, handle or record named does not exist."),
    Code("expired", _P, "state", "The proposal, undo window or handle has expired."),
    Code("conflict", _P, "state", "The request contradicts the state (a hash, a replay, a race)."),
    Code("limit", _P, "limit", "A size or count limit was reached."),
    Code("unavailable", _P, "service", "The service or the connection cannot answer now."),
    Code("internal", _P, "service", "The service failed to handle the request."),
    # local codes: the caller's own mistakes; never sent on the wire
    Code(
        "bad_argument",
        _U,
        "call",
        "An argument the caller passed (now, an option, a key it holds, a callback) is invalid.",
    ),
    Code(
        "bad_config",
        _U,
        "call",
        "The configuration is unusable (an address, a store URL, TLS files, a missing extra).",
    ),
    Code("not_ready", _U, "call", "The call needs something the object does not have yet."),
    Code("schema_unknown", _U, "call", "No schema of that name ships with the package."),
    Code("schemas_missing", _U, "call", "The package's schema files are not installed."),
]

WIRE_CODES: tuple[str, ...] = tuple(c.name for c in _CODES if c.kind == _P)
"""The closed set of ``ERROR`` codes of SPEC.md section 7, in table order."""

_REASONS: dict[str, str] = {
    # frames and replies
    "not_json": "The bytes are not one JSON value (or a value JSON cannot carry).",
    "not_utf8": "The bytes are not UTF-8.",
    "too_deep": "The JSON nests deeper than the limit.",
    "too_large": "The frame or value is larger than the limit.",
    "duplicate_key": "A JSON object repeats a member name.",
    "bad_envelope": "The frame's envelope members are missing or of the wrong type.",
    "bad_version": "The frame's ``parley`` member is not 1.",
    "bad_id": "A frame id is missing, empty or too long.",
    "bad": "A frame is of the wrong direction (a request where a reply belongs).",
    "not_request": "A frame sent to a service has no verb.",
    "unknown_verb": "The verb is not one of SPEC.md section 2.",
    "missing": "A member the verb requires is missing.",
    "bad_budget": "A budget is not a positive integer.",
    "bad_auto": "An ``auto`` flag is not a boolean.",
    "bad_more": "A ``more`` entry is malformed.",
    "bad_reply": "A reply lacks the part its kind requires, or cannot be sent.",
    "bad_capability": "A BRIEF capability entry is malformed.",
    "bad_receipt": "A receipt in a reply is malformed.",
    "bad_fix": "A fix suggestion in a reply is malformed.",
    "bad_time": "A time in a reply is not a safe integer.",
    "unknown_kind": "A reply kind is not one of SPEC.md section 5.",
    "not_object": "A value that must be a JSON object is not one.",
    "not_text": "A value that must be text is not a string.",
    "bad_base64url": "A value is not unpadded base64url.",
    # canonical JSON and proposals
    "not_canonical": "A value has no canonical form (a float, a lone surrogate, a bad key).",
    "not_integer": "A number is not an integer.",
    "unsafe_integer": "An integer is outside the safe range of plus or minus 2^53-1.",
    "bad_proposal": "A proposal lacks a member its hash covers.",
    # capabilities and params
    "unknown_capability": "No capability of that name.",
    "wrong_kind": "The capability is of the other kind for this verb.",
    "unknown_param": "A parameter the capability does not declare.",
    "missing_param": "A required parameter is missing.",
    "bad_type": "A parameter has the wrong type.",
    "bad_enum": "A parameter is not one of its allowed values.",
    "bad_schema": "A capability declares a parameter type the runtime does not know.",
    "bad_kind": "A capability's kind is not ask or intent.",
    "bad_risk": "A capability's risk is not low, medium or high.",
    "bad_offer": "A capability returned an offer that is not a valid proposal.",
    "dup": "A capability name is registered twice.",
    # keys, proofs, grants, caveats
    "bad_key": "A key is not a valid Ed25519 key in its expected form.",
    "private_key": "A private key was passed where only a public key belongs.",
    "bad_target": "A proof target is malformed for its verb.",
    "bad_proof": "A proof of possession is malformed or bound to something else.",
    "bad_proof_signature": "A proof's signature does not verify.",
    "proof_expired": "A proof's timestamp is outside the window around now.",
    "bad_clock": "A time (now, iat, ts) is not a safe integer of epoch seconds.",
    "no_proof": "The request carries no proof of possession.",
    "no_grant": "The request carries no grant that verifies.",
    "too_many_grants": "The request carries more grants than are checked.",
    "bad_token": "A grant token is malformed.",
    "bad_signature": "A signature (a grant block's, or one checked by verify_signature) fails.",
    "broken_chain": "A grant block is not signed by the previous block's holder.",
    "untrusted_issuer": "The grant's principal is not a trusted key.",
    "holder_mismatch": "The grant's holder is not the key that signed the proof.",
    "bad_context": "A verification context is malformed.",
    "bad_caveat": "A caveat list is not a list of caveats.",
    "caveat_malformed": "A caveat is malformed.",
    "caveat_unknown": "A caveat kind is unknown.",
    "caveat_failed": "A caveat does not allow the request.",
    "caveat_wider": "A delegation would widen the grant it extends.",
    # consent and spend
    "bad_consent": "A consent object is malformed.",
    "consent_mismatch": "A consent does not match the proposal it names.",
    "principal_mismatch": "A consent names another principal.",
    "hash_mismatch": "A proposal's hash is not its content's.",
    "hash": "A commit names a proposal with another hash.",
    "anonymous_proposal": "A proposal was made without a proof, so no principal can commit it.",
    "no_principal": "An UNDO carries no grant of the receipt's principal.",
    "spend_exceeded": "A spend total would exceed its cap.",
    "bad_amount": "A spend amount is not a non-negative safe integer.",
    "bad_block": "A spend block id is malformed.",
    "no_reservation": "A spend reservation to settle does not exist.",
    # state
    "unknown_proposal": "No proposal of that id.",
    "unknown_receipt": "No receipt of that id.",
    "unknown_handle": "No handle of that id.",
    "handle_expired": "The handle has expired.",
    "proposal_expired": "The proposal has expired.",
    "undo_expired": "The undo window has passed.",
    "irreversible": "The receipt cannot be undone.",
    "undone": "The receipt was already undone.",
    "no_commit": "The capability has no commit function.",
    "no_undo": "The capability has no undo function.",
    "race": "Another process finished the same commit first.",
    "busy": "Another process holds the lease on this commit or undo.",
    "commit_unresolved": "An earlier commit was cut short and its outcome is not known yet.",
    "undo_unresolved": "An earlier undo was cut short and its outcome is not known yet.",
    "store_full": "The store holds as many records as it may.",
    "store_unavailable": "The store's database cannot be reached.",
    "bad_store": "The store's database is not a Parley store.",
    "bad_state": "A state file, store URL or state object is malformed.",
    "no_state": "No state exists at that location.",
    "bad_handle": "A handle is malformed.",
    "bad_limits": "A handle store's limits are invalid.",
    "bad_random": "The randomness source returned the wrong bytes.",
    "bad_remainder": "A parked remainder cannot be stored.",
    # connections, transports, bridges
    "closed": "The connection is closed.",
    "connect": "The connection could not be made.",
    "timeout": "No reply came within the time allowed.",
    "tls": "The TLS handshake or certificate check failed.",
    "http": "The HTTP exchange failed.",
    "listen": "The server could not listen on the address.",
    "bind": "The bridge could not bind its address.",
    "bad_url": "An address or URL is malformed or of an unsupported scheme.",
    "no_url": "No address was given.",
    "no_cert": "TLS needs a certificate and key file.",
    "no_brief": "The service did not answer HELLO with a BRIEF.",
    "no_service": "The agent does not know the service id yet.",
    "pending": "The request has no reply yet.",
    "expand_failed": "An EXPAND of a continuation handle failed.",
    "bad_argument": "An argument has the wrong type or value.",
    "bad_request": "A bridge request is malformed.",
    "bad_timeout": "A timeout is not a positive number.",
    "duplicate_service": "Two bridged services share an id.",
    "service_changed": "The bridged service changed its id.",
    "service_mismatch": "The service's id is not the one expected.",
    "unknown_service": "No bridged service of that id.",
    "not_shown": "The proposal was not shown through this bridge.",
    "not_loopback": "The address is not a loopback address.",
    "token": "The bridge's access token is missing or wrong.",
    "extra_missing": "An optional extra needed here is not installed.",
    "no_http_extra": "The HTTP extra is not installed.",
    # key stores, files, the command line, conformance
    "key_store": "The key store cannot be read or written.",
    "key_store_permissions": "A key store or grant file is readable by others.",
    "key_missing": "The key store holds no key of that name.",
    "principal_key_isolation": "The principal's key would be exposed to the agent.",
    "not_approved": "The principal did not approve.",
    "not_interactive": "Approval needs a terminal.",
    "grant_file": "A grant file cannot be read or written.",
    "bad_file": "A file is not of the expected form.",
    "unknown_file": "A vector file of that name does not exist.",
    "bad_seed": "A key seed is malformed.",
    "bad_result": "A recorded result is malformed.",
    "not_in_flight": "No request of that id is in flight.",
    "io": "A file or stream cannot be read or written.",
    "app": "The application to serve cannot be loaded.",
    "no_handles": "The conformance adapter needs a handle store.",
    "naive_datetime": "A datetime passed for a time has no time zone.",
}

CODES = CodeTable("parley", _CODES, reasons=_REASONS)
"""Every code :mod:`parley` raises (wire codes first, then local ones) and every reason."""


class ParleyError(CodedError):
    """Raised for bad input or a failed check anywhere in :mod:`parley` (a ValueError).

    ``code`` is from :data:`CODES`; ``reason`` names the precise failing check and is
    stable across releases, so vectors and callers may match on it; the message is one
    sentence that says what was wrong and where. Catch :class:`ParleyProtocolError` for a
    peer's bad data or refusal, :class:`ParleyUsageError` for the caller's own mistakes.
    """

    codes = CODES


class ParleyUsageError(ParleyError):
    """The caller broke the rules (an argument, ``now``, a configuration, call order)."""

    kind = "usage"


class ParleyProtocolError(ParleyError):
    """A peer's data is bad, or a service refused: ``code`` is a SPEC.md section 7 code."""

    kind = "protocol"
