"""A real PostgreSQL for the tests: Debian's package, a cluster in a temporary folder on a free loopback port.

Installed (apt-get, as root) when missing; the cluster runs as the `postgres` user (initdb
refuses root), with a password of its own that the tests look for where it must not be.
"""

import glob
import os
import queue
import secrets
import select
import shutil
import socket
import subprocess
import tempfile
import threading
import time


def _bin_dir():
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return os.path.dirname(dirs[-1]) if dirs else None


def install():
    """The folder of PostgreSQL's programs, installing Debian's package when missing; or (None, why not)."""
    found = _bin_dir()
    if found:
        return found, None
    if os.geteuid() != 0:
        return None, "PostgreSQL is not installed and installing it needs root (apt-get install postgresql)"
    if not shutil.which("apt-get"):
        return None, "PostgreSQL is not installed and there is no apt-get to install it with"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install_cmd = ["apt-get", "install", "-y", "-q", "postgresql"]
    if subprocess.run(install_cmd, env=env, capture_output=True).returncode != 0:
        # A fresh machine has no package lists yet.
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True)
        done = subprocess.run(install_cmd, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            return None, f"apt-get install postgresql failed: {done.stderr.strip()[-300:]}"
    found = _bin_dir()
    return (found, None) if found else (None, "the postgresql package installed no initdb")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Postgres:
    """One cluster: start, stop (to take the database away from a running server) and start again."""

    user = "mcpbrowser"

    def __init__(self, bin_dir):
        self.bin_dir = bin_dir
        self.password = "pw-" + secrets.token_hex(12)  # unique: a test searches logs and answers for it
        self.port = _free_port()
        self.root = tempfile.mkdtemp(prefix="mcpbrowser-pg-")
        self.data = os.path.join(self.root, "data")
        self._as_postgres = os.geteuid() == 0
        if self._as_postgres:
            shutil.chown(self.root, "postgres")
        pwfile = os.path.join(self.root, "pw")
        with open(pwfile, "w") as f:
            f.write(self.password)
        if self._as_postgres:
            shutil.chown(pwfile, "postgres")
        self._run("initdb", "-D", self.data, "-U", self.user, "--pwfile", pwfile, "-A", "scram-sha-256",
                  "-E", "UTF8", "--no-sync")
        os.remove(pwfile)
        self.start()

    def _run(self, program, *args):
        cmd = [os.path.join(self.bin_dir, program), *args]
        if self._as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        subprocess.run(cmd, check=True, capture_output=True, cwd=self.root)

    def start(self):
        self._run("pg_ctl", "-D", self.data, "-l", os.path.join(self.root, "log"), "-w", "-o",
                  f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                  # 300: a core opens a connection per pool thread (max_sessions + 2) that reads; tests that
                  # run two cores with 20 calls at once passed 100, the default
                  "-c max_connections=300", "start")

    def stop(self):
        self._run("pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop")

    def url(self, database="postgres"):
        return f"postgresql://{self.user}:{self.password}@127.0.0.1:{self.port}/{database}"

    def admin(self, sql):
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(sql)

    def new_database(self):
        """A URL of an empty database of its own."""
        name = "t" + secrets.token_hex(6)
        self.admin(f"CREATE DATABASE {name}")
        return self.url(name)

    def close(self):
        try:
            self.stop()
        except subprocess.CalledProcessError:
            pass  # a test stopped it already
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                shutil.rmtree(self.root)
                return
            except OSError:
                time.sleep(0.1)


class SlowLink:
    """A TCP relay in front of the cluster whose answers arrive `delay` seconds late, as over a network, and
    that counts the round trips its clients waited for (`turns`): a client's bytes that follow an answer
    it was given start a turn, whatever it sends before the next answer belongs to it. Point a URL at
    `port` (url()) instead of the cluster's."""

    def __init__(self, upstream_port, delay):
        self.upstream, self.delay = upstream_port, delay
        self.turns = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            server = socket.create_connection(("127.0.0.1", self.upstream))
            for sock in (client, server):  # as libpq and PostgreSQL do: no Nagle wait on a run of small writes
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            late: queue.SimpleQueue = queue.SimpleQueue()
            answered = [True]  # this connection's client was given an answer since it last sent
            threading.Thread(target=self._pump, args=(client, server, late, answered), daemon=True).start()
            threading.Thread(target=self._deliver, args=(client, late, answered), daemon=True).start()

    def _pump(self, client, server, late, answered):
        try:
            while True:
                ready, _, _ = select.select([client, server], [], [])
                for sock in ready:
                    data = sock.recv(65536)
                    if not data:
                        return
                    if sock is client:
                        if answered[0]:
                            answered[0] = False
                            self.turns += 1
                        server.sendall(data)
                    else:
                        late.put((time.monotonic() + self.delay, data))
        except OSError:
            return
        finally:
            late.put(None)
            server.close()

    def _deliver(self, client, late, answered):
        with client:
            while (item := late.get()) is not None:
                wait = item[0] - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                try:
                    client.sendall(item[1])
                except OSError:
                    return
                answered[0] = True

    def url(self, url):
        """The URL `url` through this relay."""
        return url.replace(f"127.0.0.1:{self.upstream}/", f"127.0.0.1:{self.port}/")

    def close(self):
        self._listener.close()
