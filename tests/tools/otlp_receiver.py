"""A real OTLP/HTTP trace receiver on 127.0.0.1: what a collector would get, decoded."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

WAIT_S = 60.0  # an upper bound for a loaded machine, never a synchronisation sleep


def _value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(x) for x in v.array_value.values)
    return getattr(v, kind) if kind else None


@dataclass(frozen=True)
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    start_ns: int
    attributes: dict[str, Any]
    resource: dict[str, Any]


@dataclass
class Receiver:
    """Spans received so far, and every request's path and content type."""

    url: str = ""
    spans: list[ReceivedSpan] = field(default_factory=list)
    requests: list[tuple[str, str]] = field(default_factory=list)
    cond: threading.Condition = field(default_factory=threading.Condition)

    @property
    def endpoint(self) -> str:
        return self.url + "/v1/traces"

    def take(self, body: bytes, path: str, content_type: str) -> None:
        req = ExportTraceServiceRequest()
        req.ParseFromString(body)
        got: list[ReceivedSpan] = []
        for rs in req.resource_spans:
            resource = {a.key: _value(a.value) for a in rs.resource.attributes}
            for ss in rs.scope_spans:
                for s in ss.spans:
                    got.append(
                        ReceivedSpan(
                            name=s.name,
                            trace_id=s.trace_id.hex(),
                            span_id=s.span_id.hex(),
                            parent_span_id=s.parent_span_id.hex(),
                            start_ns=s.start_time_unix_nano,
                            attributes={a.key: _value(a.value) for a in s.attributes},
                            resource=resource,
                        )
                    )
        with self.cond:
            self.requests.append((path, content_type))
            self.spans.extend(got)
            self.cond.notify_all()

    def wait_for(self, names: set[str]) -> list[ReceivedSpan]:
        """Block until spans with all of ``names`` arrived (fails after :data:`WAIT_S`)."""
        with self.cond:
            ok = self.cond.wait_for(lambda: names <= {s.name for s in self.spans}, WAIT_S)
            assert ok, f"spans {sorted(names)} never arrived; got {[s.name for s in self.spans]}"
            return list(self.spans)

    def named(self, name: str) -> list[ReceivedSpan]:
        with self.cond:
            return [s for s in self.spans if s.name == name]


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            ctype = self.headers.get("Content-Type", "")
            if self.path != "/v1/traces" or ctype != "application/x-protobuf":
                self.send_response(404 if self.path != "/v1/traces" else 415)
                self.end_headers()
                return
            receiver.take(body, self.path, ctype)
            out = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler


@contextmanager
def otlp_receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(receiver))
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(WAIT_S)
