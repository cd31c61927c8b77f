"""Sealing blobs at rest: pure functions, called from any thread.

The resume state holds cookies, and redacted values must not sit in the database in clear.
Blobs are sealed with AES-256-GCM (`cryptography`) under a key derived with HKDF from a
separate 0600 key file next to the database, so the database alone reveals nothing. Servers
sharing one history on PostgreSQL share a key file instead (--db-key-file, `read_key_file`):
one key per line, the first seals and every one opens, so a key can be rotated.

Format "s2": b"s2" + 12-byte nonce + ciphertext and 16-byte tag, the version bound as
associated data. The older "s1" (SHA-256 counter mode with HMAC-SHA256) is opened, never
written, so saved sessions survive the upgrade; the store re-seals them on first read (`is_legacy`)."""

import contextlib
import hashlib
import hmac
import os
import re
import stat

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

VERSION = b"s2"
LEGACY = b"s1"
NONCE = 12


def _aead(key):
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"mcpbrowser seal s2").derive(key)
    return AESGCM(derived)


def seal(key, data):
    nonce = os.urandom(NONCE)
    return VERSION + nonce + _aead(key).encrypt(nonce, data, VERSION)


def unseal(key, blob):
    """The plaintext, or ValueError when the blob was not sealed with this key or was altered."""
    if blob[:2] == LEGACY:
        return _unseal_legacy(key, blob)
    if blob[:2] != VERSION or len(blob) < 2 + NONCE + 16:
        raise ValueError("not a sealed blob")
    try:
        return _aead(key).decrypt(blob[2:2 + NONCE], blob[2 + NONCE:], VERSION)
    except InvalidTag:
        raise ValueError("sealed with another key, or altered") from None


def unseal_any(keys, blob):
    """(plaintext, index of the key that opened it); ValueError when none of the keys does."""
    for index, key in enumerate(keys):
        try:
            return unseal(key, blob), index
        except ValueError:
            continue
    raise ValueError("sealed with another key, or altered")


def is_legacy(blob):
    """True for a blob in the old "s1" format, which should be sealed again."""
    return blob[:2] == LEGACY


def _unseal_legacy(key, blob):
    """Open an "s1" blob (read-only; see the module docstring)."""
    if len(blob) < 50:
        raise ValueError("not a sealed blob")
    nonce, tag, cipher = blob[2:18], blob[18:50], blob[50:]
    if not hmac.compare_digest(tag, hmac.new(key, nonce + cipher, hashlib.sha256).digest()):
        raise ValueError("sealed with another key, or altered")
    stream = b"".join(hashlib.sha256(key + nonce + i.to_bytes(8, "big")).digest() for i in range(len(cipher) // 32 + 1))
    return bytes(a ^ b for a, b in zip(cipher, stream, strict=False))  # the stream is cut to the cipher's length


KEY_BYTES = 32
HEX_KEY = re.compile(r"[0-9a-fA-F]{64}")


def key_id(key):
    """A short public name of a key (logged, so that servers can be seen to share one): a hash, not the key."""
    return hashlib.sha256(b"mcpbrowser key id\0" + key).hexdigest()[:12]


def read_key_file(path):
    """The keys of a shared key file, the sealing one first; OSError, or ValueError saying what is wrong."""
    # 32 bytes are one raw key (`head -c 32 /dev/urandom`, or a key file the server made);
    # else lines of 64 hex digits, `#` comments and blank lines skipped. A message never
    # quotes the file: a mistyped line is still most of a key.
    mode = stat.S_IMODE(os.stat(path).st_mode)
    if mode & 0o077:
        # A key others may read unseals every login the group saved; one others may write
        # could be swapped for theirs. Refused, as ssh refuses a private key others can read.
        raise ValueError(f"it is readable or writable by others (mode {mode:04o}): chmod 600 it")
    with open(path, "rb") as f:
        data = f.read(64 * 1024)
    if len(data) == KEY_BYTES:
        return [data]
    keys = []
    for number, line in enumerate(data.decode("ascii", "replace").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if not HEX_KEY.fullmatch(line):
            raise ValueError(f"line {number} is not 64 hex digits (want {KEY_BYTES} random bytes, "
                             "or lines of 64 hex digits: the first seals, every one opens)")
        keys.append(bytes.fromhex(line))
    if not keys:
        raise ValueError("it holds no key (want a line of 64 hex digits: openssl rand -hex 32)")
    return keys


def load_key(path):
    """Read the key file, creating it (0600) with a fresh random key the first time.

    Two servers starting at once on a new database must end up with one key, and no
    reader may ever see a file that is still being written (an empty key would seal
    with nothing secret): the key is written whole to a private temporary file, then
    linked to its name, which fails when another process linked first, whose key wins."""
    for _ in range(3):
        try:
            with open(path, "rb") as f:
                key = f.read()
        except FileNotFoundError:
            key = None
        if key is not None and len(key) == KEY_BYTES:
            return key
        if key:
            raise ValueError(f"the key file {path} is damaged ({len(key)} bytes, not {KEY_BYTES}); "
                             "move it away to start with a new key (saved sessions and logins will not open)")
        if key is not None:
            # Empty: left by an earlier version that was stopped (or ran out of disk)
            # between creating the file and writing it. Nothing can be sealed with it.
            with contextlib.suppress(FileNotFoundError):  # another process replaced it first
                os.unlink(path)
        _link_new_key(path)
    raise OSError(f"the key file {path} keeps disappearing")


def _link_new_key(path):
    tmp = f"{path}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(KEY_BYTES))
            f.flush()
            os.fsync(f.fileno())
        with contextlib.suppress(FileExistsError):  # another process linked its key first: the caller reads that one
            os.link(tmp, path)
    finally:
        os.unlink(tmp)
