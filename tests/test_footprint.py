"""Memory savings as behaviour: sessions run a pipe relay instead of a Node.js driver,
and quiet sessions have their pages' garbage collected. (The benchmark measures the sizes.)"""
import os
import signal
import subprocess
import tempfile
import time

import pytest
from support import McpClient, server_pid, wait_for
from support import driver_cmdlines as drivers

import mcpbrowser
from mcpbrowser.config import Config
from mcpbrowser.core import browser_process

pytestmark = pytest.mark.slow


def test_sessions_reach_the_browser_through_a_relay_not_a_node_driver(pages):
    c = McpClient("--pool-size", "1")
    try:
        sids = [c.tool("create_session")["sessionId"] for _ in range(2)]
        # Two sessions and the refilled pool: three relays, and no Node.js driver at all.
        assert wait_for(lambda: len(drivers()) == 3, 10), drivers()
        assert all("pipe_relay.py" in line and "node" not in line.split()[0] for line in drivers()), drivers()
        # Every message passes through them: a page loads, an element is typed into and read back.
        c.tool("navigate", sessionId=sids[0], url=pages.url("/form"))
        c.tool("type", sessionId=sids[0], selector="#name", text="relayed")
        c.tool("click", sessionId=sids[0], selector="#go")
        assert c.tool("snapshot", sessionId=sids[0])["title"] == "Hello relayed"
        # A closed session's relay exits with its connection.
        c.tool("close_session", sessionId=sids[1])
        assert wait_for(lambda: len(drivers()) == 2, 10), drivers()
    finally:
        c.close()


def weakref_alive(c, sid):
    return c.tool("evaluate", sessionId=sid, expression="() => window.ref.deref() !== undefined")["result"]


def test_a_quiet_session_has_its_pages_garbage_collected(pages):
    c = McpClient("--allow-evaluate", "--idle-gc", "300", "--pool-size", "0")
    try:
        sid = c.tool("create_session")["sessionId"]
        c.tool("navigate", sessionId=sid, url=pages.url("/weakref"))
        assert weakref_alive(c, sid) is True
        time.sleep(1.5)  # quiet: no call may come in between, or the collection waits for the next pause
        assert weakref_alive(c, sid) is False
    finally:
        c.close()


def test_without_idle_gc_the_garbage_stays(pages):
    """The control: the page itself does not collect that object within the same pause."""
    c = McpClient("--allow-evaluate", "--idle-gc", "0", "--pool-size", "0")
    try:
        sid = c.tool("create_session")["sessionId"]
        c.tool("navigate", sessionId=sid, url=pages.url("/weakref"))
        time.sleep(1.5)
        assert weakref_alive(c, sid) is True
    finally:
        c.close()


def renderers_started_while_sessions_take_turns(c, pages):
    """How many renderer processes start while two sessions navigate in turn, after a warm-up."""
    from mcpbrowser.process_tree import cmdline, descendants

    def renderers():
        return {pid for pid in descendants(server_pid()) if "--type=renderer" in cmdline(pid)}

    sids = [c.tool("create_session")["sessionId"] for _ in range(2)]
    for sid in sids:
        c.tool("navigate", sessionId=sid, url=pages.url("/title/warm"))
    time.sleep(0.5)  # a spare renderer, if any, is started after a navigation
    before, started = renderers(), set()
    for n in range(3):
        for sid in sids:
            c.tool("navigate", sessionId=sid, url=pages.url(f"/title/turn{n}"))
            time.sleep(0.3)
            started |= renderers() - before
    return len(started)


def test_sessions_taking_turns_start_no_renderer_per_navigation(pages):
    c = McpClient("--pool-size", "0")
    try:
        assert renderers_started_while_sessions_take_turns(c, pages) == 0
    finally:
        c.close()


def test_with_the_spare_renderer_each_turn_starts_one(pages):
    """The control: Chromium's spare renderer is warmed for the context that navigated last."""
    c = McpClient("--pool-size", "0", "--spare-renderer")
    try:
        assert renderers_started_while_sessions_take_turns(c, pages) >= 3
    finally:
        c.close()


def test_a_killed_browser_leaves_no_temporary_files_behind():
    """The profile and Chromium's own temporary files live in our runtime directory, and go with it."""
    import re

    from mcpbrowser.process_tree import browser_main_pid, cmdline

    shared = browser_process.SharedBrowser("chromium", browser_process.find_executable("chromium"), True)
    shared.start()
    try:
        main = wait_for(lambda: browser_main_pid(os.getpid()), 10)
        profile = re.search(r"--user-data-dir=(\S+)", cmdline(main)).group(1)
        assert profile.startswith(os.path.join(shared.runtime_dir, "tmp") + os.sep) and os.path.isdir(profile)
        assert any(name.startswith("org.chromium.") for name in os.listdir(os.path.join(shared.runtime_dir, "tmp")))
        # Killed as a crash or the OOM killer would: neither Chromium nor Playwright cleans up.
        os.killpg(os.getpgid(main), signal.SIGKILL)
        os.kill(shared.process.pid, signal.SIGKILL)
    finally:
        shared.stop()
    assert not os.path.exists(profile) and not os.path.exists(shared.runtime_dir)


