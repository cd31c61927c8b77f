"""The live view's pieces without a browser: the operator mark, the --view setting, cookies behind a proxy."""

import io
from types import SimpleNamespace

import pytest

from mcpbrowser.config import Config, ConfigError
from mcpbrowser.view import auth
from mcpbrowser.view.app import ViewApp
from mcpbrowser.view.auth import SignIns, Viewer

pytestmark = pytest.mark.unit

TOKEN = "t" * 20


def test_token_file_operator_mark_is_a_third_word_and_old_files_mean_what_they_meant(tmp_path):
    path = tmp_path / "tokens"
    path.write_text(f"alice {TOKEN}1\n{TOKEN}2\nops {TOKEN}3 operator\n# ops2 {TOKEN}4 operator\n")
    config = Config(http_token_file=str(path), db=":memory:")
    assert config.http_credentials() == {f"{TOKEN}1": "alice", f"{TOKEN}2": "client2", f"{TOKEN}3": "ops"}
    assert config.view_operators() == {"ops"}
    path.write_text(f"ops {TOKEN}3 admin\n")
    with pytest.raises(ConfigError, match="line 1"):
        Config(http_token_file=str(path), db=":memory:").http_credentials()


def test_view_setting_needs_http_to_mount_and_tokens_off_loopback(tmp_path):
    with pytest.raises(ConfigError, match="--view http"):
        Config(view="http", db=":memory:")
    with pytest.raises(ConfigError, match="reachable from other machines"):
        Config(view="0.0.0.0:8080", db=":memory:")
    assert Config(view="127.0.0.1:0", db=":memory:").view == "127.0.0.1:0"


def test_operator_sees_all_and_a_client_its_own():
    signs = SignIns({f"{TOKEN}1": "alice", f"{TOKEN}3": "ops"}, {"ops"})
    assert signs.by_token(f"{TOKEN}1") == Viewer("alice", "alice")
    assert signs.by_token(f"{TOKEN}3") == Viewer("ops", None, True)
    assert signs.by_token("wrong") is None and signs.one_time_key is None
    assert not Viewer("alice", "alice").may_see("bob") and Viewer("ops", None, True).may_see("bob")


def test_one_time_key_signs_in_once():
    signs = SignIns({}, set())
    key = signs.one_time_key
    assert signs.by_key("x" * len(key)) is None
    assert signs.by_key(key) == Viewer("local", None, True)
    assert signs.by_key(key) is None


@pytest.mark.parametrize("trusted, forwarded, secure", [(False, "https", False), (True, "https", True),
                                                         (True, None, False)])
def test_cookie_is_secure_behind_a_trusted_tls_proxy_only(trusted, forwarded, secure):
    core = SimpleNamespace(tools={}, max_sessions=10)
    app = ViewApp(core, sign_ins=SignIns({TOKEN: "alice"}, set()), trust_proxy=trusted)
    environ = {"REQUEST_METHOD": "POST", "PATH_INFO": "/view/signin", "HTTP_HOST": "view.example",
               "wsgi.url_scheme": "http", "CONTENT_LENGTH": str(len(f"token={TOKEN}")),
               "wsgi.input": io.BytesIO(f"token={TOKEN}".encode())}
    if forwarded:
        environ["HTTP_X_FORWARDED_PROTO"] = forwarded
        environ["HTTP_ORIGIN"] = f"{forwarded if trusted else 'http'}://view.example"
    seen = {}
    app(environ, lambda status, headers: seen.update(status=status, headers=dict(headers)))
    assert seen["status"] == "303 See Other"
    assert ("; Secure" in seen["headers"]["Set-Cookie"]) is secure
    assert auth.plain_http_exposed(environ, trusted) is not secure


def _what_the_core_holds(core):
    """Every attribute of the core and of its parts the view reaches (a copy), and its tool table."""
    return {"core": dict(vars(core)), "tools": dict(core.tools), "user": dict(vars(core.user))}


@pytest.mark.parametrize("view", [None, "127.0.0.1:0"])
def test_building_views_changes_nothing_in_the_core(view):
    """The tool table is the same with or without a view, and two views leave the core as they found it:
    building one used to add person_input to the table and write its own path into the core, so which tools
    existed depended on whether a view was built, and a second view's path overwrote the first's."""
    from mcpbrowser.core.browser import Browser

    core = Browser(Config(view=view, db=":memory:"))  # the real core, never started: no browser
    try:
        assert "person_input" in core.tools and core.tools["person_input"].person_only
        assert [t.name for t in core.groups.listed(None)[0] if t.person_only] == []  # never listed
        where = core.user.where_to_help("s1")
        assert where == (None if view is None else "/view/s/s1")  # the server's own view, from its setting
        before = _what_the_core_holds(core)
        ViewApp(core, sign_ins=SignIns({TOKEN: "alice"}, set()))
        ViewApp(core, who_may_see=lambda environ: None, path="/ops/view")
        assert _what_the_core_holds(core) == before
        assert core.user.where_to_help("s1") == where
    finally:
        core.close()


