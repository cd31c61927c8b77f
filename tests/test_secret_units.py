"""Known secrets without a browser: the log filter, the secrets file, the book per client, a trace rewritten.

The end-to-end attack is test_secret_attack.py; these pin each part on its own.
"""

import io
import json
import zipfile
from urllib.parse import quote

import pytest
from hypothesis import given
from strategies import urls_with_passwords

from mcpbrowser import logs
from mcpbrowser.config import Config, ConfigError
from mcpbrowser.redaction import REDACTED, SECRET_MARK, SecretBook, scrub_urls, shown_url
from mcpbrowser.trace_scrub import scrub_trace

pytestmark = pytest.mark.unit


@pytest.fixture
def log_stream():
    """The package's log, as the server sets it up, into a buffer; restored afterwards."""
    handlers, level = logs.log.handlers[:], logs.log.level
    stream = io.StringIO()
    logs.setup("debug", stream)
    yield stream
    logs.log.handlers[:] = handlers
    logs.log.setLevel(level)


def test_no_log_line_carries_a_known_secret_whatever_field_it_is_in(log_stream):
    SecretBook().of("a-client").add('Lo"gged-secret-1')
    logs.log.error("failed on %s", 'Lo"gged-secret-1 here',
                   extra={"error": 'fill: Lo"gged-secret-1', "details": {"url": '/q?x=Lo"gged-secret-1'}})
    logs.log.debug("plain line", extra={"text": "ordinary"})
    out = log_stream.getvalue()
    assert "gged-secret-1" not in out, out
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines[0]["message"] == f"failed on {REDACTED} here" and lines[0]["details"]["url"] == f"/q?x={REDACTED}"
    assert lines[1]["text"] == "ordinary"


def test_a_logged_stack_or_a_message_that_is_no_string_never_shows_a_known_secret(log_stream):
    """A stack (stack_info) quotes its frames' source lines; an exception or a dict logged as the message is
    turned into text only by the formatter, after the filter: each reaches the JSON lines scrubbed."""
    from mcpbrowser.redaction import EVERY

    secret = "stack-Secret-4242"
    EVERY.hold([secret])
    try:
        logs.log.warning("a stack", stack_info=True)  # this frame's line quotes stack-Secret-4242
        logs.log.warning(KeyError(secret))
        logs.log.warning({"event": "a dict", "token": secret})
    finally:
        EVERY.release([secret])
    lines = [json.loads(line) for line in log_stream.getvalue().splitlines()]
    assert "test_a_logged_stack" in lines[0]["stack_info"] and "quotes" in lines[0]["stack_info"]
    assert lines[1]["message"] == f"'{REDACTED}'" and lines[2]["token"] == REDACTED, lines
    assert secret not in log_stream.getvalue()


def test_a_log_line_never_names_the_client_whose_call_it_is(log_stream):
    """A record's owner routes it (the server log resource); without tokens it is the client's Mcp-Session-Id, its
    only credential (http.md): never written to stderr."""
    logs.log.info("call finished", extra={"owner": "mcp-session:5ec7e7c1d0e14b7fb2a9", "tool": "navigate"})
    line = json.loads(log_stream.getvalue())
    assert line["tool"] == "navigate" and "5ec7e7c1d0e14b7fb2a9" not in log_stream.getvalue(), line


def test_a_secret_typed_key_by_key_leaves_no_prefix_in_the_log_entries_that_came_meanwhile():
    """safety.md: the prefixes of a secret typed key by key are scrubbed from the console and network entries as
    they arrive (events.py), so they stay out of the logs once the typing's hold is over."""
    from mcpbrowser.session.events import EventBuffers

    events = EventBuffers(10, 10, None, lambda page: None)
    events.hidden = ("Tr0ub4d", "Tr0ub")  # as snapshots.typing_key_by_key sets them, longest first
    events._keep_console({"timestamp": 1, "level": "log", "message": "typed: Tr0ub4d", "location": "x"})
    events._keep_network({"method": "GET", "url": "http://x.test/check?p=Tr0ub", "resourceType": "fetch",
                          "status": None, "durationMs": None, "failure": None, "blocked": False, "timestamp": 1},
                         None, None)
    events.hidden = ()  # the typing's hold is over
    text = json.dumps([events.log_since("console", 0, 10)[0], [e for e, _, _ in events.network]])
    assert "typed: " in text and "check?p=" in text and "Tr0ub" not in text, text


