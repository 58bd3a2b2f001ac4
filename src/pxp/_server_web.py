"""The principal's web page of the PXP room server: plain HTML, no script, no build step.

Reached only through a principal link (``/p/<room>/<token>``). The server hands each seat's
principal link out once, in MCP content addressed to the human (``audience: ["user"]``): seat
A's with ``create_room``, seat B's with the first ``join_room`` on B's seat link, never to the
other seat; every tool refuses a principal link. The page shows the room, the principal's own
card and a form to seal or confirm it, a pending escalation question with a form for the
answer (recorded as ``via: "web"``), and the decision brief when the room has ended.

Every page is sent with ``Cache-Control: no-store``, ``Referrer-Policy: same-origin`` (the link
must not leak to another site) and a content security policy that allows no script and
form posts only to this origin. A form post whose ``Origin`` is not an allowed origin is
refused, so another site cannot make a principal's browser answer for them.
"""

from __future__ import annotations

import html
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from ._errors import PxpError
from ._server_links import SeatGrant

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
_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;"
    "line-height:1.45}pre{white-space:pre-wrap;background:#f4f4f4;padding:.6rem}"
    "textarea{width:100%;min-height:6rem}.flag{color:#8a4b00}.box{border:1px solid #bbb;"
    "padding:.6rem 1rem;margin:1rem 0}"
)
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
    ``brief`` returns the brief when the room has ended (else ``None``); ``changed(room_id)``
    wakes the room's waiting proxies after a write.
    """

    def __init__(
        self,
        *,
        grant: Callable[[str], SeatGrant],
        view: Callable[[SeatGrant], dict[str, Any]],
        seal: Callable[[SeatGrant, Any], dict[str, Any]],
        answer: Callable[[SeatGrant, str], dict[str, Any]],
        brief: Callable[[SeatGrant], dict[str, Any] | None],
        changed: Callable[[str], None],
        allowed_origins: Sequence[str],
        max_form_bytes: int,
    ) -> None:
        self.grant = grant
        self.view = view
        self.seal = seal
        self.answer = answer
        self.brief = brief
        self.changed = changed
        self.allowed_origins = tuple(allowed_origins)
        self.max_form_bytes = max_form_bytes


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    text = (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width,initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>{body}</body></html>"
    )
    return HTMLResponse(text, status_code=status, headers=_HEADERS)


def _refused(status: int, sentence: str) -> HTMLResponse:
    return _page("Refused", f"<h1>Refused</h1><p>{_e(sentence)}</p>", status)


def _list(items: Sequence[Any]) -> str:
    if not items:
        return "<p><i>none</i></p>"
    return "<ul>" + "".join(f"<li>{_e(item)}</li>" for item in items) + "</ul>"


def _card_html(card: Mapping[str, Any]) -> str:
    principal = card.get("principal", {})
    who = principal.get("name", "") if isinstance(principal, Mapping) else ""
    parts = [
        f"<p><b>Principal:</b> {_e(who)}</p>",
        f"<p><b>Goal:</b> {_e(card.get('goal', ''))}</p>",
    ]
    for key, label in (
        ("must_haves", "Must have"),
        ("may_agree_to", "May agree to"),
        ("must_never", "Must never"),
        ("escalate_when", "Escalate when"),
        ("known_facts", "Known facts"),
    ):
        items = card.get(key) or []
        parts.append(f"<p><b>{label}:</b></p>{_list(items if isinstance(items, list) else [])}")
    amendments = card.get("amendments") or []
    if amendments:
        rows = [f"{a.get('question', '')} → {a.get('answer', '')}" for a in amendments]
        parts.append(f"<p><b>Amendments:</b></p>{_list(rows)}")
    return "".join(parts)


def _room_html(view: Mapping[str, Any], action: str, brief: Mapping[str, Any] | None) -> str:
    seat = view.get("seat", "?")
    other = view.get("other") or {}
    out = [
        f"<h1>{_e(view.get('topic', 'PXP room'))}</h1>",
        f"<p>Room <code>{_e(view.get('room', ''))}</code>. You are the principal of seat "
        f"<b>{_e(seat)}</b>. Status: <b>{_e(view.get('status', ''))}</b>; turn: "
        f"{_e(view.get('turn') or '-')}; turns taken: {_e(view.get('turns', 0))} of "
        f"{_e(view.get('max_turns', '-'))}.</p>",
        f"<p>Your proxy: {_e(view.get('agent') or 'not joined yet')}. Counterpart: "
        f"{_e(other.get('name') or '-')} (seat {_e(other.get('seat', '-'))}), card "
        f"<code>{_e(other.get('card_hash') or 'not sealed')}</code>, proxy "
        f"{_e(other.get('agent') or 'not joined yet')}.</p>",
    ]
    pending = view.get("pending")
    if pending:
        out.append(
            "<div class=box><h2>Your proxy asks you</h2>"
            f"<p><b>{_e(pending.get('question', ''))}</b></p>"
            f"<p>{_e(pending.get('reason') or '')}</p>"
            f'<form method=post action="{_e(action)}/answer">'
            "<label for=answer>Your answer (sealed into your card as an amendment)</label>"
            "<textarea id=answer name=answer required></textarea>"
            "<p><button type=submit>Send answer</button></p></form></div>"
        )
    out.append("<h2>Your intent card</h2>")
    card = view.get("card")
    if view.get("your_card_sealed") and isinstance(card, Mapping):
        out.append(f"<p>Sealed; hash <code>{_e(view.get('card_hash', ''))}</code>.</p>")
        out.append(_card_html(card))
    elif view.get("status") == "open":
        draft = view.get("your_draft")
        if isinstance(draft, Mapping):
            out.append("<p>Your proxy drafted this card. Check it, edit if needed, and seal.</p>")
            out.append(_card_html(draft))
            text = json.dumps(draft, indent=2, ensure_ascii=False)
        else:
            out.append("<p>No card yet. Write it as JSON (a PXP intent card) and seal it.</p>")
            text = ""
        out.append(
            f'<form method=post action="{_e(action)}/card"><label for=card>Card (JSON)</label>'
            f"<textarea id=card name=card required>{_e(text)}</textarea>"
            "<p><button type=submit>Confirm and seal</button></p></form>"
        )
    else:
        out.append("<p>Not sealed.</p>")
    envelopes = view.get("envelopes") or []
    if envelopes:
        out.append("<h2>Transcript</h2>")
    for env in envelopes:
        frm = env.get("from", {})
        head = f"#{env.get('seq')} seat {frm.get('seat')}: {env.get('status')}"
        out.append(f"<div class=box><p><b>{_e(head)}</b></p><p>{_e(env.get('message', ''))}</p>")
        for claim in env.get("claims") or []:
            out.append(
                f"<p>claim {_e(claim.get('id'))} [{_e(claim.get('origin'))}]: "
                f"{_e(claim.get('text'))}</p>"
            )
        proposal = env.get("proposal")
        if isinstance(proposal, Mapping):
            out.append(f"<p><b>Proposal:</b></p>{_list(proposal.get('terms') or [])}")
        for text in env.get("protocol_flags") or []:
            out.append(f"<p class=flag>{_e(text)}</p>")
        out.append("</div>")
    if brief is not None:
        out.append("<h2>Decision brief</h2>")
        out.append(f"<pre>{_e(brief.get('markdown', ''))}</pre>")
    return "".join(out)


async def _form(request: Request, limit: int) -> dict[str, str] | Response:
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
        fields = parse_qs(text, keep_blank_values=True, max_num_fields=8)
    except ValueError:
        return _refused(400, "The form has more fields than this page sends.")
    return {key: values[-1] for key, values in fields.items() if values}


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
            banner = f"<p class=box>{what}</p>"
        return _page("PXP room", banner + _room_html(view, request.url.path, brief))

    def _post(
        field: str, act: Callable[[SeatGrant, str], object], done: str
    ) -> Callable[[Request], Awaitable[Response]]:
        async def handler(request: Request) -> Response:
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
            value = form.get(field, "").strip()
            if not value:
                return _refused(400, f"The form field {field!r} is empty.")
            try:
                act(grant, value)
            except PxpError as exc:
                return _refused(409, exc.message)
            backend.changed(grant.room_id)
            base = request.url.path.rsplit("/", 1)[0]
            return RedirectResponse(f"{base}?done={done}", status_code=303, headers=_HEADERS)

        return handler

    def _seal(grant: SeatGrant, text: str) -> object:
        try:
            card = json.loads(text)
        except (ValueError, RecursionError):
            raise PxpError("card_invalid", "the card is not valid JSON") from None
        return backend.seal(grant, card)

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
        Route(
            "/p/{room}/{token}/answer", _post("answer", backend.answer, "answer"), methods=["POST"]
        ),
        Route("/p/{room}/{token}/card", _post("card", _seal, "card"), methods=["POST"]),
        Route("/s/{room}/{token}", seat_note, methods=["GET"]),
        Route("/room/{room}", seat_note, methods=["GET"]),
    ]
