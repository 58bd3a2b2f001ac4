"""The bridge's core: Parley services behind four tool calls whose results are Lens text.

:class:`Bridge` connects one agent key to one or more services (any URL
:func:`parley.connect` takes), learns each one's id and ``BRIEF`` with a ``HELLO``, and
answers ``ask``, ``intent``, ``commit`` and ``undo`` calls with a :class:`ToolText`. It
holds no MCP code, so the MCP layer (:mod:`parley._mcp_bridge`) stays a thin wrapper.

The model never approves anything:

* ``commit`` takes a proposal id and commits only a proposal this bridge showed, from the
  service that showed it, with the hash it had when shown: the model handles short ids,
  the ``COMMIT`` is bound to exactly what was shown.
* On ``consent_required`` the consent is rebuilt from the shown proposal
  (:func:`parley.grants.consent_for_shown`); a request naming another service, proposal,
  capability, hash or principal is refused. The human is asked through ``human`` (the MCP
  layer uses elicitation); only an explicit accept signs, through the principal store,
  read at that moment and never shown to the model. Otherwise the model is told the exact
  ``parley approve`` command the user can run.

Every failure of a service or its transport becomes a :class:`ToolText` with
``error=True`` and one sentence; nothing here raises to the MCP server.
"""

from __future__ import annotations

import asyncio
import datetime
import math
import re
import secrets
import ssl as _ssl
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ._agent import Agent, Client, Result
from ._canonical import proposal_hash
from ._connect import connect
from ._consent import consent_for_shown
from ._frames import encode_frame, parse_frame, well_formed
from ._grant_files import load_tokens, save_pending, save_token
from ._grants import decode_grant, inspect_grant
from ._keys import Key
from ._keystore import PrincipalKeyStore, _shown
from ._lens import duration_text, effect_line, lens, money_text
from ._wire import ErrorReply
from .errors import ParleyError

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_TIMEOUT",
    "INSTRUCTIONS",
    "Bridge",
    "Human",
    "NeedInput",
    "ToolText",
    "consent_message",
]

DEFAULT_BUDGET = 1500
"""Token budget of every request the bridge sends without one (the reference bridge's)."""

DEFAULT_TIMEOUT = 30.0
"""**Ours:** seconds a service has to answer one request before the call fails."""

CONNECT_TIMEOUT = 30.0
"""**Ours:** the least time given to connecting to a service and its ``HELLO``."""

MAX_SHOWN = 1000
"""**Ours:** proposals remembered per service for ``commit`` (oldest forgotten first)."""

INSTRUCTIONS = (
    "Parley services. Read with parley_ask; change things with parley_intent then "
    "parley_commit; parley_undo reverses a receipt. Commit only what the user wants; only "
    "the user can approve what the grants do not cover.\n\n"
)
"""The opening of the server instructions; each service's ``BRIEF`` in Lens follows."""

Human = Callable[[dict[str, Any], str], Awaitable[str | None]]
"""Asks the human about one consent: ``(consent, message) -> "accept" | "decline" |
"cancel"``, or ``None`` when no human can be asked (the client cannot elicit). It may raise
:class:`NeedInput` to end the call now and be asked again when the client retries."""


class NeedInput(Exception):  # noqa: N818 - a signal, not a failure
    """Raised by a :data:`Human` that must ask in a later round; carries the tool result."""

    def __init__(self, payload: Any) -> None:
        super().__init__("input required")
        self.payload = payload


@dataclass(frozen=True)
class ToolText:
    """A tool result: Lens text, and whether it reports a failure."""

    text: str
    error: bool = False


def _fail(sentence: str) -> ToolText:
    return ToolText(well_formed(f"✗ {sentence}"), True)


@dataclass
class _Link:
    """One service: its URL, its agent state, its connection and what it showed."""

    url: str
    agent: Agent
    pinned: str | None = None
    service: str = ""
    receipts: dict[str, str] = field(default_factory=dict)
    undone: set[str] = field(default_factory=set)
    brief: str = ""
    client: Client | None = None
    shown: dict[str, dict[str, Any]] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


