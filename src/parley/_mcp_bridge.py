"""``parley mcp``: Parley services as an MCP server (stdio, or streamable HTTP on loopback).

Built on the official ``mcp`` SDK (extra ``[mcp]``). Four tools, named and shaped as the
reference bridge's so an agent prompted for it works unchanged: ``parley_ask``,
``parley_intent``, ``parley_commit``, ``parley_undo``. Results are Lens text; the server
instructions carry every service's ``BRIEF`` in Lens. The work is done by
:class:`parley._bridge.Bridge`; this module adds the MCP surface and the one thing only an
MCP client can do: ask the human, by elicitation, to approve a consent.

Elicitation follows the negotiated protocol. From 2026-07-28 the ``parley_commit`` call
returns an ``InputRequiredResult`` holding the question and a one-time random
``request_state`` that the bridge remembers with the service, the proposal hash and the
exact question; the answer counts only when the client retries the same commit with that
state, once. Before 2026-07-28 the question is a standalone ``elicitation/create`` request
in the middle of the call. A client that cannot elicit gets the ``parley approve`` command
for the user instead.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import secrets
import socket
import sys
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import (
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
    TextContent,
    ToolAnnotations,
)
from mcp_types.version import is_version_at_least
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from ._bridge import Bridge, Human, NeedInput, ToolText, new_token
from ._keystore import _private_dir
from .errors import ParleyError

__all__ = [
    "CONSENT_INPUT",
    "TOKEN_ENV",
    "TOOLS",
    "create_app",
    "create_server",
    "http_token",
    "run_http",
    "run_stdio",
]

CONSENT_INPUT = "parley_consent"
"""The key of the consent question in an ``InputRequiredResult``."""

APPROVE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Approve",
            "description": "Sign a one-time consent for exactly this proposal",
        }
    },
    "required": ["approve"],
}
"""The form the human answers: one boolean, ``true`` only on an explicit approval."""

_MODERN = "2026-07-28"
QUESTION_TTL = 600.0
"""**Ours:** seconds a consent question waits for the client's retry."""
MAX_QUESTIONS = 64
"""**Ours:** consent questions waiting at once (the oldest is forgotten first)."""


