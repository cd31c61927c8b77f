"""The warm pool: ready workers are handed out as sessions, refilled, and never exceed --max-sessions."""
import time

import pytest
from fakes import fake_core
from support import wait_for

pytestmark = pytest.mark.e2e


def test_pool_hands_out_ready_workers_and_refills():
    core = fake_core(pool_size=2, max_sessions=5)
    try:
        core.create_session()  # cold: nothing was pooled yet
        assert wait_for(lambda: len(core.warm_pool.idle) == 2)
        pooled = {w.session_id for w in core.warm_pool.idle}
        second = core.create_session()
        assert second.id in pooled
        assert wait_for(lambda: len(core.warm_pool.idle) == 2)
    finally:
        core.close()


def test_pool_never_exceeds_max_sessions():
    core = fake_core(pool_size=3, max_sessions=2)
    try:
        first = core.create_session()
        assert wait_for(lambda: len(core.warm_pool.idle) == 1)
        time.sleep(0.1)
        assert len(core.warm_pool.idle) == 1  # room for only one more session
        core.create_session()
        time.sleep(0.1)
        assert len(core.warm_pool.idle) == 0 and core.warm_pool.filling == 0
        first.close()
        assert wait_for(lambda: len(core.warm_pool.idle) == 1)
    finally:
        core.close()


def test_pool_size_zero_keeps_nothing_ready():
    core = fake_core(pool_size=0)
    try:
        core.create_session()
        time.sleep(0.1)
        assert len(core.warm_pool.idle) == 0
    finally:
        core.close()


def test_close_stops_pooled_workers():
    core = fake_core(pool_size=2)
    core.create_session()
    assert wait_for(lambda: len(core.warm_pool.idle) == 2)
    idle = list(core.warm_pool.idle)
    core.close()
    assert all(w.join(5) for w in idle)


def test_pooled_session_is_fresh_and_isolated(make_client, pages):
    c = make_client("--pool-size", "1")
    first = c.tool("create_session")["sessionId"]
    c.tool("navigate", sessionId=first, url=pages.url("/storage"))
    c.tool("type", sessionId=first, selector="#v", text="leak")
    c.tool("click", sessionId=first, selector="#save")
    def pooled_and_unused():
        events = c.server_log()
        ready = sum(e.get("event") == "pool_worker_ready" for e in events)
        used = sum(e.get("source") == "pool" for e in events)
        return ready > used

    assert wait_for(pooled_and_unused, 30)
    second = c.tool("create_session")["sessionId"]
    sources = {e["session"]: e["source"] for e in c.server_log() if e.get("event") == "session_created"}
    assert sources[second] == "pool"
    listed = {s["sessionId"]: s for s in c.tool("list_sessions")["sessions"]}
    assert listed[second]["url"] == "about:blank"
    c.tool("navigate", sessionId=second, url=pages.url("/storage"))
    c.tool("click", sessionId=second, selector="#show")
    assert c.tool("snapshot", sessionId=second)["title"] == "cookie=;local=;session="
