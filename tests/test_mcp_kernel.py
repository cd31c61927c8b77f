"""Unit tests of the MCP layer's kernel: the method table and the capabilities it derives, one connection's
resource methods and subscriptions in both eras, and the watch's coalescing, on a core with fake pages."""

import json
import logging
import queue
import threading
import traceback
from concurrent.futures import Future

import pytest
from fakes import FakeClock, FakePage, FakeTimer, fake_core, gate

from mcpbrowser.errors import BrowserError, InternalError
from mcpbrowser.resources.server_log import ServerLog
from mcpbrowser.resources.watch import SessionWatch
from mcpbrowser.session.events import EventBuffers
from mcpbrowser.session.tab import Tab
from mcpbrowser.session.worker import SessionWorker
from mcpbrowser.transports import protocol
from mcpbrowser.transports.mcp_connection import McpConnection
from mcpbrowser.transports.methods import HANDSHAKE, MODERN, MethodTable
from mcpbrowser.transports.tool_methods import TASK_CAPABILITY

pytestmark = pytest.mark.unit

MODERN_META = {protocol.PROTOCOL_VERSION_KEY: "2026-07-28", protocol.CLIENT_CAPABILITIES_KEY: {}}


def test_capabilities_are_what_the_registered_methods_contribute_in_the_version_asked():
    table = MethodTable()
    table.add("a/list", lambda m, c: {}, capability={"a": {}})
    table.add("a/subscribe", lambda m, c: {}, eras=(HANDSHAKE,), capability={"a": {"subscribe": True}})
    table.add("a/listen", lambda m, c: {}, eras=(MODERN,), capability={"a": {"subscribe": True, "listen": {}}})
    table.add("b", lambda m, c: {}, capability=lambda v: {"b": {}} if v >= "2025-06-18" else None)
    assert table.capabilities("2024-11-05") == {"a": {"subscribe": True}}
    assert table.capabilities("2025-11-25") == {"a": {"subscribe": True}, "b": {}}
    assert table.capabilities("2026-07-28") == {"a": {"subscribe": True, "listen": {}}, "b": {}}
    assert table.find("a/subscribe", "2026-07-28") is None and table.find("a/listen", "2025-11-25") is None
    assert table.find("a/list", "2026-07-28").name == "a/list" and table.find("c", "2025-11-25") is None
    merged = table.capabilities("2026-07-28")
    merged["a"]["listen"]["x"] = 1  # a caller's copy: the table's constants stay as they were
    assert table.capabilities("2026-07-28")["a"]["listen"] == {}
    with pytest.raises(ValueError):
        table.add("b", lambda m, c: {})


class Wire:
    """A connection's outbound messages, as a transport would carry them."""

    def __init__(self):
        self.messages: queue.Queue = queue.Queue()
        self.notes: list = []

    def send(self, message, related=None):
        self.messages.put(message)

    def next(self, timeout=5):
        return self.messages.get(timeout=timeout)

    def answer(self, request_id, timeout=5):
        """The answer to request_id, skipping notifications (kept in `notes`)."""
        while True:
            message = self.next(timeout)
            if message.get("id") == request_id and "method" not in message:
                return message
            if "id" not in message:
                self.notes.append(message.get("method"))


@pytest.fixture
def core():
    browser = fake_core()
    yield browser
    browser.close()


def connect(core, owner=None):
    wire = Wire()
    return McpConnection(core, wire.send, owner=owner).open(), wire


def request(connection, wire, request_id, method, params=None):
    connection.handle_line(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                                       "params": params or {}}).encode())
    return wire.answer(request_id)


def test_initialize_and_discover_advertise_by_era():
    """Logging for the handshake eras only (SEP-2577); resources with subscriptions in both."""
    for version, expected in (("2024-11-05", {"tools", "logging", "resources"}),
                              ("2025-11-25", {"tools", "logging", "resources", "tasks"})):
        connection, wire = connect(None)
        result = request(connection, wire, 1, "initialize", {"protocolVersion": version, "capabilities": {},
                                                             "clientInfo": {"name": "t", "version": "1"}})["result"]
        assert set(result["capabilities"]) == expected
        assert result["capabilities"]["resources"] == {"subscribe": True}
        assert result["capabilities"].get("tasks", TASK_CAPABILITY) == TASK_CAPABILITY
    connection, wire = connect(None)
    result = request(connection, wire, 1, "server/discover", {"_meta": MODERN_META})["result"]
    assert result["capabilities"] == {"tools": {"listChanged": True}, "resources": {"subscribe": True}}


