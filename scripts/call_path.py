"""Follow one real tools/call through the server and say which of its files the call crosses.

    python scripts/call_path.py [--tool click|type|navigate|hover|select] [--json]

A stdio server runs in this process (as `mcpbrowser` builds it: a Browser core behind a
StdioServer, its stdin and stdout a pair of pipes) on a real Chromium and a page served on
127.0.0.1. One call is traced with `threading.setprofile`: every Python function the
stdin reader and the session's thread enter while the call runs. It prints, in the order
the call meets them:

- **the line**: the files on the stack when the call reaches Playwright's own method for the
  tool's act (`Locator.click`, `Locator.fill`, `Page.goto`): on the reader thread
  when it hands the call to the session's queue, on the session thread at that method;
- **asked on the way**: the files whose functions were called and returned before that point
  (the guards, the schema, the history's request row, ...);
- **on the way back**: files entered after Playwright's method returned, until the answer
  was written to stdout; **after the answer**: the session thread's work once it went out (the
  page's capture, the history's rows);
- **re-entries**: a file the line enters, leaves for another, and enters again (ARCHITECTURE.md:
  none on the way in).

Only files of the package count (`mcpbrowser/...`): the standard library, Playwright and
mcp_types are where the call goes, not files it crosses. Nor does our code that Playwright runs while
the call waits on it (its events' listeners, our hook in its transport, a coroutine its loop runs, and
what they call): which of it runs depends on the page and the machine's load; it is listed apart.
What a newcomer reads is the line and the services; ARCHITECTURE.md quotes this script's figures.
Threads: the main thread drives the pipes; the profile function runs on every thread, and keeps
only the two threads of the call (not another session's: the warm pool may open one meanwhile).
"""

import argparse
import http.server
import json
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from demo import Page  # noqa: E402 (beside this script; after the path is set)

PACKAGE = str(ROOT / "mcpbrowser") + os.sep
PAGE = (b"<!doctype html><title>Form</title><label>Name <input id=name></label>"
        b"<button id=go onclick=\"document.title='clicked'\">Go</button>"
        b"<select id=size><option>S</option><option>M</option></select>")
# The tool traced -> (its arguments beyond the session, Playwright's method that does its work).
TOOLS = {
    "click": ({"selector": "#go"}, "click"),
    "type": ({"selector": "#name", "text": "Ada"}, "fill"),
    "navigate": ({"url": "PAGE"}, "goto"),  # PAGE: the page's own address
    "hover": ({"selector": "#go"}, "hover"),
    "select": ({"selector": "#size", "values": ["M"]}, "select_option"),
}


class Trace:
    """The profile function's record of one call (any thread writes; the main thread reads after)."""

    def __init__(self, playwright_method, session_thread):
        self.method = playwright_method
        self.session_thread = session_thread  # the call's session; the pool may be opening others meanwhile
        self.on = False
        self.events = []  # (thread name, "call"/"return", file) of the package's functions, in order
        self.request_line = None  # the package's files on the reader's stack at the session queue's put
        self.session_line = None  # ... on the session thread's stack at Playwright's method
        self.at_playwright = None  # index in events when the session thread reached it
        self.back_from_playwright = None
        self.answered = None  # index in events when the answer was handed to stdout
        self.listeners = set()  # the package's files Playwright called back (events it dispatched meanwhile)
        self.returns = set()  # "a -> b -> a": a stack on the way in that went back into a file it had left

    def profile(self, frame, event, arg):
        if not self.on or event not in ("call", "return"):
            return
        thread = threading.current_thread().name
        if thread not in ("stdin-reader", self.session_thread):
            return
        path = frame.f_code.co_filename
        if path.startswith(PACKAGE):
            if _from_playwright(frame):  # a listener of ours that Playwright's event dispatch ran
                if event == "call":
                    self.listeners.add(path[len(PACKAGE):])
                return
            self.events.append((thread, event, path[len(PACKAGE):]))
            if event == "call" and self.at_playwright is None:  # on the way in: every stack, not only the last
                stack = _stack_files(frame)
                if stack[-1] in stack[:-1]:
                    self.returns.add(" -> ".join(stack[stack.index(stack[-1]):]))
            if (event == "call" and self.answered is None and self.at_playwright is not None
                    and frame.f_code.co_name == "send" and path.endswith("transports/stdio.py")):
                self.answered = len(self.events)
            if (event == "call" and thread == "stdin-reader" and self.request_line is None
                    and frame.f_code.co_name == "submit" and path.endswith("session/worker.py")):
                self.request_line = _stack_files(frame)
        elif (frame.f_code.co_name == self.method and thread == self.session_thread
              and os.sep + "playwright" + os.sep in path and "sync_api" in path):
            if event == "call" and self.session_line is None:
                self.session_line = _stack_files(frame.f_back)
                self.at_playwright = len(self.events)
            elif event == "return" and self.at_playwright is not None and self.back_from_playwright is None:
                self.back_from_playwright = len(self.events)


