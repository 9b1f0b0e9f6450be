"""The model client against the scripted server: retries, timeouts and errors that say what
failed, and an API key that reaches the Authorization header and nowhere else."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from infomark.kernel.errors import ConfigError
from infomark.tools.runner import AgentSpec, ModelClient, ModelError, ModelSpec, Runner
from infomark.tools.runner.agentfile import load_agent
from infomark.tools.runner.scripted import (
    Fail,
    Request,
    ScriptedModelServer,
    call,
    reply,
    tool_results,
)
from tests.runner.conftest import events

SYSTEM = {"role": "system", "content": "infomark session: m"}


def test_retries_overload_then_succeeds(server: ScriptedModelServer) -> None:
    server.add("m", Fail(503), Fail(429), reply("ok"))
    waits: list[float] = []
    client = ModelClient(server.url, "x", retries=2, sleep=waits.append)
    res = client.chat([SYSTEM])
    assert (res.content, res.attempts) == ("ok", 3)
    assert waits == [0.5, 1.0]


def test_gives_up_after_the_retries_and_names_url_status_and_body(
    server: ScriptedModelServer,
) -> None:
    server.add("m", Fail(503, "the GPU is on fire"), Fail(503, "the GPU is on fire"))
    client = ModelClient(server.url, "x", retries=1, sleep=lambda _s: None)
    with pytest.raises(ModelError) as info:
        client.chat([SYSTEM])
    text = str(info.value)
    assert "/v1/chat/completions" in text and "2 attempt(s)" in text
    assert "HTTP 503" in text and "the GPU is on fire" in text


def test_a_4xx_is_not_retried_and_carries_a_hint(server: ScriptedModelServer) -> None:
    server.add("m", Fail(401, "bad key"), reply("never reached"))
    client = ModelClient(server.url, "x", retries=3, sleep=lambda _s: None)
    with pytest.raises(ModelError, match=r"HTTP 401.*api_key_env"):
        client.chat([SYSTEM])
    assert server.remaining("m") == 1


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A TCP server that accepts and never answers (a hung model)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    stop = threading.Event()
    held: list[socket.socket] = []

    def accept() -> None:
        sock.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(sock.accept()[0])
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield sock.getsockname()[1]
    stop.set()
    t.join()
    for c in held:
        c.close()
    sock.close()


def test_a_timeout_says_it_timed_out(silent_port: int) -> None:
    client = ModelClient(f"http://127.0.0.1:{silent_port}/v1", "x", timeout=0.3, retries=1,
                         sleep=lambda _s: None)  # fmt: skip
    with pytest.raises(ModelError, match=r"2 attempt\(s\): timed out .*timeout 0.3s"):
        client.chat([SYSTEM])


def test_an_unreachable_server_says_so() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    client = ModelClient(f"http://127.0.0.1:{port}/v1", "x", retries=0)
    with pytest.raises(ModelError, match="could not reach the server"):
        client.chat([SYSTEM])


def test_the_key_comes_from_the_named_variable_and_is_never_written_down(
    server: ScriptedModelServer,
    project: Path,
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    secret = "sk-test-4f9d2c7e1b"
    monkeypatch.setenv("MY_MODEL_KEY", secret)
    (project / "agent.toml").write_text(
        f'name = "k"\n[model]\nurl = "{server.url}"\nname = "x"\napi_key_env = "MY_MODEL_KEY"\n'
        "retries = 0\n"
    )
    spec = load_agent(project / "agent.toml")
    seen: list[str] = []

    def leak(req: Request) -> dict[str, object]:
        seen.extend(tool_results(req))
        raise AssertionError(secret)  # the server answers 500 with the key in its body

    server.add("k", reply("", call("bash", command="echo key=$MY_MODEL_KEY.")), leak)
    with (
        Runner(spec, home=home, session="k", root=project, echo=print) as runner,
        pytest.raises(ModelError) as info,
    ):
        runner.start("go")
    assert {r.authorization for r in server.requests} == {f"Bearer {secret}"}
    assert seen and seen[0].startswith("key=.")  # the shell never saw the key
    assert secret not in str(info.value) and "[redacted]" in str(info.value)
    out = capsys.readouterr()
    assert secret not in out.out + out.err
    rows = events(home, "k")
    assert secret not in repr(rows)
    for blob in (home / "blobs").rglob("*"):
        assert not blob.is_file() or secret.encode() not in blob.read_bytes()
    assert [p["reason"] for _, t, p in rows if t == "run_finished"] == ["error"]


def test_a_named_but_unset_key_variable_is_a_clear_error(
    server: ScriptedModelServer, project: Path, home: Path
) -> None:
    spec = AgentSpec(model=ModelSpec(url=server.url, api_key_env="NOPE_UNSET_KEY"))
    with (
        Runner(spec, home=home, session="u", root=project) as runner,
        pytest.raises(ConfigError, match=r"NOPE_UNSET_KEY.*empty or unset"),
    ):
        runner.start("go")