def test_params_read_before_the_types_load_are_checked_as_the_models_would(core):
    """protocol.md: initialize settles a handshake-era version (2026-07-28 has no initialize: the latest handshake
    one answers), its capabilities and clientInfo must be objects, a tools/list's _meta too, and an unsupported
    version in a request's _meta is -32022 with the supported list."""
    hello = {"capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    connection, wire = connect(None)
    answer = request(connection, wire, 1, "initialize", {**hello, "protocolVersion": "2026-07-28"})
    assert answer["result"]["protocolVersion"] == "2025-11-25" == connection.version
    for bad in ({"capabilities": []}, {"clientInfo": "t"}):
        connection, wire = connect(None)
        answer = request(connection, wire, 2, "initialize", {**hello, "protocolVersion": "2025-06-18", **bad})
        assert answer["error"]["code"] == protocol.INVALID_PARAMS and next(iter(bad)) in answer["error"]["message"]
    connection, wire = connect(core)
    request(connection, wire, 3, "initialize", {**hello, "protocolVersion": "2025-06-18"})
    assert request(connection, wire, 4, "tools/list", {"_meta": 5})["error"]["code"] == protocol.INVALID_PARAMS
    assert "tools" in request(connection, wire, 5, "tools/list", {"_meta": {}})["result"]  # the control
    old = {protocol.PROTOCOL_VERSION_KEY: "2025-11-25", protocol.CLIENT_CAPABILITIES_KEY: {}}
    error = request(connection, wire, 6, "server/discover", {"_meta": old})["error"]
    assert error["code"] == protocol.UNSUPPORTED_PROTOCOL_VERSION
    assert error["data"] == {"supported": ["2026-07-28"], "requested": "2025-11-25"}


def test_each_subscription_method_answers_in_its_own_era_only(core):
    connection, wire = connect(core)
    answer = request(connection, wire, 1, "resources/subscribe", {"uri": "mcpbrowser://sessions/x/console",
                                                                  "_meta": MODERN_META})
    assert answer["error"]["code"] == protocol.METHOD_NOT_FOUND
    answer = request(connection, wire, 2, "subscriptions/listen", {"notifications": {}})
    assert answer["error"]["code"] == protocol.METHOD_NOT_FOUND
    answer = request(connection, wire, 3, "resources/subscribe", {"uri": "mcpbrowser://sessions/x/console"})
    assert answer["error"]["code"] == -32002  # 2025-11-25's "resource not found"
    answer = request(connection, wire, 4, "resources/read", {"uri": "mcpbrowser://sessions/x/console",
                                                             "_meta": MODERN_META})
    assert answer["error"]["code"] == protocol.INVALID_PARAMS  # 2026-07-28 retired -32002


def log_lines(core, session_id, *texts):
    def keep(state):
        for text in texts:
            state.events._keep_console({"timestamp": 1, "level": "log", "message": text, "location": "x"})

    core.registry.worker(session_id).submit(keep).result(5)


def test_reading_with_a_cursor_gets_only_what_is_new_and_only_a_clients_own(core):
    alice, wire = connect(core, owner="alice")
    bob, bob_wire = connect(core, owner="bob")
    sid = core.call("create_session")["sessionId"]
    core.registry.open_record(sid).owner = "alice"
    uri = f"mcpbrowser://sessions/{sid}/console"
    log_lines(core, sid, "one", "two")
    listed = request(alice, wire, 1, "resources/list")["result"]["resources"]
    server_log = "mcpbrowser://server/log"
    assert {r["uri"] for r in listed} == {uri, f"mcpbrowser://sessions/{sid}/network", server_log}
    assert [r["uri"] for r in request(bob, bob_wire, 1, "resources/list")["result"]["resources"]] == [server_log]
    first = json.loads(request(alice, wire, 2, "resources/read", {"uri": uri})["result"]["contents"][0]["text"])
    assert [e["message"] for e in first["entries"]] == ["one", "two"] and first["cursor"] == 2
    assert "location" not in first["entries"][0]  # as console_logs shows a plain log line
    log_lines(core, sid, "three")
    answer = request(alice, wire, 3, "resources/read", {"uri": first["next"], "_meta": MODERN_META})["result"]
    assert answer["cacheScope"] == "private" and answer["resultType"] == "complete"
    assert [e["message"] for e in json.loads(answer["contents"][0]["text"])["entries"]] == ["three"]
    assert request(bob, bob_wire, 2, "resources/read", {"uri": uri})["error"]["code"] == -32002


def test_a_listen_is_acknowledged_told_and_answered_when_its_session_ends(core):
    connection, wire = connect(core, owner="alice")
    own, other = core.call("create_session")["sessionId"], core.call("create_session")["sessionId"]
    core.registry.open_record(own).owner = "alice"
    uri, foreign = f"mcpbrowser://sessions/{own}/console", f"mcpbrowser://sessions/{other}/console"
    connection.handle_line(json.dumps({"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen", "params": {
        "notifications": {"resourceSubscriptions": [uri, foreign], "toolsListChanged": True},
        "_meta": MODERN_META}}).encode())
    ack = wire.next()
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"] == {"notifications": {"resourceSubscriptions": [uri]},
                             "_meta": {"io.modelcontextprotocol/subscriptionId": "L"}}
    log_lines(core, own, "news")
    told = wire.next()
    assert told == {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                    "params": {"uri": uri, "_meta": {"io.modelcontextprotocol/subscriptionId": "L"}}}
    assert core.registry.worker(own).ticker is not None
    core.call("close_session", {"sessionId": own})
    assert wire.answer("L")["result"] == {"_meta": {"io.modelcontextprotocol/subscriptionId": "L"},
                                          "resultType": "complete"}


