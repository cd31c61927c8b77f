"""HAProxy for the tests: Debian's package, running the shipped scripts/haproxy.cfg on loopback addresses.

Installed (apt-get, as root) when missing, as tests/postgres.py installs PostgreSQL. The
configuration is the one the manual gives, with only its bind and server addresses replaced,
and a global section of the test's own: a stats socket to read the servers' states from.
"""

import os
import re
import shutil
import socket
import subprocess
import tempfile
import time

SHIPPED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts", "haproxy.cfg")


def install():
    """The haproxy program, installing Debian's package when missing; or (None, why not)."""
    found = shutil.which("haproxy") or (os.path.exists("/usr/sbin/haproxy") and "/usr/sbin/haproxy")
    if found:
        return found, None
    if os.geteuid() != 0:
        return None, "HAProxy is not installed and installing it needs root (apt-get install haproxy)"
    if not shutil.which("apt-get"):
        return None, "HAProxy is not installed and there is no apt-get to install it with"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install_cmd = ["apt-get", "install", "-y", "-q", "haproxy"]
    if subprocess.run(install_cmd, env=env, capture_output=True).returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True)  # a fresh machine's lists
        done = subprocess.run(install_cmd, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            return None, f"apt-get install haproxy failed: {done.stderr.strip()[-300:]}"
    found = shutil.which("haproxy") or (os.path.exists("/usr/sbin/haproxy") and "/usr/sbin/haproxy")
    return (found, None) if found else (None, "the haproxy package installed no haproxy program")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def configured(servers, port):
    """The shipped configuration with its frontend on 127.0.0.1:port and `servers` ({name: "host:port"})."""
    with open(SHIPPED) as f:
        text = f.read()
    text, binds = re.subn(r"(?m)^(\s+)bind :8931$", rf"\1bind 127.0.0.1:{port}", text)
    shipped = re.findall(r"(?m)^    server .*\n", text)
    assert binds == 1 and len(shipped) == 2, "scripts/haproxy.cfg changed shape: update tests/haproxy.py"
    lines = "".join(f"    server {name} {address}\n" for name, address in servers.items())
    text = text.replace(shipped[0], lines).replace(shipped[1], "")
    return text


class Haproxy:
    """One HAProxy in the foreground; `url` is the MCP endpoint through it."""

    def __init__(self, program, servers):
        self.root = tempfile.mkdtemp(prefix="mcpbrowser-haproxy-")
        self.port = free_port()
        self.socket = os.path.join(self.root, "admin.sock")
        with open(os.path.join(self.root, "global.cfg"), "w") as f:
            f.write(f"global\n    maxconn 1000\n    log stdout format raw local0\n"
                    f"    stats socket {self.socket} mode 600 level admin\n")
        with open(os.path.join(self.root, "mcpbrowser.cfg"), "w") as f:
            f.write(configured(servers, self.port))
        self.log = open(os.path.join(self.root, "log"), "w+")
        self.proc = subprocess.Popen([program, "-db", "-f", os.path.join(self.root, "global.cfg"),
                                      "-f", os.path.join(self.root, "mcpbrowser.cfg")],
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        deadline = time.monotonic() + 30
        while set(self.states().values()) != {"UP"}:
            assert self.proc.poll() is None, self.output()
            assert time.monotonic() < deadline, f"HAProxy's servers are not all up: {self.states()}"
            time.sleep(0.1)

    def ask(self, command):
        """What the stats socket answers to one command ("" while it is not there yet)."""
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(self.socket)
                s.sendall(command.encode() + b"\n")
                return b"".join(iter(lambda: s.recv(65536), b"")).decode()
        except OSError:
            return ""

    def states(self):
        """{server name: UP, DOWN, ...} as HAProxy's health checks see them."""
        lines = self.ask("show stat").splitlines()
        if not lines:
            return {}
        header = lines[0].lstrip("# ").split(",")
        rows = [dict(zip(header, line.split(","), strict=False)) for line in lines[1:] if line]
        return {r["svname"]: r["status"].split()[0] for r in rows if r["pxname"] == "mcpbrowser"
                and r["svname"] not in ("FRONTEND", "BACKEND")}

    def output(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()[-3000:]

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)
