"""Count the round trips each action makes to the browser: before its act, after it until the answer, after the answer.

    .venv/bin/python scripts/round_trips.py [--json]

Runs in this process, through the library, on a small form served on 127.0.0.1, the calls back to back as an
agent makes them (navigate, then click, type, select, press_key and fill_form, each once its snapshot is held).
Every message the session's Playwright sends and every answer it receives is recorded on the session's thread
(Transport's serialize_message and deserialize_message); a round trip is a run of messages sent before the next
answer came: calls sent together (Together) are one. Per call it prints the methods of each round trip, split at
the action's own message (click, fill, selectOption, press; fill_form's last fill) and at the call's answer (the
history's capture after it is the next call's wait). Then the benchmark's loop (scripts/bench.py: navigate,
type, click, snapshot), each call sent as the last one answered: per call, the round trips from the last answer
to its own, what it waits for back to back (the last call's capture, then its own).
"""

import argparse
import http.server
import json
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright._impl.transport import Transport  # noqa: E402 (after the path is set)

import mcpbrowser  # noqa: E402
from mcpbrowser.config import Config  # noqa: E402
from mcpbrowser.session import state as session_state  # noqa: E402

PAGE = (b"<!doctype html><title>Form</title><label>Name <input id=name></label>"
        b"<label>City <input id=city></label>"
        b"<button id=go onclick=\"document.getElementById('out').textContent = 'clicked'\">Go</button>"
        b"<label>Size <select id=size><option>S</option><option>M</option></select></label><p id=out></p>")
CALLS = [  # (tool, arguments beyond the session, Playwright's method of its act)
    ("click", {"selector": "#go"}, "click"),
    ("type", {"selector": "#name", "text": "Ada"}, "fill"),
    ("select", {"selector": "#size", "values": ["M"]}, "selectOption"),
    ("press_key", {"selector": "#city", "key": "x"}, "press"),
    ("fill_form", {"fields": [{"selector": "#name", "value": "Grace"}, {"selector": "#city", "value": "Oslo"}]},
     "fill"),
]
LOOP = [("navigate", {}), ("type", {"selector": "#name", "text": "Ada"}), ("click", {"selector": "#go"}),
        ("snapshot", {})]


class Wire:
    """The session thread's messages in order: ("send", method) and ("answer", None)."""

    def __init__(self):
        self.events = []
        self.thread = None

    def install(self):
        send, receive = Transport.serialize_message, Transport.deserialize_message
        wire = self

        def serialize_message(transport, message):
            if threading.current_thread().name == wire.thread:
                wire.events.append(("send", message.get("method")))
            return send(transport, message)

        def deserialize_message(transport, data):
            parsed = receive(transport, data)
            if threading.current_thread().name == wire.thread and isinstance(parsed, dict) and "id" in parsed:
                wire.events.append(("answer", None))
            return parsed

        Transport.serialize_message, Transport.deserialize_message = serialize_message, deserialize_message


def round_trips(events):
    """[[method, ...], ...]: the runs of messages sent before the next answer."""
    trips, current = [], []
    for kind, method in events:
        if kind == "send":
            current.append(method)
        elif current:
            trips.append(current)
            current = []
    return trips + ([current] if current else [])


def serve():
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(PAGE)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def measure():
    """{tool: {"before": trips, "after": trips until the answer, "capture": trips after it},
    "loop": [[tool, trips from the last call's answer to its own], ...]}."""
    wire, server, out = Wire(), serve(), {}
    wire.install()
    # Back to back, as an agent's calls come: not after a quiet spell, where a call first asks the browser for
    # what it said meanwhile (state.catch_up, one round trip to the browser, not the page).
    session_state.CATCH_UP_AFTER_S = float("inf")
    with mcpbrowser.Browser(Config(headless=True, db=":memory:", rate_limit=0)) as browser:
        with browser.create_session() as session:
            wire.thread = f"session-{session.id[:8]}"
            session.navigate(f"http://127.0.0.1:{server.server_port}/")
            for tool, args, method in CALLS:
                session.call("wait_for", selector="#go")  # the snapshot held
                time.sleep(0.5)  # its capture is done
                del wire.events[:]
                answered = []
                fut = browser.submit(tool, {"sessionId": session.id, **args})
                fut.add_done_callback(lambda _, at=answered: at.append(len(wire.events)))  # on the session thread
                fut.result(timeout=30)
                time.sleep(0.5)  # the capture after the answer
                events, at = list(wire.events), answered[0]
                act = max(i for i, (kind, name) in enumerate(events) if name == method)  # fill_form's last fill
                out[tool] = {"before": round_trips(events[:act]), "after": round_trips(events[act + 1:at]),
                             "capture": round_trips(events[at:])}
            out["loop"] = loop(browser, session, wire, f"http://127.0.0.1:{server.server_port}/")
    server.shutdown()
    return out


def loop(browser, session, wire, url):
    """The benchmark's loop back to back, twice: the second time's [[tool, trips], ...] (a call's trips begin at
    the last one's answer, on the session thread, so its capture after that answer falls in them)."""
    calls = [(tool, {"url": url} if tool == "navigate" else args) for tool, args in LOOP]
    for _ in range(2):
        time.sleep(0.5)
        del wire.events[:]
        answers = [0]

        def answered(_, at=answers):  # on the session thread, as the answer is set
            at.append(len(wire.events))
        for tool, args in calls:
            fut = browser.submit(tool, {"sessionId": session.id, **args})
            fut.add_done_callback(answered)
            fut.result(timeout=30)
    return [[tool, round_trips(wire.events[start:end])]
            for (tool, _), start, end in zip(LOOP, answers[:-1], answers[1:], strict=True)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the round trips as JSON")
    counts = measure()
    if parser.parse_args().json:
        print(json.dumps(counts, indent=1))
        return
    for tool, trips in counts.pop("loop"):
        print(f"loop, {tool}: {len(trips)} {trips}")
    for tool, parts in counts.items():
        said = "; ".join(f"{part} {len(trips)} {trips}" for part, trips in parts.items())
        print(f"{tool}: {said}")


if __name__ == "__main__":
    main()
