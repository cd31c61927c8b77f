"""The MCP server as a WSGI application, to mount next to Flask or Django views (any thread).

    from mcpbrowser.wsgi import create_app
    mcp_app = create_app(Config(headless=True), path="/mcp")   # starts the shared browser
    # Flask:  app.wsgi_app = DispatcherMiddleware(app.wsgi_app, {"/mcp": mcp_app})  (path="/")
    # Django: route /mcp to mcp_app in your WSGI entry point (see docs/http.md)
    ...
    mcp_app.close()                                             # at shutdown

The WSGI server must be threaded and must send each chunk as it is yielded: calls
that report progress or ask the user answer as an event stream. waitress (our
`mcpbrowser[http]` extra, and what `mcpbrowser --http` runs) does both."""

from typing import Any

from mcpbrowser.config import Config
from mcpbrowser.transports.http import McpWsgiApp

__all__ = ["McpWsgiApp", "create_app"]


def create_app(config: Config | None = None, *, core: Any = None, path: str | None = None) -> McpWsgiApp:
    """The WSGI app over `core`, or over a Browser built from `config` and started now.

    Tokens, allowed origins, the rate limit and the body limit come from the config
    (--http-token-file, --http-allowed-origins, --http-rate-limit, --max-message-bytes);
    `path` overrides --http-path (give "/" when your router strips the prefix).
    `app.close()` closes a Browser the app built; one you passed in stays yours."""
    config = config or (core.config if core is not None else Config())
    owned = core is None
    if owned:
        from mcpbrowser.core.browser import Browser

        core = Browser(config).start()
    app = McpWsgiApp(core, credentials=config.http_credentials(), allowed_origins=config.http_allowed_origins,
                     path=path or config.http_path, max_body_bytes=config.max_message_bytes,
                     rate_limit=config.http_rate_limit, client_requests=config.http_client_requests,
                     on_close=core.close if owned else None)
    if config.view == "http":
        from mcpbrowser.view import from_config

        app.view = from_config(core, config, app.credentials)
    if core.client is None:
        core.client = app.everyone  # server-wide notices (the cooldown's end) reach every client
    return app
