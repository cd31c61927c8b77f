"""The login cooldown: what starts it (the rule), its properties with an injected clock, then end to end.

The rule (guards.py, and docs/safety.md): a cooldown starts only when wait_for_user times out, or
when a wait or a page load times out while the page shows a login, verification or captcha
wall. Never from our codes for an agent's mistakes, never from the words of a message.

Properties (docs/safety.md states them too):
1. every error code our tools answer, with any message, on a login page, is classified by the
   rule: by code, timeout and page, the same whatever its words;
2. on a page that shows no wall, only wait_for_user's timeout starts one;
3. a trip starts the cooldown at that monotonic instant, for exactly the configured duration;
4. while it runs, every call that acts is refused with the cooldown message, and no browser work
   happens; reads go on;
5. the time left it reports is the duration minus the time since the start, in minutes and seconds,
   and never grows;
6. once the duration has passed, the state resets and calls proceed (and a new trip starts anew);
7. a duration of 0 disables it.
"""

import json
import re
import time
import types
from pathlib import Path
from urllib.parse import quote

import pytest
from fakes import FakeTimer, fake_core, last_timer
from hypothesis import given
from hypothesis import strategies as st
from support import HttpServer, SdkClient, wait_for

from mcpbrowser.config import Config
from mcpbrowser.core.tool_registry import ALL as ALL_TOOLS
from mcpbrowser.core.user_channel import UserChannel
from mcpbrowser.errors import ALL_ERRORS, BrowserServerError, InputRequired
from mcpbrowser.guards import HANDOVER, Cooldown, RateLimiter, wall_hit

pytestmark = pytest.mark.e2e


class Clock:
    def __init__(self, now=1000.0):
        self.now = now

    def __call__(self):
        return self.now


noise = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
durations = st.integers(min_value=1, max_value=3600)


def cooldown(duration, clock, scope="server", locale="en"):
    return Cooldown(duration, scope, locale, clock=clock, timer_factory=FakeTimer)


# -- the rule ------------------------------------------------------------------------------

# The words seed 000's detector searched our messages for: a message may carry any of them.
SEED_WORDS = ("验证超时", "登录超时", "timeout", "Timeout", "captcha", "验证码", "login required", "authentication",
              "pass timeout to wait longer")
messages = st.one_of(noise, st.tuples(noise, st.sampled_from(SEED_WORDS), noise).map("".join))
# Every error our tools can answer (the base class is BROWSER_ERROR's too).
errors = st.sampled_from([*ALL_ERRORS, InputRequired, BrowserServerError])
tools = st.sampled_from(sorted({tool.name for tool in ALL_TOOLS}) + ["wait_for_user"])
walls = st.sampled_from(["password", "one-time-code", "captcha", "title"])


class Frame:
    """A frame whose wall probe answers `shows`; counts how often the page was read."""

    def __init__(self, shows, reads):
        self.shows, self.reads = shows, reads

    def evaluate(self, expression, arg):
        self.reads.append(expression)
        return self.shows


def on_page(shows):
    """A session state whose page shows `shows` (a wall kind, or None) in its second frame."""
    reads = []
    frames = [Frame(None, reads), Frame(shows, reads)]
    page = types.SimpleNamespace(url="https://shop.test/account/login?token=SECRET", frames=frames,
                                 main_frame=frames[0])
    events = types.SimpleNamespace(navigation_pending=lambda page: False)
    # The server's own reads of a page go through state.background (a deadline): here, straight to the frame.
    background = lambda tab, target, method, **kwargs: getattr(target, method)(**kwargs)  # noqa: E731
    # `page` as SessionState forwards it to core/user_channel.py; the session's own modules read the tab's.
    return types.SimpleNamespace(tab=types.SimpleNamespace(page=page, unresponsive=False), blocker=None,
                                 session_id="s1", events=events, background=background), reads


def make_error(cls, message, timed_out):
    exc = cls(message, key="k") if cls is InputRequired else cls(message)
    exc.timed_out = timed_out
    return exc