def _for_service(token: str, service: str) -> bool:
    """True when a grant can apply at ``service`` (its ``svc`` caveats allow it)."""
    try:
        caveats = inspect_grant(token)["caveats"]
    except ParleyError:
        return False
    allowed = [c["svc"] for c in caveats if isinstance(c, dict) and "svc" in c]
    return all(isinstance(names, list) and service in names for names in allowed)


_PIN = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]{0,199})=((?:parleys?|https?|stdio):.*)", re.DOTALL)


def split_pin(entry: str) -> tuple[str | None, str]:
    """``"ID=URL"`` -> ``(ID, URL)``; a bare URL -> ``(None, URL)``.

    Naming the service pins it: the ``BRIEF`` must announce that id, so a service cannot
    claim another's id (and be sent the grants, and proofs, meant for it).
    """
    if not isinstance(entry, str):
        raise ParleyError("bad_config", "a service URL is a string", reason="bad_url")
    found = _PIN.fullmatch(entry)
    return (found.group(1), found.group(2)) if found else (None, entry)


def _check_budget(budget: object, code: str = "invalid_params") -> int:
    """A budget from the model's tool call (protocol data) or, with ``code="bad_argument"``,
    the bridge's own configuration."""
    if budget is None:
        return DEFAULT_BUDGET
    if type(budget) is not int or not 1 <= budget <= 1_000_000:
        raise ParleyError(
            code, "budget must be a whole number of tokens from 1 to 1000000", reason="bad_budget"
        )
    return budget


def _check_name(value: object, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise ParleyError(
            "invalid_params", f"{what} must be a non-empty string", reason="bad_argument"
        )
    if len(value) > 200:
        raise ParleyError(
            "invalid_params", f"{what} is over 200 characters: no such id", reason="bad_argument"
        )
    return value


def _check_params(value: object) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ParleyError("invalid_params", "params must be an object", reason="bad_argument")
    return value


MAX_EVENTS = 10
"""**Ours:** progress events shown per result (the last ones; the count of the others)."""

MAX_EVENT_LINE = 200
"""**Ours:** characters of one progress line shown to the model."""

_FORGING = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u0085]")


