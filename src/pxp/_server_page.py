"""The principal's page as HTML: what a principal reads to follow and steer their room.

Every string a proxy, a card or the other side wrote is escaped once, wrapped in ``<bdi>``
(so right-to-left text cannot reorder what is around it) and has its bidirectional and
invisible control characters shown as ``U+XXXX``. The decision brief is rendered from its
Markdown by markdown-it-py with raw HTML disabled, so the Markdown's own escaping is the only
one. No script: while the negotiation runs the page reloads itself every few seconds, except
while it shows a form the principal may be filling in.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from markdown_it import MarkdownIt

__all__ = ["REFRESH_SECONDS", "render_brief", "room_page", "safe"]

REFRESH_SECONDS = 5
"""How often the page reloads itself while the negotiation runs and no form is shown."""

_CONTROLS = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]"
)
_STYLE = """
:root{color-scheme:light dark;--fg:#1d1d1f;--muted:#5f6368;--bg:#fff;--card:#f6f7f9;
--line:#d9dce1;--ok:#1e7b34;--warn:#9a5b00;--bad:#b3261e;--accent:#0b57d0}
@media (prefers-color-scheme:dark){:root{--fg:#e8eaed;--muted:#a0a4aa;--bg:#15171a;
--card:#1f2226;--line:#363a40;--ok:#6dd58c;--warn:#f2b25c;--bad:#f28b82;--accent:#8ab4f8}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.5 system-ui,-apple-system,
"Segoe UI",Roboto,sans-serif;overflow-wrap:anywhere}
main{max-width:48rem;margin:0 auto;padding:1rem}
header{border-bottom:1px solid var(--line);padding-bottom:.5rem;margin-bottom:1rem}
h1{font-size:1.5rem;margin:.2rem 0}h2{font-size:1.15rem;margin:1.6rem 0 .5rem}
.muted{color:var(--muted)}.badge{display:inline-block;padding:.05rem .5rem;border-radius:1rem;
border:1px solid var(--line);font-size:.85rem;margin-right:.3rem}
.ok{color:var(--ok)}.warn{color:var(--warn)}.bad{color:var(--bad)}
.card{background:var(--card);border:1px solid var(--line);border-radius:.6rem;
padding:.7rem .9rem;margin:.6rem 0}
.ask{border-color:var(--accent);border-width:2px}
code,.hash{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.85em}
ul{padding-left:1.2rem}li{margin:.2rem 0}
textarea{width:100%;min-height:7rem;font:inherit;padding:.5rem;border-radius:.4rem;
border:1px solid var(--line);background:var(--bg);color:var(--fg)}
button{font:inherit;padding:.5rem 1.1rem;border-radius:.5rem;border:0;background:var(--accent);
color:#fff;cursor:pointer}
label.check{display:block;margin:.3rem 0}
.brief table{border-collapse:collapse}.brief td,.brief th{border:1px solid var(--line);
padding:.2rem .4rem}
"""

_md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
_md.disable(["image"])


def safe(value: object) -> str:
    """Text someone else wrote, made inert for HTML: controls shown as ``U+XXXX``, escaped
    once, isolated in ``<bdi>``."""
    text = str(value).encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    text = _CONTROLS.sub(lambda m: f"U+{ord(m.group(0)):04X}", text)
    return f"<bdi>{html.escape(text, quote=True)}</bdi>"


def _attr(value: object) -> str:
    return html.escape(str(value), quote=True)


def render_brief(markdown: str) -> str:
    """The brief's Markdown as HTML (raw HTML in it stays text)."""
    return str(_md.render(markdown))


def _list(items: Sequence[Any]) -> str:
    if not items:
        return '<p class="muted">none</p>'
    return "<ul>" + "".join(f"<li>{safe(item)}</li>" for item in items) + "</ul>"


def _card(card: Mapping[str, Any]) -> str:
    principal = card.get("principal")
    who = principal.get("name", "") if isinstance(principal, Mapping) else ""
    parts = [
        f"<p><b>Principal:</b> {safe(who)}</p>",
        f"<p><b>Goal:</b> {safe(card.get('goal', ''))}</p>",
    ]
    for key, label in (
        ("must_haves", "Must have"),
        ("may_agree_to", "May agree to"),
        ("must_never", "Must never"),
        ("escalate_when", "Escalate when"),
        ("known_facts", "Known facts"),
    ):
        items = card.get(key) or []
        parts.append(
            f"<p><b>{label}</b> <code>{key}</code></p>"
            + _list(items if isinstance(items, list) else [])
        )
    amendments = card.get("amendments") or []
    if amendments:
        rows = "".join(
            f"<li><code>amendments[{i}]</code> {safe(a.get('question', ''))} → "
            f"<b>{safe(a.get('answer', ''))}</b></li>"
            for i, a in enumerate(amendments)
        )
        parts.append(f"<p><b>Your answers</b></p><ul>{rows}</ul>")
    return "".join(parts)


def _origin(claim: Mapping[str, Any]) -> str:
    text = safe(claim.get("origin", ""))
    if claim.get("ref"):
        text += f" from <code>{safe(claim['ref'])}</code>"
    if claim.get("speaker") == "principal":
        text += (
            " (said by the principal, relayed by the proxy (mcp))"
            if claim.get("via") == "mcp"
            else " (said by the principal)"
        )
    if claim.get("confirmed_by"):
        text += f", confirmed by seat {safe(claim['confirmed_by'])}'s principal"
    if claim.get("backed_by"):
        text += f", backed by {safe(claim['backed_by'])}"
    return text


def _claims(view: Mapping[str, Any], name: Mapping[str, str]) -> str:
    claims = view.get("claims") or []
    if not claims:
        return '<p class="muted">No claims yet.</p>'
    out = []
    for c in claims:
        state = (
            '<span class="ok">verified</span>'
            if c.get("verified")
            else '<span class="warn">unverified</span>'
        )
        reviews = "; ".join(
            f"{safe(name.get(r['seat'], r['seat']))}: {safe(r['verdict'])}"
            + (f" ({safe(r['reason'])})" if r.get("reason") else "")
            for r in c.get("reviews") or []
        )
        out.append(
            f'<li id="claim-{_attr(c["id"])}"><code>{safe(c["id"])}</code> '
            f"{safe(name.get(c['seat'], c['seat']))}, {_origin(c)}, {state}: {safe(c['text'])}"
            + (f'<br><span class="muted">Reviews: {reviews}</span>' if reviews else "")
            + "</li>"
        )
    return "<ul>" + "".join(out) + "</ul>"


def _escalations(view: Mapping[str, Any], name: Mapping[str, str], seat: str) -> str:
    items = view.get("escalations") or []
    if not items:
        return '<p class="muted">None so far.</p>'
    out = []
    for e in items:
        if e.get("answer") is not None:
            answer = f"answered <b>{safe(e['answer'])}</b> (via {safe(e.get('via'))})"
            if e.get("confirms"):
                answer += ", confirming " + ", ".join(safe(c) for c in e["confirms"])
        elif e.get("answered"):
            answer = "answered by their principal (the answer is theirs to keep)"
        else:
            answer = '<span class="warn">waiting for an answer</span>'
        who = (
            "Your proxy" if e["seat"] == seat else f"{safe(name.get(e['seat'], e['seat']))}'s proxy"
        )
        out.append(f'<li class="escalation">{who} asked {safe(e["question"])}: {answer}</li>')
    return "<ul>" + "".join(out) + "</ul>"


def _transcript(view: Mapping[str, Any], name: Mapping[str, str]) -> str:
    out = []
    for env in view.get("envelopes") or []:
        sender = env.get("from", {}).get("seat", "?")
        out.append(
            f'<div class="card"><p><b>#{safe(env.get("seq"))} {safe(name.get(sender, sender))}\'s '
            f'proxy</b> <span class="badge">{safe(env.get("status"))}</span></p>'
            f"<p>{safe(env.get('message', ''))}</p>"
        )
        proposal = env.get("proposal")
        if isinstance(proposal, Mapping):
            out.append(f"<p><b>Proposal</b></p>{_list(proposal.get('terms') or [])}")
        for review in env.get("reviews") or []:
            out.append(
                f'<p class="muted">Review of <code>{safe(review.get("claim_id"))}</code>: '
                f"{safe(review.get('verdict'))}"
                + (f" ({safe(review['reason'])})" if review.get("reason") else "")
                + "</p>"
            )
        for text in env.get("protocol_flags") or []:
            out.append(f'<p class="warn">Flag: {safe(text)}</p>')
        out.append("</div>")
    return "".join(out) or '<p class="muted">No messages yet.</p>'


def room_page(
    view: Mapping[str, Any], action: str, brief: Mapping[str, Any] | None
) -> tuple[str, bool]:
    """The body of the principal's page and whether it should reload itself."""
    seat = str(view.get("seat", "?"))
    other = view.get("other") or {}
    other_seat = str(other.get("seat", "?"))
    name = {seat: "You", other_seat: str(other.get("name") or f"seat {other_seat}")}
    status = str(view.get("status_word") or view.get("status", ""))
    pending = view.get("pending")
    ledger = view.get("ledger") or {}
    verifies = ledger.get("verifies")
    out = [
        "<header>",
        f"<h1>{safe(view.get('topic', 'PXP room'))}</h1>",
        f'<p><span class="badge" id="status">{safe(status)}</span>'
        f'<span class="muted">You are the principal of seat <b>{html.escape(seat)}</b> · '
        f"turn {safe(view.get('turns', 0))} of {safe(view.get('max_turns', '-'))}</span></p>",
        "</header>",
    ]
    if brief is not None:  # once the room has ended, the outcome comes first
        out.append(
            '<section id="brief" class="brief card"><h2>Decision brief</h2>'
            f"{render_brief(str(brief.get('markdown', '')))}</section>"
        )
    refresh = status in ("drafting", "negotiating", "paused")
    if pending:
        refresh = False
        unverified = [c for c in view.get("claims") or [] if not c.get("verified")]
        boxes = "".join(
            f'<label class="check"><input type="checkbox" name="confirm" value="{_attr(c["id"])}"> '
            f"I confirm <code>{safe(c['id'])}</code>: {safe(c['text'])}</label>"
            for c in unverified
        )
        out.append(
            '<section class="card ask" id="question"><h2>Your proxy asks you</h2>'
            f"<p><b>{safe(pending.get('question', ''))}</b></p>"
            + (
                f'<p class="muted">{safe(pending.get("reason"))}</p>'
                if pending.get("reason")
                else ""
            )
            + f'<form method="post" action="{_attr(action)}/answer">'
            '<label for="answer">Your answer (sealed into your card; your proxy resumes)</label>'
            '<textarea id="answer" name="answer" required></textarea>'
            + (
                f"<p><b>Claims you can confirm</b> (each becomes verified)</p>{boxes}"
                if boxes
                else ""
            )
            + '<p><button type="submit">Send answer</button></p></form></section>'
        )
    out.append('<section id="parties"><h2>Who is in the room</h2>')
    link = view.get("principal_link") or {}
    out.append(
        f"<p>You: proxy {safe(view.get('agent') or 'not joined yet')}; card "
        f'<code class="hash">{safe(view.get("card_hash") or "not sealed")}</code>'
        + (
            f"; your page link was issued to {safe(link.get('agent') or 'the room creator')}"
            if link
            else ""
        )
        + "</p>"
    )
    if (
        not view.get("agent")
        and view.get("released")
        and status
        in (
            "drafting",
            "negotiating",
            "paused",
        )
    ):
        # the invite shown at the release may have been lost: the page issues it again
        out.append(
            f'<form method="post" action="{_attr(action)}/release" class="release">'
            '<input type="hidden" name="release" value="yes">'
            '<p>Your seat is free. <button type="submit">Issue a new invite</button> for '
            "the agent that should act for you (the invite shown before stops working).</p>"
            "</form>"
        )
    if view.get("agent") and status in ("drafting", "negotiating", "paused"):
        # the principal, not the room, decides which agent acts for it (ours)
        out.append(
            f'<form method="post" action="{_attr(action)}/release" class="release">'
            '<input type="hidden" name="release" value="yes">'
            f'<p>Not your agent, or it lost its link? <button type="submit">Release your seat '
            f"from {safe(view.get('agent'))}</button> (it stops acting for you at once; you get "
            "a new invite for your next agent).</p></form>"
        )
    out.append(
        f"<p>{safe(name[other_seat])} (seat {safe(other_seat)}): proxy "
        f"{safe(other.get('agent') or 'not joined yet')}; card "
        f'<code class="hash">{safe(other.get("card_hash") or "not sealed")}</code></p></section>'
    )
    out.append('<section id="card"><h2>Your intent card</h2>')
    card = view.get("card")
    if view.get("your_card_sealed") and isinstance(card, Mapping):
        out.append(f'<div class="card">{_card(card)}</div>')
    elif view.get("status") == "open":
        refresh = False
        draft = view.get("your_draft")
        if isinstance(draft, Mapping):
            out.append("<p>Your proxy drafted this card. Check it, edit if needed, and seal.</p>")
            out.append(f'<div class="card">{_card(draft)}</div>')
            text = json.dumps(draft, indent=2, ensure_ascii=False)
        else:
            out.append("<p>No card yet. Write it as JSON (a PXP intent card) and seal it.</p>")
            text = ""
        out.append(
            f'<form method="post" action="{_attr(action)}/card">'
            '<label for="cardtext">Card (JSON)</label>'
            f'<textarea id="cardtext" name="card" required>{html.escape(text)}</textarea>'
            '<p><button type="submit">Confirm and seal</button></p></form>'
        )
    else:
        out.append('<p class="muted">Not sealed.</p>')
    out.append("</section>")
    out.append(f'<section id="claims"><h2>Claims</h2>{_claims(view, name)}</section>')
    out.append(
        f'<section id="escalations"><h2>Escalations and answers</h2>'
        f"{_escalations(view, name, seat)}</section>"
    )
    out.append(f'<section id="transcript"><h2>Messages</h2>{_transcript(view, name)}</section>')
    state = (
        '<span class="ok">hash chain verifies</span> (integrity only, not authenticity)'
        if verifies
        else '<span class="bad">DOES NOT VERIFY</span>'
    )
    out.append(
        f'<section id="ledger"><h2>Ledger</h2><p>{safe(ledger.get("entries", 0))} entries, head '
        f'<code class="hash">{safe(ledger.get("head", ""))}</code>: {state}.</p></section>'
    )
    if refresh:
        out.append(
            f'<p class="muted">This page updates itself every {REFRESH_SECONDS} seconds.</p>'
        )
    return "".join(out), refresh


STYLE = _STYLE
"""The page's style sheet (inline: the content security policy allows no other)."""
