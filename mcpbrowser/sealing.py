"""Sealing blobs at rest: pure functions, called from any thread.

The resume state holds cookies, and redacted values must not sit in the
database in clear. Only the standard library is available, so this is a
conventional construction from it: a SHA-256 keystream in counter mode (SHA-256
as a PRF), encrypt-then-MAC with HMAC-SHA256. The key lives in a separate
0600 file next to the database, so the database alone reveals nothing.
"""

import hashlib
import hmac
import os

VERSION = b"s1"


def _keystream(key, nonce, length):
    blocks = (hashlib.sha256(key + nonce + i.to_bytes(8, "big")).digest() for i in range(length // 32 + 1))
    return b"".join(blocks)[:length]


def _xor(data, stream):
    return (int.from_bytes(data, "big") ^ int.from_bytes(stream, "big")).to_bytes(len(data), "big")


def seal(key, data):
    nonce = os.urandom(16)
    cipher = _xor(data, _keystream(key, nonce, len(data)))
    tag = hmac.new(key, nonce + cipher, hashlib.sha256).digest()
    return VERSION + nonce + tag + cipher


def unseal(key, blob):
    """The plaintext, or ValueError when the blob was not sealed with this key or was altered."""
    if blob[:2] != VERSION or len(blob) < 50:
        raise ValueError("not a sealed blob")
    nonce, tag, cipher = blob[2:18], blob[18:50], blob[50:]
    if not hmac.compare_digest(tag, hmac.new(key, nonce + cipher, hashlib.sha256).digest()):
        raise ValueError("sealed with another key, or altered")
    return _xor(cipher, _keystream(key, nonce, len(cipher)))


def load_key(path):
    """Read the key file, creating it (0600) with a fresh random key the first time."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        with open(path, "rb") as f:
            return f.read()
    key = os.urandom(32)
    with os.fdopen(fd, "wb") as f:
        f.write(key)
    return key
