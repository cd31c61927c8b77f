"""The manual stays true to the code: generated reference pages, the errors table, the README's links."""

import dataclasses
import pathlib
import re

import gen_docs
import pytest

from mcpbrowser import errors
from mcpbrowser.config import Config

pytestmark = pytest.mark.unit

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_the_reference_pages_are_what_the_code_generates():
    stale = list(gen_docs.stale())
    assert not stale, (f"{', '.join(stale)}: out of date with the code: run `python scripts/gen_docs.py` "
                       "and commit the pages it writes")


def test_a_changed_description_or_default_makes_the_check_fail(monkeypatch, capsys):
    assert gen_docs.main(["--check"]) == 0  # the positive control: the pages are current
    tools = [dataclasses.replace(tool, description="Go somewhere.") if tool.name == "navigate" else tool
             for tool in gen_docs.ALL]
    monkeypatch.setattr(gen_docs, "ALL", tools)
    field = next(f for f in dataclasses.fields(Config) if f.name == "max_sessions")
    monkeypatch.setattr(field, "default", 11)
    assert set(gen_docs.stale()) == {"docs/reference/tools.md", "docs/reference/configuration.md"}
    assert gen_docs.main(["--check"]) == 1
    assert "run `python scripts/gen_docs.py`" in capsys.readouterr().err


def test_the_configuration_reference_lists_every_setting():
    page = (ROOT / "docs/reference/configuration.md").read_text()
    fields = dataclasses.fields(Config)
    missing = [f.name for f in fields if f"`MCPBROWSER_{f.name.upper()}`" not in page]
    assert len(fields) > 60 and not missing, missing
    assert "`--http-tokens`" in page and "`--http-allowed-origins`" in page and "`--http-path`" in page


def test_the_configuration_pages_table_of_areas_names_every_flag():
    """docs/configuration.md's table says where each area's flags are explained: a flag left out is a setting
    a reader of that page never meets (--view and --view-trusted-proxy were)."""
    page = (ROOT / "docs/configuration.md").read_text()
    table = page.split("| Area |", 1)[1].split("\n\n", 1)[0]
    named = set(re.findall(r"`(--[a-z-]+)`", table))
    flags = {"--" + f.name.replace("_", "-") for f in dataclasses.fields(Config)}
    assert len(flags) > 60 and flags <= named, sorted(flags - named)


def test_every_error_code_has_a_when_row_in_the_manual():
    """The errors table of docs/tools.md says when each code comes; a new code without a row fails here."""
    page = (ROOT / "docs/tools.md").read_text()
    rows = set(re.findall(r"^\| `([A-Z_]+)` \|", page, re.M))
    codes = {error.code for error in errors.ALL_ERRORS}
    assert len(codes) > 30
    assert rows == codes, f"without a row: {sorted(codes - rows)}; rows of no code: {sorted(rows - codes)}"


def test_the_tool_table_of_the_manual_names_every_tool_once():
    """docs/tools.md's table says what each answer carries; a tool added or removed without its row fails here."""
    page = (ROOT / "docs/tools.md").read_text()
    cells = re.findall(r"^\| (`[a-z_]+`(?:, `[a-z_]+`)*) \|", page, re.M)
    names = [name for first in cells for name in re.findall(r"`([a-z_]+)`", first)]
    assert sorted(names) == sorted(tool.name for tool in gen_docs.ALL)


def test_the_readme_is_a_front_door_whose_links_lead_somewhere():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300, "README.md is the front door: the manual is docs/"
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    local = [link for link in links if "://" not in link and not link.startswith("mailto:")]
    assert any(link.startswith("docs/") for link in local)  # the attempt: it links into the manual
    broken = [link for link in local if not (ROOT / link).exists()]
    assert not broken, broken


def test_the_readmes_figures_follow_its_quick_start_one_dated_linked_line_each():
    readme = (ROOT / "README.md").read_text()
    assert readme.index("\n## Quick start\n") < readme.index("\n## Measured\n")  # what it is and how to start first
    measured = readme.split("\n## Measured\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in measured.splitlines() if line.startswith("- ")]
    assert len(lines) >= 8
    for line in lines:
        assert re.search(r"\(20\d\d-\d\d-\d\d[^)]*\[[^]]+\]\(docs/[^)]+\)\)\.$", line), line  # (date, [what](link)).
        assert "#issue" not in line and "previous" not in line, line  # a figure, not a note about an issue


def test_a_default_named_in_a_description_keeps_its_parenthesis():
    """The reference's Default column: a default with a parenthesised note comes whole (snapshot's maxNodes)."""
    assert gen_docs.default_of({"description": "Default 1000 (section 200, 30 a query term)."}) == \
        "1000 (section 200, 30 a query term)"
    assert gen_docs.default_of({"description": "ms; default 30000."}) == "30000"


def test_the_haproxy_configuration_the_manual_shows_is_the_one_the_failover_test_runs():
    shown = re.search(r"```haproxy\n(.*?)```", (ROOT / "docs" / "scaling.md").read_text(), re.S)
    shipped = (ROOT / "scripts" / "haproxy.cfg").read_text()
    assert shown and shipped.endswith(shown.group(1)) and shown.group(1).startswith("defaults mcp\n")
