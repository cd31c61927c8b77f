"""End to end: routes around the domain policy, each against a forbidden host that counts what reaches it.

The forbidden host counts TCP connections, HTTP requests and UDP datagrams on one
port number; every test asserts that none arrived. The attacker's pages live on
an allowed host (127.0.0.1) served by a small handler of their own. A server with given
flags serves the whole module (the policy is the server's; a browser start per test cost
about 3 s); each test has a session, a forbidden host and an attacker of its own.
"""

import contextlib
import os
import random
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from support import wait_for

pytestmark = pytest.mark.e2e

FORBIDDEN_HOST = "127.0.0.2"


class Forbidden:
    """A host that must never be reached: counts connections, requests and datagrams."""

    def __init__(self, host=FORBIDDEN_HOST):
        self.host = host
        self.tcp = socket.create_server((host, 0))
        self.port = self.tcp.getsockname()[1]
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind((host, self.port))
        self.connections, self.requests, self.datagrams = 0, [], 0
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()
        threading.Thread(target=self._datagrams, daemon=True).start()

    def url(self, path="/"):
        return f"http://{self.host}:{self.port}{path}"

    @property
    def reached(self):
        return self.connections + len(self.requests) + self.datagrams

    def _accept(self):
        while True:
            try:
                conn, _ = self.tcp.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn):
        with conn:
            try:
                head = conn.recv(65536)
                if head:
                    self.requests.append(head.split(b"\r\n", 1)[0].decode("latin-1"))
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 28\r\n"
                                 b"Connection: close\r\n\r\n<title>Forbidden</title>here")
            except OSError:
                pass

    def _datagrams(self):
        while True:
            try:
                self.udp.recvfrom(4096)
            except OSError:
                return
            self.datagrams += 1

    def close(self):
        self.tcp.close()
        self.udp.close()


