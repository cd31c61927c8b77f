"""All tunables in one table; built once on the main thread, then read-only everywhere.

Each field states its default and why, and validates itself so that a bad value
names the command-line flag that carries it."""

import argparse
import dataclasses
import json
import os
import re
import sys
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from mcpbrowser.backends import BACKENDS
from mcpbrowser.redaction import shown_url

BROWSERS = ("chromium", "firefox", "webkit")
ENV_PREFIX = "MCPBROWSER_"
LOG_LEVELS = ("debug", "info", "warning", "error")
MIN_TOKEN_CHARS = 16  # an HTTP bearer token shorter than this could be guessed


class ConfigError(ValueError):
    """A setting has a bad value; the message names its flag."""


class UnreadableTokens(ConfigError):
    """--http-token-file cannot be read: no tokens come from it."""


POSTGRES_INSTALL = "pip install 'mcpbrowser[postgres]'"  # what --db postgresql://… needs (core/store_postgres.py)


def default_path():
    """history.db under the user's data directory."""
    if sys.platform == "darwin":
        base = os.path.expanduser("~/Library/Application Support")
    elif sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~")
    else:
        base = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    return os.path.join(base, "mcpbrowser", "history.db")


def _flag(name):
    return "--" + name.replace("_", "-")


def _int_at_least(low):
    def check(name, value):
        if isinstance(value, bool) or not isinstance(value, int):
            try:
                value = int(str(value), 10)
            except ValueError:
                raise ConfigError(f"{_flag(name)} must be a whole number, got {value!r}") from None
        if value < low:
            raise ConfigError(f"{_flag(name)} must be at least {low}, got {value}")
        return value

    return check


def _one_of(choices):
    def check(name, value):
        if value not in choices:
            raise ConfigError(f"{_flag(name)} must be one of {', '.join(choices)}, got {value!r}")
        return value

    return check


def _boolean(name, value):
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{_flag(name)} must be true or false, got {value!r}")


def _unless_blank(check, blank=None):
    """`check` for a value that is given: None and "" (an empty variable) mean unset, `blank`."""
    def checked(name, value):
        return blank if value is None or value == "" else check(name, value)

    return checked


_optional_text = _unless_blank(lambda name, value: str(value))


@_unless_blank
def _database(name, value):
    """--db: a file path (or sqlite:PATH), :memory:, or a postgresql:// URL (checked here: the extra installed)."""
    value = str(value)
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]+):", value)
    if scheme and scheme.group(1).lower() == "sqlite":
        path = value[len("sqlite:"):]
        return path[2:] if path.startswith("//") else path  # sqlite:///abs/path, sqlite:relative/path
    if scheme and scheme.group(1).lower() in ("postgresql", "postgres"):
        parts = urlsplit(value)
        if not value.lower().startswith(("postgresql://", "postgres://")):
            raise ConfigError(f"{_flag(name)} must look like postgresql://user:password@host:port/database, "
                              f"got {shown_url(value)!r}")
        try:
            parts.port  # noqa: B018  (a bad port raises)
        except ValueError:
            raise ConfigError(f"{_flag(name)} {shown_url(value)}: the port is not a number") from None
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise ConfigError(f"{_flag(name)} {shown_url(value)}: PostgreSQL needs psycopg: "
                              f"{POSTGRES_INSTALL}") from None
        return "postgresql" + value[value.index(":"):]
    if scheme and value[len(scheme.group(0)):].startswith("//"):
        raise ConfigError(f"{_flag(name)} must be a file path, sqlite:PATH or a postgresql:// URL, "
                          f"got a {scheme.group(1)}:// URL")
    return value


@_unless_blank
def _key_file(name, value):
    """--db-key-file: a private file of sealing keys, read (and checked) here so a bad one stops the server at once."""
    from mcpbrowser.sealing import read_key_file

    path = os.path.abspath(str(value))
    try:
        read_key_file(path)
    except OSError as exc:
        raise ConfigError(f"{_flag(name)} {path}: cannot read it ({exc.strerror}); make one: "
                          f"(umask 077; openssl rand -hex 32 > {path})") from None
    except ValueError as exc:
        raise ConfigError(f"{_flag(name)} {path}: {exc}") from None
    return path


def _text_list(name, value):
    """Comma-separated text (or a list from an embedder) into a tuple; "" means none."""
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else list(value)
    if not all(isinstance(item, str) for item in items):
        raise ConfigError(f"{_flag(name)} must be a comma-separated list, got {value!r}")
    return tuple(item.strip() for item in items if item.strip())


def _lower_list(name, value):
    return tuple(item.lower() for item in _text_list(name, value))


@_unless_blank
def _host_port(name, value):
    host, sep, port = str(value).rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"{_flag(name)} must look like HOST:PORT (127.0.0.1:8931), got {value!r}")
    return f"{host or '127.0.0.1'}:{int(port)}"


