"""What every command shares: exit codes, the common options, opening the gatekeeper.

The commands (``commands_*.py``) import from here; :mod:`infomark.cli.app` assembles them
into the click group. Nothing here imports a command module, so there is no cycle.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from infomark.ledger.home import default_home

__all__ = [
    "EXIT_ASK",
    "EXIT_DENY",
    "EXIT_INTERNAL",
    "EXIT_OK",
    "EXIT_USAGE",
    "EXIT_VERDICT",
    "EXIT_VERIFY",
    "CliExit",
    "closest",
    "common",
    "emit_json",
    "open_gk",
    "opts",
    "parse_input_json",
    "read_input",
    "require_home",
    "require_session",
]

F = TypeVar("F", bound=Callable[..., Any])

EXIT_OK, EXIT_VERIFY, EXIT_USAGE, EXIT_DENY, EXIT_ASK = 0, 1, 2, 3, 4
EXIT_VERDICT = 5  # audit / report --fail-on, run: the verdict is one CI must not pass
EXIT_INTERNAL = 70  # a bug in infomark: reported in one line, traceback only on request


class CliExit(Exception):
    """Raised by a command to end with a documented exit code."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def common(fn: F) -> F:
    """--home, --session and --json on every command."""

    @click.option(
        "--home",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Ledger home (default: $INFOMARK_HOME or ./.infomark).",
    )
    @click.option(
        "--session", default=None, help="Session id (default: $INFOMARK_SESSION or 'default')."
    )
    @click.option("--json", "as_json", is_flag=True, help="Print JSON with stable keys.")
    @click.option(
        "--store",
        default=None,
        metavar="URL",
        help="The ledger's store: sqlite or a postgresql:// URL (default: $INFOMARK_STORE, "
        "the config's store, <home>/store, else the home's SQLite file).",
    )
    @functools.wraps(fn)
    def wrapper(
        *args: Any,
        home: Path | None,
        session: str | None,
        as_json: bool,
        store: str | None,
        **kw: Any,
    ) -> Any:
        ctx = click.get_current_context()
        ctx.ensure_object(dict)
        ctx.obj["store"] = store
        if store:
            # Everything this command runs (the facade, serve, its workers) uses this store,
            # as if $INFOMARK_STORE named it; restored when the command ends.
            from infomark.ledger.store.select import STORE_ENV

            before = os.environ.get(STORE_ENV)
            os.environ[STORE_ENV] = store
            ctx.call_on_close(functools.partial(_restore, STORE_ENV, before))
        ctx.obj["home"] = home or default_home()
        ctx.obj["session"] = session or os.environ.get("INFOMARK_SESSION") or "default"
        ctx.obj["session_given"] = bool(session or os.environ.get("INFOMARK_SESSION"))
        ctx.obj["json"] = as_json
        return fn(*args, **kw)

    return wrapper  # type: ignore[return-value]


def _restore(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def opts() -> dict[str, Any]:
    obj: dict[str, Any] = click.get_current_context().obj
    return obj


def open_gk(profile: str | None = None, *, writes: bool = False) -> Any:
    """The session of the current options. ``writes``: the command journals what the agent
    did; refused (exit 2, the reason and the recovery) while the home's journal is marked as
    failing its integrity check (docs/reliability.md)."""
    from infomark.gatekeeper import Gatekeeper

    o = opts()
    if writes:
        from infomark.tools.integrity import check_mark

        check_mark(o["home"])
    gk = Gatekeeper.open(o["home"], o["session"], profile=profile, store=o.get("store"))
    from infomark.tools.attest_lazy import lazy_attester

    lazy_attester(gk)  # `infomark finish` runs the attested checks it needs, as every host does
    return gk


def emit_json(data: Any) -> None:
    """``data`` as indented JSON on stdout, written as it is encoded (:mod:`.jsonout`)."""
    from infomark.cli.jsonout import write_json

    write_json(data, lambda text: click.echo(text, nl=False))


def read_input(source: str | None) -> str:
    """Text from FILE, or stdin for ``-`` / no argument."""
    if source in (None, "-"):
        data = sys.stdin.buffer.read()
    else:
        try:
            data = Path(source).read_bytes()
        except OSError as exc:
            raise click.UsageError(f"cannot read {source}: {exc.strerror}") from exc
    return data.decode("utf-8", "replace")


def parse_input_json(text: str) -> dict[str, object]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(
            f"not JSON: {exc.msg} at column {exc.colno}", param_hint="--input"
        ) from exc
    if not isinstance(data, dict):
        raise click.BadParameter("must be a JSON object", param_hint="--input")
    return data


def closest(name: str, candidates: list[str]) -> str:
    """`` (did you mean a, b?)`` for the nearest candidates, or ``""``."""
    import difflib

    near = difflib.get_close_matches(name, candidates, n=3, cutoff=0.5)
    return f" (did you mean {', '.join(near)}?)" if near else ""


def require_home() -> Path:
    """The home for a read-only command: it must exist; a typo is an error, not a new home."""
    home: Path = opts()["home"]
    if (home / "ledger.db").is_file():
        return home
    from infomark.ledger.keys import KEY_ENV
    from infomark.ledger.store.select import STORE_ENV

    keyed = (home / "key").is_file() or bool(os.environ.get(KEY_ENV))  # the secret-manager route
    if keyed and ((home / "store").is_file() or os.environ.get(STORE_ENV)):
        return home  # a home whose journal is in a shared store
    parent = home.parent if str(home.parent) else Path(".")
    try:
        siblings = [p.name for p in parent.iterdir() if (p / "ledger.db").is_file()]
    except OSError:
        siblings = []
    raise click.UsageError(
        f"no ledger home at {home}{closest(home.name, siblings)}; "
        "pass --home (or set INFOMARK_HOME), or create one with `infomark init`"
    )


def require_session(names: list[str]) -> tuple[str, bool]:
    """``(session, chosen)``: the given session, which must exist, or the latest one.

    ``names`` are the home's sessions, newest activity first. ``chosen`` is True when the
    command picked the latest session itself (it says so).
    """
    o = opts()
    if not names:
        raise click.UsageError(f"the ledger home {o['home']} has no sessions yet")
    if o.get("session_given"):
        session: str = o["session"]
        if session not in names:
            raise click.UsageError(
                f"no session {session!r} in {o['home']}{closest(session, names)}; "
                "`infomark sessions` lists them"
            )
        return session, False
    return names[0], True
