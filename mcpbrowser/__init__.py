"""mcpbrowser: browser automation for AI agents over MCP, and as a thread-safe sync library.

Importing the package is cheap on purpose: Playwright and the MCP types load lazily,
so that `initialize` is answered before they are needed.
"""

__version__ = "0.1.0"
