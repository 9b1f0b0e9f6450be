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


#: Each command's module, imported only when that command runs (``--help`` imports them
#: all): ``infomark audit --json`` never loads the others' dependencies (rich, the eval
#: harness). ``tests/test_cli.py`` pins this table to what the modules register.
COMMANDS: dict[str, str] = {
    **dict.fromkeys(("init", "ingest", "record", "verify-bundle", "events"), "ledger"),
    **dict.fromkeys(("sessions", "audit", "report", "key"), "audit"),
    **dict.fromkeys(
        ("authorize", "approve", "held", "check", "finish", "gate", "kernel", "demo"), "gates"
    ),
    **dict.fromkeys(("install", "doctor", "mcp-proxy", "serve", "state"), "tools"),
    **dict.fromkeys(("run", "send"), "run"),
    **dict.fromkeys(("fork", "merge"), "fork"),
    **dict.fromkeys(("eval", "activate", "replay"), "eval"),
}


class _Commands(click.Group):
    """The group of :data:`COMMANDS`: a command's module is imported when it is looked up."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMANDS.get(cmd_name)
        if module is not None and cmd_name not in self.commands:
            import importlib

            importlib.import_module(f"infomark.cli.commands_{module}").register(self)
        return super().get_command(ctx, cmd_name)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="infomark")
def cli() -> None:
    """infomark: the runtime, not the model, grades the agent's claims."""


def run(args: list[str]) -> int:
    """Run the CLI; every failure is one line on stderr and, with ``--json``, a JSON error.

    With ``--json`` an error is also printed to stdout as
    ``{"error": {"code", "message", "exit_code"}}`` so scripts never parse prose.
    """
    for stream in (sys.stdout, sys.stderr):  # a lone surrogate in a claim must not crash output
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
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
