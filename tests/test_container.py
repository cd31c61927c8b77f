"""The container image, run by podman or docker and driven from outside by the official MCP client.

`bash scripts/container_test.sh` builds the image and runs this module. The suite runs it
whenever an image built from the current sources is present (the image's label holds their
digest) and skips it, saying why, otherwise: a build takes minutes, more than CI can spend.
MCPBROWSER_ENGINE and MCPBROWSER_IMAGE choose the engine's command and the image.
"""

import functools
import json
import os
import shlex
import shutil
import socket
import subprocess
import tempfile
import urllib.error
import urllib.request
import uuid

import anyio.from_thread
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from support import McpClient, PageServer, SdkClient, wait_for

pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMAGE = os.environ.get("MCPBROWSER_IMAGE", "mcpbrowser:test")
LABEL = "org.mcpbrowser.source"
# Host networking: the container reaches the test's pages on the host's 127.0.0.1, and the
# test its port. Explicit ulimits: podman's defaults exceed what some sandboxes allow.
RUN_ARGS = ["--network=host", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]
TOKEN = "alice-" + "k" * 24
HOW = "`bash scripts/container_test.sh` builds it and runs these tests"


def _engine():
    """The engine's command (as scripts/container_test.sh chooses it), or None."""
    if os.environ.get("MCPBROWSER_ENGINE"):
        return shlex.split(os.environ["MCPBROWSER_ENGINE"])
    if shutil.which("docker"):
        try:
            if subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode == 0:
                return ["docker"]
        except subprocess.TimeoutExpired:  # a client whose daemon does not answer
            pass
    if shutil.which("podman") and shutil.which("runc"):
        return ["podman", "--runtime", "runc", "--cgroup-manager=cgroupfs"]
    return None


@pytest.fixture(scope="module")
def engine():
    """The engine, once the image built from these sources is there; else the test skips."""
    command = _engine()
    if command is None:
        pytest.skip(f"no container engine (a docker daemon, or podman with runc): {HOW}")
    found = subprocess.run([*command, "image", "inspect", "--format", f'{{{{ index .Config.Labels "{LABEL}" }}}}',
                            IMAGE], capture_output=True, text=True, timeout=120)
    if found.returncode != 0:
        pytest.skip(f"no image {IMAGE}: {HOW}")
    want = subprocess.run(["bash", os.path.join(ROOT, "scripts", "container_test.sh"), "--digest"],
                          capture_output=True, text=True, check=True).stdout.strip()
    if found.stdout.strip() != want:
        pytest.skip(f"the image {IMAGE} was built from other sources than these: {HOW}")
    return command


@pytest.fixture
def pages():
    server = PageServer()
    yield server
    server.close()


