"""Gate commands: authorize, approve, held, check, finish, gate, kernel validate|render, demo."""

from __future__ import annotations

import os
import sys

import click

from infomark.cli.base import (
    EXIT_ASK,
    EXIT_DENY,
    EXIT_VERIFY,
    CliExit,
    common,
    emit_json,
    open_gk,
    opts,
    parse_input_json,
    profile_option,
    read_input,
)

__all__ = ["register"]


@click.command()
@click.option("--tool", required=True, help="Tool name (Bash, Edit, write, …).")
@click.option("--input", "input_json", default="{}", help="Tool input as a JSON object.")
@profile_option
@click.option(
    "--tool-call-id", "--call-id", default=None, help="The host's id for this call, if any."
)
@common
def authorize(tool: str, input_json: str, profile: str | None, tool_call_id: str | None) -> None:
    """May this call run? Exit 0 allow, 3 deny, 4 ask. Prints the call id to record with."""
    from infomark.ledger.calls import ToolCall

    data = parse_input_json(input_json)
    with open_gk(profile, writes=True) as gk:
        decision = gk.authorize(ToolCall(tool=tool, input=data, tool_call_id=tool_call_id))
    if opts()["json"]:
        emit_json(decision.to_dict())
    else:
        click.echo(f"{decision.verdict.value}: {decision.reason}")
        if decision.instructions:  # the pack this denial fired, as the agent would read it
            click.echo(decision.instructions)
        if decision.verdict.value != "deny":
            click.echo(f"call_id: {decision.call_id}")
    if decision.verdict.value == "deny":
        raise CliExit(EXIT_DENY)
    if decision.verdict.value == "ask":
        raise CliExit(EXIT_ASK)


@click.command()
@click.option("--note", default="", help="Why it is approved (journaled).")
@click.option(
    "--grading",
    "grading",
    default=None,
    metavar="FILE",
    help="Approve the changed grading file FILE (a test or its configuration) instead.",
)
@click.option(
    "--baseline",
    "baseline",
    is_flag=True,
    help="Accept the project's tree as it is now as the baseline attested runs grade with.",
)
@click.option(
    "--call",
    "decision_id",
    default=None,
    metavar="DECISION_ID",
    help="Approve this held call (from `infomark held`) once, instead of the G4 plan.",
)
@common
def approve(note: str, grading: str | None, baseline: bool, decision_id: str | None) -> None:
    """Record the operator's G4 approval of the plan (or of a changed grading file, of the
    project's tree as the baseline with --baseline, or of one held call with --call).

    An operator act: refused inside an agent's tool call (Claude Code sets CLAUDECODE=1
    in the environment of the commands it runs) and without a terminal on stdin.
    """
    from infomark.kernel.errors import UserError

    if os.environ.get("CLAUDECODE") or not sys.stdin.isatty():
        raise UserError(
            "approve is an operator act: run `infomark approve` yourself in a terminal, "
            "answer Claude Code's own permission prompt, or type the approval phrase as your "
            "prompt; an agent's tool call cannot approve"
        )
    if sum((grading is not None, decision_id is not None, baseline)) > 1:
        raise click.UsageError("give one of --grading, --baseline and --call")
    if baseline:
        with open_gk() as gk:
            bid = gk.approve_baseline(by="operator", note=note)
        if opts()["json"]:
            emit_json({"approved": True, "baseline": bid})
        else:
            click.echo(f"approved the project's tree as its baseline ({bid})")
        return
    if decision_id is not None:
        from infomark.cli.base import require_home
        from infomark.ledger.holds import approve_held

        require_home()
        with open_gk() as gk:
            held = approve_held(gk.store, decision_id, by="operator", note=note)
        if opts()["json"]:
            emit_json({"approved": True, "call": held.to_dict()})
        else:
            click.echo(
                f"approved held call {held.decision_id} ({held.tool} {held.input}): the agent's "
                "next identical call runs, once"
            )
        return
    with open_gk() as gk:
        if grading is not None:
            gk.approve_grading(grading, by="operator", note=note)
        else:
            gk.approve(by="operator", note=note)
        gate = gk.gate()
    if opts()["json"]:
        emit_json({"approved": True, "gate": gate.position, "grading": grading})
    else:
        click.echo(f"approved {grading}" if grading else f"approved (gate {gate.position})")


