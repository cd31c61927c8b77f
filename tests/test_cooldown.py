"""The login-timeout cooldown: its seven properties with an injected clock, then end to end.

Properties (the README states them too):
1. a message naming any keyword, in any case, is detected;
2. a message naming none is not;
3. a detection starts the cooldown at that monotonic instant, for exactly the configured duration;
4. while it runs, every call is refused with the cooldown message, and no browser work happens;
5. the time left it reports is the duration minus the time since the start, in minutes and seconds,
   and never grows;
6. once the duration has passed, the state resets and calls proceed (and a new detection starts anew);
7. a duration of 0 disables it.
"""

import re
import time

import pytest
from fakes import FakeTimer, fake_core, last_timer
from hypothesis import given
from hypothesis import strategies as st

from mcpbrowser.guards import DEFAULT_KEYWORDS, Cooldown, RateLimiter, is_login_timeout

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


@given(before=noise, after=noise, keyword=st.sampled_from(DEFAULT_KEYWORDS), upper=st.booleans())
def test_property_1_keywords_are_detected(before, after, keyword, upper):
    assert is_login_timeout(before + (keyword.upper() if upper else keyword) + after)


@given(message=noise)
def test_property_2_other_messages_are_not(message):
    if not any(k.lower() in message.lower() for k in DEFAULT_KEYWORDS):
        assert not is_login_timeout(message)


@given(duration=durations, start=st.floats(min_value=0, max_value=1e6), elapsed=st.floats(0, 1))
def test_property_3_starts_now_for_exactly_the_duration(duration, start, elapsed):
    clock = Clock(start)
    c = cooldown(duration, clock)
    text = c.trigger("s", "wait_for_user: timeout")
    assert "timed out" in text
    clock.now = start + elapsed * duration * 0.999
    assert c.remaining_s("s") == pytest.approx(duration - (clock.now - start))
    clock.now = start + duration
    assert c.remaining_s("s") == 0


@given(duration=durations, fraction=st.floats(min_value=0, max_value=0.99))
def test_property_4_every_call_is_refused_without_browser_work(duration, fraction):
    core = fake_core(login_cooldown=duration)
    clock = Clock()
    core.cooldown.clock = clock
    core.cooldown.timers.factory = FakeTimer
    try:
        core.cooldown.trigger(None, "timeout")
        clock.now += fraction * duration
        for tool, args in (("create_session", {}), ("list_sessions", {}),
                           ("navigate", {"sessionId": "x", "url": "http://a.test/"})):
            exc = core.submit(tool, args).exception(5)
            assert exc.code == "COOLDOWN_ACTIVE" and exc.details["remainingMs"] > 0
        assert core.session_ids() == set()  # create_session never reached the browser
    finally:
        core.close()


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
    c = Cooldown(duration, clock=clock, timer_factory=FakeTimer, on_end=lambda key, text: ended.append(key))
    c.trigger("s", "timeout")
    timer = last_timer()
    assert timer.interval == duration and timer.started
    clock.now += duration + extra
    timer.fire()
    assert ended == ["server"] and c.message("s") is None and c.remaining_s("s") == 0
    c.trigger("s", "timeout")  # a new detection starts a new cooldown
    assert c.remaining_s("s") == pytest.approx(duration)


@given(message=st.sampled_from(DEFAULT_KEYWORDS))
def test_property_7_zero_disables(message):
    c = cooldown(0, Clock())
    assert c.trigger("s", message) is None and c.remaining_s("s") == 0 and c.message("s") is None


def test_session_scope_pauses_only_that_session():
    clock = Clock()
    c = cooldown(60, clock, scope="session")
    c.trigger("a", "timeout")
    assert c.remaining_s("a") == 60 and c.remaining_s("b") == 0


def test_chinese_messages():
    c = cooldown(90, Clock(), locale="zh")
    assert "登录或验证超时" in c.trigger("s", "登录超时") and "1 分 30 秒" in c.message("s")


