"""The agent side: a sans-IO :class:`Agent` and the asyncio :class:`Client` on top of it.

:class:`Agent` holds the agent key and grants, builds request frames with proofs of
possession (SPEC.md section 6.5), frame ids with 96 random bits (safe for auto INTENTs),
and correlates replies by ``re``: :meth:`Agent.receive` files ``EVENT``\\ s under their
request and returns a :class:`Result` when the final reply arrives. It remembers the
proposals it was shown, so a ``consent_required`` reply becomes a consent request rebuilt
from the proposal the agent actually saw (never copied from the service).

:class:`Client` adds I/O through a small transport interface (``send`` one frame; call
:meth:`Client.deliver` with every frame received) and offers ``await client.hello()``,
``ask``, ``intent``, ``commit``, ``undo``, ``expand`` and :meth:`Client.complete`, which
follows every ``more`` handle with ``EXPAND`` and splices the rest back in.
"""

from __future__ import annotations

import copy
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from ._b64 import b64url_encode
from ._canonical import proposal_hash
from ._consent import consent_for_shown
from ._frames import FINAL_KINDS, check_envelope, parse_frame
from ._keys import Key
from ._proof import proof_target, sign_proof
from ._report import Report
from ._wire import (
    ConsentRequestJSON,
    ErrorCode,
    ErrorReply,
    EventFrame,
    FinalReply,
    ProposalJSON,
    ReceiptJSON,
    ReplyKind,
)
from .errors import WIRE_CODES, ParleyError, ParleyProtocolError

if TYPE_CHECKING:  # Client imports asyncio when used: `import parley` loads no event loop
    import asyncio

__all__ = ["Agent", "Client", "ReplyError", "Result"]

MAX_SHOWN = 1000
"""**Ours:** proposals the agent remembers for consent requests (oldest forgotten first)."""


@dataclass
class Result(Report):
    """The outcome of one request: its final reply and the ``EVENT``\\ s before it.

    ``consent`` is set for a ``consent_required`` error: the consent request to put to the
    principal, rebuilt from the proposal this agent was shown.

    ``reply`` is typed as :data:`parley.wire.FinalReply` (a union told apart by ``kind``), so a
    type checker catches ``reply["items"]`` or ``kind == "RECIEPT"``; the accessors
    :attr:`data`, :attr:`proposals`, :attr:`receipt` and :attr:`error` return the part a
    reply of each kind carries (``None`` for another kind) after checking it is there, and
    :meth:`raise_for_error` turns an ``ERROR`` into a :class:`ReplyError`. A result has no
    truth value (``if result:`` raises :class:`TypeError`): read :attr:`ok` or call
    :meth:`raise_for_error`, which returns the result when it is not an error. A peer's reply
    is only as well-formed as the peer: an accessor whose part is missing or of the wrong
    shape raises ``bad_frame`` (reason ``bad_reply``) instead of handing it on.

    >>> r = Result({"id": "a1"}, {"parley": 1, "id": "s1", "re": "a1", "kind": "ANSWER",
    ...                           "data": {"items": [1, 2]}})
    >>> (r.kind, r.data, r.proposals, r.error)
    ('ANSWER', {'items': [1, 2]}, None, None)
    """

    request: dict[str, Any]
    reply: FinalReply | None = None
    events: list[EventFrame] = field(default_factory=list)
    consent: ConsentRequestJSON | None = None

    @property
    def kind(self) -> ReplyKind | None:
        """The final reply's kind (``None`` while pending)."""
        reply = self._raw()
        kind = None if reply is None else reply.get("kind")
        return kind if kind in FINAL_KINDS else None

    @property
    def ok(self) -> bool:
        """True when the final reply is not an ``ERROR``."""
        reply = self._raw()
        return reply is not None and reply.get("kind") != "ERROR"

    @property
    def code(self) -> ErrorCode | None:
        """The error code, for an ``ERROR`` reply."""
        error = self.error
        return None if error is None else error["code"]

    @property
    def data(self) -> Any:
        """An ``ANSWER``'s ``data`` (``None`` for any other kind, or while pending)."""
        reply = self._reply_of("ANSWER")
        if reply is None:
            return None
        if "data" not in reply:
            raise _bad_reply("an ANSWER without data")
        return reply["data"]

    @property
    def proposals(self) -> list[ProposalJSON] | None:
        """A ``PROPOSALS`` reply's proposals (``None`` for any other kind)."""
        reply = self._reply_of("PROPOSALS")
        if reply is None:
            return None
        proposals = reply.get("proposals")
        if not isinstance(proposals, list) or not all(
            isinstance(p, dict) and isinstance(p.get("id"), str) for p in proposals
        ):
            raise _bad_reply("a PROPOSALS reply whose proposals are not a list of proposals")
        return cast(list[ProposalJSON], proposals)

    @property
    def receipt(self) -> ReceiptJSON | None:
        """A ``RECEIPT`` reply's receipt (``None`` for any other kind)."""
        reply = self._reply_of("RECEIPT")
        if reply is None:
            return None
        receipt = reply.get("receipt")
        if not isinstance(receipt, dict) or not isinstance(receipt.get("id"), str):
            raise _bad_reply("a RECEIPT reply without a receipt")
        return cast(ReceiptJSON, receipt)

    @property
    def error(self) -> ErrorReply | None:
        """The whole ``ERROR`` reply (``None`` for any other kind, or while pending)."""
        reply = self._reply_of("ERROR")
        if reply is None:
            return None
        if reply.get("code") not in WIRE_CODES or not isinstance(reply.get("message"), str):
            raise _bad_reply("an ERROR without a code of SPEC.md section 7 and a message")
        if not isinstance(reply.get("reason", ""), str):
            raise _bad_reply("an ERROR whose reason is not a string")
        return cast(ErrorReply, reply)

    def _raw(self) -> Mapping[str, Any] | None:
        reply: object = self.reply
        if reply is not None and not isinstance(reply, Mapping):
            raise _bad_reply("a reply that is not an object")
        return reply

    def _reply_of(self, kind: ReplyKind) -> Mapping[str, Any] | None:
        reply = self._raw()
        return reply if reply is not None and reply.get("kind") == kind else None

    def raise_for_error(self) -> Result:
        """Raise an ``ERROR`` reply as a :class:`ReplyError`; return this result otherwise.

        A result still waiting for its reply raises the usage error ``not_ready`` (reason
        ``pending``). A :class:`ReplyError` is a :class:`parley.ParleyProtocolError` with
        the reply's wire ``code`` and ``reason``: the same shape as a peer's bad data
        raised locally, so one ``except parley.ParleyProtocolError`` holds both.
        """
        if self._raw() is None:
            raise ParleyError("not_ready", "the request has no reply yet", reason="pending")
        error = self.error
        if error is None:
            return self
        raise ReplyError(error, consent=self.consent)


