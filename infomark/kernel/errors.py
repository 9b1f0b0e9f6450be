"""One error hierarchy for infomark.

InfomarkError                      base; every error has a stable ``code``
 ├── UserError                     API misuse or bad input (CLI exit 2)
 │    ├── ConfigError              infomark.toml / [tool.infomark] is invalid
 │    ├── RecordRefused            a record names no pending authorized call (journaled)
 │    └── BlockSyntaxError         a ledger block could not be parsed (has line/column)
 ├── KeyFileError                  the key file is missing, malformed or too permissive
 ├── StoreError                    the journal could not be read or written
 │    └── StoreBusyError           the database stayed locked past the retry bound
 ├── VerificationError             the journal or a bundle failed verification (CLI exit 1)
 └── GraphError                    the gate graph breaks a kernel rule
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "BlockSyntaxError",
    "ConfigError",
    "GraphError",
    "InfomarkError",
    "KeyFileError",
    "RecordRefused",
    "StoreBusyError",
    "StoreError",
    "UserError",
    "VerificationError",
]


class InfomarkError(Exception):
    """Base of every error infomark raises on purpose."""

    code: str = "infomark_error"
    exit_code: int = 2

    def __init__(self, message: str, *, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column

    def __str__(self) -> str:
        where = ""
        if self.line is not None:
            where = f"line {self.line}" + (f", column {self.column}" if self.column else "") + ": "
        return where + self.message


class UserError(InfomarkError):
    """The caller gave something wrong; the message says what and how to fix it."""

    code = "user_error"


class ConfigError(UserError):
    """The configuration file is invalid."""

    code = "config_error"


class RecordRefused(UserError):
    """A tool result was offered as evidence without a matching authorized call.

    ``code`` is the reason (``unpaired_record`` or ``repeated_record``); the refusal is
    journaled before this is raised, and no evidence exists for it.
    """

    code = "unpaired_record"

    def __init__(self, message: str, *, code: str = "unpaired_record") -> None:
        super().__init__(message)
        self.code = code


class BlockSyntaxError(UserError):
    """A ledger block could not be parsed (``ParsedMessage.raise_for_errors``).

    ``line``/``column`` locate the first error; ``diagnostics`` holds every error
    diagnostic of the message (the parser's ``Diagnostic`` models).
    """

    code = "ledger_parse_error"

    def __init__(self, message: str, *, line: int | None = None, column: int | None = None):
        super().__init__(message, line=line, column=column)
        self.diagnostics: Sequence[object] = ()


class KeyFileError(InfomarkError):
    """The HMAC key file is missing, malformed or readable by others."""

    code = "key_error"


class StoreError(InfomarkError):
    """The journal could not be read or written."""

    code = "store_error"


class StoreBusyError(StoreError):
    """The database stayed locked by other writers past the retry bound."""

    code = "store_busy"


class VerificationError(InfomarkError):
    """The journal, an evidence blob or an exported bundle failed verification."""

    code = "verification_failed"
    exit_code = 1


class GraphError(InfomarkError):
    """The gate graph breaks a kernel rule."""

    code = "graph_invalid"
