"""Audit commands: sessions, audit, report, key.

Read-only commands never create a home or a session: a typo in ``--home`` or
``--session`` is an error naming the closest match. ``audit`` verifies by default
(``--no-verify`` skips it) and, without ``--session``, audits the latest session and
says which.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from infomark.cli.base import (
    EXIT_VERDICT,
    EXIT_VERIFY,
    CliExit,
    common,
    emit_json,
    file_option,
    open_gk,
    opts,
    require_home,
    require_session,
)

__all__ = ["STORY_KEPT", "register"]

#: The timeline entries and commands run ``audit`` keeps of the story without ``--timeline``
#: (the last ones; the story counts those it leaves out).
STORY_KEPT = 100


def _open_existing() -> tuple[Any, str, bool]:
    """Open the named (or latest) session of an existing home: ``(gk, session, chosen)``."""
    from infomark.ledger.timeline import overview

    require_home()
    with open_gk() as probe:
        if opts().get("session_given"):  # only whether it exists: no story of every session
            names = probe.store.journal.known_sessions()
        else:
            names = [s.session for s in overview(probe.store)]
    session, chosen = require_session(names)
    opts()["session"] = session
    return open_gk(), session, chosen


def _fail_on_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    from infomark.ledger.timeline import DEFAULT_FAIL_ON, FAIL_ON

    return click.option(
        "--fail-on",
        "fail_on",
        default=",".join(DEFAULT_FAIL_ON),
        show_default=True,
        metavar="LIST",
        help="Exit 5 when the verdict is in one of these comma-separated categories: "
        + ", ".join(FAIL_ON)
        + "; `none` never (tampering still exits 1).",
    )(fn)


def _gate_verdict(verdict: str, fail_on: str) -> None:
    """Exit 5 (EXIT_VERDICT) when ``verdict`` is in a ``--fail-on`` category."""
    from infomark.ledger.timeline import FAIL_ON, fails_on

    wanted = [c.strip() for c in fail_on.split(",") if c.strip()]
    unknown = [c for c in wanted if c not in FAIL_ON and c != "none"]
    if unknown:
        raise click.UsageError(
            f"--fail-on: unknown categor{'y' if len(unknown) == 1 else 'ies'} "
            f"{', '.join(unknown)}; use {', '.join(FAIL_ON)} or none"
        )
    if fails_on(verdict, wanted):
        click.echo(f"verdict {verdict} is in --fail-on {fail_on}", err=True)
        raise CliExit(EXIT_VERDICT)


@click.command()
@common
def sessions() -> None:
    """Every session of the home, newest first, with host, activity and verdict."""
    from infomark.ledger.timeline import overview

    require_home()
    with open_gk() as gk:
        stories = overview(gk.store)
    rows = [
        {
            "session": s.session,
            "host": s.host,
            "started": s.started,
            "last_activity": s.last_activity,
            "events": s.events,
            "verdict": s.verdict,
        }
        for s in stories
    ]
    if opts()["json"]:
        emit_json(rows)
        return
    from infomark.cli.report import print_sessions

    print_sessions(rows)


def _tty_progress() -> Callable[[int, int], None] | None:
    """A one-line progress bar on stderr, only when stderr is a terminal."""
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        width = 30
        frac = min(done / total, 1.0) if total else 1.0
        end = "\n" if done >= total else ""
        bar = "#" * int(frac * width)
        sys.stderr.write(f"\rverifying {done:,}/{total:,} events [{bar:<{width}}]{end}")
        sys.stderr.flush()

    return show


def _name_session(name: str | None) -> None:
    """A positional SESSION, as ``--session`` (``audit`` and ``report`` read it the same)."""
    if name is not None:
        given = opts().get("session") if opts().get("session_given") else None
        if given is not None and given != name:
            raise click.UsageError(
                f"two sessions named: {name!r} and --session {given!r}; name one"
            )
        opts()["session"] = name
        opts()["session_given"] = True


@click.command()
@click.option("--verify/--no-verify", default=True, help="Verify chain, MACs and blobs (default).")
@file_option("--export", "export", help="Write a signed, self-contained bundle to FILE.")
@click.option(
    "--timeline",
    is_flag=True,
    help="Also print the session's timeline (with --json: the story's whole timeline and "
    f"every command run, not the last {STORY_KEPT}).",
)
@click.argument("name", metavar="[SESSION]", required=False)
@_fail_on_option
@common
def audit(
    verify: bool, export: Path | None, timeline: bool, name: str | None, fail_on: str
) -> None:
    """Verdict, claims and evidence of a session (the latest if none is named).

    Verifies the journal by default and exits 1 naming the first bad event; exits 5 when the
    verdict is in a --fail-on category (by default: finished unverified, bypassed, tampered).
    The session is named as with ``report``: ``infomark audit S`` or ``--session S``.
    """
    from infomark.ledger.audit import build_audit
    from infomark.ledger.timeline import READS, finish_story, story_reader

    _name_session(name)
    gk, session, chosen = _open_existing()
    with gk as g:
        checked = verify or export is not None
        # the story's timeline and commands run: their last entries, unless --timeline
        reader = story_reader(session, keep=None if timeline else STORY_KEPT, ledger=g.store)
        g.store.check_artifacts()  # what g.audit() does; the timeline comes from the same pass
        with g.store.journal.snapshot():  # the report and the story: one committed state
            feed = reader.take if checked else None
            report = build_audit(
                g.store, verify=checked, progress=_tty_progress(), feed=feed, wants=READS
            )
            if not checked:
                for row in g.events():
                    reader.feed(row)
        story = finish_story(reader, tampered=report.verified is False)
        if export is not None:
            from infomark.ledger.bundle import export_bundle

            export_bundle(g.store, export, report.to_dict())
    if timeline:  # the whole story: audit's --json says so with the same two counts
        story.timeline_omitted = story.commands_run_omitted = 0
    data = report.to_dict()
    data["verdict"] = story.verdict
    data["verdict_text"] = story.verdict_text
    data["story"] = story.to_dict()
    if chosen and not opts()["json"]:
        click.echo(f"session {session} (the latest; name one to choose)", err=True)
    if opts()["json"]:
        emit_json(data)
    else:
        from infomark.cli.render import print_audit
        from infomark.cli.report import print_story

        print_story(story, timeline=timeline)
        print_audit(data)
        if export is not None:
            click.echo(f"bundle written to {export}")
    if report.verified is False:
        first = report.first_problem or {}
        click.echo(
            f"verification FAILED at seq {first.get('seq')}: {first.get('message')}", err=True
        )
        raise CliExit(EXIT_VERIFY)
    _gate_verdict(story.verdict, fail_on)


@click.command()
@click.argument("name", metavar="[SESSION]", required=False)
@click.option(
    "--html", "html", type=click.Path(dir_okay=False, path_type=Path), help="Write a page."
)
@click.option("--md", "md", type=click.Path(dir_okay=False, path_type=Path), help="Write Markdown.")
@_fail_on_option
@common
def report(name: str | None, html: Path | None, md: Path | None, fail_on: str) -> None:
    """A session's verdict, timeline and claim histories (the terminal, --html or --md).

    The page is self-contained (no scripts, no network); exits 1 if verification fails, 5
    when the verdict is in a --fail-on category.
    """
    from infomark.cli.report import print_story, render_html, render_markdown
    from infomark.ledger.timeline import session_story

    _name_session(name)
    gk, session, chosen = _open_existing()
    with gk as g:
        story = session_story(g.store, session, verify=True)
        key_id = g.store.key.key_id
    if chosen and not opts()["json"]:
        click.echo(f"session {session} (the latest; name one to choose)", err=True)
    for path, text in ((html, render_html), (md, render_markdown)):
        if path is not None:
            try:
                path.write_text(text(story, key_id=key_id), encoding="utf-8")
            except OSError as exc:
                raise click.UsageError(f"cannot write {path}: {exc.strerror}") from exc
            if not opts()["json"]:
                click.echo(f"wrote {path}")
    if opts()["json"]:
        emit_json(story.to_dict())
    elif html is None and md is None:
        print_story(story, timeline=True)
    if story.verdict == "tampered":
        raise CliExit(EXIT_VERIFY)
    _gate_verdict(story.verdict, fail_on)


@click.command()
@click.option("--public", "public", is_flag=True, help="Print the bundle-signing public key.")
@common
def key(public: bool) -> None:
    """The home's keys, as far as they may be shown: the HMAC key id, the signing public key.

    The secret keys are never printed. ``--public`` prints only the Ed25519 public key
    (hex) that signs bundles, for ``verify-bundle --public-key``; it is created if missing.
    """
    from infomark.ledger.bundle import public_key_hex

    home = require_home()
    with open_gk() as gk:
        key_id = gk.store.key.key_id
    pub = public_key_hex(home)
    if opts()["json"]:
        emit_json({"key_id": key_id, "public_key": pub})
    elif public:
        click.echo(pub)
    else:
        click.echo(f"HMAC key id:          {key_id}")
        click.echo(f"signing public key:   {pub}")


def register(group: click.Group) -> None:
    for cmd in (sessions, audit, report, key):
        group.add_command(cmd)