def test_an_ended_sessions_owner_is_still_its_clients(core):
    """owner_of of a closed session (the view's may_see, the server log's routing) reads the row it opened with."""
    connection, wire = connect(core, owner="alice")
    request(connection, wire, 0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
    answer = request(connection, wire, 1, "tools/call", {"name": "create_session", "arguments": {}})
    sid = json.loads(answer["result"]["content"][0]["text"])["sessionId"]
    assert core.owner_of(sid) == "alice"
    core.call("close_session", {"sessionId": sid})
    assert core.registry.open_record(sid) is None and core.owner_of(sid) == "alice"


def test_a_cancelled_listen_stops_the_session_ticking_and_is_never_answered(core):
    connection, wire = connect(core)
    sid = core.call("create_session")["sessionId"]
    uri = f"mcpbrowser://sessions/{sid}/network"
    connection.handle_line(json.dumps({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen", "params": {
        "notifications": {"resourceSubscriptions": [uri]}, "_meta": MODERN_META}}).encode())
    assert wire.next()["method"] == "notifications/subscriptions/acknowledged"
    assert core.registry.worker(sid).ticker is not None
    connection.handle_line(json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                       "params": {"requestId": 7}}).encode())
    assert core.registry.worker(sid).ticker is None
    core.call("close_session", {"sessionId": sid})
    with pytest.raises(queue.Empty):
        wire.next(timeout=0.3)


def test_a_handshake_subscription_ends_with_the_connection(core):
    connection, wire = connect(core)
    sid = core.call("create_session")["sessionId"]
    uri = f"mcpbrowser://sessions/{sid}/console"
    request(connection, wire, 0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
    assert request(connection, wire, 1, "resources/subscribe", {"uri": uri})["result"] == {}
    log_lines(core, sid, "hello")
    assert wire.next() == {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}}
    connection.close()
    assert core.registry.worker(sid).ticker is None


