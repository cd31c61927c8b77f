"""The live view: a page where a person watches every session and takes over a login wall.

    from mcpbrowser.view import Viewer, create_app
    view = create_app(browser, who_may_see=lambda environ: Viewer("ann", owner="ann"), path="")
    # mount `view` beside your own views (Flask: DispatcherMiddleware(app.wsgi_app, {"/view": view}))

Served by `mcpbrowser --http ... --view http` under /view/, or alone with `--view HOST:PORT`.
Runs on the WSGI server's request threads (see app.py); it never touches Playwright itself.
"""

from typing import Any

from mcpbrowser.config import VIEW_PATH, Config
from mcpbrowser.core.face import CoreFace
from mcpbrowser.view.app import ViewApp
from mcpbrowser.view.auth import SignIns, Viewer, WhoMaySee

ALONE_THREADS = 8  # --view HOST:PORT's own server

__all__ = ["ViewApp", "Viewer", "WhoMaySee", "create_app", "from_config", "serve_alone"]


def create_app(core: CoreFace, *, who_may_see: WhoMaySee, path: str = VIEW_PATH, trust_proxy: bool = False,
               max_live: int | None = None) -> ViewApp:
    """The view over `core` (a Browser) for an embedder: `who_may_see(environ)` says who the request's person is
    (a Viewer: owner=None sees every session), or None (not signed in: they get a page saying so).
    max_live: live pictures open at once, each holding one of your WSGI server's threads."""
    return ViewApp(core, who_may_see=who_may_see, path=path, trust_proxy=trust_proxy, max_live=max_live)


def from_config(core: CoreFace, config: Config, credentials: dict[str, str], path: str = VIEW_PATH,
                max_live: int | None = None) -> ViewApp:
    """The view with its own sign-in: the token file's tokens (operators marked), or a one-time key."""
    return ViewApp(core, sign_ins=SignIns(credentials, config.view_operators()), path=path,
                   trust_proxy=config.view_trusted_proxy, max_live=max_live)


def serve_alone(core: CoreFace, config: Config, credentials: dict[str, str]) -> Any:
    """--view HOST:PORT (config.view): the view alone on its own waitress server, on a thread; returns its runner."""
    import threading

    from mcpbrowser.transports.http_server import Limits, create_server
    from mcpbrowser.view.app import MAX_FORM_BYTES

    host, _, port = config.view.rpartition(":")
    app = from_config(core, config, credentials, max_live=ALONE_THREADS // 2)  # half for the pages and their JSON
    # The --http guards: a plain waitress reads a body of up to 1 GB before the view sees it, and sockets sending
    # half a request fill its connections. A connection counts as a person's once its request shows a signed-in cookie.
    limits = Limits(config.http_header_timeout, config.http_body_timeout, config.http_idle_timeout,
                    config.http_max_connections, config.http_max_unauthenticated)
    assert app.sign_ins is not None
    sign_ins = app.sign_ins
    runner, listeners = create_server(
        app, host.strip("[]"), int(port), ALONE_THREADS, limits,
        lambda headers: sign_ins.lookup({"HTTP_COOKIE": headers.get("COOKIE", "")}) is not None,
        max_request_body_size=4 * MAX_FORM_BYTES, ident="mcpbrowser-view", clear_untrusted_proxy_headers=False)
    threading.Thread(target=runner.run, name="view-server", daemon=True).start()
    app.announce(f"http://{listeners[0].effective_host}:{listeners[0].effective_port}{app.path}/")
    return runner
