"""The click application: thin wrappers over the :class:`Gatekeeper` facade.

Exit codes: 0 ok; 1 verification failed; 2 usage or bad input; 3 denied / finish
refused; 4 held for approval (ask). Errors print ``Error: …`` to stderr, never a
traceback.
"""

from __future__ import annotations

import os
import sys

import click

from infomark.cli.base import (
    EXIT_ASK,
    EXIT_DENY,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    EXIT_VERIFY,
    CliExit,
)
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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="infomark")
def cli() -> None:
    """infomark: the runtime, not the model, grades the agent's claims."""


def _register() -> None:
    from infomark.cli import (
        commands_audit,
        commands_fork,
        commands_gates,
        commands_ledger,
        commands_run,
        commands_tools,
    )

    if "init" not in cli.commands:
        commands_ledger.register(cli)
        commands_audit.register(cli)
        commands_gates.register(cli)
        commands_tools.register(cli)
        commands_run.register(cli)
        commands_fork.register(cli)


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
