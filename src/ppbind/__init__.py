"""ppbind: one errand across PXP, Handoff, Parley and VXP, each step bound to the last.

The five things you most likely want:

- :func:`verify_errand`: audit one errand's records; the report, or the first broken link.
- :class:`PersonKey`: one person's Ed25519 key for Parley, Handoff and VXP alike.
- :func:`sign_on_approval`: on her ``approve``, the consent grant and the VXP approval.
- :func:`decision_terms`: the Handoff Decision an agent raises from a Parley consent request.
- :class:`BindingError`: every error, with a stable ``code``, the broken ``link`` and a
  ``reason``; :class:`BindingProtocolError` for bad records, :class:`BindingUsageError` for
  the caller's own mistakes (codes in :mod:`ppbind.errors`).

Quick start (the whole errand in one process, :mod:`ppbind.demo`, then the audit)::

    >>> import ppbind
    >>> from ppbind.demo import demo_errand
    >>> report = ppbind.verify_errand(demo_errand())
    >>> report["item"], report["amount"], report["currency"], report["act"]
    ('ben-shop/bike-2291', 44000, 'EUR', 'done')
    >>> try:
    ...     ppbind.verify_errand(demo_errand("forge-approval"))
    ... except ppbind.BindingProtocolError as exc:
    ...     print(exc.code, exc.link)
    binding_forged_approval parley->vxp

The binding profile ``pp-bind/1`` (docs/spec/bindings.md) says which field of each
protocol carries which digest of the previous step: the PXP ``proposal_hash`` in the
Handoff Decision's terms, the Decision's settlement digest in the Parley consent grant's
``nonce``, the decided proposal's hash in its ``only`` caveat, the terms the principal was
shown in the VXP ``terms_digest`` she approves with her own key, and the verified proof in
the Handoff Act. This package holds the helpers at each seam and the audit that recomputes
every link; it depends on the four protocol packages, which never import it.

One person, one key: :class:`PersonKey` gives her Parley key, her Handoff JWK and raw
signatures for VXP; :func:`same_key` compares keys in either spelling by raw bytes. Every
call that takes ``now`` takes Unix seconds or an aware ``datetime``.

Public submodules: :mod:`ppbind.errors` (the code table and the error classes) and
:mod:`ppbind.demo` (the errand in one process, the bike shop, the errand's roles and
proxies).

On the command line: ``errand verify DIR`` audits ``DIR/errand.json``.
"""

from __future__ import annotations

from ._audit import verify_errand
from ._bind import (
    LATE_MARGIN,
    READ_BACK_TERMS,
    act_terms,
    approval_for,
    check_conforming,
    commit_binding,
    consent_grant,
    decision_terms,
    is_late,
    note_from_receipt,
    proposal_expires,
    release_object,
    rfc3339,
    sign_approval_unchecked,
    sign_on_approval,
    terms_object,
)
from ._digests import PROFILE, jwt_of, record_digest, statement_body, statement_digest
from ._keys import PersonKey, jwk_of, parley_key_of, raw_key, same_key
from ._render import report_html, report_markdown
from ._schemas import load_schema, schema_names
from ._terms import MachineTerms, agreed_terms, intent_params, price_text, read_terms
from .errors import BindingError, BindingProtocolError, BindingUsageError

__all__ = [
    "LATE_MARGIN",
    "PROFILE",
    "READ_BACK_TERMS",
    "BindingError",
    "BindingProtocolError",
    "BindingUsageError",
    "MachineTerms",
    "PersonKey",
    "act_terms",
    "agreed_terms",
    "approval_for",
    "check_conforming",
    "commit_binding",
    "consent_grant",
    "decision_terms",
    "intent_params",
    "is_late",
    "jwk_of",
    "jwt_of",
    "load_schema",
    "note_from_receipt",
    "parley_key_of",
    "price_text",
    "proposal_expires",
    "raw_key",
    "read_terms",
    "record_digest",
    "release_object",
    "report_html",
    "report_markdown",
    "rfc3339",
    "same_key",
    "schema_names",
    "sign_approval_unchecked",
    "sign_on_approval",
    "statement_body",
    "statement_digest",
    "terms_object",
    "verify_errand",
]