def test_a_session_that_expires_or_whose_browser_dies_ends_its_subscriptions(core):
    """live-logs.md: a subscription ends when its session ends, closed, expired or lost: a 2026-07-28 listen is
    answered (the registry's on_ended, however the session left it)."""
    connection, wire = connect(core)
    expiring, crashing = core.call("create_session")["sessionId"], core.call("create_session")["sessionId"]
    for listen_id, sid in (("E", expiring), ("C", crashing)):
        uris = [f"mcpbrowser://sessions/{sid}/console"]
        params = {"notifications": {"resourceSubscriptions": uris}, "_meta": MODERN_META}
        connection.handle_line(json.dumps({"jsonrpc": "2.0", "id": listen_id, "method": "subscriptions/listen",
                                           "params": params}).encode())
        assert wire.next()["method"] == "notifications/subscriptions/acknowledged"
    expiry = [t for t in FakeTimer.created if t.args == (expiring,) and not t.fired and not t.cancelled][-1]
    expiry.fire()
    assert core.registry.open_record(expiring) is None  # positive control: it expired
    assert "result" in wire.answer("E")
    core._browser_lost("test", core.registry.worker(crashing).generation)
    assert core.registry.open_record(crashing) is None
    assert "result" in wire.answer("C")


def two_tabs(core, sid):
    """The session's tab, and a second one (a popup's), each with its own page's log entries."""
    def make(state):
        other = Tab(FakePage())
        state.tabs.append(other)
        for tab in state.tabs:
            tab.log_pages.add(state.events.key(tab.page))
        return state.tab.page, other.page

    return core.registry.worker(sid).submit(make).result(5)


def test_console_logs_show_the_newest_50_and_count_what_the_same_filter_finds_in_other_tabs(core):
    """tools.md: console_logs' limit is 50 by default, `older` says how many it left out; otherTabs counts what the
    same filters find in the other tabs."""
    sid = core.call("create_session")["sessionId"]
    own, other = two_tabs(core, sid)

    def keep(state):
        for page, level, n in ((own, "log", 60), (own, "error", 2), (other, "log", 3), (other, "error", 1)):
            for i in range(n):
                state.events._keep_console({"timestamp": i + 1, "level": level, "message": f"{level} {i}",
                                            "location": "x"}, page)

    core.registry.worker(sid).submit(keep).result(5)
    logs = core.call("console_logs", {"sessionId": sid})
    assert logs["count"] == 50 and logs["older"] == 12 and logs["otherTabs"] == 4
    assert [e["message"] for e in logs["entries"][-2:]] == ["error 0", "error 1"]
    errors = core.call("console_logs", {"sessionId": sid, "level": "error"})
    assert errors["count"] == 2 and errors["otherTabs"] == 1 and "older" not in errors


def test_network_logs_list_routed_static_files_and_the_types_asked_for(core):
    """tools.md: static files that loaded fine are counted (hiddenStatic), not listed, unless routed; a resourceType
    filter lists what it names, static files too."""
    sid = core.call("create_session")["sessionId"]
    own, _ = two_tabs(core, sid)

    def keep(state):
        for name, kind, extra in (("app.js", "script", {}), ("mocked.js", "script", {"routed": "fulfill"}),
                                  ("api", "fetch", {})):
            state.events._keep_network({"method": "GET", "url": f"http://x.test/{name}", "resourceType": kind,
                                        "status": 200, "durationMs": 1.0, "failure": None, "blocked": False,
                                        "timestamp": 1, **extra}, None, own)

    core.registry.worker(sid).submit(keep).result(5)
    logs = core.call("network_logs", {"sessionId": sid})
    assert [e["url"][14:] for e in logs["entries"]] == ["mocked.js", "api"] and logs["hiddenStatic"] == 1
    assert logs["entries"][0]["routed"] == "fulfill"
    scripts = core.call("network_logs", {"sessionId": sid, "resourceType": ["script"]})
    assert [e["url"][14:] for e in scripts["entries"]] == ["app.js", "mocked.js"] and "hiddenStatic" not in scripts


def test_the_server_log_tells_and_keeps_a_clients_own_records_even_once_its_session_closed():
    """live-logs.md: a client's server log holds what happened in its own sessions (a record after its session
    closed too), only its subscriptions hear of them, and a cursor from the future reads what comes next."""
    owners = {"s1": "alice"}
    server_log = ServerLog(owners.get)
    heard = {"alice": 0, "bob": 0}
    for who in heard:
        server_log.view(who).on_log = lambda name, who=who: heard.__setitem__(who, heard[who] + 1)

    def emit(message):
        server_log.emit(logging.makeLogRecord({"name": "mcpbrowser", "levelno": logging.INFO, "levelname": "INFO",
                                               "msg": message, "session": "s1"}))

    emit("session created")
    assert heard == {"alice": 1, "bob": 0}  # bob hears nothing of alice's work
    del owners["s1"]  # closed: the registry no longer knows it
    emit("session closed")
    assert [e["data"]["message"] for e in server_log.since("alice", 0, 10)["entries"]] == [
        "session created", "session closed"]
    assert server_log.since("bob", 0, 10) == {"entries": [], "cursor": 0, "more": False}
    future = server_log.since("alice", 99, 10)
    assert future["entries"] == [] and future["cursor"] == 2
    emit("later")
    assert [e["data"]["message"] for e in server_log.since("alice", future["cursor"], 10)["entries"]] == ["later"]


