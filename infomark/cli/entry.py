"""Console entry point. ``infomark hook …`` is dispatched before click and rich load."""

from __future__ import annotations

import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["hook"]:
        if argv is None:
            return _hook_process(args[1:])
        from infomark.tools.hooks.dispatch import run_hook

        return run_hook(args[1:])
    from infomark.cli.app import run

    return run(args)


def _hook_process(args: list[str]) -> int:
    """The command hook as its own process: one call, then exit.

    No cycle collection while it imports (~5 % of its instructions), and no interpreter
    teardown after the answer is out (~9 %): the journal is committed and closed by then,
    stdout and stderr are flushed, and nothing else is left to release (the journal's
    connection is left open on purpose: ``journal.keep_wal_at_exit``).
    """
    import gc
    import os

    gc.disable()
    from infomark.ledger.store.journal import keep_wal_at_exit
    from infomark.tools.hooks.dispatch import run_hook

    keep_wal_at_exit()  # no checkpoint and WAL deletion at close: the next hook reuses them

    code = run_hook(args)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
