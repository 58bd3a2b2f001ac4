"""The ``vxp demo`` and ``vxp verify`` subcommands (VXP Proof)."""

from __future__ import annotations

import argparse
import json
import os
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _ppcli.rules import print_out, read_input

from ._chain import parse_time
from ._codec import parse_json
from ._proof_demo import DEMO_VARIANTS, demo_operation
from ._verifier import verify
from .errors import VxpError

__all__ = ["add_proof_commands"]


def _read(path: str, what: str) -> Any:
    try:
        data = read_input(path)
    except OSError as exc:
        raise VxpError("file_unreadable", f"cannot read the {what} file {path}") from exc
    return parse_json(data, f"the {what} file {path}")


def _missing_folders(folder: Path) -> list[Path]:
    """The folders ``folder.mkdir(parents=True)`` would create, deepest first."""
    missing: list[Path] = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def _stage(folder: Path, name: str, value: Any) -> Path:
    """Write ``value`` as JSON to a fresh hidden file in ``folder``; return its path."""
    staged = folder / f".{name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")
    return staged


def _demo(args: argparse.Namespace) -> int:
    """Write the demo's four files and say so, or (ours) write none.

    The files are staged under hidden names, then the report is written to standard
    output; only once it is out are the files put in place. A report that cannot be
    written (``> /dev/full``, a closed pipe) or any other failure removes what was staged
    and the folders the command created, so a failed ``vxp demo`` leaves nothing made.
    """
    out = Path(args.out)
    op = demo_operation(args.variant)
    files = {
        "package.json": op.package,
        "metadata.json": op.metadata,
        "jwks.json": op.jwks,
        "live-checkpoint.json": {
            "checkpoint": op.live["checkpoint"],
            "consistency": op.live["consistency"],
        },
    }
    now = op.now.strftime("%Y-%m-%dT%H:%M:%SZ")
    report = (
        f"wrote {', '.join(files)} to {out}\n"
        f"verify with: vxp verify {out / 'package.json'} --metadata {out / 'metadata.json'} "
        f"--jwks {out / 'jwks.json'} --live-checkpoint {out / 'live-checkpoint.json'} --now {now}"
    )
    created = _missing_folders(out)
    staged: dict[str, Path] = {}
    done = False
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name, value in files.items():
            staged[name] = _stage(out, name, value)
        print_out(report)
        for name in files:
            os.replace(staged.pop(name), out / name)
        done = True
    finally:
        for path in staged.values():
            path.unlink(missing_ok=True)
        if not done:
            for folder in created:
                try:
                    folder.rmdir()
                except OSError:
                    break
    return 0


def _verify(args: argparse.Namespace) -> int:
    package = _read(args.package, "package")
    metadata = _read(args.metadata, "metadata")
    jwks = _read(args.jwks, "JWKS")
    live = None
    if args.live_checkpoint is not None:
        fresh = _read(args.live_checkpoint, "live checkpoint")
        if not isinstance(fresh, dict) or set(fresh) != {"checkpoint", "consistency"}:
            raise VxpError("live_invalid", "the live checkpoint file is {checkpoint, consistency}")
        live = {
            "metadata": _read(args.live_metadata, "live metadata")
            if args.live_metadata
            else metadata,
            "jwks": _read(args.live_jwks, "live JWKS") if args.live_jwks else jwks,
            **fresh,
        }
    now = datetime.now(UTC) if args.now is None else parse_time(args.now, "--now")
    request = None if args.request is None else _read(args.request, "request")
    verdict = verify(
        package, metadata, jwks, live=live, now=now, request_id=args.request_id, request=request
    )
    print(json.dumps(verdict.to_json(), indent=2, ensure_ascii=False))
    return 0 if verdict.valid else 1


def add_proof_commands(sub: Any) -> None:
    """Register ``demo`` and ``verify`` on the ``vxp`` subparsers object ``sub``."""
    demo = sub.add_parser(
        "demo",
        help="issue a complete operation like the draft's; write package, metadata and JWKS",
        description="Issue a VXP Proof operation with demo keys and write its public material.",
    )
    demo.add_argument("--out", default=".", help="folder to write the files to (default: .)")
    demo.add_argument(
        "--variant", default="succeeded", choices=DEMO_VARIANTS, help="which operation to issue"
    )
    demo.set_defaults(handler=_demo)
    ver = sub.add_parser(
        "verify",
        help="verify a package against issuer metadata and JWKS; print the verdict JSON",
        description="Verify a VXP Proof package. Exit status 0 only when the verdict is valid.",
    )
    ver.add_argument("package", help="the package JSON file")
    ver.add_argument("--metadata", required=True, help="issuer metadata JSON (RFC 8414)")
    ver.add_argument("--jwks", required=True, help="the issuer's JWKS JSON")
    ver.add_argument(
        "--live-checkpoint",
        help="a fresh {checkpoint, consistency} JSON file: verify live against it",
    )
    ver.add_argument("--live-metadata", help="metadata fetched now (default: --metadata)")
    ver.add_argument("--live-jwks", help="JWKS fetched now (default: --jwks)")
    ver.add_argument("--now", help="verification time, RFC 3339 UTC (default: the clock)")
    ver.add_argument("--request-id", help="the request id the package must be for (op.id)")
    ver.add_argument(
        "--request", help="the request JSON the agent sent; its digest must be the signed one"
    )
    ver.set_defaults(handler=_verify)
