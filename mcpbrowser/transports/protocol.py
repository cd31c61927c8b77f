"""JSON-RPC 2.0 framing and MCP parameter validation; pure functions, run on the reader thread.

`id` and `method` are checked by hand (a request with `"id": null` would otherwise parse as a notification,
never answered), and so are `initialize`'s params, answered before the slow-to-import MCP types package
has loaded; every other request's params are validated with `mcp_types` models."""

import base64
import binascii
import json
import re
from typing import Any, NamedTuple

from mcpbrowser.page_strings import valid_text

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

HEADER_MISMATCH = -32020  # an HTTP routing header disagrees with the body (2026-07-28)
UNSUPPORTED_PROTOCOL_VERSION = -32022

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")  # reached through initialize
MODERN_VERSIONS = ("2026-07-28",)  # each request carries its version in _meta; no initialize
SUPPORTED_VERSIONS = HANDSHAKE_VERSIONS + MODERN_VERSIONS
DISCOVER_TTL_MS = 300_000  # server/discover's answer changes only with the server's flags: cached this long
LATEST_VERSION = HANDSHAKE_VERSIONS[-1]  # what initialize settles on when the client's is unknown
STRUCTURED_OUTPUT_SINCE = "2025-06-18"  # outputSchema / structuredContent appear in this revision

# The per-request envelope's keys (mcp_types' *_META_KEY constants; written out so that
# classifying a request does not wait for that package to import).
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"


class ProtocolError(Exception):
    """A fault answered with a JSON-RPC error object rather than a tool result."""

    def __init__(self, code, message, request_id=None, data=None):
        super().__init__(message)
        self.code, self.message, self.request_id, self.data = code, message, request_id, data


class Message(NamedTuple):
    kind: str  # "request", "notification", "malformed" (a notification we cannot read) or "response"
    id: Any
    method: Any
    params: dict
    body: dict


