"""Evaluation commands: ``infomark eval`` (paired harness + promotion gate), ``infomark
activate`` (install a promoted policy, approved by an operator) and ``infomark replay``
(re-run today's rules over recorded sessions and scenario files).

Exit codes: ``eval`` 0 (3 with ``--require-promotion`` when a decision refused); ``activate``
0 installed, 2 refused (no such decision, a refusing decision, no ``--by``); ``replay`` 0 when
every decision matches, 1 when one differs, 2 on bad input.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.markup import escape

from infomark.cli.base import EXIT_DENY, EXIT_VERIFY, CliExit, common, emit_json, file_option, opts
from infomark.cli.render import Column, column_table, console

if TYPE_CHECKING:  # annotations only: the eval modules load when the command runs
    from infomark.tools.eval.harness import EvalResult
    from infomark.tools.eval.observer import RunRecord
    from infomark.tools.eval.policy import Policy
    from infomark.tools.eval.stats import Promotion

__all__ = ["register"]


def _iv(iv: dict[str, Any] | None, *, pct: bool = True) -> str:
    if not iv or iv.get("value") is None:
        return "–"

    def f(x: float) -> str:
        return f"{100 * x:.0f}%" if pct else f"{x:+.2f}"

    lo, hi = iv.get("low"), iv.get("high")
    return f(iv["value"]) + (f" [{f(lo)}, {f(hi)}]" if lo is not None and hi is not None else "")


_SUMMARY_COLUMNS: tuple[Column, ...] = (
    ("policy", lambda s: escape(s["policy"])),
    ("solved", lambda s: _iv(s["solved"])),
    ('false "done"', lambda s: _iv(s["false_done"])),
    ("ungrounded landed", lambda s: f"{s['ungrounded_landed']}/{s['ungrounded_attempted']}"),
    ("tamper caught", lambda s: _iv(s["tamper_caught"]) + f" of {s['tamper_attempted']}"),
    ("cheated (impossible)", lambda s: _iv(s["cheated"]) + f" of {s['impossible_runs']}"),
    ("overhead", lambda s: _iv(s["overhead"])),
    ("turns", lambda s: str(s["turns"])),
    ("packs", lambda s: str(s["packs"])),
    ("refusals", lambda s: str(s["refusals"])),
    ("denials", lambda s: str(s["denials"])),
)
_COMPARISON_COLUMNS: tuple[Column, ...] = (
    ("B vs A", lambda x: f"{escape(x['b'])} vs {escape(x['a'])}"),
    ("tasks", lambda x: str(x["tasks"])),
    ('false "done" cut', lambda x: _iv(x["false_done_cut"])),
    ("ungrounded cut", lambda x: _iv(x["ungrounded_cut"])),
    ("solved Δ", lambda x: _iv(x["solved_diff"], pct=False)),
    ("score Δ", lambda x: _iv(x["score_diff"], pct=False)),
    (
        "short-task turns ×",
        lambda x: "–" if x["short_slowdown"] is None else f"{x['short_slowdown']:.2f}",
    ),
)


def _print_report(report: dict[str, Any]) -> None:
    e = report["eval"]
    title = (
        f"infomark eval: {escape(e['suite'])} ({e['agent']}, seed {e['seed']}, "
        f"repeat {e['repeat']}; 95% intervals over tasks)"
    )
    console.print(column_table(title, _SUMMARY_COLUMNS, report["summaries"]))
    title = "paired comparisons (B against the first policy)"
    console.print(column_table(title, _COMPARISON_COLUMNS, report["comparisons"]))
    for p in report["promotions"]:
        style = "bold green" if p["decision"] == "promote" else "bold red"
        why = "; ".join(p["reasons"]) or "lower bound above 0, short tasks within tolerance"
        ident = f" ({p['id']})" if p.get("id") else ""
        console.print(
            f"[{style}]{p['decision']}[/] {escape(p['b'])} over {escape(p['a'])}{ident}: "
            f"improvement {_iv(p['improvement'], pct=False)}; {escape(why)}"
        )
    for name, why in report["eval"]["skipped"].items():
        console.print(f"[yellow]skipped {escape(name)}: {escape(why)}[/]")


def _rates(values: tuple[str, ...]) -> Any:
    from infomark.tools.eval.agents import FailureRates

    kw: dict[str, float] = {}
    known = set(FailureRates.__dataclass_fields__)
    for v in values:
        key, sep, num = v.partition("=")
        if not sep or key not in known:
            raise click.BadParameter(
                f"{v!r}: use MODE=RATE with MODE one of {', '.join(sorted(known))}",
                param_hint="--rate",
            )
        try:
            kw[key] = float(num)
        except ValueError as exc:
            raise click.BadParameter(
                f"{v!r}: {num!r} is not a number", param_hint="--rate"
            ) from exc
    try:
        return FailureRates(**kw)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--rate") from exc


def _progress(r: RunRecord) -> None:
    """One line per finished run, on stderr."""
    click.echo(
        f"  {r.task:<16} {r.policy:<10} {'solved' if r.solved else 'unsolved':<9}"
        f"{r.turns:>3} turns  {r.interventions:>2} interventions",
        err=True,
    )


def _journal(
    promos: list[Promotion], loaded: list[Policy], result: EvalResult, suite: str
) -> list[dict[str, Any]]:
    """Journal each promotion decision in the home; the report's entries, with their ids."""
    from infomark.tools.eval.promotion import journal_decision

    by_name = {p.name: p for p in loaded}
    meta = {
        "suite": suite,
        "suite_digest": result.suite_digest,
        "agent": result.agent,
        "repeat": result.repeat,
        "policy_a": loaded[0].to_dict(),
    }
    return [
        {**p.to_dict(), "id": journal_decision(opts()["home"], p, by_name[p.b], meta)["id"]}
        for p in promos
    ]