def test_the_launcher_keeps_its_compiled_code_for_the_next_start(tmp_path, monkeypatch):
    """Node.js compiles playwright-core (7 MB) at every launch unless a compile cache outside the
    runtime directory keeps it; the cache is written at once, so a killed launcher leaves it too."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    shared = browser_process.SharedBrowser("chromium", browser_process.find_executable("chromium"), True)
    shared.start()
    try:
        cache = tmp_path / "mcpbrowser" / "node-compile-cache"
        assert wait_for(lambda: sum(f.stat().st_size for f in cache.rglob("*") if f.is_file()) > 100_000, 5)
        assert not str(cache).startswith(shared.runtime_dir)
    finally:
        os.kill(shared.process.pid, signal.SIGKILL)
        shared.stop()
    assert cache.is_dir()


def test_runtime_dirs_of_dead_servers_are_swept_at_the_next_start(tmp_path, monkeypatch):
    """A SIGKILLed server cannot remove its socket directory; the next browser start does."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = tmp_path / f"{browser_process.RUNTIME_PREFIX}{gone.pid}-abc"
    live = tmp_path / f"{browser_process.RUNTIME_PREFIX}{os.getpid()}-def"
    other = tmp_path / "mcpbrowser-run-notapid-ghi"
    for folder in (dead, live, other):
        (folder / "browser").mkdir(parents=True)
    browser_process._sweep_runtime_dirs()
    assert not dead.exists() and live.exists() and other.exists()


def test_relayed_sessions_stay_isolated_and_a_dead_relay_takes_its_context_along(pages):
    """Each relay is bridged to a connection of its own: it sees only its own contexts (Playwright's
    Browser.bind pipe server would show it every session's), and they close when it goes."""
    with mcpbrowser.Browser(Config(headless=True, db=":memory:", pool_size=0)) as browser:
        a, b = browser.create_session(), browser.create_session()
        for session in (a, b):
            session.navigate(pages.url("/title/mine"))

        def on_thread(session, fn):
            return browser.registry.worker(session.id).submit(fn).result(10)

        def contexts_seen(state):
            state.tab.page.wait_for_timeout(50)  # let events from the browser arrive
            return len(state.browser.contexts)

        def pages_in_browser(state):  # every page target of the whole browser, over CDP
            cdp = state.browser.new_browser_cdp_session()
            try:
                return len([t for t in cdp.send("Target.getTargets")["targetInfos"] if t["type"] == "page"])
            finally:
                cdp.detach()

        assert on_thread(a, contexts_seen) == 1 and on_thread(b, contexts_seen) == 1
        assert on_thread(b, pages_in_browser) == 2
        os.kill(browser.registry.worker(a.id).driver_pid, signal.SIGKILL)
        assert wait_for(lambda: on_thread(b, pages_in_browser) == 1, 10)
        assert b.navigate(pages.url("/title/still"))["title"] == "still"


def test_a_headless_server_runs_the_headless_shell_and_a_spare_renderer_the_whole_browser():
    """Headless, the server runs Chromium's headless shell (about half the CPU of the whole browser); with
    --spare-renderer, which the shell never keeps (the test above), the whole one."""
    from mcpbrowser.process_tree import browser_main_pid

    shell, whole = browser_process.find_executable("chromium", shell=True), browser_process.find_executable("chromium")
    if os.path.realpath(shell) == os.path.realpath(whole):
        pytest.skip("no headless shell is installed: bash scripts/setup.sh installs Debian's chromium-headless-shell "
                    "as root, else python -m playwright install chromium-headless-shell")
    for flags, expected in (((), shell), (("--spare-renderer",), whole)):
        c = McpClient("--pool-size", "0", *flags)
        try:
            c.tool("create_session")
            ran = os.readlink(f"/proc/{browser_main_pid(server_pid())}/exe")
            if expected == shell:
                assert ran == os.path.realpath(shell), (flags, ran)
            else:  # Debian's /usr/bin/chromium is a script that execs the browser in /usr/lib/chromium
                assert "headless-shell" not in ran and os.path.basename(ran).startswith(("chrom", "google")), ran
        finally:
            c.close()