def expected(tool, code, timed_out, wall):
    """The rule as the manual's table states it."""
    if tool == "wait_for_user":
        return code == "WAIT_TIMEOUT" and timed_out  # not a person who declined
    if code in ("WAIT_TIMEOUT", "NAVIGATION_FAILED"):
        return wall is not None and timed_out
    return False  # ELEMENT_*, INVALID_PARAMETERS, DIALOG_OPEN, COMMAND_TIMEOUT, BROWSER_ERROR, ...


def outcome(tool, cls, message, timed_out, shows):
    """What the core's failure path makes of this error on a page that shows `shows`."""
    user = UserChannel(Config(db=":memory:", login_cooldown=60))
    user.cooldown.timers.factory, user.cooldown.clock = FakeTimer, Clock()
    state, reads = on_page(shows)
    error = make_error(cls, message, timed_out)
    answer = user.login_failure(state, tool, error)
    return (None if answer is error else answer), user, reads


@given(tool=tools, cls=errors, message=messages, other=messages, timed_out=st.booleans(), wall=walls)
def test_property_1_every_code_on_a_login_page_is_classified_by_the_rule(tool, cls, message, other,
                                                                         timed_out, wall):
    answer, user, reads = outcome(tool, cls, message, timed_out, wall)
    again, _, _ = outcome(tool, cls, other, timed_out, wall)
    trips = expected(tool, cls.code, timed_out, wall)
    assert (answer is not None) is trips, (tool, cls.code, timed_out, message)
    assert (again is not None) is trips  # the words never matter
    if trips:
        assert answer.code == "LOGIN_TIMEOUT" and answer.details["cause"] == cls.code
        assert answer.details["wall"] == (HANDOVER if tool == "wait_for_user" else wall)
        assert user.cooldown.remaining_s("s1") == 60 and "1 min 0 s" in answer.message
        assert "SECRET" not in answer.message  # the page's query is never quoted
    else:
        assert user.cooldown.remaining_s("s1") == 0  # the error went back as it was
    if cls.code not in ("WAIT_TIMEOUT", "NAVIGATION_FAILED") or tool == "wait_for_user" or not timed_out:
        assert reads == []  # an agent's mistake costs not even a read of the page


@given(tool=tools, cls=errors, message=messages, timed_out=st.booleans())
def test_property_2_on_a_page_without_a_wall_only_wait_for_user_trips(tool, cls, message, timed_out):
    answer, _, _ = outcome(tool, cls, message, timed_out, None)
    assert (answer is not None) is (tool == "wait_for_user" and cls.code == "WAIT_TIMEOUT" and timed_out)


def test_wall_hit_reads_the_page_only_for_a_timeout():
    asked = []

    def page_wall():
        asked.append(1)
        return "captcha"

    for cls in ALL_ERRORS:  # even an error that says it timed out: only two codes are a wait or a load
        error = make_error(cls, "timeout captcha login", True)
        assert (wall_hit("click", error, page_wall) is not None) is (cls.code in ("WAIT_TIMEOUT", "NAVIGATION_FAILED"))
    assert len(asked) == 2


@given(duration=durations, start=st.floats(min_value=0, max_value=1e6), elapsed=st.floats(0, 1))
def test_property_3_starts_now_for_exactly_the_duration(duration, start, elapsed):
    clock = Clock(start)
    c = cooldown(duration, clock)
    text = c.trigger("s", "wait_for_user timed out")
    assert text.startswith("wait_for_user timed out") and f"{duration // 60} min {duration % 60} s" in text
    clock.now = start + elapsed * duration * 0.999
    assert c.remaining_s("s") == pytest.approx(duration - (clock.now - start))
    clock.now = start + duration
    assert c.remaining_s("s") == 0