@click.command("eval")
@click.argument("suite", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--policy",
    "policies",
    multiple=True,
    required=True,
    help="A policy (built-in nogate/observe/verify/default/noise, or a TOML file); give two "
    "or more, the first is the baseline.",
)
@click.option(
    "--agent",
    default="scripted",
    show_default=True,
    help="scripted, openai:URL (an OpenAI-compatible endpoint), or claude-code[:PATH] (the "
    "real Claude Code CLI with infomark's hooks, its model the scripted agent).",
)
@click.option("--model-name", default="", help="Model name for --agent openai:URL.")
@click.option("--api-key-env", default=None, help="Variable holding the key for openai:URL.")
@click.option("--repeat", default=1, show_default=True, type=int, help="Runs per task and policy.")
@click.option(
    "--seed", default=0, show_default=True, type=int, help="Seed of agents and bootstrap."
)
@click.option(
    "--jobs",
    default=1,
    show_default=True,
    type=int,
    help="Runs at a time (each has its own tree, home and session).",
)
@click.option("--task", "only", multiple=True, help="Run only these tasks (repeatable).")
@click.option(
    "--max-steps",
    default=60,
    show_default=True,
    type=click.IntRange(min=1),
    help="Model calls per run before it ends on max_steps (a bound on a slow model's time).",
)
@click.option(
    "--max-tokens",
    default=None,
    type=click.IntRange(min=1),
    help="Cap on each model reply's tokens, sent as max_tokens (default: the model's own).",
)
@click.option(
    "--rate", "rates", multiple=True, help="Scripted failure rate, MODE=RATE (repeatable)."
)
@click.option(
    "--resamples", default=10_000, show_default=True, type=int, help="Bootstrap resamples."
)
@click.option(
    "--short-tolerance",
    default=0.2,
    show_default=True,
    type=float,
    help="Allowed extra turns on short tasks (0.2: 1.2x).",
)
@file_option("--html", "html_file", help="Write the self-contained HTML report here.")
@click.option("--no-journal", is_flag=True, help="Do not journal the promotion decisions.")
@click.option("--require-promotion", is_flag=True, help="Exit 3 when a promotion is refused.")
@common
def eval_cmd(
    suite: Path,
    policies: tuple[str, ...],
    agent: str,
    model_name: str,
    api_key_env: str | None,
    repeat: int,
    seed: int,
    jobs: int,
    only: tuple[str, ...],
    max_steps: int,
    max_tokens: int | None,
    rates: tuple[str, ...],
    resamples: int,
    short_tolerance: float,
    html_file: Path | None,
    no_journal: bool,
    require_promotion: bool,
) -> None:
    """Run every task of SUITE under each --policy (paired) and decide promotions."""
    from infomark.tools.eval.harness import run_eval
    from infomark.tools.eval.policy import load_policy
    from infomark.tools.eval.report import build_report
    from infomark.tools.eval.suite import load_suite

    if resamples < 100:
        raise click.BadParameter("use at least 100 resamples", param_hint="--resamples")
    loaded = [load_policy(p) for p in policies]
    st = load_suite(suite, only=only)
    key = None
    if api_key_env:
        key = os.environ.get(api_key_env)
        if not key:
            raise click.BadParameter(f"${api_key_env} is not set", param_hint="--api-key-env")
    quiet = opts()["json"]
    result = run_eval(
        st,
        loaded,
        agent=agent,
        seed=seed,
        repeat=repeat,
        rates=_rates(rates),
        model_name=model_name,
        api_key=key,
        jobs=jobs,
        max_steps=max_steps,
        max_tokens=max_tokens,
        progress=None if quiet else _progress,
    )
    report, promos = build_report(result, resamples=resamples, tolerance=short_tolerance)
    if not no_journal:
        report["promotions"] = _journal(promos, loaded, result, str(suite))
    if html_file is not None:
        from infomark.tools.eval.html import render_eval_html

        html_file.write_text(render_eval_html(report), encoding="utf-8")
    if opts()["json"]:
        emit_json(report)
    else:
        _print_report(report)
        if html_file is not None:
            click.echo(f"report: {html_file}")
    if require_promotion and any(not p.promote for p in promos):
        raise CliExit(EXIT_DENY)


