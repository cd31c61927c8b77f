"""The core: one shared browser, many sessions, every tool as a call.

`Browser` (browser.py) is the entry point; its public methods may be called from any thread. The rest runs
on the threads the core starts for itself, each module's docstring naming them. Nothing here touches a
Playwright object (the session threads' work). Imported lazily, so `import mcpbrowser` stays cheap."""

TYPE_CHECKING = False
if TYPE_CHECKING:  # what __getattr__ hands out, for type checkers (see mcpbrowser/__init__.py)
    from mcpbrowser.core.browser import Browser  # noqa: F401


def __getattr__(name):
    if name == "Browser":
        from mcpbrowser.core.browser import Browser

        return Browser
    raise AttributeError(f"module 'mcpbrowser.core' has no attribute {name!r}")