class FakeResource:
    def __init__(self, name):
        self.name = name

    def position(self, events):
        return events.log_position(self.name)

    def uri(self, session_id):
        return f"mcpbrowser://sessions/{session_id}/{self.name}"


def test_the_watch_tells_at_most_once_per_window_and_never_leaves_news_untold():
    """Entries as Playwright dispatches them (on_log), a page that logs without pause for 2 s: the
    subscriber hears at most once per window, and of the last entries when the window closes."""
    FakeTimer.created.clear()
    events = EventBuffers(1000, 10, None, lambda: None)
    watch = SessionWatch("s", {"console": FakeResource("console")}, events, coalesce_s=0.25,
                         clock=FakeClock.monotonic, timer_factory=FakeTimer)
    told = []

    class Listener:
        def updated(self, uri):
            told.append((FakeClock.now, uri, events.log_position("console")))

        def ended(self, uri):
            pass

    events._keep_console({"message": "before"})
    watch.add("console", object(), Listener())
    watch.changed("console")  # what an idle session's tick does: nothing came since the subscription
    assert told == [] and events.on_log == watch.changed
    start = FakeClock.now
    for step in range(200):  # 100 entries a second for 2 s, each dispatched as it comes
        FakeClock.now = start + step * 0.01
        events._keep_console({"message": str(step)})
        for timer in [t for t in FakeTimer.created if not t.fired and t.due <= FakeClock.now]:
            timer.fire()
    assert 7 <= len(told) <= 2 / 0.25 + 1
    assert all(b[0] - a[0] >= 0.25 - 1e-9 for a, b in zip(told, told[1:], strict=False))
    pending = [t for t in FakeTimer.created if not t.fired]
    assert len(pending) == 1  # one trailing timer, not one per entry
    pending[0].fire()
    assert told[-1][2] == 201 and told[-1][1] == "mcpbrowser://sessions/s/console"  # the last entry, told
    count = len(told)
    watch.changed("console")  # nothing new: nothing told
    watch.close()
    events._keep_console({"message": "after close"})
    assert len(told) == count and events.on_log is None


def test_log_numbers_survive_the_ring_and_say_what_it_pushed_out():
    events = EventBuffers(3, 3, None, lambda: None)
    for i in range(5):
        events._keep_console({"message": str(i)})
    entries, cursor, skipped, more = events.log_since("console", 0, 10)
    assert ([e["message"] for e in entries], cursor, skipped, more) == (["2", "3", "4"], 5, 2, False)
    entries, cursor, skipped, more = events.log_since("console", 3, 1)
    assert ([e["message"] for e in entries], cursor, skipped, more) == (["3"], 4, 0, True)
    assert events.log_since("console", 99, 10) == ([], 5, 0, False)  # a cursor from the future reads nothing
    assert events.log_position("network") == 0


def test_a_worker_ticks_while_idle_only_while_its_ticker_is_set():
    ticked = threading.Event()
    count = []

    def tick(state):
        count.append(1)
        if len(count) >= 3:
            ticked.set()

    worker = SessionWorker("0123456789abcdef", lambda w: object())
    assert worker.start().result(5) is True
    worker.tick("logs", 0.01, tick)
    worker.submit(lambda state: None).result(5)  # a command wakes the idle loop to see the ticker
    assert ticked.wait(5)
    worker.untick("logs")
    worker.submit(lambda state: None).result(5)
    stopped_at = len(count)
    assert worker.submit(lambda state: len(count)).result(5) == stopped_at
    worker.stop()
    assert worker.join(5)