def _obj(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


_S = {"type": "string"}
TOOLS: list[dict[str, Any]] = [
    {
        "name": "parley_ask",
        "description": "Read (never changes anything). Pass `handle` to expand an elided result.",
        "inputSchema": _obj(
            {
                "service": _S,
                "capability": _S,
                "params": {"type": "object"},
                "handle": _S,
                "budget": {"type": "integer"},
            },
            ["service"],
        ),
        "annotations": {"readOnlyHint": True, "openWorldHint": True},
    },
    {
        "name": "parley_intent",
        "description": (
            "Request a change. Returns proposals (effects, cost, risk, undo) to commit, or a "
            "question. auto:true commits the first proposal at once if your grant allows and "
            "it is undoable."
        ),
        "inputSchema": _obj(
            {
                "service": _S,
                "capability": _S,
                "params": {"type": "object"},
                "goal": _S,
                "auto": {"type": "boolean"},
                "budget": {"type": "integer"},
            },
            ["service", "capability"],
        ),
        "annotations": {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": True},
    },
    {
        "name": "parley_commit",
        "description": "Execute a proposal by id, exactly as shown. Only what the user wants.",
        "inputSchema": _obj({"service": _S, "proposal": _S}, ["service", "proposal"]),
        "annotations": {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": True},
    },
    {
        "name": "parley_undo",
        "description": "Undo a receipt within its undo window.",
        "inputSchema": _obj({"service": _S, "receipt": _S}, ["service", "receipt"]),
        "annotations": {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": True},
    },
]
"""The four tools: names, descriptions and input schemas as the reference bridge's."""


def _result(text: ToolText) -> CallToolResult:
    # Lens text only: no structured copy, which would make the model read everything twice
    return CallToolResult(content=[TextContent(type="text", text=text.text)], is_error=text.error)


class _Questions:
    """Consent questions sent in an ``InputRequiredResult``, waiting for the retry.

    Each is a random token bound to ``(service, proposal hash, question digest)``; it is
    taken at most once, and only by a retry for the same consent.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._waiting: OrderedDict[str, tuple[tuple[str, str, str], float]] = OrderedDict()

    def ask(self, key: tuple[str, str, str]) -> str:
        token = new_token()
        self._waiting[token] = (key, self.clock() + QUESTION_TTL)
        while len(self._waiting) > MAX_QUESTIONS:
            self._waiting.popitem(last=False)
        return token

    def take(self, token: object, key: tuple[str, str, str]) -> bool:
        if not isinstance(token, str):
            return False
        held = self._waiting.get(token)
        if held is None or held[0] != key:
            return False
        del self._waiting[token]
        return held[1] >= self.clock()


def _action(answer: object) -> str:
    if not isinstance(answer, ElicitResult):
        return "cancel"
    if answer.action == "accept":
        content = answer.content or {}
        return "accept" if content.get("approve") is True else "decline"
    return answer.action


def _can_elicit(ctx: Context[Any, Any]) -> bool:
    try:
        capabilities = ctx.client_capabilities
    except Exception:  # no request behind the call
        return False
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def _human(ctx: Context[Any, Any], questions: _Questions) -> Human:
    async def ask(consent: dict[str, Any], message: str) -> str | None:
        if not _can_elicit(ctx):
            return None
        digest = hashlib.sha256(message.encode("utf-8", "surrogatepass")).hexdigest()
        key = (str(consent["service"]), str(consent["hash"]), digest)
        version = ctx.protocol_version
        if version is not None and is_version_at_least(version, _MODERN):
            answers = ctx.input_responses or {}
            if CONSENT_INPUT in answers and questions.take(ctx.request_state, key):
                return _action(answers[CONSENT_INPUT])
            request = ElicitRequest(
                params=ElicitRequestFormParams(message=message, requested_schema=APPROVE_SCHEMA)
            )
            raise NeedInput(
                InputRequiredResult(
                    input_requests={CONSENT_INPUT: request}, request_state=questions.ask(key)
                )
            )
        session = ctx.request_context.session
        if not session.can_send_request:
            return None
        try:
            answer = await session.elicit_form(
                message=message, requested_schema=APPROVE_SCHEMA, related_request_id=ctx.request_id
            )
        except Exception:  # a client that fails to ask has not approved
            return None
        return _action(answer)

    return ask


def create_server(bridge: Bridge, *, name: str = "parley-bridge", elicit: bool = True) -> MCPServer:
    """Return the :class:`MCPServer` with the four tools bound to a started ``bridge``.

    With ``elicit=False`` the bridge never asks through the client and never signs: a
    consent is always left to ``parley approve`` on the user's terminal (for a client
    that might answer elicitations by itself, or let the model answer them).
    """
    questions = _Questions()

    async def run(work: Callable[[], Awaitable[ToolText]]) -> CallToolResult:
        return _result(await bridge.call(work))

    async def parley_ask(
        service: Any = None,
        capability: Any = None,
        params: Any = None,
        handle: Any = None,
        budget: Any = None,
    ) -> CallToolResult:
        return await run(lambda: bridge.ask(service, capability, params, handle, budget))

    async def parley_intent(
        service: Any = None,
        capability: Any = None,
        params: Any = None,
        goal: Any = None,
        auto: Any = None,
        budget: Any = None,
    ) -> CallToolResult:
        return await run(lambda: bridge.intent(service, capability, params, goal, auto, budget))

    async def parley_commit(
        ctx: Context,
        service: Any = None,
        proposal: Any = None,
        hash: Any = None,  # the reference's argument name, refused here
    ) -> CallToolResult | InputRequiredResult:
        if hash is not None:
            return _result(
                ToolText(
                    "✗ invalid_params: parley_commit takes a proposal id only; the bridge "
                    "commits the proposal it showed, with the hash it had when shown",
                    True,
                )
            )
        try:
            human = _human(ctx, questions) if elicit else None
            return await run(lambda: bridge.commit(service, proposal, human))
        except NeedInput as need:
            payload: InputRequiredResult = need.payload
            return payload

    async def parley_undo(service: Any = None, receipt: Any = None) -> CallToolResult:
        return await run(lambda: bridge.undo(service, receipt))

    functions: dict[str, Callable[..., Any]] = {
        "parley_ask": parley_ask,
        "parley_intent": parley_intent,
        "parley_commit": parley_commit,
        "parley_undo": parley_undo,
    }
    tools = []
    for spec in TOOLS:
        tool = Tool.from_function(
            functions[spec["name"]],
            name=spec["name"],
            description=spec["description"],
            annotations=ToolAnnotations.model_validate(spec["annotations"]),
        )
        # Publish the reference's schema; the bridge checks every argument itself.
        tools.append(tool.model_copy(update={"parameters": spec["inputSchema"]}))
    return MCPServer(name, instructions=bridge.instructions, tools=tools, log_level="WARNING")


async def run_stdio(bridge: Bridge, *, elicit: bool = True) -> None:
    """Start ``bridge`` and serve it over standard input and output until end of input."""
    try:
        await bridge.start()
        await create_server(bridge, elicit=elicit).run_stdio_async()
    finally:
        await bridge.close()


_LOCAL_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
_LOCAL_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]


class _Bearer:
    """Refuse every HTTP request without ``Authorization: Bearer <token>`` (401)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.digest = hashlib.sha256(token.encode("utf-8")).digest()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            header = b""
            for key, value in scope.get("headers", []):
                if key == b"authorization":
                    header = value
                    break
            scheme, _, presented = header.partition(b" ")
            # fixed-length digests, so neither length nor content leaks through timing
            given = hashlib.sha256(presented.strip()).digest()
            if scheme.lower() != b"bearer" or not hmac.compare_digest(given, self.digest):
                refusal = Response(
                    "parley mcp: send the bearer token (Authorization: Bearer <token>)",
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(
    bridge: Bridge, *, token: str, max_body_bytes: int = 256 * 1024, elicit: bool = True
) -> ASGIApp:
    """The streamable HTTP app (``/mcp``, JSON responses, stateless) of a started bridge.

    Every request needs ``Authorization: Bearer <token>``; Host and Origin are checked
    (DNS-rebinding protection): only loopback names pass.
    """
    if not isinstance(token, str) or len(token) < 16:
        raise ParleyError(
            "bad_config", "the HTTP bearer token needs 16 characters or more", reason="token"
        )
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(_LOCAL_HOSTS),
        allowed_origins=list(_LOCAL_ORIGINS),
    )
    app = create_server(bridge, elicit=elicit).streamable_http_app(
        json_response=True,
        stateless_http=True,
        max_request_body_size=max_body_bytes,
        transport_security=security,
    )
    return _Bearer(app, token)


TOKEN_ENV = "PARLEY_MCP_TOKEN"  # noqa: S105 - a variable name, not a secret
"""Environment variable holding the HTTP bearer token (else one is made at start)."""


def http_token(home: Path, environ: Mapping[str, str] | None = None) -> tuple[str, Path | None]:
    """The bearer token for ``--http``: ``$PARLEY_MCP_TOKEN``, or a fresh one saved.

    A fresh token (256 bits) is written to ``<home>/mcp-http.token``, mode ``0600``, for
    the user to copy into the MCP client's configuration; returns the token and the file.
    """
    env = os.environ if environ is None else environ
    given = env.get(TOKEN_ENV)
    if given:
        return given, None
    token = secrets.token_urlsafe(32)
    target = home / "mcp-http.token"
    _private_dir(home)
    target.unlink(missing_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
    return token, target


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def run_http(
    bridge: Bridge, host: str = "127.0.0.1", port: int = 8766, *, elicit: bool = True
) -> None:
    """Start ``bridge`` and serve it over streamable HTTP at ``http://host:port/mcp``.

    **Ours:** only a loopback address is accepted, and every request needs the bearer
    token (:func:`http_token`): whoever reaches the endpoint acts with the agent's key and
    grants, so neither another machine nor another local user may.
    """
    import uvicorn

    if not _loopback(host):
        raise ParleyError(
            "bad_config",
            f"the MCP bridge serves HTTP on loopback only (127.0.0.1, ::1), not {host[:80]!r}: "
            "whoever reaches it acts with the agent's key",
            reason="not_loopback",
        )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        # listening before the address is printed: a client that reads it and connects at
        # once waits in the backlog until the server accepts, instead of being refused
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ParleyError(
            "unavailable", f"cannot listen on {host}:{port}: {exc.strerror}", reason="bind"
        ) from None
    try:
        token, where = http_token(bridge.home)
        await bridge.start()
        app = create_app(bridge, token=token, elicit=elicit)
        bound = sock.getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        source = f"the bearer token is in {where}" if where else f"bearer token from ${TOKEN_ENV}"
        print(f"parley mcp: http://{shown}:{bound}/mcp ({source})", file=sys.stderr, flush=True)
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
        await uvicorn.Server(config).serve(sockets=[sock])
    finally:
        sock.close()
        await bridge.close()
