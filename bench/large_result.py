"""A 100 MB Bash result through the installed hook: ``python -m bench.large_result [MB]``.

A grounded session (``bench/session.py``), the PreToolUse of ``python3 check.py 4``, then
its PostToolUse with MB megabytes of stdout, fed to the real launcher process; prints the
payload's size, the hook's wall time, its peak RSS (``ru_maxrss`` of ``RUSAGE_CHILDREN``:
the largest of the session's hook processes) and its answer. Issue 28's goal: peak RSS
≤ 64 MiB at 100 MB.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.session import RealSession


def main(argv: list[str]) -> int:
    mb = int(argv[0]) if argv else 100
    with tempfile.TemporaryDirectory(prefix="infomark-large-") as tmp:
        s = RealSession(Path(tmp))
        s.ground()
        use = s.next_use()
        tool_input = {"command": "python3 check.py 4"}
        s.run(s.payload("PreToolUse", "Bash", tool_input, use))
        line = "check 4: ok " * 8 + "\n"
        body = line * (mb * 1_000_000 // len(line))
        response = {"stdout": body, "stderr": "", "interrupted": False}
        stdin = s.payload("PostToolUse", "Bash", tool_input, use, response)
        del body, response
        with tempfile.TemporaryFile() as feed:
            feed.write(stdin)
            feed.seek(0)
            size = len(stdin)
            del stdin
            t0 = time.perf_counter()
            proc = subprocess.Popen(s.argv, stdin=feed, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env=s.env, cwd=s.project)  # fmt: skip
            out, err = proc.communicate()
    wall = time.perf_counter() - t0
    import resource

    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # the largest child
    print(f"payload {size / 1e6:.1f} MB, hook exit {proc.returncode}, wall {wall:.2f} s, "
          f"peak RSS {peak:.1f} MiB (load average {os.getloadavg()[0]:.1f})")  # fmt: skip
    print(f"answer: {out[:300].decode(errors='replace')} {err[-300:].decode(errors='replace')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
