"""The shared browser: find an executable, run it behind a Playwright browser server, stop it.

Threads: `SharedBrowser.start` and `stop` run on the browser-supervisor thread
(see core.Browser); `attach` runs on a session thread and returns a Playwright
Browser bound to that thread only.

Why a Playwright browser server rather than attaching over CDP: every session
thread has its own `sync_playwright()` driver. Attached over CDP, each driver
sees every page of every session, auto-dismisses dialogs it has no listener for
(so one session's confirm() vanished under another's driver), and may reset
another session's emulation (microsoft/playwright#23971). Through
`launchServer`, each connection sees only the contexts it created. The server
runs on the Node.js that ships inside the playwright package, and works the
same for chromium, firefox and webkit.
"""

import ctypes
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections import deque

from mcpbrowser.errors import BrowserError
from mcpbrowser.logs import log

INSTALL_HINT = (
    "Install one with `sudo apt-get install chromium` (Debian/Ubuntu) or "
    "`python -m playwright install chromium`, or pass --executable-path."
)
SYSTEM_CHROMIUMS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
LAUNCHER = os.path.join(os.path.dirname(__file__), "launch_server.js")
# Each session thread's sync_playwright() runs a Node.js driver (~75 MB PSS, the
# largest cost per session). A 1 MB young generation cut that by ~11 MB each
# with no measurable slowdown (scripts/bench.py); --jitless saved a little more
# but slows every call. Playwright offers no hook for the driver's environment,
# so the server adds this to NODE_OPTIONS at start-up.
DRIVER_NODE_OPTIONS = "--max-semi-space-size=1"


def tune_driver_memory(environ=os.environ):
    """Append our Node.js flags to NODE_OPTIONS for drivers started from now on."""
    current = environ.get("NODE_OPTIONS", "")
    if DRIVER_NODE_OPTIONS not in current:
        environ["NODE_OPTIONS"] = f"{current} {DRIVER_NODE_OPTIONS}".strip()


def display_available():
    """True when a headed browser could open a window."""
    if sys.platform != "linux":
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def effective_headless(config):
    """Headed by default (seed 003), but headless with a notice when there is no display."""
    if config.headless:
        return True
    if not display_available():
        log.warning("no display found (DISPLAY and WAYLAND_DISPLAY are unset): running headless",
                    extra={"event": "headless_fallback"})
        return True
    return False


def _playwright_dirs():
    import playwright

    driver = os.path.join(os.path.dirname(playwright.__file__), "driver")
    return driver, os.path.join(driver, "package")


def playwright_chromium():
    """Playwright's own installed Chromium for this Playwright version, if any."""
    root = os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or os.path.expanduser("~/.cache/ms-playwright")
    revision = "*"
    try:
        with open(os.path.join(_playwright_dirs()[1], "browsers.json")) as f:
            revision = next(b["revision"] for b in json.load(f)["browsers"] if b["name"] == "chromium")
    except (OSError, ValueError, KeyError, StopIteration, ImportError):
        pass  # no manifest: accept any installed revision
    for pattern in ("chrome-linux*/chrome", "chrome-mac*/Chromium.app/Contents/MacOS/Chromium",
                    "chrome-win*/chrome.exe"):
        found = sorted(glob.glob(os.path.join(root, f"chromium-{revision}", pattern)))
        if found:
            return found[-1]
    return None


def find_executable(browser, executable_path=None):
    """--executable-path, else for chromium Playwright's own or a system one; None lets Playwright choose."""
    if executable_path:
        if os.path.isfile(executable_path) and os.access(executable_path, os.X_OK):
            return executable_path
        raise BrowserError(f"--executable-path {executable_path!r} is not an executable file. {INSTALL_HINT}")
    if browser != "chromium":
        return None  # firefox and webkit come only from Playwright's own install
    candidate = playwright_chromium()
    if candidate:
        return candidate
    for name in SYSTEM_CHROMIUMS:
        path = shutil.which(name)
        if path:
            return path
    raise BrowserError(f"No Chromium or Chrome was found. {INSTALL_HINT}")


