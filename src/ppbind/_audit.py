"""The audit of one errand: every protocol's own check, then every link between them.

:func:`verify_errand` takes what the parties kept (docs/spec/bindings.md §7.1) and returns
the report (§7.4), or raises one :class:`BindingError` whose ``code`` and ``link`` name the
first check that failed, in the order of §7.2 and §7.3. It does no I/O.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, NoReturn

import handoff
import parley
import pxp
import vxp
from pxp import _schemas as pxp_schemas  # the shared loader's copy of PXP's schemas

from ._bind import READ_BACK_TERMS, check_conforming, release_object, rfc3339, terms_object
from ._digests import PROFILE, record_digest, statement_digest, statement_payload
from ._keys import parley_key_of, raw_key
from ._schemas import first_error
from ._terms import MachineTerms, intent_params, read_terms
from .errors import CODES, BindingError

__all__ = ["verify_errand"]


def _fail(code: str, message: str, reason: str | None = None) -> NoReturn:
    raise BindingError(code, message, reason=reason, link=CODES[code].stage)


def _protocol(code: str, exc: Exception) -> NoReturn:
    why = getattr(exc, "reason", None)
    reason = str(why if why is not None else getattr(exc, "code", "error"))
    _fail(code, f"{CODES[code].stage.upper()} refused a record of the errand: {exc}", reason)


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def _get(value: Any, *path: str | int) -> Any:
    """``value[path…]``, or ``None`` where a member is missing or of another type."""
    for step in path:
        if isinstance(step, int):
            if not isinstance(value, list) or not -len(value) <= step < len(value):
                return None
        elif not isinstance(value, Mapping) or step not in value:
            return None
        value = value[step]
    return value


def _payload(statement: object) -> dict[str, Any]:
    """A statement's JWT payload (its signature was checked by ``vxp.verify``)."""
    try:
        return statement_payload(statement)
    except BindingError:
        return {}


MAX_DEPTH = 96
"""How deep the audit input may nest (arrays and objects); deeper is ``binding_input_invalid``."""


def _too_deep(value: object) -> str | None:
    """The top-level member under which ``value`` nests deeper than MAX_DEPTH, or ``None``."""
    stack: list[tuple[object, int, str]] = [(value, 0, "input")]
    while stack:
        node, depth, top = stack.pop()
        if depth > MAX_DEPTH:
            return top
        if isinstance(node, dict):
            for key, child in node.items():
                stack.append((child, depth + 1, str(key) if depth == 0 else top))
        elif isinstance(node, list):
            stack.extend((child, depth + 1, top) for child in node)
    return None


def _stage0(bundle: object) -> dict[str, Any]:
    deep = _too_deep(bundle)
    if deep is not None:
        _fail(
            "binding_input_invalid",
            f"the audit input nests deeper than {MAX_DEPTH} levels under {deep}",
            deep,
        )
    first = first_error("errand.schema.json", bundle)
    if first is not None:
        path = "$" + "".join(
            f"[{p}]" if isinstance(p, int) else f".{p}" for p in first.absolute_path
        )
        top = str(first.absolute_path[0]) if first.absolute_path else "input"
        message = f"the audit input is not pp-bind/1's at {path}: {first.message[:200]}"
        _fail("binding_input_invalid", message, top)
    assert isinstance(bundle, dict)
    return copy.deepcopy(bundle)


def _jwks_key(jwks: Mapping[str, Any], kid: str) -> Mapping[str, Any] | None:
    """The key of ``jwks`` whose RFC 7638 thumbprint is ``kid`` (never read from ``kid``)."""
    for key in jwks.get("keys", []):
        try:
            if isinstance(key, Mapping) and vxp.key_thumbprint(dict(key)) == kid:
                return key
        except (vxp.VxpError, ValueError, TypeError):
            continue
    return None


def _signed_by(record: Mapping[str, Any], jwks: Mapping[str, Any], principal: bytes) -> bool:
    try:
        check = handoff.verify_proof(record, jwks)
    except handoff.HandoffError:
        return False
    key = _jwks_key(jwks, check.kid)
    try:
        return key is not None and raw_key(key) == principal
    except BindingError:
        return False


