"""``parley serve`` and ``parley call``: run a service and talk to one from a terminal.

URLs follow SPEC.md section 2.3: ``parley://host[:port]``, ``parleys://host[:port]``,
``stdio:`` (serve on this process's stdin/stdout; for ``call``: ``stdio:<command line>``)
and ``http://host:port/path``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import importlib.util
import inspect
import json
import os
import secrets
import ssl
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

from _ppcli.rules import add_log_level, cannot_listen, probe_listen, read_input, start_logging

from ._agent import Agent, Result
from ._b64 import b64url_decode
from ._connect import connect, serve
from ._frames import escape_surrogates, well_formed
from ._http_client import split_http_url
from ._keys import Key, generate_key, key_from_seed, parse_public_key
from ._keystore import AgentKeyStore, _private_dir, agent_home
from ._lens import lens
from ._recovery import Kind, Outcome, happened, not_happened, owner_id, resolve, stale
from ._service import Service
from ._state import MemoryStore, Store
from ._stores import default_state_url, open_store
from ._transport_stdio import serve_stdio
from ._transport_tcp import parse_url
from .errors import ParleyError

__all__ = ["register"]


def _load_service(app: str, trusted: list[str], state: str | None) -> Service:
    """Load the app and give it its state store (``--state``, else the durable default).

    A factory is called with ``trusted=`` and ``store=``; when ``--state`` is not given, it
    is first called once with a throwaway in-memory store to learn the service id that
    names the default file. A ``Service`` object gets the store assigned before it serves.
    """
    target, _, attr = app.partition(":")
    attr = attr or "service"
    try:
        if target.endswith(".py"):
            spec = importlib.util.spec_from_file_location(Path(target).stem, target)
            if spec is None or spec.loader is None:
                raise ImportError(target)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(target)
    except (ImportError, OSError) as exc:
        raise ParleyError("bad_config", f"cannot load {target}: {exc}", reason="io") from None
    found = getattr(module, attr, None)
    if isinstance(found, Service):
        found.store = _state_store(state, found.id)
        return found
    if callable(found):
        try:
            params = inspect.signature(found).parameters
        except (TypeError, ValueError):
            params = {}  # type: ignore[assignment]
        if "store" not in params and not any(
            p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()
        ):
            raise ParleyError(
                "bad_config",
                f"{app} must accept store= (the service state parley serve keeps for it)",
                reason="io",
            )
        if state is None:
            probe = _build(found, app, trusted, MemoryStore())
            if not isinstance(probe, Service):
                raise ParleyError("bad_config", f"{app} did not return a Service", reason="app")
            state = default_state_url(probe.id)
        built = _build(found, app, trusted, _state_store(state, None))
        if isinstance(built, Service):
            return built
    raise ParleyError(
        "bad_config", f"{app} is neither a Service nor a function returning one", reason="io"
    )


def _build(factory: Any, app: str, trusted: list[str], store: Store) -> Any:
    """Call the app factory; whatever it raises becomes one error line (F7)."""
    try:
        return factory(trusted=trusted, store=store)
    except ParleyError:
        raise
    except Exception as exc:  # the app's own failure, e.g. json:loads given keywords
        raise ParleyError(
            "bad_config",
            f"calling {app}(trusted=…, store=…) failed: {type(exc).__name__}: {exc}"[:300],
            reason="app",
        ) from None


def _state_store(state: str | None, service_id: str | None) -> Store:
    url = state if state is not None else default_state_url(service_id or "service")
    if url == ":memory:":
        print(
            "warning: --state :memory: keeps spend totals, receipts and the auto-commit"
            " replay memory in this process only; a restart forgets them (a replayed"
            " request could act twice, a spend cap could be passed)",
            file=sys.stderr,
        )
    return open_store(url)


def _example_app() -> str:
    """The example shop: ``examples/`` of the current folder or of this checkout, else the
    copy shipped in the wheel (``parley/_examples``)."""
    shipped = Path(__file__).resolve().parent / "_examples" / "parley_shop.py"
    checkout = Path(__file__).resolve().parents[2] / "examples" / "parley_shop.py"
    for candidate in (Path("examples") / "parley_shop.py", checkout, shipped):
        if candidate.is_file():
            return f"{candidate}:build_service"
    raise ParleyError("bad_config", "the example app is not installed; pass --app", reason="io")


def _serve(args: argparse.Namespace) -> int:
    for key in args.trust:  # a typo here would silently trust nobody
        try:
            parse_public_key(key)
        except ParleyError as exc:  # the operator's own flag, not a peer's key
            raise ParleyError("bad_argument", f"--trust: {exc.message}", reason="bad_key") from None
    listen: tuple[str, int] | None = None
    if args.url.startswith(("http://", "https://")):
        parts = split_http_url(args.url)  # a malformed URL is refused before any state
        listen = (parts.hostname or "127.0.0.1", parts.port or (443 if args.url[4] == "s" else 80))
    elif not args.url.startswith("stdio:"):
        _, host, port = parse_url(args.url)
        listen = (host, port)
    if listen is not None and _port_in(args.url) == 0:
        # port 0: a free port, chosen here by a probe bind (the library's URL parsers read
        # a port of 0 as "none given" and would serve on the scheme's default port, 7447
        # or 80: review cli #4); the URL served and announced then names it
        bound, why = probe_listen(listen[0], 0)
        if why is None:
            args.url = _with_port(args.url, bound)
            listen = (listen[0], bound)
    else:
        why = None if listen is None else cannot_listen(*listen)
    if why is not None:  # a port in use, a host that does not resolve: before the state
        raise ParleyError("unavailable", why, reason="listen")
    if args.url.startswith(("parleys://", "https://")) and args.cert is None:
        scheme = args.url.split(":", 1)[0]
        raise ParleyError(
            "bad_config", f"{scheme}:// needs a certificate (--cert)", reason="no_cert"
        )
    start_logging(args.log_level, "parley")
    app = args.app if args.app is not None else _example_app()
    service = _load_service(app, list(args.trust), args.state)
    where = getattr(service.store, "path", ":memory:")
    for item in service.recover():
        print(
            f"recovered {item['kind']} {item['id']}: {item['outcome']}"
            + ("  (run: parley state list)" if item["outcome"] == "unresolved" else ""),
            file=sys.stderr,
        )
    if args.url.startswith("stdio:"):
        serve_stdio(service)
        return 0
    if args.url.startswith(("http://", "https://")):
        try:
            import uvicorn  # noqa: F401
        except ImportError:
            raise ParleyError(
                "unavailable",
                "serving http:// needs uvicorn: pip install 'principal-protocols[http]'",
                reason="no_http_extra",
            ) from None
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(_serve_until_stopped(args, service, f"(state: {where})"))
    except OSError as exc:  # an unknown host, an address in use, no permission
        raise ParleyError(
            "unavailable",
            f"cannot serve at {args.url[:80]}: {exc.strerror or exc}",
            reason="listen",
        ) from None
    return 0


def _port_in(url: str) -> int | None:
    """The port written in ``url`` (``None``: none, or not a number)."""
    try:
        return urlsplit(url).port
    except ValueError:
        return None


def _bound_url(url: str, server: Any) -> str:
    """``url`` with the port the server bound."""
    listeners = server.sockets if isinstance(server, asyncio.Server) else server.servers[0].sockets
    return _with_port(url, int(listeners[0].getsockname()[1]))


def _with_port(url: str, port: int) -> str:
    """``url`` naming ``port``."""
    if url.startswith(("http://", "https://")):
        parts = split_http_url(url)
        host = parts.hostname or "127.0.0.1"
        shown = f"[{host}]" if ":" in host else host
        return parts._replace(netloc=f"{shown}:{port}").geturl()
    scheme, host, _ = parse_url(url)
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}:{port}"


async def _serve_until_stopped(args: argparse.Namespace, service: Service, note: str) -> None:
    """Serve until cancelled; say where once listening, with the port actually bound (a URL
    with port 0 would otherwise be announced as ``:0``: review i24 #4)."""
    server = await serve(args.url, service, certfile=args.cert, keyfile=args.key)
    print(f"serving {service.id} at {_bound_url(args.url, server)} {note}", file=sys.stderr)
    if isinstance(server, asyncio.Server):
        async with server:
            await server.serve_forever()
    else:
        await server.task


def _state_url(args: argparse.Namespace) -> str:
    if args.state:
        return str(args.state)
    if args.service:
        return default_state_url(args.service)
    raise ParleyError(
        "bad_argument", "name the state with --state URL or --service ID", reason="bad_state"
    )


@contextlib.contextmanager
def _opened_state(args: argparse.Namespace) -> Iterator[Store]:
    """The state ``--state``/``--service`` names, opened read-only and closed afterwards
    (whether the command succeeds or not); a store without ``close`` has nothing to close."""
    store = open_store(_state_url(args), create=False)
    try:
        yield store
    finally:
        close = getattr(store, "close", None)
        if callable(close):
            close()


def _state_list(args: argparse.Namespace) -> int:
    with _opened_state(args) as store:
        now = int(time.time())
        kinds: tuple[Kind, ...] = ("commit", "undo")
        for kind in kinds:
            for subject, lease in store.leases(kind, limit=10_000):
                row = {"kind": kind, "id": subject, **lease.as_json()}
                row["state"] = (
                    "unresolved" if not lease.owner else "stale" if stale(lease, now) else "running"
                )
                print(json.dumps(row, ensure_ascii=False))
    return 0


def _resolve_subject(store: Store, kind: Kind, subject: str, began: int, needed: bool) -> None:
    """Check, before anything is taken over, that what a resolve reads is there and readable.

    ``needed``: the outcome writes a receipt, so the proposal (commit) or the receipt (undo)
    must exist. A record that cannot be read is ``internal``/``bad_store`` either way.
    """
    try:
        found = store.proposal(subject, now=began) if kind == "commit" else store.receipt(subject)
    except (KeyError, TypeError, ValueError, AttributeError):
        raise ParleyError(
            "internal",
            f"the stored record of the {kind} {subject[:80]!r} cannot be read",
            reason="bad_store",
        ) from None
    if found is None and needed:
        what = "proposal of this commit" if kind == "commit" else "receipt of this undo"
        raise ParleyError("not_found", f"the {what} is gone", reason="unknown_proposal")


def _state_resolve(args: argparse.Namespace) -> int:
    """Settle a claim for an operator; on any refusal the claim is left as it was (F6)."""
    if args.result is not None and not args.happened:
        raise ParleyError("bad_argument", "--result goes with --happened only", reason="bad_result")
    outcome = happened(_json_arg(args.result, "--result")) if args.happened else not_happened()
    kind: Kind = "commit" if args.kind == "commit" else "undo"
    subject = str(args.id)
    try:
        subject.encode("utf-8")
    except UnicodeEncodeError:
        raise ParleyError(
            "bad_argument", f"the {kind} id is not text (no such id)", reason="bad_id"
        ) from None
    with _opened_state(args) as store:
        return _resolve_in(store, kind, subject, outcome)


def _resolve_in(store: Store, kind: Kind, subject: str, outcome: Outcome) -> int:
    now = int(time.time())
    lease = store.lease(kind, subject)
    if lease is None:
        raise ParleyError(
            "not_found", f"no {kind} of {subject[:80]!r} is in flight", reason="not_in_flight"
        )
    if not stale(lease, now):
        raise ParleyError(
            "conflict",
            f"the {kind} is still held by {lease.owner} until {lease.until}; stop that"
            " process or wait",
            reason="busy",
        )
    _resolve_subject(store, kind, subject, lease.began, outcome.happened)
    mine = replace(lease, owner=owner_id(secrets.token_bytes), until=now + 60)
    if not store.take_over(kind, subject, lease, mine):
        raise ParleyError("conflict", "another process is settling it", reason="busy")
    try:
        written = resolve(store, kind, subject, mine, outcome, now=now, rand=secrets.token_bytes)
    except BaseException:
        store.take_over(kind, subject, mine, lease)  # give the claim back as it was
        raise
    if written is None:
        print(f"released: the {kind} of {subject} did not happen")
    else:
        print(json.dumps(written, ensure_ascii=False))
    return 0


def _json_line(value: Any) -> str:
    # a reply cut through an emoji holds a lone surrogate: escaped, as JSON.stringify does
    return escape_surrogates(json.dumps(value, ensure_ascii=False))


def _show(result: Result, as_json: bool) -> int:
    reply: Mapping[str, Any] = result.reply or {}
    if as_json:
        for event in result.events:
            print(_json_line(event))
        print(_json_line(reply))
    else:
        for event in result.events:
            print(well_formed(lens(event)))
        print(well_formed(lens(reply)))
        if result.consent is not None:
            print("consent to request from the principal:")
            print(_json_line(result.consent))
    return 0 if result.ok else 2


def _json_arg(text: str | None, what: str) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        raise ParleyError("bad_argument", f"{what} is not JSON", reason="not_json") from None


def _seed(args: argparse.Namespace) -> bytes | None:
    """The agent seed: ``--seed-file``, else ``$PARLEY_AGENT_SEED``, else ``--seed``.

    One format, the key store's: base64url (43 characters), or a whole key file written by
    ``parley keygen`` (``$PARLEY_HOME/keys/NAME.json``). 64 hex digits are still read.
    """
    text = args.seed
    if args.seed_file:
        try:
            text = read_input(args.seed_file).decode("utf-8")
        except (OSError, UnicodeDecodeError):
            raise ParleyError("bad_argument", "cannot read --seed-file", reason="io") from None
    elif os.environ.get("PARLEY_AGENT_SEED"):
        text = os.environ["PARLEY_AGENT_SEED"]
    if not text:
        return None
    text = text.strip()
    seed = b""
    if text.startswith("{"):
        with contextlib.suppress(ValueError, ParleyError):
            data = json.loads(text)
            if isinstance(data, dict) and isinstance(data.get("seed"), str):
                seed = b64url_decode(data["seed"], what="the seed")
    elif len(text) == 64:
        with contextlib.suppress(ValueError):
            seed = bytes.fromhex(text)
    else:
        with contextlib.suppress(ParleyError):
            seed = b64url_decode(text, what="the seed")
    if len(seed) != 32:
        raise ParleyError(
            "bad_argument",
            "the agent seed is base64url, as parley keygen writes it (or its key file)",
            reason="bad_seed",
        )
    return seed


def _agent_key(args: argparse.Namespace) -> tuple[Key, bool]:
    """The agent key (``--key NAME``, else a seed) and whether it is a throwaway one."""
    if args.key:
        return AgentKeyStore().key(args.key), False
    seed = _seed(args)
    if seed is not None:
        return key_from_seed(seed), False
    return generate_key(), True


_LAST = "last-proposals.json"


def _remember(proposals: list[Any]) -> None:
    """Keep the proposals of the last ``call intent`` so ``call commit ID`` can find them."""
    home = agent_home()
    try:
        _private_dir(home)
        path = home / _LAST
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump({"proposals": proposals}, out, ensure_ascii=False)
    except (OSError, ParleyError):
        print(f"note: could not keep the proposals in {home}", file=sys.stderr)


def _proposal_arg(text: str) -> dict[str, Any]:
    """``call commit``'s target: a proposal object, or the id of one from the last intent."""
    if text.lstrip().startswith("{"):
        # the proposal a service showed, pasted: the peer's data, as a file given to
        # `parley approve --proposal` is
        try:
            proposal = json.loads(text)
        except (ValueError, RecursionError):
            raise ParleyError(
                "invalid_params", "the proposal is not JSON", reason="bad_proposal"
            ) from None
        if not isinstance(proposal, dict):  # pragma: no cover - text starting with { is one
            raise ParleyError(
                "invalid_params", "commit takes a proposal object", reason="bad_proposal"
            )
        return proposal
    try:
        kept = json.loads((agent_home() / _LAST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        kept = {}
    for proposal in kept.get("proposals", []) if isinstance(kept, dict) else []:
        if isinstance(proposal, dict) and proposal.get("id") == text:
            return proposal
    raise ParleyError(
        "not_found",
        f"no proposal {text[:80]!r} in the output of the last parley call intent;"
        " pass the proposal's JSON instead",
        reason="unknown_proposal",
    )


async def _call_async(args: argparse.Namespace) -> int:
    key, throwaway = _agent_key(args)
    agent = Agent(key, list(args.grant), service=args.service)
    # the operator's own arguments are read before anything is sent
    params = _json_arg(args.params, "--params") or {}
    proposal = _proposal_arg(args.target) if args.verb == "commit" else None
    context = None
    if args.cafile:
        context = ssl.create_default_context(cafile=args.cafile)
    client = await connect(args.url, agent, ssl=context)
    async with client:
        if agent.service is None:
            hello = await client.hello(budget=args.budget)
            if args.verb == "hello":
                return _show(hello, args.json)
        verb = args.verb
        if verb == "hello":
            result = await client.hello(budget=args.budget)
        elif verb == "ask":
            result = await client.ask(args.target, params, budget=args.budget)
        elif verb == "intent":
            result = await client.intent(args.target, params, auto=args.auto, budget=args.budget)
            if result.kind == "PROPOSALS" and result.reply is not None:
                _remember(cast(Mapping[str, Any], result.reply).get("proposals") or [])
                if throwaway:
                    print(
                        "note: no --key was given, so these proposals were made for a"
                        " throwaway key and can never be committed; run parley keygen and"
                        " pass --key NAME",
                        file=sys.stderr,
                    )
        elif proposal is not None:
            result = await client.commit(proposal)
        elif verb == "undo":
            result = await client.undo(args.target)
        else:
            result = await client.expand(args.target, budget=args.budget)
        return _show(result, args.json)


def _call(args: argparse.Namespace) -> int:
    if args.verb != "hello" and not args.target:
        raise ParleyError("bad_argument", f"{args.verb} needs a target", reason="io")
    if not args.timeout > 0:
        raise ParleyError("bad_argument", "--timeout must be positive", reason="io")
    try:
        return asyncio.run(asyncio.wait_for(_call_async(args), args.timeout))
    except TimeoutError:
        raise ParleyError(
            "unavailable",
            f"no reply from {args.url[:80]} within {args.timeout:g} s",
            reason="timeout",
        ) from None


def register(sub: Any) -> None:
    """Add ``serve`` and ``call`` to the ``parley`` command's subparsers."""
    serve = sub.add_parser("serve", help="run a Parley service at a URL (TCP, TLS, stdio, HTTP)")
    serve.add_argument("url", help="parley://host:port, parleys://host:port, stdio: or http://…")
    serve.add_argument(
        "--app",
        help="FILE.py:NAME or module:NAME, a Service or a function(trusted=…, store=…)"
        " returning one (default: the example coffee shop)",
    )
    serve.add_argument("--trust", action="append", default=[], help="a trusted principal key")
    serve.add_argument(
        "--state",
        metavar="URL",
        help="where the service state lives: sqlite:PATH (default:"
        " sqlite:$PARLEY_HOME/state/<service id>.sqlite) or :memory: (lost on restart)",
    )
    serve.add_argument("--cert", help="certificate file (parleys://, https://)")
    serve.add_argument("--key", help="private key file of the certificate")
    add_log_level(serve)
    serve.set_defaults(handler=_serve)

    state = sub.add_parser("state", help="inspect and repair a service's state (operators)")
    state_sub = state.add_subparsers(dest="state_command", metavar="ACTION", required=True)
    listing = state_sub.add_parser("list", help="commits and undos in flight, as JSON lines")
    resolving = state_sub.add_parser(
        "resolve", help="settle a commit or undo a crash left unresolved"
    )
    for p in (listing, resolving):
        p.add_argument("--state", metavar="URL", help="the state URL the service uses")
        p.add_argument("--service", metavar="ID", help="or: the service id (default state)")
    listing.set_defaults(handler=_state_list)
    resolving.add_argument("kind", choices=["commit", "undo"])
    resolving.add_argument("id", help="the proposal id (commit) or the receipt id (undo)")
    outcome = resolving.add_mutually_exclusive_group(required=True)
    outcome.add_argument("--happened", action="store_true", help="the effect took place")
    outcome.add_argument("--not-happened", action="store_true", help="it did not")
    resolving.add_argument("--result", help="the receipt result, as JSON (with --happened)")
    resolving.set_defaults(handler=_state_resolve)

    call = sub.add_parser("call", help="send one request to a Parley service and print Lens")
    call.add_argument("url", help="parley://…, parleys://…, stdio:<command>, or http://…")
    call.add_argument(
        "verb", choices=["hello", "ask", "intent", "commit", "undo", "expand"], help="the verb"
    )
    call.add_argument(
        "target",
        nargs="?",
        help="capability (ask, intent), proposal JSON or an id from the last intent (commit),"
        " receipt (undo), handle (expand)",
    )
    call.add_argument("--params", help="params as a JSON object")
    call.add_argument("--auto", action="store_true", help="INTENT with auto-commit")
    call.add_argument("--budget", type=int, help="token budget of the reply")
    call.add_argument("--grant", action="append", default=[], help="a grant token to present")
    call.add_argument("--key", metavar="NAME", help="the agent key NAME from parley keygen")
    call.add_argument(
        "--seed-file",
        help="file holding the agent key seed in base64url, or a key file of parley keygen"
        " (or set $PARLEY_AGENT_SEED; default: a throwaway key)",
    )
    call.add_argument(
        "--seed",
        help="the agent key seed on the command line (visible to other local users in the"
        " process list: prefer --seed-file or $PARLEY_AGENT_SEED)",
    )
    call.add_argument("--service", help="the service id (default: learned from HELLO)")
    call.add_argument("--cafile", help="CA certificate to trust for parleys:// and https://")
    call.add_argument("--json", action="store_true", help="print frames as JSON, not Lens")
    call.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="give up when the whole call takes longer (default 60)",
    )
    call.set_defaults(handler=_call)
