"""Shared fixtures: one local page server, MCP clients over real pipes, hypothesis profiles."""

import os
import pathlib
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, settings
from support import McpClient, PageServer

settings.register_profile("default", max_examples=100, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", max_examples=100, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else "default")

KINDS = ("unit", "smoke", "e2e", "slow")


def pytest_collection_modifyitems(config, items):
    """Each test has exactly one kind, so `-m unit` (say) selects by kind, never by a list of files."""
    kind_of = {}
    for item in items:
        kinds = [m.name for m in item.iter_markers() if m.name in KINDS]
        if len(kinds) != 1:
            raise pytest.UsageError(f"{item.nodeid} must have exactly one of the markers {', '.join(KINDS)} "
                                    f"(set pytestmark in its module), has {kinds or 'none'}")
        kind_of[item] = kinds[0]
    # In an xdist worker (scripts/test.sh: --dist loadfile --no-loadscope-reorder) the modules are
    # handed out in this order: the long ones (slow, then e2e) first, so that none of them starts
    # last and keeps one worker busy while the others idle; the quick unit modules fill the gaps.
    # Every worker sorts the same collection the same way, as xdist requires.
    if hasattr(config, "workerinput"):
        items.sort(key=lambda item: KINDS[::-1].index(kind_of[item]))


@pytest.fixture(scope="session")
def pages():
    server = PageServer()
    yield server
    server.close()


@pytest.fixture
def short_tmp():
    """A folder with a short path, for a browser's TMPDIR. Chromium dies ("Socket path too long")
    when its singleton socket, $TMPDIR/.org.chromium.Chromium.XXXXXX/SingletonSocket, passes
    107 bytes, and tmp_path is 61 bytes for a long test name, 71 in an xdist worker (popen-gw0/)."""
    path = pathlib.Path(tempfile.mkdtemp(prefix="mcpb-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def client():
    """One server per test module: sessions isolate the tests from each other."""
    c = McpClient()
    yield c
    c.close()


@pytest.fixture
def session(client):
    """A fresh session on the module's server, closed afterwards."""
    session_id = client.tool("create_session")["sessionId"]
    yield session_id
    client.call("close_session", {"sessionId": session_id})


@pytest.fixture
def make_client():
    """Start servers with their own flags; all are closed at the end of the test."""
    started = []

    def make(*args, **kwargs):
        c = McpClient(*args, **kwargs)
        started.append(c)
        return c

    yield make
    for c in started:
        c.close()


@pytest.fixture(scope="module")
def server_with():
    """Servers by their flags, each started once for the module and closed at its end: a test that
    needs a server with given flags (not the default `client`) opens a session on it with
    `session_on`, instead of starting a server and a browser of its own."""
    started = {}

    def get(*flags):
        if flags not in started:
            started[flags] = McpClient(*flags)
        return started[flags]

    yield get
    for c in started.values():
        c.close()


@pytest.fixture
def session_on(server_with):
    """Open a session on the module's server with these flags: (client, sessionId); closed after the test."""
    opened = []

    def open_session(*flags, **arguments):
        c = server_with(*flags)
        session_id = c.tool("create_session", **arguments)["sessionId"]
        opened.append((c, session_id))
        return c, session_id

    yield open_session
    for c, session_id in opened:
        c.call("close_session", {"sessionId": session_id})


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL for the whole run (tests/postgres.py), stopped after; skipped only where it cannot be had."""
    from postgres import Postgres, install

    bin_dir, why = install()
    if bin_dir is None:
        pytest.skip(why)
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg is not installed: pip install 'mcpbrowser[postgres]'")
    server = Postgres(bin_dir)
    yield server
    server.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_target(request, tmp_path):
    """A history to open, on each backend: a SQLite file's path, or a PostgreSQL database's URL."""
    if request.param == "sqlite":
        return str(tmp_path / "h.db")
    return request.getfixturevalue("postgres").new_database()
