"""The service holds its own change feed (``gates/feed_local.py``) for the projects it serves.

Through the service's routes, as Claude Code's hook posts them: in a git project of more
tracked files than :data:`~infomark.gates.feed_local.LOCAL_MIN_TRACKED`, the first Bash call
is compared by walking every tracked file (the watch is being built), the later ones by the
feed; every one reports the file the command changed. The app's shutdown uninstalls and
closes the feed. A real SQLite home, the real app (its lifespan included), real git and bash.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from infomark.gatekeeper import Gatekeeper
from infomark.gates import feed_local
from infomark.gates import fingerprint as fp
from infomark.tools.service import create_app

pytestmark = pytest.mark.sqlite_only

_GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@x.invalid"]


def _project(root: Path, files: int) -> Path:
    for i in range(files):
        (root / "src" / f"d{i % 10}").mkdir(parents=True, exist_ok=True)
        (root / "src" / f"d{i % 10}" / f"m{i}.py").write_text(f"v = {i}\n")
    for argv in (["init", "-q"], ["add", "src"], ["commit", "-qm", "x"]):
        subprocess.run([*_GIT, *argv], cwd=root, check=True, capture_output=True)
    return root.resolve()


def _events(home: Path, session: str, root: Path) -> list[dict[str, Any]]:
    with Gatekeeper.open(home, session, root=root) as gk:
        return [e.payload for e in gk.events() if e.type == "unannounced_mutation"]


def test_the_service_compares_bash_calls_with_its_own_feed(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    root = _project(project, feed_local.LOCAL_MIN_TRACKED + 10)
    home = tmp_path / "home"
    transcript = tmp_path / "transcript.jsonl"
    transcript.write_text("")
    app = create_app(home, root=root, profile="verify")  # edits ungated: the watch is judged
    token = (home / "token").read_text().strip()
    told: list[str] = []
    with TestClient(app, headers={"authorization": f"Bearer {token}"}) as client:
        feeds = fp._LOCAL
        assert isinstance(feeds, feed_local.LocalFeeds)

        def hook(event: str, use: str, command: str, response: object = None) -> Any:
            payload: dict[str, object] = {
                "session_id": "fed-1",
                "transcript_path": str(transcript),
                "cwd": str(root),
                "hook_event_name": event,
                "tool_name": "Bash",
                "tool_input": {"command": command},
                "tool_use_id": use,
            }
            if response is not None:
                payload["tool_response"] = response
            r = client.post("/v1/hooks/claude-code", json=payload)
            assert r.status_code == 200, r.text
            return r.json()

        for n in range(3):
            use, rel = f"u{n}", f"src/d{n}/m{n}.py"
            command = f"echo changed >> {rel}"
            line = {
                "type": "assistant",
                "message": {
                    "id": f"m{n}",
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": use, "name": "Bash", "input": {}}],
                },
            }
            with transcript.open("a") as fh:
                fh.write(json.dumps(line) + "\n")
            pre = hook("PreToolUse", use, command)
            assert "deny" not in json.dumps(pre), pre
            subprocess.run(["bash", "-c", command], cwd=root, check=True)
            answer = hook("PostToolUse", use, command, {"stdout": "", "stderr": ""})
            told.append(json.dumps(answer))
            if n == 0:  # the first call started the watch: wait until it is built
                assert feeds.wait_built(str(root), 30)
                ctl = feeds._trees[str(root)].ctl
    assert fp._LOCAL is None  # the shutdown uninstalled it
    assert not Path(ctl).exists()  # and closed it (its control directory removed)
    events = _events(home, "fed-1", root)
    assert [e["files"] for e in events] == [[f"src/d{n}/m{n}.py"] for n in range(3)]
    assert [e["method"] for e in events] == ["git-index", "feed", "feed"]
    assert all(f"src/d{n}/m{n}.py" in told[n] for n in range(3))
