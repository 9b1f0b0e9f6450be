"""The click application: thin wrappers over the :class:`Gatekeeper` facade.

Exit codes: 0 ok; 1 verification failed; 2 usage or bad input; 3 denied / finish
refused; 4 held for approval (ask). Errors print ``Error: …`` to stderr, never a
traceback.
"""

from __future__ import annotations

import os
import sys

import click

from infomark.cli.base import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, CliExit
from infomark.kernel.errors import InfomarkError

__all__ = ["cli", "run"]  # the exit codes are infomark.cli.base's


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="infomark")
def cli() -> None:
    """infomark: the runtime, not the model, grades the agent's claims."""


def _register() -> None:
    from infomark.cli import (
        commands_audit,
        commands_eval,
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
        commands_eval.register(cli)


def run(args: list[str]) -> int:
    """Run the CLI; every failure is one line on stderr and, with ``--json``, a JSON error.

    With ``--json`` an error is also printed to stdout as
    ``{"error": {"code", "message", "exit_code"}}`` so scripts never parse prose.
    """
    for stream in (sys.stdout, sys.stderr):  # a lone surrogate in a claim must not crash output
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    _register()
    as_json = "--json" in args
    otel = None
    try:
        # Spans of every ledger this command opens; doctor reads, and reports a bad setting.
        if os.environ.get("INFOMARK_OTEL") and args[:1] != ["doctor"]:
            from infomark.tools.otel import start_process_export

            otel = start_process_export()
        cli.main(args=args, prog_name="infomark", standalone_mode=False)
    except CliExit as exc:
        return exc.code
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        return _json_error(as_json, "usage_error", exc.format_message(), EXIT_USAGE)
    except click.Abort:
        click.echo("Aborted.", err=True)
        return _json_error(as_json, "aborted", "aborted", EXIT_USAGE)
    except InfomarkError as exc:
        click.echo(f"Error: {exc}", err=True)
        return _json_error(as_json, exc.code, str(exc), exc.exit_code)
    except BrokenPipeError:  # pragma: no cover - `infomark events | head`
        return EXIT_OK
    except OSError as exc:  # an unwritable or unreadable --home, a full disk: the user's to fix
        where = f" {exc.filename}" if exc.filename else ""
        msg = f"cannot use{where}: {exc.strerror or exc}; check the path and its permissions"
        click.echo(f"Error: {msg}", err=True)
        return _json_error(as_json, "os_error", msg, EXIT_USAGE)
    except Exception as exc:
        if os.environ.get("INFOMARK_DEBUG") == "1":
            raise
        msg = (
            f"internal error ({type(exc).__name__}: {exc}). This is a bug in infomark; "
            "rerun with INFOMARK_DEBUG=1 for the traceback and report it."
        )
        click.echo(f"Error: {msg}", err=True)
        return _json_error(as_json, "internal_error", msg, EXIT_INTERNAL)
    finally:
        if otel is not None:
            otel.shutdown()  # sends what is still batched
    return EXIT_OK


def _json_error(as_json: bool, code: str, message: str, exit_code: int) -> int:
    if as_json:
        import json

        click.echo(
            json.dumps({"error": {"code": code, "message": message, "exit_code": exit_code}})
        )
    return exit_code