@_unless_blank
def _view_place(name, value):
    return value if value == "http" else _host_port(name, value)


def _url_path(name, value):
    value = str(value)
    if not value.startswith("/"):
        raise ConfigError(f"{_flag(name)} must start with /, got {value!r}")
    return value


ENDPOINT_KEYS = {"url", "headers", "capacity"}


@dataclass(frozen=True)
class RemoteEndpoint:
    """One remote browser backend: a Playwright browser server (ws), a Chromium over CDP, or a Selenium Grid.

    headers: (name, value) pairs sent when attaching; capacity: sessions placed on it at
    most (None: --max-sessions, so equal endpoints share the load evenly)."""

    url: str
    kind: str  # a key of backends.BACKENDS
    headers: tuple = ()
    capacity: int | None = None

    @property
    def backend(self):
        """What kind of browser it is: how it is probed and how a session reaches it (backends.py)."""
        return BACKENDS[self.kind]

    def shown(self):
        """The URL as logs and answers may show it (redaction.shown_url)."""
        return shown_url(self.url)


def _endpoints(kind):
    """--ws-endpoint and friends: a comma list, a repeated flag, or (in a --config file or from an
    embedder) a list of URLs and {"url", "headers", "capacity"} objects."""

    def check(name, value):
        items = [value] if isinstance(value, (str, dict, RemoteEndpoint)) else list(value)
        out = []
        for item in items:
            if isinstance(item, RemoteEndpoint):
                out.append(item)
            elif isinstance(item, str):
                out += [_endpoint(name, kind, {"url": url.strip()}) for url in item.split(",") if url.strip()]
            elif isinstance(item, dict):
                out.append(_endpoint(name, kind, item))
            else:
                raise ConfigError(f"{_flag(name)} takes URLs or {{\"url\", \"headers\", \"capacity\"}} objects, "
                                  f"got {item!r}")
        urls = [e.url for e in out]
        if len(set(urls)) != len(urls):
            raise ConfigError(f"{_flag(name)} names an endpoint twice")
        return tuple(out)

    return _unless_blank(check, ())


def _endpoint(name, kind, item):
    unknown = set(item) - ENDPOINT_KEYS
    if unknown or "url" not in item:
        raise ConfigError(f"{_flag(name)}: an endpoint object has the keys url (required), headers and capacity; "
                          f"got {sorted(item)}")
    url = item["url"]
    try:
        parts = urlsplit(url) if isinstance(url, str) else None
        _ = parts and parts.port  # a port that is not a number raises here
    except ValueError:
        parts = None
    schemes = BACKENDS[kind].schemes
    if parts is None or parts.scheme not in schemes or not parts.hostname:
        raise ConfigError(f"{_flag(name)} wants {' or '.join(s + '://' for s in schemes)} URLs "
                          f"with a host, got {shown_url(url)!r}")
    headers = item.get("headers") or {}
    if isinstance(headers, dict):
        headers = [f"{k}: {v}" for k, v in headers.items()]
    pairs = []
    for header in _text_list(name, headers):
        if ":" not in header:
            raise ConfigError(f"{_flag(name)}: headers must look like `Name: value`, got {header.split(':')[0]!r}")
        key, value = header.split(":", 1)
        pairs.append((key.strip(), value.strip()))
    capacity = None if item.get("capacity") is None else _int_at_least(1)(name, item["capacity"])
    return RemoteEndpoint(url, kind, tuple(pairs), capacity)


@_unless_blank
def _json_object(name, value):
    if isinstance(value, dict):
        return value
    try:
        parsed = json.loads(value)
    except ValueError as exc:
        raise ConfigError(f"{_flag(name)} must be a JSON object ({exc})") from None
    if not isinstance(parsed, dict):
        raise ConfigError(f"{_flag(name)} must be a JSON object, got {value!r}")
    return parsed


APPENDABLE = ("ws_endpoint", "cdp_endpoint", "selenium_grid")  # flags that may be given more than once


def _option(default, check, help):
    return field(default=default, metadata={"check": check, "help": help})


# Tool groups: tools/list shows the core tools and the groups that are on (--caps, or a client's
# enable_tools), because a model reads the whole list on every turn. Each tool declares its group
# (tools/base.py); this table says what each is for, in enable_tools' description and --help.
TOOL_GROUPS = {
    "core": "always on",
    "extra": "seldom-needed page and session tools",
    "logins": "waiting for a person, saving and reusing logins",
    "emulation": "device, viewport, locale, CPU and network throttling: create_session's options, the throttle tool",
    "vision": "mouse by coordinates, for agents that read screenshots",
    "pdf": "save the page as PDF (headless Chromium)",
    "tracing": "Playwright traces",
    "export": "a session's history written out as a pytest test",
    "performance": "Core Web Vitals with their causes, measured and compared across runs",
    "site": "what a site keeps and what it is sent: cookies, web storage, routes (answer, abort or change its "
            "requests)",
    "webmcp": "the tools a page offers (WebMCP), listed and called by page_tools; on by itself for a client once a "
              "page it loads offers some",
}
CAPS = (*[name for name in TOOL_GROUPS if name != "core"], "all")
# Where the server's own live view (--view) is served, on --http's port or its own: the view's
# routes, and the page wait_for_user's answers name (core/user_channel.py derives it from --view).
VIEW_PATH = "/view"


