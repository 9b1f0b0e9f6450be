"""``infomark hook <host>``: parsed by hand so click and rich never load on this path."""

from __future__ import annotations

import json
import sys
from pathlib import Path

__all__ = ["run_hook"]

_USAGE = "usage: infomark hook claude-code [--home DIR] [--root DIR] < payload.json"


def run_hook(args: list[str]) -> int:
    if args[:1] in (["-h"], ["--help"]):
        print(_USAGE)
        return 0
    if not args or args[0] not in ("claude-code", "claude"):
        print(_USAGE, file=sys.stderr)
        return 2
    home: Path | None = None
    root: Path | None = None
    rest = args[1:]
    while rest:
        flag = rest.pop(0)
        if flag in ("--home", "--root") and rest:
            value = Path(rest.pop(0))
            if flag == "--home":
                home = value
            else:
                root = value
        else:
            print(f"infomark hook: ignoring unknown option {flag!r}", file=sys.stderr)
    raw = sys.stdin.buffer.read()
    payload: object = None
    try:
        payload = json.loads(raw.decode("utf-8", "replace")) if raw.strip() else None
    except (ValueError, RecursionError) as exc:
        print(f"infomark hook: stdin is not usable JSON ({exc}); ignoring it", file=sys.stderr)
    from infomark.tools.hooks.claude_code import handle

    answer = handle(payload, home=home, root=root)
    if answer.stdout is not None:
        sys.stdout.write(json.dumps(answer.stdout, ensure_ascii=True))  # any str, always valid
        sys.stdout.flush()
    if answer.stderr:
        sys.stderr.write(answer.stderr.encode("utf-8", "backslashreplace").decode() + "\n")
    return answer.exit_code
