"""The principal's web page of the PXP room server: plain HTML, no script, no build step.

Reached only through a principal link (``/p/<room>/<token>``). The server hands a seat's
principal link only to the agent that joined that seat, in MCP content addressed to the human
(``audience: ["user"]``): seat A's with ``create_room``, seat B's with the ``join_room`` that
spends B's invite; every tool refuses a principal link. The page's forms seal the card,
answer an escalation, and release the seat from its agent (the response shows the seat's
fresh invite, once). These are the routes and the form handling; what the page shows is
:mod:`pxp._server_page` (the brief, claims, escalations and answers, the ledger head).

Every page is sent with ``Cache-Control: no-store``, ``Referrer-Policy: same-origin`` (the link
must not leak to another site) and a content security policy that allows no script and
form posts only to this origin. A form post whose ``Origin`` is not an allowed origin is
refused, so another site cannot make a principal's browser answer for them.
"""

from __future__ import annotations

import html
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from ._server_links import SeatGrant
from ._server_page import REFRESH_SECONDS, STYLE, room_page
from .errors import PxpError

__all__ = ["WebBackend", "origin_allowed", "web_routes"]

_HEADERS = {
    "Cache-Control": "no-store",
    # "same-origin", not "no-referrer": browsers send "Origin: null" with a form post from a
    # page under no-referrer, which the origin check must refuse. Other sites still get no
    # referrer, so the link in the path never leaks to them.
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'"
    ),
}
_FIXED_REFUSAL = "This link does not open a principal page on this server."


def origin_allowed(origin: str | None, allowed: Sequence[str]) -> bool:
    """Return whether an ``Origin`` header value is allowed (absent counts as allowed).

    ``allowed`` holds exact origins or ``scheme://host:*`` patterns meaning any port.
    """
    if not origin:
        return True
    for item in allowed:
        if origin == item:
            return True
        if item.endswith(":*") and origin.startswith(item[:-2] + ":"):
            port = origin[len(item) - 1 :]
            if port.isascii() and port.isdigit():
                return True
    return False


class WebBackend:
    """What the pages need from the server: check a principal link and act on the room.

    ``grant(link)`` returns the seat a principal link opens or raises :class:`PxpError`;
    ``view``, ``seal`` and ``answer`` act as that seat's principal (``via`` is ``"web"``);
    ``release`` frees the seat from its agent and returns the seat's fresh invite link;
    ``brief`` returns the brief when the room has ended (else ``None``); ``changed(room_id)``
    wakes the room's waiting proxies after a write.
    """

    def __init__(
        self,
        *,
        grant: Callable[[str], SeatGrant],
        view: Callable[[SeatGrant], dict[str, Any]],
        seal: Callable[[SeatGrant, Any], dict[str, Any]],
        answer: Callable[[SeatGrant, str, tuple[str, ...]], dict[str, Any]],
        brief: Callable[[SeatGrant], dict[str, Any] | None],
        release: Callable[[SeatGrant], str],
        changed: Callable[[str], None],
        allowed_origins: Sequence[str],
        max_form_bytes: int,
    ) -> None:
        self.grant = grant
        self.view = view
        self.seal = seal
        self.answer = answer
        self.brief = brief
        self.release = release
        self.changed = changed
        self.allowed_origins = tuple(allowed_origins)
        self.max_form_bytes = max_form_bytes


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _page(title: str, body: str, status: int = 200, *, refresh: bool = False) -> HTMLResponse:
    reload = f'<meta http-equiv="refresh" content="{REFRESH_SECONDS}">' if refresh else ""
    text = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"{reload}<title>{_e(title)}</title><style>{STYLE}</style></head>"
        f"<body><main>{body}</main></body></html>"
    )
    return HTMLResponse(text, status_code=status, headers=_HEADERS)


def _refused(status: int, sentence: str) -> HTMLResponse:
    return _page("Refused", f"<h1>Refused</h1><p>{_e(sentence)}</p>", status)


async def _form(request: Request, limit: int) -> dict[str, list[str]] | Response:
    if not request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        return _refused(415, "Send the form as application/x-www-form-urlencoded.")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return _refused(413, "The form is larger than this server accepts.")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return _refused(400, "The form is not UTF-8.")
    try:
        fields = parse_qs(text, keep_blank_values=True, max_num_fields=72)
    except ValueError:
        return _refused(400, "The form has more fields than this page sends.")
    return {key: values for key, values in fields.items() if values}