@pytest.fixture
def volume(engine):
    name = f"mcpbrowser-test-{uuid.uuid4().hex[:8]}"
    yield name
    subprocess.run([*engine, "volume", "rm", "-f", name], capture_output=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Container:
    """One detached container of the image; `stop()` is `docker stop` (SIGTERM, then a wait)."""

    def __init__(self, engine, *args, env=(), mounts=()):
        self.engine = engine
        self.name = f"mcpbrowser-test-{uuid.uuid4().hex[:8]}"
        options = [*RUN_ARGS, "--name", self.name]
        for key, value in env:
            options += ["-e", f"{key}={value}"]
        for mount in mounts:
            options += ["-v", mount]
        subprocess.run([*engine, "run", "-d", *options, IMAGE, *args], check=True, capture_output=True)

    def logs(self):
        done = subprocess.run([*self.engine, "logs", self.name], capture_output=True, text=True)
        return done.stdout + done.stderr

    def running(self):
        state = subprocess.run([*self.engine, "inspect", "--format", "{{.State.Running}}", self.name],
                               capture_output=True, text=True)
        return state.stdout.strip() == "true"

    def stop(self):
        subprocess.run([*self.engine, "stop", "-t", "30", self.name], check=True, capture_output=True)

    def remove(self):
        subprocess.run([*self.engine, "rm", "-f", "-v", self.name], capture_output=True)  # -v: its anonymous volumes


def get(url, headers=None, data=None):
    """(status, headers, body) of one request from the host; refusals are answers too."""
    request = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def serving(container, base):
    """Wait until the container's server answers /healthz; fail with its log if it stopped."""
    def up():
        assert container.running(), container.logs()[-3000:]
        try:
            return get(base + "/healthz")[0] == 200
        except OSError:
            return False
    assert wait_for(up, seconds=90, step=0.25), container.logs()[-3000:]


class ContainerStdio(McpClient):
    """The official MCP client over `ENGINE run -i --rm IMAGE --stdio` (McpClient, with that command)."""

    def __init__(self, engine, *args):
        self.stderr = tempfile.NamedTemporaryFile("w+", prefix="mcpbrowser-container-", delete=False)
        params = StdioServerParameters(command=engine[0], args=[*engine[1:], "run", "-i", "--rm", *RUN_ARGS,
                                                                IMAGE, "--stdio", *args])
        self.log_messages = []
        self._portal_cm = anyio.from_thread.start_blocking_portal()
        self.portal = self._portal_cm.__enter__()
        self._transport = self.portal.wrap_async_context_manager(stdio_client(params, errlog=self.stderr))
        read, write = self._transport.__enter__()
        self._session_cm = self.portal.wrap_async_context_manager(ClientSession(read, write))
        self.session = self._session_cm.__enter__()
        self.init = self.portal.call(functools.partial(self.session.initialize))


def test_without_a_token_the_container_refuses_to_start_and_says_how(engine):
    done = subprocess.run([*engine, "run", "--rm", *RUN_ARGS, IMAGE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    # It names both ways to give one, and the stdio alternative.
    for way in ("/run/secrets/mcpbrowser_tokens", "MCPBROWSER_HTTP_TOKENS", "--stdio"):
        assert way in done.stderr, done.stderr


def test_a_secret_or_a_volume_the_container_user_cannot_use_is_named(engine, tmp_path):
    """The mistakes of a first run: a token file only its owner can read, a host directory only its owner can write."""
    if os.getuid() == 1000:
        pytest.skip("the test runs as uid 1000, the container's user, which may read and write its own files")
    secret = tmp_path / "tokens"
    secret.write_text(f"alice {TOKEN}\n")
    secret.chmod(0o600)
    done = subprocess.run([*engine, "run", "--rm", *RUN_ARGS, "-v", f"{secret}:/run/secrets/mcpbrowser_tokens:ro",
                           IMAGE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "/run/secrets/mcpbrowser_tokens is not readable" in done.stderr, done.stderr
    assert "--group-add" in done.stderr and "chmod 0444" not in done.stderr, done.stderr  # a private way
    data = tmp_path / "data"
    data.mkdir(mode=0o755)  # owned by the test's user, not by the container's (uid 1000)
    done = subprocess.run([*engine, "run", "--rm", *RUN_ARGS, "-v", f"{data}:/data", IMAGE, "--stdio"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "/data is not writable" in done.stderr, done.stderr


def test_http_with_a_token_and_a_session_resumed_by_a_new_container(engine, pages, volume, tmp_path):
    """HTTP on a non-loopback bind: the token from a mounted secret file, then from the variable;
    the history and its key survive `docker stop` on the volume, and a new container resumes."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {TOKEN}\n")
    tokens.chmod(0o444)  # the container's user is not the file's owner
    # The host's pages are on a private address: --block-private-networks (on in the image)
    # lets the container reach them only when the operator names the host.
    serve = ["--http", f"0.0.0.0:{port}", "--allowed-domains", "127.0.0.1"]
    first = Container(engine, *serve, mounts=[f"{volume}:/data", f"{tokens}:/run/secrets/mcpbrowser_tokens:ro"])
    try:
        serving(first, base)
        # The image's HEALTHCHECK command (kept in the image's config), as the engine runs it.
        config = subprocess.run([*engine, "image", "inspect", "--format", "{{json .Config.Healthcheck}}", IMAGE],
                                capture_output=True, text=True, check=True).stdout
        assert json.loads(config)["Test"][-2:] == ["mcpbrowser-entrypoint", "--healthcheck"], config
        assert subprocess.run([*engine, "exec", first.name, "mcpbrowser-entrypoint", "--healthcheck"],
                              capture_output=True).returncode == 0
        hello = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}).encode()
        for headers in ({}, {"Authorization": "Bearer " + "x" * 30}):
            status, answer_headers, _ = get(base + "/mcp", data=hello,
                                            headers={"Content-Type": "application/json", **headers})
            assert status == 401 and "Mcp-Session-Id" not in answer_headers

        client = SdkClient(base + "/mcp", token=TOKEN)
        try:
            sid = client.tool("create_session")["sessionId"]
            page = client.tool("navigate", sessionId=sid, url=pages.url("/title/from-the-host"))
            assert page["title"] == "from-the-host"
            # The image's (headless) server runs Chromium's headless shell, as one outside does: half the CPU.
            browsers = subprocess.run([*engine, "exec", first.name, "sh", "-c", "cat /proc/[0-9]*/comm"],
                                      capture_output=True, text=True).stdout.split()
            assert "chromium-headle" in browsers and "chromium" not in browsers, browsers
            snap = client.tool("snapshot", sessionId=sid)
            assert "from-the-host" in json.dumps(snap)
            assert client.tool("close_session", sessionId=sid)
            # A session to resume: its login cookie is sealed under a key on the volume too.
            kept = client.tool("create_session")["sessionId"]
            landed = client.tool("navigate", sessionId=kept, url=pages.url("/login?user=ada"))
            assert landed["title"] == "Logged in as ada"
            client.tool("get_content", ref_id=landed["refId"])  # the after-call save has run
        finally:
            client.close()
        first.stop()
        assert not first.running()
        # tini handed the server `docker stop`'s SIGTERM: it closed its core, not killed after the wait.
        assert '"event": "core_closed"' in first.logs(), first.logs()[-3000:]
    finally:
        first.remove()

    listing = subprocess.run([*engine, "run", "--rm", *RUN_ARGS, "-v", f"{volume}:/data", "--entrypoint", "ls",
                              IMAGE, "/data"], capture_output=True, text=True, check=True).stdout.split()
    assert {"history.db", "history.db.key"} <= set(listing), listing

    second = Container(engine, *serve, env=[("MCPBROWSER_HTTP_TOKENS", f"alice:{TOKEN}")],
                       mounts=[f"{volume}:/data"])
    try:
        serving(second, base)
        client = SdkClient(base + "/mcp", token=TOKEN)
        try:
            resumed = client.tool("resume_session", sessionId=kept)
            assert resumed["sessionId"] == kept
            assert client.tool("navigate", sessionId=kept, url=pages.url("/whoami"))["title"] == "Logged in as ada"
            client.tool("close_session", sessionId=kept)
        finally:
            client.close()
    finally:
        second.remove()


def test_stdio_with_dash_i_and_private_networks_blocked_by_default(engine, pages):
    client = ContainerStdio(engine)
    try:
        assert client.init.server_info.name == "mcpbrowser"
        sid = client.tool("create_session")["sessionId"]
        page = client.tool("navigate", sessionId=sid, url="data:text/html,<title>in a container</title>")
        assert page["title"] == "in a container"
        # The host's 127.0.0.1 is a private address, and no rule names it here: refused, and
        # nothing reached the page server.
        error = client.error("navigate", sessionId=sid, url=pages.url("/title/private"))
        assert error["errorCode"] == "DOMAIN_NOT_ALLOWED"
        assert "/title/private" not in pages.hits
        client.tool("close_session", sessionId=sid)
    finally:
        client.close()  # closing stdin ends the server, and --rm the container


def test_the_fonts_a_page_needs_are_there(engine):
    """Latin, CJK (the zh messages, Chinese, Japanese and Korean pages) and colour emoji, as fontconfig finds them."""
    def families(pattern):
        done = subprocess.run([*engine, "run", "--rm", *RUN_ARGS, "--entrypoint", "fc-list", IMAGE, pattern, "family"],
                              capture_output=True, text=True, check=True)
        return done.stdout
    assert "Liberation Sans" in families(":lang=en")
    for lang in ("zh-cn", "ja", "ko"):
        assert "Noto Sans CJK" in families(f":lang={lang}"), lang
    assert "Noto Color Emoji" in families(":charset=1f600")