class _Attacker(BaseHTTPRequestHandler):
    """Pages and redirects an attacker controls on an allowed host."""

    def _redirect(self, status, to):
        self.send_response(status)
        self.send_header("Location", to)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _page(self, body, status=200):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _route(self):
        srv, path = self.server, self.path
        if self.command == "POST":
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
        to = srv.forbidden.url(path)
        with srv.lock:
            srv.asked[path.split("?")[0]] = count = srv.asked.get(path.split("?")[0], 0) + 1
        if path == "/flip/a":
            return self._redirect(302, "/flip/b")
        if path == "/flip/b":  # allowed the first time it is asked, forbidden after
            return self._redirect(302, "/ok" if count == 1 else to)
        if path.startswith("/chain/"):
            hops = int(path.rsplit("/", 1)[1])
            return self._redirect(302, f"/chain/{hops - 1}" if hops else to)
        if path == "/method":  # GET is harmless; POST is sent on to the forbidden host
            return self._redirect(307, to) if self.command == "POST" else self._page("<title>Method</title>")
        if path == "/to-method":
            return self._redirect(307, "/method")
        if path == "/post-308":
            return self._redirect(308, to)
        if path == "/post-303":
            return self._redirect(303, to)
        if path.split("?")[0] == "/to-forbidden":  # each subresource asks with its own query
            return self._redirect(302, to)
        if path == "/form":
            action = self.headers.get("X-Target") or "/to-method"
            return self._page(f"<title>Form</title><form method=post action='{action}'>"
                              "<input name=a value=1><button id=go>Go</button></form>")
        if path.startswith("/form-to/"):
            return self._page(f"<title>Form</title><form method=post action='/{path.split('/', 2)[2]}'>"
                              "<input name=a value=1><button id=go>Go</button></form>")
        if path == "/subresources":  # every kind of subresource through a redirect to the forbidden host
            hop = "/to-forbidden"
            return self._page(f"""<title>Sub</title>
<img src="{hop}?img"><script src="{hop}?script"></script><link rel=stylesheet href="{hop}?css">
<link rel=prefetch href="{hop}?prefetch"><link rel=preload as=image href="{hop}?preload">
<iframe src="{hop}?iframe"></iframe>
<script>
fetch('{hop}?fetch').catch(() => {{}});
navigator.sendBeacon('{hop}?beacon', 'x');
new EventSource('{hop}?sse');
new Worker(URL.createObjectURL(new Blob(["fetch('{self._origin()}{hop}?worker').catch(() => {{}})"])));
</script>""")
        if path == "/direct":  # straight to the forbidden host: preconnect, WebSocket, font, CSS import, WebTransport
            f = srv.forbidden
            return self._page(f"""<title>Direct</title>
<link rel=preconnect href="{f.url('/')}"><link rel=dns-prefetch href="{f.url('/')}">
<style>@import url("{f.url('/import.css')}"); @font-face {{font-family: x; src: url("{f.url('/font.woff')}")}}
body {{font-family: x; background: url("{f.url('/bg.png')}")}}</style>
<video src="{f.url('/video.mp4')}" autoplay muted></video>
<script>
try {{ new WebSocket('ws://{f.host}:{f.port}/ws'); }} catch (e) {{}}
try {{ new WebSocket('wss://{f.host}:{f.port}/wss'); }} catch (e) {{}}
fetch('https://{f.host}:{f.port}/tls').catch(() => {{}});
try {{ new WebTransport('https://{f.host}:{f.port}/wt').ready.catch(() => {{}}); }} catch (e) {{}}  // QUIC: UDP
</script>""")
        if path == "/webrtc":
            f = srv.forbidden
            return self._page(f"""<title>RTC</title><script>
(async () => {{
  for (const urls of ['stun:{f.host}:{f.port}', 'turn:{f.host}:{f.port}?transport=udp',
                      'turn:{f.host}:{f.port}?transport=tcp']) {{
    const pc = new RTCPeerConnection({{iceServers: [{{urls, username: 'u', credential: 'c'}}]}});
    pc.createDataChannel('x');
    await pc.setLocalDescription(await pc.createOffer());
  }}
  document.title = 'RTC ready';
}})();
</script>""")
        if path.startswith("/webrtc-ways?"):  # every way a page might reach the browser's own RTCPeerConnection
            # spelt backwards again; the control: an address; quads: names shaped as IPv4 addresses but no address
            label, control, quads = path.split("?", 1)[1].split("&")
            q1, q2, q3 = quads.split(",")
            return self._page(f"""<title>RTC</title><script>
(async () => {{
  const name = (n) => `${{'{label}'.split('').reverse().join('')}}${{n}}.example.org`;
  const turn = (host) => ({{urls: `turn:${{host}}:3478?transport=tcp`, username: 'u', credential: 'c'}});
  const gather = async (pc) => {{ pc.createDataChannel('x'); await pc.setLocalDescription(await pc.createOffer()); }};
  const frame = document.createElement('iframe'), other = document.createElement('iframe');
  document.documentElement.append(frame, other);
  const realm = other.contentWindow;  // its built-ins bent to say yes to everything, after its guard was set up
  realm.RegExp.prototype.test = () => true;
  realm.RegExp.prototype.exec = () => [''];
  realm.String.prototype.replace = function () {{ return '1.2.3.4'; }};
  realm.Reflect.apply = () => true;
  realm.Array.prototype[Symbol.iterator] = function* () {{}};
  let reads = 0;
  const ways = {{
    plain: () => new RTCPeerConnection({{iceServers: [turn(name(1))]}}),
    legacy: () => new webkitRTCPeerConnection({{iceServers: [turn(name(2))]}}),
    proto: () => new RTCPeerConnection.prototype.constructor({{iceServers: [turn(name(3))]}}),
    subclass: () => new (class extends RTCPeerConnection {{}})({{iceServers: [turn(name(4))]}}),
    frame: () => new frame.contentWindow.RTCPeerConnection({{iceServers: [turn(name(5))]}}),
    reflect: () => Reflect.construct(RTCPeerConnection, [{{iceServers: [turn(name(6))]}}]),
    oldUrl: () => new RTCPeerConnection({{iceServers: [{{url: `turn:${{name(7)}}:3478?transport=tcp`, username: 'u',
                                                          credential: 'c'}}]}}),
    list: () => new RTCPeerConnection({{iceServers: [{{urls: ['turn:{control}:3478?transport=tcp',
                                                              `turns:${{name(8)}}:443`],
                                                       username: 'u', credential: 'c'}}]}}),
    flips: () => new RTCPeerConnection({{get iceServers() {{
      return ++reads === 1 ? [turn('{control}')] : [turn(name(9))]; }}}}),
    bent: () => new realm.RTCPeerConnection({{iceServers: [turn(name(11))]}}),
    later: () => {{ const pc = new RTCPeerConnection({{iceServers: [turn('{control}')]}});
                   pc.setConfiguration({{iceServers: [turn(name(10))]}}); return pc; }},
    // A remote peer's candidate by a name, over UDP or TCP, added or in its description: looked up too.
    candidate: async () => (await paired()).addIceCandidate(remote(12, 'udp 2122260223', '')),
    tcpCandidate: async () => (await paired()).addIceCandidate(remote(13, 'tcp 1518280447', ' tcptype active')),
    // Shaped as addresses, which the browser's parser reads as names (an octet over 255): looked up as names.
    quad: () => new RTCPeerConnection({{iceServers: [turn('{q1}')]}}),
    quadCandidate: async () => (await paired()).addIceCandidate(
      {{candidate: 'candidate:1 1 tcp 1518280447 {q2} 9 typ host tcptype active', sdpMid: '0', sdpMLineIndex: 0}}),
    quadDescribed: () => described('a=candidate:1 1 tcp 1518280447 {q3} 9 typ host tcptype active'),
    described: () => described(`a=${{remote(14, 'udp 2122260223', '').candidate}}`),
  }};
  async function described(line) {{  // an answer that carries the candidate line, set as the remote description
    const [a, b] = [new RTCPeerConnection(), new RTCPeerConnection()];
    a.createDataChannel('x');
    await a.setLocalDescription(await a.createOffer());
    await b.setRemoteDescription(a.localDescription);
    const answer = await b.createAnswer();
    await a.setRemoteDescription({{type: 'answer', sdp: answer.sdp.replace(/a=ice-pwd/, line + '\\r\\na=ice-pwd')}});
  }}
  async function paired() {{
    const [a, b] = [new RTCPeerConnection(), new RTCPeerConnection()];
    a.createDataChannel('x');
    await a.setLocalDescription(await a.createOffer());
    await b.setRemoteDescription(a.localDescription);
    await b.setLocalDescription(await b.createAnswer());
    await a.setRemoteDescription(b.localDescription);
    return a;
  }}
  const remote = (n, kind, tail) => ({{candidate: `candidate:1 1 ${{kind}} ${{name(n)}} 9 typ host${{tail}}`,
                                       sdpMid: '0', sdpMLineIndex: 0}});
  const said = [];
  for (const [way, make] of Object.entries(ways)) {{
    try {{
      const made = await make();
      if (made instanceof RTCPeerConnection) await gather(made);
      said.push(way + ':made');
    }} catch (e) {{ said.push(way + ':' + e.name); }}
  }}
  await gather(new RTCPeerConnection({{iceServers: [turn('{control}')]}}));  // by address: through the proxy
  document.title = 'RTC ' + said.join(' ');
}})();
</script>""")
        if path.startswith("/webrtc-named?"):  # a TURN server by a name (over TCP: through the proxy), spelt
            backwards = path.split("?", 1)[1]  # backwards in the address, so that only a use of the name shows it
            return self._page(f"""<title>RTC</title><script>
(async () => {{
  const name = '{backwards}'.split('').reverse().join('');
  const pc = new RTCPeerConnection({{iceServers: [{{urls: `turn:${{name}}:3478?transport=tcp`, username: 'u',
                                                   credential: 'c'}}]}});
  pc.createDataChannel('x');
  await pc.setLocalDescription(await pc.createOffer());
  document.title = 'RTC ready';
}})();
</script>""")
        if path == "/ok":
            return self._page("<title>Allowed</title>")
        return self._page("<title>Not found</title>", 404)

    def _origin(self):
        return f"http://127.0.0.1:{self.server.server_port}"

    do_GET = do_POST = _route

    def log_message(self, *args):
        pass


