"""Gzip for the HTTP transport's answers, when the client accepts it (the WSGI server's request threads).

`respond` wraps the WSGI app: a JSON answer over MIN_BYTES is compressed whole; an event
stream is compressed event by event, each flushed (Z_SYNC_FLUSH) so that the client can
decode it as soon as it arrives and a live notification is not held back for the next
one. Every answer says `Vary: Accept-Encoding`. Measured (scripts/bench.py --http-only): the
official client's tools/list travels as 3.1 KB instead of 15.5 KB, a long page's snapshot as
4.1 KB instead of 59 KB, for 0.2 ms of CPU (level 6).

Compression next to secrets (BREACH): an answer that reflects text an attacker chose beside a
secret lets the attacker guess the secret from the answer's compressed length, if they can
watch lengths on the wire and make the agent repeat calls. The secrets the sessions met are
redacted from every answer before it is sent (redaction.py), the bearer token and the
Mcp-Session-Id travel only in headers, which are not compressed, so no secret of ours is in a
compressed body to guess.

Request bodies are not decompressed: a POST with a Content-Encoding other than identity is
refused (http.py, 415), so a small compressed body cannot expand into a large one (a
compression bomb) past --max-message-bytes."""

import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

MIN_BYTES = 1024  # a JSON answer smaller than this goes as is: an action's answer (~300-600 bytes) gains little
LEVEL = 6  # zlib's default: a 15 KB tools/list in ~0.2 ms


def accepts_gzip(header: str | None) -> bool:
    """Whether an Accept-Encoding value lets gzip be sent (RFC 9110 12.5.3): gzip (or x-gzip, or *) with a
    q above 0, and not below the q the client gave identity; a header that says nothing means no.
    A client that refuses both gets identity all the same (the RFC allows it, rather than a 406)."""
    q: dict[str, float] = {}
    for item in (header or "").split(","):
        coding, *params = (part.strip() for part in item.split(";"))
        weight = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    weight = min(max(float(value), 0.0), 1.0)
                except ValueError:
                    weight = 0.0  # unreadable: as if not offered
        if coding:
            q.setdefault(coding.lower(), weight)
    star = q.get("*")
    gzip = q.get("gzip", q.get("x-gzip", star if star is not None else 0.0))
    identity = q.get("identity", star)
    return gzip > 0 and (identity is None or gzip >= identity)


def respond(app: Callable[..., Iterable[bytes]], environ: dict, start_response: Callable) -> Iterable[bytes]:
    """Run the WSGI app `app`, compressing its answer when the client accepts gzip."""
    head: list[Any] = []

    def capture(status, headers, exc_info=None):
        head[:] = [status, list(headers)]
        return _no_write

    body = app(environ, capture)
    status, headers = head
    headers.append(("Vary", "Accept-Encoding"))
    named = {name.lower(): value for name, value in headers}
    kind = named.get("content-type", "").split(";")[0].strip()
    if not accepts_gzip(environ.get("HTTP_ACCEPT_ENCODING")) or "content-encoding" in named:
        start_response(status, headers)
        return body
    if kind == "text/event-stream":
        start_response(status, [*headers, ("Content-Encoding", "gzip")])
        return _GzipStream(body)
    if kind != "application/json" or int(named.get("content-length") or 0) < MIN_BYTES:
        start_response(status, headers)
        return body
    try:
        data = b"".join(body)
    finally:
        _close(body)
    packer = zlib.compressobj(LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # 16+: a gzip header and trailer
    data = packer.compress(data) + packer.flush()
    headers = [(n, v) for n, v in headers if n.lower() != "content-length"]
    start_response(status, [*headers, ("Content-Encoding", "gzip"), ("Content-Length", str(len(data)))])
    return [data]


class _GzipStream:
    """An event stream's body, gzip-compressed chunk by chunk; each chunk flushed so it can be read at once."""

    def __init__(self, body: Iterable[bytes]) -> None:
        self._body = body

    def __iter__(self) -> Iterator[bytes]:
        packer = zlib.compressobj(LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        for chunk in self._body:
            yield packer.compress(chunk) + packer.flush(zlib.Z_SYNC_FLUSH)
        yield packer.flush()

    def close(self) -> None:
        _close(self._body)


def _close(body: Iterable[bytes]) -> None:
    close = getattr(body, "close", None)
    if close is not None:
        close()


def _no_write(data: bytes) -> None:
    raise RuntimeError("the MCP app answers with its body, never through write()")