class ReplyError(ParleyProtocolError):
    """An ``ERROR`` reply from the service, raised by :meth:`Result.raise_for_error`.

    ``code``, ``reason`` and the message are the reply's; ``code`` is one of the wire codes
    of SPEC.md section 7, ``reason`` is the service's own word (a service of this library
    uses the reasons of :data:`parley.errors.CODES`; another may use others). ``reply`` is
    the whole :class:`parley.wire.ErrorReply` (``fix``, ``need``, ``retry``), and
    ``consent`` the consent request to put to the principal on ``consent_required``: the
    one the agent rebuilt from the proposal it was shown when there is one, else the
    service's.
    """

    def __new__(cls, reply: ErrorReply, *, consent: ConsentRequestJSON | None = None) -> ReplyError:
        """The reply's code decides nothing but the code: the class is always this one."""
        return super().__new__(cls, reply["code"], reply["message"])

    def __init__(self, reply: ErrorReply, *, consent: ConsentRequestJSON | None = None) -> None:
        super().__init__(reply["code"], reply["message"], reason=reply.get("reason"))
        self.reply = reply
        self.consent = consent if consent is not None else reply.get("consent")


def _bad_reply(what: str) -> ParleyError:
    return ParleyError("bad_frame", f"the service sent {what}", reason="bad_reply")


