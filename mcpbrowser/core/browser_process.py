"""The shared browser's process: find an executable, run it behind a Playwright browser server, stop it.

Threads: the browser-supervisor thread (core/browser_supervisor.py) runs `SharedBrowser.start`,
`relaunch`, `ping` and `stop`; `SharedBrowser` reads the server's output on two threads of its own.
Sessions attach to it from their threads (session/attach.py).

A Playwright browser server (children/launch_server.js, on the playwright package's Node.js), not CDP:
over CDP each session's driver sees every session's pages, dismisses dialogs it has no listener for and
may reset another's emulation (microsoft/playwright#23971); through `launchServer` a connection sees only
its own contexts. Sessions also reach it on a Unix socket, through children/pipe_relay.py."""

import contextlib
import ctypes
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque, namedtuple
from typing import Any

from mcpbrowser.errors import BrowserError
from mcpbrowser.logs import log
from mcpbrowser.process_tree import alive, descendants
from mcpbrowser.trace_scrub import RUNTIME_PREFIX

INSTALL_HINT = (
    "Install one with `sudo apt-get install chromium` (Debian/Ubuntu) or "
    "`python -m playwright install chromium`, or pass --executable-path."
)
SYSTEM_CHROMIUMS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
# Debian's package chromium-headless-shell: its binary itself, as its /usr/bin wrapper keeps a shell as the
# browser's parent (it does not exec), which the process tree's readers would take for the browser.
SYSTEM_SHELLS = ("/usr/lib/chromium/chromium-headless-shell", "chromium-headless-shell")
CHILDREN = os.path.join(os.path.dirname(os.path.dirname(__file__)), "children")
LAUNCHER = os.path.join(CHILDREN, "launch_server.js")
RELAY = os.path.join(CHILDREN, "pipe_relay.py")
# Where sessions reach a browser: its WebSocket endpoint, and for our own browser the
# pipe server's socket and the relay command to start in the driver's place (else None).
Endpoint = namedtuple("Endpoint", "ws pipe relay")
# A 1 MB young generation for our Node.js processes: less memory, no measurable slowdown (docs/performance.md).
# Playwright offers no hook for a driver's command line, so the server adds it to NODE_OPTIONS at start-up.
NODE_MEMORY_FLAG = "--max-semi-space-size=1"
# WebRTC's UDP (STUN, media) would pass by the domain policy's proxy and reach a forbidden host; with this
# policy it uses UDP only through a proxy, which an HTTP proxy cannot carry, so it sends none
# (--force-webrtc-ip-handling-policy did not stop it). Its TCP goes through the proxy, which checks it.
# The headless shell has no such policy of its own: it takes the content layer's switch, which the desktop browser
# ignores (the tests' WebRTC page sent 12 datagrams to a forbidden host from the shell without it). Both go.
WEBRTC_UDP_FLAGS = ("--webrtc-ip-handling-policy=disable_non_proxied_udp",
                    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp")
# A smooth scroll (a page styled `scroll-behavior: smooth`, a script's `behavior: "smooth"`, a key's or the wheel's
# animation) runs up to 1.5 s after the action that asked for it, starting a frame later: an answer (and a screenshot)
# before it ended showed the page where it was, and what comes into view at its end was missing. Nobody reads the
# animation; the browsers we launch scroll at once (tests/test_single_page_apps.py, the smooth scroll's test).
NO_SMOOTH_SCROLL_FLAG = "--disable-smooth-scrolling"
# With every session behind a policy proxy (a server-wide host rule), the browser resolves no name itself: the proxy
# resolves each one it allows. Left to it, WebRTC looked a TURN server's name up in the system's DNS before sending
# its CONNECT to the proxy (which refused it): a forbidden name, or data spelt as one, reached the name's own
# nameserver past the policy (both browsers). 127.0.0.1, the proxies' address, still connects.
NO_DNS_FLAG = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"
# Chromium runs the tools a page registers (document.modelContext, WebMCP) only with this feature on,
# and Playwright lists and calls them only when it sees it among the launch arguments (--webmcp).
WEBMCP_FLAG = "--enable-features=WebMCP"


def tune_driver_memory():
    """Append our Node.js flags to NODE_OPTIONS for drivers started from now on."""
    current = os.environ.get("NODE_OPTIONS", "")
    if NODE_MEMORY_FLAG not in current:
        os.environ["NODE_OPTIONS"] = f"{current} {NODE_MEMORY_FLAG}".strip()


def effective_headless(config):
    """Headed by default (a person can take over a login), but headless with a notice when there is no display."""
    display = sys.platform != "linux" or os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    if not config.headless and not display:
        log.warning("no display found (DISPLAY and WAYLAND_DISPLAY are unset): running headless",
                    extra={"event": "headless_fallback"})
        return True
    return config.headless


def _playwright_dirs():
    import playwright

    driver = os.path.join(os.path.dirname(playwright.__file__), "driver")
    return driver, os.path.join(driver, "package")


def playwright_chromium(shell=False):
    """Playwright's own installed Chromium for this Playwright version, if any; its headless shell with `shell`."""
    root = os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or os.path.expanduser("~/.cache/ms-playwright")
    name, folder = ("chromium-headless-shell", "chromium_headless_shell") if shell else ("chromium", "chromium")
    revision = "*"  # without a manifest: any installed revision
    with contextlib.suppress(OSError, ValueError, KeyError, StopIteration, ImportError):
        with open(os.path.join(_playwright_dirs()[1], "browsers.json")) as f:
            revision = next(b["revision"] for b in json.load(f)["browsers"] if b["name"] == name)
    patterns = tuple(f"chrome-headless-shell-{os_}*/chrome-headless-shell{exe}" for os_, exe in (
        ("linux", ""), ("mac", ""), ("win", ".exe"))) if shell else (
        "chrome-linux*/chrome", "chrome-mac*/Chromium.app/Contents/MacOS/Chromium", "chrome-win*/chrome.exe")
    for pattern in patterns:
        found = sorted(glob.glob(os.path.join(root, f"{folder}-{revision}", pattern)))
        if found:
            return found[-1]
    return None


def find_executable(engine, executable_path=None, shell=False):
    """--executable-path, else for chromium Playwright's own or a system one; None lets Playwright choose.

    `shell` (a headless browser that needs nothing the shell lacks: the supervisor decides) prefers Chromium's
    headless shell, Playwright's or the system's, as Playwright's own headless launch does: the same engine
    without the desktop browser's layer, about half the CPU (docs/performance.md). Playwright's own pair first,
    which matches its version."""
    if executable_path:
        if os.path.isfile(executable_path) and os.access(executable_path, os.X_OK):
            return executable_path
        raise BrowserError(f"--executable-path {executable_path!r} is not an executable file. {INSTALL_HINT}")
    if engine != "chromium":
        return None  # firefox and webkit come only from Playwright's own install
    found = (shell and playwright_chromium(shell=True)) or playwright_chromium() \
        or (shell and _on_path(SYSTEM_SHELLS)) or _on_path(SYSTEM_CHROMIUMS)
    if found:
        return found
    # `playwright install --only-shell` (what Playwright suggests for headless CI) leaves the shell alone: say so,
    # not that no Chromium was found, to a server that asks for the whole one (a shell asked for is found above).
    alone = playwright_chromium(shell=True) or _on_path(SYSTEM_SHELLS)
    if alone:
        raise BrowserError(f"Only Chromium's headless shell is installed ({alone}), which shows no window and keeps "
                           "no spare renderer: this server needs the whole browser. Install it with `python -m "
                           "playwright install chromium` (or Debian's chromium), or run with --headless and "
                           "without --spare-renderer.")
    raise BrowserError(f"No Chromium or Chrome was found. {INSTALL_HINT}")


def _on_path(names):
    """The first of these executables found (a name on PATH, or an absolute path), else None."""
    return next(filter(None, map(shutil.which, names)), None)


def is_headless_shell(executable):
    """Chromium's headless shell (Playwright's chrome-headless-shell, Debian's chromium-headless-shell): no window."""
    return bool(executable) and "headless" in os.path.basename(executable).replace("_", "-")


def compile_cache_dir():
    """Where the launcher's Node.js keeps compiled code between runs (see launch_server.js); None if unusable.

    Not under the launcher's TMPDIR, which goes with each browser: the cache must outlive it."""
    folder = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mcpbrowser",
                          "node-compile-cache")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        return None
    return folder