@dataclass(frozen=True)
class Config:
    """Effective settings. Construct with keyword arguments; every value is validated."""

    browser: str = _option(
        "chromium", _one_of(BROWSERS), "Browser engine; all sessions share one browser process behind a Playwright "
        "browser server. Firefox and webkit come from `python -m playwright install`.")
    headless: bool = _option(
        False, _boolean, "Run without a window. Default is headed so a person can take over a login; with no display "
        "the server falls back to headless and says so on stderr. Headless, it runs Chromium's headless shell when one "
        "is installed (about half the CPU).")
    session_timeout: int = _option(
        300_000, _int_at_least(1), "Milliseconds a session lives without calls (default 5 minutes). Each call renews "
        "it: expiresAt in every answer says when it ends.")
    session_max_age: int = _option(
        0, _int_at_least(0), "Milliseconds a session may live in all, however busy; 0 (default) for no cap.")
    max_sessions: int = _option(
        10, _int_at_least(1), "Most sessions open at once; each costs a browser context and a small relay process.")
    pool_size: int = _option(
        1, _int_at_least(0), "Idle sessions kept ready (Playwright started, context and page open) so create_session "
        "answers at once; each costs about 40 MB, and the pool never exceeds --max-sessions.")
    spare_renderer: bool = _option(
        False, _boolean, "Let Chromium keep a spare renderer process warm for the next navigation. It is kept for one "
        "session at a time, so with sessions taking turns each navigation started and killed one; off, a navigation to "
        "another site or a new tab pays for a process start (about 10-20 ms here). Turn it on for one session that "
        "hops between sites. It runs the whole browser, never the headless shell, which keeps no spare.")
    executable_path: str = _option(None, _optional_text, "Browser executable to use instead of looking for one.")
    log_level: str = _option("info", _one_of(LOG_LEVELS), "Least severe level written to stderr.")
    action_timeout: int = _option(
        5_000, _int_at_least(1), "Default milliseconds an element action (click, type) waits for its element.")
    navigation_timeout: int = _option(
        30_000, _int_at_least(1), "Default milliseconds a navigation waits for its load state.")

    console_buffer: int = _option(
        1000, _int_at_least(1), "Console messages kept per session (all its tabs); the oldest are dropped first.")
    network_buffer: int = _option(
        500, _int_at_least(1), "Network requests kept per session (all its tabs); the oldest are dropped first.")
    redact_headers: tuple = _option(
        ("authorization", "cookie", "set-cookie", "x-api-key", "proxy-authorization"), _lower_list, "Comma-separated "
        "header names whose values are shown as [REDACTED]; \"\" shows all.")
    webmcp: bool = _option(
        True, _boolean, "Launch Chromium able to run the tools a page registers (WebMCP), which page_tools lists and "
        "calls (tool group webmcp). Off: the browser runs none, and page_tools says so.")
    allow_evaluate: bool = _option(
        False, _boolean, "Offer the evaluate tool, which runs arbitrary JavaScript in the page. Off by default: an "
        "agent with evaluate can read anything the page can.")
    upload_dir: tuple = _option(
        (), _text_list, "Comma-separated directories whose files upload_file may send; without one the tool is not "
        "offered.")
    output_dir: str = _option(
        None, _optional_text, "Directory where screenshots are also saved, and downloads, PDFs, traces and exported "
        "tests are saved, under names the server chooses (default for those: `files` beside the history database).")
    caps: tuple = _option(
        (), _lower_list,
        "Comma-separated tool groups to offer beside the core tools, or all: "
        + "; ".join(f"{name} ({purpose})" for name, purpose in TOOL_GROUPS.items() if name != "core")
        + ". Off by default: a model reads tools/list on every turn. A client can turn one on "
        "for itself with the enable_tools tool.")
    max_download_mb: int = _option(
        100, _int_at_least(0), "Largest download a page may save, in MB; bigger ones are refused and deleted. The "
        "limit holds for all of a session's downloads at once, while they stream. 0 refuses all downloads.")

    cdp_endpoint: tuple = _option(
        (), _endpoints("cdp"), "Attach to running Chromium or Chrome browsers over CDP instead of launching one: a "
        "URL, a comma list or the flag repeated (a fleet; in --config, objects with url, headers and capacity).")
    ws_endpoint: tuple = _option(
        (), _endpoints("ws"), "Attach to Playwright browser servers (`playwright run-server`) instead of launching a "
        "browser: a URL, a comma list or the flag repeated. New sessions go where most capacity is free.")
    selenium_grid: tuple = _option(
        (), _endpoints("grid"), "Run each session in a Chromium that a Selenium Grid 4 starts on one of its nodes "
        "(Playwright's Selenium support, CDP through the Grid): the Grid's URL, http://HOST:4444.")
    selenium_capabilities: dict = _option(
        None, _json_object, "Extra WebDriver capabilities for --selenium-grid sessions, as a JSON object "
        "({\"platformName\": \"linux\"}); they are merged over Playwright's own.")
    endpoint_capacity: int = _option(
        None, _unless_blank(_int_at_least(1)), "Sessions placed on each remote endpoint at most, unless its --config "
        "entry says otherwise (default: --max-sessions).")
    endpoint_headers: tuple = _option(
        (), _text_list, "Comma-separated `Name: value` headers sent to every remote endpoint (an auth token, say); an "
        "endpoint's own headers in --config win. Masked in --print-config.")
    allowed_domains: tuple = _option(
        (), _lower_list, "Comma-separated hosts sessions may reach, enforced on every request (`*.example.com` for "
        "subdomains); empty allows all.")
    blocked_domains: tuple = _option(
        (), _lower_list, "Comma-separated hosts no request may reach; wins over --allowed-domains.")
    url_schemes: tuple = _option(
        ("http", "https", "about", "data"), _lower_list, "URL schemes navigate accepts; add file or chrome explicitly "
        "to allow them.")
    block_private_networks: bool = _option(
        False, _boolean, "Refuse requests to loopback, private and link-local addresses (checked on the address a name "
        "resolves to, so DNS rebinding cannot reach them), unless an allowed-domains entry names the host.")
    ask_new_domains: bool = _option(
        False, _boolean, "When navigate meets a host outside --allowed-domains, ask the user through the client (MCP "
        "elicitation) instead of refusing.")
    rate_limit: int = _option(
        60, _int_at_least(0), "Calls per minute per client, session and tool (default 60); 0 turns limiting off.")
    login_cooldown: int = _option(
        300, _int_at_least(0), "Seconds browser actions pause after a call ran into a login, verification or captcha "
        "wall; 0 disables.")
    # client: one client's wall never pauses another's calls (over HTTP any client could
    # otherwise pause all), and on stdio, with its one client, it is the whole server.
    cooldown_scope: str = _option(
        "client", _one_of(("client", "server", "session")), "What a cooldown pauses: the calls of the client that ran "
        "into the wall (on stdio: all), every client's (server), or one session's.")
    login_keywords: tuple = _option(
        ("验证超时", "登录超时", "captcha", "验证码", "安全验证", "login required", "authentication",
         "verify you are human"), _text_list,
        "Comma-separated words that, in a page's title, mark it as a login or verification wall "
        "(besides a shown password or one-time-code field, or a captcha).")
    locale: str = _option("en", _one_of(("en", "zh")), "Language of cooldown messages: en or zh.")
    max_message_bytes: int = _option(
        4 * 1024 * 1024, _int_at_least(1024), "Longest JSON-RPC line accepted from the client; a longer one is "
        "answered with -32600 and discarded (requests here are small; this bounds memory under hostile input).")
    db: str = _option(
        None, _database, "History of every call: a SQLite file path (or sqlite:PATH), :memory: to keep nothing after "
        "exit, or postgresql://user:password@host:port/database?sslmode=... for several servers on one history (pip "
        "install 'mcpbrowser[postgres]') (default: history.db under the user's data directory).")
    db_key_file: str = _option(
        None, _key_file, "File of the key that seals saved logins and resume states in the history (one line of 64 hex "
        "digits; more lines: the first seals, every one opens, for a rotation); give every server sharing a history "
        "the same file, mode 0600 (default: a key the server makes beside its history).")
    retention_days: int = _option(
        0, _int_at_least(0), "Drop history, and files the server saved (screenshots, downloads, PDFs, traces), older "
        "than this many days; 0 keeps everything.")
    # A bound by default: a page-changing call costs about 7.5 KB of history (scripts/history_cost.py),
    # so 1 GB keeps ~140,000 of them (ten agents' week at 2,000 calls a day each) and a
    # default install cannot fill the disk. 0 keeps everything, as before.
    db_max_mb: int = _option(
        1024, _int_at_least(0), "Drop the oldest history once the database is larger; 0 means no limit.")
    # A bound by default, as --db-max-mb: a full-page screenshot is ~1 MB, a trace 1-20 MB, and
    # downloads up to --max-download-mb (100) each; 2 GB keeps a working week of an agent's files
    # and a default install cannot fill the disk with them.
    files_max_mb: int = _option(
        2048, _int_at_least(0), "Remove the oldest files the server saved under --output-dir (screenshots, downloads, "
        "PDFs, traces) once they take more than this many MB, never one an open session's latest answer named; their "
        "calls' history says so. 0 means no limit.")
    browser_ping: int = _option(
        30, _int_at_least(0), "Seconds between health checks of the shared browser (a context opened and closed), or "
        "of each remote endpoint (one HTTP request); a crash is noticed at once anyway. 0 turns the check off.")
    max_restarts: int = _option(
        3, _int_at_least(0), "Browser restarts allowed within --restart-window (at once, unless the browser keeps "
        "dying soon after it starts: then after up to 4 s); past that the server is degraded and calls answer "
        "BROWSER_UNAVAILABLE until the window allows one.")
    restart_window: int = _option(300, _int_at_least(1), "Seconds over which --max-restarts counts restarts.")
    watchdog_grace: int = _option(
        30, _int_at_least(0), "Seconds a command may run past its own timeout before it is answered COMMAND_TIMEOUT "
        "and its session thread is replaced; 0 turns the watchdog off.")
    breaker_threshold: int = _option(
        5, _int_at_least(0), "Consecutive BROWSER_ERROR failures of one tool that open its circuit breaker; 0 turns "
        "the breaker off.")
    breaker_reset: int = _option(
        30, _int_at_least(1), "Seconds an open breaker refuses its tool with CIRCUIT_OPEN before letting one call try.")
    idle_gc: int = _option(
        1_000, _int_at_least(0), "Milliseconds a session must stay quiet after a call before its pages' JavaScript "
        "heaps are collected: about 25 MB back per active session, for a few milliseconds of the browser's time while "
        "the agent thinks. 0 turns it off.")
    max_memory_mb: int = _option(
        2048, _int_at_least(0), "Refuse new sessions with RESOURCE_EXHAUSTED while the browser's processes (the "
        "launcher, the browser and the sessions' relays, PSS; not the server's own) use more than this many MB, as a "
        "guard against runaway pages; 8 sessions on small pages take about 0.9 GB here. 0 turns it off.")
    # Off by default: what a session may use depends on the pages an operator expects (a web
    # app takes 50-300 MB of JavaScript memory), and closing one is a decision of theirs.
    session_memory_mb: int = _option(
        0, _int_at_least(0), "Close a session, with SESSION_MEMORY_EXCEEDED and a last save that resume_session "
        "restores, once its pages' JavaScript memory (V8 heaps and ArrayBuffers, as list_sessions shows it) is over "
        "this many MB; checked after a call, at most every 2 s per session, and by list_sessions. The browser and "
        "other sessions go on. 0 (default) sets no limit.")
    http: str = _option(
        None, _host_port, "Serve MCP over Streamable HTTP on HOST:PORT (a threaded WSGI server) instead of stdio; "
        "several clients share the browser, each with its own sessions. A non-loopback HOST needs tokens.")
    http_path: str = _option("/mcp", _url_path, "The HTTP endpoint's path.")
    http_token_file: str = _option(
        None, _optional_text, "File of bearer tokens, one client per line as `name token` (or a bare token): each "
        "client sees only its own sessions; `name token operator` also lets that token's person see every session in "
        "the live view (--view). Also MCPBROWSER_HTTP_TOKENS, as comma-separated `name:token`.")
    http_tokens: tuple = _option(
        (), _text_list, "Comma-separated `name:token` pairs; set it through MCPBROWSER_HTTP_TOKENS or "
        "--http-token-file, since a command line is visible to every user of the machine. Masked in --print-config.")
    view: str = _option(
        None, _view_place, "Serve the live view, where a person watches every session and takes over a login wall: "
        "`http` mounts it under /view/ beside --http; HOST:PORT serves it alone (loopback, or tokens needed), with a "
        "one-time sign-in URL on stderr when there are no tokens. Off by default.")
    view_trusted_proxy: bool = _option(
        False, _boolean, "The view sits behind a TLS-terminating proxy that sets X-Forwarded-Proto: trust that header, "
        "so the view's cookie is Secure and its origin is the proxy's https one.")
    http_allowed_origins: tuple = _option(
        (), _lower_list, "Comma-separated origins (`https://app.example.com`) whose browser pages may call the server; "
        "requests with any other Origin are refused (403), against DNS rebinding. Empty: loopback origins only.")
    http_rate_limit: int = _option(
        600, _int_at_least(0), "HTTP requests per minute per client (its token, or its address without tokens), "
        "answered 429 past it; 0 turns it off.")
    # Slow and idle clients (measured with waitress 3.0.2; see transports/http_server.py): a
    # stalled socket costs no thread and about 1 KB, but one connection of a limit.
    http_header_timeout: int = _option(
        5, _int_at_least(1), "Seconds a request's head (its line and headers) may take to arrive, from its first byte; "
        "a client sends it in one packet, a connection that trickles it is closed.")
    http_body_timeout: int = _option(
        30, _int_at_least(1), "Seconds a request's head and body may take to arrive, from its first byte: a 4 MB body "
        "(--max-message-bytes) needs 1.1 Mbit/s. A connection past it is closed.")
    http_idle_timeout: int = _option(
        5, _int_at_least(1), "Seconds a keep-alive connection may sit idle between requests before it is closed "
        "(within a second after); a client opens another in one round trip. Not below httpx's keep-alive expiry (5 s, "
        "the MCP SDK's client): it drops its idle connection first, so it never sends a request on one the server is "
        "closing. Event streams and calls in progress are not idle.")
    http_max_connections: int = _option(
        512, _int_at_least(16), "Open connections at most; past it new ones wait in the kernel's backlog. Each holds a "
        "file descriptor, and 1024 is a common per-process limit that the browser's pipes share.")
    http_max_unauthenticated: int = _option(
        128, _int_at_least(1), "Connections that have not shown a valid token yet (with no tokens: a whole request "
        "head), counted apart; past it the oldest idle one is closed. A client shows its token within a millisecond of "
        "connecting, so stalled sockets can only crowd each other out.")
    http_client_requests: int = _option(
        16, _int_at_least(1), "Requests one token's client may hold open at once (calls waiting for answers, event "
        "streams), answered 429 past it: each holds one of the server's max(16, 4 x --max-sessions) threads. 16 runs "
        "10 sessions' calls at once with streams to spare. Without tokens, clients cannot be told apart and only the "
        "threads bound them.")
    secrets: str = _option(
        None, _optional_text, "Dotenv file of named secrets (`NAME=value`; `client:NAME=value` for one "
        "--http-token-file client): type and fill_form take them by name (secretName), so the values never reach the "
        "agent.")
    response_mode: str = _option(
        "compact", _one_of(("compact", "full", "lean")), "compact keeps page snapshots in the history (fetch them with "
        "get_content); full also puts them in every page-changing answer; lean stores none after page-changing calls "
        "(snapshot and wait_for still store theirs), which saves the browser about 35 ms of CPU per navigate (less per "
        "click or type).")

    def __post_init__(self):
        for f in dataclasses.fields(self):
            checked = f.metadata["check"](f.name, getattr(self, f.name))
            object.__setattr__(self, f.name, checked)
        unknown = set(self.caps) - set(CAPS)
        if "all" in self.caps:
            object.__setattr__(self, "caps", tuple(name for name in TOOL_GROUPS if name != "core"))
        if unknown:
            raise ConfigError(f"--caps knows {', '.join(CAPS)}, not {', '.join(sorted(unknown))}")
        for header in self.endpoint_headers:
            if ":" not in header:
                raise ConfigError(f"--endpoint-headers items must look like `Name: value`, got {header!r}")
        for pair in self.http_tokens:
            if ":" not in pair or len(pair.split(":", 1)[1].strip()) < MIN_TOKEN_CHARS:
                raise ConfigError(f"--http-tokens items must look like `name:token`, with a token of "
                                  f"{MIN_TOKEN_CHARS} characters or more")
        if self.http_max_unauthenticated >= self.http_max_connections:
            raise ConfigError(f"--http-max-unauthenticated must be less than --http-max-connections "
                              f"({self.http_max_connections}), to leave room for clients with tokens")
        if self.http:
            from mcpbrowser.domains import is_loopback

            host = self.http.rpartition(":")[0].strip("[]")
            if not is_loopback(host):
                # Whether tokens exist is read, not assumed from a flag being set: an empty token
                # file, one of comments or blank lines, or an empty variable is no token at all,
                # and would leave every interface open. An unreadable file says why as well.
                try:
                    tokens = self.http_credentials()
                except UnreadableTokens as exc:
                    tokens, why = {}, f" ({exc})"
                else:
                    why = ""
                if not tokens:
                    raise ConfigError(f"--http {self.http} is reachable from other machines: give each client a "
                                      "token with --http-token-file (or MCPBROWSER_HTTP_TOKENS), or bind "
                                      f"127.0.0.1{why}")
        if self.view == "http" and not self.http:
            raise ConfigError("--view http mounts the view beside --http: give --http HOST:PORT, or --view HOST:PORT")
        if self.view not in (None, "http"):
            from mcpbrowser.domains import is_loopback

            if not is_loopback(self.view.rpartition(":")[0].strip("[]")) and not self.http_credentials():
                raise ConfigError(f"--view {self.view} is reachable from other machines: give each person a "
                                  "token with --http-token-file, or bind 127.0.0.1")
        if self.secrets:
            self.named_secrets()  # a bad file stops the server at once, naming its line
        if self.db is None:
            object.__setattr__(self, "db", default_path())

    @classmethod
    def load(cls, argv=None, environ=None):
        """(settings, print_config): defaults < --config file < MCPBROWSER_* variables < flags.

        Every value is checked where it came from, so an error names the flag, the
        variable or the file key that carried it."""
        environ = os.environ if environ is None else environ
        ns = build_parser().parse_args(argv)
        names = {f.name for f in dataclasses.fields(cls)}
        settings, sources = {}, {}  # sources: setting -> the variable or file key that carried it
        path = ns.config or environ.get(ENV_PREFIX + "CONFIG")
        if path:
            for name, (value, label) in _from_file(path, names).items():
                settings[name], sources[name] = value, label
        for key, value in environ.items():
            if key.startswith(ENV_PREFIX) and key != ENV_PREFIX + "CONFIG":
                name = key[len(ENV_PREFIX):].lower()
                if name not in names:
                    raise ConfigError(f"{key} is not a setting (known: {', '.join(sorted(names))})")
                settings[name], sources[name] = _checked(name, value, key), key
        for name, value in vars(ns).items():
            if name in names and value is not None:
                settings[name] = value
                sources.pop(name, None)
        # The checks of settings against each other (__post_init__) name flags; each is renamed
        # after what carried its value here.
        try:
            return cls(**settings), ns.print_config
        except ConfigError as exc:
            raise type(exc)(_relabel(str(exc), sources)) from None

    def public(self):
        """The settings as JSON-ready data, secrets masked (for --print-config)."""
        out = dataclasses.asdict(self)
        out["endpoint_headers"] = [h.split(":", 1)[0] + ": ***" for h in self.endpoint_headers]
        for name in APPENDABLE:
            out[name] = [{"url": e.shown(), "headers": [k + ": ***" for k, _ in e.headers], "capacity": e.capacity}
                         for e in getattr(self, name)]
        out["http_tokens"] = [t.split(":", 1)[0] + ":***" for t in self.http_tokens]
        if self.db.startswith("postgresql://"):
            out["db"] = shown_url(self.db)
        if self.selenium_capabilities:  # a cloud grid's credentials travel here (sauce:options, say)
            out["selenium_capabilities"] = dict.fromkeys(self.selenium_capabilities, "***")
        return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}

    def http_credentials(self):
        """{token: client name} from --http-tokens and --http-token-file; {} when the server is open."""
        out = {token.strip(): name.strip() for name, token in (pair.split(":", 1) for pair in self.http_tokens)}
        if self.http_token_file:
            try:
                with open(self.http_token_file) as f:
                    lines = [line.split() for line in f if line.strip() and not line.lstrip().startswith("#")]
            except (OSError, UnicodeDecodeError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) else "not text"
                raise UnreadableTokens(f"--http-token-file {self.http_token_file}: cannot read it "
                                       f"({reason})") from None
            for number, words in enumerate(lines, 1):
                # A third word `operator` marks the view's operator (see view_operators); files
                # written before it have one or two words and mean what they meant.
                marked = len(words) == 3 and words[2] == "operator"
                words = words[:2] if marked else words
                if len(words) > 2 or len(words[-1]) < MIN_TOKEN_CHARS:
                    raise ConfigError(f"--http-token-file line {number}: want `name token` (or `name token "
                                      f"operator`) with a token of {MIN_TOKEN_CHARS} characters or more")
                out[words[-1]] = words[0] if len(words) == 2 else f"client{number}"
        return out

    def view_operators(self):
        """The client names marked `operator` in --http-token-file: their view shows every session."""
        if not self.http_token_file:
            return set()
        with open(self.http_token_file) as f:  # read (and checked) by http_credentials first
            return {words[0] for words in (line.split() for line in f if not line.lstrip().startswith("#"))
                    if len(words) == 3 and words[2] == "operator"}

    def named_secrets(self):
        """{client name or None (every client): {NAME: value}} from the --secrets file; {} without one.

        Dotenv lines: `NAME=value`, `export NAME=value`, a value in '…' or "…" (where \\n, \\" and
        \\\\ are escapes), `# comments`. `client:NAME=value` is that HTTP client's own (its
        name in --http-token-file), and wins over a shared NAME. Errors name the line, never a value."""
        if not self.secrets:
            return {}
        try:
            with open(self.secrets, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except OSError as exc:
            raise ConfigError(f"--secrets {self.secrets}: cannot read it ({exc.strerror})") from None
        out: dict[str | None, dict[str, str]] = {}
        for number, line in enumerate(lines, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, sep, value = line.removeprefix("export ").partition("=")
            owner, _, name = key.strip().rpartition(":")
            if not sep or not _SECRET_NAME.fullmatch(name) or (owner and owner.split() != [owner]):
                raise ConfigError(f"--secrets {self.secrets} line {number}: want NAME=value "
                                  "(a name of letters, digits and _), or client:NAME=value")
            value = _dotenv_value(value.strip())
            if not value:
                raise ConfigError(f"--secrets {self.secrets} line {number}: {name} has no value")
            out.setdefault(owner or None, {})[name] = value
        return out

    def db_keys(self):
        """The sealing keys of --db-key-file, the first seals; None without one (the store keeps its own)."""
        if not self.db_key_file:
            return None
        from mcpbrowser.sealing import read_key_file

        return read_key_file(self.db_key_file)

    def files_dir(self):
        """Where downloads, PDFs and traces are saved: --output-dir, else `files` in the data directory."""
        if self.output_dir:
            return os.path.realpath(self.output_dir)
        db = default_path() if self.db == ":memory:" or self.db.startswith("postgresql://") else self.db
        return os.path.join(os.path.dirname(os.path.realpath(db)), "files")

    def headers(self):
        """endpoint_headers as a dict."""
        pairs = (h.split(":", 1) for h in self.endpoint_headers)
        return {name.strip(): value.strip() for name, value in pairs}

    def remote_endpoints(self):
        """Every remote backend, each with the shared headers under its own and a capacity: () to launch our own."""
        shared = self.headers()
        return tuple(dataclasses.replace(e, headers=tuple({**shared, **dict(e.headers)}.items()),
                                         capacity=e.capacity or self.endpoint_capacity or self.max_sessions)
                     for e in self.ws_endpoint + self.cdp_endpoint + self.selenium_grid)


_SECRET_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# 'single' (as is) or "double" (with \n, \" and \\ read), then a comment may follow: NAME='value'  # note
_QUOTED = re.compile(r"""(?:'([^']*)'|"((?:[^"\\]|\\.)*)")(?:\s+#.*)?""", re.S)


def _dotenv_value(text):
    """A dotenv value: quoted, a ` # comment` after the closing quote allowed, or bare up to a ` #` comment. A value
    whose first and last characters are the same quote is quoted whatever it holds between them (`'it's'`)."""
    quoted = _QUOTED.fullmatch(text) or re.fullmatch(r"'(.*)'|\"(.*)\"", text, re.S)
    if quoted and quoted.group(1) is not None:
        return quoted.group(1)
    if quoted:
        return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), quoted.group(2))
    return text.split(" #", 1)[0].strip()