class Agent:
    """Sans-IO agent state: key, grants, the service id, pending requests.

    ``service`` is the audience id proofs are bound to (learned from a ``BRIEF`` when not
    given). ``clock`` and ``rand`` default to the system's.
    """

    def __init__(
        self,
        key: Key,
        grants: Sequence[str] = (),
        *,
        service: str | None = None,
        name: str = "agent",
        clock: Callable[[], float] = time.time,
        rand: Callable[[int], bytes] = secrets.token_bytes,
    ) -> None:
        if not isinstance(key, Key):
            raise ParleyError("bad_argument", "an agent is built on a parley.Key", reason="bad_key")
        if service is not None and not isinstance(service, str):
            raise ParleyError(
                "bad_argument", "service is the service id string", reason="bad_argument"
            )
        if not callable(clock) or not callable(rand):
            raise ParleyError("bad_argument", "clock and rand are callables", reason="bad_argument")
        # grants are tokens, the peer's kind of data: a malformed list is a protocol error
        if isinstance(grants, (str, bytes)) or not isinstance(grants, Sequence):
            raise ParleyError("unauthorized", "grants is a list of tokens", reason="bad_token")
        if not all(isinstance(token, str) for token in grants):
            raise ParleyError("unauthorized", "every grant is a token string", reason="bad_token")
        self.key = key
        self.grants = list(grants)
        self.service = service
        self.name = name
        self.clock = clock
        self.rand = rand
        self.pending: dict[str, Result] = {}
        self.shown: dict[str, dict[str, Any]] = {}

    def _id(self) -> str:
        return "a" + b64url_encode(self.rand(12))

    def _frame(self, verb: str, budget: int | None, **body: Any) -> dict[str, Any]:
        frame: dict[str, Any] = {"parley": 1, "id": self._id(), "verb": verb, **body}
        if budget is not None:
            frame["budget"] = budget
        return frame

    def _prove(self, frame: dict[str, Any], target: str, grants: Sequence[str]) -> None:
        if self.service is None:
            raise ParleyError(
                "not_ready",
                "the agent does not know the service id yet; send HELLO first",
                reason="no_service",
            )
        frame["proof"] = sign_proof(
            self.key, aud=self.service, verb=frame["verb"], target=target, ts=int(self.clock())
        )
        if grants:
            frame["grants"] = list(grants)

    def _track(self, frame: dict[str, Any]) -> dict[str, Any]:
        self.pending[frame["id"]] = Result(frame)
        return frame

    def hello(self, *, budget: int | None = None) -> dict[str, Any]:
        """A ``HELLO`` frame."""
        agent = {"name": self.name, "key": self.key.public}
        return self._track(self._frame("HELLO", budget, agent=agent))

    def ask(
        self, capability: str, params: dict[str, Any] | None = None, *, budget: int | None = None
    ) -> dict[str, Any]:
        """An ``ASK`` frame, with a proof (and grants) when the service id is known."""
        frame = self._frame("ASK", budget, capability=capability, params=params or {})
        if self.service is not None:
            self._prove(frame, capability, self.grants)
        return self._track(frame)

    def intent(
        self,
        capability: str,
        params: dict[str, Any] | None = None,
        *,
        goal: str | None = None,
        auto: bool = False,
        budget: int | None = None,
    ) -> dict[str, Any]:
        """An ``INTENT`` frame with a proof, so its proposals can be committed by this key."""
        frame = self._frame("INTENT", budget, capability=capability, params=params or {})
        if goal is not None:
            frame["goal"] = goal
        if auto:
            frame["auto"] = True
        target = proof_target("INTENT", capability=capability, auto=auto, frame_id=frame["id"])
        self._prove(frame, target, self.grants)
        return self._track(frame)

    def commit(self, proposal: Mapping[str, Any], *, grants: Sequence[str] = ()) -> dict[str, Any]:
        """A ``COMMIT`` of a proposal this agent was shown, with its grants plus ``grants``.

        The proposal's hash is recomputed from what it says (summary, effects, cost, …)
        first: a proposal whose ``hash`` is not its own (a service showing "free" with the
        hash of a paid offer, or an edit made after it was shown) is refused with
        ``conflict``/``hash_mismatch`` and nothing is sent.
        """
        digest = proposal.get("hash") if isinstance(proposal, dict) else None
        try:
            own = proposal_hash(proposal)
        except ParleyError:
            own = None
        if not isinstance(digest, str) or own != digest or not isinstance(proposal.get("id"), str):
            raise ParleyError(
                "conflict",
                "the proposal's hash does not match its content; it was not committed",
                reason="hash_mismatch",
            )
        frame = self._frame("COMMIT", None, proposal=proposal["id"], hash=digest)
        self._prove(frame, digest, [*self.grants, *grants])
        self.shown.setdefault(proposal["id"], cast(dict[str, Any], proposal))  # a dict: above
        return self._track(frame)

    def undo(self, receipt: str, *, grants: Sequence[str] = ()) -> dict[str, Any]:
        """An ``UNDO`` of a receipt id."""
        frame = self._frame("UNDO", None, receipt=receipt)
        self._prove(frame, receipt, [*self.grants, *grants])
        return self._track(frame)

    def expand(self, handle: str, *, budget: int | None = None) -> dict[str, Any]:
        """An ``EXPAND`` of a handle, proven by this key (handles are bound to it)."""
        frame = self._frame("EXPAND", budget, handle=handle)
        if self.service is not None:
            self._prove(frame, handle, ())
        return self._track(frame)

    def receive(self, data: bytes | str | dict[str, Any]) -> Result | None:
        """Take one reply frame; return the :class:`Result` it completes, else ``None``.

        Replies whose ``re`` names no pending request are dropped (``None``); a malformed
        frame raises ``bad_frame``.
        """
        frame = check_envelope(data) if isinstance(data, dict) else parse_frame(data)
        if "kind" not in frame:
            raise ParleyError("bad_frame", "the agent got a request, not a reply", reason="bad")
        re = frame.get("re")
        result = self.pending.get(re) if isinstance(re, str) else None
        if result is None:
            return None
        if frame["kind"] == "EVENT":
            result.events.append(cast(EventFrame, frame))
            return None
        if frame["kind"] not in FINAL_KINDS:
            return None
        del self.pending[re]  # type: ignore[arg-type]
        # typed as the reply its kind names; the accessors check the part they return
        result.reply = cast(FinalReply, frame)
        self._learn(result)
        return result

    def _learn(self, result: Result) -> None:
        reply: Mapping[str, Any] = result.reply or {}
        kind = reply.get("kind")
        if kind == "BRIEF" and self.service is None:
            service = reply.get("service")
            if isinstance(service, dict) and isinstance(service.get("id"), str):
                self.service = service["id"]
        elif kind == "PROPOSALS":
            for proposal in reply.get("proposals") or []:
                if isinstance(proposal, dict) and isinstance(proposal.get("id"), str):
                    self.shown.pop(proposal["id"], None)
                    self.shown[proposal["id"]] = proposal
            while len(self.shown) > MAX_SHOWN:  # a chatty service cannot grow it forever
                del self.shown[next(iter(self.shown))]
        elif kind == "ERROR" and reply.get("code") == "consent_required":
            shown = self.shown.get(str(result.request.get("proposal")))
            if shown is not None and self.service is not None:
                try:
                    consent = consent_for_shown(
                        shown, service=self.service, request=reply.get("consent")
                    )
                    result.consent = cast(ConsentRequestJSON, consent)
                except ParleyError:
                    result.consent = None