@given(duration=durations, fraction=st.floats(min_value=0, max_value=0.99))
def test_property_4_every_acting_call_is_refused_without_browser_work(duration, fraction):
    core = fake_core(login_cooldown=duration)
    clock = Clock()
    core.cooldown.clock = clock
    core.cooldown.timers.factory = FakeTimer
    try:
        core.cooldown.trigger(None, "wait_for_user timed out")
        clock.now += fraction * duration
        for tool, args in (("create_session", {}), ("tabs", {"sessionId": "x"}),
                           ("navigate", {"sessionId": "x", "url": "http://a.test/"}),
                           ("click", {"sessionId": "x", "selector": "#a"})):
            exc = core.submit(tool, args).exception(5)
            assert exc.code == "COOLDOWN_ACTIVE" and exc.details["remainingMs"] > 0
        assert core.session_ids() == set()  # create_session never reached the browser
        # Reading acts on nothing: it goes on (here it reaches the registry: no such session).
        assert core.submit("list_sessions", {}).result(5)["count"] == 0
        assert core.submit("snapshot", {"sessionId": "x"}).exception(5).code == "SESSION_NOT_FOUND"
        assert core.submit("close_session", {"sessionId": "x"}).exception(5).code == "SESSION_NOT_FOUND"
    finally:
        core.close()


def test_the_manual_names_the_tools_that_run_during_a_cooldown():
    """The Safety page's list is the read_only declarations, as they are (a new reading tool joins both)."""
    readme = (Path(__file__).parent.parent / "docs" / "safety.md").read_text()
    listed = re.search(r"Tools declared read-only run during a cooldown: (.*?)\. The seed", readme, re.S).group(1)
    assert set(re.findall(r"`(\w+)`", listed)) == {tool.name for tool in ALL_TOOLS if tool.read_only}
    also = {tool.name for tool in ALL_TOOLS if tool.during_cooldown}
    assert also == {"wait_for_user", "close_session", "enable_tools", "export_script"}
    assert all(f"`{name}` runs during a cooldown" in readme or f"`{name}` runs too" in readme for name in also)


