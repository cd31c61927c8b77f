"""Gzip for the HTTP transport's answers, when the client accepts it (the WSGI server's request threads).

`respond` wraps the WSGI app: a JSON answer over MIN_BYTES is compressed whole; an event stream
event by event, each flushed (Z_SYNC_FLUSH) so that a live notification is not held back.
Every answer says `Vary: Accept-Encoding`. Figures: docs/performance.md#compression.

BREACH (a secret guessed from the compressed length of answers that reflect an attacker's text
beside it): the sessions' secrets are redacted from every answer before it is sent
(redaction.py), and the bearer token and Mcp-Session-Id travel only in uncompressed headers,
so no secret of ours is in a compressed body. Request bodies are never decompressed (http.py
refuses them, 415): no compression bomb past --max-message-bytes."""

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
    gzip = accepts_gzip(environ.get("HTTP_ACCEPT_ENCODING")) and "content-encoding" not in named
    if gzip and kind == "text/event-stream":
        start_response(status, [*headers, ("Content-Encoding", "gzip")])
        return _GzipStream(body)
    if not gzip or kind != "application/json" or int(named.get("content-length") or 0) < MIN_BYTES:
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
