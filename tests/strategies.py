"""Hypothesis strategies shared by the property tests."""

import json
import uuid

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
