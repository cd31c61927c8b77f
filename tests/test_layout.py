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


def test_a_session_package_module_says_it_runs_on_session_threads():
    """ARCHITECTURE.md's rule for session/: its lines run on session threads only, and each module says so."""
    import re

    modules = [p for p in _modules() if p.relative_to(PACKAGE).parts[0] == "session"]
    assert len(modules) > 10  # the control: the package was read
    silent = [str(p.relative_to(PACKAGE)) for p in modules
              if not re.search(r"session('s)?\s+threads?", ast.get_docstring(ast.parse(p.read_text())) or "", re.I)]
    assert not silent, f"session/ modules whose docstring does not say they run on session threads: {silent}"


def test_every_file_the_architecture_page_names_exists():
    """ARCHITECTURE.md names files by path (core/on_session.py, view/hands.py): each is there (a rename or a
    deleted module leaves the page false otherwise)."""
    import re

    text = (PACKAGE.parent / "ARCHITECTURE.md").read_text()
    named = set(re.findall(r"\b((?:core|session|tools|transports|view|resources|children)/[\w/]+\.(?:py|js))", text))
    assert len(named) > 30  # the control: the page was read
    missing = sorted(path for path in named if not (PACKAGE / path).exists())
    assert not missing, f"ARCHITECTURE.md names files that do not exist: {missing}"
