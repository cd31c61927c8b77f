"""Session and error-code properties without a browser: the real core with fake pages and fake timers."""

import uuid

import pytest
from fakes import FakeTimer, fake_core, last_timer
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from strategies import json_values, session_timeouts, unknown_ids

from mcpbrowser import errors, schema
from mcpbrowser.core import tool_registry as tools

pytestmark = pytest.mark.unit


def code_of(fut):
    exc = fut.exception(5)
    return None if exc is None else exc.code


@given(st.integers(min_value=1, max_value=8))
def test_session_ids_are_unique_uuid4(count):
    core = fake_core(max_sessions=8)
    try:
        ids = [core.call("create_session")["sessionId"] for _ in range(count)]
        assert len(set(ids)) == count
        assert all(uuid.UUID(i).version == 4 and str(uuid.UUID(i)) == i for i in ids)
    finally:
        core.close()


@given(session_timeouts)
def test_expiry_arithmetic(timeout_ms):
    core = fake_core(session_timeout=timeout_ms)
    try:
        created = core.call("create_session")
        listed = core.call("list_sessions")["sessions"][0]
        assert created["expiresAt"] == listed["expiresAt"] == listed["createdAt"] + timeout_ms
        assert last_timer().interval == pytest.approx(timeout_ms / 1000, abs=1e-9)
    finally:
        core.close()


@given(st.integers(min_value=1, max_value=5), st.data())
def test_closing_removes_the_id(count, data):
    core = fake_core()
    try:
        ids = [core.call("create_session")["sessionId"] for _ in range(count)]
        victim = data.draw(st.sampled_from(ids))
        core.call("close_session", {"sessionId": victim})
        listed = {s["sessionId"] for s in core.call("list_sessions")["sessions"]}
        assert listed == set(ids) - {victim}
        for tool, extra in (("navigate", {"url": "http://x.test/"}), ("close_session", {})):
            assert code_of(core.submit(tool, {"sessionId": victim, **extra})) == "SESSION_NOT_FOUND"
    finally:
        core.close()


def test_errors_come_in_groups_an_embedder_can_catch():
    assert issubclass(errors.ElementNotFound, errors.ElementError)
    assert issubclass(errors.SessionExpired, errors.SessionError)
    assert issubclass(errors.SessionLost, errors.SessionError)
    assert issubclass(errors.DomainNotAllowed, errors.PolicyError)
    assert issubclass(errors.PageCrashed, errors.BrowserFailure)
    assert issubclass(errors.BrowserError, errors.BrowserFailure)
    retryable = {cls.code for cls in errors.ALL_ERRORS if issubclass(cls, errors.Retryable)}
    assert retryable == {"RATE_LIMITED", "COOLDOWN_ACTIVE", "BROWSER_UNAVAILABLE", "CIRCUIT_OPEN",
                         "HISTORY_UNAVAILABLE", "SESSION_HELD_BY_PERSON"}
    assert errors.RateLimited("x", details={"retryAfterMs": 1500}).retry_after_ms == 1500
    assert errors.CooldownActive("x", details={"remainingMs": 90_000}).retry_after_ms == 90_000
    assert errors.BrowserUnavailable().retry_after_ms is None
    assert all(cls.code == errors.BrowserServerError.code for cls in errors.GROUPS)  # groups add no code
    assert not set(errors.GROUPS) & set(errors.ALL_ERRORS)


def test_a_full_quota_is_a_full_disk_and_a_retry_hint_is_a_number_of_milliseconds(tmp_path):
    """DISK_FULL when a write fails for want of space: the disk's (ENOSPC) or the user's quota (EDQUOT); another
    OSError is its errno's name. retry_after_ms is a number the details gave, never a flag taken for 1 ms."""
    import errno

    path = str(tmp_path / "f")
    assert errors.disk_fault(path, OSError(errno.EDQUOT, "Disk quota exceeded")) == "DISK_FULL"
    assert errors.disk_fault(path, OSError(errno.ENOSPC, "No space left on device")) == "DISK_FULL"
    assert errors.disk_fault(path, OSError(errno.EACCES, "Permission denied")) == "EACCES"
    assert errors.RateLimited("x", details={"retryAfterMs": True}).retry_after_ms is None
    assert errors.CooldownActive("x", details={"remainingMs": 2500.7}).retry_after_ms == 2500