def test_the_server_log_shows_a_client_the_records_of_its_own_sessions(core):
    from mcpbrowser.logs import log

    alice, wire = connect(core, owner="alice")
    bob, bob_wire = connect(core, owner="bob")
    everyone, everyone_wire = connect(core)  # stdio's: sees all
    own, other = core.call("create_session")["sessionId"], core.call("create_session")["sessionId"]
    core.registry.open_record(own).owner = "alice"
    core.registry.open_record(other).owner = "bob"
    uri = "mcpbrowser://server/log"
    assert uri in {r["uri"] for r in request(alice, wire, 1, "resources/list")["result"]["resources"]}
    request(alice, wire, 2, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
    assert request(alice, wire, 3, "resources/subscribe", {"uri": uri})["result"] == {}
    log.warning("about alice", extra={"event": "probe", "session": own})
    assert wire.next() == {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}}
    log.warning("about bob", extra={"event": "probe", "session": other})
    log.warning("about nobody", extra={"event": "probe"})

    def read(connection, wire, request_id, after=0):
        answer = request(connection, wire, request_id, "resources/read", {"uri": f"{uri}?after={after}"})
        return json.loads(answer["result"]["contents"][0]["text"])

    seen = read(alice, wire, 4)
    assert [e["data"]["message"] for e in seen["entries"] if e["data"].get("event") == "probe"] == ["about alice"]
    assert seen["entries"][-1]["level"] == "warning" and seen["entries"][-1]["data"]["session"] == own
    assert read(alice, wire, 5, seen["cursor"])["entries"] == []
    theirs = [e["data"]["message"] for e in read(bob, bob_wire, 1)["entries"] if e["data"].get("event") == "probe"]
    assert theirs == ["about bob"]
    all_of_them = [e["data"]["message"] for e in read(everyone, everyone_wire, 1)["entries"]
                   if e["data"].get("event") == "probe"]
    assert all_of_them == ["about alice", "about bob", "about nobody"]
    with pytest.raises(queue.Empty):  # bob's and the server's records told alice nothing
        wire.next(timeout=0.4)
    alice.close()
    assert core.resources.server_log._views == {}


def test_a_listen_naming_a_session_twice_ends_once_with_it(core):
    connection, wire = connect(core)
    sid = core.call("create_session")["sessionId"]
    uri = f"mcpbrowser://sessions/{sid}/console"
    connection.handle_line(json.dumps({"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen", "params": {
        "notifications": {"resourceSubscriptions": [uri, uri, f"{uri}?after=3", uri.replace("console", "network")]},
        "_meta": MODERN_META}}).encode())
    ack = wire.next()
    assert ack["params"]["notifications"]["resourceSubscriptions"] == [uri, f"{uri}?after=3",
                                                                       uri.replace("console", "network")]
    core.call("close_session", {"sessionId": sid})
    assert wire.answer(9)["result"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": 9}
    with pytest.raises(queue.Empty):
        wire.next(timeout=0.3)


def test_a_request_id_is_held_while_its_call_runs_and_freed_when_the_tool_is_unknown(core):
    connection, wire = connect(core)
    request(connection, wire, 1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                "clientInfo": {"name": "t", "version": "1"}})
    refused = request(connection, wire, 5, "tools/call", {"name": "no_such_tool", "arguments": {}})
    assert refused["error"]["code"] == protocol.INVALID_PARAMS
    sid = core.call("create_session")["sessionId"]
    command, entered, release = gate()
    core.registry.worker(sid).submit(command)
    assert entered.wait(5)
    # Id 5 is free again (the unknown tool never started); while its call waits, 5 is in use.
    connection.handle_line(json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
        "name": "console_logs", "arguments": {"sessionId": sid}}}).encode())
    duplicate = request(connection, wire, 5, "tools/call", {"name": "console_logs", "arguments": {"sessionId": sid}})
    assert duplicate["error"]["code"] == protocol.INVALID_REQUEST and "already in use" in duplicate["error"]["message"]
    release.set()
    assert "result" in wire.answer(5), "the first call with id 5 is answered once it ran"


def test_a_cancel_between_reserving_an_id_and_starting_its_call_cancels_the_call(core):
    connection, _ = connect(core)
    connection.reserve(9)
    connection.cancel(9)  # an HTTP stream closed while the dispatcher was still deciding
    started: Future = Future()
    assert connection.track(9, started) is started and started.cancelled()
    assert connection.untrack(9) is False, "a cancelled call is never answered"
    connection.reserve(9)  # and its id is free again


