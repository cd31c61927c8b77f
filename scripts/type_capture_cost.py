"""What a `type`'s or `select`'s capture costs the next call: the history's page edited (one line) against walked.

Runs in this process, through the library, on one page served on 127.0.0.1: a form field above a table of
--rows rows (a link and a text each). Each round types into the field and then calls `wait_for` on
something already there, back to back: the wait_for starts only after the type's capture (the session
thread does one thing at a time), so its time is the capture's plus its own small answer. The two ways
alternate round by round: the capture as built (edited where the page watch proves that only the field
changed) and forced to walk (snapshots.Proof.of patched to make no proof). Prints the medians and the ratio.
With --select, each round chooses an option of a native select instead; with --editor, it types two lines into an
editor built as CodeMirror builds one (a contenteditable textbox, a <div> per line kept as it redraws).

    .venv/bin/python scripts/type_capture_cost.py --rows 2000 --rounds 30 [--select | --editor]
"""

import argparse
import http.server
import statistics
import threading
import time

import mcpbrowser
from mcpbrowser.config import Config
from mcpbrowser.session import snapshots

# The editor: it takes the typing's text itself and redraws its lines into the line elements it has.
EDITOR = """<div id=ed contenteditable role=textbox aria-label=Code><div>x = 1</div><div>print(x)</div></div><script>
ed.addEventListener('beforeinput', e => {
  e.preventDefault();
  (e.data || '').split('\\n').forEach((text, i) => { ed.children[i].textContent = text });
  ed.dispatchEvent(new Event('input', {bubbles: true}));
});
</script>"""


def page(rows, editor=False):
    body = "".join(f"<tr><td><a href='#r{i}'>row {i}</a></td><td>text {i}</td></tr>" for i in range(rows))
    return (f"<!doctype html><title>Form over a table</title><label>Query <input id=q></label>"
            f"<label>Size <select id=s><option>Small</option><option>Large</option></select></label>"
            f"{EDITOR if editor else ''}"
            f"<table>{body}</table>").encode()


def serve(html):
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(html)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2000, help="table rows under the field (default 2000)")
    parser.add_argument("--rounds", type=int, default=30, help="rounds of each way, alternating (default 30)")
    way = parser.add_mutually_exclusive_group()
    way.add_argument("--select", action="store_true", help="choose in a select each round instead of typing")
    way.add_argument("--editor", action="store_true", help="type into the editor each round (two lines)")
    options = parser.parse_args()
    server = serve(page(options.rows, options.editor))
    edited = snapshots.Proof.of
    times = {"edited": [], "walked": []}
    with mcpbrowser.Browser(Config(headless=True, db=":memory:", rate_limit=0)) as browser:
        with browser.create_session() as session:
            session.navigate(f"http://127.0.0.1:{server.server_port}/")
            session.call("wait_for", selector="#q")  # its capture is the whole page: the one the edits start from
            for n in range(options.rounds * 2 + 2):
                way = "edited" if n % 2 else "walked"
                snapshots.Proof.of = edited if way == "edited" else (lambda *args: None)  # type: ignore[method-assign]
                if options.select:
                    session.call("select", selector="#s", labels=[("Small", "Large")[n % 2]])
                elif options.editor:
                    session.call("type", selector="#ed", text=f"y = {n}\nprint(y + {n})")
                else:
                    session.call("type", selector="#q", text=f"query {n}")
                started = time.perf_counter()
                session.call("wait_for", selector="#q")  # waits for the type's capture, then reads nothing new
                if n >= 2:  # the first two warm up
                    times[way].append((time.perf_counter() - started) * 1000)
    snapshots.Proof.of = edited  # type: ignore[method-assign]
    medians = {way: statistics.median(values) for way, values in times.items()}
    call = "select" if options.select else "type into the editor" if options.editor else "type"
    print(f"{options.rows} rows, {options.rounds} rounds each: the call after a {call} waited "
          f"{medians['edited']:.1f} ms with the capture edited, {medians['walked']:.1f} ms walked "
          f"({medians['edited'] / medians['walked']:.2f}x)")


if __name__ == "__main__":
    main()