def test_each_client_knows_its_own_secrets_and_its_named_ones():
    book = SecretBook({None: {"SHARED": "shared-value"}, "alice": {"MINE": "alice-value", "SHARED": "hers"}})
    book.of("bob").add("bob-typed-this")
    assert "bob-typed-this" not in book.of("alice")  # scrubbing alice's rows with it would tell her bob's secret
    assert book.of("alice").named == {"SHARED": "hers", "MINE": "alice-value"}
    assert book.of("bob").named == {"SHARED": "shared-value"} and "shared-value" in book.of("bob")
    assert book.of("alice") is book.of("alice")
    known = book.of("carol")
    known.update(["abcd", "abcdefgh"])
    assert list(known) == ["shared-value", "abcdefgh", "abcd"]  # longest first: a secret containing another goes whole


def test_a_held_value_is_scrubbed_until_its_last_hold_ends_and_a_known_one_stays():
    # A running call holds the text it types until it knows its field (issue 48): held twice (two
    # sessions of a client typing it at once), it stays until both released; held and then known, it stays.
    from mcpbrowser.redaction import EVERY

    known = SecretBook().of("dave")
    known.hold(["typed-by-two"])
    known.hold(["typed-by-two", "turns-secret"])
    assert "typed-by-two" in known and "typed-by-two" in EVERY  # the server's log is scrubbed of it too
    known.release(["typed-by-two"])
    assert "typed-by-two" in known
    known.add("turns-secret")
    known.release(["typed-by-two", "turns-secret"])
    assert "typed-by-two" not in known and "typed-by-two" not in EVERY
    assert list(known) == ["turns-secret"] and "turns-secret" in EVERY


def test_the_secrets_file_reads_as_dotenv_and_its_errors_name_the_line_never_the_value(tmp_path):
    env = tmp_path / "s.env"
    env.write_text("# comment\n\nA=plain-value # note\nexport B=\"quo\\\"ted\\n\"\nC='a # b'\nalice:A=hers\n"
                   "D='quoted'   # a comment after the quotes, as dotenv reads it\nE=\"dq\" # say \"hi\"\nF='it's'\n")
    assert Config(secrets=str(env)).named_secrets() == {
        None: {"A": "plain-value", "B": 'quo"ted\n', "C": "a # b", "D": "quoted", "E": "dq", "F": "it's"},
        "alice": {"A": "hers"}}
    for bad, why in (("A b=value-x", "line 1"), ("A=", "A has no value"), ("just-value-x", "line 1")):
        env.write_text(bad)
        with pytest.raises(ConfigError) as raised:
            Config(secrets=str(env))
        assert why in str(raised.value) and "value-x" not in str(raised.value)
    with pytest.raises(ConfigError, match="cannot read"):
        Config(secrets=str(tmp_path / "missing.env"))


def _trace(path, events, **members):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("trace.trace", "\n".join(json.dumps(e) for e in events) + "\n")
        for name, data in members.items():
            z.writestr(name.replace("__", "/"), data)


def test_a_trace_is_rewritten_member_by_member_and_keeps_its_shape(tmp_path):
    path = str(tmp_path / "t.zip")
    snapshot = ["HTML", {}, ["BODY", {}, ["INPUT", {"__playwright_value_": "page-set-1", "type": "Password"}],
                             ["INPUT", {"__playwright_value_": "kept", "autocomplete": "username"}],
                             ["INPUT", {"value": "otp-9", "autocomplete": "one-time-code"}], [[3, 1]]]]
    _trace(path, [{"type": "before", "method": "fill", "params": {"value": "Typed-secret-1"}},
                  {"type": "before", "method": "fill", "params": {"value": "7x"}},
                  {"type": "log", "message": '  fill("7x")'},
                  {"type": "after", "result": {"snapshot": '- textbox "Pin" [ref=e2]: 7x'}},
                  {"type": "frame-snapshot", "snapshot": {"html": snapshot}}],
           resources__body="a=Typed-secret-1&b=Typed%2Dsecret%2D1".replace("%2D", "-"), pixels=b"\x89PNG")
    scrub_trace(path, ["Typed-secret-1"], {"7x"})
    with zipfile.ZipFile(path) as z:
        events = [json.loads(line) for line in z.read("trace.trace").splitlines() if line]
        assert z.read("resources/body") == f"a={REDACTED}&b={REDACTED}".encode()
        assert z.read("pixels") == b"\x89PNG"
    assert events[0]["params"]["value"] == REDACTED and events[1]["params"]["value"] == REDACTED
    assert events[2]["message"] == f'  fill("{REDACTED}")'
    assert events[3]["result"]["snapshot"] == f'- textbox "Pin" [ref=e2]: {REDACTED}'
    body = events[4]["snapshot"]["html"][2]
    assert body[2][1]["__playwright_value_"] == REDACTED and body[3][1]["__playwright_value_"] == "kept"
    assert body[4][1]["value"] == REDACTED and body[5] == [[3, 1]]