def _die_with_parent():
    """preexec_fn: ask Linux to SIGKILL the child if the thread that started it dies."""
    if sys.platform != "linux":
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1
    return lambda: libc.prctl(pr_set_pdeathsig, signal.SIGKILL)


class SharedBrowser:
    """A launcher running one browser at a time behind a Playwright browser server, shared by every session."""

    def __init__(self, engine, executable, headless, on_exit=None, spare_renderer=False, tuned=True, webmcp=False,
                 proxied=False):
        self.engine = engine  # chromium, firefox or webkit (--browser)
        self.webmcp = webmcp  # Chromium runs page tools (--webmcp)
        self.proxied = proxied  # every session is behind a policy proxy: Chromium resolves no name (NO_DNS_FLAG)
        self.spare_renderer = spare_renderer
        self.tuned = tuned  # False: Playwright's own launch arguments (the benchmark's raw contender)
        self.executable, self.headless = executable, headless
        self.ws_endpoint = self.pipe_endpoint = None
        self.process: Any = None  # the launcher's Popen, once started
        self.runtime_dir: Any = None  # private: the sessions' socket and the relay script
        self.ended = threading.Event()  # the current browser is gone: it exited, or its launcher did
        self._on_exit = on_exit         # called on the pipe reader thread when it goes
        self._exit_line = None          # "code signal" of the current browser's exit, as the launcher saw it
        self._found = threading.Event()          # the current browser's endpoint came, or the launcher ended
        self._launcher_gone = threading.Event()  # the launcher's stdout closed: it exited, or is about to
        self._stderr_reader: Any = None
        self._pong = threading.Event()
        self._ping_failure = None
        self._ping_lock = threading.Lock()
        self._stderr_tail: deque[str] = deque(maxlen=20)
        # Chromium said its DISPLAY has no X server: the line comes first, and Playwright's stack trace (about 25
        # lines) pushes it out of the tail, whose end told of a zygote's "Broken pipe" instead.
        self._no_x_server = False
        self._stopped = False

    # -- SUPERVISOR THREAD ---------------------------------------------------
    # PR_SET_PDEATHSIG fires when the *thread* that forked the child exits, so
    # start() must run on a thread that lives as long as the browser should.

    def start(self, timeout=30.0, abort=None):
        """Launch the browser server and wait for its endpoint; `abort` (an Event) gives up early."""
        driver, package = _playwright_dirs()
        node = os.environ.get("PLAYWRIGHT_NODEJS_PATH") or os.path.join(
            driver, "node.exe" if sys.platform == "win32" else "node")
        _sweep_runtime_dirs()
        self.runtime_dir = tempfile.mkdtemp(prefix=f"{RUNTIME_PREFIX}{os.getpid()}-")
        options = {"browser": self.engine, "executablePath": self.executable,
                   "headless": self.headless, "args": self._args(),
                   "tuned": self.tuned, "spareRenderer": self.spare_renderer,
                   "pipePath": os.path.join(self.runtime_dir, "sessions.sock"),
                   "compileCache": compile_cache_dir()}
        self.process = subprocess.Popen(
            [node, NODE_MEMORY_FLAG, LAUNCHER, package, json.dumps(options)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True, preexec_fn=_die_with_parent(), env=self._scratch_env(),
        )
        threading.Thread(target=self._read_endpoint, name="browser-stdout", daemon=True).start()
        self._stderr_reader = threading.Thread(target=self._drain_stderr, name="browser-stderr", daemon=True)
        self._stderr_reader.start()
        return self._await_endpoint(timeout, abort, relaunched=False)

    def can_relaunch(self):
        """True when the browser exited and its launcher still runs, waiting to start the next one."""
        return self._exit_line is not None and not self._launcher_gone.is_set() and not self._stopped

    def relaunch(self, timeout=30.0, abort=None):
        """Start the next browser on this launcher (can_relaunch() was True), skipping a new Node.js and
        playwright-core; raises BrowserError, stopped then."""
        self.ws_endpoint = self.pipe_endpoint = self._exit_line = None
        self._stderr_tail.clear()  # a failure message tells of this launch, not of the last browser's death
        self._no_x_server = False
        self._found.clear()
        self.ended.clear()
        if self._launcher_gone.is_set():  # it ended since: its reader set _found before the clear above
            self.stop(0)
            raise BrowserError(self._failure_message())
        with contextlib.suppress(OSError, ValueError):  # the launcher is gone: its reader sets _found at the pipe's end
            self.process.stdin.write(b"launch\n")
            self.process.stdin.flush()
        return self._await_endpoint(timeout, abort, relaunched=True)

    def _await_endpoint(self, timeout, abort, relaunched):
        """The current browser's Endpoint once the launcher prints it; BrowserError (and stopped) if it never does."""
        deadline = time.monotonic() + timeout
        while not self._found.wait(0.1) and time.monotonic() < deadline:
            if abort is not None and abort.is_set():
                self.stop(0)
                raise BrowserError("The server is shutting down.")
        if self.ws_endpoint is None:
            if self._exit_line is None:  # the launcher failed: let it finish writing why, and its reader take it in
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.process.wait(2)
                # Its reader may not have read the last lines yet: it ends at the pipe's end.
                self._stderr_reader.join(2)
            self.stop()
            raise BrowserError(self._failure_message())
        log.info("browser started", extra={"event": "browser_started", "pid": self.process.pid,
                                           "browser": self.engine, "executable": self.executable,
                                           "headless": self.headless, "pipe": bool(self.pipe_endpoint),
                                           "relaunched": relaunched})
        relay = _write_relay_script(self.runtime_dir) if self.pipe_endpoint else None
        return Endpoint(self.ws_endpoint, self.pipe_endpoint, relay)

    def _args(self):
        """Chromium switches of ours (the benchmark's untuned raw contender: only WebMCP, when asked)."""
        if self.engine != "chromium":
            return []
        tuned = (*WEBRTC_UDP_FLAGS, NO_SMOOTH_SCROLL_FLAG) if self.tuned else ()
        return [*tuned, *([WEBMCP_FLAG] if self.webmcp else []), *([NO_DNS_FLAG] if self.proxied else [])]

    def _scratch_env(self):
        """The launcher's environment: TMPDIR inside our runtime directory, on Linux, so the profile, sockets
        and downloads that a killed browser leaves go with that directory (at stop() or the sweep). Not when
        the path is long: a Unix socket's path must fit in 108 bytes, Chromium's is about 45 below TMPDIR.
        CHROME_CONFIG_HOME there too: the whole browser's crash reporter writes a crashed process's dump (a
        page's memory, typed passwords and all) below it, by default in ~/.config/chromium, kept for good."""
        scratch = os.path.join(self.runtime_dir, "tmp")
        if not sys.platform.startswith("linux") or len(scratch) > 60:
            return None
        os.mkdir(scratch, 0o700)
        return dict(os.environ, TMPDIR=scratch, CHROME_CONFIG_HOME=scratch)

    def stop(self, grace=2.0):
        """SIGTERM the server (it closes the browser), SIGKILL its group after `grace`, reap. Idempotent.

        Playwright starts the browser in a process group of its own, so the launcher's descendants are
        listed first and killed one by one too: nothing of ours outlives this, even a hung browser."""
        if self._stopped or self.process is None:
            return
        self._stopped = True
        proc = self.process
        tree = descendants(proc.pid)
        with contextlib.suppress(OSError):
            proc.stdin.close()  # a launcher that lost SIGTERM still hears this
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            if grace:
                log.warning("browser ignored SIGTERM: killing it", extra={"event": "browser_killed", "grace_s": grace})
            self._signal_group(signal.SIGKILL)
            proc.wait()
        self._signal_group(signal.SIGKILL)  # anything of the group still alive is a leftover
        for pid in tree:
            if alive(pid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        if self.runtime_dir:
            shutil.rmtree(self.runtime_dir, ignore_errors=True)
        log.info("browser stopped", extra={"event": "browser_stopped"})

    def ping(self, timeout=10.0):
        """Ask the server to open and close a context; None when it did, else what went wrong."""
        if self.ended.is_set():
            return "the browser server exited"
        with self._ping_lock:
            self._pong.clear()
            self._ping_failure = None
            try:
                self.process.stdin.write(b"ping\n")
                self.process.stdin.flush()
            except (OSError, ValueError) as exc:
                return f"cannot reach the browser server: {exc}"
            if not self._pong.wait(timeout):
                return f"no answer to a health check within {timeout:g} s"
            return self._ping_failure

    def exit_cause(self):
        """Why the browser ended, for the restart log."""
        if self._exit_line:
            code, _, sig = self._exit_line.partition(" ")
            return f"the browser process exited (code {code}, signal {sig})"
        code = self.process.poll() if self.process is not None else None
        return f"the browser server exited (code {code})"

    def _failure_message(self):
        tail = " | ".join(self._stderr_tail)
        if "Executable doesn't exist" in tail or "executable doesn't exist" in tail.lower():
            return (f"{self.engine} is not installed. Install it with "
                    f"`python -m playwright install {self.engine}`, or pass --executable-path.")
        where = f" at {self.executable}" if self.executable else ""
        if self._no_x_server:
            return (f"The {self.engine} browser{where} found no X server at DISPLAY={os.environ.get('DISPLAY', '')}: "
                    "start one there, or run headless (--headless).")
        if self._exit_line is not None:
            why = f"{self.exit_cause()}. {tail[-1500:]}".rstrip()
            return f"The {self.engine} browser{where} exited as it started: {why}"
        return f"The {self.engine} browser{where} did not start: {tail[-1500:] or 'no output'}"

    def _signal_group(self, sig):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, sig)

    # -- PIPE READER THREADS ---------------------------------------------------
    # A child whose output pipe fills up blocks, so both pipes are read until EOF.

    def _read_endpoint(self):
        for raw in self.process.stdout:
            line = raw.decode("utf-8", "replace").strip()
            if line.startswith("pipe "):
                self.pipe_endpoint = line[len("pipe "):]
            elif self.ws_endpoint is None and line.startswith("ws://"):
                self.ws_endpoint = line
                self._found.set()
            elif line == "pong":
                self._pong.set()
            elif line.startswith("ping-failed"):
                self._ping_failure = f"health check failed: {line[len('ping-failed'):].strip()}"
                self._pong.set()
            elif line.startswith("exited "):
                # The supervisor acts on this line, not on the launcher's own exit (later, after Playwright's cleanup).
                self._exit_line = line[len("exited "):]
                self.ended.set()
                self._found.set()  # one that died while it launched never prints its endpoint
                if self._on_exit is not None and not self._stopped:
                    self._on_exit()
        self._launcher_gone.set()
        self._found.set()
        self.ended.set()
        self._pong.set()  # a ping in progress gets its answer now
        if self._ping_failure is None:
            self._ping_failure = "the browser server exited"
        if self._on_exit is not None and not self._stopped:
            self._on_exit()

    def _drain_stderr(self):
        for raw in self.process.stderr:
            line = raw.decode("utf-8", "replace").rstrip()
            if line:
                self._stderr_tail.append(line)
                self._no_x_server = self._no_x_server or "Missing X server or $DISPLAY" in line


def _sweep_runtime_dirs():
    """Remove the runtime directories of mcpbrowser processes that died without cleaning up (SIGKILL)."""
    for path in glob.glob(os.path.join(tempfile.gettempdir(), RUNTIME_PREFIX + "*-*")):
        pid = os.path.basename(path)[len(RUNTIME_PREFIX):].split("-", 1)[0]
        try:
            mine = os.stat(path).st_uid == os.getuid()
        except OSError:
            continue
        if pid.isdigit() and mine and not alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)


def _write_relay_script(directory):
    """An executable that runs pipe_relay.py, for the transport to start instead of Node.js."""
    # The transport runs `<executable> <entry point> run-driver`: the entry point slot
    # carries the socket's path, and this script adds the interpreter's flags.
    path = os.path.join(directory, "relay")
    with open(path, "w") as f:
        f.write(f'#!/bin/sh\nexec "{sys.executable}" -I -S "{RELAY}" "$@"\n')
    os.chmod(path, 0o700)
    return path