@given(duration=durations, steps=st.lists(st.floats(min_value=0, max_value=30), min_size=1, max_size=10))
def test_property_5_time_left_is_exact_and_never_grows(duration, steps):
    clock = Clock()
    c = cooldown(duration, clock)
    c.trigger("s", "captcha")
    last = float("inf")
    for step in steps:
        clock.now += step
        left = c.remaining_s("s")
        assert left <= last
        assert left == pytest.approx(max(0.0, duration - (clock.now - 1000.0)), abs=1e-6)
        last = left
        message = c.message("s")
        if left:
            minutes, seconds = map(int, re.search(r"(\d+) min (\d+) s", message).groups())
            assert minutes * 60 + seconds == int(-(-left // 1))  # whole seconds, rounded up
        else:
            assert message is None


@given(duration=durations, extra=st.floats(min_value=0, max_value=100))
def test_property_6_resets_after_the_duration(duration, extra):
    clock = Clock()
    ended = []
    c = Cooldown(duration, "server", clock=clock, timer_factory=FakeTimer,
                 on_end=lambda key, text, owner: ended.append(key))
    c.trigger("s", "timeout")
    timer = last_timer()
    assert timer.interval == duration and timer.started
    clock.now += duration + extra
    timer.fire()
    assert ended == ["server"] and c.message("s") is None and c.remaining_s("s") == 0
    c.trigger("s", "timeout")  # a new detection starts a new cooldown
    assert c.remaining_s("s") == pytest.approx(duration)


@given(message=messages)
def test_property_7_zero_disables(message):
    c = cooldown(0, Clock())
    assert c.trigger("s", message) is None and c.remaining_s("s") == 0 and c.message("s") is None


def test_session_scope_pauses_only_that_session():
    clock = Clock()
    c = cooldown(60, clock, scope="session")
    c.trigger("a", "timeout")
    assert c.remaining_s("a") == 60 and c.remaining_s("b") == 0
    assert c.trigger(None, "timeout") is None and c.message(None) is None  # no session, nothing to pause


def test_client_scope_pauses_only_that_client_and_all_of_a_one_client_server():
    c = cooldown(60, Clock(), scope="client")
    c.trigger("a", "wait_for timed out", owner="alice")
    assert c.remaining_s("a", "alice") == 60 and c.remaining_s(None, "alice") == 60  # its create_session too
    assert c.remaining_s("b", "bob") == 0 and c.message(None, "bob") is None
    assert c.remaining_s("a", None) == 0  # the one-client server's own key is another
    c.trigger("s", "wait_for_user timed out")  # stdio: no owner, the whole server
    assert c.remaining_s("t") == 60 and "your browser actions" in c.message("t")


def test_server_scope_pauses_every_client_and_tells_only_the_tripper_why():
    c = cooldown(60, Clock(), scope="server")
    c.trigger("a", "wait_for timed out on a page that shows a captcha (shop.test/x)", owner="alice")
    assert "shop.test" in c.message("b", "alice")
    other = c.message("b", "bob")
    assert "shop.test" not in other and "another client's call" in other and "this server" in other


def test_a_refusal_is_told_whole_once_a_cooldown_to_each_client_then_short():
    # An agent that retries pays for every refusal: the reads it may make and the pause's rules are
    # told once (the tripper's LOGIN_TIMEOUT told them), then what changes (time left) and what to do.
    clock = Clock()
    c = cooldown(60, clock, scope="server")
    c.trigger("a", "wait_for timed out on a page that shows a captcha (shop.test/x)", owner="alice")
    again = c.refusal("a", "alice")
    assert again.startswith("Still paused after wait_for timed out") and "shop.test" in again
    assert "1 min 0 s left" in again and "wait_for_user (in the logins tool group" in again
    assert len(again) < len(c.message("a", "alice")) - 100
    first = c.refusal("b", "bob")  # told nothing yet: the whole text, without alice's page
    assert first == c.message("b", "bob") and "shop.test" not in first
    clock.now += 30
    later = c.refusal("b", "bob")
    assert later.startswith("Still paused after another client's call") and "0 min 30 s" in later
    assert "shop.test" not in later and "enable_tools" not in c.refusal("b", "bob", logins_on=True)
    c.trigger("a", "wait_for timed out", owner="alice")  # a new wall restarts it: bob hears all again
    assert c.refusal("b", "bob") == c.message("b", "bob") and "1 min 0 s" in c.refusal("b", "bob")
    clock.now += 61
    assert c.refusal("b", "bob") is None  # over
    zh = cooldown(60, Clock(), scope="server", locale="zh")
    zh.trigger("a", "超时", owner="alice")
    assert zh.refusal("a", "alice").startswith("仍在暂停")


def test_the_person_finishing_ends_the_cooldown_at_once():
    ended = []
    c = Cooldown(60, "client", clock=Clock(), timer_factory=FakeTimer,
                 on_end=lambda key, text, owner: ended.append((key, owner, text)))
    c.trigger("a", "wait_for_user timed out", owner="alice")
    timer = last_timer()
    c.finish("b", "bob")  # another client's wait_for_user ends nothing of alice's
    assert c.remaining_s("a", "alice") == 60 and ended == []
    c.finish("a", "alice")
    assert c.remaining_s("a", "alice") == 0 and timer.cancelled
    assert ended == [("client:alice", "alice", "The user finished the login or verification; "
                                               "the login cooldown ended.")]
    shared = Cooldown(60, "server", clock=Clock(), timer_factory=FakeTimer)
    shared.trigger("a", "wait_for_user timed out", owner="alice")
    shared.finish("b", "bob")  # Bob's person finished Bob's login, not Alice's wall
    assert shared.remaining_s("b", "bob") == 60
    shared.finish("a", "alice")
    assert shared.remaining_s("b", "bob") == 0


def test_messages_say_what_tripped_it_how_long_is_left_and_what_to_do():
    for locale, left, read, todo in (("en", "1 min 30 s", "Reading the page still works", "wait_for_user"),
                                     ("zh", "1 分 30 秒", "读取页面仍可进行", "wait_for_user")):
        c = cooldown(90, Clock(), locale=locale)
        why = c.describe("wait_for", "captcha", "shop.test/login")
        assert ("captcha" in why or "验证码" in why) and "wait_for" in why and "shop.test/login" in why
        tripped = c.trigger("s", why)
        assert tripped.startswith(why) and left in tripped and todo in tripped
        waiting = c.message("s")
        assert why in waiting and left in waiting and read in waiting and todo in waiting
    assert "用户未完成" in cooldown(90, Clock(), locale="zh").describe("wait_for_user", HANDOVER)


@pytest.mark.parametrize("step, allowed", [(59.999, False), (60.0, True)])
def test_rate_limit_window_boundary(step, allowed):
    clock = Clock(0.0)
    limiter = RateLimiter(2, clock=clock)
    assert limiter.check("k") is None and limiter.check("k") is None
    clock.now = step
    assert (limiter.check("k") is None) is allowed


# -- end to end ----------------------------------------------------------------------------


# The three tests below share one server, with the default cooldown said out loud: none of them trips
# it, and each closes its sessions (session_on).
NO_WALL = ("--login-cooldown", "300")


def test_wrong_selector_on_a_normal_page_never_locks_the_server(session_on, pages):
    c, sid = session_on(*NO_WALL)
    c.tool("navigate", sessionId=sid, url=pages.url("/form"))
    err = c.error("click", sessionId=sid, selector="#typo", timeout=200)
    assert err["errorCode"] == "ELEMENT_NOT_FOUND" and "waited 200 ms" in err["message"]
    assert c.tool("list_sessions")["count"] == 1  # no cooldown


def test_wait_for_user_succeeds_when_the_person_finishes(session_on, pages):
    c, sid = session_on(*NO_WALL)
    c.tool("navigate", sessionId=sid, url=pages.url("/signin"))
    c.tool("click", sessionId=sid, selector="#enter")  # stands in for the person
    done = c.tool("wait_for_user", sessionId=sid, message="Please sign in", selector="#pw", timeout=5000)
    assert done["success"] and done["url"] == pages.url("/signin")
    assert any(m.data.get("event") == "wait_for_user" and m.data["message"] == "Please sign in"
               for m in c.log_messages)


def ended(client, seconds=10):
    """Wait for the cooldown_ended notice."""
    deadline = time.monotonic() + seconds
    while not any(m.data.get("event") == "cooldown_ended" for m in client.log_messages):
        assert time.monotonic() < deadline, "no cooldown_ended notification"
        time.sleep(0.1)


def answer_code(client, tool, **args):
    """The errorCode of a call, or "ok"."""
    result = client.call(tool, args)
    return json.loads(result.content[0].text)["errorCode"] if result.is_error else "ok"


def stale_ref(client, sid):
    """A ref from a snapshot of the page before it was loaded again."""
    snap = client.tool("snapshot", sessionId=sid)["snapshot"]
    ref = re.search(r'button "Sign in".*?\[ref=([\w-]+)\]', snap).group(1)
    client.tool("reload", sessionId=sid)
    return ref


# The table of issue 34: ordinary agent mistakes on a login page, each with the code it must answer.
MISTAKES = [
    ("click", {"selector": "#nothing"}, "ELEMENT_NOT_FOUND"),
    ("click", {"selector": "#nothing", "timeout": 300}, "ELEMENT_NOT_FOUND"),  # "pass timeout to wait longer"
    ("click", {"ref": "e99999"}, "ELEMENT_NOT_FOUND"),
    ("click", {"selector": "##bad[["}, "INVALID_PARAMETERS"),
    ("click", {"selector": "#hidden", "timeout": 300}, "ELEMENT_NOT_CLICKABLE"),
    ("click", {"selector": "#off", "timeout": 300}, "ELEMENT_NOT_CLICKABLE"),
    ("type", {"selector": "#missing-field", "text": "me"}, "ELEMENT_NOT_FOUND"),
    ("type", {"selector": "#locked", "text": "me", "timeout": 300}, "ELEMENT_NOT_EDITABLE"),
    ("select", {"selector": "#lang", "values": ["klingon"]}, "INVALID_PARAMETERS"),
    ("press_key", {"key": "NoSuchKey"}, "INVALID_PARAMETERS"),
    ("handle_dialog", {"accept": True}, "NO_DIALOG_OPEN"),
    ("navigate", {"url": "not a url"}, "INVALID_PARAMETERS"),
    ("wait_for", {}, "INVALID_PARAMETERS"),
    ("wait_for_user", {"message": "Sign in please", "timeout": 1000}, "INVALID_PARAMETERS"),
]


def test_agent_mistakes_on_login_pages_start_no_cooldown(session_on, pages):
    """Each mistake gets its own clear error, and nothing worse: the next call, anywhere, just works."""
    c, sid = session_on(*NO_WALL)  # the defaults: a 300 s cooldown
    c.tool("navigate", sessionId=sid, url=pages.url("/login-wall"))
    for tool, args, code in [*MISTAKES, ("click", {"ref": stale_ref(c, sid)}, "ELEMENT_NOT_FOUND")]:
        err = c.error(tool, sessionId=sid, **args)
        assert err["errorCode"] == code, (tool, args, err)
    # A dialog left open, then an action behind it.
    c.tool("click", sessionId=sid, selector="#help")
    assert c.error("click", sessionId=sid, selector="#enter")["errorCode"] == "DIALOG_OPEN"
    c.tool("handle_dialog", sessionId=sid, accept=True)

    # A slow login page: its form appears 2 s after the load, and the agent acts at once (and
    # waits too little for the form, before any wall shows). On a loaded machine a late call may
    # find the form already: it must then simply work.
    c.tool("navigate", sessionId=sid, url=pages.url("/slow-login"))
    codes = [answer_code(c, "type", sessionId=sid, selector="#user", text="me", timeout=200),
             answer_code(c, "click", sessionId=sid, selector="#enter", timeout=200),
             answer_code(c, "wait_for", sessionId=sid, selector="#pw", timeout=200)]
    assert codes[0] == "ELEMENT_NOT_FOUND" and set(codes) <= {"ELEMENT_NOT_FOUND", "WAIT_TIMEOUT", "ok"}, codes
    c.tool("wait_for", sessionId=sid, selector="#pw", timeout=10000)
    c.tool("type", sessionId=sid, selector="#user", text="me")

    _, other = session_on(*NO_WALL)
    assert c.tool("navigate", sessionId=other, url=pages.url("/title/free"))["title"] == "free"
    c.tool("click", sessionId=sid, selector="#enter")
    # A server that does not answer in time, while the login page from before is still shown.
    slow = c.error("navigate", sessionId=sid, url=pages.url("/slow?ms=3000"), timeout=500)
    assert slow["errorCode"] == "NAVIGATION_FAILED", slow
    assert c.tool("navigate", sessionId=other, url=pages.url("/title/still-free"))["title"] == "still-free"
    assert not any(m.data.get("event") == "cooldown_started" for m in c.log_messages)


def test_a_wait_for_user_timeout_cools_down_then_recovers(make_client, pages):
    c = make_client("--login-cooldown", "2")
    sid = c.tool("create_session")["sessionId"]
    c.tool("navigate", sessionId=sid, url=pages.url("/signin"))
    tripped = c.error("wait_for_user", sessionId=sid, message="Solve the captcha",
                      urlContains="/welcome", timeout=300)
    assert tripped["errorCode"] == "LOGIN_TIMEOUT" and "0 min 2 s" in tripped["message"]
    assert tripped["details"] == {"cause": "WAIT_TIMEOUT", "wall": "handover", "cooldownSeconds": 2}
    assert "wait_for_user timed out" in tripped["message"]
    paused = c.error("navigate", sessionId=sid, url=pages.url("/title/never"))
    assert paused["errorCode"] == "COOLDOWN_ACTIVE" and 0 < paused["details"]["remainingMs"] <= 2000
    assert "wait_for_user timed out" in paused["message"] and "left" in paused["message"]
    assert "/title/never" not in pages.hits
    ended(c)
    assert any(m.data.get("event") == "cooldown_started" for m in c.log_messages)
    assert c.tool("navigate", sessionId=sid, url=pages.url("/title/after"))["title"] == "after"


def test_a_captcha_that_never_lets_the_agent_through_cools_down(make_client, pages):
    """The agent clicks on, then waits for what lies past the wall: that wait trips it. Reading goes on;
    the person finishing (wait_for_user sees them done) ends it at once."""
    c = make_client("--login-cooldown", "300")
    sid = c.tool("create_session")["sessionId"]
    c.tool("navigate", sessionId=sid, url=pages.url("/captcha"))
    c.tool("click", sessionId=sid, selector="#continue")  # nothing happens
    tripped = c.error("wait_for", sessionId=sid, text="Welcome back", timeout=500)
    assert tripped["errorCode"] == "LOGIN_TIMEOUT", tripped
    assert tripped["details"] == {"cause": "WAIT_TIMEOUT", "wall": "captcha", "cooldownSeconds": 300}
    assert "wait_for timed out on a page that shows a captcha" in tripped["message"]
    assert "5 min 0 s" in tripped["message"] and "/captcha" in tripped["message"]
    for tool, args in (("navigate", {"sessionId": sid, "url": pages.url("/title/again")}),
                       ("click", {"sessionId": sid, "selector": "#continue"}), ("create_session", {})):
        paused = c.error(tool, **args)
        assert paused["errorCode"] == "COOLDOWN_ACTIVE" and 0 < paused["details"]["remainingMs"] <= 300_000
        assert re.search(r"4 min \d+ s|5 min 0 s", paused["message"]) and "wait_for_user" in paused["message"]
    assert "/title/again" not in pages.hits
    # Reading attempts nothing: it goes on.
    assert "Continue" in c.tool("snapshot", sessionId=sid)["snapshot"]
    c.tool("screenshot", sessionId=sid)
    c.tool("console_logs", sessionId=sid)
    c.tool("list_sessions")
    # The person solved it: the handover sees them done, and the cooldown is over.
    c.tool("wait_for_user", sessionId=sid, message="Please solve the captcha", selector="#continue", timeout=5000)
    ended(c)
    assert c.tool("navigate", sessionId=sid, url=pages.url("/title/again"))["title"] == "again"


def test_a_load_that_times_out_on_a_wall_trips_it_for_that_session_alone(make_client, pages):
    c = make_client("--login-cooldown", "60", "--cooldown-scope", "session")
    sid = c.tool("create_session")["sessionId"]
    other = c.tool("create_session")["sessionId"]
    # A load held back past its timeout on a page that shows a captcha.
    tripped = c.error("navigate", sessionId=sid, url=pages.url("/captcha?hold=1"), timeout=1000)
    assert tripped["errorCode"] == "LOGIN_TIMEOUT", tripped
    assert tripped["details"]["cause"] == "NAVIGATION_FAILED" and tripped["details"]["wall"] == "captcha"
    assert c.error("click", sessionId=sid, selector="#continue")["errorCode"] == "COOLDOWN_ACTIVE"
    assert c.tool("navigate", sessionId=other, url=pages.url("/title/free"))["title"] == "free"
    assert c.tool("create_session")["sessionId"]  # no session's cooldown covers a new one
    # A load that times out on a page without a wall is just NAVIGATION_FAILED.
    failed = c.error("navigate", sessionId=other, url=pages.url("/slow?ms=3000"), timeout=500)
    assert failed["errorCode"] == "NAVIGATION_FAILED"


def test_a_wait_while_the_login_page_is_being_left_is_no_wall(make_client, pages):
    """A navigation away from the login page is pending (a slow server): the page is leaving, and
    reading it would wait for that server. The wait's timeout is answered as it is, at once."""
    c = make_client("--action-timeout", "1000", "--navigation-timeout", "1000", "--watchdog-grace", "2")
    sid = c.tool("create_session")["sessionId"]
    c.tool("navigate", sessionId=sid, url=pages.url("/login-wall"))
    left = c.error("navigate", sessionId=sid, url=pages.url("/slow?ms=15000"), timeout=300)
    assert left["errorCode"] == "NAVIGATION_FAILED"  # the login page is still shown, no wall of this load's
    waited = c.error("wait_for", sessionId=sid, text="Welcome", timeout=300)
    assert waited["errorCode"] == "WAIT_TIMEOUT", waited  # not COMMAND_TIMEOUT: nothing waited for the server
    assert not any(m.data.get("event") == "cooldown_started" for m in c.log_messages)


def test_a_title_naming_a_login_keyword_is_a_wall(make_client, pages):
    """A custom wall (a slider captcha) shows no standard field: its own title, the page's words, says so.
    Titles that only say "Sign in", or name a timeout, are no wall."""
    c = make_client("--cooldown-scope", "session")
    for title, tripped in (("验证码 - 安全检查", True), ("Please VERIFY YOU ARE HUMAN", True), ("Sign in", False),
                           ("Authors", False), ("504 Gateway Timeout", False)):
        sid = c.tool("create_session")["sessionId"]
        page = quote(f"<title>{title}</title><div>slide to verify</div>")
        c.tool("navigate", sessionId=sid, url=f"data:text/html;charset=utf-8,{page}")
        code = c.error("wait_for", sessionId=sid, text="Welcome", timeout=200)["errorCode"]
        assert code == ("LOGIN_TIMEOUT" if tripped else "WAIT_TIMEOUT"), title


def test_over_http_one_clients_wall_never_pauses_another(pages):
    """Two token clients on one server with the defaults: Alice runs into a wall, Bob keeps working."""
    tokens = {"alice": "alice-token-0123456789abcdef", "bob": "bob-token-0123456789abcdef"}
    server = HttpServer(env={"MCPBROWSER_HTTP_TOKENS": ",".join(f"{n}:{t}" for n, t in tokens.items())})
    alice = SdkClient(server.url, token=tokens["alice"], mode="legacy")
    bob = SdkClient(server.url, token=tokens["bob"], mode="legacy")
    try:
        a = alice.tool("create_session")["sessionId"]
        b = bob.tool("create_session")["sessionId"]
        alice.tool("navigate", sessionId=a, url=pages.url("/captcha"))
        tripped = alice.error("wait_for", sessionId=a, text="Welcome back", timeout=500)
        assert tripped["errorCode"] == "LOGIN_TIMEOUT"
        # Bob: every kind of call, a new session included.
        assert bob.tool("navigate", sessionId=b, url=pages.url("/login-wall"))["title"] == "Sign in"
        bob.tool("type", sessionId=b, selector="#user", text="bob")
        assert bob.error("click", sessionId=b, selector="#nothing")["errorCode"] == "ELEMENT_NOT_FOUND"
        b2 = bob.tool("create_session", url=pages.url("/title/bob"))
        assert b2["title"] == "bob"
        bob.tool("close_session", sessionId=b2["sessionId"])
        assert not any(m.data.get("event") == "cooldown_started" for m in bob.log_messages)
        # Alice's own calls wait, but she can still read.
        assert "your browser actions" in tripped["message"]
        for tool, args in (("navigate", {"sessionId": a, "url": pages.url("/title/a")}), ("create_session", {})):
            assert alice.error(tool, **args)["errorCode"] == "COOLDOWN_ACTIVE", tool
        assert alice.tool("snapshot", sessionId=a)["title"] == "One more step"
        # The person solves it: Alice's handover sees it, her cooldown ends, and only she hears so.
        alice.tool("wait_for_user", sessionId=a, message="Please solve the captcha", selector="#continue",
                   timeout=5000)
        assert alice.tool("navigate", sessionId=a, url=pages.url("/title/a"))["title"] == "a"
        assert wait_for(lambda: any(m.data.get("event") == "cooldown_ended" for m in alice.log_messages))
        assert not any(m.data.get("event") == "cooldown_ended" for m in bob.log_messages)
    finally:
        alice.close()
        bob.close()
        server.close()


def test_other_clients_are_not_told_why_the_cooldown_started():
    """On a server-wide cooldown the reason quotes the tripping call and page: only its client hears it."""
    c = Cooldown(60, "server", timer_factory=FakeTimer)
    c.trigger("s", "wait_for_user: waited for the URL to contain 'secret-path'", owner="alice")
    assert "secret-path" in c.message("s", owner="alice")
    other = c.message("s", owner="bob")
    assert "secret-path" not in other and "another client's call" in other
    c.trigger("s", "wait_for_user: timeout at /private")  # one client (stdio): it hears why
    assert "/private" in c.message("s")