@click.command("activate")
@click.argument("decision_id")
@click.option("--by", "by", required=True, help="The operator approving the activation.")
@click.option(
    "--to",
    "target",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("infomark.toml"),
    show_default=True,
    help="Where to install it.",
)
@click.option(
    "--replace", is_flag=True, help="Overwrite an existing file (its digest is journaled)."
)
@common
def activate_cmd(decision_id: str, by: str, target: Path, replace: bool) -> None:
    """Install the policy a promotion decision promoted, approved --by an operator."""
    from infomark.tools.eval.promotion import activate

    payload = activate(opts()["home"], decision_id, by=by, target=target, replace=replace)
    if opts()["json"]:
        emit_json(payload)
    else:
        click.echo(
            f"activated {payload['policy']} as {payload['path']} (approved by {payload['by']}; "
            f"decision {decision_id})"
        )


@click.command("replay")
@click.argument("sources", nargs=-1, required=True, type=click.Path(path_type=Path))
@file_option("--junit", "junit_file", help="Write a JUnit XML report here (for CI).")
@file_option(
    "--config", "config_file", help="Today's rules: this infomark.toml (default: the project's)."
)
@click.option("--all", "show_all", is_flag=True, help="List every step, not only differences.")
@common
def replay_cmd(
    sources: tuple[Path, ...], junit_file: Path | None, config_file: Path | None, show_all: bool
) -> None:
    """Re-run today's rules over recorded sessions; report every decision that differs.

    SOURCES: *.scenario.toml files (or directories of them), JSONL of tool calls, Claude Code
    transcripts (JSONL) and ledger homes (runner sessions; --session picks one).
    """
    from infomark.gates.config import load_config
    from infomark.tools.eval.junit import junit_xml
    from infomark.tools.eval.replay import replay_steps
    from infomark.tools.eval.sources import load_sources

    o = opts()
    found = load_sources(list(sources), session=o["session"] if o["session_given"] else None)
    if config_file is not None:
        import tomllib

        from infomark.gates.config_model import validate_config

        try:
            doc = tomllib.loads(config_file.read_text("utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise click.BadParameter(f"{config_file}: {exc}", param_hint="--config") from exc
        from infomark.gates.config import Config

        today = Config.from_dict(
            validate_config(doc, source=str(config_file)), source=str(config_file)
        )
    else:
        today = load_config(Path.cwd())
    results = [
        replay_steps(
            src.steps,
            name=src.name,
            source=src.path,
            config=src.config or today,
            profile=src.profile,
            files=src.files,
        )
        for src in found
    ]
    if junit_file is not None:
        junit_file.write_text(junit_xml(results), encoding="utf-8")
    diffs = sum(len(r.differences) for r in results)
    if o["json"]:
        emit_json({"sources": [r.to_dict() for r in results], "differences": diffs})
    else:
        for r in results:
            mark = (
                "[green]same[/]"
                if not r.differences
                else f"[bold red]{len(r.differences)} differ[/]"
            )
            console.print(f"{escape(r.name)}: {r.compared} decisions compared, {mark}")
            for s in r.steps if show_all else r.differences:
                exp = (s.expected or "–") + (f" ({s.expected_code})" if s.expected_code else "")
                console.print(
                    f"  step {s.index} {s.kind} {escape(s.what)}: recorded {escape(exp)}, "
                    f"today {escape(s.got)}"
                    + (f" ({escape(s.code)})" if s.code else "")
                    + f"  [dim]{escape(s.where)}[/]"
                )
        console.print(f"{len(results)} source(s), {diffs} difference(s)")
    if diffs:
        raise CliExit(EXIT_VERIFY)


def register(cli: click.Group) -> None:
    cli.add_command(eval_cmd)
    cli.add_command(activate_cmd)
    cli.add_command(replay_cmd)