def _from_playwright(frame):
    """Whether the package's function in `frame` runs for Playwright: Playwright is on its stack (an
    event's listener, our hook in its transport, and whatever they call), or the stack's root is not
    the thread's start (a coroutine or callback the greenlet's event loop runs)."""
    while frame.f_back is not None:
        frame = frame.f_back
        if os.sep + "playwright" + os.sep in frame.f_code.co_filename:
            return True
    return not (frame.f_code.co_name == "_bootstrap" and frame.f_code.co_filename == threading.__file__)


def _stack_files(frame):
    """The package's files on a stack, outermost first, a file once per stretch of frames in it."""
    files = []
    while frame is not None:
        path = frame.f_code.co_filename
        if path.startswith(PACKAGE):
            name = path[len(PACKAGE):]
            if not files or files[-1] != name:
                files.append(name)
        frame = frame.f_back
    return files[::-1]


def _first_seen(names):
    seen = []
    for name in names:
        if name not in seen:
            seen.append(name)
    return seen


def _reentries(stack):
    """Files that appear in two separate stretches of one stack (the line leaves and comes back)."""
    return sorted({name for i, name in enumerate(stack) if name in stack[:i]})


def trace_calls(tools):
    """{tool: report} for each tool named, each traced on the same server and session."""
    from mcpbrowser.config import Config
    from mcpbrowser.core.browser import Browser
    from mcpbrowser.transports.stdio import StdioServer

    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), type("Form", (Page,), {"page": PAGE}))
    threading.Thread(target=site.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{site.server_address[1]}/"
    folder = tempfile.mkdtemp(prefix="mcpb-path-")
    config, _ = Config.load(["--db", os.path.join(folder, "history.db"), "--output-dir", folder,
                             "--log-level", "error", "--caps", "extra"])
    traces = []  # the one being taken, last

    def profile(frame, event, arg):
        if traces and traces[-1].on:
            traces[-1].profile(frame, event, arg)

    # Threads take the profile function when they start (3.12's setprofile_all_threads is not in
    # 3.10): set before the reader and the session's thread exist; it records nothing until `on`.
    threading.setprofile(profile)
    core = Browser(config)
    to_server_r, to_server_w = os.pipe()
    from_server_r, from_server_w = os.pipe()
    server = StdioServer(core, os.fdopen(to_server_r, "rb"), os.fdopen(from_server_w, "wb"), 1 << 20)
    core.client = server.connection
    core.start()
    server.start()
    send, answers = os.fdopen(to_server_w, "wb"), os.fdopen(from_server_r, "rb")
    ids = iter(range(1, 1 << 30))

    def request(method_name, params):
        request_id = next(ids)
        send.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method_name,
                               "params": params}).encode() + b"\n")
        send.flush()
        while True:
            answer = json.loads(answers.readline())
            if answer.get("id") == request_id:
                if answer.get("result", {}).get("isError") or "error" in answer:
                    raise SystemExit(f"{method_name} failed: {json.dumps(answer)[:500]}")
                return answer

    reports = {}
    try:
        request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "call_path", "version": "1"}})
        created = request("tools/call", {"name": "create_session", "arguments": {"url": url}})
        session = created["result"]["structuredContent"]["sessionId"]
        worker = core.registry.worker(session)
        session_thread = worker.submit(lambda state: threading.current_thread().name).result(30)
        for tool in tools:
            arguments, method = TOOLS[tool]
            call = {"name": tool, "arguments": {"sessionId": session, **{
                key: url if value == "PAGE" else value for key, value in arguments.items()}}}
            # A first call of the same tool, untraced: the first use of a code path imports and warms it.
            request("tools/call", call)
            worker.submit(lambda state: None).result(30)  # its after-answer work (a capture, the rows) is done
            traces.append(Trace(method, session_thread))
            traces[-1].on = True
            request("tools/call", call)
            worker.submit(lambda state: None).result(30)  # ... and the traced call's too
            traces[-1].on = False
            reports[tool] = _report(traces[-1], tool)
    finally:
        threading.setprofile(None)
        server.done.set()
        server.wait()  # shuts the core and the connection down
        site.shutdown()
        shutil.rmtree(folder, ignore_errors=True)
    return reports


