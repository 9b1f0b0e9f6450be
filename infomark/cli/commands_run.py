"""The runtime commands: ``infomark run`` (the reference agent runtime) and ``infomark send``.

Exit codes: ``run`` 0 when the finish gate allowed the end on evidence (or a persistent run
was stopped or reached its wake limit), 5 when the agent finished unverified (through the
refusal cap, or with changes no fresh passing check backs) or the task's checks do not pass
at the end, 3 when it stopped at the step limit, 2 on bad input or a model failure (the
message says what failed); ``send`` 0 delivered, 3 refused (the reason is printed; nothing was
delivered).
"""

from __future__ import annotations

import signal
from pathlib import Path
from types import FrameType
from typing import Any

import click

from infomark.cli.base import EXIT_DENY, EXIT_VERDICT, CliExit, common, emit_json, file_option, opts

__all__ = ["register"]


def _sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # the runner releases its inbox and journals run_finished


@click.command("run")
@click.argument("task", required=False, default="")
@click.option("--model", "model_url", default=None, help="OpenAI-compatible base URL (…/v1).")
@click.option("--model-name", default=None, help="Model name the endpoint expects.")
@file_option(
    "--agent", "agent_file", help="Agent file (TOML): instructions, model, tools, idle loop."
)
@click.option("--resume", "resume", default=None, help="Continue session S from its journal.")
@click.option("--persistent", is_flag=True, help="Idle and wake instead of ending (backoff).")
@click.option("--demo", is_flag=True, help="Run the offline demo with a scripted model.")
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    help="Project directory the tools work in (default: current directory).",
)
@click.option("--quiet", is_flag=True, help="Do not print each step.")
@common
def run_cmd(
    task: str,
    model_url: str | None,
    model_name: str | None,
    agent_file: Path | None,
    resume: str | None,
    persistent: bool,
    demo: bool,
    root: Path,
    quiet: bool,
) -> None:
    """Run an agent on TASK against an OpenAI-compatible model, the gatekeeper inside.

    `infomark run --demo` needs no model: a scripted one runs on 127.0.0.1.
    """
    echo = (lambda _s: None) if quiet or opts()["json"] else click.echo
    if demo:
        from infomark.tools.runner.demo import run_runner_demo

        summary = run_runner_demo(echo=echo)
        if opts()["json"]:
            emit_json(summary)
        return
    from infomark.tools.runner.agentfile import AgentSpec, load_agent
    from infomark.tools.runner.loop import Runner
    from infomark.tools.runner.resume import resume_run

    spec = load_agent(agent_file) if agent_file is not None else None
    signal.signal(signal.SIGTERM, _sigterm)
    home = opts()["home"]
    if resume:
        if task:
            raise click.UsageError("--resume continues a run: give no TASK with it")
        result = resume_run(
            home=home,
            session=resume,
            root=root.resolve(),
            spec=spec,
            model_url=model_url,
            model_name=model_name,
            echo=echo,
        )
    else:
        if not task:
            raise click.UsageError('give a TASK: infomark run --model URL "fix the failing test"')
        spec = (spec or AgentSpec()).with_model(model_url, model_name)
        runner = Runner(spec, home=home, session=opts()["session"], root=root.resolve(), echo=echo)
        try:
            result = runner.start(task, persistent=persistent or None)
        finally:
            runner.close()
    end = _end_report(home, result.session, root.resolve(), run_checks=result.reason == "finished")
    if opts()["json"]:
        emit_json({**result.to_dict(), **end})
    else:
        cost = result.to_dict()["cost"]
        click.echo(
            f"{result.reason}: {cost['working_calls']} working model calls "
            f"({cost['working_tokens']} tokens), {cost['idle_calls']} idle "
            f"({cost['idle_tokens']} tokens)"
        )
        click.echo(f"verdict: {end['verdict']}: {end['verdict_text']}")
        for c in end["checks"]:
            failing = f" (failing: {', '.join(c['failing'])})" if c["failing"] else ""
            own = " in infomark's own run" if c["attested"] else ""
            click.echo(f"check `{c['check']}`: {c['state']}{own}{failing}")
        if not end["checks"]:
            click.echo("checks: none declared ([oracles] require) and none detected")
    if result.reason == "max_steps":
        raise CliExit(EXIT_DENY)
    if result.reason == "finished" and end["unverified"]:
        raise CliExit(EXIT_VERDICT)


def _end_report(home: Path, session: str, root: Path, *, run_checks: bool) -> dict[str, Any]:
    """The verdict and the task's checks at the end of a run (declared or detected);
    ``unverified`` when CI must not pass it. The verdict is the session's own; a check with
    no fresh PASS of infomark's own is run by infomark itself (``run_checks``, with
    ``[attest] required``), so the report says whether it passes now, not only that the
    agent never ran it."""
    from infomark.gatekeeper import Gatekeeper
    from infomark.ledger.timeline import FAIL_ON, summarize

    with Gatekeeper.open(home, session, root=root) as gk:
        story = summarize(session, gk.events())
        statuses = gk.check_status()
        if run_checks and gk.config.attest_required and any(c.state != "pass" for c in statuses):
            from infomark.tools.attest import check_command

            for status in statuses:
                if status.state != "pass":
                    check_command(gk, status.check)  # nothing is recorded when it cannot run
            statuses = gk.check_status()
        checks = [c.to_dict() for c in statuses]
    failing = any(c["state"] != "pass" for c in checks)
    return {
        "verdict": story.verdict,
        "verdict_text": story.verdict_text,
        "checks": checks,
        "unverified": story.verdict in FAIL_ON["unverified"] or failing,
    }


@click.command("send")
@click.argument("message")
@click.option("--from", "sender", default="operator", help="Who sends it (shown to the agent).")
@common
def send_cmd(message: str, sender: str) -> None:
    """Deliver MESSAGE to the live inbox of --session; refused (exit 3) if it has none."""
    from infomark.ledger.inbox import InboxRefused
    from infomark.tools.runner.send import send_message

    session = opts()["session"]
    try:
        got = send_message(opts()["home"], session, message, sender=sender)
    except InboxRefused as exc:
        if opts()["json"]:
            emit_json({"delivered": False, "session": session, "reason": exc.reason})
        click.echo(f"Error: {exc}", err=True)
        raise CliExit(EXIT_DENY) from exc
    if opts()["json"]:
        emit_json({"delivered": True, "session": session, "message_id": got.message_id})
    else:
        click.echo(f"delivered to session {session} (message #{got.message_id})")


def register(group: click.Group) -> None:
    for cmd in (run_cmd, send_cmd):
        group.add_command(cmd)