def test_a_request_cancelled_while_it_is_refused_gets_no_answer(core, monkeypatch):
    """A cancel (an HTTP stream closed) that lands while the dispatcher refuses the call: the refusal
    went out all the same, for a request the client had given up."""
    connection, wire = connect(core)
    request(connection, wire, 1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                "clientInfo": {"name": "t", "version": "1"}})
    refuse = core.call_tool

    def cancelled_meanwhile(*args, **kwargs):
        connection.cancel(7)
        return refuse(*args, **kwargs)

    monkeypatch.setattr(core, "call_tool", cancelled_meanwhile)
    connection.handle_line(json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                       "params": {"name": "no_such_tool", "arguments": {}}}).encode())
    connection.handle_line(json.dumps({"jsonrpc": "2.0", "id": 8, "method": "ping"}).encode())
    seen = [wire.next()]
    while seen[-1].get("id") != 8:
        seen.append(wire.next())
    assert all(message.get("id") != 7 for message in seen), seen
    connection.reserve(7)  # its id is free again


class Records(logging.Handler):
    """The server log's records, as its stderr handler would get them."""

    def __init__(self):
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


def test_a_bug_of_ours_in_a_tool_is_an_internal_error_logged_with_its_traceback_and_never_trips_the_breaker():
    """A KeyError in a session tool's handler, an AttributeError in a core tool's: INTERNAL_ERROR on the wire,
    the traceback in the log, and the breaker (here at one failure) not moved. Playwright's own error is
    still BROWSER_ERROR, and counts."""
    import playwright.sync_api

    from mcpbrowser.logs import log
    from mcpbrowser.tools.base import CoreTool, SessionTool

    def session_bug(state, args, response):
        return {}["a key our code forgot"]

    def core_bug(core, args, call):
        return core.no_such_part

    def browser_failed(state, args, response):
        raise playwright.sync_api.Error("Target page, context or browser has been closed")

    schema = {"type": "object", "properties": {"sessionId": {"type": "string"}}, "required": ["sessionId"]}
    core = fake_core(breaker_threshold=1, breaker_reset=60)
    core.tools["session_bug"] = SessionTool("session_bug", "Bug", "fails", schema, session_bug)
    core.tools["browser_failed"] = SessionTool("browser_failed", "Fails", "fails", schema, browser_failed)
    core.tools["core_bug"] = CoreTool("core_bug", "Bug", "fails", {"type": "object"}, core_bug)
    records = Records()
    log.addHandler(records)
    try:
        connection, wire = connect(core)
        request(connection, wire, 0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                    "clientInfo": {"name": "t", "version": "1"}})
        sid = core.call("create_session")["sessionId"]
        breaker = core.dispatcher.breaker
        for request_id, (name, args, bug) in enumerate((("session_bug", {"sessionId": sid}, KeyError),
                                                        ("core_bug", {}, AttributeError)), 1):
            for _ in range(2):  # the second call ran too: no breaker opened on the first
                answer = request(connection, wire, request_id, "tools/call", {"name": name, "arguments": args})
                error = json.loads(answer["result"]["content"][0]["text"])
                assert answer["result"]["isError"] and error["errorCode"] == "INTERNAL_ERROR", error
            logged = [r for r in records.records if r.exc_info and r.exc_info[0] is bug]
            assert len(logged) == 2 and logged[0].levelno == logging.ERROR and logged[0].tool == name
            assert name in "".join(traceback.format_exception(*logged[0].exc_info))  # the handler's frame
            assert breaker.check(name) is None and breaker._failures[name] == 0
        for name, args in (("session_bug", {"sessionId": sid}), ("core_bug", {})):  # the library's view
            with pytest.raises(InternalError) as raised:
                core.call(name, args)
            assert raised.value.ref_id and raised.value.details == {"exception": raised.value.bug.__class__.__name__}
        with pytest.raises(BrowserError):
            core.call("browser_failed", {"sessionId": sid})
        assert breaker.check("browser_failed") is not None  # Playwright's failure counted: open at one
    finally:
        log.removeHandler(records)
        core.close()


