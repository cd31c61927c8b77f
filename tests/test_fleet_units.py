"""The fleet's placement and probes: fake session threads (objects with `alive`), real HTTP for probes."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from support import wait_for

from mcpbrowser.config import Config, ConfigError, RemoteEndpoint
from mcpbrowser.core.fleet import Fleet, probe, scrub
from mcpbrowser.errors import BrowserError, BrowserUnavailable, MaxSessionsReached
from mcpbrowser.session.worker import SessionWorker

pytestmark = pytest.mark.unit


class Worker(SessionWorker):
    """A session's worker, its thread never started: alive for the fleet's count."""

    alive = True

    def __init__(self):
        super().__init__("0123456789abcdef", None)


def fleet_of(*capacities, ping=0):
    specs = tuple(RemoteEndpoint(f"ws://10.0.0.{n}:3000/", "ws", capacity=c) for n, c in enumerate(capacities, 1))
    return Fleet(specs, ping, threading.Event())


def place(fleet, fails=()):
    """A session through fleet.attach; connect fails on the endpoints whose URL is in `fails`."""
    worker = Worker()

    def connect(spec):
        if spec.url in fails:
            raise RuntimeError(f"connect ECONNREFUSED\nCall log:\n - {spec.url}")
        return spec.url

    return worker, fleet.attach(worker, connect)


def test_sessions_go_where_most_capacity_is_free_and_stay_counted_while_alive():
    fleet = fleet_of(1, 2, 3)
    urls = [place(fleet)[1] for _ in range(6)]
    # Free (1, 2, 3): the third; then (1, 2, 2), and the first in order wins a tie; and so on.
    assert [u.split(".")[3][0] for u in urls] == ["3", "2", "3", "1", "2", "3"]
    with pytest.raises(MaxSessionsReached, match="full"):
        place(fleet)
    worker = fleet.members[1].workers[0]
    worker.alive = False  # its thread ended: the slot is free again
    assert place(fleet)[1] == fleet.members[1].spec.url
    assert [h["sessions"] for h in fleet.health()] == [1, 2, 3]


def test_a_failing_endpoint_is_skipped_and_taken_out_of_placement():
    fleet = fleet_of(5, 5)
    first, second = (m.spec.url for m in fleet.members)
    worker, url = place(fleet, fails={first})
    assert url == second and worker.endpoint == second
    health = fleet.health()
    assert health[0]["state"] == "down" and "ECONNREFUSED" in health[0]["error"] and health[1]["state"] == "up"
    assert place(fleet)[1] == second  # not offered again until a probe says it answers
    with pytest.raises(BrowserError, match="Could not attach") as failed:
        place(fleet, fails={second})
    assert "Call log" not in str(failed.value)  # the first line of each failure only
    with pytest.raises(BrowserUnavailable) as none:  # both down: say so, with when to retry
        place(fleet)
    assert none.value.details["retryAfterMs"] >= 1000


def test_a_session_that_finds_its_browser_gone_takes_the_endpoint_out():
    fleet = fleet_of(5, 5)
    worker, url = place(fleet)
    fleet.suspect(worker, "Target page, context or browser has been closed")
    assert [h["state"] for h in fleet.health()] == ["down", "up"]
    fleet.suspect(Worker(), "an unknown worker changes nothing")
    assert [h["state"] for h in fleet.health()] == ["down", "up"]


def test_what_fleet_errors_show_hides_tokens_passwords_and_header_values():
    spec = RemoteEndpoint("wss://user:pw@grid.example:443/wd/hub?token=T0KEN", "grid",
                          headers=(("Authorization", "Bearer HEADERSECRET"),))
    text = scrub("failed wss://user:pw@grid.example:443/wd/hub?token=T0KEN and http://x/?k=1 "
                 "sent Bearer HEADERSECRET, then HEADERSECRET", spec)
    assert text == "failed wss://grid.example:443/wd/hub and http://x/ sent ***, then ***"
    fleet = Fleet((spec,), 0, threading.Event())
    with pytest.raises(BrowserError) as failed:
        fleet.attach(Worker(), lambda s: (_ for _ in ()).throw(RuntimeError(f"refused {s.url} HEADERSECRET")))
    shown = str(failed.value) + json.dumps(fleet.health())
    assert "T0KEN" not in shown and "pw@" not in shown and "HEADERSECRET" not in shown
    assert "wss://grid.example:443/wd/hub" in shown


class _Status(BaseHTTPRequestHandler):
    def do_GET(self):
        self.server.seen.append((self.path, self.headers.get("Authorization")))
        body = json.dumps(self.server.answer).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def status_server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Status)
    httpd.seen, httpd.answer = [], {"value": {"ready": True}}
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def test_probes_ask_each_kind_its_own_question(status_server):
    port = status_server.server_port
    grid = RemoteEndpoint(f"http://me:secret@127.0.0.1:{port}/wd/hub", "grid")
    assert probe(grid) is None
    assert status_server.seen[-1] == ("/wd/hub/status", "Basic bWU6c2VjcmV0")  # user:key@ becomes Basic auth
    status_server.answer = {"value": {"ready": False}}
    assert "not ready" in probe(grid)
    status_server.answer = {"something": "else"}
    assert "not a Selenium Grid" in probe(grid)
    assert probe(RemoteEndpoint(f"http://127.0.0.1:{port}", "cdp")) is None
    assert status_server.seen[-1][0] == "/json/version"
    assert probe(RemoteEndpoint(f"ws://127.0.0.1:{port}/", "ws", headers=(("Authorization", "x"),))) is None
    assert status_server.seen[-1] == ("/", "x")
    status_server.shutdown()
    status_server.server_close()
    assert "ConnectionRefused" in probe(RemoteEndpoint(f"ws://127.0.0.1:{port}/", "ws"))


def test_a_down_endpoint_rejoins_when_its_probe_answers(status_server):
    stopping = threading.Event()
    spec = RemoteEndpoint(f"http://127.0.0.1:{status_server.server_port}", "grid", capacity=2)
    status_server.answer = {"value": {"ready": False}}
    fleet = Fleet((spec,), 0, stopping)
    fleet.start()
    try:
        fleet.suspect(place(fleet)[0], "gone")
        assert fleet.health()[0]["state"] == "down"
        assert wait_for(lambda: len(status_server.seen) >= 2, seconds=5)  # probed, with backoff, still down
        assert fleet.health()[0]["state"] == "down"
        status_server.answer = {"value": {"ready": True}}
        assert wait_for(lambda: fleet.health()[0]["state"] == "up", seconds=10)
    finally:
        stopping.set()
        fleet.stop()


class _Stopping(threading.Event):
    """The fleet's stop event whose waits (the probes' backoff) are recorded and return at once."""

    def __init__(self):
        super().__init__()
        self.waits = []

    def wait(self, timeout=None):
        self.waits.append(timeout)
        time.sleep(0.005)
        return self.is_set()


@pytest.mark.parametrize("ping, waits", [(1, [0.5, 1, 1, 1, 1, 1, 1, 1]), (0, [0.5, 1, 2, 4, 8, 16, 30, 30])])
def test_a_down_endpoints_backoff_waits_no_longer_than_the_ping(status_server, ping, waits):
    stopping = _Stopping()
    spec = RemoteEndpoint(f"http://127.0.0.1:{status_server.server_port}", "grid", capacity=2)
    status_server.answer = {"value": {"ready": False}}
    fleet = Fleet((spec,), ping, stopping)
    fleet.start()
    try:
        fleet.suspect(place(fleet)[0], "gone")
        assert wait_for(lambda: len(stopping.waits) >= len(waits), seconds=10)
        assert stopping.waits[:len(waits)] == waits
        status_server.answer = {"value": {"ready": True}}
        assert wait_for(lambda: fleet.health()[0]["state"] == "up", seconds=10)
    finally:
        stopping.set()
        fleet.stop()


def test_endpoint_settings_parse_and_refuse_clearly():
    c = Config(db=":memory:", ws_endpoint="ws://a:1/, ws://b:2/", cdp_endpoint=[{"url": "http://c:9222",
                                                                                 "capacity": 3}],
               selenium_grid="http://g:4444", endpoint_headers="A: 1", endpoint_capacity=4)
    found = {e.url: e for e in c.remote_endpoints()}
    assert [e.kind for e in found.values()] == ["ws", "ws", "cdp", "grid"]
    assert found["http://c:9222"].capacity == 3 and found["ws://a:1/"].capacity == 4
    assert found["http://g:4444"].headers == (("A", "1"),)
    assert Config(db=":memory:", ws_endpoint="ws://a:1/").remote_endpoints()[0].capacity == 10  # --max-sessions
    for bad, match in (("http://a:1/", "ws:// or wss://"), ("ws://a:x/", "with a host"),
                       ("ws://a:1/,ws://a:1/", "twice"), ([{"url": "ws://a:1/", "cap": 2}], "keys url"),
                       ([{"url": "ws://a:1/", "capacity": 0}], "at least 1"),
                       ([{"url": "ws://a:1/", "headers": ["nocolon"]}], "Name: value")):
        with pytest.raises(ConfigError, match=match):
            Config(db=":memory:", ws_endpoint=bad)
    with pytest.raises(ConfigError) as hidden:
        Config(db=":memory:", selenium_grid="ftp://u:SECRETPW@g/?token=SECRETTOKEN")
    assert "SECRET" not in str(hidden.value)
    with pytest.raises(ConfigError, match="JSON object"):
        Config(db=":memory:", selenium_capabilities="[1]")
    flags, _ = Config.load(["--ws-endpoint", "ws://a:1/", "--ws-endpoint", "ws://b:1/,ws://c:1/"], {})
    assert [e.url for e in flags.ws_endpoint] == ["ws://a:1/", "ws://b:1/", "ws://c:1/"]
    shown = Config(db=":memory:", selenium_grid="http://u:pw@g:4444/?t=1",
                   selenium_capabilities='{"sauce:options": {"accessKey": "K3Y"}}').public()
    assert shown["selenium_grid"][0]["url"] == "http://g:4444/" and "K3Y" not in json.dumps(shown)


def test_a_server_stopping_while_an_endpoint_is_down_ends_its_watcher_quietly(status_server, monkeypatch):
    # The backoff's stop ends the retrying without an answer: that is no error (it raised tenacity's RetryError,
    # whose traceback went to stderr as plain text).
    failures = []
    monkeypatch.setattr(threading, "excepthook", failures.append)
    stopping = threading.Event()
    spec = RemoteEndpoint(f"http://127.0.0.1:{status_server.server_port}", "grid", capacity=2)
    status_server.answer = {"value": {"ready": False}}
    fleet = Fleet((spec,), 0, stopping)
    fleet.start()
    fleet.suspect(place(fleet)[0], "gone")
    assert wait_for(lambda: len(status_server.seen) >= 2, seconds=5)  # in the backoff
    stopping.set()
    fleet.stop()
    assert wait_for(lambda: not any(t.name == "fleet-0" for t in threading.enumerate()), seconds=5)
    assert failures == [], [f.exc_type for f in failures]
