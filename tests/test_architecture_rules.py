"""ARCHITECTURE.md true and held (issue 71): each rule it states names the test that holds it, and each test it
names exists. No browser: the page and the tests' syntax trees are read."""

import ast
import pathlib
import re

import pytest

pytestmark = pytest.mark.unit

ROOT = pathlib.Path(__file__).resolve().parent.parent
RULES_HEADING = "## The rules, and the test that holds each"
NAMED = re.compile(r"tests/(test_\w+\.py)::(test_\w+)")


def rules(page):
    """The rules of the page's rules section: each a bullet (`- ` and its continuation lines)."""
    assert RULES_HEADING in page, f"ARCHITECTURE.md has no section {RULES_HEADING!r}"
    section = page.split(RULES_HEADING, 1)[1].split("\n## ", 1)[0]
    return [bullet.strip() for bullet in re.split(r"\n(?=- )", section) if bullet.startswith("- ")]


def defined_tests(path):
    """The test functions a test module defines (a class's methods too)."""
    if not path.exists():
        return set()
    return {node.name for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


def gone(text, tests=ROOT / "tests"):
    """The tests `text` names (tests/FILE::NAME) that do not exist."""
    return sorted(f"{module}::{name}" for module, name in NAMED.findall(text)
                  if name not in defined_tests(tests / module))


def unheld(page):
    """The rules that name no test."""
    return [rule.split("\n", 1)[0] for rule in rules(page) if not NAMED.search(rule)]


def test_the_check_finds_a_rule_without_a_test_and_a_test_that_is_gone():
    """The walk on a page of two rules, one held by a test that exists, one by none (positive controls)."""
    page = (f"# A page\n\n{RULES_HEADING}\n\nWhy.\n\n- **Held.** tests/test_layout.py::test_imports_only_go_down\n"
            "- **Not held.** Nothing names a test\n  on two lines.\n\n## After\n\n- not a rule\n")
    assert len(rules(page)) == 2
    assert unheld(page) == ["- **Not held.** Nothing names a test"]
    assert gone(page) == []
    assert gone("tests/test_layout.py::test_no_such_test and tests/test_nothing.py::test_x") == [
        "test_layout.py::test_no_such_test", "test_nothing.py::test_x"]


def test_every_rule_the_architecture_page_states_names_the_test_that_holds_it():
    page = (ROOT / "ARCHITECTURE.md").read_text()
    assert len(rules(page)) >= 20  # the section was read
    assert unheld(page) == [], "rules of ARCHITECTURE.md that name no test"


def test_every_test_the_architecture_page_names_exists():
    page = (ROOT / "ARCHITECTURE.md").read_text()
    assert NAMED.search(page)
    assert gone(page) == [], "tests ARCHITECTURE.md names that are gone (renamed or deleted)"


# -- rules the page states that had no test -----------------------------------------------------------------

PACKAGE = ROOT / "mcpbrowser"
# The coroutines we run, on Playwright's own event loop, on the session thread (none of ours runs a loop).
ASYNCIO = {"session/downloads.py", "session/acting.py", "session/playwright_internals.py"}


def _imports(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def _modules_importing(prefix):
    return {path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")
            if any(name == prefix or name.startswith(prefix + ".") for name in _imports(path))}


def test_asyncio_only_runs_on_playwrights_loop_in_three_session_modules():
    assert _modules_importing("asyncio") == ASYNCIO
    assert _modules_importing("threading")  # the walk reads imports (positive control)


def test_the_server_never_imports_its_child_processes():
    assert _modules_importing("mcpbrowser.children") == set()
    assert _modules_importing("mcpbrowser.session")  # the walk reads imports (positive control)
