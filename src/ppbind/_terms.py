"""Machine-readable money and item terms in a PXP proposal, and the Parley INTENT they give.

PXP terms are free text; the profile reads three of them by their whole text (§4.1 of
docs/spec/bindings.md): ``item: ITEM``, ``price: DECIMAL CUR`` and ``service: SERVICE``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pxp

from .errors import BindingError

__all__ = ["MachineTerms", "agreed_terms", "intent_params", "price_text", "read_terms"]

MAX_SAFE_INTEGER = 2**53 - 1
ZERO_DECIMAL = frozenset({"JPY", "KRW", "VND", "CLP", "ISK", "UGX", "XAF", "XOF"})
"""Currencies Parley's Lens shows without a decimal point (SPEC.md §9.2)."""
THREE_DECIMAL = frozenset({"BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"})
"""ISO 4217 currencies with three decimals: refused (Lens would show them /100, Q4)."""

_ITEM = re.compile(r"[A-Za-z0-9._:/-]{1,128}")
_SERVICE = re.compile(r"[!-~]{1,256}")
_PRICE = re.compile(r"(0|[1-9][0-9]*)(?:\.([0-9]+))? ([A-Z]{3})")


@dataclass(frozen=True)
class MachineTerms:
    """The machine terms ``M`` an agreement states: item, price in minor units, service."""

    item: str
    """The item id (``item: …`` term), e.g. ``ben-shop/bike-2291``."""
    amount: int
    """The price in minor units of ``currency`` (a safe integer)."""
    currency: str
    """The ISO 4217 currency code of the price."""
    service: str
    """The Parley service id the purchase is made at (``service: …`` term)."""

    def to_json(self) -> dict[str, Any]:
        """Return ``{"item", "amount", "currency", "service"}``."""
        return {
            "item": self.item,
            "amount": self.amount,
            "currency": self.currency,
            "service": self.service,
        }


def _unreadable(message: str, reason: str) -> BindingError:
    return BindingError("binding_terms_unreadable", message, reason=reason, link="pxp")


def exponent(currency: str) -> int:
    """The number of fraction digits the profile writes for ``currency`` (0 or 2)."""
    return 0 if currency in ZERO_DECIMAL else 2


def price_text(amount: int, currency: str) -> str:
    """Write ``amount`` minor units of ``currency`` as the profile's DECIMAL (``440.00``)."""
    if type(amount) is not int or not 0 <= amount <= MAX_SAFE_INTEGER:
        raise _unreadable("an amount is an integer from 0 to 2^53-1", "unsafe_amount")
    if not isinstance(currency, str) or not re.fullmatch(r"[A-Z]{3}", currency):
        raise _unreadable(f"{currency!r} is not a currency the profile reads", "bad_currency")
    if currency in THREE_DECIMAL:
        raise _unreadable(f"{currency!r} is not a currency the profile reads", "bad_currency")
    e = exponent(currency)
    if e == 0:
        return f"{amount} {currency}"
    return f"{amount // 100}.{amount % 100:02d} {currency}"


def _price(text: str) -> tuple[int, str]:
    match = _PRICE.fullmatch(text)
    if match is None:
        raise _unreadable(f"the price term {text!r} is not 'price: DECIMAL CUR'", "bad_price")
    whole, frac, currency = match.groups()
    if currency in THREE_DECIMAL:
        raise _unreadable(
            f"{currency} has three decimals, which Parley's Lens cannot show",
            "unsupported_currency",
        )
    e = exponent(currency)
    if len(frac or "") != e:
        raise _unreadable(f"{currency} prices are written with {e} fraction digits", "bad_price")
    amount = int(whole + (frac or ""))
    if amount > MAX_SAFE_INTEGER:
        raise _unreadable("the amount is above 2^53-1 minor units", "unsafe_amount")
    return amount, currency


def read_terms(terms: object) -> MachineTerms:
    """Read the machine terms of a PXP proposal's ``terms`` (a list of strings).

    Exactly one ``item:``, one ``price:`` and one ``service:`` term must appear, each matched
    on its whole text; every other term is free text. Raises ``binding_terms_unreadable``
    with a ``reason`` (``missing_item``, ``repeated_price``, ``bad_price``, …).
    """
    if not isinstance(terms, list) or not all(isinstance(t, str) for t in terms):
        raise _unreadable("the agreed terms are not a list of strings", "not_terms")
    found: dict[str, Any] = {}
    for term in terms:
        name, sep, value = term.partition(": ")
        if not sep or name not in ("item", "price", "service"):
            if term.split(":", 1)[0] in ("item", "price", "service"):
                raise _unreadable(
                    f"the term {term[:60]!r} is not in the profile's form", "bad_form"
                )
            continue
        if name in found:
            raise _unreadable(f"the agreed terms state the {name} twice", f"repeated_{name}")
        if name == "item":
            if not _ITEM.fullmatch(value):
                raise _unreadable(f"the item {value[:60]!r} is not an item id", "bad_item")
            found[name] = value
        elif name == "service":
            if not _SERVICE.fullmatch(value):
                raise _unreadable(f"the service {value[:60]!r} is not a service id", "bad_service")
            found[name] = value
        else:
            found[name] = _price(value)
    for name in ("item", "price", "service"):
        if name not in found:
            raise _unreadable(f"the agreed terms do not state the {name}", f"missing_{name}")
    amount, currency = found["price"]
    return MachineTerms(found["item"], amount, currency, found["service"])


def agreed_terms(item: str, amount: int, currency: str, service: str, *free: str) -> list[str]:
    """Write machine terms as PXP proposal terms (then any free-text terms), read back once."""
    terms = [f"item: {item}", f"price: {price_text(amount, currency)}", f"service: {service}"]
    terms.extend(free)
    read_terms(terms)
    return terms


def intent_params(terms: object) -> dict[str, Any]:
    """Return the Parley INTENT ``params`` an agreement gives (§4.2).

    ``{"item", "price": {"amount", "currency"}, "agreement": proposal_hash(terms)}``.
    """
    m = read_terms(terms)
    assert isinstance(terms, list)
    return {
        "item": m.item,
        "price": {"amount": m.amount, "currency": m.currency},
        "agreement": pxp.proposal_hash(terms),
    }