def _die_with_parent():
    """preexec_fn: ask Linux to SIGKILL the child if the thread that started it dies."""
    if sys.platform != "linux":
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1
    return lambda: libc.prctl(pr_set_pdeathsig, signal.SIGKILL)


class SharedBrowser:
    """One browser behind a Playwright browser server, shared by every session."""

    def __init__(self, browser, executable, headless):
        self.browser = browser
        self.executable = executable
        self.headless = headless
        self.ws_endpoint = None
        self.process = None
        self._stderr_tail = deque(maxlen=20)
        self._stopped = False

    # -- SUPERVISOR THREAD ---------------------------------------------------
    # PR_SET_PDEATHSIG fires when the *thread* that forked the child exits, so
    # start() must run on a thread that lives as long as the browser should.

    def start(self, timeout=30.0):
        """Launch the browser server and wait for its endpoint."""
        driver, package = _playwright_dirs()
        node = os.environ.get("PLAYWRIGHT_NODEJS_PATH") or os.path.join(
            driver, "node.exe" if sys.platform == "win32" else "node")
        options = {"browser": self.browser, "executablePath": self.executable,
                   "headless": self.headless, "args": []}
        self.process = subprocess.Popen(
            [node, LAUNCHER, package, json.dumps(options)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True, preexec_fn=_die_with_parent(),
        )
        found = threading.Event()
        threading.Thread(target=self._read_endpoint, args=(found,), name="browser-stdout", daemon=True).start()
        threading.Thread(target=self._drain_stderr, name="browser-stderr", daemon=True).start()
        if not found.wait(timeout) or self.ws_endpoint is None:
            try:  # let a launcher that failed finish writing why
                self.process.wait(2)
            except subprocess.TimeoutExpired:
                pass
            self.stop()
            raise BrowserError(self._failure_message())
        log.info("browser started", extra={"event": "browser_started", "pid": self.process.pid,
                                           "browser": self.browser, "executable": self.executable,
                                           "headless": self.headless})
        return self.ws_endpoint

    def stop(self, grace=2.0):
        """Close the server's stdin (it closes the browser), signal it after `grace`, reap it. Idempotent."""
        if self._stopped or self.process is None:
            return
        self._stopped = True
        proc = self.process
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            self._signal_group(signal.SIGKILL)
            proc.wait()
        self._signal_group(signal.SIGKILL)  # anything of the group still alive is a leftover
        log.info("browser stopped", extra={"event": "browser_stopped"})

    def _failure_message(self):
        tail = " | ".join(self._stderr_tail)
        if "Executable doesn't exist" in tail or "executable doesn't exist" in tail.lower():
            return (f"{self.browser} is not installed. Install it with "
                    f"`python -m playwright install {self.browser}`, or pass --executable-path.")
        where = f" at {self.executable}" if self.executable else ""
        return f"The {self.browser} browser{where} did not start: {tail[-1500:] or 'no output'}"

    def _signal_group(self, sig):
        try:
            os.killpg(self.process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    # -- PIPE READER THREADS ---------------------------------------------------
    # A child whose output pipe fills up blocks, so both pipes are read until EOF.

    def _read_endpoint(self, found):
        for raw in self.process.stdout:
            line = raw.decode("utf-8", "replace").strip()
            if self.ws_endpoint is None and line.startswith("ws://"):
                self.ws_endpoint = line
                found.set()
        found.set()

    def _drain_stderr(self):
        for raw in self.process.stderr:
            line = raw.decode("utf-8", "replace").rstrip()
            if line:
                self._stderr_tail.append(line)


# -- SESSION THREAD --------------------------------------------------------------

def attach(playwright, config, ws_endpoint):
    """Connect this session thread's Playwright to the shared browser (ours or a remote one)."""
    headers = config.headers() or None
    if config.cdp_endpoint:
        # CDP shows every context of the browser to every client: with other clients on
        # the same browser, their drivers can dismiss our dialogs. --ws-endpoint has no such gap.
        return playwright.chromium.connect_over_cdp(config.cdp_endpoint, headers=headers)
    return getattr(playwright, config.browser).connect(ws_endpoint, headers=headers)
