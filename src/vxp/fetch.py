"""Fetching a proof package: the company's DPoP-protected endpoint and the agent's proof.

:class:`ProofEndpoint` answers ``GET /v1/requests/{id}/proof`` for the access tokens
(:class:`AccessToken`) it knows, each bound to a DPoP key; :func:`make_dpop_proof` is the
agent's side. :meth:`ProofEndpoint.handle` returns a :class:`FetchResponse` and never raises
for a request's data; ``now`` is an aware datetime or integer seconds.
"""

from __future__ import annotations

from ._fetch import AccessToken, FetchResponse, ProofEndpoint, make_dpop_proof

__all__ = ["AccessToken", "FetchResponse", "ProofEndpoint", "make_dpop_proof"]
