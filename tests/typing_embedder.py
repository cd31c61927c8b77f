"""Never run: `tox -e type` type-checks it (mypy --warn-unused-ignores), as an embedder's checker would.

py.typed is worth something only if `mcpbrowser.Browser` and the errors are not Any to a type
checker (the package's lazy module __getattr__ alone made them so): then a misspelt parameter is
caught and the IDE shows the docstrings. If they were Any, the ignore below would be unused and
assert_type would fail: both are errors under --warn-unused-ignores.
"""
from typing_extensions import assert_type

import mcpbrowser


def embedder() -> None:
    browser = mcpbrowser.Browser(mcpbrowser.Config(headless=True)).start()
    with browser.create_session() as session:
        session.navigate("https://example.com", wait_untl="load")  # type: ignore[call-arg]
        assert_type(session, mcpbrowser.Session)
    try:
        browser.close()
    except mcpbrowser.ElementNotFound as exc:
        assert_type(exc.code, str)
