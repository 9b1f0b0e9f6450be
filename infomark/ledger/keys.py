"""The HMAC key that signs evidence and journal rows.

``<home>/key`` holds 32 random bytes, created 0600; ``INFOMARK_KEY`` (hex) overrides
it. A key file readable by group or world is refused. The key is never printed or
logged: :class:`Key` hides it from ``repr``.
"""

from __future__ import annotations

import os
import stat

from infomark.kernel.contexts import suppress
from infomark.kernel.digest import HmacSha256, compare_digest, sha256_hex
from infomark.kernel.errors import KeyFileError
from infomark.kernel.records import dataclass, field
from infomark.ledger.home import ensure_private_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    from _typeshed import StrPath

__all__ = ["KEY_ENV", "Key", "check_private", "load_key", "write_private"]

KEY_ENV = "INFOMARK_KEY"
_KEY_BYTES = 32


@dataclass(frozen=True, slots=True)
class Key:
    """A secret HMAC key and its public id (safe to record and print)."""

    secret: bytes = field(repr=False)
    key_id: str
    _hmac: HmacSha256 = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hmac", HmacSha256(self.secret))

    @classmethod
    def from_bytes(cls, secret: bytes) -> Key:
        if len(secret) < 16:
            raise KeyFileError("the key must be at least 16 bytes (32 recommended)")
        kid = sha256_hex(b"infomark-key-id\x00" + secret)[:16]
        return cls(secret=secret, key_id=kid)

    def mac(self, data: bytes) -> str:
        return self._hmac.hexdigest(data)

    def verify(self, data: bytes, mac_hex: str) -> bool:
        """Constant-time comparison of ``mac_hex`` with the MAC of ``data``."""
        return compare_digest(self.mac(data), mac_hex)


def check_private(path: StrPath) -> None:
    """Refuse a secret file that group or others can read or write."""
    mode = stat.S_IMODE(os.stat(path).st_mode)
    if mode & 0o077:
        raise KeyFileError(
            f"{path} is readable or writable by group/others (mode {mode:o}); "
            f"run `chmod 600 {path}`"
        )


def write_private(path: StrPath, data: bytes, *, replace: bool = False) -> bool:
    """Create ``path`` with mode 0600, atomically and complete; False if it already exists
    (with ``replace``: put it in place of what is there, and True).

    Writes a private temp file, then links (or renames) it into place, so a concurrent
    creator loses cleanly and no reader ever sees a half-written secret.
    """
    folder, name = os.path.split(os.fspath(path))
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.{os.urandom(4).hex()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if replace:
            os.replace(tmp, path)
            return True
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        return True
    finally:
        with suppress(FileNotFoundError):
            os.unlink(tmp)


def load_key(home: StrPath, *, create: bool = True) -> Key:
    """Load the key from ``INFOMARK_KEY`` or ``<home>/key``, creating the file if allowed."""
    env = os.environ.get(KEY_ENV)
    if env:
        try:
            return Key.from_bytes(bytes.fromhex(env.strip()))
        except ValueError:
            # from None: the cause would be the parse error of the key's own text
            raise KeyFileError(f"{KEY_ENV} must be hex (e.g. 64 hex digits)") from None
    path = os.path.join(home, "key")
    if not os.path.exists(path):
        if not create:
            raise KeyFileError(f"no key at {path}; run `infomark init`")
        ensure_private_dir(home)
        secret = os.urandom(_KEY_BYTES)
        if write_private(path, secret):
            return Key.from_bytes(secret)
    check_private(path)
    with open(path, "rb") as f:
        secret = f.read()
    if len(secret) != _KEY_BYTES:
        raise KeyFileError(f"{path} must hold exactly {_KEY_BYTES} bytes; it holds {len(secret)}")
    return Key.from_bytes(secret)