@click.command()
@click.option("--all", "show_all", is_flag=True, help="Also list approved and used holds.")
@common
def held(show_all: bool) -> None:
    """Calls the gate held for approval in --session, newest first (pending only by default)."""
    from infomark.cli.base import require_home
    from infomark.ledger.holds import held_calls

    require_home()
    with open_gk() as gk:
        calls = [h for h in held_calls(gk.store) if show_all or h.status == "pending"]
        session = gk.session
    if opts()["json"]:
        emit_json([h.to_dict() for h in calls])
        return
    if not calls:
        click.echo(f"no {'' if show_all else 'pending '}held calls in session {session}")
        return
    for h in calls:
        click.echo(f"{h.decision_id}  {h.status:8} {h.timestamp}  {h.tool} {h.input}")
        click.echo(f"{'':22}{h.code}: {h.reason}")
    if any(h.status == "pending" for h in calls):
        click.echo(f"approve one with: infomark approve --session {session} --call DECISION_ID")


@click.command()
@click.argument("source", required=False)
@common
def finish(source: str | None) -> None:
    """May the agent finish with this final text (FILE or -)? Exit 0 allowed, 3 refused."""
    text = read_input(source) if source is not None else ""
    with open_gk(writes=True) as gk:
        result = gk.can_finish(text)
    if opts()["json"]:
        emit_json(result.to_dict())
    else:
        click.echo(("allowed: " if result.allow else "refused: ") + result.reason)
    if not result.allow:
        raise CliExit(EXIT_DENY)


@click.command()
@click.argument("claim_id")
@common
def check(claim_id: str) -> None:
    """infomark runs CLAIM_ID's oracle itself, sandboxed, in a copy made of the session's
    baseline and the agent's source changes (an attested run). Exit 0 PASS, 3 otherwise."""
    from infomark.tools.attest import check as attested_check

    with open_gk() as gk:
        result = attested_check(gk, claim_id)
    if opts()["json"]:
        emit_json(
            {
                "text": result.text,
                "evidence_ref": result.evidence.ref if result.evidence else None,
                "outcome": result.outcome,
                "status": result.status,
            }
        )
    else:
        click.echo(result.text)
    if result.outcome != "PASS":
        raise CliExit(EXIT_DENY)


@click.command()
@common
def gate() -> None:
    """The session's gate position, lawful moves and loop budget."""
    with open_gk() as gk:
        view = gk.gate()
    if opts()["json"]:
        emit_json(view.to_dict())
    else:
        click.echo(
            f"{view.position} ({view.profile} profile); "
            f"moves: {', '.join(view.allowed_moves) or '-'}; "
            f"loop budget {view.budget_used}/{view.loop_budget}"
        )
        if view.enforced:
            click.echo(f"here: {view.enforced}")


@click.group()
def kernel() -> None:
    """The process law: validate the gate graph, render the agent protocol."""


@kernel.command("validate")
@click.option("--json", "as_json", is_flag=True, help="Print JSON with stable keys.")
def kernel_validate(as_json: bool) -> None:
    """Check the gate graph against every kernel rule (exit 1 on a violation)."""
    from infomark.kernel.graph import DEFAULT_GRAPH, render_graph_text
    from infomark.kernel.validate import validate_graph

    issues = validate_graph(DEFAULT_GRAPH)
    if as_json:
        emit_json(
            {"ok": not issues, "issues": [{"code": i.code, "message": i.message} for i in issues]}
        )
    else:
        click.echo(render_graph_text(DEFAULT_GRAPH))
        click.echo(
            "graph OK" if not issues else "\n".join(f"{i.code}: {i.message}" for i in issues)
        )
    if issues:
        raise CliExit(EXIT_VERIFY)


@kernel.command("render")
@click.option("--json", "as_json", is_flag=True, help="Print JSON with stable keys.")
def kernel_render(as_json: bool) -> None:
    """Print the agent-facing protocol (paste into CLAUDE.md / AGENTS.md) and its sha256."""
    from infomark.kernel.protocol import protocol_sha256, render_protocol

    text = render_protocol()
    if as_json:
        emit_json({"text": text, "sha256": protocol_sha256(), "bytes": len(text.encode())})
        return
    click.echo(text)
    click.echo(f"<!-- infomark protocol sha256:{protocol_sha256()} -->")


@click.command()
@click.option("--keep", is_flag=True, help="Keep the demo's temp project and print its path.")
def demo(keep: bool) -> None:
    """Walk a scripted agent through the gates on a real temp project."""
    from infomark.cli.demo import run_demo

    run_demo(keep=keep)


def register(group: click.Group) -> None:
    for cmd in (authorize, approve, held, check, finish, gate, kernel, demo):
        group.add_command(cmd)
