"""Sessions over a fleet of real `playwright run-server` processes on loopback."""

import json
from collections import Counter

import pytest
from backends import RunServer
from support import wait_for

pytestmark = pytest.mark.slow


@pytest.fixture
def fleet(short_tmp):
    servers = [RunServer(short_tmp).start() for _ in range(3)]
    yield servers
    for server in servers:
        server.stop()


def _placed(client):
    listed = client.tool("list_sessions")
    return {s["sessionId"]: s["endpoint"] for s in listed["sessions"]}, {e["endpoint"]: e for e in listed["endpoints"]}


def test_a_fleet_spreads_sessions_loses_only_one_endpoints_and_takes_it_back(fleet, pages, tmp_path, make_client):
    a, b, c = fleet
    # Per-endpoint capacity and headers from the config file; the token in A's URL is never shown.
    config = tmp_path / "fleet.json"
    config.write_text(json.dumps({"ws-endpoint": [{"url": a.url + "?token=FLEETSECRET", "capacity": 2},
                                                  {"url": b.url, "capacity": 2, "headers": {"X-Team": "qa"}},
                                                  c.url]}))
    # --browser-ping 2: A's probes while it is down come at most 2 s apart, so its return is seen soon after.
    client = make_client("--config", str(config), "--endpoint-capacity", "2", "--pool-size", "0", "--browser-ping", "2")
    sessions = [client.tool("create_session")["sessionId"] for _ in range(3)]
    placed, endpoints = _placed(client)
    assert sorted(Counter(placed.values()).values()) == [1, 1, 1], placed  # the most free capacity first
    assert set(endpoints) == {a.url, b.url, c.url}
    assert all(e["state"] == "up" and e["capacity"] == 2 and e["sessions"] == 1 for e in endpoints.values())
    loaded = {sid: client.tool("navigate", sessionId=sid, url=pages.url(f"/title/{sid[:8]}"))["refId"]
              for sid in sessions}

    on_a = next(sid for sid, url in placed.items() if url == a.url)
    # The navigate's after-call work (its capture, then the state resume needs) runs after its answer:
    # reading its page waits for it, so A dies with the session's state saved, as after any pause.
    client.tool("get_content", ref_id=loaded[on_a])
    a.stop(sig=9)  # the machine behind A is gone, browsers and all
    err = client.error("snapshot", sessionId=on_a)
    assert err["errorCode"] == "SESSION_LOST" and err["details"]["resumable"] is True, err
    for sid in sessions:  # the others never noticed
        if sid != on_a:
            assert client.tool("snapshot", sessionId=sid)["title"] == sid[:8]
    assert wait_for(lambda: _placed(client)[1][a.url]["state"] == "down", seconds=10)

    resumed = client.tool("resume_session", sessionId=on_a)
    assert resumed["url"].endswith(f"/title/{on_a[:8]}")
    extra = client.tool("create_session")["sessionId"]
    placed, endpoints = _placed(client)
    assert placed[on_a] != a.url and placed[extra] != a.url
    assert endpoints[b.url]["sessions"] == endpoints[c.url]["sessions"] == 2
    full = client.error("create_session")  # B and C are full, and A is down
    assert full["errorCode"] == "MAX_SESSIONS_REACHED" and "full" in full["message"], full

    a.start()  # back on its port: the backoff's probes find it, and it takes sessions again
    assert wait_for(lambda: _placed(client)[1][a.url]["state"] == "up", seconds=30)
    back = client.tool("create_session")["sessionId"]
    client.tool("navigate", sessionId=back, url=pages.url("/title/back"))
    assert _placed(client)[0][back] == a.url

    events = [e.get("event") for e in client.server_log()]
    assert "endpoint_down" in events and "endpoint_up" in events
    assert "FLEETSECRET" not in json.dumps(client.server_log())