@pytest.fixture
def forbidden():
    f = Forbidden()
    yield f
    f.close()


@pytest.fixture
def attacker(forbidden):
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Attacker)
    httpd.daemon_threads = True
    httpd.forbidden, httpd.asked, httpd.lock = forbidden, {}, threading.Lock()
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    httpd.url = lambda path: f"http://127.0.0.1:{httpd.server_port}{path}"
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def guarded(session_on):
    """A server that allows only 127.0.0.1 (one for the module), and a fresh session on it."""
    return session_on("--allowed-domains", "127.0.0.1")


@pytest.fixture(params=["shell", "whole"])
def guarded_on_each(request, session_on):
    """`guarded` on each browser a server runs: the headless shell (a headless server's, when installed) and the
    whole browser (a headed server's, or with --spare-renderer), which honour different switches (WebRTC's policy)."""
    from mcpbrowser.core.browser_process import find_executable

    shell, whole = find_executable("chromium", shell=True), find_executable("chromium")
    if request.param == "shell" and os.path.realpath(shell) == os.path.realpath(whole):
        pytest.skip("no headless shell is installed")
    return session_on("--allowed-domains", "127.0.0.1", *(("--executable-path", whole) if request.param == "whole"
                                                          else ()))


def _refused(c, sid, url, host=FORBIDDEN_HOST):
    err = c.error("navigate", sessionId=sid, url=url)
    assert err["errorCode"] == "DOMAIN_NOT_ALLOWED", err
    assert err["details"]["domain"] == host, err
    return err


