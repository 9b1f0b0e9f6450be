"""The OpenAPI 3.1 document of the HTTP service, built from the route table.

Paths and parameters come from :data:`~infomark.tools.routes.OPERATIONS`, bodies from the
models' ``model_json_schema()``. The document is checked in at ``docs/openapi.json``
(a test keeps it in sync); regenerate it with
``python -m infomark.tools.service openapi docs/openapi.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from infomark.tools.api_models import model
from infomark.tools.routes import API_PREFIX, API_VERSION, OPERATIONS, SESSION_PATTERN, Operation

__all__ = ["main", "openapi_document", "openapi_json"]

_PATH_PARAMS: dict[str, dict[str, Any]] = {
    "session": {
        "description": "Session id (opened on first use)",
        "schema": {"type": "string", "pattern": SESSION_PATTERN},
    },
    "ref": {
        "description": "An evidence ref (ev_ and 24 hex digits)",
        "schema": {"type": "string", "pattern": "^ev_[0-9a-f]{24}$"},
    },
}


def _error_responses(op: Operation) -> dict[str, Any]:
    ref = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}}}
    out: dict[str, Any] = {}
    if op.request is not None or op.query or op.path_params:
        out["400"] = {"description": "Bad JSON, invalid fields or parameters", **ref}
    if op.auth:
        out["401"] = {"description": "Missing or invalid bearer token (unauthorized)", **ref}
    if "ref" in op.path_params:
        out["404"] = {"description": "No evidence with this ref (unknown_evidence)", **ref}
    if op.request is not None:
        out["413"] = {"description": "Body too large (body_too_large)", **ref}
    if op.name == "send":
        out["409"] = {"description": "No live inbox: not delivered (inbox_refused)", **ref}
    out["500"] = {"description": "Internal error (internal_error)", **ref}
    return out


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 document of the service, built from :data:`OPERATIONS`."""
    schemas: dict[str, Any] = {}

    def ref(cls: type[BaseModel]) -> dict[str, Any]:
        schema = cls.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(schema.pop("$defs", {}))
        schemas[cls.__name__] = schema
        return {"$ref": f"#/components/schemas/{cls.__name__}"}

    ref(model("ErrorOut"))
    paths: dict[str, Any] = {}
    for op in OPERATIONS:
        item: dict[str, Any] = {"operationId": op.name, "summary": op.summary}
        params: list[dict[str, Any]] = [
            {"name": name, "in": "path", "required": True, **_PATH_PARAMS[name]}
            for name in op.path_params
        ]
        for name, typ, desc in op.query:
            schema: dict[str, Any] = {"type": typ}
            if typ == "integer":
                schema["minimum"] = 0
            params.append(
                {"name": name, "in": "query", "required": False, "description": desc,
                 "schema": schema}
            )  # fmt: skip
        if params:
            item["parameters"] = params
        if op.request is not None:
            item["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": ref(model(op.request))}},
            }
        ok: dict[str, Any] = {"description": "OK"}
        if op.response is not None:
            ok["content"] = {op.media_type: {"schema": ref(model(op.response))}}
        else:
            ok["content"] = {op.media_type: {"schema": {"type": "object"}}}
        item["responses"] = {"200": ok, **_error_responses(op)}
        if not op.auth:
            item["security"] = []
        paths.setdefault(API_PREFIX + op.path, {})[op.method.lower()] = item
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "infomark",
            "version": API_VERSION,
            "description": "The infomark gatekeeper over HTTP: one ledger home, sessions "
            "opened on first use. Every route but GET /v1/health needs "
            "'Authorization: Bearer <token>' (the token is in <home>/token). Errors are "
            '{"error": {"code", "message"}}.',
        },
        "servers": [{"url": "http://127.0.0.1:8765"}],
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": dict(sorted(schemas.items())),
        },
    }


def openapi_json() -> str:
    """The document as checked in at ``docs/openapi.json`` (stable text)."""
    return json.dumps(openapi_document(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    """``python -m infomark.tools.service openapi [FILE]``: print or write the document."""
    if argv[:1] == ["openapi"] and len(argv) <= 2:
        text = openapi_json()
        if len(argv) == 2:
            Path(argv[1]).write_text(text, encoding="utf-8")
        else:
            sys.stdout.write(text)
        return 0
    print("usage: python -m infomark.tools.service openapi [FILE]", file=sys.stderr)
    return 2
