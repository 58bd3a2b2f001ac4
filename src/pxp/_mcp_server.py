"""PXP over MCP (seed §8): an ASGI app exposing a room server to any MCP-capable agent.

:func:`create_app` builds one Starlette app that serves

* ``/mcp``: the eight tools over MCP Streamable HTTP with JSON responses, stateless (every
  request stands alone, so a restart loses nothing: rooms, seats and ledgers live in the
  room store, link digests in the link store);
* ``/p/<room>/<token>``: the principal's web page (see :mod:`pxp._server_web`);
* ``/s/<room>/<token>``: a note telling a human what a seat link is for.

Every HTTP request passes a Host check (DNS-rebinding protection, on by default, with
configurable allowed hosts) and a body-size limit before anything else runs. A tool refuses
with :class:`~mcp.server.mcpserver.exceptions.ToolError` and one sentence; links never
appear in a refusal, a log line or another seat's view.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.transport_security import RequestBodyLimitMiddleware, TransportSecuritySettings
from mcp_types import Annotations, CallToolResult, TextContent, ToolAnnotations
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from ._server_links import UNKNOWN_LINK, MintedLinks, SeatGrant
from ._server_rooms import RoomService
from ._server_tools import TOOL_SPECS
from ._server_web import WebBackend, web_routes
from .errors import PxpError

__all__ = ["SIGN_IN_REFUSAL", "ServerConfig", "create_app", "create_mcp_server"]

SIGN_IN_REFUSAL = (
    "Sign-in required: send your principal agent key as the HTTP header "
    "'Authorization: Bearer <key>'; no room was created."
)
"""The one fixed sentence for a missing or rejected agent key on ``create_room``."""

_LOCAL_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")
_LOCAL_ORIGINS = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")


@dataclass(frozen=True)
class ServerConfig:
    """How the room server behaves; every field has a safe default for a local server.

    ``public_url`` prefixes every link handed out (no trailing slash). ``allowed_hosts`` and
    ``allowed_origins`` drive DNS-rebinding protection (``"host:*"`` means any port); set
    them to the public name for a real deployment. ``agent_keys``, when not empty, turns on
    sign-in: ``create_room`` then needs ``Authorization: Bearer <key>`` with one of them.
    ``max_body_bytes`` caps every request body (answered 413). ``max_wait_seconds`` bounds
    ``wait_for_turn``; ``poll_seconds`` is how often a waiting call re-reads the store (so
    it sees writes made by another process). ``max_waiters_per_seat`` and ``max_waiters``
    cap the ``wait_for_turn`` calls waiting at once (each re-reads its room while it waits),
    per seat and in all; a call over a cap does not wait: it answers at once with the view,
    ``ready``/``timed_out`` as of now and ``wait_busy: true``. ``max_waiters_per_client``
    caps one client's waiting calls over every room and seat: a client that sends a valid
    agent key is that key, and over the cap it is refused (``wait_limit``: only its own calls
    are held up); any other client is its network address, which several clients may share
    (one machine, NAT, a proxy), so over the cap it is answered ``wait_busy`` as above.
    """

    public_url: str = "http://127.0.0.1:8765"
    allowed_hosts: tuple[str, ...] = _LOCAL_HOSTS
    allowed_origins: tuple[str, ...] = _LOCAL_ORIGINS
    agent_keys: tuple[str, ...] = field(default=(), repr=False)
    max_body_bytes: int = 256 * 1024
    max_wait_seconds: float = 25.0
    default_wait_seconds: float = 20.0
    poll_seconds: float = 0.5
    max_waiters_per_seat: int = 4
    max_waiters: int = 128
    max_waiters_per_client: int = 16
    name: str = "pxp-room-server"

    def __post_init__(self) -> None:
        if self.max_body_bytes <= 0:
            raise PxpError("config_invalid", "max_body_bytes must be a positive number of bytes")
        if not self.public_url.startswith(("http://", "https://")):
            raise PxpError("config_invalid", "public_url must start with http:// or https://")
        if not 1 <= self.default_wait_seconds <= self.max_wait_seconds:
            raise PxpError(
                "config_invalid", "default_wait_seconds must lie between 1 and max_wait_seconds"
            )
        if not (math.isfinite(self.poll_seconds) and self.poll_seconds > 0):
            # Zero would turn every waiting call into a busy loop over the store.
            raise PxpError("config_invalid", "poll_seconds must be a positive number")
        if min(self.max_waiters_per_seat, self.max_waiters, self.max_waiters_per_client) < 1:
            raise PxpError("config_invalid", "the waiter limits must be at least 1")
        if any(not k for k in self.agent_keys):
            raise PxpError("config_invalid", "an agent key is empty")


class _Changes:
    """Wakes the waiting ``wait_for_turn`` calls of one room in this process after a write.

    Also counts the waiting calls, so one seat, one client (or everyone together) cannot pile
    up long-polls: each waiting call re-reads its room from the store while it waits.
    """

    def __init__(self) -> None:
        self._events: dict[str, asyncio.Event] = {}
        self._waiting: dict[str, int] = {}
        self._seats: dict[tuple[str, str], int] = {}
        self._clients: dict[str, int] = {}
        self.total = 0
        self._loop: asyncio.AbstractEventLoop | None = None

    def bump_from_thread(self, room_id: str) -> None:
        """:meth:`bump` from another thread (a store's change listener, issue 23)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.bump, room_id)

    def bump_all_from_thread(self) -> None:
        """Wake every waiting call from another thread: the change listener reconnected
        and may have missed changes meanwhile (review pg2 #4)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.bump_all)

    def bump_all(self) -> None:
        """Wake every waiting call of every room (each reads its room again)."""
        events, self._events = self._events, {}
        for event in events.values():
            event.set()

    def bump(self, room_id: str) -> None:
        event = self._events.pop(room_id, None)
        if event is not None:
            event.set()

    def client_full(self, client: str, limit: int) -> bool:
        return self._clients.get(client, 0) >= limit

    def enter(self, room_id: str, seat: str, client: str, *, per_seat: int, overall: int) -> bool:
        # the loop is known before the waiter's first read: a wake-up from another
        # replica that lands during that read is then run after it, never lost
        with contextlib.suppress(RuntimeError):
            self._loop = asyncio.get_running_loop()
        key = (room_id, seat)
        if self.total >= overall or self._seats.get(key, 0) >= per_seat:
            return False
        self.total += 1
        self._seats[key] = self._seats.get(key, 0) + 1
        self._waiting[room_id] = self._waiting.get(room_id, 0) + 1
        self._clients[client] = self._clients.get(client, 0) + 1
        return True

    def leave(self, room_id: str, seat: str, client: str) -> None:
        key = (room_id, seat)
        self._clients[client] -= 1
        if not self._clients[client]:
            del self._clients[client]
        self.total -= 1
        self._seats[key] -= 1
        if not self._seats[key]:
            del self._seats[key]
        self._waiting[room_id] -= 1
        if not self._waiting[room_id]:
            del self._waiting[room_id]
            self._events.pop(room_id, None)

    async def wait(self, room_id: str, seconds: float) -> None:
        event = self._events.get(room_id)
        if event is None:
            event = self._events[room_id] = asyncio.Event()
        try:
            await asyncio.wait_for(event.wait(), timeout=max(seconds, 0.0))
        except TimeoutError:
            return


def _key_ok(header: str | None, keys: Sequence[str]) -> bool:
    if not header:
        return False
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return False
    presented = hashlib.sha256(value.strip().encode("utf-8", "surrogatepass")).digest()
    ok = False
    for key in keys:
        # Compare fixed-length digests so neither length nor content leaks through timing.
        if hmac.compare_digest(presented, hashlib.sha256(key.encode("utf-8")).digest()):
            ok = True
    return ok


def _client_of(context: Context[Any, Any] | None, keys: Sequence[str]) -> str:
    """Who is calling, for the per-client wait cap: the digest of a valid agent key when the
    request carries one (many agents behind one address stay apart), else the peer address
    (an invalid key counts for nothing, so inventing keys buys no places)."""
    header = _authorization(context)
    if keys and _key_ok(header, keys):
        value = str(header).strip().partition(" ")[2].strip()
        return "key:" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
    try:
        client = getattr(context.request_context.request, "client", None) if context else None
    except Exception:  # no request behind the call (in process)
        client = None
    host = getattr(client, "host", None)
    return f"addr:{host}" if isinstance(host, str) else "addr:?"


def _authorization(context: Context[Any, Any] | None) -> str | None:
    """The ``Authorization`` header of the HTTP request behind a tool call, if any."""
    if context is None:
        return None
    try:
        headers = context.headers
    except Exception:  # no request behind the call (in process): no header
        return None
    return None if headers is None else headers.get("authorization")


class _RoomServer(MCPServer[Any]):
    """The SDK server with two checks in front of every tool call.

    Sign-in is checked before the arguments, so a ``create_room`` without a good key gets
    the one fixed sentence whatever else is wrong with it. Arguments of the wrong shape
    are refused with one sentence naming the fields, never echoing the values sent (a
    value may be a link).
    """

    def __init__(self, name: str, *, agent_keys: Sequence[str], **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self._agent_keys = tuple(agent_keys)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        """Check sign-in for ``create_room``, run the tool, and tidy argument refusals."""
        keys = self._agent_keys
        if name == "create_room" and keys and not _key_ok(_authorization(context), keys):
            raise ToolError(f"Error executing tool {name}: {SIGN_IN_REFUSAL}")
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ValidationError):
                raise
            fields = sorted({".".join(str(part) for part in e["loc"]) for e in cause.errors()})
            listed = ", ".join(fields)[:300]
            raise ToolError(
                f"Error executing tool {name}: argument_invalid: these arguments are missing "
                f"or of the wrong type: {listed}."
            ) from cause


def _result(data: dict[str, Any], *, for_user: str | None = None) -> CallToolResult:
    content: list[Any] = [TextContent(type="text", text=json.dumps(data, ensure_ascii=False))]
    if for_user is not None:
        content.append(
            TextContent(type="text", text=for_user, annotations=Annotations(audience=["user"]))
        )
    return CallToolResult(content=content, structured_content=data)


_LINKISH = re.compile(r"[0-9a-f]{16}[./][A-Za-z0-9_-]{43}|t=[A-Za-z0-9_-]{43}")
_MAX_REFUSAL = 400
_log = logging.getLogger("pxp.server")


def _refuse(exc: PxpError) -> ToolError:
    # Engine messages may quote the offending value; a caller that put a link in the wrong
    # field must not get it back in a refusal (which the SDK also logs), nor a huge echo.
    message = _LINKISH.sub("<link>", exc.message)
    if len(message) > _MAX_REFUSAL:
        message = message[: _MAX_REFUSAL - 1] + "…"
    _log.info("refused a tool call: %s", exc.code)
    return ToolError(f"{exc.code}: {message}")


def create_mcp_server(
    service: RoomService, config: ServerConfig, changes: _Changes | None = None
) -> MCPServer:
    """Return the :class:`MCPServer` with the eight PXP tools bound to ``service``.

    Exposed for embedding (mount it in another app, or call tools in process, where there
    are no HTTP headers, so sign-in always refuses); most users want :func:`create_app`.
    """
    notify = changes if changes is not None else _Changes()

    def grant(link: str) -> SeatGrant:
        return service.grant(link, "seat")

    async def create_room(
        topic: str,
        your_principal: str,
        counterpart: str,
        ctx: Context,
        counterpart_proxy: str = "external",
        passcode: str | None = None,
    ) -> CallToolResult:
        if config.agent_keys:
            headers = ctx.headers or {}
            if not _key_ok(headers.get("authorization"), config.agent_keys):
                raise ToolError(SIGN_IN_REFUSAL)
        try:
            made = service.create_room(
                topic=topic,
                your_principal=your_principal,
                counterpart=counterpart,
                counterpart_proxy=counterpart_proxy,
            )
        except PxpError as exc:
            raise _refuse(exc) from None
        notify.bump(made.room_id)
        base = config.public_url
        external = counterpart_proxy == "external"
        data: dict[str, Any] = {
            "room_id": made.room_id,
            "your_link": made.link(base, "A", "seat"),
            "invite_link_for_counterpart": made.link(base, "B", "invite") if external else None,
            "counterpart_proxy": counterpart_proxy,
            "next_action": (
                f"Give invite_link_for_counterpart privately to {counterpart}. They paste it "
                f"into their own MCP-capable agent connected to {base}/mcp. Then ask your "
                "principal for their Intent Card and call seal_intent_card with your_link."
                if external
                else "The room's built-in proxy sits in seat B. Ask your principal for their "
                "Intent Card and call seal_intent_card with your_link."
            ),
        }
        # The link stands alone on its last line: nothing after it for a copy to catch.
        note = (
            "For the principal only (do not open or forward). Your page in this room:\n"
            + made.link(base, "A", "principal")
        )
        return _result(data, for_user=note)

    async def join_room(
        link: str, agent_name: str | None = None, join_id: str | None = None
    ) -> CallToolResult:
        try:
            seat = service.grant(link, ("seat", "invite"))
        except PxpError as exc:
            raise _refuse(exc) from None
        try:
            # ours (review i25b #5): join_id, the joining agent's own secret, makes the retry
            # of a join whose answer it lost an answer again, not a contest
            joined = service.join(seat, agent_name or "unnamed agent", join_id=join_id)
        except PxpError as exc:
            if exc.code == "seat_contested":
                notify.bump(seat.room_id)  # the contest was recorded: waiters wake to it
            raise _refuse(exc) from None
        notify.bump(seat.room_id)
        view = joined.view
        if joined.seat_token is not None:
            # ours: the invite is spent; this link is the agent's credential from now on
            own = MintedLinks(seat.room_id, {(seat.seat, "seat"): joined.seat_token})
            view = {**view, "your_link": own.link(config.public_url, seat.seat, "seat")}
        note = (
            "This seat's principal page link was issued to the agent that joined this seat "
            "and is not shown again."
        )
        if joined.notice is not None:
            view = {**view, "seat_notice": joined.notice}  # ours: the seat's history
            note = joined.notice + "\n" + note
        if joined.page_token is not None:
            note = (
                (joined.notice + "\n" if joined.notice else "")
                + "For the principal only (do not open or forward). Your page in this room:\n"
                f"{config.public_url}/p/{seat.room_id}/{joined.page_token}"
            )
        return _result(view, for_user=note)

    async def seal_intent_card(link: str, card: dict[str, Any]) -> CallToolResult:
        try:
            seat = grant(link)
            view = service.seal(seat, card, "mcp")
        except PxpError as exc:
            raise _refuse(exc) from None
        notify.bump(seat.room_id)
        return _result(view)

    async def get_room(link: str) -> CallToolResult:
        try:
            return _result(service.view(grant(link)))
        except PxpError as exc:
            raise _refuse(exc) from None

    async def wait_for_turn(link: str, ctx: Context, timeout_seconds: Any = None) -> CallToolResult:
        wait = config.default_wait_seconds if timeout_seconds is None else timeout_seconds
        # Compare before math.isfinite: a huge JSON integer would overflow it.
        if (
            not isinstance(wait, int | float)
            or isinstance(wait, bool)
            or not (1 <= wait <= config.max_wait_seconds and math.isfinite(wait))
        ):
            raise _refuse(
                PxpError(
                    "wait_invalid",
                    f"timeout_seconds must be a number from 1 to {config.max_wait_seconds:g}.",
                )
            )
        deadline = time.monotonic() + wait
        try:
            seat = grant(link)
        except PxpError as exc:
            raise _refuse(exc) from None

        def is_ready(view: dict[str, Any], started: str) -> bool:
            # Ready: our move, the end, or a pause that began while we waited (a pause
            # that was already there when the call began is waited out, not spun on).
            return bool(
                view["your_turn"]
                or view["status"] in ("agreed", "stalled")
                or (view["status"] == "drafting" and not view["you"]["card_sealed"])
                or (view["status"] == "paused" and started != "paused")
            )

        client = _client_of(ctx, config.agent_keys)
        full = notify.client_full(client, config.max_waiters_per_client)
        if full and client.startswith("key:"):
            # a signed-in agent's own calls fill its places: refusing holds up no one else
            raise _refuse(
                PxpError(
                    "wait_limit",
                    f"this agent key already has {config.max_waiters_per_client} "
                    "wait_for_turn calls waiting; let one return before starting another.",
                )
            )
        if full or not notify.enter(
            seat.room_id,
            seat.seat,
            client,
            per_seat=config.max_waiters_per_seat,
            overall=config.max_waiters,
        ):
            # over a cap (this seat's, the server's, which another room's client may have
            # filled, or an address's, which clients behind one address share): answer at
            # once as get_room would, never refuse, so a client filling the caps cannot stop
            # anyone else's agent from reading its room
            try:
                view = service.view(seat)
            except PxpError as exc:
                raise _refuse(exc) from None
            ready = is_ready(view, view["status"])
            view["ready"] = ready
            view["timed_out"] = not ready
            view["wait_busy"] = True
            return _result(view)
        try:
            started: str | None = None
            while True:
                view = service.view(seat)
                started = view["status"] if started is None else started
                ready = is_ready(view, started)
                left = deadline - time.monotonic()
                if ready or left <= 0:
                    view["ready"] = ready
                    view["timed_out"] = not ready
                    return _result(view)
                await notify.wait(seat.room_id, min(left, config.poll_seconds))
        except PxpError as exc:
            raise _refuse(exc) from None
        finally:
            notify.leave(seat.room_id, seat.seat, client)

    async def send_envelope(
        link: str,
        message: str,
        status: str,
        claims: list[dict[str, Any]] | None = None,
        reviews: list[dict[str, Any]] | None = None,
        proposal: dict[str, Any] | None = None,
        escalation: dict[str, Any] | None = None,
    ) -> CallToolResult:
        draft: dict[str, Any] = {"message": message, "status": status}
        for key, value in (
            ("claims", claims),
            ("reviews", reviews),
            ("proposal", proposal),
            ("escalation", escalation),
        ):
            if value is not None:
                draft[key] = value
        try:
            seat = grant(link)
            data = service.send(seat, draft)
        except PxpError as exc:
            raise _refuse(exc) from None
        notify.bump(seat.room_id)
        return _result(data)

    async def answer_escalation(link: str, answer: str) -> CallToolResult:
        try:
            seat = grant(link)
            # A seat link can only ever relay: the web page is the one way to say "web".
            view = service.answer(seat, answer, "mcp")
        except PxpError as exc:
            raise _refuse(exc) from None
        notify.bump(seat.room_id)
        return _result(view)

    async def get_brief(room_id: str | None = None, link: str | None = None) -> CallToolResult:
        if link is None:
            raise _refuse(
                PxpError(
                    "link_required",
                    "get_brief answers only a caller holding a seat link of the room.",
                )
            )
        try:
            seat = grant(link)
            if room_id is not None and room_id != seat.room_id:
                raise PxpError("link_unknown", UNKNOWN_LINK)
            return _result(service.brief_data(seat))
        except PxpError as exc:
            raise _refuse(exc) from None

    functions: dict[str, Callable[..., Any]] = {
        "create_room": create_room,
        "join_room": join_room,
        "seal_intent_card": seal_intent_card,
        "get_room": get_room,
        "wait_for_turn": wait_for_turn,
        "send_envelope": send_envelope,
        "answer_escalation": answer_escalation,
        "get_brief": get_brief,
    }
    tools: list[Tool] = []
    for spec in TOOL_SPECS:
        tool = Tool.from_function(
            functions[spec.name],
            name=spec.name,
            description=spec.description,
            annotations=ToolAnnotations.model_validate(spec.annotations),
        )
        # Publish the reference's exact input schema; arguments are still checked by the
        # function signature, and the room engine checks everything again.
        tools.append(tool.model_copy(update={"parameters": spec.input_schema}))
    return _RoomServer(
        config.name,
        agent_keys=config.agent_keys,
        instructions=(
            "A PXP (Proxy Exchange Protocol) negotiation room. You act as one principal's proxy. "
            "create_room or join_room, seal_intent_card, then loop: wait_for_turn, get_room, "
            "send_envelope; escalate to your principal when your card says so; get_brief at "
            "the end."
        ),
        tools=tools,
        log_level="WARNING",
    )


def _is_port(text: str) -> bool:
    # ASCII digits only: str.isdigit() also accepts "²" and other Unicode digits.
    return text.isascii() and text.isdigit()


class _HostGuard:
    """Refuse any HTTP request whose Host is not allowed (DNS-rebinding protection), and the
    standalone GET stream of ``/mcp``."""

    def __init__(self, app: ASGIApp, allowed_hosts: Sequence[str]) -> None:
        self.app = app
        self.allowed = tuple(allowed_hosts)

    def _ok(self, host: str) -> bool:
        for item in self.allowed:
            if host == item:
                return True
            wildcard = item.endswith(":*") and host.startswith(item[:-2] + ":")
            if wildcard and _is_port(host[len(item) - 1 :]):
                return True
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            host = ""
            for key, value in scope.get("headers", []):
                if key == b"host":
                    host = value.decode("latin-1")
                    break
            if not self._ok(host):
                await Response("Invalid Host header", status_code=421)(scope, receive, send)
                return
            if scope.get("method") == "GET" and scope.get("path", "").rstrip("/") == "/mcp":
                # Stateless HTTP has no server-initiated messages, so a GET stream would
                # only hold a connection open for ever, for anyone: the MCP transport lets
                # a server without one answer 405.
                refusal = Response("No SSE stream here", status_code=405, headers={"Allow": "POST"})
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _with(items: tuple[str, ...], extra: str) -> tuple[str, ...]:
    return items if not extra or extra in items else (*items, extra)


def create_app(
    service: RoomService,
    config: ServerConfig | None = None,
) -> ASGIApp:
    """Return the ASGI app of the room server (MCP at ``/mcp`` plus the principal pages).

    ``service`` holds the rooms and links (see :class:`RoomService`; give it SQLite stores
    so rooms survive a restart). Run the result with any ASGI server, for example
    ``uvicorn.run(app, host="127.0.0.1", port=8765, access_log=False)``; keep access logs
    off, or strip paths under ``/p/`` and ``/s/``, because those paths carry links.
    """
    cfg = config if config is not None else ServerConfig()
    changes = _Changes()
    # a store shared by replicas (PostgreSQL) tells this process about other replicas'
    # writes, so their waiters are woken at once rather than at their next re-read
    listen = getattr(getattr(service, "_rooms", None), "listen", None)
    if callable(listen):
        listen(changes.bump_from_thread, wake_all=changes.bump_all_from_thread)
    mcp = create_mcp_server(service, cfg, changes)
    # The server's own public name is always allowed: links point there, and the page's
    # forms post from there.
    public = urlsplit(cfg.public_url)
    hosts = _with(cfg.allowed_hosts, public.netloc)
    origins = _with(cfg.allowed_origins, f"{public.scheme}://{public.netloc}")
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(hosts),
        allowed_origins=list(origins),
    )
    backend = WebBackend(
        grant=lambda link: service.grant(link, "principal"),
        view=service.page_view,
        seal=lambda seat, card: service.seal(seat, card, "web"),
        answer=lambda seat, answer, confirms: service.answer(seat, answer, "web", confirms),
        brief=service.brief_if_ended,
        release=lambda seat: MintedLinks(
            seat.room_id, {(seat.seat, "invite"): service.release(seat)}
        ).link(cfg.public_url, seat.seat, "invite"),
        changed=changes.bump,
        allowed_origins=origins,
        max_form_bytes=cfg.max_body_bytes,
    )
    for route in web_routes(backend):
        mcp.custom_route(route.path, methods=sorted(route.methods or ()))(route.endpoint)
    app: Starlette = mcp.streamable_http_app(
        json_response=True,
        stateless_http=True,
        max_request_body_size=cfg.max_body_bytes,
        transport_security=security,
    )
    return _HostGuard(RequestBodyLimitMiddleware(app, cfg.max_body_bytes), hosts)