def web_routes(backend: WebBackend) -> list[Route]:
    """Return the Starlette routes of the principal page (``/p/...``) and the seat-link note."""

    def _grant(request: Request) -> SeatGrant | Response:
        ref = f"{request.path_params['room']}/{request.path_params['token']}"
        try:
            return backend.grant(ref)
        except PxpError:
            return _refused(404, _FIXED_REFUSAL)

    async def page(request: Request) -> Response:
        grant = _grant(request)
        if isinstance(grant, Response):
            return grant
        try:
            view = backend.view(grant)
            brief = backend.brief(grant)
        except PxpError as exc:
            return _refused(409, exc.message)
        notice = request.query_params.get("done")
        banner = ""
        if notice in {"answer", "card"}:
            what = "Your answer was sealed." if notice == "answer" else "Your card was sealed."
            banner = f'<p class="card ok" id="notice">{what}</p>'
        body, refresh = room_page(view, request.url.path, brief)
        return _page(f"PXP room: {view.get('topic', '')}", banner + body, refresh=refresh)

    async def _posted(
        request: Request, field: str
    ) -> tuple[SeatGrant, str, dict[str, list[str]]] | Response:
        """The checks every form post passes: same origin, a principal link, a bounded
        form whose ``field`` is not empty."""
        # "none" is a navigation the user made; "same-site" is another origin too.
        fetch_site = request.headers.get("sec-fetch-site")
        cross = fetch_site is not None and fetch_site not in ("same-origin", "none")
        if cross or not origin_allowed(request.headers.get("origin"), backend.allowed_origins):
            return _refused(403, "This form was posted from another site.")
        grant = _grant(request)
        if isinstance(grant, Response):
            return grant
        form = await _form(request, backend.max_form_bytes)
        if isinstance(form, Response):
            return form
        value = (form.get(field) or [""])[-1].strip()
        if not value:
            return _refused(400, f"The form field {field!r} is empty.")
        return grant, value, form

    def _post(
        field: str, act: Callable[[SeatGrant, str, list[str]], object], done: str
    ) -> Callable[[Request], Awaitable[Response]]:
        async def handler(request: Request) -> Response:
            checked = await _posted(request, field)
            if isinstance(checked, Response):
                return checked
            grant, value, form = checked
            try:
                act(grant, value, form.get("confirm", []))
            except PxpError as exc:
                return _refused(409, exc.message)
            backend.changed(grant.room_id)
            base = request.url.path.rsplit("/", 1)[0]
            return RedirectResponse(f"{base}?done={done}", status_code=303, headers=_HEADERS)

        return handler

    def _answer(grant: SeatGrant, text: str, confirms: list[str]) -> object:
        return backend.answer(grant, text, tuple(confirms))

    def _seal(grant: SeatGrant, text: str, _confirms: list[str]) -> object:
        try:
            card = json.loads(text)
        except (ValueError, RecursionError):
            raise PxpError("card_invalid", "the card is not valid JSON") from None
        return backend.seal(grant, card)

    async def release(request: Request) -> Response:
        # Not a redirect: the fresh invite is shown on this response only, once.
        checked = await _posted(request, "release")
        if isinstance(checked, Response):
            return checked
        grant = checked[0]
        try:
            invite = backend.release(grant)
        except PxpError as exc:
            return _refused(409, exc.message)
        backend.changed(grant.room_id)
        back = request.url.path.rsplit("/", 1)[0]
        return _page(
            "Seat released",
            "<h1>Your seat is free</h1><p>The agent that held it can no longer act in the "
            "room, and the invite sent earlier no longer works. Give this new invite to the "
            "agent that should act for you (it joins with <code>join_room</code>); it is "
            "shown only here, once:</p>"
            f'<p><code class="hash" id="invite">{_e(invite)}</code></p>'
            f'<p><a href="{_e(back)}">Back to the room</a></p>',
        )

    async def seat_note(request: Request) -> Response:
        # Says what a seat link is for; checks nothing, so it is no oracle for guessing.
        return _page(
            "PXP seat link",
            "<h1>This is a seat link for an AI agent</h1><p>Give it to the agent (MCP client) "
            "that negotiates for you; it passes the link to the room server's tools. To follow "
            "the room yourself, open the principal link you were given instead.</p>",
        )

    return [
        Route("/p/{room}/{token}", page, methods=["GET"]),
        Route("/p/{room}/{token}/answer", _post("answer", _answer, "answer"), methods=["POST"]),
        Route("/p/{room}/{token}/card", _post("card", _seal, "card"), methods=["POST"]),
        Route("/p/{room}/{token}/release", release, methods=["POST"]),
        Route("/s/{room}/{token}", seat_note, methods=["GET"]),
        Route("/room/{room}", seat_note, methods=["GET"]),
    ]
