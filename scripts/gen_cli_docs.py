"""Regenerate the options reference in docs/cli.md from the CLI's real ``--help`` output.

    python scripts/gen_cli_docs.py            # rewrite the generated region
    python scripts/gen_cli_docs.py --check    # exit 1 when the region is stale

The region sits between ``<!-- BEGIN GENERATED -->`` and ``<!-- END GENERATED -->``; the rest
of the file is written by hand and left alone. Each command's text is exactly what
``COLUMNS=80 infomark <command> --help`` prints, produced in-process through the console
entry point (``infomark.cli.entry.main``), so ``infomark hook --help`` (dispatched before
click) is covered too. Exit codes: 0 up to date or rewritten, 1 stale (``--check``), 2 the
markers are missing or a ``--help`` failed.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import click

from infomark.cli.entry import main as cli_main

__all__ = [
    "BEGIN",
    "DOC",
    "END",
    "HOOK_PATH",
    "cli_group",
    "command_paths",
    "help_output",
    "main",
    "render_region",
    "splice",
]

BEGIN = "<!-- BEGIN GENERATED -->"
END = "<!-- END GENERATED -->"
DOC = Path(__file__).resolve().parent.parent / "docs" / "cli.md"
_COLUMNS = "80"

HOOK_PATH = ("hook",)
"""``infomark hook`` is parsed by hand before click loads; its ``--help`` is a usage line."""


@contextlib.contextmanager
def _columns() -> Iterator[None]:
    """Pin the help width (click reads ``COLUMNS``) so the output does not follow the terminal."""
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = _COLUMNS
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


def help_output(path: Sequence[str]) -> str:
    """What ``infomark <path> --help`` prints, at 80 columns."""
    out, err = io.StringIO(), io.StringIO()
    with _columns(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main([*path, "--help"])
    if code != 0:
        shown = " ".join(["infomark", *path, "--help"])
        raise RuntimeError(f"`{shown}` exited {code}: {err.getvalue().strip()}")
    return out.getvalue()


def cli_group() -> click.Group:
    """The click application with every subcommand registered (as ``infomark`` runs it)."""
    help_output(())  # the entry point registers the subcommands on first use
    from infomark.cli.app import cli

    return cli


def command_paths(group: click.Group | None = None) -> list[tuple[str, ...]]:
    """Every click command path, depth first in name order: ``()``, ``("approve",)``, …"""
    root = group or cli_group()
    paths: list[tuple[str, ...]] = []

    def walk(cmd: click.Command, prefix: tuple[str, ...]) -> None:
        paths.append(prefix)
        if isinstance(cmd, click.Group):
            for name in sorted(cmd.commands):
                walk(cmd.commands[name], (*prefix, name))

    walk(root, ())
    return paths


def _anchor(path: Sequence[str]) -> str:
    return "help-" + ("-".join(path) if path else "infomark")


def render_region() -> str:
    """The generated region, markers included."""
    parts = [
        BEGIN,
        "<!-- Written by scripts/gen_cli_docs.py from `COLUMNS=80 infomark … --help`; "
        "do not edit by hand. -->",
    ]
    for path in [*command_paths(), HOOK_PATH]:
        shown = " ".join(["infomark", *path])
        parts.append("")
        parts.append(f'<a id="{_anchor(path)}"></a>')
        parts.append(f"**`{shown} --help`**")
        parts.append("")
        parts.append("```text")
        parts.append(help_output(path).rstrip("\n"))
        parts.append("```")
    parts.append(END)
    return "\n".join(parts)


def splice(document: str, region: str) -> str:
    """``document`` with its generated region replaced by ``region``."""
    start = document.find(BEGIN)
    stop = document.find(END)
    if start < 0 or stop < start:
        raise ValueError(f"the markers {BEGIN} … {END} are missing or out of order")
    return document[:start] + region + document[stop + len(END) :]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    parser.add_argument("--file", type=Path, default=DOC, help=f"default: {DOC}")
    args = parser.parse_args(argv)
    path: Path = args.file
    try:
        current = path.read_text("utf-8")
        wanted = splice(current, render_region())
    except (OSError, ValueError, RuntimeError) as exc:
        print(f"gen_cli_docs: {path}: {exc}", file=sys.stderr)
        return 2
    if wanted == current:
        return 0
    if args.check:
        print(
            f"gen_cli_docs: {path} is stale; run `python scripts/gen_cli_docs.py`",
            file=sys.stderr,
        )
        return 1
    path.write_text(wanted, "utf-8")
    print(f"gen_cli_docs: rewrote the generated region of {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
