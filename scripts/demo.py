"""Demo: start mcpbrowser through the official MCP client and drive a local page, printing each step.

Run with `bash scripts/demo.sh` (it sets everything up first). Extra arguments are passed to the
server instead of the default `--headless --db :memory:`, for example `--db demo.db --log-level debug`
(a window, and the history kept in demo.db).
"""

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

PAGE = b"""<!doctype html><title>mcpbrowser demo</title>
<h1>Sign the guest book</h1>
<input id="name" placeholder="Your name">
<button id="sign" onclick="document.title = 'Signed by ' + document.getElementById('name').value">Sign</button>"""


class Page(BaseHTTPRequestHandler):
    """Serves `page` for every GET (scripts/call_path.py serves its own form with it)."""

    page = PAGE

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(self.page)))
        self.end_headers()
        self.wfile.write(self.page)

    def log_message(self, *args):
        pass


def step(label, started, payload):
    print(f"[{(time.monotonic() - started) * 1000:7.1f} ms] {label}: {payload}", flush=True)


async def main(server_args):
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_port}/"
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcpbrowser", *server_args])
    started = time.monotonic()
    with open("/dev/null", "w") as quiet:
        async with stdio_client(params, errlog=quiet) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                step("initialize", started, f"{init.server_info.name} {init.server_info.version}, "
                                            f"protocol {init.protocol_version}")
                listed = await session.list_tools()
                step("tools/list", started, ", ".join(t.name for t in listed.tools))

                async def call(name, **arguments):
                    result = await session.call_tool(name, arguments)
                    payload = json.loads(result.content[0].text)  # the text the model reads
                    step(name + (" (error)" if result.is_error else ""), started, json.dumps(payload))
                    return payload

                sid = (await call("create_session"))["sessionId"]
                await call("navigate", sessionId=sid, url=url)
                await call("type", sessionId=sid, selector="#name", text="Ada Lovelace")
                await call("click", sessionId=sid, selector="#sign")
                await call("list_sessions")
                await call("click", sessionId=sid, selector="#missing", timeout=500)
                await call("close_session", sessionId=sid)
    httpd.shutdown()
    print("demo finished: the page title changed to 'Signed by Ada Lovelace' above.")


if __name__ == "__main__":
    # A demo keeps no history: the user's own (~/.local/share/mcpbrowser/history.db) is for their agents.
    args = sys.argv[1:] or ["--headless", "--db", ":memory:"]
    anyio.run(main, args)
