"""Subcommands of the authorization core: keygen, grant, delegate, inspect, approve, est.

Registered on the ``parley`` command by :func:`register`. ``grant`` and ``approve`` sign
with the principal key and ask for a confirmation typed on the controlling terminal
(``/dev/tty``), never read from standard input, so a program that pipes into ``parley``
cannot approve on the human's behalf.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from _ppcli.rules import print_out, read_input

from ._caveats import RISK_LEVELS
from ._estimate import estimate
from ._grants import decode_grant, delegate, inspect_grant
from ._keystore import AgentKeyStore, PrincipalKeyStore, _shown, remove_key
from .errors import ParleyError

__all__ = ["register"]

_TTY = "/dev/tty"


def _tty_confirm(prompt: str) -> bool:
    """Ask on the controlling terminal; ``True`` only for a typed ``yes``.

    The terminal is opened as one unbuffered read-write descriptor: Python's buffered
    ``"r+"`` text mode needs a seekable file and fails on every terminal.
    """
    try:
        fd = os.open(_TTY, os.O_RDWR | getattr(os, "O_NOCTTY", 0))
    except OSError:
        raise ParleyError(
            "forbidden",
            "signing with the principal key needs an interactive terminal (no /dev/tty)",
            reason="not_interactive",
        ) from None
    answer = b""
    try:
        os.write(fd, (prompt + "\nType 'yes' to sign: ").encode("utf-8", "replace"))
        while b"\n" not in answer and len(answer) < 1024:
            chunk = os.read(fd, 1024)
            if not chunk:  # end of input (Ctrl-D): no answer
                break
            answer += chunk
    except OSError:
        answer = b""
    finally:
        os.close(fd)
    return answer.split(b"\n", 1)[0].strip().lower() == b"yes"


def _now(args: argparse.Namespace) -> int:
    return int(time.time()) if args.now is None else int(args.now)


def _caveats(args: argparse.Namespace) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if args.svc:
        out.append({"svc": list(args.svc)})
    if args.verb:
        out.append({"verbs": list(args.verb)})
    if args.can:
        out.append({"can": list(args.can)})
    if args.ttl is not None:
        out.append({"exp": _now(args) + args.ttl})
    if args.exp is not None:
        out.append({"exp": args.exp})
    if args.nbf is not None:
        out.append({"nbf": args.nbf})
    if args.per is not None:
        out.append({"per": {"max": args.per, "currency": args.currency}})
    if args.spend is not None:
        out.append({"spend": {"max": args.spend, "currency": args.currency}})
    if args.risk is not None:
        out.append({"risk": args.risk})
    if args.only is not None:
        out.append({"only": args.only})
    return out


def _caveat_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("caveats")
    group.add_argument("--svc", action="append", metavar="SERVICE", help="allow this service id")
    group.add_argument("--verb", action="append", metavar="VERB", help="allow this verb")
    group.add_argument("--can", action="append", metavar="PATTERN", help="capability pattern")
    group.add_argument("--ttl", type=int, metavar="SECONDS", help="expire this long from now")
    group.add_argument("--exp", type=int, metavar="UNIX", help="expire at this time")
    group.add_argument("--nbf", type=int, metavar="UNIX", help="not valid before this time")
    group.add_argument("--per", type=int, metavar="MINOR", help="cap per commit (minor units)")
    group.add_argument("--spend", type=int, metavar="MINOR", help="total cap (minor units)")
    group.add_argument("--currency", default="USD", help="currency of --per/--spend (USD)")
    group.add_argument("--risk", choices=sorted(RISK_LEVELS), help="highest risk allowed")
    group.add_argument("--only", metavar="HASH", help="only this proposal hash")
    parser.add_argument("--now", type=int, metavar="UNIX", help="current time (default: clock)")


def _read_text(source: str, *, peer_data: bool = False) -> str:
    """The text of the operator's file ``source``.

    A path that cannot be read is the operator's own mistake (``bad_argument``). Its content
    is too, unless ``peer_data``: a consent or a proposal came from a service, so text that
    is not UTF-8 is then the protocol error ``invalid_params``.
    """
    try:
        data = read_input(source)  # "-": standard input; at most MAX_INPUT_BYTES
    except OSError as exc:
        raise ParleyError(
            "bad_argument", f"cannot read {source}: {exc.strerror}", reason="bad_file"
        ) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParleyError(
            "invalid_params" if peer_data else "bad_argument",
            f"{source} is not UTF-8 text (byte {exc.start})",
            reason="bad_file",
        ) from None


def _read_json(source: str, what: str) -> Any:
    """Parse the protocol object (a consent, a proposal) in ``source``; a file that cannot be
    read says so, not "not JSON"."""
    text = _read_text(source, peer_data=True)
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise ParleyError(
            "invalid_params", f"the {what} in {source} is not JSON", reason="bad_consent"
        ) from None


def _keygen(args: argparse.Namespace) -> int:
    store: AgentKeyStore | PrincipalKeyStore
    if args.principal:
        store = PrincipalKeyStore()
        name = args.name or "principal"
    else:
        store = AgentKeyStore()
        name = args.name or "agent"
    public = store.create(name)
    try:
        print_out(public)
    except OSError:
        # nobody saw the public key (a full disk, a closed pipe): leave no key behind,
        # so the same command can be run again (review i24 #8)
        remove_key(store, name)
        raise
    return 0


def _grant(args: argparse.Namespace) -> int:
    caveats = _caveats(args)
    if not any("exp" in c for c in caveats):
        print(
            "note: this grant never expires and v1 has no revocation; consider --ttl",
            file=sys.stderr,
        )
    token = PrincipalKeyStore().mint(
        args.to, caveats, confirm=_tty_confirm, iat=_now(args), name=args.name
    )
    print(token)
    if args.save:
        _save(token, "grants", None)
    return 0


def _save(token: str, kind: str, name: str | None) -> None:
    """Keep ``token`` in the agent's folder, where the MCP bridge reads it."""
    from ._grant_files import save_token
    from ._keystore import agent_home

    path = save_token(agent_home(), kind, token, name)
    print(f"saved to {path}", file=sys.stderr)


