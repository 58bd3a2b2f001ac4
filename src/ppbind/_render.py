"""The errand as its principal reads it: Markdown and a self-contained HTML page.

Both are rendered from the audit input and the audit's answer (the report, or the
:class:`BindingError` naming the broken link); every value shown is escaped.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import pxp

from ._bind import _guarded, rfc3339
from ._terms import price_text
from .errors import BindingError

__all__ = ["report_html", "report_markdown"]


def _get(value: Any, *path: str) -> Any:
    for step in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(step)
    return value


def _sections(bundle: Mapping[str, Any], outcome: Mapping[str, Any] | BindingError) -> list[Any]:
    """``[(title, [lines])]``: the errand's story, plain text (escaped by the renderers)."""
    brief = _get(bundle, "pxp", "brief") or {}
    agreement = brief.get("agreement") or {}
    terms = agreement.get("terms") or []
    records = _get(bundle, "handoff", "records") or []
    decision = [r for r in records if isinstance(r, Mapping) and r.get("ext") == "decisions/0.3"]
    acts = [r for r in records if isinstance(r, Mapping) and r.get("ext") == "acts/0.3"]
    raised = [r for r in decision if r.get("type") in ("raised", "amended")]
    settled = [r for r in decision if r.get("type") == "settled"]
    receipt = _get(bundle, "parley", "receipt") or {}
    cost = receipt.get("cost") or {}
    package = _get(bundle, "vxp", "package") or {}
    out: list[Any] = []
    out.append(
        (
            "1. The agreement (PXP)",
            [
                f"Room: {brief.get('topic', '?')}; outcome: {brief.get('outcome', '?')}.",
                *(f"Term: {t}" for t in terms),
                f"Proposal hash: {agreement.get('proposal_hash', '?')}",
                f"Ledger head: {_get(brief, 'ledger', 'head')}",
            ],
        )
    )
    lines = []
    for r in raised:
        t = r.get("terms") or {}
        lines.append(f"Revision {r.get('terms_rev')}: {t.get('text')} (answer by {t.get('due')})")
        for option in t.get("options") or []:
            lines.append(f"Option {option.get('id')}: {option.get('text')}")
    for s in settled:
        lines.append(
            f"Ana answered {s.get('outcome')!r} to revision {s.get('terms_rev')} at "
            f"{s.get('ts')}, signed with her key (what she saw: "
            f"{_get(s, 'evidence', 'presented')})."
        )
    out.append(("2. Her decision (Handoff)", lines))
    price = (
        price_text(cost["amount"], cost["currency"])
        if isinstance(cost.get("amount"), int) and isinstance(cost.get("currency"), str)
        else "?"
    )
    at = receipt.get("at")
    when = rfc3339(at) if type(at) is int and 0 <= at < 2**40 else "an unknown time"
    out.append(
        (
            "3. The purchase (Parley)",
            [
                f"Receipt {receipt.get('id')}: {receipt.get('summary')} for {price}.",
                f"Proposal {receipt.get('proposal')}, committed at {when} with the consent "
                "grant her decision gave, and nothing else.",
            ],
        )
    )
    statements = package.get("statements") or []
    out.append(
        (
            "4. The shop's proof (VXP)",
            [
                f"Issuer: {package.get('company')}; operation {_get(package, 'op', 'id')}.",
                f"{len(statements)} signed statements in the shop's Merkle log: request, terms, "
                "her approval, execution, read-back, outcome.",
                "Verified by the audit, the checkpoint cosigned by the witness."
                if not isinstance(outcome, BindingError) and outcome["vxp"]["logged"]
                else "Not verified as a whole: see the audit below.",
            ],
        )
    )
    lines = []
    for r in acts:
        if r.get("type") in ("raised", "amended"):
            lines.append(f"To do: {_get(r, 'terms', 'text')}")
        elif r.get("type") == "settled":
            lines.append(f"Ana settled it {r.get('outcome')!r} at {r.get('ts')}, with her key.")
        elif r.get("type") == "claimed":
            lines.append(f"The box was ticked in STATE.md ({r.get('by')} recorded it).")
    out.append(("5. What only she can do (Handoff act)", lines or ["No act yet."]))
    if isinstance(outcome, BindingError):
        out.append(
            (
                "6. The audit: BROKEN",
                [
                    f"Broken link: {outcome.link} ({outcome.code}"
                    + (f", {outcome.reason}" if outcome.reason else "")
                    + ").",
                    str(outcome),
                ],
            )
        )
    else:
        out.append(
            (
                "6. The audit: every link holds",
                [
                    f"PXP agreement {outcome['pxp']['proposal_hash'][:16]}… → her decision "
                    f"(revision {outcome['decision']['terms_rev']}) → Parley proposal "
                    f"{outcome['parley']['proposal']} and receipt {outcome['parley']['receipt']}"
                    f" → VXP proof {outcome['vxp']['final_state']} "
                    f"({outcome['vxp']['statements']} statements, witnessed: "
                    f"{outcome['vxp']['logged']}) → act {outcome['act']}.",
                    f"Ana's key (raw): {outcome['principal']}",
                ],
            )
        )
    return out


@_guarded
def report_markdown(bundle: Mapping[str, Any], outcome: Mapping[str, Any] | BindingError) -> str:
    """The errand as Markdown: the agreement, her decision, the receipt, the proof, the act.

    ``outcome`` is :func:`verify_errand`'s report or the error it raised; a report that is
    not one is ``binding_input_invalid``.
    """
    parts = ["# Your errand: a used bike from Ben's shop", ""]
    brief = _get(bundle, "pxp", "brief")
    for title, lines in _sections(bundle, outcome):
        parts.append(f"## {title}")
        parts.append("")
        parts.extend(f"- {line}" for line in lines)
        parts.append("")
        if title.startswith("1.") and isinstance(brief, Mapping):
            try:
                shown = pxp.brief_markdown(dict(brief)).splitlines()
                parts.extend("##" + line if line.startswith("#") else line for line in shown)
                parts.append("")
            except (pxp.PxpError, KeyError, TypeError, ValueError):
                pass
    return "\n".join(parts)


@_guarded
def report_html(bundle: Mapping[str, Any], outcome: Mapping[str, Any] | BindingError) -> str:
    """The errand as one self-contained HTML page (no script, no outside resources).

    ``outcome`` is :func:`verify_errand`'s report or the error it raised; a report that is
    not one is ``binding_input_invalid``.
    """
    broken = isinstance(outcome, BindingError)
    body = []
    for title, lines in _sections(bundle, outcome):
        cls = ' class="broken"' if broken and title.startswith("6.") else ""
        items = "".join(f"<li>{html.escape(str(line))}</li>" for line in lines)
        body.append(f"<section{cls}><h2>{html.escape(title)}</h2><ul>{items}</ul></section>")
    verdict = "BROKEN" if broken else "verified"
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Your errand ({verdict})</title>"
        "<style>body{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;"
        "padding:0 1rem;line-height:1.45}h1{font-size:1.5rem}section{border-top:1px solid #ccc;"
        "padding:.25rem 0}.broken{background:#fee;border-color:#c00}li{word-break:break-word}"
        "</style></head><body>"
        f'<h1 id="title">Your errand: a used bike from Ben\'s shop ({verdict})</h1>'
        + "".join(body)
        + "</body></html>\n"
    )
