"""Issue 12: the HTTP service resolves shell paths from the caller's ``cwd`` (real uvicorn)."""

from __future__ import annotations

from infomark.ledger.calls import ToolCall
from infomark.tools.http_client import Client
from tests.tools.conftest import Service


def test_authorize_takes_the_session_cwd(service: Service, session_id: str) -> None:
    sub = service.project / "sub"
    sub.mkdir(exist_ok=True)
    with Client(service.url, token=service.token, session=session_id) as client:
        command = {"command": "cat ../.infomark/key"}
        denied = client.authorize(ToolCall("Bash", command, cwd=str(sub)))
        assert denied.code == "protected_home", denied.reason
        elsewhere = client.authorize(ToolCall("Bash", command))  # from the service's root
        assert elsewhere.code != "protected_home"
        raw = client.classify(ToolCall("Bash", {"command": "grep -r key .."}, cwd=str(sub)))
        assert raw is not None
