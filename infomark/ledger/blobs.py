"""Content-addressed storage of tool outputs under ``<home>/blobs`` (sha256)."""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path

__all__ = ["BlobStore"]


class BlobStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def path_for(self, digest: str) -> Path:
        hexd = digest.removeprefix("sha256:")
        return self.root / hexd[:2] / hexd[2:]

    def put(self, data: bytes) -> str:
        """Store ``data`` (idempotent, atomic) and return ``sha256:<hex>``."""
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        path = self.path_for(digest)
        if path.exists():
            return digest
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        with tmp.open("wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        return digest

    def get(self, digest: str) -> bytes | None:
        try:
            return self.path_for(digest).read_bytes()
        except OSError:
            return None

    def verify(self, digest: str) -> bool | None:
        """True when the blob matches its digest, False when it does not, None when missing."""
        data = self.get(digest)
        if data is None:
            return None
        return "sha256:" + hashlib.sha256(data).hexdigest() == digest
