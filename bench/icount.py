"""Hook processes counted in instructions: ``python -m bench.icount [--base DIR]``.

Wall time on a shared two-core machine moves with everyone else's load; the number of
instructions a process executes does not. Each case runs the real hook command once under
``valgrind --tool=callgrind`` (a fresh home, warmed by one Read decided and recorded first,
bytecode current) and is divided by a bare ``python -I -S -c pass`` counted the same way, in
two forms: ``site`` (``python -c`` with site, as the ``infomark`` console script starts it)
and ``launcher`` (the launcher ``infomark install claude-code`` writes: ``python -I -S``, its
recorded ``sys.path``). The hook's 4 s watchdog is lifted for the count (valgrind runs ~50×
slower than the hardware); nothing else changes.
``--base DIR`` counts another checkout of infomark (say ``git worktree add /tmp/base main``)
with the same interpreter, for a before / after table. ``--real`` counts the cases of a
session shaped like real use instead (``bench/session.py``: a transcript, a grounded
5-claim ledger, real applied stamps, Bash / Edit / Read, PostToolUse of real outputs).
"""

from __future__ import annotations

import compileall
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_HOOK = (
    "import sys; sys.argv = ['infomark', 'hook', 'claude-code']\n"
    "import infomark.tools.hooks.dispatch as d; d.DEADLINE_S = 1e6\n"
    "from infomark.cli.entry import main; main()\n"
)
_LEDGER = (
    'claim_ledger:\n  claims:\n    - id: C{i}\n      text: "claim {i}"\n'
    '      status: Hypothetical\n      falsifier: "f"\n      oracle: "make t"\n'
    "  premises_for_plan: [C{i}]\n"
)
_STAMP = "Read it.\n\ninference_stamp: claim_id=C{i} evidence_ref=ev_{i:024x}\n"
CASES = {
    "PreToolUse, steady state": ("PreToolUse", None),
    "PreToolUse after a new ledger block": ("PreToolUse", _LEDGER),
    "PreToolUse after a new stamp": ("PreToolUse", _STAMP),
    "PostToolUse (Read result)": ("PostToolUse", None),
}


def count(argv: list[str], stdin: bytes, env: dict[str, str], cwd: str) -> int:
    with tempfile.NamedTemporaryFile(suffix=".cg") as out:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out.name}", *argv],
            input=stdin,
            capture_output=True,
            env=env,
            cwd=cwd,
            check=True,
        )
    found = re.search(rb"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"no instruction count from valgrind: {done.stderr[-400:]!r}")
    return int(found.group(1))


def launcher(tree: Path, where: Path) -> list[str]:
    """The installed launcher, for ``tree``'s infomark (the other recorded paths as installed),
    with the watchdog lifted."""
    from infomark.tools.launcher import render, search_paths, write_launcher

    paths = [str(tree) if (Path(p) / "infomark").is_dir() else p for p in search_paths()]
    text = render(paths=paths)
    entry = "\n    raise SystemExit(main())\n"
    lift = "\n    import infomark.tools.hooks.dispatch as _d\n    _d.DEADLINE_S = 1e6" + entry
    assert text.count(entry) == 1, "the launcher no longer calls main() once"
    lifted = text.replace(entry, lift)
    write_launcher(where / "infomark-hook", lifted)
    return [str(where / "infomark-hook"), "hook", "claude-code"]


FORMS = ("site", "launcher")


def case(event: str, text: str | None, tree: Path, work: Path, form: str) -> int:
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    env = {**os.environ, "INFOMARK_HOME": str(work / "home"), "PYTHONPATH": str(tree)}
    transcript = work / "t.jsonl"
    transcript.write_text("")

    def payload(i: int, hook_event: str) -> bytes:
        data: dict[str, object] = {
            "session_id": "icount",
            "transcript_path": str(transcript) if text else "",
            "cwd": str(work),
            "hook_event_name": hook_event,
            "tool_name": "Read",
            "tool_input": {"file_path": "x"},
            "tool_use_id": f"t{i}",
        }
        if hook_event == "PostToolUse":
            data["tool_response"] = {"type": "text", "text": "x" * 400}
        elif text:
            said = {"type": "text", "text": text.format(i=i)}
            content = [said, {"type": "tool_use", "id": f"t{i}"}]
            with transcript.open("a") as f:
                f.write(json.dumps({"type": "assistant", "message": {"content": content}}) + "\n")
        return json.dumps(data).encode()

    argv = [sys.executable, "-c", _HOOK] if form == "site" else launcher(tree, work)

    def run(data: bytes) -> None:
        subprocess.run(argv, input=data, capture_output=True, env=env, cwd=work, check=True)

    # Warm: one Read decided and its result recorded, so the session holds evidence (the
    # steady state of a session; a fresh one also digests the test files on each call).
    run(payload(1, "PreToolUse"))
    run(payload(1, "PostToolUse"))
    if event == "PostToolUse":
        run(payload(2, "PreToolUse"))  # the result measured is that of an authorized call
    return count(argv, payload(2, event), env, str(work))


def real_case(name: str, tree: Path, work: Path) -> int:
    """One case of :data:`bench.session.CASES`: a grounded session (5 claims stamped by
    their oracles' recorded runs, a read and an edit), the installed launcher of ``tree``."""
    from bench.session import CASES as REAL
    from bench.session import RealSession

    if work.exists():
        shutil.rmtree(work)
    env_path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(tree)  # the grounding hooks run ``tree``'s code too
    try:
        s = RealSession(work, tree=tree)
        s.ground()
        stdin = REAL[name](s)
    finally:
        if env_path is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = env_path
    lifted = launcher(tree, work)  # the same launcher with the watchdog lifted
    return count(lifted, stdin, {**s.env, "PYTHONPATH": str(tree)}, str(s.project))


def main(argv: list[str]) -> int:
    trees = {"ours": ROOT}
    if "--base" in argv:
        trees = {"base": Path(argv[argv.index("--base") + 1]).resolve(), **trees}
    for tree in trees.values():
        compileall.compile_dir(tree / "infomark", quiet=1)
    with tempfile.TemporaryDirectory(prefix="infomark-icount-") as tmp:
        bare = count([sys.executable, "-I", "-S", "-c", "pass"], b"", dict(os.environ), tmp)
        print(f"bare `python -I -S -c pass`: {bare / 1e6:.1f} M instructions")
        if "--real" in argv:  # the realistic session (bench/session.py), launcher only
            from bench.session import CASES as REAL

            print("| case (grounded session, launcher) | " + " | ".join(trees) + " |")
            print("|---|" + "---|" * len(trees))
            for name in REAL:
                cells = []
                for label, tree in trees.items():
                    n = real_case(name, tree, Path(tmp) / label)
                    cells.append(f"{n / 1e6:.1f} M = {n / bare:.2f}×")
                print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
            return 0
        columns = [f"{label}, {form}" for label in trees for form in FORMS]
        print("| case | " + " | ".join(columns) + " |")
        print("|---|" + "---|" * len(columns))
        for name, (event, text) in CASES.items():
            cells = []
            for label, tree in trees.items():
                for form in FORMS:
                    n = case(event, text, tree, Path(tmp) / label, form)
                    cells.append(f"{n / 1e6:.1f} M = {n / bare:.2f}×")
            print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
