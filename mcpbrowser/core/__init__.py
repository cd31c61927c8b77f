"""The core: one shared browser, many sessions, every tool as a call.

`Browser` (browser.py) is the entry point; its public methods may be called from
any thread. The rest of this package runs on the threads the core starts for
itself, each module's docstring naming them: the core pool (session-less tools,
opening sessions), the browser supervisor, the watchdog, expiry timers, the store
writer and the policy proxies. Nothing here touches a Playwright object: that is
the session threads' work (the `session` package).

Imported lazily, so `import mcpbrowser` stays cheap."""

TYPE_CHECKING = False
if TYPE_CHECKING:  # what __getattr__ hands out, for type checkers (see mcpbrowser/__init__.py)
    from mcpbrowser.core.browser import Browser  # noqa: F401


def __getattr__(name):
    if name == "Browser":
        from mcpbrowser.core.browser import Browser

        return Browser
    raise AttributeError(f"module 'mcpbrowser.core' has no attribute {name!r}")