def _get(app, path, address, headers=None):
    seen = {}
    path, _, query = path.partition("?")
    app({"REQUEST_METHOD": "GET", "PATH_INFO": path, "QUERY_STRING": query, "REMOTE_ADDR": address,
         "HTTP_HOST": "127.0.0.1:8000", "wsgi.url_scheme": "http", **(headers or {})},
        lambda status, headers: seen.update(status=status, headers=dict(headers)))
    return seen


def test_wrong_one_time_keys_by_get_are_counted_as_refused_sign_ins():
    """The one-time key comes by GET: guessing it from one address is slowed down as a token's POST is."""
    core = SimpleNamespace(tools={}, max_sessions=10)  # the face's: the view reads nothing else of it here
    signs = SignIns({}, set())
    app = ViewApp(core, sign_ins=signs, trust_proxy=True)  # behind a proxy, whose address every guess shares
    key = signs.one_time_key
    plain = [_get(app, "/view/signin", "10.0.0.9")["status"] for _ in range(12)]
    assert plain == ["403 Forbidden"] * 12  # opening the page without a key is no guess
    # One address, whatever it says it forwards for: a header the guesser writes names no one.
    guesses = [_get(app, f"/view/signin?key={'x' * len(key)}{n}", "10.0.0.9", {"HTTP_X_FORWARDED_FOR": f"10.1.0.{n}"})
               for n in range(12)]
    assert [g["status"] for g in guesses[:auth.GUESSES]] == ["403 Forbidden"] * auth.GUESSES
    assert [g["status"] for g in guesses[auth.GUESSES:]] == ["429 Too Many Requests"] * 2
    assert int(guesses[-1]["headers"]["Retry-After"]) > 0
    # the right key from the guessing address waits too (a right guess must not pass); from another, it signs in
    assert _get(app, f"/view/signin?key={key}", "10.0.0.9")["status"] == "429 Too Many Requests"
    assert _get(app, f"/view/signin?key={key}", "10.0.0.7")["status"] == "303 See Other"


def test_a_persons_tools_do_not_exist_for_the_library():
    """ARCHITECTURE.md's rule, the library's half (tests/test_view.py holds an MCP client's): the embedder's calls of a
    person's tools are no calls, refused as unknown tools, whose list of known tools leaves them out."""
    from fakes import fake_core

    from mcpbrowser.errors import UnknownTool
    from mcpbrowser.tools.person import HAND_BACK, PERSON_INPUT, TAKE_OVER, WATCH

    core = fake_core()
    try:
        session = core.create_session()
        assert session.navigate("http://example.test/")["url"] == "http://example.test/"  # the control: it calls
        for tool in (PERSON_INPUT, TAKE_OVER, HAND_BACK, WATCH):
            assert tool.name in core.tools  # declared, for the view's person
            with pytest.raises(UnknownTool, match=f"Unknown tool: {tool.name}") as refused:
                core.call(tool.name, {"sessionId": session.id, "action": "click", "x": 0.5, "y": 0.5})
            assert tool.name not in refused.value.details["known"] and "click" in refused.value.details["known"]
    finally:
        core.close()


def test_a_sign_in_ends_after_its_hours_and_a_stolen_cookie_with_it(monkeypatch):
    """view.md: the cookie names a sign-in kept on the server for SIGN_IN_HOURS; past them the same cookie signs no
    one in (a stolen one too), and the sign-in is forgotten."""
    clock = [1000.0]
    monkeypatch.setattr(auth.time, "monotonic", lambda: clock[0])
    signs = SignIns({TOKEN: "alice"}, set())
    cookie = signs.start(signs.by_token(TOKEN))
    environ = {"HTTP_COOKIE": f"{auth.COOKIE}={cookie}"}
    clock[0] += auth.SIGN_IN_HOURS * 3600 - 1
    assert signs.lookup(environ)[0].name == "alice"  # the control: within its hours it holds
    clock[0] += 2
    assert signs.lookup(environ) is None
    clock[0] -= 2  # the clock is not what ends it now: it was forgotten
    assert signs.lookup(environ) is None


def test_only_the_person_holding_a_session_sends_it_input():
    """view.md: while a person holds a session nobody else drives it, an operator included: anyone else's input is
    409 and never reaches the core (the person's call passes the session's hold, so this is its guard)."""
    import json

    from mcpbrowser.view.hands import Hands

    acted = []

    class Core:
        def session(self, session_id):
            return {"heldBy": "alice"} if session_id == "s1" else None

        def act(self, session_id, person, action):
            acted.append((session_id, person, action))
            return SimpleNamespace(result=lambda timeout: None)

    hands = Hands(Core())

    def send(viewer, session_id="s1"):
        body = json.dumps({"action": "click", "x": 0.5, "y": 0.5}).encode()
        said = {}
        hands.input({"CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body)},
                    lambda status, headers, *_: said.update(status=status), viewer, session_id)
        return said["status"]

    assert send(Viewer("ops", None, True)).startswith("409")
    assert send(Viewer("bob", "bob")).startswith("409")
    assert send(Viewer("alice", "alice"), "s2").startswith("409")  # held by no one
    assert acted == []
    assert send(Viewer("alice", "alice")).startswith("200") and len(acted) == 1  # the control: the holder's input
