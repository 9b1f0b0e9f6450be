"""kernel/digest: the built-in SHA-256 and our HMAC equal hashlib's and hmac's, byte for byte."""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
import sys

from hypothesis import example, given
from hypothesis import strategies as st

from infomark.kernel import digest
from infomark.kernel.digest import (
    LARGE,
    HmacSha256,
    compare_digest,
    hmac_hex_many,
    sha256,
    sha256_hex,
)
from infomark.ledger.keys import Key


@given(st.binary(max_size=300), st.binary(max_size=300))
def test_builtin_sha256_is_sha256(head: bytes, tail: bytes) -> None:
    assert digest._BUILTIN is not None, "this CPython ships _sha256/_sha2: the fast path is tested"
    h = digest._BUILTIN(head)
    h.update(tail)
    assert h.hexdigest() == hashlib.sha256(head + tail).hexdigest()
    assert h.copy().digest() == hashlib.sha256(head + tail).digest()
    assert sha256(head + tail).hexdigest() == sha256_hex(head + tail) == h.hexdigest()


@given(key=st.binary(min_size=0, max_size=200), data=st.binary(max_size=500))
@example(key=b"k" * 64, data=b"")  # exactly one block: no hashing of the key
@example(key=b"k" * 65, data=b"x")  # one byte over: the key is hashed first
def test_hmac_is_rfc2104(key: bytes, data: bytes) -> None:
    mac = HmacSha256(key)
    want = hmac.new(key, data, hashlib.sha256)
    # hashlib is loaded in this process, so digest() would take OpenSSL's HMAC: drive the
    # built-in path directly as well
    inner = mac._inner.copy()
    inner.update(data)
    outer = mac._outer.copy()
    outer.update(inner.digest())
    assert outer.hexdigest() == want.hexdigest()
    assert mac.hexdigest(data) == want.hexdigest()
    assert mac.digest(data) == want.digest()
    assert hmac_hex_many(key)(data) == want.hexdigest()  # the verification pass's


def test_rfc4231_case_2() -> None:
    mac = HmacSha256(b"Jefe").hexdigest(b"what do ya want for nothing?")
    assert mac == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"


def test_key_mac_unchanged_and_hidden() -> None:
    secret = bytes(range(32))
    key = Key.from_bytes(secret)
    assert key.mac(b"row") == hmac.new(secret, b"row", hashlib.sha256).hexdigest()
    assert key.verify(b"row", key.mac(b"row"))
    assert not key.verify(b"row", "0" * 64)
    assert secret.hex() not in repr(key) and "hidden" in repr(key._hmac)
    assert str(secret) not in repr(key._hmac)


def test_compare_digest_is_the_constant_time_one() -> None:
    assert compare_digest is hmac.compare_digest or compare_digest.__module__ == "_operator"
    assert compare_digest("ab", "ab") and not compare_digest("ab", "ac")


_PROBE = """
import json, sys
from infomark.kernel.digest import HmacSha256, LARGE, sha256
small = sha256(b"x" * 1000).hexdigest()
mac = HmacSha256(b"k" * 32).hexdigest(b"row")
before = "_hashlib" in sys.modules
big = sha256(b"y" * LARGE).hexdigest()
print(json.dumps({"before": before, "after": "_hashlib" in sys.modules, "small": small,
                  "mac": mac, "big": big}))
"""


def test_openssl_loads_only_for_large_inputs() -> None:
    """A process hashing small inputs never loads OpenSSL; a large one does, same digests."""
    out = subprocess.run(
        [sys.executable, "-I", "-c", _PROBE], capture_output=True, text=True, check=True
    )
    got = json.loads(out.stdout)
    assert got["before"] is False and got["after"] is True
    assert got["small"] == hashlib.sha256(b"x" * 1000).hexdigest()
    assert got["mac"] == hmac.new(b"k" * 32, b"row", hashlib.sha256).hexdigest()
    assert got["big"] == hashlib.sha256(b"y" * LARGE).hexdigest()
