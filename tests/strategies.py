"""Hypothesis strategies shared by the property tests."""

import json
import string
import uuid
from urllib.parse import quote

from hypothesis import strategies as st

session_timeouts = st.integers(min_value=1, max_value=10**9)
unknown_ids = st.one_of(st.uuids(version=4).map(str), st.text(min_size=1, max_size=40))
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text())
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)), max_leaves=8)


# Any text a page can write, lone UTF-16 surrogates included (hypothesis's text() never draws one).
page_texts = st.lists(st.characters() | st.integers(0xD800, 0xDFFF).map(chr)).map("".join)


def fresh_id():
    return str(uuid.uuid4())


# -- protocol fuzzing: what a hostile or broken client might send --------------------------------

# Every real tool is left out: a real call answers from another thread, after our ping.
REAL_TOOLS = {tool.name for tool in __import__("mcpbrowser.core.tool_registry", fromlist=["ALL"]).ALL}
ids = st.one_of(st.integers(-2**53, 2**53), st.text(max_size=20), st.none(), st.booleans(),
                st.floats(allow_nan=False, allow_infinity=False), st.lists(st.integers(), max_size=2))
methods = st.one_of(st.sampled_from(["ping", "tools/list", "initialize", "logging/setLevel", "tools/call",
                                     "server/discover", "notifications/cancelled", "resources/list"]),
                    st.text(max_size=30))
params = st.one_of(json_values, st.fixed_dictionaries({}, optional={
    "name": st.one_of(st.text(max_size=20).filter(lambda n: n not in REAL_TOOLS), json_scalars),
    "arguments": json_values, "level": st.one_of(st.text(max_size=10), json_scalars),
    "requestId": ids, "protocolVersion": st.one_of(st.text(max_size=12), json_scalars),
    "cursor": json_scalars}))
messages = st.fixed_dictionaries({}, optional={
    "jsonrpc": st.one_of(st.just("2.0"), json_scalars), "id": ids, "method": methods, "params": params,
    "result": json_values, "error": json_values})


def _nest(depth):
    return "[" * depth + "]" * depth


raw_lines = st.one_of(
    messages.map(lambda m: json.dumps(m).encode()),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=200).filter(lambda b: b"\n" not in b and b.strip()),
    st.integers(min_value=1, max_value=5000).map(lambda d: _nest(d).encode()),
    st.integers(min_value=1_000, max_value=200_000).map(
        lambda n: json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x" * n}}).encode()),
    st.sampled_from([b"\xff\xfe\xfd", b'{"jsonrpc":"2.0","id":1,"method":"\xc3\x28"}',
                     b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"ghost"}}']),
)

# Notification-shaped messages (a method, no id), most of them malformed: none may be answered.
notifications = st.fixed_dictionaries({"method": st.one_of(methods, json_values)}, optional={
    "jsonrpc": st.one_of(st.just("2.0"), json_scalars),
    "params": st.one_of(params, json_values, st.fixed_dictionaries({"requestId": st.one_of(ids, json_values)}),
                        st.fixed_dictionaries({"progressToken": json_values, "progress": json_values}))})


# -- host spellings: one IPv4 address written as the URL standard lets a browser read it ------------

def _spell(number, base):
    return {10: str, 8: lambda n: "0" + format(n, "o"), 16: lambda n: "0x" + format(n, "x")}[base](number)


@st.composite
def ipv4_spellings(draw):
    """(dotted address, another spelling of it): 1 to 4 parts, each decimal, octal or hex."""
    octets = draw(st.lists(st.integers(0, 255), min_size=4, max_size=4))
    parts = draw(st.integers(1, 4))
    value = int.from_bytes(bytes(octets), "big")
    numbers = octets[:parts - 1] + [value % 256 ** (5 - parts)]
    spelled = ".".join(_spell(n, draw(st.sampled_from([8, 10, 16]))) for n in numbers)
    return ".".join(map(str, octets)), spelled + draw(st.sampled_from(["", "."]))


def store_fault_plans(faults):
    """What happens to the history, step by step: a call, a fault coming on, the fault gone, a pause."""
    return st.lists(st.one_of(
        st.sampled_from(["navigate", "list_sessions", "bad_call"]),
        st.sampled_from(faults).map(lambda kind: ("fault", kind)),
        st.just("heal"),
        st.just("settle"),  # let the writer try (and fail) before the next call
    ), max_size=18)


# -- URLs with a password: in their userinfo (as written, or percent-encoded) and in their query --------------

# What the parts of a shown URL other than a secret are drawn from (and the ellipsis of one that does not parse):
# a password holds at least one other character, so finding it whole in what is shown means it went through.
# Never a "*": the mask is "***".
SHOWN_URL_CHARS = set(string.ascii_lowercase + string.digits + ":/.-…")
url_passwords = st.text(min_size=1, max_size=16).filter(lambda p: not set(p) <= SHOWN_URL_CHARS and "*" not in p)


@st.composite
def urls_with_passwords(draw):
    """(url, password): a remote browser's or a database's URL whose userinfo holds the password, percent-encoded
    as a URL must (the sub-delims left as they are, or not), maybe again as the query's password=; its port a
    number, none, or letters (a URL that does not parse)."""
    password = draw(url_passwords)
    scheme = draw(st.sampled_from(["ws", "wss", "http", "https", "postgresql", "postgres"]))
    user = draw(st.text(string.ascii_lowercase + string.digits, max_size=8))
    host = draw(st.from_regex(r"[a-z][a-z0-9-]{0,10}(\.[a-z]{2,5}){0,2}", fullmatch=True))
    port = draw(st.one_of(st.none(), st.integers(1, 65535).map(str), st.text(string.ascii_lowercase, min_size=1,
                                                                               max_size=3)))
    path = draw(st.from_regex(r"(/[a-z0-9]{0,6}){0,3}", fullmatch=True))
    encoded = quote(password, safe=draw(st.sampled_from(["", "!$&'()+,;="])))
    query = draw(st.sampled_from(["", f"?password={quote(password, safe='')}", "?sslmode=require"]))
    return f"{scheme}://{user}:{encoded}@{host}{f':{port}' if port else ''}{path}{query}", password
