"""Fork and merge commands: try a path in a copy of a session, bring back what it proved.

``infomark fork --session S [--upto SEQ] --as S2`` and ``infomark merge --from S2 --into S``
(docs/fork.md). Both need an existing home and existing sessions: a typo is an error naming
the closest match, never a new session.
"""

from __future__ import annotations

import click

from infomark.cli.base import common, emit_json, open_gk, opts, require_home, require_session

__all__ = ["register"]


def _existing(session: str) -> None:
    from infomark.ledger.timeline import overview

    require_home()
    o = opts()
    o["session"], o["session_given"] = session, True
    with open_gk() as probe:
        names = [s.session for s in overview(probe.store)]
    require_session(names)


@click.command("fork")
@click.option("--as", "as_session", required=True, help="The new session (must not exist).")
@click.option("--upto", type=int, default=None, help="Fork up to this seq (default: the head).")
@common
def fork_cmd(as_session: str, upto: int | None) -> None:
    """Fork --session into a new session holding its history up to --upto."""
    if not opts()["session_given"]:
        raise click.UsageError("name the session to fork with --session")
    _existing(opts()["session"])
    with open_gk() as gk:
        child = gk.fork(as_session, upto=upto)
        first = next(iter(child.events()))
        child.close()
    if opts()["json"]:
        emit_json({**first.payload, "forked_from": first.payload["session"], "session": as_session})
    else:
        click.echo(
            f"forked {as_session!r} from {first.payload['session']!r} "
            f"at seq {first.payload['seq']} (head {str(first.payload['head_hash'])[:12]})"
        )


@click.command("merge")
@click.option("--from", "from_session", required=True, help="The fork to merge from.")
@click.option("--into", "into_session", required=True, help="The session it was forked from.")
@common
def merge_cmd(from_session: str, into_session: str) -> None:
    """Merge what a fork settled after its fork point into the session it came from."""
    _existing(from_session)
    _existing(into_session)
    with open_gk() as gk:
        result = gk.merge_from(from_session)
    if opts()["json"]:
        emit_json(result)
        return
    if not result["merged"]:
        click.echo(f"nothing merged: {result['reason']}")
        return
    claims = ", ".join(result["claims"]) or "no claims"
    click.echo(f"merged {from_session!r} into {into_session!r} at seq {result['seq']}: {claims}")
    for c in result["conflicts"]:
        click.echo(
            f"conflict: claim {c['claim_id']} has a changed {c['changed']}; "
            f"both stamps dropped ({', '.join(c['dropped']) or 'none'})"
        )


def register(cli: click.Group) -> None:
    cli.add_command(fork_cmd)
    cli.add_command(merge_cmd)