def _report(trace, tool):
    if trace.request_line is None or trace.session_line is None:
        raise SystemExit("the trace did not see the call reach the session's queue and Playwright's "
                         f"{trace.method}: has the path changed? (events seen: {len(trace.events)})")
    before = [file for _, event, file in trace.events[:trace.at_playwright] if event == "call"]
    answered = trace.answered if trace.answered is not None else len(trace.events)
    back = [file for _, event, file in trace.events[trace.back_from_playwright or trace.at_playwright:answered]
            if event == "call"]
    after = [file for _, event, file in trace.events[answered:] if event == "call"]
    line = _first_seen(trace.request_line + trace.session_line)
    asked = [file for file in _first_seen(before) if file not in line]
    back = [file for file in _first_seen(back) if file not in line and file not in asked]
    after = [file for file in _first_seen(after) if file not in line + asked + back]
    return {
        "tool": tool, "playwright": trace.method,
        "line": line, "asked": asked, "back": back, "after_answer": after,
        "listeners": sorted(trace.listeners),
        "threads": sorted({thread for thread, _, _ in trace.events}),
        "reentries": _reentries(trace.request_line) + _reentries(trace.session_line),
        "returns": sorted(trace.returns),
        "counts": {"line": len(line), "asked": len(asked), "to_playwright": len(line) + len(asked),
                   "back": len(back), "after_answer": len(after),
                   "all": len(line) + len(asked) + len(back) + len(after)},
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tool", choices=sorted(TOOLS), action="append",
                        help="a call to follow; give it again for more (default: click)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    reports = trace_calls(args.tool or ["click"])
    if args.json:
        print(json.dumps(reports, indent=2))
        return 0
    for report in reports.values():
        print(summary(report))
        print("  the line:         " + " -> ".join(report["line"]))
        print("  asked on the way: " + ", ".join(report["asked"]))
        print(f"  on the way back ({report['counts']['back']}): " + ", ".join(report["back"]))
        print(f"  after the answer ({report['counts']['after_answer']}): " + ", ".join(report["after_answer"]))
        print("  ours that Playwright ran meanwhile (not counted): " + ", ".join(report["listeners"]))
        print("  re-entered on the line: " + (", ".join(report["reentries"]) or "none"))
        print("  gone back into on the way in: " + ("; ".join(report["returns"]) or "none"))
    return 0


def summary(report):
    """The report's first line, as ARCHITECTURE.md quotes it."""
    counts = report["counts"]
    return (f"tools/call {report['tool']}: {counts['to_playwright']} files to reach Playwright's "
            f"{report['playwright']} ({counts['line']} on the line, {counts['asked']} asked on the way)")


if __name__ == "__main__":
    sys.exit(main())