def test_every_error_class_has_its_own_code():
    codes = [cls.code for cls in errors.ALL_ERRORS]
    assert len(codes) == len(set(codes)) == len(errors.ALL_ERRORS)
    for cls in errors.ALL_ERRORS:
        exc = cls(session_id="s")
        assert exc.to_dict()["errorCode"] == cls.code and exc.to_dict()["message"]


@given(tool=st.sampled_from(tools.ALL), junk=json_values, field=st.text(min_size=1, max_size=12))
def test_schema_rejects_what_it_does_not_declare(tool, junk, field):
    args = {"sessionId": "s", field: junk}
    found = schema.problems(tool.input_schema, args)
    if field not in tool.input_schema["properties"]:
        assert any(p.startswith(f"arguments.{field} is not a known argument") for p in found)
    if found:
        with pytest.raises(errors.InvalidParameters) as raised:
            schema.validate(tool.input_schema, args)
        assert raised.value.details == {"problems": found}
    else:
        assert schema.validate(tool.input_schema, args) is args


class SessionLifecycle(RuleBasedStateMachine):
    """Random create/close/expire/call sequences: every answer's code matches a simple model."""

    @initialize()
    def start(self):
        FakeTimer.created.clear()
        self.core = fake_core(max_sessions=3)
        self.open, self.closed, self.expired = {}, set(), set()
        self.order = []  # ids in creation order: sampling must not depend on random uuid order

    def teardown(self):
        self.core.close()

    def expected(self, session_id):
        if session_id in self.open:
            return None
        return "SESSION_EXPIRED" if session_id in self.expired else "SESSION_NOT_FOUND"

    @rule()
    def create(self):
        fut = self.core.submit("create_session", {})
        if len(self.open) >= 3:
            assert code_of(fut) == "MAX_SESSIONS_REACHED"
        else:
            assert code_of(fut) is None
            sid = fut.result()["sessionId"]
            self.open[sid] = last_timer()
            self.order.append(sid)

    @precondition(lambda self: self.open)
    @rule(data=st.data())
    def close(self, data):
        sid = data.draw(st.sampled_from([i for i in self.order if i in self.open]))
        assert code_of(self.core.submit("close_session", {"sessionId": sid})) is None
        assert self.open.pop(sid).cancelled
        self.closed.add(sid)

    @precondition(lambda self: self.open)
    @rule(data=st.data())
    def expire(self, data):
        sid = data.draw(st.sampled_from([i for i in self.order if i in self.open]))
        self.open.pop(sid)
        # Calls renew the expiry: a timer that comes due early schedules the next for what is left.
        for _ in range(3):
            [t for t in FakeTimer.created if t.args == (sid,) and not t.cancelled][-1].fire()
            if sid not in self.core.session_ids():
                break
        assert sid not in self.core.session_ids()
        self.expired.add(sid)

    @rule(data=st.data(), tool=st.sampled_from(["navigate", "close_session"]))
    def call(self, data, tool):
        known = self.order
        sid = data.draw(st.sampled_from(known) if known and data.draw(st.booleans()) else unknown_ids)
        args = {"sessionId": sid, "url": "http://x.test/"} if tool == "navigate" else {"sessionId": sid}
        fut = self.core.submit(tool, args)
        assert code_of(fut) == self.expected(sid)
        if tool == "close_session" and sid in self.open:
            self.open.pop(sid)
            self.closed.add(sid)

    @invariant()
    def listing_matches_model(self):
        if hasattr(self, "core"):
            assert {s["sessionId"] for s in self.core.call("list_sessions")["sessions"]} == set(self.open)


SessionLifecycle.TestCase.settings = settings(max_examples=100, stateful_step_count=15, deadline=None)
test_error_codes_are_consistent = SessionLifecycle.TestCase