class _Audit:
    """One run of the audit over a checked copy of the input (its state is the run's own)."""

    def __init__(self, bundle: dict[str, Any]) -> None:
        self.b = bundle
        self.now = _instant(bundle["now"])
        self.p = raw_key(bundle["principal"])
        self.p_parley = parley_key_of(bundle["principal"])
        jwks = bundle["handoff"]["jwks"]
        held = []
        for key in jwks.get("keys", []):
            try:
                held.append(raw_key(key))
            except BindingError:
                continue
        if self.p not in held:
            _fail(
                "binding_key_unsupported",
                "the errand's principal key is not held in the principal side's key set",
                "not_in_jwks",
            )

    # ------------------------------------------------------------------ stage 1

    def pxp(self) -> None:
        ledger, brief = self.b["pxp"]["ledger"], self.b["pxp"]["brief"]
        try:
            self.head = pxp.verify_ledger(ledger)
        except pxp.PxpError as exc:
            _protocol("pxp_invalid", exc)
        problem = pxp_brief_error(brief)
        if problem is not None:
            _fail("pxp_invalid", f"the brief is not a PXP brief: {problem}", "brief_invalid")
        if _get(brief, "ledger", "head") != self.head:
            _fail("pxp_invalid", "the brief was made from another ledger", "brief_head")
        if brief.get("outcome") != "agreed":
            _fail("pxp_invalid", "the room did not agree", "not_agreed")
        agreements = [e for e in ledger if isinstance(e, Mapping) and e.get("type") == "agreement"]
        self.agreed_hash = _get(agreements[-1], "data", "proposal_hash") if agreements else None

    def handoff(self) -> None:
        h = self.b["handoff"]
        try:
            roles = handoff.Roles.from_json(h["roles"])
            registry = handoff.Registry(roles=roles, extensions=handoff.EXTENSIONS)
            for record in h["records"]:
                added = registry.add(record)
                if added.status not in ("accepted", "duplicate"):
                    _fail(
                        "handoff_invalid",
                        f"HANDOFF refused a record of the errand: record {record.get('id')!r} "
                        f"{added.status}",
                        "record_" + added.status,
                    )
        except handoff.HandoffError as exc:
            _protocol("handoff_invalid", exc)
        self.registry = registry
        side = handoff.PrincipalSide(jwks=h["jwks"], verifiable=True)
        self.decision = handoff.ItemId("decisions", h["decision"]["project"], h["decision"]["key"])
        self.act = handoff.ItemId("acts", h["act"]["project"], h["act"]["key"])
        self.settlements: dict[str, dict[str, Any] | None] = {}
        for name, item in (("decision", self.decision), ("act", self.act)):
            state = registry.state(item)
            record = None
            if state.settlement is not None:
                held = registry.records(item, id=state.settlement)
                record = held[0] if held else None
            if record is not None:
                try:
                    verdict = handoff.evidence.evidence_verdict(record, registry, side)
                except handoff.HandoffError as exc:
                    _protocol("handoff_invalid", exc)
                if verdict.verdict != "verified":
                    reason = "evidence_" + verdict.verdict
                    _fail(
                        "handoff_invalid",
                        f"the {name} settlement's evidence is not verified",
                        reason,
                    )
            self.settlements[name] = record

    def parley(self) -> None:
        p = self.b["parley"]
        m = self.b["mandate"]
        intent, proposal, commit = p["intent"], p["proposal"], p["commit"]
        try:
            if parley.proposal_hash(proposal) != proposal.get("hash"):
                _fail(
                    "parley_invalid",
                    "PARLEY refused a record of the errand: the proposal's hash is not its "
                    "content's",
                    "hash_mismatch",
                )
            parley.verify_proof(
                intent["proof"],
                aud=m["service"],
                verb="INTENT",
                target=parley.grants.proof_target("INTENT", capability=intent.get("capability")),
                now=intent["proof"]["ts"],
            )
            parley.verify_proof(
                commit["proof"],
                aud=m["service"],
                verb="COMMIT",
                target=parley.grants.proof_target("COMMIT", proposal_hash=commit.get("hash")),
                now=commit["proof"]["ts"],
            )
            ctx = parley.GrantContext(
                m["service"],
                "COMMIT",
                proposal.get("capability"),
                commit["proof"]["ts"],
                proposal=parley.ProposalFacts.from_json(proposal),
                spent={},
                principal=self.p_parley,
            )
            check = parley.verify_grant(
                commit.get("grants"),
                trusted=[self.p_parley],
                proof_key=commit["proof"]["key"],
                ctx=ctx,
            )
            if not check.ok:
                _fail(
                    "parley_invalid",
                    f"PARLEY refused a record of the errand: {check.message}",
                    str(check.reason if check.reason is not None else check.code),
                )
        except parley.ParleyError as exc:
            _protocol("parley_invalid", exc)

    def vxp(self) -> None:
        v = self.b["vxp"]
        receipt = self.b["parley"]["receipt"]
        self.fetched = _get(receipt, "result", "x_binding", "vxp", "request_id")
        try:
            verdict = vxp.verify(
                v["package"],
                v["metadata"],
                v["jwks"],
                now=self.now,
                request_id=self.fetched if isinstance(self.fetched, str) else None,
                request=self.b["parley"]["intent"],
            )
        except vxp.VxpError as exc:
            _protocol("vxp_invalid", exc)
        if not verdict.valid:
            failure = verdict.failure or {}
            reason = str(failure.get("reason") or failure.get("code"))
            _fail(
                "vxp_invalid", f"the VXP package does not verify: {failure.get('message')}", reason
            )
        self.verdict = verdict
        self.statements = [_payload(s) for s in v["package"]["statements"]]

    # ------------------------------------------------------------------ stage 2

    def links(self) -> dict[str, Any]:
        b, m = self.b, self.b["mandate"]
        brief = b["pxp"]["brief"]
        p = b["parley"]
        intent, proposal, commit, receipt = p["intent"], p["proposal"], p["commit"], p["receipt"]
        package = b["vxp"]["package"]

        # 2, 3: the agreement's machine terms and the limit.
        terms = _get(brief, "agreement", "terms")
        machine = read_terms(terms)
        limit = m["limit"]
        if machine.currency != limit["currency"] or machine.amount > limit["amount"]:
            _fail(
                "binding_over_limit",
                f"the agreed price {machine.amount} {machine.currency} is above the errand's "
                f"limit {limit['amount']} {limit['currency']}",
            )

        # 4, 5, 6: the decision is approved, not stale, and signed by the principal.
        state = self.registry.state(self.decision)
        settlement = self.settlements["decision"]
        if settlement is None or state.state != "settled" or state.outcome != "approve":
            _fail(
                "binding_not_approved",
                f"the principal has not approved the decision (state {state.state}, "
                f"outcome {state.outcome})",
            )
        settled_rev = settlement.get("terms_rev")
        assert type(settled_rev) is int  # a settlement the registry admitted has one
        need_revs = [
            r.get("terms_rev")
            for r in self.registry.records(self.decision, types=("raised", "amended"))
        ]
        current = max((r for r in need_revs if isinstance(r, int)), default=settled_rev)
        if state.stale or settled_rev != current:
            _fail(
                "binding_terms_changed",
                f"the terms changed after the principal's decision: she settled revision "
                f"{settled_rev}, the decision is at revision {current}",
            )
        jwks = b["handoff"]["jwks"]
        if not _signed_by(settlement, jwks, self.p):
            _fail("binding_wrong_key", "the decision was not signed by the errand principal's key")
        decided = handoff.evidence.terms_at(self.registry, self.decision, settled_rev)
        x = _get(decided, "x_binding")
        if not isinstance(x, Mapping) or x.get("profile") != PROFILE:
            _fail(
                "binding_agreement_mismatch",
                "the decided terms carry no pp-bind/1 x_binding",
                "x_binding",
            )

        # 7: PXP -> Decision.
        cited = _get(x, "pxp", "proposal_hash")
        agreed = pxp.proposal_hash(terms)
        for member, ok in (
            ("proposal_hash", cited == agreed == self.agreed_hash),
            ("brief_hash", _get(brief, "agreement", "proposal_hash") == agreed),
            ("ledger_head", _get(x, "pxp", "ledger_head") == self.head),
            ("brief", _get(x, "pxp", "brief") == brief),
        ):
            if not ok:
                _fail(
                    "binding_agreement_mismatch",
                    f"the decision cites PXP agreement {cited}, but the room agreed {agreed}",
                    member,
                )

        # 8: the decided machine terms are the agreed ones, for the errand's principal.
        if _get(x, "terms") != machine.to_json():
            _fail(
                "binding_terms_not_agreed", "the decision's terms are not the agreed terms", "terms"
            )
        if not _same(_get(x, "principal"), self.p):
            _fail("binding_terms_not_agreed", "the decision is for another principal", "principal")

        # 9: Decision -> the consent request of the decided proposal.
        decided_proposal = _get(x, "parley", "proposal")
        consent = _get(x, "parley", "consent")
        self._consent(decided, decided_proposal, consent, machine)

        # 10: the commit is of the decided proposal.
        grants = commit.get("grants")
        grant = None
        if isinstance(grants, list) and grants:
            try:
                grant = parley.decode_grant(grants[0])
            except parley.ParleyError:
                grant = None
        only = [
            c["only"]
            for c in (grant.blocks[0].payload.get("caveats", []) if grant else [])
            if isinstance(c, Mapping) and "only" in c
        ]
        for member, ok in (
            (
                "commit",
                commit.get("proposal") == decided_proposal["id"]
                and commit.get("hash") == decided_proposal["hash"],
            ),
            ("proposal", proposal.get("id") == decided_proposal["id"]),
            ("only", only == [decided_proposal["hash"]]),
            ("receipt", receipt.get("proposal") == decided_proposal["id"]),
        ):
            if not ok:
                _fail(
                    "binding_wrong_proposal",
                    f"the commit names proposal {commit.get('proposal')}, but the principal "
                    f"decided proposal {decided_proposal['id']}",
                    member,
                )

        # 11: C is the consent grant her decision gives.
        assert grant is not None
        root = grant.blocks[0].payload
        expected = [
            *parley.grants.consent_caveats(consent),
            {"spend": {"max": machine.amount, "currency": machine.currency}},
        ]
        agent = commit["proof"]["key"]
        for member, ok in (
            ("grants", len(grants) == 1 and len(grant.blocks) == 1),
            ("iss", _same(root.get("iss"), self.p)),
            ("sub", root.get("sub") == agent == intent["proof"]["key"] == _get(x, "agent")),
            ("caveats", root.get("caveats") == expected),
            ("nonce", root.get("nonce") == record_digest(settlement)),
        ):
            if not ok:
                _fail(
                    "binding_grant_mismatch",
                    f"the commit's grant is not the consent grant the principal's decision "
                    f"gives ({member})",
                    member,
                )

        # 12: the receipt describes the decided proposal, committed within its life.
        for member, ok in (
            ("capability", receipt.get("capability") == decided_proposal["capability"]),
            ("summary", receipt.get("summary") == decided_proposal["summary"]),
            ("effects", receipt.get("effects") == decided_proposal["effects"]),
            ("cost", receipt.get("cost") == decided_proposal["cost"]),
            ("at", isinstance(receipt.get("at"), int) and receipt["at"] < consent["expires"]),
        ):
            if not ok:
                _fail(
                    "binding_receipt_mismatch",
                    f"the receipt does not describe the decided proposal committed within its "
                    f"life ({member})",
                    member,
                )

        # 13: the proof is the configured issuer's (its name and its pinned keys), for the
        # decided operation.
        pinned = set(m["issuer_keys"])
        held = b["vxp"]["jwks"].get("keys")
        thumbprints = []
        for key in held if isinstance(held, list) else []:
            try:
                thumbprints.append(vxp.key_thumbprint(dict(key)))
            except (vxp.VxpError, ValueError, TypeError):
                thumbprints.append("")
        if not thumbprints or not set(thumbprints) <= pinned:
            _fail(
                "binding_wrong_company",
                f"the proof's issuer keys are not the keys configured for {m['issuer']}",
                "issuer_keys",
            )
        request_id = _get(x, "vxp", "request_id")
        if not (
            package.get("company") == m["issuer"] == _get(x, "vxp", "company")
            and _get(package, "op", "id") == request_id == self.fetched
            and _get(receipt, "result", "x_binding", "vxp", "company") == m["issuer"]
        ):
            _fail(
                "binding_wrong_company",
                f"the proof comes from {package.get('company')}, not the issuer configured "
                f"for {m['service']}",
            )

        # 14: the proof's terms are the terms she was shown.
        self._proof_terms(x, decided_proposal, machine, intent)

        # 15: the approval is hers.
        approvals = [s for s in self.statements if s.get("kind") == "user_approval"]
        body = _get(approvals[-1], "body") if approvals else None
        if not (
            isinstance(body, Mapping)
            and body.get("method") == "user_signed"
            and _same(body.get("user_key"), self.p)
        ):
            _fail(
                "binding_forged_approval",
                "the proof's approval was not signed by the errand principal's key",
            )

        # 16: the execution released the decided commit under C.
        executions = [s for s in self.statements if s.get("kind") == "execution"]
        release = release_object(
            service=m["service"],
            proposal=decided_proposal["id"],
            hash=decided_proposal["hash"],
            grant=grants[0],
        )
        if not executions or _get(executions[-1], "body", "release") != vxp.statements.digest_of(
            release
        ):
            _fail(
                "binding_release_mismatch",
                "the proof's execution is not the commit of the decided proposal",
            )

        # 17: a witnessed, successful execution.
        v = self.verdict
        for field, value, want in (
            ("final_state", v.final_state, "succeeded"),
            ("approval", v.approval, "user_signed"),
            ("logged", v.logged, True if b["policy"]["require_logged"] else v.logged),
        ):
            if value != want:
                _fail(
                    "binding_not_proven",
                    f"the proof does not show a witnessed, successful execution ({field} is "
                    f"{value})",
                    field,
                )

        act = self._act(machine, settlement, decided_proposal, receipt, package)
        return {
            "profile": PROFILE,
            "principal": self.p.hex(),
            "item": machine.item,
            "amount": machine.amount,
            "currency": machine.currency,
            "pxp": {"proposal_hash": agreed, "ledger_head": self.head},
            "decision": {"terms_rev": settled_rev, "settlement": record_digest(settlement)},
            "parley": {
                "service": m["service"],
                "proposal": decided_proposal["id"],
                "hash": decided_proposal["hash"],
                "grant": grant.id,
                "receipt": receipt["id"],
            },
            "vxp": {
                "company": package["company"],
                "terms_digest": _get(self._terms_statement, "body", "terms_digest"),
                "final_state": v.final_state,
                "logged": v.logged,
                "statements": len(self.statements),
            },
            "act": act,
        }

    def _consent(
        self,
        decided: Mapping[str, Any] | None,
        proposal: Any,
        consent: Any,
        machine: MachineTerms,
    ) -> None:
        m = self.b["mandate"]

        def bad(member: str) -> NoReturn:
            _fail(
                "binding_consent_mismatch",
                f"the consent request in the decision is not the one the decided proposal "
                f"gives ({member})",
                member,
            )

        if not isinstance(proposal, Mapping) or not isinstance(consent, Mapping):
            bad("consent")
        try:
            again = parley.consent_request(
                proposal, service=machine.service, principal=self.p_parley
            )
        except parley.ParleyError:
            bad("proposal")
        if dict(consent) != {**again, "principal": consent.get("principal")} or not _same(
            consent.get("principal"), self.p
        ):
            bad("consent")
        if machine.service != m["service"]:
            bad("service")
        if proposal.get("capability") != m["capability"]:
            bad("capability")
        try:
            check_conforming(proposal, machine, m["capability"])
        except BindingError as exc:
            bad(str(exc.reason))
        due = _get(decided, "due")
        try:
            if not isinstance(due, str) or _instant(due) != _instant(rfc3339(consent["expires"])):
                bad("due")
        except ValueError:
            bad("due")

    def _proof_terms(
        self,
        x: Mapping[str, Any],
        proposal: Mapping[str, Any],
        machine: MachineTerms,
        intent: Mapping[str, Any],
    ) -> None:
        def bad(member: str) -> NoReturn:
            _fail(
                "binding_proof_terms_mismatch",
                f"the proof's terms are not the terms the principal was shown ({member})",
                member,
            )

        statements = self.b["vxp"]["package"]["statements"]
        kinds = [s.get("kind") for s in self.statements]
        if kinds[:2] != ["request", "terms"] or kinds.count("terms") != 1:
            bad("revisions")
        request, terms = self.statements[0], self.statements[1]
        self._terms_statement = terms
        if _get(request, "body", "client_id") != intent["proof"]["key"]:
            bad("client_id")
        agreed = self.b["pxp"]["brief"]["agreement"]["terms"]
        if intent.get("capability") != proposal["capability"] or intent.get(
            "params"
        ) != intent_params(agreed):
            bad("intent")
        try:
            shown = (
                statement_digest(_get(x, "vxp", "request")),
                statement_digest(_get(x, "vxp", "terms")),
            )
        except BindingError:
            bad("statements")
        if (statement_digest(statements[0]), statement_digest(statements[1])) != shown:
            bad("statements")
        t = terms_object(
            agreement=pxp.proposal_hash(self.b["pxp"]["brief"]["agreement"]["terms"]),
            principal=self.p_parley,
            client=intent["proof"]["key"],
            service=machine.service,
            capability=proposal["capability"],
            machine=machine,
            expires=proposal["expires"],
        )
        body = _get(terms, "body") or {}
        if body.get("terms_digest") != vxp.statements.digest_of(t):
            bad("terms_digest")
        if body.get("capability") != proposal["capability"]:
            bad("capability")
        if body.get("read_back_terms") != list(READ_BACK_TERMS):
            bad("read_back_terms")
        try:
            if _instant(str(body.get("expires_at"))) != datetime.fromtimestamp(
                proposal["expires"], UTC
            ):
                bad("expires_at")
        except ValueError:
            bad("expires_at")

    def _act(
        self,
        machine: MachineTerms,
        settlement: Mapping[str, Any],
        proposal: Mapping[str, Any],
        receipt: Mapping[str, Any],
        package: Mapping[str, Any],
    ) -> str:
        state = self.registry.state(self.act)
        settled = self.settlements["act"]
        terms = state.terms
        if settled is not None:
            # her `done` confirms the revision she saw, never a later amendment
            rev = settled.get("terms_rev")
            revs = [
                r.get("terms_rev")
                for r in self.registry.records(self.act, types=("raised", "amended"))
            ]
            current = max((r for r in revs if isinstance(r, int)), default=rev)
            if state.stale or rev != current or type(rev) is not int:
                _fail(
                    "binding_act_changed",
                    f"the act changed after the principal confirmed it: she confirmed "
                    f"revision {rev}, the act is at revision {current}",
                )
            terms = handoff.evidence.terms_at(self.registry, self.act, rev)
        x = _get(terms, "x_binding")
        if terms is None or not isinstance(x, Mapping) or x.get("profile") != PROFILE:
            _fail("binding_act_item", "there is no act for the item bought", "missing")
        if x.get("item") != machine.item:
            _fail(
                "binding_act_item",
                f"the act is about item {x.get('item')}, not the item bought ({machine.item})",
                "item",
            )
        h = self.b["handoff"]["decision"]
        for member, ok in (
            (
                "decision",
                _get(x, "decision")
                == {
                    "project": h["project"],
                    "key": h["key"],
                    "settlement": record_digest(settlement),
                },
            ),
            (
                "receipt",
                _get(x, "parley")
                == {
                    "service": self.b["mandate"]["service"],
                    "proposal": proposal["id"],
                    "hash": proposal["hash"],
                    "receipt": receipt["id"],
                },
            ),
        ):
            if not ok:
                _fail(
                    "binding_act_mismatch",
                    f"the act cites another decision or commit ({member})",
                    member,
                )
        recorded = _get(x, "vxp")
        statements = package["statements"]
        count = _get(recorded, "statements")
        for member, ok in (
            ("company", _get(recorded, "company") == package["company"]),
            ("request_id", _get(recorded, "request_id") == _get(package, "op", "id")),
            ("statements", type(count) is int and 1 <= count <= len(statements)),
        ):
            if not ok:
                _fail(
                    "binding_log_truncated",
                    f"the proof presented is shorter than, or not an extension of, the proof "
                    f"the agent verified ({member})",
                    member,
                )
        if statement_digest(statements[count - 1]) != _get(recorded, "last"):
            _fail(
                "binding_log_truncated",
                "the proof presented is not an extension of the proof the agent verified (last)",
                "last",
            )
        if settled is None:
            if self.b["policy"]["require_act_done"]:
                _fail("binding_act_open", "the principal has not yet confirmed the act")
            return "open"
        if settled.get("outcome") != "done":
            _fail(
                "binding_act_wrong_key",
                f"the act was settled {settled.get('outcome')!r}, not done",
                "outcome",
            )
        if not _signed_by(settled, self.b["handoff"]["jwks"], self.p):
            _fail(
                "binding_act_wrong_key",
                "the act was not settled with the errand principal's key",
                "key",
            )
        return "done"


def _same(key: object, principal: bytes) -> bool:
    try:
        return raw_key(key) == principal
    except BindingError:
        return False


def pxp_brief_error(brief: object) -> str | None:
    """The first schema error of a PXP brief (PXP's own schema, its compiled validator)."""
    first = pxp_schemas.first_error("brief.schema.json", brief)
    return None if first is None else first.message


def verify_errand(bundle: object) -> dict[str, Any]:
    """Audit one errand; return the report or raise :class:`BindingError` at the first break.

    ``bundle`` is the audit input of docs/spec/bindings.md §7.1 (JSON). Stage 0 checks its
    shape and the principal key, stage 1 runs each protocol's own verification in errand
    order (PXP, Handoff, Parley, VXP), stage 2 every link between them. The error's
    ``code`` is stable, ``link`` names the link that broke, ``reason`` the failing member.
    """
    checked = _stage0(bundle)
    audit = _Audit(checked)
    audit.pxp()
    audit.handoff()
    audit.parley()
    audit.vxp()
    return audit.links()
