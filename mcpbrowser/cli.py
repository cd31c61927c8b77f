"""Command-line entry point; runs on the main thread and owns signal handling."""

import argparse
import json
import os
import signal
import sys
import threading

from mcpbrowser import logs
from mcpbrowser.config import Config, ConfigError


def _warm_imports():
    """Import the heavy modules in the background so initialize is answered first."""
    try:
        import mcp_types  # noqa: F401
        import playwright.sync_api  # noqa: F401
    except Exception:
        logs.log.exception("warm-up import failed", extra={"event": "import_failed"})


def _claim_stdout():
    """Keep the real stdout for JSON-RPC only; anything else printing to fd 1 lands on stderr."""
    protocol_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_out


def main(argv=None):
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["export"]:
        return export(args[1:])
    try:
        config, print_config = Config.load(argv)
    except ConfigError as exc:
        print(f"mcpbrowser: error: {exc}", file=sys.stderr)
        return 2
    if print_config:
        # A one-shot command like --help and --version: no JSON-RPC runs in this process,
        # so stdout is not the protocol channel here.
        print(json.dumps(config.public(), indent=2))
        return 0
    if config.http:
        return _serve_http(config)
    out = _claim_stdout()
    logs.setup(config.log_level)
    from concurrent.futures import Future

    from mcpbrowser.core.browser_process import tune_driver_memory
    from mcpbrowser.core.browser_supervisor import BrowserSupervisor

    tune_driver_memory()  # main thread, before any driver starts
    # The browser's launch (about 0.7 s) is most of the wait for a first navigate: start it
    # first, so that it overlaps the server's own imports and the history's opening.
    supervisor = BrowserSupervisor(config)
    supervisor.start()
    from mcpbrowser.core.face import CoreFace
    from mcpbrowser.transports.stdio import StdioServer

    # Answer initialize first: the reader starts before the core is built.
    core_ready: Future[CoreFace] = Future()  # the core's typed face: mypy checks that Browser is one
    server = StdioServer(core_ready, sys.stdin.buffer, out, config.max_message_bytes).start()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: server.done.set())
    threading.Thread(target=_warm_imports, name="warm-imports", daemon=True).start()
    try:
        from mcpbrowser.core.browser import Browser

        core = Browser(config, supervisor=supervisor)
        core.client = server.connection  # elicitation, client notices, and the client's name for rate limits
        core_ready.set_result(core.start())
        if config.view:  # --view HOST:PORT: the live view alone, on loopback unless tokens guard it
            from mcpbrowser.view import serve_alone

            serve_alone(core, config, config.http_credentials())
    except Exception as exc:  # an unusable database, say: say why and stop
        logs.log.error("cannot start", extra={"event": "startup_failed", "error": str(exc)})
        print(f"mcpbrowser: error: {exc}", file=sys.stderr)
        sys.stderr.flush()
        os._exit(1)
    server.wait()
    out.flush()
    sys.stderr.flush()
    # Threads still blocked on stdin or on a dead session must not hold the exit.
    os._exit(0)


def export(argv):
    """`mcpbrowser export SESSION_ID [--storage-state PATH] [settings]`: the session's history as a pytest test.

    A one-shot command: it reads the history (--db) and writes under --output-dir, as the server
    would; no browser starts, and a server may be running on the same history meanwhile."""
    parser = argparse.ArgumentParser(prog="mcpbrowser export", description="Write a session's recorded page "
                                     "actions as a pytest test (Playwright's sync API) under the output directory. "
                                     "Other flags are the server's (--db, --output-dir, --upload-dir).")
    parser.add_argument("session_id", metavar="SESSION_ID")
    parser.add_argument("--storage-state", metavar="PATH", help="the Playwright storage state file the test logs in "
                        "with, where the session began from a saved login")
    parser.add_argument("--json", action="store_true", help="print the answer as JSON")
    ns, rest = parser.parse_known_args(argv)
    try:
        config, _ = Config.load(rest)
    except ConfigError as exc:
        print(f"mcpbrowser export: error: {exc}", file=sys.stderr)
        return 2
    from mcpbrowser.core.export_tools import export_session
    from mcpbrowser.core.history import History
    from mcpbrowser.core.store import Store
    from mcpbrowser.errors import BrowserServerError

    try:
        store = Store(config.db, keys=config.db_keys())
    except Exception as exc:  # an unusable database
        print(f"mcpbrowser export: error: {exc}", file=sys.stderr)
        return 1
    try:
        answer = export_session(config, History(store), ns.session_id, storage_state_path=ns.storage_state)
    except BrowserServerError as exc:
        print(f"mcpbrowser export: error: {exc.code}: {exc}", file=sys.stderr)
        return 1
    finally:
        store.close()
    print(json.dumps(answer, indent=2) if ns.json else answer["message"])
    for warning in answer.get("warnings", []):
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def _serve_http(config):
    """--http: many clients over Streamable HTTP; stdout carries nothing at all."""
    sys.stdout = sys.stderr
    logs.setup(config.log_level)
    try:
        import waitress  # noqa: F401
    except ImportError:
        print("mcpbrowser: error: --http needs the waitress server: pip install 'mcpbrowser[http]'", file=sys.stderr)
        return 2
    from mcpbrowser.core.browser_process import tune_driver_memory

    tune_driver_memory()  # main thread, before any driver starts
    try:
        from mcpbrowser.transports.http import serve
        from mcpbrowser.transports.http_server import Limits
        from mcpbrowser.wsgi import create_app

        app = create_app(config)
        if config.view not in (None, "http"):
            from mcpbrowser.view import serve_alone

            serve_alone(app.core, config, app.credentials)
    except (ConfigError, OSError, RuntimeError) as exc:
        print(f"mcpbrowser: error: {exc}", file=sys.stderr)
        return 2
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    limits = Limits(config.http_header_timeout, config.http_body_timeout, config.http_idle_timeout,
                    config.http_max_connections, config.http_max_unauthenticated)
    failed = 0
    try:
        serve(app, config.http, done, threads=max(16, 4 * config.max_sessions), limits=limits)
    except OSError as exc:  # the port is taken, say
        logs.log.error("cannot serve", extra={"event": "startup_failed", "error": str(exc)})
        print(f"mcpbrowser: error: --http {config.http}: {exc}", file=sys.stderr)
        failed = 1
    else:
        logs.log.info("shutting down", extra={"event": "shutdown"})
    app.close()
    sys.stderr.flush()
    os._exit(failed)