def _defang(value: Any) -> Any:
    """Every string of a service's reply with its control characters and line separators
    as ``\\uXXXX``: Lens writes summaries, effects and messages verbatim, so a newline in
    one would forge lines of the tool result (a fake receipt, a fake instruction)."""
    if isinstance(value, str):
        return _FORGING.sub(lambda m: f"\\u{ord(m.group()):04x}", value)
    if isinstance(value, dict):
        return {_defang(k): _defang(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_defang(item) for item in value]
    return value


def _render(result: Result) -> ToolText:
    lines = []
    events = result.events
    if len(events) > MAX_EVENTS:
        lines.append(f"… ({len(events) - MAX_EVENTS} earlier progress events not shown)")
        events = events[-MAX_EVENTS:]
    for event in events:
        try:
            line = lens(_defang(event))
        except ParleyError:
            continue
        if len(line) > MAX_EVENT_LINE:
            line = line[:MAX_EVENT_LINE] + "…"
        lines.append(line)
    reply: Mapping[str, Any] = result.reply or {}
    try:
        lines.append(lens(_defang(reply)))
    except ParleyError:
        return _fail("bad_reply: the service sent a reply that cannot be shown")
    return ToolText(well_formed("\n".join(lines)), reply.get("kind") == "ERROR")


def _when(unix: int) -> str:
    try:
        stamp = datetime.datetime.fromtimestamp(unix, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return str(unix)
    return f"{stamp} ({unix})"


def _attribute(render: Callable[[], str], raw: object) -> str:
    try:
        return render()
    except (ParleyError, TypeError, ValueError, KeyError):
        return _shown(raw)


def consent_message(consent: Mapping[str, Any], proposal: Mapping[str, Any], agent: str) -> str:
    """The text put to the human for one consent, built from the proposal shown.

    Cost, risk, undo window and effects come first, in the forms the model reads (Lens),
    then the ids; the summary, the service's own words, comes last and labelled so. Every
    value that came from the service is escaped and cut to length
    (:func:`parley._keystore._shown`), so it cannot forge, hide or pad a line.
    """
    undo = proposal.get("undo")
    effects = proposal.get("effects")
    cost = proposal.get("cost")
    window = undo.get("window") if isinstance(undo, dict) else None
    lines = [
        "Approve this action for your agent?",
        "",
        f"  service    {_shown(consent['service'])}",
        f"  capability {_shown(consent['capability'])}",
        f"  cost       {_shown(_attribute(lambda: money_text(cost), cost))}",
        f"  risk       {_shown(proposal.get('risk') or 'none stated')}",
        "  undo       "
        + (_shown(_attribute(lambda: duration_text(window), undo)) if window else "never"),
    ]
    for effect in effects if isinstance(effects, list) else [effects]:
        shown_effect = _attribute(lambda: effect_line(effect), effect)  # noqa: B023
        lines.append(f"  effect     {_shown(shown_effect)}")
    lines += [
        f"  proposal   {_shown(consent['proposal'])} (hash {_shown(consent['hash'])})",
        f"  valid until {_when(consent['expires'])}",
        f"  agent      {agent}",
        f"  the service's own words: {_shown(consent['summary'])}",
        "",
        "Approving signs a one-time consent for exactly this proposal with your principal key.",
    ]
    return "\n".join(lines)


class Bridge:
    """Parley services for a model: ask, intent, commit, undo; results in Lens.

    ``urls`` are the services, each a URL or ``ID=URL`` (pinned: its ``BRIEF`` must
    announce ``ID``); ``key`` is the agent key; ``home`` the agent's folder
    (``PARLEY_HOME``), from which grants (``grants/``) and consents (``consents/``) are
    read. ``principal`` names the principal key a consent is signed with, in the
    principal store (``PARLEY_PRINCIPAL_HOME``), opened only when the human accepts.
    """

    def __init__(
        self,
        urls: Sequence[str],
        *,
        key: Key,
        home: Path,
        principal: str = "principal",
        budget: int = DEFAULT_BUDGET,
        timeout: float = DEFAULT_TIMEOUT,
        ssl: _ssl.SSLContext | None = None,
        clock: Callable[[], float] = time.time,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        # the constructor's arguments are the operator's configuration (usage errors); the
        # arguments of the tool calls below come from the model, a peer (invalid_params)
        if not urls:
            raise ParleyError(
                "bad_config", "the bridge needs at least one service URL", reason="no_url"
            )
        self.key = key
        self.warn = warn
        self.home = home
        self.principal = principal
        self.budget = _check_budget(budget, "bad_argument")
        if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
            raise ParleyError(
                "bad_argument",
                "the timeout is a positive number of seconds",
                reason="bad_timeout",
            )
        self.timeout = float(timeout)
        self.ssl = ssl
        self.clock = clock
        self.grants = load_tokens(home, "grants")
        self.principals = sorted({decode_grant(g).principal for g in self.grants})
        self.links = []
        for entry in urls:
            pinned, url = split_pin(entry)
            self.links.append(_Link(url, self._agent(), pinned))
        self.services: dict[str, _Link] = {}

    def _agent(self) -> Agent:
        return Agent(self.key, self.grants, name="parley-mcp", clock=self.clock)

    # ---------------------------------------------------------------- connections

    async def start(self) -> None:
        """Connect to every service and read its ``BRIEF``; refuses two with one id."""
        for link in self.links:
            await self._connect(link)
            if link.service in self.services:
                raise ParleyError(
                    "conflict",
                    f"two services call themselves {link.service!r} ({link.url} and "
                    f"{self.services[link.service].url}); the bridge cannot tell them apart",
                    reason="duplicate_service",
                )
            self.services[link.service] = link

    @property
    def instructions(self) -> str:
        """The server instructions: how to use the tools, then every ``BRIEF`` in Lens."""
        return INSTRUCTIONS + "\n\n".join(link.brief for link in self.links)

    async def _connect(self, link: _Link) -> Client:
        # a child process may take a while to start on a busy machine: connecting (and
        # its HELLO) gets at least CONNECT_TIMEOUT, whatever the per-request timeout
        limit = max(self.timeout, CONNECT_TIMEOUT)
        try:
            client = await asyncio.wait_for(connect(link.url, link.agent, ssl=self.ssl), limit)
        except TimeoutError:
            raise ParleyError(
                "unavailable",
                f"{link.url} did not accept a connection within {limit:g} s",
                reason="timeout",
            ) from None
        except OSError as exc:
            raise ParleyError(
                "unavailable", f"cannot reach {link.url}: {exc.strerror or exc}", reason="closed"
            ) from None
        link.client = client
        try:
            got = await self._send(link, link.agent.hello(budget=self.budget), limit)
        except BaseException:
            await self._drop(link)
            raise
        reply: Mapping[str, Any] = got.reply or {}
        service = reply.get("service")
        ident = service.get("id") if isinstance(service, dict) else None
        if got.kind != "BRIEF" or not isinstance(ident, str) or not ident:
            await self._drop(link)
            raise ParleyError(
                "unavailable", f"{link.url} did not answer HELLO with a BRIEF", reason="no_brief"
            )
        if link.pinned is not None and ident != link.pinned:
            await self._drop(link)
            raise ParleyError(
                "conflict",
                f"{link.url} calls itself {ident[:80]!r}, not {link.pinned!r} as configured; "
                "the bridge will not talk to it",
                reason="service_mismatch",
            )
        if link.service and ident != link.service:
            await self._drop(link)
            raise ParleyError(
                "conflict",
                f"{link.url} now calls itself {ident[:80]!r}, not {link.service!r}; "
                "the bridge will not talk to it",
                reason="service_changed",
            )
        link.service = link.agent.service = ident
        # each service sees only the grants meant for it, never the agent's others
        link.agent.grants = [g for g in self.grants if _for_service(g, ident)]
        if link.pinned is None and link.agent.grants and self.warn is not None:
            self.warn(
                f"{link.url} announced {ident!r} and will be sent {len(link.agent.grants)} "
                f"grant(s) for it; pin it as {ident}={link.url} so no other service can "
                "claim that id"
            )
        link.brief = _render(got).text
        return client

    async def _drop(self, link: _Link) -> None:
        client, link.client = link.client, None
        if client is not None:
            try:
                await client.close()
            except Exception:  # a broken transport must not mask the error
                return

    async def _send(self, link: _Link, frame: dict[str, Any], limit: float | None = None) -> Result:
        client = link.client
        wait = self.timeout if limit is None else limit
        if client is None:
            link.agent.pending.pop(frame["id"], None)
            raise ParleyError("unavailable", "not connected", reason="closed")
        try:
            # the checks the service runs on every line (size, depth): a request it could
            # only refuse with `re: null` would otherwise wait out the whole timeout
            parse_frame(encode_frame(frame))
        except ParleyError as exc:
            link.agent.pending.pop(frame["id"], None)
            raise ParleyError(
                "invalid_params", f"the request cannot be sent: {exc.message}", reason="bad_request"
            ) from None
        try:
            return await asyncio.wait_for(client.request(frame), wait)
        except TimeoutError:
            link.agent.pending.pop(frame["id"], None)
            client._waiting.pop(frame["id"], None)  # the same package
            raise ParleyError(
                "unavailable",
                f"{link.service or link.url} did not answer within {wait:g} s",
                reason="timeout",
            ) from None
        except ParleyError as exc:
            if exc.code == "unavailable":
                await self._drop(link)
            raise
        except (OSError, EOFError, ConnectionError) as exc:
            await self._drop(link)
            raise ParleyError(
                "unavailable", f"the connection to {link.url} failed: {exc}", reason="closed"
            ) from None

    async def _request(self, link: _Link, build: Callable[[Agent], dict[str, Any]]) -> Result:
        """Send one request, connecting again first when the last connection was lost."""
        async with link.lock:
            if link.client is None or link.client.closed:
                await self._drop(link)
                await self._connect(link)
        return await self._send(link, build(link.agent))

    def _link(self, service: object) -> _Link:
        link = self.services.get(service) if isinstance(service, str) else None
        if link is None:
            known = ", ".join(sorted(self.services)) or "none"
            raise ParleyError(
                "not_found",
                f"unknown service {str(service)[:80]!r}; known: {known}",
                reason="unknown_service",
            )
        return link

    async def close(self) -> None:
        """Close every connection (children of ``stdio:`` URLs exit)."""
        for link in self.links:
            await self._drop(link)

    # ---------------------------------------------------------------- tools

    async def call(self, work: Callable[[], Awaitable[ToolText]]) -> ToolText:
        """Run one tool's work; every failure becomes a sentence, never an exception."""
        try:
            return await work()
        except NeedInput:
            raise
        except ParleyError as exc:
            return _fail(f"{exc.code}: {exc.message}")
        except Exception:  # the server must survive anything a service does
            return _fail("internal: the bridge failed to handle this call")

    async def ask(
        self,
        service: object,
        capability: object = None,
        params: object = None,
        handle: object = None,
        budget: object = None,
    ) -> ToolText:
        """Read: ``ASK`` a capability, ``EXPAND`` a handle, or (neither) the ``BRIEF``."""
        link = self._link(service)
        size = self.budget if budget is None else _check_budget(budget)
        if handle is not None:
            name = _check_name(handle, "handle")
            got = await self._request(link, lambda a: a.expand(name, budget=size))
        elif capability is None:
            got = await self._request(link, lambda a: a.hello(budget=size))
        else:
            cap, body = _check_name(capability, "capability"), _check_params(params)
            got = await self._request(link, lambda a: a.ask(cap, body, budget=size))
        return _render(got)

    async def intent(
        self,
        service: object,
        capability: object,
        params: object = None,
        goal: object = None,
        auto: object = None,
        budget: object = None,
    ) -> ToolText:
        """``INTENT``: proposals (remembered for ``commit``), a question, or a receipt."""
        link = self._link(service)
        cap, body = _check_name(capability, "capability"), _check_params(params)
        size = self.budget if budget is None else _check_budget(budget)
        if goal is not None and not isinstance(goal, str):
            raise ParleyError("invalid_params", "goal must be a string", reason="bad_argument")
        if auto is not None and not isinstance(auto, bool):
            raise ParleyError("invalid_params", "auto must be true or false", reason="bad_argument")
        got = await self._request(
            link, lambda a: a.intent(cap, body, goal=goal, auto=auto is True, budget=size)
        )
        if got.kind == "PROPOSALS":
            shown: Mapping[str, Any] = got.reply or {}
            self._remember(link, shown.get("proposals"))
        return _render(got)

    def _remember(self, link: _Link, proposals: object) -> None:
        for proposal in proposals if isinstance(proposals, list) else []:
            if not isinstance(proposal, dict) or not isinstance(proposal.get("id"), str):
                continue
            try:
                good = proposal_hash(proposal) == proposal.get("hash")
            except ParleyError:
                good = False
            if good:  # a proposal whose hash is not its own is shown but never committed
                link.shown.pop(proposal["id"], None)
                link.shown[proposal["id"]] = proposal
        while len(link.shown) > MAX_SHOWN:
            del link.shown[next(iter(link.shown))]

    async def undo(self, service: object, receipt: object) -> ToolText:
        """``UNDO`` a receipt within its window."""
        link = self._link(service)
        ident = _check_name(receipt, "receipt")
        got = await self._request(link, lambda a: a.undo(ident))
        if got.kind == "RECEIPT":
            link.undone.add(ident)
        return _render(got)

    def _consents(self, digest: str, service: str) -> list[str]:
        """The saved, unexpired consents for this proposal hash at this service, to this key.

        The hash does not name the service, so a consent is sent only where its ``svc``
        caveats allow: a service showing a copy of another's proposal never sees its consent.
        """
        out = []
        now = self.clock()
        for token in load_tokens(self.home, "consents"):
            try:
                grant = decode_grant(token)
            except ParleyError:
                continue
            caveats = [c for b in grant.blocks for c in b.raw_caveats]
            only = [c.get("only") for c in caveats if "only" in c]
            ends = [c.get("exp") for c in caveats if "exp" in c]
            live = all(isinstance(e, int) and e > now for e in ends)
            mine = grant.holder == self.key.public and _for_service(token, service)
            if mine and only and all(o == digest for o in only) and live:
                out.append(token)
        return out

    def _note(self, link: _Link, result: Result) -> Result:
        """Remember which receipt committed which proposal (for an UNDO, then a re-commit)."""
        reply: Mapping[str, Any] = result.reply or {}
        receipt = reply.get("receipt")
        if result.kind == "RECEIPT" and isinstance(receipt, dict):
            ident, proposal = receipt.get("id"), receipt.get("proposal")
            if isinstance(ident, str) and isinstance(proposal, str):
                link.receipts[proposal] = ident
        return result

    async def commit(self, service: object, proposal: object, human: Human | None) -> ToolText:
        """``COMMIT`` a shown proposal by id; ask the human when consent is required."""
        link = self._link(service)
        ident = _check_name(proposal, "proposal")
        shown = link.shown.get(ident)
        if shown is None:
            raise ParleyError(
                "not_found",
                f"{link.service} showed no proposal {ident[:80]!r} in this session; call "
                "parley_intent first and commit a proposal id exactly as shown",
                reason="not_shown",
            )
        receipt = link.receipts.get(ident)
        if receipt is not None and receipt in link.undone:
            raise ParleyError(
                "conflict",
                f"{ident} was committed (receipt {receipt}) and that receipt was undone; "
                "ask parley_intent for a new proposal",
                reason="undone",
            )
        saved = self._consents(shown["hash"], link.service)
        first = self._note(link, await self._request(link, lambda a: a.commit(shown, grants=saved)))
        if first.code != "consent_required":
            return _render(first)
        reply: Mapping[str, Any] = first.reply or {}
        try:
            consent = consent_for_shown(
                shown,
                service=link.service,
                request=reply.get("consent"),
                principals=self.principals or None,
            )
        except ParleyError as exc:
            return _fail(
                f"{exc.code}: {link.service} asked for consent that does not match the "
                f"proposal shown ({exc.message}); nothing was signed or committed"
            )
        # the model reads the consent rebuilt from what it was shown, not the service's own
        first.reply = cast("ErrorReply", {**reply, "consent": consent})
        message = consent_message(consent, shown, self.key.public)
        answer = None if human is None else await human(consent, message)
        if answer is None:
            return self._ask_user_to_approve(first, consent, shown)
        if answer != "accept":
            text = _render(first).text
            return ToolText(
                f"{text}\n  → the user declined to approve it; nothing was committed.", True
            )
        try:
            token = PrincipalKeyStore().approve(
                consent,
                self.key.public,
                confirm=lambda _prompt: True,  # the human accepted the message above
                iat=int(self.clock()),
                name=self.principal,
                proposal=shown,
            )
        except ParleyError as exc:
            # the reason only: the message may name the principal's folder, which the
            # model has no business knowing
            result = self._ask_user_to_approve(first, consent, shown)
            why = exc.reason or exc.code
            return ToolText(
                f"{result.text}\n  (the approval could not be signed here: {why})", True
            )
        save_token(self.home, "consents", token, consent["hash"])
        second = self._note(
            link, await self._request(link, lambda a: a.commit(shown, grants=[token]))
        )
        return _render(second)

    def _ask_user_to_approve(
        self, first: Result, consent: dict[str, Any], shown: dict[str, Any]
    ) -> ToolText:
        text = _render(first).text
        try:
            pending = save_pending(self.home, consent, shown)
        except ParleyError as exc:
            return ToolText(f"{text}\n  → the user must approve it ({exc.message}).", True)
        command = f"parley approve {pending} --agent {self.key.public} --save"
        return ToolText(
            f"{text}\n  → the user must approve it. Ask them to run: {command}  — then call "
            "parley_commit again.",
            True,
        )


def new_token() -> str:
    """A fresh random token for a pending question (192 bits)."""
    return secrets.token_urlsafe(24)