def _delegate(args: argparse.Namespace) -> int:
    holder = AgentKeyStore().key(args.key)
    print(delegate(args.token, holder, args.to, _caveats(args), iat=_now(args)))
    return 0


def _inspect(args: argparse.Namespace) -> int:
    info = inspect_grant(args.token)
    if args.json:
        print(json.dumps(info, indent=2))  # ASCII: a token cannot put controls on a terminal
        return 0
    grant = decode_grant(args.token)
    print(f"grant     {info['grant']}")
    print(f"principal {info['principal']}")
    print(f"holder    {info['holder']}")
    verdict = "valid" if info["signatures"] else "INVALID (do not trust this token)"
    print(f"chain     {info['depth']} block(s), signatures {verdict}")
    for index, block in enumerate(info["blocks"]):
        who = "root" if index == 0 else f"delegation {index}"
        print(f"  [{who}] {block['id']} -> {block['sub']} (iat {block['iat']})")
        for caveat in grant.blocks[index].raw_caveats:
            print(f"      {_shown(json.dumps(caveat, ensure_ascii=False))}")
    print("effective caveats:")
    for caveat in info["caveats"]:
        print(f"  {json.dumps(caveat)}")
    if not info["caveats"]:
        print("  (none: everything for this principal)")
    for caveat in info["malformed"]:
        print(f"  fails closed: {json.dumps(caveat)}")
    return 0


def _approve(args: argparse.Namespace) -> int:
    consent = _read_json(args.consent, "consent")
    bundled = None
    if isinstance(consent, dict) and isinstance(consent.get("consent"), dict):
        # a whole consent_required ERROR frame, or a file the MCP bridge wrote (with the
        # proposal it showed)
        if isinstance(consent.get("proposal"), dict):
            bundled = consent["proposal"]
        consent = consent["consent"]
    if not isinstance(consent, dict):
        raise ParleyError("invalid_params", "the consent is not an object", reason="bad_consent")
    proposal = bundled
    if args.proposal is not None:
        proposal = _read_json(args.proposal, "proposal")
    token = PrincipalKeyStore().approve(
        consent,
        args.agent,
        confirm=_tty_confirm,
        iat=_now(args),
        name=args.name,
        proposal=proposal,
    )
    print(token)
    if args.save:
        _save(token, "consents", str(consent.get("hash")))
    return 0


def _est(args: argparse.Namespace) -> int:
    print(estimate(_read_text(args.file)))
    return 0


def register(sub: Any) -> None:
    """Add the authorization-core subcommands to the ``parley`` subparsers ``sub``."""
    p = sub.add_parser("keygen", help="create an agent key (or --principal key); print it")
    p.add_argument("--principal", action="store_true", help="in PARLEY_PRINCIPAL_HOME")
    p.add_argument("--name", help="key name (default: agent, or principal)")
    p.set_defaults(handler=_keygen)

    p = sub.add_parser("grant", help="mint a root grant with the principal key (interactive)")
    p.add_argument("--to", required=True, metavar="KEY", help="holder key (ed25519:...)")
    p.add_argument("--name", default="principal", help="principal key name")
    p.add_argument("--save", action="store_true", help="also save it in PARLEY_HOME/grants")
    _caveat_flags(p)
    p.set_defaults(handler=_grant)

    p = sub.add_parser("delegate", help="append a narrower block for another key")
    p.add_argument("token", help="the pg1. token you hold")
    p.add_argument("--to", required=True, metavar="KEY", help="new holder key")
    p.add_argument("--key", default="agent", help="your agent key name (the holder)")
    _caveat_flags(p)
    p.set_defaults(handler=_delegate)

    p = sub.add_parser("inspect", help="show what a grant token says (no trust implied)")
    p.add_argument("token", help="a pg1. token")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=_inspect)

    p = sub.add_parser("approve", help="sign a consent with the principal key (interactive)")
    p.add_argument("consent", help="file with the consent object (or the ERROR frame), or -")
    p.add_argument("--agent", required=True, metavar="KEY", help="the agent key to authorize")
    p.add_argument(
        "--proposal",
        metavar="FILE",
        help="the full proposal: checked against the consent's hash, its effects are shown",
    )
    p.add_argument("--name", default="principal", help="principal key name")
    p.add_argument("--save", action="store_true", help="also save it in PARLEY_HOME/consents")
    p.add_argument("--now", type=int, metavar="UNIX", help="current time (default: clock)")
    p.set_defaults(handler=_approve)

    p = sub.add_parser("est", help="print the token estimate (SPEC.md section 8) of a text")
    p.add_argument("file", help="a file, or - for standard input")
    p.set_defaults(handler=_est)
