"""Session threads: one per session, and only that thread runs the lines in this package.

Every Playwright object of a session (its driver connection, context, pages) is
created on the session's thread by `opener.py` and used only there: by
`state.py` and its parts (`events.py`, `network.py`), by the tool handlers in
`mcpbrowser.tools`, and by `playwright_internals.py`. Other threads reach a
session only through `worker.SessionWorker.submit`, with plain data in and a
Future out.
"""