def _splice(body: dict[str, Any], path: str, rest: Any) -> None:
    parts = path.split(".")
    node: Any = body
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    last = parts[-1]
    index: Any = int(last) if isinstance(node, list) else last
    current = node[index]
    if isinstance(current, list):
        current.extend(rest)
    elif isinstance(current, str):
        # a cut through an emoji left half a pair on each side: join them back into one
        joined = current.removesuffix("…") + rest
        node[index] = joined.encode("utf-16-le", "surrogatepass").decode(
            "utf-16-le", "surrogatepass"
        )


Sender = Callable[[dict[str, Any]], Awaitable[None]]


class Client:
    """An asyncio client over any transport: ``send`` writes one frame.

    Transports call :meth:`deliver` for every frame that arrives and :meth:`lost` when the
    connection ends. ``on_event`` is called with every ``EVENT`` frame. A ``reconnect``
    client's ``send`` dials again when needed, so a lost connection fails only the
    requests in flight and the client stays usable.
    """

    def __init__(
        self,
        agent: Agent,
        send: Sender,
        *,
        on_event: Callable[[dict[str, Any]], None] | None = None,
        close: Callable[[], Awaitable[None]] | None = None,
        reconnect: bool = False,
    ) -> None:
        if not isinstance(agent, Agent) or not callable(send):
            raise ParleyError(
                "bad_argument", "a Client takes an Agent and a send callable", reason="bad_argument"
            )
        self.agent = agent
        self._send = send
        self._close = close
        self.reconnect = reconnect
        self.on_event = on_event
        self._waiting: dict[str, asyncio.Future[Result]] = {}
        self.closed = False

    def deliver(self, data: bytes | str | dict[str, Any]) -> None:
        """Feed one received frame (from the transport)."""
        try:
            frame = check_envelope(data) if isinstance(data, dict) else parse_frame(data)
        except ParleyError:
            return
        if frame.get("kind") == "EVENT" and self.on_event is not None:
            self.on_event(frame)
        try:
            result = self.agent.receive(frame)
        except ParleyError:  # a request-shaped frame from the peer: ignored, not fatal
            return
        if result is not None:
            future = self._waiting.pop(result.request["id"], None)
            if future is not None and not future.done():
                future.set_result(result)

    def lost(self, exc: BaseException | None = None) -> None:
        """The connection ended: fail every pending request with ``unavailable``.

        Later requests fail at once with ``unavailable`` (reason ``closed``) instead of
        waiting for a reply that can never come; connect again to continue (a
        ``reconnect`` client dials again by itself).
        """
        self.closed = not self.reconnect
        for ident, future in list(self._waiting.items()):
            if not future.done():
                future.set_exception(
                    ParleyError("unavailable", "the connection closed", reason="closed")
                )
            self._waiting.pop(ident, None)
            self.agent.pending.pop(ident, None)

    async def request(self, frame: dict[str, Any]) -> Result:
        """Send a frame built by :attr:`agent` and wait for its final reply."""
        if self.closed:
            self.agent.pending.pop(frame["id"], None)
            raise ParleyError("unavailable", "the connection is closed", reason="closed")
        import asyncio

        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        self._waiting[frame["id"]] = future
        try:
            await self._send(frame)
        except BaseException:
            self._waiting.pop(frame["id"], None)
            self.agent.pending.pop(frame["id"], None)
            raise
        return await future

    async def hello(self, *, budget: int | None = None) -> Result:
        """``HELLO``; the agent learns the service id from the ``BRIEF``."""
        return await self.request(self.agent.hello(budget=budget))

    async def ask(
        self, capability: str, params: dict[str, Any] | None = None, *, budget: int | None = None
    ) -> Result:
        """``ASK`` a capability."""
        return await self.request(self.agent.ask(capability, params, budget=budget))

    async def intent(
        self,
        capability: str,
        params: dict[str, Any] | None = None,
        *,
        goal: str | None = None,
        auto: bool = False,
        budget: int | None = None,
    ) -> Result:
        """``INTENT``: proposals, a clarification, or (``auto``) a receipt."""
        frame = self.agent.intent(capability, params, goal=goal, auto=auto, budget=budget)
        return await self.request(frame)

    async def commit(self, proposal: Mapping[str, Any], *, grants: Sequence[str] = ()) -> Result:
        """``COMMIT`` a proposal; on ``consent_required``, ``result.consent`` is set."""
        return await self.request(self.agent.commit(proposal, grants=grants))

    async def undo(self, receipt: str, *, grants: Sequence[str] = ()) -> Result:
        """``UNDO`` a receipt."""
        return await self.request(self.agent.undo(receipt, grants=grants))

    async def expand(self, handle: str, *, budget: int | None = None) -> Result:
        """``EXPAND`` one handle."""
        return await self.request(self.agent.expand(handle, budget=budget))

    async def complete(
        self, reply: Mapping[str, Any], *, budget: int = 4000, max_rounds: int = 1000
    ) -> dict[str, Any]:
        """Follow every ``more`` of a reply with ``EXPAND``; return the reply made whole."""
        if not isinstance(reply, Mapping):
            raise ParleyError("bad_frame", "complete() takes a reply object", reason="not_object")
        whole: dict[str, Any] = copy.deepcopy(dict(reply))
        for entry in whole.pop("more", None) or []:
            handle, path = entry.get("handle"), entry.get("path")
            parts: list[Any] = []
            rounds = 0
            while isinstance(handle, str) and rounds < max_rounds:
                rounds += 1
                got = await self.expand(handle, budget=budget)
                if not got.ok or got.reply is None:
                    raise ParleyError(
                        got.code or "internal", "EXPAND failed", reason="expand_failed"
                    )
                raw: Mapping[str, Any] = got.reply
                data = raw.get("data") or {}
                parts.append(data.get("items", data.get("text")))
                more = raw.get("more") or []
                handle = more[0].get("handle") if more else None
            if parts and isinstance(path, str):
                rest: Any = (
                    "".join(parts)
                    if all(isinstance(p, str) for p in parts)
                    else [x for p in parts for x in p]
                )
                try:
                    _splice(whole, path, rest)
                except (KeyError, IndexError, ValueError, TypeError):
                    continue
        return whole

    async def close(self) -> None:
        """Close the transport and fail whatever is still pending."""
        self.reconnect = False
        self.lost()
        if self._close is not None:
            await self._close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
