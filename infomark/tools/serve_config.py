"""How uvicorn runs the service, one configuration for ``infomark serve`` and each of its
workers: logging to stderr with an access line without headers (so never a token), no
proxy headers, no server header, a 3 s graceful shutdown, the app's lifespan."""

from __future__ import annotations

from typing import Any

import uvicorn

__all__ = ["log_config", "uvicorn_config"]


def uvicorn_config(app: Any, *, log_level: str, access_log: bool) -> uvicorn.Config:
    """uvicorn's configuration for the service's ASGI ``app``."""
    return uvicorn.Config(
        app,
        log_config=log_config(log_level),
        access_log=access_log,
        proxy_headers=False,
        server_header=False,
        timeout_graceful_shutdown=3,
        lifespan="on",
    )


def log_config(level: str) -> dict[str, Any]:
    """Everything to stderr; the access line has no headers (so never a token)."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "default": {
                "()": "uvicorn.logging.DefaultFormatter",
                "fmt": "%(levelprefix)s %(name)s: %(message)s",
                "use_colors": False,
            },
            "access": {
                "()": "uvicorn.logging.AccessFormatter",
                "fmt": '%(levelprefix)s %(client_addr)s - "%(request_line)s" %(status_code)s',
                "use_colors": False,
            },
        },
        "handlers": {
            "default": {
                "formatter": "default",
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stderr",
            },
            "access": {
                "formatter": "access",
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stderr",
            },
        },
        "loggers": {
            "uvicorn": {"handlers": ["default"], "level": level.upper(), "propagate": False},
            "uvicorn.error": {"level": level.upper()},
            "uvicorn.access": {"handlers": ["access"], "level": "INFO", "propagate": False},
            "infomark": {"handlers": ["default"], "level": "INFO", "propagate": False},
        },
    }
