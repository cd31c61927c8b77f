"""The house rules a newcomer relies on: packages say the thread, and imports only go down."""

import ast
import pathlib

import pytest

pytestmark = pytest.mark.unit

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "mcpbrowser"
# What each package may not import: data flows transports → core → session, never back up.
FORBIDDEN = {"session": ("mcpbrowser.core", "mcpbrowser.transports", "mcpbrowser.cli"),
             "core": ("mcpbrowser.transports", "mcpbrowser.cli"),
             "tools": ("mcpbrowser.core", "mcpbrowser.transports", "mcpbrowser.cli")}


def _modules():
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _imports(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_module_says_what_it_is(path):
    tree = ast.parse(path.read_text())
    assert ast.get_docstring(tree), f"{path.relative_to(PACKAGE)} has no docstring naming its job and threads"


def test_imports_only_go_down():
    wrong = []
    for path in _modules():
        package = path.relative_to(PACKAGE).parts[0]
        for name in _imports(ast.parse(path.read_text())):
            if name.startswith(FORBIDDEN.get(package, ())):
                wrong.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert not wrong, wrong


def test_private_playwright_names_stay_in_one_module():
    """Playwright's private attributes are reached only in session/playwright_internals.py."""
    private = {"_client", "_connection", "_impl", "_impl_obj", "_loop", "_pre_launched_browser", "_proc", "_sync",
               "_sync_base", "_transport", "_dispatcher_fiber", "_channel"}
    leaks = []
    for path in _modules():
        if path.name == "playwright_internals.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            # Our own private attributes are reached through self or cls; anything else is a foreign object's.
            if (isinstance(node, ast.Attribute) and node.attr in private
                    and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
                leaks.append(f"{path.relative_to(PACKAGE)}:{node.lineno} .{node.attr}")
    assert not leaks, leaks
