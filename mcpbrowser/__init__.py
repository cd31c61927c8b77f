"""mcpbrowser: browser automation for AI agents over MCP, and as a thread-safe sync library.

    with mcpbrowser.Browser(mcpbrowser.Config(headless=True)) as browser:
        with browser.create_session() as session:
            session.navigate("https://example.com")

Importing the package is cheap on purpose: the core, Playwright and the MCP
types load only when first used, so the server answers `initialize` first."""

__version__ = "0.1.0"

# Type checkers and IDEs read what __getattr__ hands out from __init__.pyi.
_LAZY = {"Browser": "mcpbrowser.core", "Session": "mcpbrowser.library", "Config": "mcpbrowser.config",
         "ConfigError": "mcpbrowser.config"}


def __getattr__(name):
    import importlib

    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    errors = importlib.import_module("mcpbrowser.errors")
    if hasattr(errors, name):  # every error class, e.g. mcpbrowser.ElementNotFound
        return getattr(errors, name)
    raise AttributeError(f"module 'mcpbrowser' has no attribute {name!r}")