@pytest.mark.parametrize("step, allowed", [(59.999, False), (60.0, True)])
def test_rate_limit_window_boundary(step, allowed):
    clock = Clock(0.0)
    limiter = RateLimiter(2, clock=clock)
    assert limiter.check("k") is None and limiter.check("k") is None
    clock.now = step
    assert (limiter.check("k") is None) is allowed


# -- end to end ----------------------------------------------------------------------------


def test_wrong_selector_on_a_normal_page_never_locks_the_server(make_client, pages):
    c = make_client("--login-cooldown", "300")
    sid = c.tool("create_session")["sessionId"]
    c.tool("navigate", sessionId=sid, url=pages.url("/form"))
    err = c.error("click", sessionId=sid, selector="#typo", timeout=200)
    assert err["errorCode"] == "ELEMENT_NOT_FOUND" and "Timeout" in err["details"]["reason"]
    assert c.tool("list_sessions")["count"] == 1  # no cooldown


def test_wait_for_user_succeeds_when_the_person_finishes(make_client, pages):
    c = make_client()
    sid = c.tool("create_session")["sessionId"]
    c.tool("navigate", sessionId=sid, url=pages.url("/signin"))
    c.tool("click", sessionId=sid, selector="#enter")  # stands in for the person
    done = c.tool("wait_for_user", sessionId=sid, message="Please sign in", selector="#pw", timeout=5000)
    assert done["success"] and done["url"] == pages.url("/signin")
    assert any(m.data.get("event") == "wait_for_user" and m.data["message"] == "Please sign in"
               for m in c.log_messages)


def test_login_timeout_cools_down_then_recovers(make_client, pages):
    c = make_client("--login-cooldown", "2")
    sid = c.tool("create_session")["sessionId"]
    c.tool("navigate", sessionId=sid, url=pages.url("/signin"))
    tripped = c.error("wait_for_user", sessionId=sid, message="Solve the captcha",
                      urlContains="/welcome", timeout=300)
    assert tripped["errorCode"] == "LOGIN_TIMEOUT" and "min" in tripped["message"]
    assert tripped["details"] == {"cause": "WAIT_TIMEOUT", "cooldownSeconds": 2}
    paused = c.error("navigate", sessionId=sid, url=pages.url("/title/never"))
    assert paused["errorCode"] == "COOLDOWN_ACTIVE" and 0 < paused["details"]["remainingMs"] <= 2000
    assert "/title/never" not in pages.hits
    deadline = time.monotonic() + 10
    while not any(m.data.get("event") == "cooldown_ended" for m in c.log_messages):
        assert time.monotonic() < deadline, "no cooldown_ended notification"
        time.sleep(0.1)
    assert any(m.data.get("event") == "cooldown_started" for m in c.log_messages)
    assert c.tool("navigate", sessionId=sid, url=pages.url("/title/after"))["title"] == "after"


def test_failures_on_a_login_page_count_too(make_client, pages):
    c = make_client("--login-cooldown", "60", "--cooldown-scope", "session")
    sid = c.tool("create_session")["sessionId"]
    other = c.tool("create_session")["sessionId"]
    c.tool("navigate", sessionId=sid, url=pages.url("/signin"))
    err = c.error("click", sessionId=sid, selector="#captcha-done", timeout=200)
    assert err["errorCode"] == "LOGIN_TIMEOUT"
    assert c.error("click", sessionId=sid, selector="#enter")["errorCode"] == "COOLDOWN_ACTIVE"
    assert c.tool("navigate", sessionId=other, url=pages.url("/title/free"))["title"] == "free"


def test_other_clients_are_not_told_why_the_cooldown_started():
    """On a shared (HTTP) server the reason quotes the tripping call's error: only its client hears it."""
    c = Cooldown(60, timer_factory=FakeTimer)
    c.trigger("s", "wait_for_user: waited for the URL to contain 'secret-path'", owner="alice")
    assert "secret-path" in c.message("s", owner="alice")
    other = c.message("s", owner="bob")
    assert "secret-path" not in other and "another client's call" in other
    c.trigger("s", "wait_for_user: timeout at /private")  # one client (stdio): it hears why
    assert "/private" in c.message("s")