def test_the_headless_shell_is_found_before_the_whole_browser_and_only_for_a_headless_one(tmp_path, monkeypatch):
    """Playwright's own pair first (its version), then the system's: the shell only when it is asked for."""
    import json

    revisions = {b["name"]: b["revision"] for b in json.load(open(os.path.join(
        browser_process._playwright_dirs()[1], "browsers.json")))["browsers"]}
    made = {}
    for name, folder, binary in (("chromium", "chromium", "chrome-linux64/chrome"),
                                 ("shell", "chromium_headless_shell",
                                  "chrome-headless-shell-linux64/chrome-headless-shell")):
        path = tmp_path / f"{folder}-{revisions[folder.replace('_', '-')]}" / binary
        path.parent.mkdir(parents=True)
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
        made[name] = str(path)
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path))
    assert browser_process.find_executable("chromium", shell=True) == made["shell"]
    assert browser_process.find_executable("chromium") == made["chromium"]
    os.remove(made["shell"])  # only Playwright's whole browser: it, before a system shell of another version
    assert browser_process.find_executable("chromium", shell=True) == made["chromium"]
    assert browser_process.find_executable("chromium", "/bin/true", shell=True) == "/bin/true"
    # Only a shell (playwright install --only-shell), no system browser: a headed server is told what is missing.
    os.remove(made["chromium"])
    with open(tmp_path / "shell-only", "w") as f:
        f.write("#!/bin/sh\n")
    os.chmod(tmp_path / "shell-only", 0o755)
    monkeypatch.setattr(browser_process, "SYSTEM_CHROMIUMS", ("no-such-browser",))
    monkeypatch.setattr(browser_process, "SYSTEM_SHELLS", (str(tmp_path / "shell-only"),))
    assert browser_process.find_executable("chromium", shell=True) == str(tmp_path / "shell-only")
    with pytest.raises(mcpbrowser.BrowserError, match=r"^Only Chromium's headless shell is installed .*shell-only"):
        browser_process.find_executable("chromium")


@pytest.mark.parametrize("shell", [False, True])
def test_a_crashed_renderer_leaves_no_dump_outside_the_runtime_directory(pages, tmp_path, monkeypatch, shell):
    """The whole browser (a headed server's, or with --spare-renderer) has a crash reporter: a renderer's dump,
    the memory of a page that may hold a typed password, went to ~/.config/chromium/Crash Reports/pending and
    stayed there after the server (Debian's wrapper deletes them after 30 days). The headless shell writes none."""
    from mcpbrowser.process_tree import browser_main_pid, cmdline, descendants

    executable = browser_process.find_executable("chromium", shell=shell)
    if shell and "headless" not in executable.replace("_", "-"):
        pytest.skip("no headless shell is installed")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    with mcpbrowser.Browser(Config(headless=True, db=":memory:", pool_size=0, executable_path=executable)) as browser:
        session = browser.create_session()
        session.navigate(pages.url("/title/crash"))
        main = browser_main_pid(os.getpid())
        renderers = [pid for pid in descendants(main) if "--type=renderer" in cmdline(pid)]
        assert renderers
        for pid in renderers:
            os.kill(pid, signal.SIGSEGV)  # caught by the crash reporter as a real crash would be

        def crashed():  # the crash did happen (Playwright may hear of it after a call or two on a loaded machine)
            try:
                session.tabs()
            except mcpbrowser.PageCrashed:
                return True
            return False

        assert wait_for(crashed, 10)
    left = [os.path.join(folder, name) for folder, _, names in os.walk(tmp_path) for name in names]
    assert not [path for path in left if path.endswith((".dmp", ".meta"))], left


def test_a_browser_that_is_not_what_the_mode_calls_for_is_told(pages, tmp_path, monkeypatch, caplog):
    """The headless shell named for a headed server opens no window and said nothing (a person waited for one);
    a headless server on a machine without a shell runs the whole browser, at twice the CPU, and said nothing."""
    shell = browser_process.find_executable("chromium", shell=True)
    if not browser_process.is_headless_shell(shell):
        pytest.skip("no headless shell is installed")
    caplog.set_level("INFO", logger="mcpbrowser")
    monkeypatch.setenv("DISPLAY", ":987")  # none there: the shell needs none
    with mcpbrowser.Browser(Config(headless=False, db=":memory:", pool_size=0, executable_path=shell)) as browser:
        assert browser.create_session(url=pages.url("/title/seen"))
    monkeypatch.setattr(browser_process, "SYSTEM_SHELLS", ())  # a machine without one
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path))
    with mcpbrowser.Browser(Config(headless=True, db=":memory:", pool_size=0)) as browser:
        assert browser.create_session(url=pages.url("/title/seen"))
    told = {getattr(r, "event", None): r.getMessage() for r in caplog.records}
    assert "opens no window" in told.get("headless_shell_headed", ""), told
    assert "playwright install chromium-headless-shell" in told.get("no_headless_shell", ""), told
