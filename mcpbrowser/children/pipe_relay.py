"""A session's stand-in for Playwright's Node.js driver: relays its pipe to the launcher's session socket.

Runs as its own small process, one per session, started by that session thread's sync_playwright() in place of `node
cli.js run-driver` (see attach.driver_hook). Its own two threads: the main one copies browser -> session, the other
session -> browser. Standard library only, so that `python -I -S` starts it in a few milliseconds and about 5 MB PSS.

Why: a real driver per session is a Node.js process of its own that parses and relays every message once more. The
launcher takes sessions on a Unix socket (launch_server.js, servePipe), so this only translates the framing:
- session side (our stdin/stdout): a 4-byte little-endian length, then the JSON;
- browser side (the socket): the JSON, then a NUL byte (JSON text never holds one).

argv: [this file, socket path, "run-driver"]. When either side closes, we exit,
and the other side sees its pipe or socket close.
"""

import contextlib
import os
import socket
import sys
import threading

CHUNK = 1 << 16


def to_browser(stdin_fd, sock):
    """Session -> browser: drop each length prefix, end each message with NUL; streams big messages."""
    header = b""
    remaining = 0  # bytes left of the current message's body
    while True:
        data = os.read(stdin_fd, CHUNK)
        if not data:
            return
        out = []
        pos = 0
        while pos < len(data):
            if remaining == 0:
                need = 4 - len(header)
                header += data[pos:pos + need]
                pos += need
                if len(header) < 4:
                    break
                remaining = int.from_bytes(header, "little")
                header = b""
                if remaining == 0:
                    out.append(b"\0")
                continue
            take = min(remaining, len(data) - pos)
            out.append(data[pos:pos + take])
            pos += take
            remaining -= take
            if remaining == 0:
                out.append(b"\0")
        if out:
            sock.sendall(b"".join(out))


def to_session(sock, stdout_fd):
    """Browser -> session: each NUL-ended message goes out behind its length."""
    pending = []
    while True:
        data = sock.recv(CHUNK)
        if not data:
            return
        out = []
        start = 0
        while True:
            end = data.find(b"\0", start)
            if end < 0:
                if start < len(data):
                    pending.append(data[start:])
                break
            pending.append(data[start:end])
            message = b"".join(pending)
            pending = []
            out.append(len(message).to_bytes(4, "little"))
            out.append(message)
            start = end + 1
        if out:
            view = memoryview(b"".join(out))
            while view:
                view = view[os.write(stdout_fd, view):]


def main(argv):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(argv[1])
    except (OSError, IndexError) as exc:
        # Our stdout closing tells the session thread; stderr is the server's log.
        sys.stderr.write(f"mcpbrowser pipe relay: cannot reach the browser at {argv[1:2]}: {exc}\n")
        return 1

    def upstream():
        with contextlib.suppress(OSError):
            to_browser(sys.stdin.fileno(), sock)
        os._exit(0)  # the session let go (or the browser did): the main thread may be in recv

    threading.Thread(target=upstream, daemon=True).start()
    with contextlib.suppress(OSError):
        to_session(sock, sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    os._exit(main(sys.argv))
