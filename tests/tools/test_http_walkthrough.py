"""docs/integrations.md's "A whole task with curl", run as written against a real
``infomark serve`` on 127.0.0.1 with the real curl: every documented answer (the ``# {…}``
comment after a command) must hold for the answer the service gives: each ``"key":value``
it shows with a literal value (a string, a number, true/false, a list of strings) is in the
answer, and its top-level keys are the answer's."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import start_service, stop_service

DOC = Path(__file__).parents[2] / "docs" / "integrations.md"
SEP = "@@infomark-doc-answer@@"
_PAIR = re.compile(r'"(\w+)":("(?:[^"\\.…]|\\.)*"|true|false|-?\d+|\[(?:"[^"]*",?)*\])(?=[,}])')


def walkthrough() -> list[tuple[str, list[str]]]:
    """``(script, documented answers)`` of each bash block of the section, in order."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("### A whole task with curl", 1)[1].split("\nAlso, per session", 1)[0]
    out = []
    for body in re.findall(r"```bash\n(.*?)```", section, re.S):
        answers: list[str] = []
        lines = body.splitlines()
        for i, line in enumerate(lines):
            if line.startswith("# {"):
                shown = [line[2:]]
                for nxt in lines[i + 1 :]:
                    if not nxt.startswith("#  "):
                        break
                    shown.append(nxt[2:].strip())
                answers.append(" ".join(shown))
            elif re.match(r"curl .*#\s+\{", line):
                answers.append(line.split("#", 1)[1].split(";")[0].strip())
        out.append((body, answers))
    return out


def _find(value: Any, key: str, want: Any) -> bool:
    if isinstance(value, dict):
        if key in value and value[key] == want:
            return True
        return any(_find(v, key, want) for v in value.values())
    if isinstance(value, list):
        return any(_find(v, key, want) for v in value)
    return False


def check_answer(shown: str, actual: dict[str, Any]) -> list[str]:
    """What the documented answer ``shown`` says that ``actual`` does not."""
    wrong = []
    for key, raw in _PAIR.findall(shown):
        want = json.loads(raw)
        if not _find(actual, key, want):
            wrong.append(f'"{key}":{raw}')
    return wrong


def test_the_answer_check_can_fail() -> None:
    assert check_answer('{"allow":false,"code":"stale_evidence","reason":"Not…"}',
                        {"allow": False, "code": "completion_without_evidence"}) == [
        '"code":"stale_evidence"'
    ]  # fmt: skip
    assert check_answer('{"status":"ok",...}', {"status": "ok", "version": "1"}) == []


_REF = re.compile(r"ev_[0-9a-f]{24}")


def commands() -> tuple[str, list[tuple[str, str | None]]]:
    """The set-up lines, and each curl command with the answer documented after it."""
    setup: list[str] = []
    out: list[tuple[str, str | None]] = []
    for body, _ in walkthrough():
        chunk: list[str] = []
        for line in [*body.splitlines(), "curl END"]:
            if line.startswith("curl "):
                if chunk:
                    cmd = "\n".join(ln for ln in chunk if not ln.startswith("#"))
                    first = chunk[0]
                    if "#" in first and "{" in first.split("#", 1)[1]:
                        doc: str | None = first.split("#", 1)[1].split(";")[0].strip()
                    else:
                        shown = [ln[2:].strip() for ln in chunk[1:] if ln.startswith("# {")]
                        shown += [ln[2:].strip() for ln in chunk[1:] if ln.startswith("#  ")]
                        doc = " ".join(shown) or None
                    out.append((cmd.split("#")[0] if "<<" not in cmd else cmd, doc))
                chunk = [line]
            elif chunk:
                chunk.append(line)
            elif line.strip() and not line.startswith("#"):
                setup.append(line)
    return "\n".join(setup), [c for c in out if c[0] != "curl END"]


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl, as the docs do")
def test_the_curl_walkthrough_answers_as_documented(tmp_path: Path) -> None:
    svc = start_service(tmp_path)
    try:
        setup, steps = commands()
        assert len(steps) >= 10 and sum(1 for _, d in steps if d) >= 8
        setup = setup.replace("URL=http://127.0.0.1:8765/v1", f"URL={svc.url.rstrip('/')}/v1")
        refs: dict[str, str] = {}
        problems = []
        for command, doc in steps:
            command = _REF.sub(lambda m: refs.get(m[0], m[0]), command)
            done = subprocess.run(
                ["bash", "-c", f"{setup}\n{command}"],
                cwd=svc.project,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert done.returncode == 0, (command, done.stderr)
            actual = json.loads(done.stdout)
            if doc is None:
                continue
            for shown_ref, real in zip(_REF.findall(doc), _REF.findall(done.stdout), strict=False):
                refs.setdefault(shown_ref, real)
            doc = _REF.sub(lambda m: refs.get(m[0], m[0]), doc)
            wrong = check_answer(doc, actual)
            if wrong:
                problems.append(f"{command.splitlines()[0][:70]}: {wrong} not in {actual}")
        assert not problems, "\n".join(problems)
    finally:
        stop_service(svc)
