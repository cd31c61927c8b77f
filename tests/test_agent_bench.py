"""Smoke test of scripts/agent_bench.py on a tiny local site, on three real applications (Django's admin,
optuna-dashboard, Roundup) and on a shop's page tools (mcpbrowser only), so that it cannot rot.

It checks that every intention runs and is counted, never how fast (speed stays
out of the tests). The real measure runs on Sphinx's manual: see docs/performance.md.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "agent_bench.py")

HEAD = '<!doctype html><meta charset="utf-8"><title>{title} — Tiny docs</title>'
SEARCH_BOX = '<nav aria-label="main"><form role="search" action="/search.html"><h3>Quick search</h3>' \
             '<input name="q" aria-label="Quick search"><button>Go</button></form></nav>'
SITE = {
    "index.html": HEAD.format(title="Welcome") + SEARCH_BOX +
    '<main><h1>Welcome</h1><ul><li><a href="usage/index.html">Using Tiny</a></li>'
    '<li><a href="glossary.html">Glossary</a></li></ul></main>',
    "usage/index.html": HEAD.format(title="Using Tiny") + SEARCH_BOX +
    "<main><h1>Using Tiny</h1><p>How to use it.</p></main>",
    "search.html": HEAD.format(title="Search") + SEARCH_BOX + '<main><h1>Search</h1><ul id="hits"></ul></main>'
    "<script>setTimeout(() => { const q = new URLSearchParams(location.search).get('q');"
    "document.getElementById('hits').innerHTML = '<li><a href=\"/ext/autodoc.html\">tiny.ext.' + q +"
    "' – Include docs</a></li>'; const p = document.createElement('p'); p.textContent = 'Search finished';"
    "document.querySelector('main').append(p); }, 200)</script>",
    "ext/autodoc.html": HEAD.format(title="tiny.ext.autodoc") +
    "<main><h1>tiny.ext.autodoc</h1><p>Set autodoc_mock_imports to mock modules.</p></main>",
    "glossary.html": HEAD.format(title="Glossary") + "<main><dl><dt>environment</dt><dd>A structure.</dd></dl></main>",
    "agent_task.json": json.dumps({
        "start": "index.html", "start_title": "Tiny", "follow": "Using Tiny", "landed": "usage/index.html",
        "search_box": "Quick search", "query": "autodoc", "results_done": "Search finished",
        "hit": "tiny.ext.autodoc", "hit_url": "autodoc.html", "passage": "autodoc_mock_imports",
        "second": "glossary.html", "second_find": "environment"}),
}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("site")
    for name, text in SITE.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


def run(site, *args):
    return subprocess.run([sys.executable, SCRIPT, "--site", str(site), "--json", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def docs_task(site):
    """The docs task, run once for the two tests below: with both servers when @playwright/mcp can be had
    (ours runs the same steps either way), else ours only. (the run, why theirs did not run or None)"""
    if not (shutil.which("node") and shutil.which("npm")):
        why = "node and npm are needed to install @playwright/mcp"
    else:
        done = run(site, "--task", "docs")
        if done.returncode != 3:
            return done, None
        why = f"@playwright/mcp could not be installed from npm: {done.stderr[-500:]}"
    return run(site, "--ours-only", "--task", "docs"), why


def test_every_intention_runs_through_mcpbrowser(docs_task):
    done, _ = docs_task
    assert done.returncode == 0, done.stderr[-2000:]
    ours = json.loads(done.stdout)["tasks"]["docs"]["ours"]
    assert ours["error"] is None and ours["total"]["all_ok"] is True
    steps = ours["steps"]
    assert all(step["ok"] and step["calls"] >= 1 and step["chars"] > 0 for step in steps.values()), steps
    assert steps["shot"]["image_bytes"] > 1000 and ours["total"]["tools_list_chars"] > 1000
    assert 100 < ours["total"]["instructions_chars"] < ours["total"]["tools_list_chars"]
    assert ours["total"]["calls"] == sum(step["calls"] for step in steps.values())


def test_both_servers_and_their_ratios(docs_task):
    done, why_not = docs_task
    if why_not:
        pytest.skip(why_not)
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout)["tasks"]["docs"]
    assert results["theirs"]["error"] is None and results["theirs"]["total"]["all_ok"] is True
    assert set(results["ratios"]) == {"chars", "tools_list_chars", "all_in_chars", "tools_list_turns_chars",
                                      "all_in_turns_chars", "image_bytes", "calls", "ms"}
    for side in ("ours", "theirs"):
        total = results[side]["total"]
        assert total["all_in_chars"] == total["chars"] + total["tools_list_chars"]
        if side == "theirs":
            assert total["tools_list_turns_chars"] == total["tools_list_chars"] * total["calls"]  # a list that stays
        else:  # ours grows by sessionId on 16 tools (462 characters) once its agent holds the task's two sessions
            grown = total["tools_list_turns_chars"] - total["tools_list_chars"] * total["calls"]
            assert grown % 462 == 0 and 0 < grown // 462 < total["calls"], grown
        assert total["all_in_turns_chars"] == total["chars"] + total["tools_list_turns_chars"]
        assert 1000 < total["tools_list_chars"] < total["tools_list_json_chars"]
    assert results["ratios"]["chars"] == round(results["ours"]["total"]["chars"]
                                               / results["theirs"]["total"]["chars"], 2)


def test_the_admin_task_runs_through_mcpbrowser_on_djangos_admin(site):
    """The real application (Django from PyPI, into the script's own folder): every step is
    checked in its database, so a step that silently did nothing fails here."""
    done = run(site, "--ours-only", "--task", "admin")
    if done.returncode == 4:
        pytest.skip(f"Django could not be installed from PyPI: {done.stderr[-500:]}")
    assert done.returncode == 0, done.stderr[-2000:] + done.stdout[-2000:]
    ours = json.loads(done.stdout)["tasks"]["admin"]["ours"]
    assert ours["error"] is None and list(ours["steps"]) == ["login", "find", "add", "edit", "count", "group",
                                                             "delete", "recent", "logout"]
    assert all(step["ok"] and step["calls"] >= 1 and step["chars"] > 0 for step in ours["steps"].values())


def test_the_spa_task_runs_through_mcpbrowser_on_optuna_dashboard(site):
    """A real single-page application (optuna-dashboard from PyPI, into the script's own venv):
    every step is checked in its storage, and every route change is reported as urlChanged."""
    done = run(site, "--ours-only", "--task", "spa")
    if done.returncode == 5:
        pytest.skip(f"optuna-dashboard could not be installed from PyPI: {done.stderr[-500:]}")
    assert done.returncode == 0, done.stderr[-2000:] + done.stdout[-2000:]
    ours = json.loads(done.stdout)["tasks"]["spa"]["ours"]
    assert ours["error"] is None and list(ours["steps"]) == ["open", "create", "open_study", "best", "trials",
                                                             "note", "back", "delete"]
    assert all(step["ok"] and step["calls"] >= 1 and step["chars"] > 0 for step in ours["steps"].values())


def test_the_tracker_task_runs_through_mcpbrowser_on_roundup(site):
    """A real issue tracker (Roundup from PyPI, into the script's own folder, served by its WSGI
    application): the login is checked in its session database, the refused form and every later
    step in its item database."""
    done = run(site, "--ours-only", "--task", "tracker")
    if done.returncode == 6:
        pytest.skip(f"Roundup could not be installed from PyPI: {done.stderr[-500:]}")
    assert done.returncode == 0, done.stderr[-2000:] + done.stdout[-2000:]
    ours = json.loads(done.stdout)["tasks"]["tracker"]["ours"]
    assert ours["error"] is None and list(ours["steps"]) == ["login", "report", "recover", "find", "edit", "logout"]
    assert all(step["ok"] and step["calls"] >= 1 and step["chars"] > 0 for step in ours["steps"].values())


def test_the_webmcp_task_runs_through_mcpbrowser_on_a_shops_page_tools(site):
    """A shop's page of our own that registers page tools (scripts/webmcp_site.py): each step is checked in the
    shop's state, and tools/list is counted at every call, grown once the page's tools turned page_tools on."""
    done = run(site, "--ours-only", "--task", "webmcp")
    assert done.returncode == 0, done.stderr[-2000:] + done.stdout[-2000:]
    ours = json.loads(done.stdout)["tasks"]["webmcp"]["ours"]
    assert ours["error"] is None and list(ours["steps"]) == ["open", "discover", "search", "add", "checkout",
                                                             "confirm"]
    steps = ours["steps"]
    assert steps["discover"]["ok"] and steps["discover"]["calls"] == 0  # the load's answer named the page's tools
    assert all(step["ok"] and step["calls"] >= 1 and step["chars"] > 0 for name, step in steps.items()
               if name != "discover")
    total = ours["total"]
    assert total["calls"] <= 6  # @playwright/mcp 0.0.86's on the same task (docs/performance.md)
    assert total["tools_list_turns_chars"] > total["tools_list_chars"] * total["calls"]  # the list grew
    assert total["all_in_turns_chars"] == total["chars"] + total["tools_list_turns_chars"]
