"""Integration commands: install, doctor, mcp-proxy, serve, state."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from infomark.cli.base import (
    EXIT_VERIFY,
    CliExit,
    common,
    emit_json,
    file_option,
    open_gk,
    opts,
    profile_option,
)
from infomark.kernel.profiles import PROFILES, Profile

if TYPE_CHECKING:  # annotations only: the install module loads when the command runs
    from infomark.tools.install import Installed

__all__ = ["register"]

F = TypeVar("F", bound=Callable[..., Any])


@click.group()
def install() -> None:
    """Install infomark into an agent host."""


def _scope_option(where: str) -> Callable[[F], F]:
    return click.option(
        "--scope",
        type=click.Choice(["project", "user"]),
        default="project",
        help=f"project: {where}; user: ~/{where}.",
    )


_root_option = click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    help="Project directory (for --scope project).",
)
_home_option = click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Pin the ledger home in the hook command (default: <project>/.infomark).",
)
_uninstall_option = click.option(
    "--uninstall", is_flag=True, help="Remove only infomark's hook entries, and the launcher."
)


@install.command("claude-code")
@_scope_option(".claude/settings.json")
@_root_option
@_home_option
@click.option(
    "--http",
    "http_url",
    default=None,
    help="Forward to a running `infomark serve` (e.g. http://127.0.0.1:8765); checked first.",
)
@click.option(
    "--no-sandbox",
    "no_sandbox",
    is_flag=True,
    help="Do not turn on Claude Code's Bash sandbox (the agent's programs can then read the key).",
)
@click.option(
    "--uninstall",
    is_flag=True,
    help="Remove only infomark's hook entries, the launcher and the sandbox settings it added.",
)
@click.option(
    "--profile",
    type=click.Choice([Profile.VERIFY.value, *(p for p in PROFILES if p != Profile.VERIFY)]),
    default=Profile.VERIFY.value,
    show_default=True,
    help="The profile written to a new infomark.toml (an existing one is kept).",
)
@click.option(
    "--check",
    "checks",
    multiple=True,
    metavar="CMD",
    help="A check a finish needs (repeat; instead of the detected ones).",
)
@click.option("--yes", is_flag=True, help="Accept the detected checks without asking.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON with stable keys.")
def install_claude_code_cmd(
    scope: str,
    root: Path,
    home: Path | None,
    http_url: str | None,
    no_sandbox: bool,
    uninstall: bool,
    profile: str,
    checks: tuple[str, ...],
    yes: bool,
    as_json: bool,
) -> None:
    """Merge infomark's hooks into .claude/settings.json (idempotent, keeps other hooks).

    The hooks run .claude/infomark-hook, a launcher written beside the settings that starts
    the hook with `python -I -S`. A project with no infomark configuration gets an
    infomark.toml with --profile (verify: no protocol asked of the agent; a finish after
    changes needs a fresh PASS of the project's checks) and the checks: --check, else those
    detected and confirmed (asked on a terminal; --yes, or no terminal, takes them as shown).
    The checks are added to Claude Code's permissions.allow (removed by --uninstall). Says so
    when nothing changed (exit 0 either way).
    """
    from infomark.tools.install import uninstall_claude_code

    chosen: list[str] = []
    wrote_config: Path | None = None
    if uninstall:
        done = uninstall_claude_code(scope=scope, root=root)
        if not done.changed:
            text = f"no infomark hooks in {done.path}; nothing changed"
        else:
            text = f"removed infomark hooks from {done.path}"
    else:
        chosen, configured = _project_checks(root, list(checks), yes, as_json, profile)
        done, wrote_config = _install(
            scope, root, home, http_url, not no_sandbox, chosen, None if configured else profile
        )
        text = _installed_text(done, wrote_config, profile, chosen, http_url, not no_sandbox)
    if as_json:
        emit_json(
            {
                "action": "uninstall" if uninstall else "install",
                "changed": done.changed,
                "settings": str(done.path),
                "checks": chosen,
                "config": str(wrote_config) if wrote_config is not None else None,
            }
        )
    else:
        click.echo(text)


def _install(
    scope: str,
    root: Path,
    home: Path | None,
    http_url: str | None,
    sandbox: bool,
    chosen: list[str],
    new_profile: str | None,
) -> tuple[Installed, Path | None]:
    """The hooks installed, then (``new_profile``: the project has no configuration) its
    infomark.toml written and the hooks installed again; what the first install did, and the
    config written."""
    from infomark.tools.install import install_claude_code

    def install() -> Installed:
        return install_claude_code(
            scope=scope, root=root, home=home, http_url=http_url, sandbox=sandbox, checks=chosen
        )

    done = install()
    if new_profile is None:
        return done, None
    from infomark.tools.install import write_project_config

    # only once the settings are written: never half an install
    wrote_config = write_project_config(root, new_profile, chosen)
    if wrote_config is not None:  # the sandbox's denyWrite names the new file too
        install()
    return done, wrote_config


def _installed_text(
    done: Installed,
    wrote_config: Path | None,
    profile: str,
    chosen: list[str],
    http_url: str | None,
    sandbox: bool,
) -> str:
    """What an install says: where, the config it wrote, the checks, the forwarding, and
    Claude Code's sandbox."""
    if not done.changed:
        text = f"infomark hooks already installed in {done.path}; nothing changed"
    else:
        text = f"installed infomark hooks into {done.path}"
    if wrote_config is not None:
        text += f"\nwrote {wrote_config} (profile {profile})"
    if chosen:
        text += "\nchecks a finish needs (allowed to run in Claude Code): " + ", ".join(
            f"`{c}`" for c in chosen
        )
    if http_url:
        text += f"\nthe hooks forward to {http_url} (token read from the home, never the env)"
    return text + (_sandbox_text(done.changed) if sandbox else "")


def _sandbox_text(changed: bool) -> str:
    """Claude Code's Bash sandbox: on (when the install changed the settings), and a warning
    when the tools it needs are missing here (it will refuse to start)."""
    from infomark.tools.install_sandbox import missing_tools

    text = ""
    if changed:
        text += "\nClaude Code's Bash sandbox is on: the agent's commands cannot read the home"
    missing = missing_tools()
    if missing:
        text += (
            f"\nWARNING: Claude Code's sandbox needs {' and '.join(missing)}, "
            "missing here: it will refuse to start (sandbox.failIfUnavailable); "
            "install them (apt-get install -y bubblewrap socat) or re-run with --no-sandbox"
        )
    return text


def _project_checks(
    root: Path, given: list[str], yes: bool, as_json: bool, profile: str = Profile.VERIFY
) -> tuple[list[str], bool]:
    """The checks to require and allow, and whether the project has a configuration: its
    ``[oracles] require`` when it has one; else ``--check``, or (for the verify profile, which
    has no claims to carry oracles) the detected ones, confirmed on a terminal. The ledger
    profiles' agents declare their own oracles: there detection adds nothing unasked."""
    import sys

    from infomark.gates.checks import detect_checks
    from infomark.gates.config import load_config

    config = load_config(root)
    if config.source is not None:
        return list(given or config.oracle_require), True
    checks = given
    if not checks and Profile(profile).judges_checks:
        checks = detect_checks(root)
        interactive = sys.stdin.isatty() and sys.stdout.isatty() and not yes and not as_json
        if interactive:
            shown = ", ".join(f"`{c}`" for c in checks) or "none"
            click.echo(f"detected checks: {shown}")
            answer = click.prompt(
                "Require these before the agent may finish? [Y/n, or type the commands, "
                "comma-separated]",
                default="y",
                show_default=False,
            ).strip()
            if answer.lower() in ("n", "no"):
                checks = []
            elif answer.lower() not in ("y", "yes", ""):
                checks = [c.strip() for c in answer.split(",") if c.strip()]
        elif not as_json:
            shown = ", ".join(f"`{c}`" for c in checks) or "none found"
            click.echo(f"detected checks: {shown} (choose with --check CMD)", err=True)
    return checks, False


def _host_install_command(name: str, title: str, where: str) -> click.Command:
    """``infomark install <host>`` for a host of :mod:`infomark.tools.hosts`."""

    @_scope_option(where)
    @_root_option
    @_home_option
    @_uninstall_option
    @click.option("--json", "as_json", is_flag=True, help="Print JSON with stable keys.")
    def command(scope: str, root: Path, home: Path | None, uninstall: bool, as_json: bool) -> None:
        from infomark.tools.hosts.core import load_spec
        from infomark.tools.hosts.install import install_host, uninstall_host

        spec = load_spec(name)
        if uninstall:
            done = uninstall_host(spec, scope=scope, root=root)
            text = (
                f"removed infomark hooks from {done.path}"
                if done.changed
                else f"no infomark hooks in {done.path}; nothing changed"
            )
        else:
            done = install_host(spec, scope=scope, root=root, home=home)
            text = (
                f"installed infomark hooks into {done.path}"
                if done.changed
                else f"infomark hooks already installed in {done.path}; nothing changed"
            )
        if as_json:
            action = "uninstall" if uninstall else "install"
            emit_json({"action": action, "changed": done.changed, "settings": str(done.path)})
        else:
            click.echo(text)

    command.__doc__ = (
        f"Merge infomark's hooks into {where} for {title} (idempotent, keeps other hooks).\n\n"
        f"    The hooks run {where.rsplit('/', 1)[0]}/infomark-hook, a launcher written beside "
        "the file. Says so when nothing changed (exit 0 either way)."
    )
    return click.command(name)(command)


install.add_command(_host_install_command("gemini", "Gemini CLI", ".gemini/settings.json"))
install.add_command(_host_install_command("codex", "OpenAI Codex CLI", ".codex/hooks.json"))
install.add_command(_host_install_command("opencode", "OpenCode", ".opencode/plugins/infomark.js"))


@click.command("mcp-proxy", context_settings={"ignore_unknown_options": True})
@profile_option
@click.option(
    "--sandbox",
    is_flag=True,
    help="Start the downstream server in the OS sandbox (the ledger home hidden from it).",
)
@click.argument("server_cmd", nargs=-1, type=click.UNPROCESSED, required=True)
@common
def mcp_proxy(profile: str | None, sandbox: bool, server_cmd: tuple[str, ...]) -> None:
    """Gate a downstream MCP server: infomark mcp-proxy -- <server command> [args…].

    The session defaults to $INFOMARK_SESSION, then `mcp`.
    """
    from infomark.tools.mcp_proxy import run_proxy

    session = opts()["session"] if opts()["session_given"] else "mcp"
    code = run_proxy(
        list(server_cmd),
        home=opts()["home"],
        session=session,
        profile=profile,
        root=Path.cwd(),
        sandbox=sandbox,
    )
    if code:
        raise click.exceptions.Exit(code)


@click.command()
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback by default)."
)
@click.option(
    "--port", default=8765, show_default=True, type=int, help="Port to bind (0: any free port)."
)
@click.option(
    "--operator-token-file",
    type=click.Path(path_type=Path),
    default=None,
    metavar="FILE",
    help="A 0600 file outside the home whose token POST .../approve needs. Its path shows on "
    "this command line: prefer --operator-token-fd or ~/.config/infomark/operator-token.",
)
@click.option(
    "--operator-token-fd",
    type=int,
    default=None,
    metavar="N",
    help="Read the operator token from inherited file descriptor N (e.g. `3<FILE`).",
)
@click.option(
    "--agent-sandbox",
    default=None,
    metavar="HOW",
    help="Declare that the agent's commands run in an OS sandbox that hides the home (HOW: "
    "which, in words). Without it, the agent's own runs recorded over HTTP ground nothing in "
    "the enforcing profiles (unsandboxed_run).",
)
@click.option(
    "--workers",
    default="1",
    show_default=True,
    metavar="N|auto",
    help="Worker processes behind the one port, each connection to the least busy (auto: one "
    "per CPU, at most 8). Several agents at once are answered on every core.",
)
@common
def serve(
    host: str,
    port: int,
    operator_token_file: Path | None,
    operator_token_fd: int | None,
    agent_sandbox: str | None,
    workers: str,
) -> None:
    """Run the HTTP service (bearer token from <home>/token).

    The operator token (POST .../approve) comes from --operator-token-fd, --operator-token-file,
    $INFOMARK_OPERATOR_TOKEN (removed from the environment once read) or
    ~/.config/infomark/operator-token, in that order; without one approvals are refused.
    """
    from infomark.tools.serve import parse_workers
    from infomark.tools.serve import serve as run_serve

    run_serve(
        opts()["home"],
        host=host,
        port=port,
        operator_token_file=operator_token_file,
        operator_token_fd=operator_token_fd,
        agent_sandbox=agent_sandbox,
        workers=parse_workers(workers),
    )