def test_a_trace_hides_a_field_the_server_marked_secret_and_a_short_secret_in_any_value_line(tmp_path):
    """docs/safety.md: a trace's DOM snapshots hide secret fields' values, a field the server marked secret (a flagged
    type into a plain input) whatever its type, and a shorter secret goes where it stands alone, on a snapshot's
    spinbutton line (type=number: a one-time code) as on a textbox's."""
    path = str(tmp_path / "t.zip")
    marked = ["INPUT", {"__playwright_value_": "page-changed-it", "type": "text", SECRET_MARK: ""}]
    plain = ["INPUT", {"__playwright_value_": "kept", "type": "text"}]
    _trace(path, [{"type": "frame-snapshot", "snapshot": {"html": ["HTML", {}, ["BODY", {}, marked, plain]]}},
                  {"type": "after", "result": {"snapshot": '- spinbutton "Code" [ref=e4]: 739\n- button "Go"'}}])
    scrub_trace(path, [], {"739"})
    with zipfile.ZipFile(path) as z:
        events = [json.loads(line) for line in z.read("trace.trace").splitlines() if line]
    body = events[0]["snapshot"]["html"][2]
    assert body[2][1]["__playwright_value_"] == REDACTED and body[3][1]["__playwright_value_"] == "kept"
    assert events[1]["result"]["snapshot"] == f'- spinbutton "Code" [ref=e4]: {REDACTED}\n- button "Go"'


@given(urls_with_passwords())
def test_the_url_masker_never_shows_a_password(case):
    """redaction.shown_url, the one rule for a URL shown anywhere (an endpoint's, the history's database's),
    and scrub_urls, for text that quotes a URL (a driver's error) or its password alone."""
    url, password = case
    forms = {password, quote(password, safe=""), quote(password, safe="!$&'()+,;=")}
    shown = shown_url(url)
    assert not any(form in shown for form in forms), shown
    scrubbed = scrub_urls(f"could not connect to {url} (password {password}, {quote(password, safe='')})", url)
    assert not any(form in scrubbed for form in forms), scrubbed


def test_a_shown_url_keeps_where_it_goes_and_nothing_else():
    assert shown_url("wss://user:pw@grid.example:443/wd/hub?token=T0KEN#x") == "wss://grid.example:443/wd/hub"
    assert shown_url("postgresql://mcp:pw@127.0.0.1:5432/db?sslmode=require") == "postgresql://127.0.0.1:5432/db"
    assert shown_url("http://[::1]:9222/") == "http://[::1]:9222/" and shown_url("ws://u:pw@h:port/") == "ws://…"


@pytest.mark.parametrize("formatter", ["the servers json", "an embedders plain"])
def test_a_logged_traceback_never_shows_a_known_secret(log_stream, formatter):
    """A bug of ours is logged with its traceback (INTERNAL_ERROR): an exception whose message holds a secret, or
    a frame handling one, reaches stderr scrubbed, through the server's own JSON formatter (which formats a
    record's exception again whenever it still has one) and through an embedder's plain handler; the rest of
    the traceback is there (the control)."""
    import logging

    from mcpbrowser.redaction import EVERY

    secret = "hunter2-" + "x" * 8
    stream = log_stream
    if formatter == "an embedders plain":
        stream = io.StringIO()
        handler = logging.StreamHandler(stream)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logs.log.handlers[:] = [handler]
    EVERY.hold([secret])
    try:
        try:
            {}[secret]  # a KeyError quoting the value
        except KeyError:
            logs.log.error("a tool failed on a bug of ours", exc_info=True)
    finally:
        EVERY.release([secret])
    out = stream.getvalue()
    if formatter == "the servers json":
        out = json.loads(out)["exc_info"]
    assert "Traceback" in out and "KeyError" in out and "test_a_logged_traceback_never_shows" in out
    assert secret not in out and "hunter2" not in out


def test_a_secret_of_four_characters_is_scrubbed_in_every_form_and_a_shorter_one_is_not():
    """safety.md: every secret value of 4 characters or more is scrubbed from every later answer (a PIN); a shorter
    one would scrub every such run of letters from all text, so it is hidden only where it stands."""
    from mcpbrowser.session.snapshots import secret_forms

    assert {"7391", "Ab9z", "AB9Z", "ab9z"} <= secret_forms(["7391", "Ab9z"])
    assert secret_forms(["739", ""]) == set()
