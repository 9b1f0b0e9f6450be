"""Run every benchmark and print a table: ``python -m bench [name …]``."""

from __future__ import annotations

import platform
import sys

from bench import core, corpus


def main(argv: list[str]) -> int:
    print(f"infomark benchmarks · Python {platform.python_version()} · {platform.machine()}")
    print(f"{'bench':<48} {'ours':>12} {'baseline':>12}  ratio")
    argv = [a for a in argv if not a.startswith("-")]
    selected = [
        f for f in [*core.ALL, *corpus.ALL] if not argv or any(a in f.__name__ for a in argv)
    ]
    extra = []
    try:
        from bench import integrations

        extra = [f for f in integrations.ALL if not argv or any(a in f.__name__ for a in argv)]
    except ImportError:
        pass
    for fn in [*selected, *extra]:
        fn()
    print("\n| bench | ours | baseline | ratio |\n|---|---|---|---|")
    for name, ours, base, ratio in core.ROWS:
        print(f"| {name} | {ours} | {base} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