def _relabel(message, sources):
    """A check's message with each flag of `sources` (setting -> variable or file key) named as that instead."""
    return re.sub(r"--[a-z][a-z0-9-]*", lambda m: sources.get(m.group(0)[2:].replace("-", "_"), m.group(0)), message)


def _checked(name, value, label):
    """Run one field's check, naming `label` (a variable or file key) instead of the flag."""
    check = next(f.metadata["check"] for f in dataclasses.fields(Config) if f.name == name)
    try:
        return check(name, value)
    except ConfigError as exc:
        raise ConfigError(_relabel(str(exc), {name: label})) from None


def _from_file(path, names):
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as exc:
        raise ConfigError(f"--config {path}: cannot read it ({exc.strerror})") from None
    except ValueError as exc:
        raise ConfigError(f"--config {path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"--config {path}: must be a JSON object of settings")
    out = {}
    for key, value in data.items():
        name = key.replace("-", "_")
        if name not in names:
            raise ConfigError(f"--config {path}: {key!r} is not a setting (known: {', '.join(sorted(names))})")
        label = f"{path}: {key!r}"
        out[name] = _checked(name, value, label), label
    return out


def build_parser():
    """argparse parser generated from the Config table, so flags and fields never drift."""
    from mcpbrowser import __version__

    parser = argparse.ArgumentParser(
        prog="mcpbrowser",
        description="MCP server for browser automation: isolated sessions on one "
        "shared browser, driven by AI agents through tools. Speaks JSON-RPC on "
        "stdin/stdout, or Streamable HTTP with --http; logs JSON to stderr.",
        epilog="`mcpbrowser export SESSION_ID` writes a session's recorded page actions as a pytest test "
        "(see `mcpbrowser export --help`).",
    )
    parser.add_argument("--version", action="version", version=f"mcpbrowser {__version__}")
    parser.add_argument("--config", metavar="FILE", help="JSON file of settings (keys as the flags, "
                        "with - or _); MCPBROWSER_* variables and flags override it")
    parser.add_argument("--print-config", action="store_true",
                        help="print the effective settings as JSON, secrets masked, and exit")
    for f in dataclasses.fields(Config):
        flag = _flag(f.name)
        env = ENV_PREFIX + f.name.upper()
        help_text = f"{f.metadata['help']} (default: {f.default}; env {env})"
        if f.type in (bool, "bool"):
            parser.add_argument(flag, dest=f.name, action=argparse.BooleanOptionalAction, default=None, help=help_text)
        elif f.name in APPENDABLE:
            parser.add_argument(flag, dest=f.name, default=None, metavar="URL", action="append", help=help_text)
        else:
            parser.add_argument(flag, dest=f.name, default=None, metavar=f.name.upper(), help=help_text)
    return parser
