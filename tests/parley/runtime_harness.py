"""Shared pieces of the runtime tests: the example shop, keys, grants, a TLS certificate."""

from __future__ import annotations

import datetime
import importlib.util
import ipaddress
import os
import ssl
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

import parley

ROOT = Path(__file__).resolve().parents[2]
SHOP_FILE = ROOT / "examples" / "parley_shop.py"

PRINCIPAL = parley.key_from_seed(bytes([11]) * 32)
OTHER_PRINCIPAL = parley.key_from_seed(bytes([12]) * 32)
AGENT = parley.key_from_seed(bytes([21]) * 32)
INTRUDER = parley.key_from_seed(bytes([22]) * 32)
SERVICE_ID = "shop.example"


def need_uvicorn() -> None:
    """Skip, saying why, when the ``http`` extra (uvicorn) is missing.

    ``PP_REQUIRE_UVICORN=1`` (set by ``.ci/run``) turns the skip into a failure.
    """
    try:
        import uvicorn  # noqa: F401
    except ImportError:
        reason = "needs uvicorn: pip install 'principal-protocols[http]'"
        if os.environ.get("PP_REQUIRE_UVICORN") == "1":
            pytest.fail(f"PP_REQUIRE_UVICORN=1 but uvicorn is missing ({reason})")
        pytest.skip(reason)


def load_shop() -> Any:
    """Import examples/parley_shop.py as a module."""
    spec = importlib.util.spec_from_file_location("parley_shop", SHOP_FILE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def grant(
    holder: parley.Key = AGENT,
    principal: parley.Key = PRINCIPAL,
    *,
    extra: list[dict[str, Any]] | None = None,
    now: int | None = None,
    nonce: str = "g1",
) -> str:
    """A policy grant: this service, per-commit cap 20 USD, low risk, one hour."""
    at = int(time.time()) if now is None else now
    caveats = [
        {"svc": [SERVICE_ID]},
        {"per": {"max": 2000, "currency": "USD"}},
        {"risk": "low"},
        {"exp": at + 3600},
        *(extra or []),
    ]
    return parley.mint_grant(principal, holder.public, caveats, iat=at, nonce=nonce)


def stdio_url() -> str:
    """The stdio: URL running the example shop as a child process."""
    return f"stdio:{sys.executable} {SHOP_FILE} stdio: --trust {PRINCIPAL.public}"


def make_cert(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost; returns (cert, key) files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


def tls_contexts(directory: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """(server context, client context trusting the self-signed certificate)."""
    cert_file, key_file = make_cert(directory)
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert_file, key_file)
    client = ssl.create_default_context(cafile=str(cert_file))
    return server, client