def test_the_instructions_name_only_tools_and_parameters_that_exist():
    """What initialize teaches the model (issue 74: the cheap reads) names real tools and their
    parameters: a renamed tool or parameter must not leave the model a wrong lesson."""
    import re

    from mcpbrowser.core.tool_registry import ALL
    from mcpbrowser.transports.mcp_connection import INSTRUCTIONS
    tools = {tool.name: tool.input_schema.get("properties", {}) for tool in ALL}
    named = [word for word in re.findall(r"[a-z]+_[a-z_]+|\b[a-z]+(?=\()|\bsnapshot\b", INSTRUCTIONS)]
    assert {"create_session", "snapshot", "fill_form", "get_content", "close_session"} <= set(named)
    assert all(word in tools or any(word in props for props in tools.values()) for word in named), named
    for parameter in ("query", "section", "ref", "sessionId", "ref_id", "search_for"):
        assert parameter in INSTRUCTIONS
        assert any(parameter in props for props in tools.values()), parameter


def test_a_call_that_names_no_session_acts_on_its_clients_one_session_and_no_one_elses(core):
    """tools/list names no sessionId while its client has at most one session open: a session tool's call without
    it acts on that session (the request row says so), and with none or several open it is refused, saying which
    (core/dispatch.py). With two open the list names it (not required) and the client hears the list changed; when
    one closes, again (tools/base.py, Tool._published)."""
    clients = {}
    for owner in ("ann", "bob"):
        connection, wire = connect(core, owner=owner)
        request(connection, wire, 1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                    "clientInfo": {"name": owner, "version": "1"}})
        clients[owner] = connection, wire

    def call(owner, request_id, name, args):
        connection, wire = clients[owner]
        answer = request(connection, wire, request_id, "tools/call", {"name": name, "arguments": args})["result"]
        return answer["isError"], json.loads(answer["content"][0]["text"])

    def listed(owner, request_id):
        answer = request(*clients[owner], request_id, "tools/list")["result"]
        tools = {t["name"]: t["inputSchema"] for t in answer["tools"]}
        session_tools = [name for name, tool in tools.items() if name not in (
            "create_session", "close_session", "resume_session", "list_sessions", "get_content", "enable_tools")]
        assert len(session_tools) >= 12
        named = {name for name in session_tools if "sessionId" in tools[name]["properties"]}
        assert not [name for name in session_tools if "sessionId" in tools[name].get("required", [])]
        assert tools["close_session"]["required"] == ["sessionId"]  # a core tool still names its session
        assert named in (set(), set(session_tools)), named  # all or none
        return bool(named)

    assert listed("ann", 2) is False
    failed, error = call("ann", 3, "console_logs", {})
    assert failed and "no session is open" in error["message"] and "create_session" in error["message"]
    assert "resume_session" in error["message"]  # one that expired is not lost: it may be brought back
    sessions = {owner: call(owner, 4, "create_session", {})[1]["sessionId"] for owner in ("ann", "bob")}
    assert listed("ann", 40) is False and "notifications/tools/list_changed" not in clients["ann"][1].notes
    failed, logs = call("ann", 5, "console_logs", {})
    assert not failed, logs
    rows = core.timeline(sessions["ann"])
    assert [row["refId"] for row in rows if row["tool"] == "console_logs"] == [logs["refId"]]
    assert not [row for row in core.timeline(sessions["bob"]) if row["tool"] == "console_logs"]  # not bob's
    failed, named = call("ann", 41, "console_logs", {"sessionId": sessions["ann"]})
    assert not failed, named  # a sessionId the list does not name is still taken
    second = call("ann", 6, "create_session", {})[1]["sessionId"]
    assert "notifications/tools/list_changed" in clients["ann"][1].notes
    assert listed("ann", 42) is True and listed("bob", 43) is False  # bob still has one
    failed, error = call("ann", 7, "console_logs", {})
    assert failed and "2 sessions are open" in error["message"] and second in error["message"]
    assert sessions["bob"] not in error["message"]  # another client's session is not even named
    failed, named = call("ann", 8, "console_logs", {"sessionId": second})
    assert not failed  # positive control: naming one still works with several open
    clients["ann"][1].notes.clear()
    assert not call("ann", 44, "close_session", {"sessionId": second})[0]
    assert "notifications/tools/list_changed" in clients["ann"][1].notes
    assert listed("ann", 45) is False
