"""A shop that implements the profile: a Parley service whose commits are VXP operations.

:class:`BikeShop` is the seller's side of the errand, for the demo, the tests and the
vectors: its ``shop.buy`` capability answers an INTENT with one proposal per bike that fits
(the asked item first), opens one VXP operation per proposal (``request`` and ``terms``
statements, custody ``self_operated``: the shop is operator and company) and puts the two
statements in the proposal's ``data``; its COMMIT logs the principal's ``user_signed``
approval it received in the COMMIT's ``x_binding``, executes, reads back and signs the
outcome. Its proof endpoint serves each package to the agent that committed, with DPoP.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import parley
import vxp

from ._bind import READ_BACK_TERMS, proposal_expires, release_object, terms_object
from ._digests import PROFILE
from ._keys import jwk_of
from ._terms import MachineTerms, price_text

__all__ = ["Bike", "BikeShop"]

CAPABILITY = "shop.buy"


@dataclass(frozen=True)
class Bike:
    """One bike on sale: its item id, price in minor units, currency and a description."""

    item: str
    """The item id, e.g. ``ben-shop/bike-2291``."""
    amount: int
    """The price in minor units of ``currency``."""
    currency: str
    """The ISO 4217 currency code of the price."""
    summary: str
    """What the shop says the bike is (the proposal's summary)."""
    similar: str = ""
    """Item id of a bike the shop also offers when this one is asked for (same price)."""


def _at(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


class BikeShop:
    """Ben's shop: the Parley service, the VXP issuer, its Merkle log and proof endpoint.

    ``keys`` maps ``company``, ``log`` and ``witness`` to P-256 keys (the witness stands for
    an independent party that cosigns the log's checkpoint). ``clock`` and ``rand`` are the
    service's; ``salts`` the VXP disclosure salts.
    """

    def __init__(
        self,
        *,
        service_id: str,
        issuer: str,
        base_url: str,
        trusted: list[str],
        bikes: list[Bike],
        keys: Mapping[str, vxp.KeyLike],
        clock: Callable[[], float],
        rand: Callable[[int], bytes] = secrets.token_bytes,
        salts: vxp.sdjwt.RandomSource = secrets.token_bytes,
        since: int = 1_700_000_000,
    ) -> None:
        self.service_id = service_id
        self.issuer = issuer
        self.base_url = base_url
        self.bikes = {b.item: b for b in bikes}
        self.sold: dict[str, str] = {}
        self._keys = dict(keys)
        self._clock = clock
        self._rand = rand
        self._salts = salts
        self.log = vxp.MerkleLog(f"{service_id}/vxp-log")
        self.operations: dict[str, vxp.OperationBuilder] = {}
        self._lapses: dict[str, int] = {}
        """Open operations (no outcome yet) and when their terms expire."""
        self.packages: dict[str, tuple[str, Mapping[str, Any]]] = {}
        self.tokens: dict[str, vxp.fetch.AccessToken] = {}
        company = self._keys["company"]
        self.metadata = vxp.build_metadata(
            issuer,
            jwks_uri=issuer + "/.well-known/vxp-jwks.json",
            keys=[
                vxp.KeyRecord(vxp.key_thumbprint(company), "operator", _at(since), None),
                vxp.KeyRecord(vxp.key_thumbprint(company), "company", _at(since), None),
            ],
            custody="self_operated",
            log_origin=self.log.origin,
            log_kid=vxp.key_thumbprint(self._keys["log"]),
            witnesses=[vxp.key_thumbprint(self._keys["witness"])],
        )
        self.jwks = vxp.build_jwks([company, self._keys["log"], self._keys["witness"]])
        self.endpoint = vxp.fetch.ProofEndpoint(
            base_url=base_url, tokens=self.tokens, packages=self.packages
        )
        self.service = parley.Service(
            service_id,
            name="Ben's bikes",
            summary="Used bikes, sold one at a time.",
            trusted=trusted,
            clock=clock,
            rand=rand,
        )
        cap = self.service.intent(
            CAPABILITY,
            summary="Buy a used bike at the agreed price",
            params={
                "item": "string — item id",
                "price": {"amount": "int", "currency": "string"},
                "agreement": "string — PXP proposal_hash",
            },
            risk="medium",
        )(self._offer)
        cap.on_commit(self._commit)

    def _offer(self, params: dict[str, Any], ctx: parley.Context) -> Any:
        self.sweep(ctx.now)
        asked = self.bikes.get(params["item"])
        if asked is None or asked.item in self.sold:
            raise parley.ServiceError("invalid_params", "that bike is not on sale")
        offers = []
        for bike in (asked, self.bikes.get(asked.similar)):
            if bike is None or bike.item in self.sold:
                continue
            offers.append(self._open(bike, params, ctx))
        return offers

    def _open(self, bike: Bike, params: Mapping[str, Any], ctx: parley.Context) -> Any:
        """One proposal and its VXP operation (request and terms statements)."""
        op_id = "req_" + self._rand(10).hex()
        builder = vxp.OperationBuilder(
            company=self.issuer,
            op_id=op_id,
            operator_key=self._keys["company"],
            company_key=self._keys["company"],
            log=self.log,
            rng=self._salts,
        )
        now = _at(ctx.now)
        client = str(ctx.key)
        request = builder.request(channel="parley", client_id=client, request=ctx.frame, now=now)
        expires = proposal_expires(ctx.now)
        t = terms_object(
            agreement=params["agreement"],
            principal=str(ctx.principal),
            client=client,
            service=self.service_id,
            capability=CAPABILITY,
            machine=MachineTerms(bike.item, bike.amount, bike.currency, self.service_id),
            expires=expires,
        )
        terms = builder.terms(
            capability=CAPABILITY,
            terms=t,
            expires_at=_at(expires),
            read_back_terms=list(READ_BACK_TERMS),
            now=now,
        )
        self.operations[op_id] = builder
        self._lapses[op_id] = expires
        data = {
            "x_binding": {
                "vxp": {
                    "company": self.issuer,
                    "request_id": op_id,
                    "request": request.split("~", 1)[0],
                    "terms": terms.split("~", 1)[0],
                }
            }
        }
        return parley.offer(
            f"{bike.summary} ({price_text(bike.amount, bike.currency)})",
            [{"op": "other", "target": f"item/{bike.item}", "detail": "sold to the buyer"}],
            cost=(bike.amount, bike.currency),
            risk="medium",
            data=data,
            plan={"op": op_id, "item": bike.item, "t": t},
        )

    def _commit(self, proposal: dict[str, Any], ctx: parley.Context) -> Any:
        op_id = ctx.plan["op"]
        builder = self.operations[op_id]
        self._lapses.pop(op_id, None)
        x = ctx.frame.get("x_binding")
        approval = x.get("vxp_approval") if isinstance(x, dict) else None
        if not isinstance(x, dict) or not isinstance(approval, dict) or x.get("profile") != PROFILE:
            raise parley.ServiceError(
                "forbidden", "this shop commits only with the buyer's signed approval"
            )
        now = _at(ctx.now)
        user_key = approval.get("user_key")
        if not isinstance(user_key, dict):
            raise parley.ServiceError(
                "forbidden", "the buyer's approval does not verify: its user_key is not a JWK"
            )
        try:
            signature = vxp.codec.b64url_decode(approval.get("signature"), "the approval signature")
            builder.approve_with_signature(user_key=user_key, signature=signature, now=now)
        except vxp.VxpError as exc:
            raise parley.ServiceError(
                "forbidden", f"the buyer's approval does not verify: {exc}"
            ) from None
        grants = ctx.frame.get("grants") or [""]
        release = release_object(
            service=self.service_id, proposal=proposal["id"], hash=proposal["hash"], grant=grants[0]
        )
        builder.execute(release=release, now=now)
        item = ctx.plan["item"]
        self.sold[item] = proposal["id"]
        t = ctx.plan["t"]
        builder.read_back(
            observed={k: t[k] for k in READ_BACK_TERMS},
            personal={"buyer": str(ctx.principal)},
            now=now,
        )
        builder.outcome(state="succeeded", result_summary={"item": item}, now=now)
        token = "at_" + self._rand(16).hex()
        agent_jwk = jwk_of(str(ctx.key))
        self.tokens[token] = vxp.fetch.AccessToken(
            str(ctx.key), vxp.key_thumbprint(agent_jwk), ctx.now + 3600
        )
        self.packages[op_id] = (str(ctx.key), self.seal(op_id, ctx.now))
        return {
            "x_binding": {
                "vxp": {"company": self.issuer, "request_id": op_id, "access_token": token}
            }
        }

    def seal(self, op_id: str, now: int) -> dict[str, Any]:
        """The operation's package: log proofs, a checkpoint the witness cosigned at ``now``."""
        builder = self.operations[op_id]
        return builder.package(log_key=self._keys["log"], witnesses=[(self._keys["witness"], now)])

    def sweep(self, now: int) -> list[str]:
        """Seal every operation whose offer lapsed uncommitted with outcome ``expired``.

        Every offer thus ends in a signed final state (docs/spec/bindings.md §6); the shop
        runs it on each INTENT. Returns the operation ids sealed.
        """
        lapsed = sorted(op for op, until in self._lapses.items() if now > until)
        for op_id in lapsed:
            del self._lapses[op_id]
            self.operations[op_id].outcome(
                state="expired", result_summary={"reason": "offer_lapsed"}, now=_at(now)
            )
            self.packages[op_id] = ("", self.seal(op_id, now))
        return lapsed

    def proof(self, *, method: str, url: str, headers: Mapping[str, str], now: int) -> Any:
        """Answer one HTTP request to the proof endpoint (``/v1/requests/{id}/proof``)."""
        return self.endpoint.handle(method=method, url=url, headers=headers, now=now)