@click.command()
@file_option("--out", help="Also write the document to FILE (e.g. state.json).")
@common
def state(out: Path | None) -> None:
    """The session's state document: packs, working memory, metrics, ledger, gate."""
    import json

    with open_gk() as gk:
        doc = gk.state_document()
    text = json.dumps(doc, indent=2, ensure_ascii=False)
    if out is not None:
        out.write_text(text + "\n", "utf-8")
    if opts()["json"] or out is None:
        emit_json(doc)


@click.command()
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    help="Project directory (its .claude/, .mcp.json and configuration).",
)
@click.option(
    "--url",
    default=None,
    help="Also check the `infomark serve` at URL (e.g. http://127.0.0.1:8765).",
)
@common
def doctor(root: Path, url: str | None) -> None:
    """Check every installed integration: mounted, run, delivered, private. Exit 1 on a problem.

    Reads only: nothing is created or changed.
    """
    from infomark.tools.doctor_hosts import diagnose

    home = opts()["home"]
    findings = diagnose(Path(home), root, url=url)
    problems = sum(f.status == "problem" for f in findings)
    warnings = sum(f.status == "warning" for f in findings)
    if opts()["json"]:
        emit_json(
            {
                "ok": problems == 0,
                "home": str(home),
                "root": str(root),
                "problems": problems,
                "warnings": warnings,
                "findings": [f.to_dict() for f in findings],
            }
        )
    else:
        for f in findings:
            click.echo(f"{f.status.upper():8} {f.area}: {f.message}")
            if f.fix and f.status in ("problem", "warning"):
                click.echo(f"{'':8} fix: {f.fix}")
        plural = ("s" if problems != 1 else "", "s" if warnings != 1 else "")
        click.echo(f"{problems} problem{plural[0]}, {warnings} warning{plural[1]}")
    if problems:
        raise CliExit(EXIT_VERIFY)


def register(group: click.Group) -> None:
    for cmd in (install, doctor, mcp_proxy, serve, state):
        group.add_command(cmd)