def test_a_redirect_that_answers_differently_the_second_time(guarded, attacker, forbidden):
    c, sid = guarded
    assert c.tool("navigate", sessionId=sid, url=attacker.url("/flip/a"))["title"] == "Allowed"
    _refused(c, sid, attacker.url("/flip/a"))
    assert attacker.asked["/flip/b"] == 2  # each hop was asked once per navigation: no look-ahead copy
    assert forbidden.reached == 0


def test_a_long_redirect_chain(guarded, attacker, forbidden):
    c, sid = guarded
    _refused(c, sid, attacker.url("/chain/14"))
    assert attacker.asked["/chain/0"] == 1 and forbidden.reached == 0


def _blocked(c, sid, forbidden):
    """The session's requests to the forbidden host that its network log shows refused by the domain policy."""
    where = f"//{forbidden.host}:{forbidden.port}/"
    entries = c.tool("network_logs", sessionId=sid, allPages=True, urlContains=where, limit=100)["entries"]
    return [e for e in entries if e.get("blocked")]


@pytest.mark.parametrize("action, method", [("/to-method", "POST"), ("/post-308", "POST"), ("/post-303", "GET")])
def test_redirects_that_depend_on_the_method(guarded, attacker, forbidden, action, method):
    c, sid = guarded
    c.tool("navigate", sessionId=sid, url=attacker.url(f"/form-to{action}"))
    # The click's form redirected to the forbidden host: the click answers as navigate would.
    assert c.error("click", sessionId=sid, selector="#go")["errorCode"] == "DOMAIN_NOT_ALLOWED"
    # The attempt happened: the form was posted, and the redirect's request to the forbidden host
    # (with the method the redirect asks for) was refused on its way, not left unsent.
    blocked = wait_for(lambda: _blocked(c, sid, forbidden), seconds=10)
    assert [(e["method"], e["url"]) for e in blocked] == [(method, forbidden.url(action if action != "/to-method"
                                                                                 else "/method"))], blocked
    assert attacker.asked[action] == 1 and (action != "/to-method" or attacker.asked["/method"] == 1), attacker.asked
    assert forbidden.reached == 0


