"""A real issue tracker with a login and forms, for scripts/agent_bench.py's tracker task: Roundup.

Nobody here wrote it: Roundup comes from PyPI (installed by this module into a folder of its
own, never into the project's environment), its tracker made from the "responsive" template
that ships with it, over SQLite, seeded with users and bugs through Roundup's own Python API.
It is served on 127.0.0.1 by its own WSGI application (roundup.cgi.wsgi_handler) under the
standard library's wsgiref: `roundup-server` refuses to run as root, which a container often
is. The task's steps are checked from the tracker's databases, read with sqlite3 outside both
MCP servers (the items in db/db, the login sessions in db/db-session).

    site = TrackerSite.build(folder)       # install, make the tracker, seed a template (once)
    with site.serve() as (base, home): ... # a fresh copy of the tracker, on a free port
"""

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

ROUNDUP = "roundup>=2.6,<2.7"  # the templates' pages differ between releases: the task is written for this one
USERNAME, PASSWORD = "admin", "bench-admin-password"
SEEDED_BUGS = 12

# Users beside the template's own (admin, anonymous, user, developer, coordinator), and open bugs
# for the list and the search to show.
SEED = f'''
import sys
from roundup import instance
db = instance.open(sys.argv[1]).open("admin")
for name, real in (("alice", "Alice Liddell"), ("bob", "Bob Dylan"), ("carol", "Carol King")):
    db.user.create(username=name, realname=real, address=name + "@example.org", roles="User")
topics = ("Search page times out", "Attachment upload fails", "Typo in the welcome page", "Nosy mail sent twice",
          "Dates shown in UTC", "Export drops accents", "Sidebar overlaps the list", "Password reset link expired",
          "Keyword list unsorted", "Broken link in the footer", "Priority colours unreadable", "History is empty")
for i, title in enumerate(topics[:{SEEDED_BUGS}]):
    db.bug.create(title=title, status=db.status.lookup("new" if i % 2 else "open"),
                  priority=db.priority.lookup(("normal", "low", "high")[i % 3]))
db.commit()
db.close()
'''

# The tracker's WSGI application under wsgiref, quiet (one request at a time: enough for one browser).
SERVE = '''
import sys
from wsgiref.simple_server import WSGIRequestHandler, make_server
from roundup.cgi.wsgi_handler import RequestDispatcher
class Quiet(WSGIRequestHandler):
    def log_message(self, *args):
        pass
make_server("127.0.0.1", int(sys.argv[2]), RequestDispatcher(sys.argv[1]), handler_class=Quiet).serve_forever()
'''


class TrackerSite:
    def __init__(self, folder):
        self.folder = folder
        self.lib = os.path.join(folder, "lib")
        self.template = os.path.join(folder, "template")

    @classmethod
    def build(cls, folder):
        """Install Roundup into `folder`, make a tracker from its responsive template, initialise and seed it."""
        site = cls(folder)
        if not os.path.exists(os.path.join(site.lib, "roundup")):
            subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                            "--target", site.lib, ROUNDUP], check=True, stdout=subprocess.DEVNULL)
        if os.path.exists(site.template):
            shutil.rmtree(site.template)
        site._admin("install", "responsive", "sqlite")
        site.configure(site.template, "http://127.0.0.1/")
        site._admin("initialise", PASSWORD)
        subprocess.run([sys.executable, "-c", SEED, site.template], env=site._env(), check=True)
        return site

    def _env(self):
        return {**os.environ, "PYTHONPATH": self.lib}

    def _admin(self, *args):
        subprocess.run([sys.executable, os.path.join(self.lib, "bin", "roundup-admin"), "-i", self.template, *args],
                       env=self._env(), check=True, stdout=subprocess.DEVNULL)

    @staticmethod
    def configure(home, web):
        """The tracker's address (its pages' links and its CSRF checks use it) and mail domain."""
        path = os.path.join(home, "config.ini")
        with open(path) as f:
            text = f.read()
        text = re.sub(r"(?m)^#?web = .*$", f"web = {web}", text)
        text = re.sub(r"(?m)^#?domain = NO DEFAULT$", "domain = example.org", text)
        with open(path, "w") as f:
            f.write(text)

    @contextlib.contextmanager
    def serve(self):
        """A fresh copy of the seeded tracker behind its WSGI application: yields (base URL, tracker home)."""
        home = os.path.join(self.folder, f"run-{time.monotonic_ns()}")
        shutil.copytree(self.template, home)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        base = f"http://127.0.0.1:{port}"
        self.configure(home, base + "/")
        # Mail to the nosy list goes to a file, not to an SMTP server (there is none).
        proc = subprocess.Popen([sys.executable, "-c", SERVE, home, str(port)],
                                env={**self._env(), "SENDMAILDEBUG": os.path.join(home, "mail.log")},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    urllib.request.urlopen(base + "/", timeout=2).read()
                    break
                except OSError:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        raise RuntimeError("Roundup's WSGI application did not answer within 30 s") from None
                    time.sleep(0.2)
            yield base, home
        finally:
            proc.terminate()
            proc.wait(10)
            shutil.rmtree(home, ignore_errors=True)
