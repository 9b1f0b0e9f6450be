"""The session API is declared once: :class:`Gatekeeper`'s public methods.

Everything else is derived from that declaration, and this test keeps it so: the async
facade's coroutines are ``_off_loop(Gatekeeper.<name>)`` (the sync method, run on the session's
worker; mypy reads its signature through the ``ParamSpec``), both HTTP clients' methods are
``_sync`` / ``_async`` of the one request builder ``Requests.<name>`` (its route looked up in
:data:`~infomark.tools.routes.OPERATIONS`), and every route has its service handler. A method
written by hand where a derived one would do fails here; the ones that must be hand-written
are listed with the reason. (Which members exist where: ``tests/test_async_gatekeeper.py``
and ``tests/tools/test_client_mirror.py``.)
"""

from __future__ import annotations

import inspect

import pytest

from infomark.async_gatekeeper import AsyncGatekeeper
from infomark.client import AsyncClient, Client
from infomark.gatekeeper import Gatekeeper
from infomark.tools.client_core import Requests
from infomark.tools.routes import OPERATIONS
from infomark.tools.service import _Service

#: Async facade members written by hand, and why.
ASYNC_BY_HAND = {
    "open": "a classmethod: opens the ledger on a new worker",
    "close": "shuts the worker down after the ledger",
    "events": "an async iterator: the rows are read on the worker, then yielded",
    "fork": "returns an AsyncGatekeeper of the fork (with its own worker)",
    "state": "a property on the sync facade (the journal read makes it a coroutine here)",
    "after_tool_text": "synchronous: pops in-memory text",
    "use_policies": "synchronous: installs policy objects",
    "wrap": "gates executors (wrapping.wrap_async)",
    "tool": "decorates tools (wrapping.gated_async_tool)",
}
#: Client members written by hand, and why.
CLIENT_BY_HAND = {
    "fork": "returns a client of the fork (sharing the connections)",
    "events": "a stream of JSON lines, blocking or async",
}


def _methods(cls: type) -> set[str]:
    return {
        n
        for n, v in inspect.getmembers(cls)
        if not n.startswith("_") and (inspect.isfunction(v) or inspect.ismethod(v))
    }


@pytest.mark.parametrize("name", sorted(_methods(Gatekeeper) - set(ASYNC_BY_HAND)))
def test_each_async_method_is_the_sync_one_off_the_loop(name: str) -> None:
    mine = inspect.getattr_static(AsyncGatekeeper, name)
    assert getattr(mine, "__wrapped__", None) is getattr(Gatekeeper, name), (
        f"AsyncGatekeeper.{name} is written by hand: write `{name} = _off_loop(Gatekeeper.{name})`"
        " (or list it in ASYNC_BY_HAND with the reason)"
    )
    assert inspect.iscoroutinefunction(mine)


@pytest.mark.parametrize("name", sorted(_methods(Requests) - set(CLIENT_BY_HAND)))
def test_each_client_method_is_its_request_builder_sent(name: str) -> None:
    for cls in (Client, AsyncClient):
        mine = inspect.getattr_static(cls, name)
        assert getattr(mine, "__wrapped__", None) is getattr(Requests, name), (
            f"{cls.__name__}.{name} is written by hand: write `{name} = _sync(Requests.{name})`"
            " (`_async` in AsyncClient), or list it in CLIENT_BY_HAND with the reason"
        )
    assert inspect.iscoroutinefunction(AsyncClient.__dict__[name])


def test_the_hand_written_lists_name_real_members() -> None:
    assert set(ASYNC_BY_HAND) <= {n for n in dir(Gatekeeper) if not n.startswith("_")}
    assert set(CLIENT_BY_HAND) <= _methods(Requests)


def test_every_route_has_its_service_handler() -> None:
    missing = [op.name for op in OPERATIONS if not callable(getattr(_Service, op.name, None))]
    assert not missing, f"routes without a _Service method of their name: {missing}"
