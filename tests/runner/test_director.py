"""Acceptance (b): a director steers 3 workers mid-run (3/3 delivered), then a send to a
finished worker is refused at once with the reason, never reported as delivered."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from infomark.tools.runner import AgentSpec, ModelSpec, Runner, ScriptedModelServer
from infomark.tools.runner.scripted import Request, call, reply, tool_results
from tests.runner.conftest import events

WORKERS = ("w1", "w2", "w3")


def _worker(req: Request) -> dict[str, Any]:
    """Sleep on the inbox until steered; then answer with what the operator said."""
    found = re.search(r"\[operator message from [^\]]+\]\n(.+)", req.text())
    if found is None:
        return reply("", call("wait", seconds=120))
    return reply(f"ack: {found.group(1)}")


def test_director_steers_three_workers_and_a_late_send_is_refused(
    server: ScriptedModelServer, project: Path, home: Path
) -> None:
    late: list[str] = []

    def after_wait(req: Request) -> dict[str, Any]:
        return reply("", call("send", agent="w1", message="one more thing"))

    def final(req: Request) -> dict[str, Any]:
        late.extend(tool_results(req))
        return reply("All three workers answered.")

    server.add(
        "dir",
        reply("", *(call("spawn_agent", name=w, task=f"task {w}") for w in WORKERS)),
        reply("", *(call("send", agent=w, message=f"focus on {w}") for w in WORKERS)),
        reply("", call("wait", agents=list(WORKERS), seconds=120)),
        after_wait,
        final,
    )
    for w in WORKERS:
        server.add(f"dir.{w}", _worker, _worker)
    spec = AgentSpec(
        name="director",
        tools=("spawn_agent", "send", "wait"),
        model=ModelSpec(url=server.url, name="scripted", retries=0),
    )
    with Runner(spec, home=home, session="dir", root=project) as runner:
        result = runner.start("direct three workers")
        director = runner.session
    assert result.reason == "finished"

    delivered = 0
    for w in WORKERS:
        rows = events(home, f"dir.{w}")
        kinds = [t for _, t, _ in rows]
        started = next(p for _, t, p in rows if t == "run_started")
        assert started["parent"] == director
        got = [p for _, t, p in rows if t == "inbox_delivered"]
        read = [p for _, t, p in rows if t == "inbox_read"]
        assert [g["text"] for g in got][:1] == [f"focus on {w}"]
        assert got[0]["message_id"] in read[0]["message_ids"]
        # the worker's model saw the steering text and answered it before finishing
        asked = [r for r in server.requests if r.session == f"dir.{w}"]
        assert any(f"focus on {w}" in r.text() for r in asked)
        delivered += int(kinds.index("inbox_read") < kinds.index("run_finished"))
    assert delivered == 3

    # the late send: refused with the reason, on both sides, and never delivered
    refusal = next(t for t in late if "one more thing" in t or "not delivered" in t)
    assert "not delivered" in refusal and "finished" in refusal
    w1 = events(home, "dir.w1")
    refused = [p for _, t, p in w1 if t == "inbox_refused"]
    assert [r["reason"] for r in refused] == ["finished"]
    assert [p["text"] for _, t, p in w1 if t == "inbox_delivered"] == ["focus on w1"]
    # the workers' results reached the director through wait
    waited = [p for _, t, p in events(home, "dir") if t == "runner_message"]
    text = "\n".join(str(p["message"].get("content")) for p in waited)
    for w in WORKERS:
        assert f"ack: focus on {w}" in text
    assert [p["name"] for _, t, p in events(home, "dir") if t == "agent_spawned"] == list(WORKERS)