def test_subresources_through_redirects(guarded, attacker, forbidden):
    c, sid = guarded
    c.tool("navigate", sessionId=sid, url=attacker.url("/subresources"))
    time.sleep(1.5)  # the worker, beacon and EventSource try after the load
    assert attacker.asked["/to-forbidden"] >= 6, attacker.asked  # they did try
    assert forbidden.reached == 0, forbidden.requests


def test_subresources_through_redirects_reach_the_host_without_a_policy(session_on, attacker, forbidden):
    # The control for the test above: the same page on a server with no domain policy follows its
    # redirects to the host (the redirects once answered 404 to every subresource's query, so the
    # test above passed with the policy switched off).
    c, sid = session_on()
    c.tool("navigate", sessionId=sid, url=attacker.url("/subresources"))
    assert wait_for(lambda: forbidden.reached >= 6, seconds=5), forbidden.requests


def test_direct_routes_outside_plain_requests(guarded_on_each, attacker, forbidden):
    c, sid = guarded_on_each
    c.tool("navigate", sessionId=sid, url=attacker.url("/direct"))
    # Each route was tried and refused on its way (preconnect and dns-prefetch leave no request to show).
    tried = {"/import.css", "/font.woff", "/bg.png", "/video.mp4", "/ws", "/wss", "/tls"}
    blocked = wait_for(lambda: (lambda paths: paths if paths >= tried else None)(
        {"/" + e["url"].split("/", 3)[3] for e in _blocked(c, sid, forbidden)}), seconds=10)
    assert blocked == tried, _blocked(c, sid, forbidden)
    assert forbidden.reached == 0, forbidden.requests


def test_webrtc_sends_nothing_to_a_forbidden_host(guarded_on_each, attacker, forbidden):
    c, sid = guarded_on_each
    c.tool("navigate", sessionId=sid, url=attacker.url("/webrtc"))
    time.sleep(2.0)  # ICE gathering sends its STUN and TURN requests in this time when it can
    assert c.tool("tabs", sessionId=sid)["tabs"][0]["title"] == "RTC ready"  # WebRTC did run
    assert forbidden.reached == 0, (forbidden.connections, forbidden.datagrams)


@contextlib.contextmanager
def _browsers_sending(tmp_path):
    """strace on every browser process of this module's servers: what they send (sendto, sendmsg, sendmmsg), which
    nothing else sees. Skips where strace is missing or cannot attach; yields a function that reads all traced
    so far."""
    import shutil
    import subprocess

    from mcpbrowser.process_tree import child_pids, cmdline, descendants

    if not shutil.which("strace"):
        pytest.skip("strace is not installed")
    browsers = [pid for server in child_pids("mcpbrowser") for pid in descendants(server) if "chrom" in cmdline(pid)]
    traces = [subprocess.Popen(["strace", "-f", "-qq", "-s", "512", "-e", "trace=sendto,sendmsg,sendmmsg",
                                "-o", str(tmp_path / f"trace.{pid}"), "-p", str(pid)], stderr=subprocess.PIPE)
              for pid in browsers]
    try:
        time.sleep(1.0)  # strace attaches
        if any(t.poll() is not None for t in traces):
            pytest.skip(f"strace cannot attach here: {traces[0].stderr.read().decode()[:200]}")
        yield lambda: "".join(path.read_text(errors="replace") for path in tmp_path.glob("trace.*"))
    finally:
        for t in traces:
            t.terminate()
            t.wait()


