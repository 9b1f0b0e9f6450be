"""Console entry point. ``infomark hook …`` is dispatched before click and rich load."""

from __future__ import annotations

import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["hook"]:
        from infomark.tools.hooks.dispatch import run_hook

        return run_hook(args[1:])
    from infomark.cli.app import run

    return run(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
