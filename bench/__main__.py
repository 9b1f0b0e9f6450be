"""Run the benchmarks and print a table: ``python -m bench [--quick] [--write FILE] [name …]``.

A full run (no name, no ``--quick``) also writes the table into docs/performance.md,
between the ``<!-- bench:begin -->`` and ``<!-- bench:end -->`` markers.
"""

from __future__ import annotations

import platform
import sys
import time
from pathlib import Path

from bench import core, corpus

DOC = Path(__file__).resolve().parents[1] / "docs" / "performance.md"
BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


def table(command: str, seconds: float) -> str:
    head = (
        f"`{command}` · Python {platform.python_version()} · {platform.machine()} · "
        f"{seconds:.0f} s\n\n"
        "| bench | ours | baseline | ratio (median of pairs) |\n|---|---|---|---|\n"
    )
    return head + "".join(f"| {a} | {b} | {c} | {d} |\n" for a, b, c, d in core.ROWS)


def write(path: Path, text: str) -> None:
    doc = path.read_text("utf-8")
    if BEGIN not in doc or END not in doc:
        raise SystemExit(f"{path} has no {BEGIN} … {END} markers; add them where the table goes")
    before, rest = doc.split(BEGIN, 1)
    _old, after = rest.split(END, 1)
    path.write_text(f"{before}{BEGIN}\n{text}{END}{after}", "utf-8")


def main(argv: list[str]) -> int:
    core.QUICK = "--quick" in argv
    target: Path | None = None
    if "--write" in argv:
        target = Path(argv[argv.index("--write") + 1])
        argv = [a for a in argv if a != str(target)]
    names = [a for a in argv if not a.startswith("-")]
    if target is None and not names and not core.QUICK:
        target = DOC
    print(f"infomark benchmarks · Python {platform.python_version()} · {platform.machine()}")
    print(f"{'bench':<58} {'ours':>14} {'baseline':>14}  ratio (median of A/B pairs)")
    selected = [
        f for f in [*core.ALL, *corpus.ALL] if not names or any(a in f.__name__ for a in names)
    ]
    extra = []
    try:
        from bench import integrations

        extra = [f for f in integrations.ALL if not names or any(a in f.__name__ for a in names)]
    except ImportError:
        pass
    t0 = time.monotonic()
    from bench import coverage

    extra += [f for f in coverage.ALL if not argv or any(a in f.__name__ for a in argv)]
    for fn in [*selected, *extra]:
        fn()
    command = (
        "python -m bench" + (" --quick" if core.QUICK else "") + "".join(f" {a}" for a in names)
    )
    text = table(command, time.monotonic() - t0)
    print("\n" + text)
    if target is not None:
        write(target, text)
        print(f"table written to {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
