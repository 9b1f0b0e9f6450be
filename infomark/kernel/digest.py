"""SHA-256 and HMAC-SHA256 for a process that lives for one tool call.

``hashlib`` loads OpenSSL (``_hashlib``): ~11 M instructions, about 3 ms, a sixth of a hook
process's own start-up. CPython also ships its own SHA-256 (``_sha256``, ``_sha2`` from
3.12), which starts in a few microseconds and hashes ~3x slower than OpenSSL's. So the
small inputs of a hook call (event bodies, MACs, digests of a tool's input) use the built-in
one, and OpenSSL loads only for an input of ``LARGE`` bytes or more (where its speed pays
for its start-up), for a stream the caller says is large, when the process has loaded it
anyway (then it costs nothing more), or when this Python has no built-in SHA-256 (a build
without it, some FIPS distributions). Both compute the same function; which one ran is
never visible in a digest. ``tests/kernel/test_digest.py`` drives both side by side.

``compare_digest`` is the standard library's constant-time comparison (``hmac``'s own, from
``_operator``).
"""

from __future__ import annotations

import sys
from _operator import _compare_digest as compare_digest

TYPE_CHECKING = False  # typing itself is a start-up cost this module exists to avoid
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Protocol

    class Hash(Protocol):
        """What ``hashlib.sha256()`` and the built-in one both are."""

        def update(self, data: bytes | bytearray | memoryview, /) -> None: ...
        def digest(self) -> bytes: ...
        def hexdigest(self) -> str: ...
        def copy(self) -> Hash: ...


__all__ = [
    "LARGE",
    "HmacSha256",
    "compare_digest",
    "hmac_hex_many",
    "hmac_pads",
    "sha256",
    "sha256_hex",
]

LARGE = 1 << 20  # from here on OpenSSL's speed outweighs its ~3 ms start-up


def _find_builtin() -> Callable[[bytes], Hash] | None:
    for name in ("_sha256", "_sha2"):  # 3.11; 3.12 and later
        try:
            module = __import__(name)
        except ImportError:
            continue
        made: Callable[[bytes], Hash] | None = getattr(module, "sha256", None)
        if made is not None:
            return made
    return None


_BUILTIN = _find_builtin()


def _openssl() -> Callable[[bytes], Hash]:
    import hashlib

    return hashlib.sha256


def _use_openssl(size: int) -> bool:
    return _BUILTIN is None or size >= LARGE or "_hashlib" in sys.modules


def sha256(data: bytes = b"", *, large: bool = False) -> Hash:
    """A SHA-256 hash object over ``data``; ``large=True`` for a stream of many bytes."""
    if large or _use_openssl(len(data)):
        return _openssl()(data)
    assert _BUILTIN is not None  # _use_openssl is true without one
    return _BUILTIN(data)


def sha256_hex(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return sha256(data).hexdigest()


_TRANS_5C = bytes(x ^ 0x5C for x in range(256))
_TRANS_36 = bytes(x ^ 0x36 for x in range(256))


class HmacSha256:
    """HMAC-SHA256 (RFC 2104) under one key: ``mac(data)`` is ``hmac.new(key, data, sha256)``.

    The padded inner and outer states are hashed once per key and copied per message (the
    key is kept too, for OpenSSL's one-shot HMAC once that library is loaded); ``repr``
    shows neither.
    """

    __slots__ = ("_inner", "_key", "_outer")

    def __init__(self, key: bytes) -> None:
        self._key = key
        if len(key) > 64:
            key = sha256(key).digest()
        key = key.ljust(64, b"\0")
        self._inner = sha256(key.translate(_TRANS_36))
        self._outer = sha256(key.translate(_TRANS_5C))

    def __repr__(self) -> str:
        return "HmacSha256(<key hidden>)"

    def digest(self, data: bytes) -> bytes:
        if len(data) >= LARGE or "_hashlib" in sys.modules:
            import hmac

            return hmac.digest(self._key, data, "sha256")
        inner = self._inner.copy()
        inner.update(data)
        outer = self._outer.copy()
        outer.update(inner.digest())
        return outer.digest()

    def hexdigest(self, data: bytes) -> str:
        return self.digest(data).hex()


def hmac_pads(key: bytes) -> tuple[Callable[[], Hash], Callable[[], Hash]]:
    """HMAC-SHA256's two padded states under ``key``, hashed once, as functions that copy
    them: ``inner = a(); inner.update(data); outer = b(); outer.update(inner.digest())``
    and ``outer`` is ``hmac.new(key, data, sha256)`` (what :func:`hmac_hex_many` does, for a
    loop that inlines it). OpenSSL's SHA-256 (loaded once: such a process hashes enough to
    pay for it)."""
    if len(key) > 64:
        key = _openssl()(key).digest()
    key = key.ljust(64, b"\0")
    return _openssl()(key.translate(_TRANS_36)).copy, _openssl()(key.translate(_TRANS_5C)).copy


def hmac_hex_many(key: bytes) -> Callable[[bytes], str]:
    """``hmac.new(key, data, sha256).hexdigest()`` as a function of ``data``, for a process
    that MACs many short messages under one key (a verification pass over a journal).

    The padded inner and outer states are hashed once and copied per message
    (:func:`hmac_pads`): half the time of a one-shot ``hmac.digest`` of a 64-byte message,
    which pads and hashes the key every time.
    """
    new_inner, new_outer = hmac_pads(key)

    def hexmac(data: bytes) -> str:
        inner = new_inner()
        inner.update(data)
        outer = new_outer()
        outer.update(inner.digest())
        return outer.hexdigest()

    return hexmac
