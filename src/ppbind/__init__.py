"""ppbind: one errand across PXP, Handoff, Parley and VXP, each step bound to the last.

The binding profile ``pp-bind/1`` (docs/spec/bindings.md) says which field of each
protocol carries which digest of the previous step: the PXP ``proposal_hash`` in the
Handoff Decision's terms, the Decision's settlement digest in the Parley consent grant's
``nonce``, the decided proposal's hash in its ``only`` caveat, the terms the principal was
shown in the VXP ``terms_digest`` she approves with her own key, and the verified proof in
the Handoff Act. This package holds the helpers at each seam and the audit that recomputes
every link; it depends on the four protocol packages, which never import it.

Quick start (the whole errand in one process, then the audit)::

    >>> import ppbind
    >>> bundle = ppbind.demo_errand()
    >>> report = ppbind.verify_errand(bundle)
    >>> report["item"], report["amount"], report["currency"], report["act"]
    ('ben-shop/bike-2291', 44000, 'EUR', 'done')
    >>> try:
    ...     ppbind.verify_errand(ppbind.demo_errand("forge-approval"))
    ... except ppbind.BindingError as exc:
    ...     print(exc.code, exc.link)
    binding_forged_approval parley->vxp

One person, one key: :class:`PersonKey` gives her Parley key, her Handoff JWK and raw
signatures for VXP; :func:`same_key` compares keys in either spelling by raw bytes.

On the command line: ``errand verify DIR`` audits ``DIR/errand.json``.
"""

from __future__ import annotations

from ._audit import CODES, verify_errand
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
from ._demo import ATTACKS, DEMO, demo_errand, errand_proxies, errand_roles
from ._digests import PROFILE, jwt_of, record_digest, statement_body, statement_digest
from ._errors import BindingError
from ._keys import PersonKey, jwk_of, parley_key_of, raw_key, same_key
from ._render import report_html, report_markdown
from ._schemas import load_schema, schema_names
from ._shop import Bike, BikeShop
from ._terms import MachineTerms, agreed_terms, intent_params, price_text, read_terms

__all__ = [
    "ATTACKS",
    "CODES",
    "DEMO",
    "LATE_MARGIN",
    "PROFILE",
    "READ_BACK_TERMS",
    "Bike",
    "BikeShop",
    "BindingError",
    "MachineTerms",
    "PersonKey",
    "act_terms",
    "agreed_terms",
    "approval_for",
    "check_conforming",
    "commit_binding",
    "consent_grant",
    "decision_terms",
    "demo_errand",
    "errand_proxies",
    "errand_roles",
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