def test_a_forbidden_name_is_not_looked_up_in_the_dns_past_the_proxy(guarded_on_each, attacker, forbidden, tmp_path):
    """The policy proxy resolves each name it allows, and only those; a name the browser resolves itself goes to
    the system's DNS servers whatever the policy says, and on to the name's own (an attacker's) nameserver: data
    spelled as a name leaves. WebRTC resolved a TURN server's name so (both browsers), then sent its CONNECT to
    the proxy, which refused it. Seen in the browser's own system calls (strace), as nothing else sees them."""
    import uuid

    c, sid = guarded_on_each
    label = f"leak{uuid.uuid4().hex[:12]}"
    with _browsers_sending(tmp_path) as traced:
        c.tool("navigate", sessionId=sid, url=attacker.url("/webrtc-named?" + f"{label}.example.org"[::-1]))
        # ICE gathering: a lookup of the name comes before the CONNECT, so once that is written all was tried.
        wait_for(lambda: f"CONNECT {label}" in traced(), seconds=10, step=0.2)
        assert c.tool("tabs", sessionId=sid)["tabs"][0]["title"] == "RTC ready"
    sent = [line for line in traced().splitlines() if label in line]
    assert any(f"CONNECT {label}.example.org" in line for line in sent), sent  # tried, through the proxy
    # And no DNS query named it: the name in a query's wire form, each label after its length (strace writes the
    # bytes in octal). The browser's own processes pass the page's TURN URL between them as text too (a loaded
    # run caught one such message on a Unix socket): that is no lookup.
    wire = f"\\{len(label):o}{label}\\7example\\3org"
    assert not [line for line in sent if wire in line], sent


def test_a_sessions_own_policy_lets_no_page_look_a_name_up_past_its_proxy(session_on, attacker, forbidden,
                                                                         tmp_path):
    """On a server without host rules the browser resolves names for the sessions that have no proxy, so it runs
    without --host-resolver-rules, and a session's own allowedDomains could not stop WebRTC from looking an ICE
    server's name up in the system's DNS (a forbidden name, or data spelt as one, reaching that name's nameserver).
    Such a session's pages may name ICE servers by address only: every way to the browser's own constructor tried,
    each refused or handed the address, and no DNS query named any of them (strace; the control's CONNECT to an
    address shows that ICE gathered)."""
    import uuid

    c, sid = session_on(allowedDomains=["127.0.0.1"])
    label = f"leak{uuid.uuid4().hex[:12]}"
    # Names of four numeric labels, the first 900 or more: no address, each a query of its own.
    quads = [[str(random.randint(900, 999)), *(str(random.randint(300, 999)) for _ in range(3))] for _ in range(3)]
    with _browsers_sending(tmp_path) as traced:
        c.tool("navigate", sessionId=sid, url=attacker.url(f"/webrtc-ways?{label[::-1]}&{FORBIDDEN_HOST}&"
                                                            + ",".join(".".join(quad) for quad in quads)))
        assert wait_for(lambda: c.tool("tabs", sessionId=sid)["tabs"][0]["title"] != "RTC", seconds=10)
        wait_for(lambda: f"CONNECT {FORBIDDEN_HOST}" in traced(), seconds=10, step=0.2)
        time.sleep(1.0)  # the other gatherings' lookups, had there been any, come as soon
    said = dict(part.split(":") for part in c.tool("tabs", sessionId=sid)["tabs"][0]["title"].split()[1:])
    assert said == dict.fromkeys(said, "NotAllowedError") and len(said) == 17, said  # flips: its second read named one
    sent = traced()
    assert f"CONNECT {FORBIDDEN_HOST}" in sent  # gathering ran: the control's TURN went to the proxy
    assert forbidden.reached == 0
    for n in range(1, 15):
        wire = f"\\{len(label) + len(str(n)):o}{label}{n}\\7example\\3org"
        assert wire not in sent, (n, [line for line in sent.splitlines() if label in line])
    for quad in quads:  # each label's length byte before it: strace writes \3, or \003 before a digit
        assert not re.search("".join(rf"\\0{{0,2}}3{part}" for part in quad), sent), quad


@pytest.mark.parametrize("spelling", ["[::ffff:127.0.0.2]", "[::ffff:7f00:2]", "2130706434", "0x7f.0.0.2",
                                      "0177.0.0.2", "127.0.2", "127.0.0.2."])
