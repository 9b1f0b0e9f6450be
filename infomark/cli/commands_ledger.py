"""Ledger commands: init, ingest, record, audit, verify-bundle, events."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from infomark.cli.base import (
    EXIT_USAGE,
    EXIT_VERIFY,
    CliExit,
    common,
    emit_json,
    open_gk,
    opts,
    parse_input_json,
    read_input,
)

__all__ = ["register"]


@click.command()
@common
def init() -> None:
    """Create the ledger home: key (0600), service token (0600), journal.

    With --store (or $INFOMARK_STORE) a postgresql:// URL: create that store's schema or
    apply the migrations it lacks, and remember the store in <home>/store.
    """
    from infomark.ledger.init import init_home

    info = init_home(opts()["home"], store=opts().get("store"))
    if opts()["json"]:
        emit_json(info)
    else:
        click.echo(f"initialised {info['home']} (key id {info['key_id']})")
        if "store" in info:
            applied = ", ".join(str(v) for v in info.get("applied", [])) or "none"
            click.echo(
                f"store {info['store']}: schema version {info['schema']} "
                f"(migrations applied: {applied})"
            )


@click.command()
@click.argument("source", required=False)
@click.option(
    "--strict",
    is_flag=True,
    help="On a block syntax error, ingest nothing and exit 2.",
)
@common
def ingest(source: str | None, strict: bool) -> None:
    """Ingest assistant text (FILE or - for stdin): ledgers, stamps, divergences, gate lines."""
    text = read_input(source)
    if strict:
        _refuse_syntax_errors(text)
    with open_gk(writes=True) as gk:
        report = gk.ingest(text)
    if opts()["json"]:
        emit_json(report.to_dict())
        return
    from infomark.cli.render import print_ingest

    print_ingest(report.to_dict())


def _refuse_syntax_errors(text: str) -> None:
    """``ingest --strict``: every error diagnostic on stderr (or as JSON), nothing applied."""
    from infomark.ledger.parse.parser import parse_message

    errors = parse_message(text).errors
    if not errors:
        return
    if opts()["json"]:
        emit_json({"ingested": False, "diagnostics": [d.to_dict() for d in errors]})
    else:
        for d in errors:
            click.echo(f"line {d.line}, column {d.column}: error: {d.message}", err=True)
        click.echo(f"Error: {len(errors)} syntax error(s); nothing was ingested", err=True)
    raise CliExit(EXIT_USAGE)


@click.command()
@click.option("--tool", required=True, help="Tool name (bash, read, …).")
@click.option("--input", "input_json", default="{}", help="Tool input as a JSON object.")
@click.option("--exit-code", type=int, default=None, help="Exit status, for commands.")
@click.option("--error", default=None, help="The tool's error text, if it failed.")
@click.option(
    "--tool-call-id",
    "--call-id",
    default=None,
    help="The call id `infomark authorize` returned (the host's tool_use_id when it has one).",
)
@click.option(
    "--output-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Read the tool output from FILE instead of stdin.",
)
@click.option("--duration-ms", type=float, default=None, help="How long the tool ran.")
@common
def record(
    tool: str,
    input_json: str,
    exit_code: int | None,
    error: str | None,
    tool_call_id: str | None,
    output_file: Path | None,
    duration_ms: float | None,
) -> None:
    """Record a tool result as signed evidence (output from --output-file or stdin)."""
    from infomark.ledger.calls import ToolCall, ToolOutcome

    data = parse_input_json(input_json)
    if output_file is not None:
        try:
            output = output_file.read_bytes()
        except OSError as exc:
            raise click.BadParameter(str(exc.strerror), param_hint="--output-file") from exc
    else:
        output = b"" if sys.stdin.isatty() else sys.stdin.buffer.read()
    with open_gk(writes=True) as gk:
        ev = gk.record(
            ToolCall(tool=tool, input=data, tool_call_id=tool_call_id),
            ToolOutcome(output=output, exit_code=exit_code, error=error, duration_ms=duration_ms),
        )
    out = {
        "evidence_ref": ev.ref,
        "tool": ev.tool,
        "evidence_class": ev.evidence_class.value,
        "outcome": ev.outcome.value,
        "eligible_for": list(ev.eligible_for),
        "output_digest": ev.output_digest,
    }
    if opts()["json"]:
        emit_json(out)
    else:
        click.echo(ev.tag)


@click.command("verify-bundle")
@click.argument("bundle", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--public-key", default=None, help="Expected Ed25519 public key (hex) to pin.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON with stable keys.")
def verify_bundle_cmd(bundle: Path, public_key: str | None, as_json: bool) -> None:
    """Check an exported bundle anywhere, without the home or the HMAC key."""
    from infomark.ledger.bundle import verify_bundle

    result = verify_bundle(bundle, expected_public_key=public_key)
    if as_json:
        emit_json(result)
    elif result["ok"]:
        click.echo(
            f"bundle OK: session {result['session']}, {result['events']} events, "
            f"signed by {result['public_key'][:16]}…"
        )
    else:
        click.echo(f"bundle INVALID: {'; '.join(result['problems'])}", err=True)
    if not result["ok"]:
        raise CliExit(EXIT_VERIFY)


@click.command()
@click.option("--follow", "-f", is_flag=True, help="Keep printing new events as they arrive.")
@click.option("--after", type=int, default=0, help="Start after this seq.")
@click.option("--all-sessions", is_flag=True, help="Events of every session.")
@common
def events(follow: bool, after: int, all_sessions: bool) -> None:
    """The journal as JSON lines: {session, seq, type, payload, timestamp, hash}."""
    from infomark.ledger.canonical import dumps
    from infomark.ledger.follow import follow_events

    with open_gk() as gk:
        for row in follow_events(gk.store, after=after, follow=follow, all_sessions=all_sessions):
            click.echo(dumps(row.public()))


def register(group: click.Group) -> None:
    for cmd in (init, ingest, record, verify_bundle_cmd, events):
        group.add_command(cmd)