def valid_request_id(value):
    """Whether a request id (also one sent inside params: notifications/cancelled) could name one of ours."""
    # MCP forbids null ids; floats and bools compare equal to ints and would collide with them.
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def parse(line):
    """Decode one line of bytes into a Message, or raise ProtocolError."""
    try:
        body = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ProtocolError(PARSE_ERROR, f"Parse error: {str(exc)[:200]}") from None
    if not isinstance(body, dict):
        raise ProtocolError(INVALID_REQUEST, "Invalid request: a message must be a JSON object "
                                             "(batches are not supported)")
    if "method" not in body and ("result" in body or "error" in body):
        # Response-shaped: never answered, even when malformed, or two peers could trade errors for ever.
        return Message("response", body.get("id"), None, {}, body)
    has_id = "id" in body
    if not has_id and "method" in body:
        return _notification(body)
    request_id = body.get("id") if has_id and valid_request_id(body.get("id")) else None
    if body.get("jsonrpc") != "2.0":
        raise ProtocolError(INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0"', request_id)
    if has_id and not valid_request_id(body["id"]):
        raise ProtocolError(INVALID_REQUEST, "Invalid request: id must be a string or an integer")
    if "method" not in body:
        raise ProtocolError(INVALID_REQUEST, 'Invalid request: "method" is missing', request_id)
    method = body["method"]
    if not isinstance(method, str):
        raise ProtocolError(INVALID_REQUEST, 'Invalid request: "method" must be a string', request_id)
    params = {} if body.get("params") is None else body["params"]
    if not isinstance(params, dict):
        raise ProtocolError(INVALID_PARAMS, '"params" must be an object', request_id)
    return Message("request" if has_id else "notification", request_id, method, params, body)


# A top-level member `"id": <string or integer>` that closes the line: the TypeScript SDK writes the
# id after the params. Inside a string its quotes would be escaped; in a nested object a `}` follows.
_TRAILING_ID = re.compile(rb',[ \t\r\n]*"id"[ \t\r\n]*:[ \t\r\n]*(-?\d{1,18}|"[^"\\]{0,200}")[ \t\r\n]*}[ \t\r\n]*$')


def _skip_space(text, pos):
    while text[pos:pos + 1] in (" ", "\t", "\r", "\n"):
        pos += 1
    return pos


def _leading_members(text):
    """Yield a JSON object's top-level (key, value) pairs in order, until the text is cut or breaks."""
    decoder = json.JSONDecoder()
    pos = _skip_space(text, 0)
    if text[pos:pos + 1] != "{":
        return
    pos += 1
    while True:
        try:
            key, pos = decoder.raw_decode(text, _skip_space(text, pos))
            pos = _skip_space(text, pos)
            if not isinstance(key, str) or text[pos:pos + 1] != ":":
                return
            value, pos = decoder.raw_decode(text, _skip_space(text, pos + 1))
        except (ValueError, RecursionError):
            return
        yield key, value
        pos = _skip_space(text, pos)
        if text[pos:pos + 1] != ",":
            return
        pos += 1


def oversized_request_id(head, tail):
    """The id of a request too long to read, from its first bytes (head) or its last (tail: the TypeScript
    client writes it last), or None; answered with a null id, the client would wait for ever for its own.
    Only a message whose method comes before the cut is a request (a response's id is our request's)."""
    method = request_id = None
    for key, value in _leading_members(head.decode("utf-8", "replace")):
        if key in ("result", "error"):
            return None
        if key == "method":
            method = value
        elif key == "id":
            request_id = value
        if method is not None and request_id is not None:
            break
    if not isinstance(method, str):
        return None
    if request_id is None:
        found = _TRAILING_ID.search(tail)
        if found is not None:
            request_id = json.loads(found.group(1))
    return request_id if valid_request_id(request_id) else None


def _notification(body):
    """A message with a method and no id; one we cannot read is "malformed": logged and dropped, never
    answered (JSON-RPC never answers a notification)."""
    method, params = body["method"], {} if body.get("params") is None else body["params"]
    if body.get("jsonrpc") != "2.0" or not isinstance(method, str) or not isinstance(params, dict):
        return Message("malformed", None, method if isinstance(method, str) else None, {}, body)
    return Message("notification", None, method, params, body)


def negotiate(params, request_id):
    """The protocol version to answer `initialize` with, after checking its params by hand."""
    version = params.get("protocolVersion")
    if not isinstance(version, str):
        raise ProtocolError(INVALID_PARAMS, "initialize: protocolVersion must be a string", request_id)
    for name in ("capabilities", "clientInfo"):
        if name in params and not isinstance(params[name], dict):
            raise ProtocolError(INVALID_PARAMS, f"initialize: {name} must be an object", request_id)
    return version if version in HANDSHAKE_VERSIONS else LATEST_VERSION


def carries_envelope(msg):
    """Whether a request names a protocol version in its `_meta` (2026-07-28 style), valid or not."""
    meta = msg.params.get("_meta")
    return isinstance(meta, dict) and PROTOCOL_VERSION_KEY in meta


def check_envelope(msg):
    """A per-request envelope: a supported 2026-era version and the client's capabilities, else an error."""
    meta = msg.params["_meta"] if isinstance(msg.params.get("_meta"), dict) else {}
    missing = [key for key in (PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY) if key not in meta]
    if missing:
        raise ProtocolError(INVALID_PARAMS, f"Invalid params: _meta is missing {', '.join(missing)}", msg.id)
    version = meta[PROTOCOL_VERSION_KEY]
    if not isinstance(version, str):
        raise ProtocolError(INVALID_PARAMS, "Invalid params: the protocol version in _meta must be a string", msg.id)
    if version not in MODERN_VERSIONS:
        raise ProtocolError(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", msg.id,
                            {"supported": list(MODERN_VERSIONS), "requested": version})


def check_paginated(params, request_id):
    """tools/list params, checked by hand: clients send it right after initialize, before
    the MCP types package would have finished importing."""
    if "cursor" in params and not isinstance(params["cursor"], str):
        raise ProtocolError(INVALID_PARAMS, "Invalid params: cursor must be a string", request_id)
    if "_meta" in params and not isinstance(params["_meta"], dict):
        raise ProtocolError(INVALID_PARAMS, "Invalid params: _meta must be an object", request_id)


def validated(model_name, params, request_id):
    """Validate params with the named mcp_types model; bad params are -32602."""
    import mcp_types
    from pydantic import ValidationError

    try:
        return getattr(mcp_types, model_name).model_validate(params)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'params'}: {e['msg']}" for e in exc.errors()[:5])
        raise ProtocolError(INVALID_PARAMS, f"Invalid params: {problems}", request_id) from None


def dumps(message):
    """A JSON-RPC message as the bytes every transport writes: ASCII JSON without a lone surrogate in it."""
    text = json.dumps(message, separators=(",", ":"))
    if "\\ud" in text:  # an escaped surrogate: of a pair (an emoji), or a lone one
        # The last line of defence (page text is made valid as it arrives, session/attach.py): the official
        # client drops a whole answer with a lone surrogate escaped in it, so one goes as U+FFFD.
        valid = valid_text(message)
        if valid is not message:
            text = json.dumps(valid, separators=(",", ":"))
    return text.encode("ascii")


def encode(message):
    """One JSON-RPC message as a newline-terminated line."""
    return dumps(message) + b"\n"


def result(request_id, value):
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def error(request_id, code, message, data=None):
    err = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": err}


def notification(method, params):
    return {"jsonrpc": "2.0", "method": method, "params": params}


_BASE64_HEADER = re.compile(r"^=\?base64\?(.*)\?=$")


def decode_header_value(value):
    """An HTTP header value as the 2026-07-28 client wrote it: verbatim, or `=?base64?...?=` for
    text that is not plain ASCII; None when that wrapping is broken."""
    match = _BASE64_HEADER.fullmatch(value)
    if match is None:
        return value
    try:
        return base64.b64decode(match.group(1), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def elicitation_params(message, version):
    """An elicitation that asks yes or no (accept or decline) about `message`."""
    params = {"message": message, "requestedSchema": {"type": "object", "properties": {}}}
    if version >= "2025-11-25":
        params["mode"] = "form"
    return params
