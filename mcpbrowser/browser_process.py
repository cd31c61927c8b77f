"""The shared browser process: find an executable, launch Chromium, stop it.

Threads: `SharedBrowser.start` and `stop` run on the supervisor thread that owns
the browser (see core.Browser); `attach` runs on a session thread and returns
Playwright objects bound to that thread only.

Why we launch Chromium ourselves instead of through Playwright: every session
thread has its own `sync_playwright()`, and a Playwright Browser object cannot
cross threads. A plain process with a CDP endpoint on loopback lets each session
thread attach with `connect_over_cdp` while one process serves them all.
Known risks: CDP is lower fidelity than Playwright's own protocol, and
microsoft/playwright#23971 (two Playwright instances on one Chrome may reset
each other's emulation), so sessions avoid per-page emulation overrides.
"""

import ctypes
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections import deque

from mcpbrowser.errors import BrowserError
from mcpbrowser.logs import log

INSTALL_HINT = (
    "Install one with `sudo apt-get install chromium` (Debian/Ubuntu) or "
    "`python -m playwright install chromium`, or pass --executable-path."
)
SYSTEM_CHROMIUMS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
_DEVTOOLS_LINE = re.compile(r"DevTools listening on (ws://\S+)")

# Chromium flags. The background-networking group stops Chromium from calling
# home (refused connections on a closed network, noise and delay elsewhere);
# the backgrounding group keeps pages in unfocused windows running at full speed
# when many sessions share one headed browser.
CHROMIUM_FLAGS = (
    "--remote-debugging-port=0",
    "--remote-debugging-address=127.0.0.1",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-breakpad",
    "--metrics-recording-only",
    "--password-store=basic",
    "--use-mock-keychain",
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
    "--disable-renderer-backgrounding",
    "--disable-dev-shm-usage",
)


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


def playwright_chromium():
    """Playwright's own installed Chromium for this Playwright version, if any."""
    root = os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or os.path.expanduser("~/.cache/ms-playwright")
    revision = "*"
    try:
        import playwright

        manifest = os.path.join(os.path.dirname(playwright.__file__), "driver", "package", "browsers.json")
        with open(manifest) as f:
            revision = next(b["revision"] for b in json.load(f)["browsers"] if b["name"] == "chromium")
    except (OSError, ValueError, KeyError, StopIteration, ImportError):
        pass  # no manifest: accept any installed revision
    for pattern in ("chrome-linux*/chrome", "chrome-mac*/Chromium.app/Contents/MacOS/Chromium",
                    "chrome-win*/chrome.exe"):
        found = sorted(glob.glob(os.path.join(root, f"chromium-{revision}", pattern)))
        if found:
            return found[-1]
    return None


def find_chromium(executable_path=None):
    """Pick the executable: --executable-path, Playwright's own, a system one; else a clear error."""
    if executable_path:
        if os.path.isfile(executable_path) and os.access(executable_path, os.X_OK):
            return executable_path
        raise BrowserError(f"--executable-path {executable_path!r} is not an executable file. {INSTALL_HINT}")
    candidate = playwright_chromium()
    if candidate:
        return candidate
    for name in SYSTEM_CHROMIUMS:
        path = shutil.which(name)
        if path:
            return path
    raise BrowserError(f"No Chromium or Chrome was found. {INSTALL_HINT}")


def _die_with_parent():
    """preexec_fn: ask Linux to SIGKILL the browser if the thread that started it dies."""
    if sys.platform != "linux":
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1
    return lambda: libc.prctl(pr_set_pdeathsig, signal.SIGKILL)


class SharedBrowser:
    """One Chromium process with a CDP endpoint, shared by every session."""

    def __init__(self, executable, headless):
        self.executable = executable
        self.headless = headless
        self.ws_endpoint = None
        self.process = None
        self._profile = None
        self._stderr_tail = deque(maxlen=20)
        self._stopped = False

    # -- SUPERVISOR THREAD ---------------------------------------------------
    # PR_SET_PDEATHSIG fires when the *thread* that forked the child exits, so
    # start() must run on a thread that lives as long as the browser should.

    def start(self, timeout=30.0):
        """Launch Chromium and wait for its DevTools endpoint."""
        self._profile = tempfile.mkdtemp(prefix="mcpbrowser-profile-")
        args = [self.executable, *CHROMIUM_FLAGS, f"--user-data-dir={self._profile}"]
        if self.headless:
            args += ["--headless", "--hide-scrollbars", "--mute-audio"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            # Chromium refuses to run as root with its sandbox on.
            args.append("--no-sandbox")
        args.append("about:blank")
        self.process = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            start_new_session=True, preexec_fn=_die_with_parent(),
        )
        found = threading.Event()
        drain = threading.Thread(target=self._drain_stderr, args=(found,),
                                 name="browser-stderr", daemon=True)
        drain.start()
        if not found.wait(timeout) or self.ws_endpoint is None:
            self.stop()
            tail = " | ".join(self._stderr_tail)
            raise BrowserError(f"Chromium at {self.executable} did not start: {tail or 'no output'}")
        log.info("browser started", extra={"event": "browser_started", "pid": self.process.pid,
                                           "executable": self.executable, "headless": self.headless})
        return self.ws_endpoint

    def stop(self, grace=2.0):
        """SIGTERM the browser's process group, SIGKILL after `grace` seconds, reap it. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        proc = self.process
        if proc is not None and proc.poll() is None:
            # SIGTERM the browser alone: it then reaps its own zygote and renderers.
            # Signalling the whole group at once orphans them before they are reaped.
            proc.terminate()
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                proc.wait()
        # Anything of the group still alive after the browser exited is a leftover.
        self._signal_group(signal.SIGKILL)
        if self._profile:
            shutil.rmtree(self._profile, ignore_errors=True)
        log.info("browser stopped", extra={"event": "browser_stopped"})

    def _signal_group(self, sig):
        try:
            os.killpg(self.process.pid, sig)
        except (ProcessLookupError, PermissionError, AttributeError):
            pass

    # -- STDERR DRAIN THREAD -------------------------------------------------
    # A Chromium whose stderr pipe fills up blocks, so this reads until EOF.

    def _drain_stderr(self, found):
        for raw in self.process.stderr:
            line = raw.decode("utf-8", "replace").rstrip()
            if self.ws_endpoint is None:
                match = _DEVTOOLS_LINE.search(line)
                if match:
                    self.ws_endpoint = match.group(1)
                    found.set()
                    continue
                self._stderr_tail.append(line)
        found.set()


# -- SESSION THREAD --------------------------------------------------------------

def attach(playwright, config, ws_endpoint, headless):
    """Return a Playwright Browser for the calling session thread only."""
    if config.browser == "chromium":
        return playwright.chromium.connect_over_cdp(ws_endpoint)
    # Firefox and WebKit have no CDP: each session launches its own browser.
    engine = getattr(playwright, config.browser)
    try:
        return engine.launch(headless=headless, executable_path=config.executable_path)
    except Exception as exc:  # Playwright raises a plain Error for a missing executable
        if "Executable doesn't exist" in str(exc) or "executable" in str(exc).lower():
            raise BrowserError(
                f"{config.browser} is not installed. Install it with "
                f"`python -m playwright install {config.browser}`, or pass --executable-path."
            ) from None
        raise