def test_other_spellings_of_a_blocked_address(session_on, attacker, forbidden, spelling):
    c, sid = session_on("--blocked-domains", FORBIDDEN_HOST)
    _refused(c, sid, f"http://{spelling}:{forbidden.port}/")
    c.tool("navigate", sessionId=sid, url=attacker.url("/ok"))  # the session still works
    assert forbidden.reached == 0


@pytest.mark.parametrize("spelling", ["localhost.", "LocalHost.", "LOCALHOST"])
def test_other_spellings_of_a_blocked_name(session_on, spelling):
    target = Forbidden("127.0.0.1")  # what localhost resolves to
    try:
        c, sid = session_on("--blocked-domains", "localhost")
        _refused(c, sid, f"http://{spelling}:{target.port}/", host="localhost")
        assert target.reached == 0
    finally:
        target.close()


def test_a_wildcard_does_not_let_a_look_alike_host_through_the_browser(make_client):
    """`*.host` is host's subdomains; `localhost` only ends in its letters (as badexample.com does in
    example.com's). Names other than localhost do not resolve here (the policy proxy resolves them,
    not the browser), so the look-alike that would reach a server is localhost itself."""
    target = Forbidden("127.0.0.1")  # what localhost resolves to: reached if the wildcard matched it
    try:
        c = make_client("--allowed-domains", "*.host,*.example.com,127.0.0.1")
        sid = c.tool("create_session")["sessionId"]
        _refused(c, sid, f"http://localhost:{target.port}/look-alike", host="localhost")
        _refused(c, sid, f"http://badexample.com:{target.port}/", host="badexample.com")
        assert target.reached == 0, target.requests
        # Positive controls: the same server by an allowed name is reached, so 0 above means refused...
        assert c.tool("navigate", sessionId=sid, url=target.url("/twin"))["title"] == "Forbidden"
        assert "GET /twin HTTP/1.1" in target.requests
        # ...and the wildcards' own subdomains pass the policy: the browser's requests for them go out
        # and fail only because the names do not resolve here.
        for twin in ("shop.host", "shop.example.com"):
            err = c.error("navigate", sessionId=sid, url=f"http://{twin}:{target.port}/")
            assert err["errorCode"] != "DOMAIN_NOT_ALLOWED", err
        entries = c.tool("network_logs", sessionId=sid, allPages=True)["entries"]
        tried = {e["url"].split("/")[2].split(":")[0]: e.get("blocked", False) for e in entries}
        assert {host: tried.get(host) for host in ("shop.host", "shop.example.com")} == \
            {"shop.host": False, "shop.example.com": False}, entries
        assert tried.get("localhost", True) and tried.get("badexample.com", True), entries  # blocked, or never sent
    finally:
        target.close()


def test_private_networks_can_be_refused_by_address(session_on, forbidden):
    c, sid = session_on("--block-private-networks")
    # A name that resolves to loopback (as a rebinding name would) is refused on its address.
    err = c.error("navigate", sessionId=sid, url=f"http://localhost:{forbidden.port}/")
    assert err["errorCode"] == "DOMAIN_NOT_ALLOWED"
    _refused(c, sid, forbidden.url())
    assert forbidden.reached == 0
    # A host an allow rule names itself may still be reached.
    d, sid = session_on("--block-private-networks", "--allowed-domains", FORBIDDEN_HOST)
    assert d.tool("navigate", sessionId=sid, url=forbidden.url("/named"))["title"] == "Forbidden"


def test_a_session_cannot_lift_the_private_block_by_naming_the_host(session_on, forbidden):
    """An agent talked into it asks for a session whose allowedDomains name a private host (as it would
    name a cloud metadata address): --block-private-networks still refuses it, on every spelling."""
    c, sid = session_on("--block-private-networks", allowedDomains=[FORBIDDEN_HOST, "localhost"])
    _refused(c, sid, forbidden.url("/named-by-the-agent"))
    err = c.error("navigate", sessionId=sid, url=f"http://localhost:{forbidden.port}/")
    assert err["errorCode"] == "DOMAIN_NOT_ALLOWED"
    assert forbidden.reached == 0
