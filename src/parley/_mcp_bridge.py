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
import ipaddress
import socket
import sys
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
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
from starlette.types import ASGIApp

from ._bridge import Bridge, Human, NeedInput, ToolText, new_token
from ._errors import ParleyError

__all__ = ["CONSENT_INPUT", "TOOLS", "create_app", "create_server", "run_http", "run_stdio"]

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


def create_server(bridge: Bridge, *, name: str = "parley-bridge") -> MCPServer:
    """Return the :class:`MCPServer` with the four tools bound to a started ``bridge``."""
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
            return await run(lambda: bridge.commit(service, proposal, _human(ctx, questions)))
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


async def run_stdio(bridge: Bridge) -> None:
    """Start ``bridge`` and serve it over standard input and output until end of input."""
    await bridge.start()
    try:
        await create_server(bridge).run_stdio_async()
    finally:
        await bridge.close()


_LOCAL_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
_LOCAL_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]


def create_app(bridge: Bridge, *, max_body_bytes: int = 256 * 1024) -> ASGIApp:
    """The streamable HTTP app (``/mcp``, JSON responses, stateless) of a started bridge.

    Host and Origin are checked (DNS-rebinding protection): only loopback names pass.
    """
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(_LOCAL_HOSTS),
        allowed_origins=list(_LOCAL_ORIGINS),
    )
    return create_server(bridge).streamable_http_app(
        json_response=True,
        stateless_http=True,
        max_request_body_size=max_body_bytes,
        transport_security=security,
    )


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def run_http(bridge: Bridge, host: str = "127.0.0.1", port: int = 8766) -> None:
    """Start ``bridge`` and serve it over streamable HTTP at ``http://host:port/mcp``.

    **Ours:** only a loopback address is accepted: whoever reaches the endpoint acts with
    the agent's key and grants, so it must not be reachable from another machine.
    """
    import uvicorn

    if not _loopback(host):
        raise ParleyError(
            "invalid_params",
            f"the MCP bridge serves HTTP on loopback only (127.0.0.1, ::1), not {host[:80]!r}: "
            "whoever reaches it acts with the agent's key",
            reason="not_loopback",
        )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ParleyError(
            "unavailable", f"cannot listen on {host}:{port}: {exc.strerror}", reason="bind"
        ) from None
    await bridge.start()
    try:
        app = create_app(bridge)
        bound = sock.getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        print(f"parley mcp: http://{shown}:{bound}/mcp", file=sys.stderr, flush=True)
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
        await uvicorn.Server(config).serve(sockets=[sock])
    finally:
        sock.close()
        await bridge.close()
