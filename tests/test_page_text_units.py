"""Lone surrogates, unit by unit: made valid where Playwright's messages arrive, and never written on the
wire by either transport's encoder, whatever string one hides in (issue 49; e2e: test_page_text.py)."""

import json

import mcp_types
import pytest
from hypothesis import given
from strategies import page_texts

from mcpbrowser.page_strings import valid_text
from mcpbrowser.session.attach import _valid_received
from mcpbrowser.transports import http, protocol

pytestmark = pytest.mark.unit

FFFD = "\ufffd"
# What the official client parses a server's line with (mcp.client.stdio and streamable_http).
ADAPTER = mcp_types.jsonrpc_message_adapter


def answer(text):
    return protocol.result(7, {"content": [{"type": "text", "text": text}], "structuredContent": {text: [text]}})


def wire_forms(message):
    """The bytes each transport writes for a message: a stdio line, an HTTP JSON body, an SSE event's data."""
    (body,) = http._json_response(lambda status, headers: None, "200 OK", message)
    event = http._event(message)
    return [protocol.encode(message).rstrip(b"\n"), body, event.split(b"data: ", 1)[1].rstrip(b"\n")]


@pytest.mark.parametrize("text", ["before \ud800 after", "x\udc00y", "\udfff", "pair \ud83d\ude00 kept",
                                  "\\ud800 written by a page, as six characters"])
def test_no_transport_writes_a_lone_surrogate(text):
    expected = valid_text(text)
    for data in wire_forms(answer(text)):
        parsed = ADAPTER.validate_json(data, by_name=False)  # raised "Invalid JSON" on a lone surrogate's escape
        assert parsed.result["content"][0]["text"] == expected
        assert parsed.result["structuredContent"] == {expected: [expected]}


@given(page_texts)
def test_any_string_goes_out_as_the_client_reads_it(text):
    data = protocol.encode(answer(text))
    assert ADAPTER.validate_json(data, by_name=False).result["content"][0]["text"] == valid_text(text)
    assert isinstance(valid_text(text).encode(), bytes)  # valid UTF-8


def test_valid_text_replaces_only_lone_surrogates_and_keeps_what_is_clean():
    clean = {"a": ["ok", 1, None, {"b": "\U0001f600"}]}
    assert valid_text(clean) is clean
    dirty = json.loads('{"k\\udc00": ["x\\ud800y", 2, {"n": "\\ud83d\\ude00\\ud83d"}]}')
    assert valid_text(dirty) == {f"k{FFFD}": [f"x{FFFD}y", 2, {"n": f"\U0001f600{FFFD}"}]}


def test_a_message_from_the_browser_arrives_valid():
    # Node's JSON.stringify, as the browser server writes its messages: a lone surrogate escaped, a pair as is.
    raw = '{"method":"console","params":{"text":"before \\ud800 after \U0001f600"}}'
    for data in (raw, raw.encode()):
        message = _valid_received(data, json.loads(data))
        assert message["params"]["text"] == f"before {FFFD} after \U0001f600"
    plain = {"method": "x"}
    assert _valid_received(b'{"method":"x"}', plain) is plain
