"""Session threads: one per session, and only that thread runs the lines in this package.

Every Playwright object of a session is created on the session's thread by `opener.py` and used only
there: by `state.py` and its parts, the tool handlers in `mcpbrowser.tools`, and `playwright_internals.py`.
Other threads reach a session only through `worker.SessionWorker.submit`: plain data in, a Future out.
"""
