"""The click application: thin wrappers over the :class:`Gatekeeper` facade.

Exit codes: 0 ok; 1 verification failed; 2 usage or bad input; 3 denied / finish
refused; 4 held for approval (ask). Errors print ``Error: …`` to stderr, never a
traceback.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from infomark.kernel.errors import InfomarkError

__all__ = [
    "EXIT_ASK",
    "EXIT_DENY",
    "EXIT_INTERNAL",
    "EXIT_OK",
    "EXIT_USAGE",
    "EXIT_VERIFY",
    "cli",
    "run",
]

F = TypeVar("F", bound=Callable[..., Any])

EXIT_OK, EXIT_VERIFY, EXIT_USAGE, EXIT_DENY, EXIT_ASK = 0, 1, 2, 3, 4
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
    @functools.wraps(fn)
    def wrapper(
        *args: Any, home: Path | None, session: str | None, as_json: bool, **kw: Any
    ) -> Any:
        ctx = click.get_current_context()
        ctx.ensure_object(dict)
        ctx.obj["home"] = home or Path(os.environ.get("INFOMARK_HOME") or ".infomark")
        ctx.obj["session"] = session or os.environ.get("INFOMARK_SESSION") or "default"
        ctx.obj["session_given"] = bool(session or os.environ.get("INFOMARK_SESSION"))
        ctx.obj["json"] = as_json
        return fn(*args, **kw)

    return wrapper  # type: ignore[return-value]


def opts() -> dict[str, Any]:
    obj: dict[str, Any] = click.get_current_context().obj
    return obj


def open_gk(profile: str | None = None) -> Any:
    from infomark.gatekeeper import Gatekeeper

    o = opts()
    return Gatekeeper.open(o["home"], o["session"], profile=profile)


def emit_json(data: Any) -> None:
    from infomark.ledger.canonical import dumps

    click.echo(dumps(data, indent=2, default=str))


def read_input(source: str | None) -> str:
    """Text from FILE, or stdin for ``-`` / no argument."""
    if source in (None, "-"):
        data = sys.stdin.buffer.read()
    else:
        try:
            data = Path(source).read_bytes()
        except OSError as exc:
            raise click.UsageError(f"cannot read {source}: {exc.strerror}") from None
    return data.decode("utf-8", "replace")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="infomark")
def cli() -> None:
    """infomark: the runtime, not the model, grades the agent's claims."""


def _register() -> None:
    from infomark.cli import commands_gates, commands_ledger, commands_tools

    if "init" not in cli.commands:
        commands_ledger.register(cli)
        commands_gates.register(cli)
        commands_tools.register(cli)


def run(args: list[str]) -> int:
    for stream in (sys.stdout, sys.stderr):  # a lone surrogate in a claim must not crash output
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    _register()
    try:
        cli.main(args=args, prog_name="infomark", standalone_mode=False)
    except CliExit as exc:
        return exc.code
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        return EXIT_USAGE
    except click.Abort:
        click.echo("Aborted.", err=True)
        return EXIT_USAGE
    except InfomarkError as exc:
        click.echo(f"Error: {exc}", err=True)
        return exc.exit_code
    except BrokenPipeError:  # pragma: no cover - `infomark events | head`
        return EXIT_OK
    except Exception as exc:
        if os.environ.get("INFOMARK_DEBUG") == "1":
            raise
        click.echo(
            f"Error: internal error ({type(exc).__name__}: {exc}). This is a bug in infomark; "
            "rerun with INFOMARK_DEBUG=1 for the traceback and report it.",
            err=True,
        )
        return EXIT_INTERNAL
    return EXIT_OK
