"""A real web application with a login and forms, for scripts/agent_bench.py's admin task: Django's admin.

Nobody here wrote it: Django comes from PyPI (installed by this module into a folder of its
own, never into the project's environment) and is served on 127.0.0.1 by its own
`runserver`, over a fresh SQLite database seeded with users and groups. The task's steps are
checked from that database, read with sqlite3 outside both MCP servers.

    site = AdminSite.build(folder)      # install, migrate, seed a template database (once)
    with site.serve() as base: ...      # a fresh copy of the database, on a free port
"""

import contextlib
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request

DJANGO = "django>=5.2,<5.3"  # the admin's pages differ between releases: the task is written for this one
USERNAME, PASSWORD = "admin", "bench-admin-password"
SEEDED_USERS = 30  # user01 .. user30; every third one is staff

SETTINGS = '''
import os
SECRET_KEY = "agent-bench-only"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = ["django.contrib.admin", "django.contrib.auth", "django.contrib.contenttypes",
                  "django.contrib.sessions", "django.contrib.messages", "django.contrib.staticfiles"]
MIDDLEWARE = ["django.contrib.sessions.middleware.SessionMiddleware", "django.middleware.common.CommonMiddleware",
              "django.middleware.csrf.CsrfViewMiddleware", "django.contrib.auth.middleware.AuthenticationMiddleware",
              "django.contrib.messages.middleware.MessageMiddleware"]
ROOT_URLCONF = "benchsite.urls"
TEMPLATES = [{"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True,
              "OPTIONS": {"context_processors": ["django.template.context_processors.request",
                                                 "django.contrib.auth.context_processors.auth",
                                                 "django.contrib.messages.context_processors.messages"]}}]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ["BENCH_DB"]}}
STATIC_URL = "static/"
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # a bench, not a bank: fast logins
'''
URLS = '''
from django.contrib import admin
from django.urls import path
urlpatterns = [path("admin/", admin.site.urls)]
'''
SEED = f'''
import django
django.setup()
from django.contrib.auth.models import Group, User
User.objects.create_superuser({USERNAME!r}, "admin@example.org", {PASSWORD!r})
for i in range(1, {SEEDED_USERS} + 1):
    User.objects.create_user(f"user{{i:02d}}", f"user{{i:02d}}@example.org", "x", is_staff=i % 3 == 0,
                             first_name=f"First{{i}}", last_name=f"Last{{i}}")
for name in ("Editors", "Support", "Billing"):
    Group.objects.create(name=name)
'''


class AdminSite:
    def __init__(self, folder):
        self.folder = folder
        self.lib = os.path.join(folder, "lib")
        self.template = os.path.join(folder, "template.db")

    @classmethod
    def build(cls, folder):
        """Install Django into `folder`, write the project, migrate and seed a template database."""
        site = cls(folder)
        if not os.path.exists(os.path.join(site.lib, "django")):
            subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                            "--target", site.lib, DJANGO], check=True, stdout=subprocess.DEVNULL)
        project = os.path.join(folder, "benchsite")
        os.makedirs(project, exist_ok=True)
        for name, text in (("__init__.py", ""), ("settings.py", SETTINGS), ("urls.py", URLS)):
            with open(os.path.join(project, name), "w") as f:
                f.write(text)
        if os.path.exists(site.template):
            os.unlink(site.template)
        site._django(["migrate", "--no-input", "-v", "0"], site.template)
        subprocess.run([sys.executable, "-c", SEED], env=site._env(site.template), check=True)
        return site

    def _env(self, db):
        return {**os.environ, "PYTHONPATH": os.pathsep.join([self.lib, self.folder]),
                "DJANGO_SETTINGS_MODULE": "benchsite.settings", "BENCH_DB": db}

    def _django(self, args, db, **kwargs):
        return subprocess.run([sys.executable, "-m", "django", *args], env=self._env(db), check=True, **kwargs)

    def serve(self):
        """A fresh copy of the seeded database behind Django's runserver: yields (base URL, db path)."""
        return serving(self.folder, self.template, "/admin/login/", "Django's runserver", 30, lambda port, db: (
            [sys.executable, "-m", "django", "runserver", f"127.0.0.1:{port}", "--noreload", "--insecure"],
            self._env(db)))


@contextlib.contextmanager
def serving(folder, template, probe, name, wait_s, start):
    """A fresh copy of `template` in `folder`, behind the server `start(port, db)` gives as (argv, env), once
    `probe` answers: yields (base URL, db path); the server stopped and the copy removed after."""
    db = os.path.join(folder, f"run-{time.monotonic_ns()}.db")
    shutil.copy(template, db)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv, env = start(port, db)
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                urllib.request.urlopen(base + probe, timeout=2).read()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError(f"{name} did not answer within {wait_s} s") from None
                time.sleep(0.2)
        yield base, db
    finally:
        proc.terminate()
        proc.wait(10)
        os.unlink(db)


def query(db, sql, params=()):
    """Rows of the application's own database, read outside both MCP servers."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return conn.execute(sql, params).fetchall()
