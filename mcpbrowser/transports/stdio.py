"""MCP over stdio: newline-delimited JSON-RPC on stdin and stdout, for one client, over `McpConnection`.

Threads: the reader thread hands each line of stdin (with a size limit) to the connection; any
thread may `send`, which writes one whole line under a lock; the main thread `wait`s for stdin's
end or a signal, then shuts down."""

import threading
from concurrent.futures import Future

from mcpbrowser.core.face import CoreFace
from mcpbrowser.logs import log
from mcpbrowser.transports import protocol
from mcpbrowser.transports.mcp_connection import McpConnection


class StdioServer:
    """One MCP connection over a pair of byte streams."""

    def __init__(self, core: "CoreFace | Future[CoreFace]", infile, outfile, max_message_bytes):
        """max_message_bytes: the longest line accepted (--max-message-bytes)."""
        self._in, self._out = infile, outfile
        self._write_lock = threading.Lock()
        self.done = threading.Event()
        self.max_message_bytes = max_message_bytes
        self.connection = McpConnection(core, self.send)

    # -- MAIN THREAD -----------------------------------------------------------

    def start(self):
        """Start reading stdin; answers flow from here on."""
        self.connection.open()
        threading.Thread(target=self._read_loop, name="stdin-reader", daemon=True).start()
        return self

    def wait(self):
        """Until stdin closes or `done` is set (by a signal handler), then shut down."""
        # Waking now and then: a signal's handler runs only once the main thread runs bytecode again.
        while not self.done.wait(0.1):
            pass
        log.info("shutting down", extra={"event": "shutdown"})
        self.connection.core.close()
        self.connection.close()

    # -- ANY THREAD ------------------------------------------------------------

    def send(self, message, related=None):
        """Write one message; `related` (the request it belongs to) matters only to HTTP: stdio has one pipe."""
        data = protocol.encode(message)
        with self._write_lock:
            try:
                self._out.write(data)
                self._out.flush()
            except (BrokenPipeError, ValueError, OSError):
                self.done.set()  # the client is gone

    # -- READER THREAD ---------------------------------------------------------

    def _read_loop(self):
        limit = self.max_message_bytes
        try:
            while True:
                line = self._in.readline(limit + 1)
                if not line:
                    break
                if len(line) > limit and not line.endswith(b"\n"):
                    tail = self._discard_rest_of_line()
                    request_id = protocol.oversized_request_id(line, line[-300:] + tail)
                    self.send(protocol.error(request_id, protocol.INVALID_REQUEST,
                                             f"Invalid request: message longer than {limit} bytes "
                                             "(--max-message-bytes): send less in one call"))
                elif line.strip():
                    self.connection.handle_line(line)
        except Exception:
            log.exception("reader failed", extra={"event": "reader_failed"})
        finally:
            self.done.set()

    def _discard_rest_of_line(self):
        """Read past the rest of an oversized line; return its last few hundred bytes (where an id may be)."""
        tail = b""
        while True:
            chunk = self._in.readline(65536)
            tail = (tail + chunk)[-300:]
            if not chunk or chunk.endswith(b"\n"):
                return tail
