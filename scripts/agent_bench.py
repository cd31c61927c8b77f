"""What an agent pays to read: mcpbrowser against @playwright/mcp on real sites, task by task.

The docs task serves a real documentation site that nobody here wrote (Sphinx's own
manual, Debian's `sphinx-doc` package, installed by this script when missing; it has
JavaScript search) on 127.0.0.1, and runs one list of agent intentions through each
server, each done the cheapest way that server's tools allow:

    open      start, at the index page
    look      a first look at the page, enough to find the link to follow
    follow    click that link; the answer must say where it landed
    search    find the search box, type the query and submit, wait for the results
    results   find the result link for the page wanted
    open_hit  click it
    read      find one passage on that page
    shot      a screenshot
    back      go back to the results
    logs      console errors and the network log
    second    a second, isolated session, in parallel, reading another page

The admin task runs an application with a login and forms, Django's admin (Django from
PyPI, installed into its own folder; scripts/admin_site.py), each step checked in the
application's own database: log in, find a user by searching the list, add a user, edit
their names, a checkbox and a group in a multi-select, filter the list and read a count,
create a group with three of its many permissions, delete a user through an action and its
confirmation page, read the recent actions, log out.

The spa task runs a single-page application, optuna-dashboard (a React application from
PyPI, installed with optuna into a virtual environment of its own; scripts/spa_site.py),
over an SQLite storage seeded with two studies, each step checked in that storage: read the
study list, create a study in a dialog (its direction from a listbox that is not a
<select>), open a study (a History API route change), read its best trial, open the trials
view and read its count, write the best trial's note in its editor, go back within the
application, delete the new study from the list (one of three "delete study" twins) through
its confirmation dialog.

The tracker task runs an issue tracker, Roundup (from PyPI, installed into its own folder;
scripts/tracker_site.py, served by its WSGI application), seeded with users and bugs, each step
checked in the tracker's own databases: log in (two fields and a "Remember me?" checkbox),
report a bug on a form whose selects have no name (each comes after the help link or the plain
text that captions it) with a multi-select, naming on its nosy list a user who has no account,
so that the tracker refuses the form; read why, mend that field and submit again; find the bug
with the tracker's search and read it back from its page; change its status with a comment;
log out.

The notebook task runs a notebook IDE, JupyterLab with a Python kernel (from PyPI, installed
into a virtual environment of its own; scripts/notebook_site.py), whose background never stops
(the kernel's WebSocket, polls, timers), each step checked in the folder it serves: open the
application, make a notebook from the launcher, type a code cell, run it and read its output, make
the next cell Markdown, type and render it, rename the notebook through the File menu and its
dialog, save it with Control+s (the file on disk holds both cells and the output), open a text
file from the file browser and read it.

The webmcp task runs a shop's order page of our own (scripts/webmcp_site.py, a threaded HTTP
server on 127.0.0.1) that registers three page tools (WebMCP): search_products (read-only),
add_to_cart and checkout, each step checked in the shop's own state: open the page, discover its
tools (no call on either side: ours names them in its load's answer, pageTools, and page_tools
joins its tools/list; theirs grows them into its tools/list as webmcp_*), search, add to the cart, check out, read
the pickup code the page shows. @playwright/mcp runs with a --config that launches Chromium with
--enable-features=WebMCP: its WebMCP is on by default, but without the feature it finds no tools.

@playwright/mcp is installed from npm into a temporary folder and run with --headless --isolated on
the same Chromium. It has one browser context per server, so its second session is a second server.
Characters are those of the tools' text content (what a client hands its model); images are counted
in bytes. The model-visible tools/list (names, descriptions, input schemas) is counted beside the
answers, and "all in" is both, the list counted once, as it stands before the first call. A model
reads the list on every turn, and in the webmcp task it grows (ours once a load found the page's
tools, which turns page_tools on; theirs after the page's tools arrive), so every task also reads
tools/list before every call (those reads are not counted as calls nor in a step's ms; the wall
time holds them) and reports the sum,
tools_list_turns_chars, and all_in_turns_chars, the answers plus that sum: what a model reads over
the whole task, the figure issue 74's target (0.4x) is held to. The server's instructions
(initialize), which a client may hand its model too, are reported beside them and counted in none.
Speed is measured, not asserted; the test suite runs this script on a tiny local site (--site), on
Django's admin and on the webmcp task (ours only) so that it cannot rot.

    .venv/bin/python scripts/agent_bench.py [--task docs|admin|spa|tracker|notebook|data|webmcp|all] [--json]
        [--site DIR] [--ours-only]

AGENT_BENCH_SHOW=1 prints every answer to stderr, to see where the characters go.
"""

import argparse
import asyncio
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import AsyncExitStack
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from admin_site import PASSWORD, USERNAME, AdminSite, query  # noqa: E402
from bench import QuietHandler, install_playwright_mcp, pwmcp_params  # noqa: E402
from data_site import DataSite  # noqa: E402
from notebook_site import README, NotebookSite  # noqa: E402
from spa_site import SpaSite  # noqa: E402
from tracker_site import TrackerSite  # noqa: E402
from webmcp_site import WebMcpSite  # noqa: E402

from mcpbrowser.core.browser_process import find_executable  # noqa: E402

SPHINX_DOC = "/usr/share/doc/sphinx-doc/html"
# What the task looks for on Sphinx's manual. A site passed with --site brings its own
# agent_task.json with the same keys (the smoke test's tiny site does).
SPHINX_TASK = {
    "start": "index.html",
    "start_title": "Sphinx",
    "follow": "Using Sphinx",
    "landed": "usage/index.html",
    "search_box": "Quick search",
    "query": "autodoc",
    "results_done": "Search finished",
    "hit": "sphinx.ext.autodoc",
    "hit_url": "autodoc.html",
    "passage": "autodoc_mock_imports",
    "second": "glossary.html",
    "second_find": "environment",
}
PLAYWRIGHT_MCP_VERSION = "0.0.86"
NO_PLAYWRIGHT_MCP = 3  # exit code: @playwright/mcp could not be installed
NO_DJANGO = 4  # exit code: Django (the admin task's application) could not be installed
NO_SPA = 5  # exit code: optuna-dashboard (the spa task's application) could not be installed
NO_TRACKER = 6  # exit code: Roundup (the tracker task's application) could not be installed
NO_NOTEBOOK = 7  # exit code: JupyterLab (the notebook task's application) could not be installed
NO_DATA = 8  # exit code: SQLAdmin (the data task's application) could not be installed
STEPS = ("open", "look", "follow", "search", "results", "open_hit", "read", "shot", "back", "logs", "second")
SHOW = os.environ.get("AGENT_BENCH_SHOW") == "1"  # print every answer to stderr, to see what costs
# ours/theirs at most: the answers, the tool list a model reads, and both together, with the list once and
# at every turn (issue 74's 0.4x); calls: at most theirs
TARGETS = {"chars": 0.5, "tools_list_chars": 0.5, "all_in_chars": 0.4, "all_in_turns_chars": 0.4}


class StepFailed(Exception):
    pass


class Meter:
    """Counts what one server's answers cost, per step."""

    def __init__(self, steps=STEPS):
        self.steps = {name: {"chars": 0, "image_bytes": 0, "calls": 0, "ms": 0.0, "ok": False} for name in steps}
        self.step = None
        self.turn_lists: list[int] = []  # tools/list before every call, as it stands at that turn (uncounted calls)

    async def call(self, session, tool, args, step=None):
        self.turn_lists.append(model_list_chars(await session.list_tools()))
        started = time.perf_counter()
        result = await session.call_tool(tool, args)
        row = self.steps[step or self.step]
        row["ms"] += (time.perf_counter() - started) * 1000
        row["calls"] += 1
        text = "\n".join(c.text for c in result.content if c.type == "text")
        row["chars"] += len(text)
        row["image_bytes"] += sum(len(base64.b64decode(c.data)) for c in result.content if c.type == "image")
        if SHOW:
            print(f"----- {step or self.step}: {tool} {json.dumps(args)}\n{text}", file=sys.stderr)
        if result.is_error:
            raise StepFailed(f"{tool} failed: {text[:300]}")
        return text


def model_list_chars(listed):
    """What a client hands its model of tools/list: each tool's name, description and input schema
    (json.dumps' default separators)."""
    tools = [t.model_dump(by_alias=True, exclude_none=True) for t in listed.tools]
    return len(json.dumps([{k: t[k] for k in ("name", "description", "inputSchema")} for t in tools]))


def answer(text):
    """The JSON that opens one of our answers (page text may follow it, as a block of its own)."""
    return json.JSONDecoder().raw_decode(text)[0]


def ref_of(text, name, role="", before=False):
    """The ref on the first snapshot line (of that role) that names `name`; both servers write [ref=…].

    before: `name` is on a line of its own (a link's /url), and the ref is the nearest one above it.
    """
    lines = text.splitlines()
    for at, line in enumerate(lines):
        if before and name in line:
            for above in reversed(lines[:at]):
                if "[ref=" in above:
                    return above.split("[ref=", 1)[1].split("]", 1)[0]
        if not before and name.lower() in line.lower() and "[ref=" in line and (
                f"- {role}" in line or f"- '{role}" in line):  # YAML quotes a line that holds ": "
            return line.split("[ref=", 1)[1].split("]", 1)[0]
    raise StepFailed(f"no ref for {name!r} in: {text[:300]}")


def ref_in_row(text, row_has, name):
    """The ref of the control `name` that our query lists under the row (`- row [ref=…]: Groups | Add`) holding
    `row_has`: a match in a table comes with its row, the row's links listed under it."""
    lines = text.splitlines()
    for at, line in enumerate(lines):
        if line.lstrip().startswith("- row") and row_has in line:
            depth = len(line) - len(line.lstrip())
            for below in lines[at + 1:]:
                if len(below) - len(below.lstrip()) <= depth:
                    break
                if name in below and "[ref=" in below:
                    return below.split("[ref=", 1)[1].split("]", 1)[0]
    raise StepFailed(f"no {name} in a row of {row_has!r} in: {text[:300]}")


def expect(condition, what):
    if not condition:
        raise StepFailed(what)


# -- mcpbrowser ---------------------------------------------------------------------------

async def ours_task(meter, sessions, base, task):
    s, second_s = sessions
    m = meter.call

    async def first():
        meter.step = "open"
        opened = answer(await m(s, "create_session", {"url": base + task["start"]}))
        sid = opened["sessionId"]
        expect(task["start_title"] in opened.get("title", ""), f"open: {opened}")
        meter.step = "look"
        look = await m(s, "snapshot", {"sessionId": sid, "compact": True})
        meter.step = "follow"
        got = answer(await m(s, "click", {"sessionId": sid, "ref": ref_of(look, task["follow"], "link")}))
        expect(task["landed"] in got.get("url", ""), f"follow landed at {got.get('url')}")
        meter.step = "search"
        box = await m(s, "snapshot", {"sessionId": sid, "query": task["search_box"]})
        await m(s, "type", {"sessionId": sid, "ref": ref_of(box, task["search_box"], "textbox"), "text": task["query"],
                            "submit": True})
        await m(s, "wait_for", {"sessionId": sid, "text": task["results_done"]})
        meter.step = "results"
        hits = await m(s, "snapshot", {"sessionId": sid, "query": task["hit"]})
        meter.step = "open_hit"
        got = answer(await m(s, "click", {"sessionId": sid, "ref": ref_of(hits, task["hit"], "link")}))
        expect(task["hit_url"] in got.get("url", ""), f"open_hit landed at {got.get('url')}")
        meter.step = "read"
        passage = answer(await m(s, "get_content", {"ref_id": got["refId"], "search_for": task["passage"]}))
        expect(passage["matches"] > 0, "read: passage not found")
        meter.step = "shot"
        await m(s, "screenshot", {"sessionId": sid})
        meter.step = "back"
        got = answer(await m(s, "go_back", {"sessionId": sid}))
        expect("search" in got["url"], f"back at {got['url']}")
        meter.step = "logs"
        await m(s, "console_logs", {"sessionId": sid, "level": "error"})
        await m(s, "network_logs", {"sessionId": sid})

    async def second():
        m2 = partial(m, step="second")
        got = answer(await m2(second_s, "create_session", {"url": base + task["second"]}))
        found = await m2(second_s, "get_content", {"ref_id": got["pageRefId"], "search_for": task["second_find"]})
        expect(answer(found)["matches"] > 0, "second: nothing found")

    await run_task(meter, first, second)


# -- @playwright/mcp ----------------------------------------------------------------------

async def theirs_task(meter, sessions, base, task):
    s, second_s = sessions
    m = meter.call

    async def first():
        meter.step = "open"
        answer = await m(s, "browser_navigate", {"url": base + task["start"]})
        expect(task["start_title"] in answer, f"open: {answer[:300]}")
        meter.step = "look"
        # Its cheapest first look: the shallowest snapshot that shows the link to follow,
        # found beforehand (the probes are not counted: an agent would pick one depth).
        for depth in range(2, 30):
            probe = await s.call_tool("browser_snapshot", {"depth": depth})
            if task["follow"] in probe.content[0].text:
                break
        look = await m(s, "browser_snapshot", {"depth": depth})
        meter.step = "follow"
        answer = await m(s, "browser_click", {"element": task["follow"],
                                              "target": ref_of(look, task["follow"], "link")})
        expect(task["landed"] in answer, f"follow: {answer[:300]}")
        meter.step = "search"
        box = await m(s, "browser_find", {"text": task["search_box"]})
        await m(s, "browser_type", {"element": task["search_box"], "target": ref_of(box, task["search_box"], "textbox"),
                                    "text": task["query"], "submit": True})
        await m(s, "browser_wait_for", {"text": task["results_done"]})
        meter.step = "results"
        hits = await m(s, "browser_find", {"text": task["hit"]})
        meter.step = "open_hit"
        answer = await m(s, "browser_click", {"element": task["hit"], "target": ref_of(hits, task["hit"], "link")})
        expect(task["hit_url"] in answer, f"open_hit: {answer[:300]}")
        meter.step = "read"
        passage = await m(s, "browser_find", {"text": task["passage"]})
        expect(task["passage"] in passage, "read: passage not found")
        meter.step = "shot"
        await m(s, "browser_take_screenshot", {})
        meter.step = "back"
        answer = await m(s, "browser_navigate_back", {})
        expect("search" in answer, f"back: {answer[:300]}")
        meter.step = "logs"
        await m(s, "browser_console_messages", {"level": "error"})
        await m(s, "browser_network_requests", {})

    async def second():
        m2 = partial(m, step="second")
        await m2(second_s, "browser_navigate", {"url": base + task["second"]})
        found = await m2(second_s, "browser_find", {"text": task["second_find"]})
        expect(task["second_find"].lower() in found.lower(), "second: nothing found")

    await run_task(meter, first, second)


async def run_task(meter, first, second):
    """The first session's steps, with the second session's running alongside."""
    started = time.perf_counter()
    await asyncio.gather(first(), second())
    finished(meter, started)


def finished(meter, started):
    """Every step passed its check: mark them, and the task's wall time."""
    for row in meter.steps.values():
        row["ok"] = True
    meter.wall_ms = (time.perf_counter() - started) * 1000


# -- the admin task: Django's admin, a real application with a login and forms ------------
# Each step as an agent does it on an application it has not seen: find the controls it needs
# by reading the page (the cheapest read each server offers), act, and check where it landed.
# Every step is then verified from the application's own database (admin_site.query).

ADMIN_STEPS = ("login", "find", "add", "edit", "count", "group", "delete", "recent", "logout")
NEW_USER = {"username": "alice", "password": "Wonder-land-42", "first": "Alice", "last": "Liddell"}
PERMISSIONS = ("Authentication and Authorization | user | Can view user",
               "Authentication and Authorization | user | Can change user",
               "Authentication and Authorization | group | Can view group")
DELETED = "user05"


def admin_checks(db):
    """What the application's database must show after each step (read outside both servers)."""
    return {
        "login": lambda: query(db, "SELECT count(*) FROM django_session")[0][0] >= 1,
        "add": lambda: query(db, "SELECT count(*) FROM auth_user WHERE username = ?",
                             (NEW_USER["username"],))[0][0] == 1,
        "edit": lambda: query(db, "SELECT u.first_name, u.last_name, u.is_staff, g.name FROM auth_user u "
                                  "JOIN auth_user_groups ug ON ug.user_id = u.id "
                                  "JOIN auth_group g ON g.id = ug.group_id WHERE u.username = ?",
                              (NEW_USER["username"],))
        == [(NEW_USER["first"], NEW_USER["last"], 1, "Editors")],
        "group": lambda: sorted(r[0] for r in query(
            db, "SELECT p.name FROM auth_group g JOIN auth_group_permissions gp ON gp.group_id = g.id "
                "JOIN auth_permission p ON p.id = gp.permission_id WHERE g.name = 'Auditors'"))
        == sorted(p.rsplit(" | ", 1)[1] for p in PERMISSIONS),
        "delete": lambda: query(db, "SELECT count(*) FROM auth_user WHERE username = ?", (DELETED,))[0][0] == 0,
        "logout": lambda: query(db, "SELECT count(*) FROM django_session")[0][0] == 0,
    }


def staff_count(db):
    return query(db, "SELECT count(*) FROM auth_user WHERE is_staff = 1")[0][0]


async def ours_admin(meter, sessions, base, task):
    s, m = sessions[0], meter.call
    checks, started = admin_checks(task["db"]), time.perf_counter()

    async def read(sid, query_text):
        return await m(s, "snapshot", {"sessionId": sid, "query": query_text})

    async def act(sid, tool, **args):
        return answer(await m(s, tool, {"sessionId": sid, **args}))

    meter.step = "login"
    sid = answer(await m(s, "create_session", {"url": base + "/admin/"}))["sessionId"]
    form = await read(sid, "Username|Password|Log in")
    await act(sid, "fill_form", fields=[{"ref": ref_of(form, "Username", "textbox"), "value": USERNAME},
                                         {"ref": ref_of(form, "Password", "textbox"), "value": PASSWORD}])
    got = await act(sid, "click", ref=ref_of(form, "Log in", "button"))
    expect("Site administration" in got["title"] and checks["login"](), f"login: {got['title']}")

    meter.step = "find"
    users = await read(sid, "Users")
    await act(sid, "click", ref=ref_of(users, "Users", "link"))
    search = await read(sid, "Search")
    await act(sid, "type", ref=ref_of(search, "Search", "textbox"), text="user17", submit=True)
    found = await read(sid, "user17|result|Add user")
    expect('link "user17"' in found and "1 result" in found, f"find: {found[:300]}")

    meter.step = "add"
    await act(sid, "click", ref=ref_of(found, "Add user", "link"))
    form = await read(sid, "Username|Password|Save")
    await act(sid, "fill_form", fields=[
        {"ref": ref_of(form, "Username", "textbox"), "value": NEW_USER["username"]},
        {"ref": ref_of(form, '"Password:"', "textbox"), "value": NEW_USER["password"]},
        {"ref": ref_of(form, "Password confirmation", "textbox"), "value": NEW_USER["password"]}])
    got = await act(sid, "click", ref=ref_of(form, '"Save"', "button"))
    expect("/change/" in got["url"] and checks["add"](), f"add: {got['url']}")

    meter.step = "edit"
    form = await read(sid, "First name|Last name|Staff status|Available groups|Choose|Save")
    await act(sid, "fill_form", fields=[
        {"ref": ref_of(form, "First name", "textbox"), "value": NEW_USER["first"]},
        {"ref": ref_of(form, "Last name", "textbox"), "value": NEW_USER["last"]},
        {"ref": ref_of(form, "Staff status", "checkbox"), "value": True},
        {"ref": ref_of(form, "Available groups", "listbox"), "value": "Editors"}])
    await act(sid, "click", ref=ref_of(form, "Choose selected groups", "button"))
    got = await act(sid, "click", ref=ref_of(form, '"Save"', "button"))
    expect("/admin/auth/user/" in got["url"] and checks["edit"](), f"edit: {got['url']}")

    meter.step = "count"  # the whole list (the search is still on), then its staff filter
    users = await read(sid, "Users")
    await act(sid, "click", ref=ref_of(users, '"Users"', "link"))
    yes = await read(sid, "Yes")
    await act(sid, "click", ref=ref_of(yes, "staff status", "link"))
    # One read for the count and the next step's "Add" link (beside Groups in the sidebar): a term each.
    counted = await read(sid, "result|users|^add$")
    expect(f"{staff_count(task['db'])} result" in counted, f"count: {counted[:300]}")

    meter.step = "group"
    await act(sid, "click", ref=ref_in_row(counted, "Groups", 'link "Add"'))
    form = await read(sid, "Name|Available permissions|Choose|Save")
    await act(sid, "type", ref=ref_of(form, "Name", "textbox"), text="Auditors")
    await act(sid, "select", ref=ref_of(form, "Available permissions", "listbox"), labels=list(PERMISSIONS))
    await act(sid, "click", ref=ref_of(form, "Choose selected permissions", "button"))
    got = await act(sid, "click", ref=ref_of(form, '"Save"', "button"))
    expect(checks["group"](), f"group: {got['url']}")

    meter.step = "delete"
    users = await read(sid, "Users")
    await act(sid, "click", ref=ref_of(users, '"Users"', "link"))
    rows = await read(sid, f"{DELETED}|Action:|Go")
    await act(sid, "fill_form", fields=[
        {"ref": ref_of(rows, f"action - {DELETED}", "checkbox"), "value": True},
        {"ref": ref_of(rows, "Action", "combobox"), "value": "Delete selected users"}])
    await act(sid, "click", ref=ref_of(rows, '"Go"', "button"))
    sure = await read(sid, "sure")
    got = await act(sid, "click", ref=ref_of(sure, "sure", "button"))
    expect(checks["delete"](), f"delete: {got['url']}")

    meter.step = "recent"  # one read for the deleted user in the recent actions and the Log out button
    home = await read(sid, "Home")
    await act(sid, "click", ref=ref_of(home, "Home", "link"))
    recent = await read(sid, f"{DELETED}|log out")
    expect("Deleted:" in recent and DELETED in recent, f"recent: {recent[:300]}")

    meter.step = "logout"
    got = await act(sid, "click", ref=ref_of(recent, "Log out", "button"))
    expect(checks["logout"](), f"logout: {got['title']}")
    await m(s, "close_session", {"sessionId": sid})
    finished(meter, started)


async def theirs_admin(meter, sessions, base, task):
    """The same steps with @playwright/mcp's tools: browser_find (a regular expression) to read,
    browser_fill_form, browser_select_option and browser_click to act; each action's answer
    carries what changed on the page, which its next step reads refs from when it can."""
    s, m = sessions[0], meter.call
    checks, started = admin_checks(task["db"]), time.perf_counter()

    async def find(pattern):
        return await m(s, "browser_find", {"regex": f"/{pattern}/i"})

    async def click(text, name, role=""):
        return await m(s, "browser_click", {"element": name, "target": ref_of(text, name, role)})

    meter.step = "login"
    await m(s, "browser_navigate", {"url": base + "/admin/"})
    form = await find("Username|Password|Log in")
    await m(s, "browser_fill_form", {"fields": [
        {"name": "Username", "type": "textbox", "target": ref_of(form, "Username", "textbox"), "value": USERNAME},
        {"name": "Password", "type": "textbox", "target": ref_of(form, "Password", "textbox"), "value": PASSWORD}]})
    got = await click(form, "Log in")
    expect("Site administration" in got and checks["login"](), f"login: {got[:300]}")

    meter.step = "find"
    users = await find("Users")
    # The link: 0.0.86's browser_find shows its row's rowheader "Users" first, and a click on that cell misses it.
    await click(users, '"Users"', "link")
    search = await find("Search")
    await m(s, "browser_type", {"element": "Search", "target": ref_of(search, "Search", "textbox"), "text": "user17",
                                "submit": True})
    found = await find("user17|result|Add user")
    expect('link "user17"' in found and "1 result" in found, f"find: {found[:300]}")

    meter.step = "add"
    await click(found, "Add user")
    form = await find("Username|Password|Save")
    await m(s, "browser_fill_form", {"fields": [
        {"name": "Username", "type": "textbox", "target": ref_of(form, "Username", "textbox"),
         "value": NEW_USER["username"]},
        {"name": "Password", "type": "textbox", "target": ref_of(form, '"Password:"', "textbox"),
         "value": NEW_USER["password"]},
        {"name": "Password confirmation", "type": "textbox", "target": ref_of(form, "Password confirmation", "textbox"),
         "value": NEW_USER["password"]}]})
    got = await click(form, '"Save"')
    expect("/change/" in got and checks["add"](), f"add: {got[:300]}")

    meter.step = "edit"
    form = await find("First name|Last name|Staff status|Available groups|Choose|Save")
    await m(s, "browser_fill_form", {"fields": [
        {"name": "First name", "type": "textbox", "target": ref_of(form, "First name", "textbox"),
         "value": NEW_USER["first"]},
        {"name": "Last name", "type": "textbox", "target": ref_of(form, "Last name", "textbox"),
         "value": NEW_USER["last"]},
        {"name": "Staff status", "type": "checkbox", "target": ref_of(form, "Staff status", "checkbox"),
         "value": "true"}]})
    await m(s, "browser_select_option", {"element": "Available groups",
                                         "target": ref_of(form, "Available groups", "listbox"), "values": ["Editors"]})
    await click(form, "Choose selected groups")
    got = await click(form, '"Save"')
    expect(checks["edit"](), f"edit: {got[:300]}")

    meter.step = "count"  # the whole list (the search is still on), then its staff filter
    users = await find("Users")
    await click(users, '"Users"', "link")
    yes = await find("Yes")
    await m(s, "browser_click", {"element": "Yes", "target": ref_of(yes, "is_staff__exact=1", before=True)})
    counted = await find("result|users")
    expect(f"{staff_count(task['db'])} result" in counted, f"count: {counted[:300]}")

    meter.step = "group"
    add = await find("Add")
    await m(s, "browser_click", {"element": "Add group", "target": ref_of(add, "/admin/auth/group/add/", before=True)})
    form = await find("Name|Available permissions|Choose|Save")
    await m(s, "browser_type", {"element": "Name", "target": ref_of(form, "Name", "textbox"), "text": "Auditors"})
    await m(s, "browser_select_option", {"element": "Available permissions",
                                         "target": ref_of(form, "Available permissions", "listbox"),
                                         "values": list(PERMISSIONS)})
    await click(form, "Choose selected permissions")
    got = await click(form, '"Save"')
    expect(checks["group"](), f"group: {got[:300]}")

    meter.step = "delete"
    users = await find("Users")
    await click(users, '"Users"', "link")
    rows = await find(f"{DELETED}|Action:|Go")
    await m(s, "browser_fill_form", {"fields": [
        {"name": DELETED, "type": "checkbox", "target": ref_of(rows, f"action - {DELETED}", "checkbox"),
         "value": "true"},
        {"name": "Action", "type": "combobox", "target": ref_of(rows, "Action", "combobox"),
         "value": "Delete selected users"}]})
    await click(rows, '"Go"')
    sure = await find("sure")
    got = await m(s, "browser_click", {"element": "Yes, I'm sure", "target": ref_of(sure, "sure", "button")})
    expect(checks["delete"](), f"delete: {got[:300]}")

    meter.step = "recent"
    home = await find("Home")
    await click(home, "Home")
    recent = await find(DELETED)
    expect("Deleted" in recent and DELETED in recent, f"recent: {recent[:300]}")

    meter.step = "logout"
    out = await find("Log out")
    await click(out, "Log out")
    expect(checks["logout"](), "logout: the session is still in the database")
    await m(s, "browser_close", {})
    finished(meter, started)


# -- the spa task: optuna-dashboard, a real single-page application ----------------------
# A React application that routes with the History API and builds each view from JSON
# requests after a click: the first document never unloads. Each step as an agent does it
# on an application it has not seen, each checked in the application's own storage (the
# SQLite file optuna writes, read with sqlite3 outside both servers; spa_site.py).

SPA_STEPS = ("open", "create", "open_study", "best", "trials", "note", "back", "delete")
NEW_STUDY = "bench-spa"
NOTE = "Best so far: keep x near 1.4"


def spa_checks(db):
    """What the application's storage must show (read outside both servers)."""
    def study(name):
        rows = query(db, "SELECT s.study_id, d.direction FROM studies s JOIN study_directions d "
                         "ON d.study_id = s.study_id WHERE s.study_name = ?", (name,))
        return rows[0] if rows else None

    def best():  # the quadratic study minimises: its best trial, (number, value)
        return query(db, "SELECT t.number, v.value FROM trials t JOIN trial_values v ON v.trial_id = t.trial_id "
                         "JOIN studies s ON s.study_id = t.study_id WHERE s.study_name = 'quadratic' "
                         "AND t.state = 'COMPLETE' ORDER BY v.value LIMIT 1")[0]

    def note_of_best():
        number = best()[0]
        trial_id = query(db, "SELECT t.trial_id FROM trials t JOIN studies s ON s.study_id = t.study_id "
                             "WHERE s.study_name = 'quadratic' AND t.number = ?", (number,))[0][0]
        rows = query(db, "SELECT value_json FROM study_system_attributes WHERE key LIKE ? ORDER BY key",
                     (f"dashboard:{trial_id}:note_str:%",))
        return "".join(json.loads(r[0]) for r in rows)

    return {
        "names": lambda: [r[0] for r in query(db, "SELECT study_name FROM studies ORDER BY study_id")],
        "study": study, "best": best, "note": note_of_best,
        "trials": lambda: query(db, "SELECT count(*) FROM trials t JOIN studies s ON s.study_id = t.study_id "
                                    "WHERE s.study_name = 'quadratic'")[0][0],
    }


def ref_after(text, above, role):
    """The ref of the first `role` line below the line that holds `above` (a nameless icon button)."""
    lines = text.splitlines()
    for at, line in enumerate(lines):
        if above in line:
            for below in lines[at + 1:]:
                if f"- {role}" in below and "[ref=" in below:
                    return below.split("[ref=", 1)[1].split("]", 1)[0]
    raise StepFailed(f"no {role} below {above!r} in: {text[:300]}")


def target_of(text, name, role):
    """@playwright/mcp's target: the ref on the line `role "name"`; when its snapshot shows the control
    without a name (it does so for many of this application's buttons, whose name is their text),
    a selector by role and name, which its tools take as well, so no further read is paid."""
    for line in text.splitlines():
        if (f'- {role} "{name}' in line or f"- '{role} \"{name}" in line) and "[ref=" in line:
            return line.split("[ref=", 1)[1].split("]", 1)[0]
    return f'role={role}[name="{name}"]'


async def theirs_spa(meter, sessions, base, task):
    """The same steps with @playwright/mcp's tools: browser_find (a regular expression) to read,
    browser_click and browser_type to act, browser_navigate_back. Where its snapshot shows a
    control without its name, the agent acts by a role-and-name selector (see target_of)."""
    s, m = sessions[0], meter.call
    check, started = spa_checks(task["db"]), time.perf_counter()

    async def find(pattern):
        return await m(s, "browser_find", {"regex": f"/{pattern}/i"})

    async def click(text, name, role):
        return await m(s, "browser_click", {"element": name, "target": target_of(text, name, role)})

    meter.step = "open"
    await m(s, "browser_navigate", {"url": base + "/dashboard"})
    studies = await find("Direction|Create")
    expect(all(name in studies for name in check["names"]()), f"open: {studies[:300]}")

    meter.step = "create"
    await click(studies, "Create", "button")
    form = await find("Study name|Minimize|Create")
    await m(s, "browser_type", {"element": "Study name", "target": target_of(form, "Study name", "textbox"),
                                "text": NEW_STUDY})
    await m(s, "browser_click", {"element": "Objective direction", "target": ref_of(form, "Minimize", "combobox")})
    options = await find("Maximize")
    await click(options, "Maximize", "option")
    enabled = await find("Create")
    await click(enabled, "Create", "button")
    expect(check["study"](NEW_STUDY) is not None and check["study"](NEW_STUDY)[1] == "MAXIMIZE",
           f"create: {check['study'](NEW_STUDY)}")

    meter.step = "open_study"
    studies = await find("quadratic")
    got = await m(s, "browser_click", {"element": "quadratic", "target": ref_of(studies, "quadratic", "link")})
    study_id = check["study"]("quadratic")[0]
    expect(f"/dashboard/studies/{study_id}" in got, f"open_study: {got[:300]}")

    meter.step = "best"
    best = await find("Best Trial|Trials \\(List\\)")
    number, value = check["best"]()
    expect(f"Best Trial (number={number})" in best and str(value) in best, f"best: {best[:300]}")

    meter.step = "trials"
    await click(best, "Trials (List)", "link")
    trials = await find("Trials|Best Trial")
    expect(f"{check['trials']()} Trials" in trials, f"trials: {trials[:300]}")

    meter.step = "note"
    await m(s, "browser_click", {"element": "Trial 11", "target": ref_of(trials, "Best Trial", "button")})
    heading = await find("Note")
    await m(s, "browser_click", {"element": "Edit note", "target": ref_after(heading, 'heading "Note"', "button")})
    editor = await find("Markdown|Save")
    await m(s, "browser_type", {"element": "Note", "target": ref_of(editor, "Markdown", "textbox"), "text": NOTE})
    save = await find("Save")
    await click(save, "Save", "button")
    expect(check["note"]() == NOTE, f"note: {check['note']()!r}")

    meter.step = "back"
    got = await m(s, "browser_navigate_back", {})
    expect(f"/dashboard/studies/{study_id}/trials\n" in got, f"back: {got[:300]}")

    meter.step = "delete"
    top = await find("Return to the top page")
    await click(top, "Return to the top page", "link")
    studies = await find("delete study")
    await m(s, "browser_click", {"element": "delete study",
                                 "target": ref_after(studies, NEW_STUDY, 'button "delete study"')})
    sure = await find("sure|Yes")
    await click(sure, "Yes", "button")
    expect(check["study"](NEW_STUDY) is None, "delete: the study is still in the storage")
    await m(s, "browser_close", {})
    finished(meter, started)


async def ours_spa(meter, sessions, base, task):
    """Read with `snapshot {query}` (a heading's ref reads its section), act by ref; each
    action answers once the view it opened is built, with urlChanged for a route change."""
    s, m = sessions[0], meter.call
    check, started = spa_checks(task["db"]), time.perf_counter()

    async def read(sid, query_text=None, ref=None):
        return await m(s, "snapshot", {"sessionId": sid, **({"ref": ref} if ref else {"query": query_text})})

    async def act(sid, tool, **args):
        return answer(await m(s, tool, {"sessionId": sid, **args}))

    meter.step = "open"  # the list of studies
    sid = answer(await m(s, "create_session", {"url": base + "/dashboard"}))["sessionId"]
    studies = await read(sid, "Direction|Create")
    if "Direction" not in studies:  # the list's own request still out (a loaded machine): as an agent would, again
        studies = await read(sid, "Direction|Create")
    expect(all(name in studies for name in check["names"]()), f"open: {studies[:300]}")

    meter.step = "create"  # a dialog built after the click, and a listbox that is not a <select>
    await act(sid, "click", ref=ref_of(studies, "Create", "button"))
    form = await read(sid, "Study name|Minimize|Create")
    await act(sid, "type", ref=ref_of(form, "Study name", "textbox"), text=NEW_STUDY)
    await act(sid, "click", ref=ref_of(form, "Minimize", "combobox"))
    options = await read(sid, "Maximize")
    await act(sid, "click", ref=ref_of(options, "Maximize", "option"))
    enabled = await read(sid, "Create")  # the dialog's Create button has a ref once it is enabled
    await act(sid, "click", ref=ref_of(enabled, '"Create"', "button"))
    expect(check["study"](NEW_STUDY) is not None and check["study"](NEW_STUDY)[1] == "MAXIMIZE",
           f"create: {check['study'](NEW_STUDY)}")

    meter.step = "open_study"  # a History API route change: the same document, a new URL
    studies = await read(sid, "quadratic")
    got = await act(sid, "click", ref=ref_of(studies, "quadratic", "link"))
    study_id = check["study"]("quadratic")[0]
    expect(got["url"].endswith(f"/dashboard/studies/{study_id}") and got.get("urlChanged")
           and not got["navigated"], f"open_study: {got}")

    meter.step = "best"  # the history view's best trial, built from a request
    best = await read(sid, "Best Trial|Trials (List)")  # a matched heading brings the first lines it titles
    number, value = check["best"]()
    expect(f"Best Trial (number={number})" in best and str(value) in best, f"best: {best[:300]}")

    meter.step = "trials"  # another view, and its count
    got = await act(sid, "click", ref=ref_of(best, "Trials (List)", "link"))
    trials = await read(sid, "Trials|Best Trial")
    expect(f"{check['trials']()} Trials" in trials, f"trials: {trials[:300]}")

    meter.step = "note"  # the best trial's note, through its editor (an icon button without a name)
    await act(sid, "click", ref=ref_of(trials, "Best Trial", "button"))
    heading = await read(sid, "Note")  # the heading comes with the nameless icon button beside it
    await act(sid, "click", ref=ref_after(heading, 'heading "Note"', "button"))
    editor = await read(sid, "Markdown|Save")
    await act(sid, "type", ref=ref_of(editor, "Markdown", "textbox"), text=NOTE)
    save = await read(sid, "Save")  # enabled, so with a ref, once the note has text
    await act(sid, "click", ref=ref_of(save, "Save", "button"))
    expect(check["note"]() == NOTE, f"note: {check['note']()!r}")

    meter.step = "back"  # back within the application: the route before the trial was opened
    got = await act(sid, "go_back")
    expect(got["url"].endswith(f"/dashboard/studies/{study_id}/trials"), f"back: {got}")

    meter.step = "delete"  # the study made in the first steps, from the list; a confirmation dialog
    top = await read(sid, "Return to the top page")
    await act(sid, "click", ref=ref_of(top, "Return to the top page", "link"))
    studies = await read(sid, "delete study")
    await act(sid, "click", ref=ref_of(studies, "delete study", "button"))
    sure = await read(sid, "sure|Yes")
    await act(sid, "click", ref=ref_of(sure, '"Yes"', "button"))
    expect(check["study"](NEW_STUDY) is None, "delete: the study is still in the storage")
    await m(s, "close_session", {"sessionId": sid})
    finished(meter, started)


# -- the tracker task: Roundup, an issue tracker with a login and forms -------------------
# Its bug form is a real one nobody tuned: selects named by nothing (their <label for> names
# another id), each after the help link that captions it, a multi-select, free-text fields, and a
# server-side check that refuses the form. Each step is checked in the tracker's own databases
# (tracker_site.py); the last read takes the data back from the application's own pages.

TRACKER_STEPS = ("login", "report", "recover", "find", "edit", "logout")
NEW_BUG = {"title": "Login form forgets the username after a failed attempt", "type": "behavior",
           "severity": "major", "component": "frontend", "assignee": "alice", "priority": "high",
           "nosy": "alice, jdoe",  # jdoe has no account: the tracker refuses the form, and says why
           "comment": "Steps: log in with a wrong password; the username field is empty again.",
           "search": "forgets the username", "status": "open", "note": "Reproduced on 1.4 with Chromium."}


def tracker_checks(home):
    """What the tracker's databases must show after each step (read outside both servers)."""
    db, sessions = os.path.join(home, "db", "db"), os.path.join(home, "db", "db-session")

    def bug():
        rows = query(db, "SELECT b.id, t._name, v._name, p._name, u._username, s._name FROM _bug b "
                         "LEFT JOIN _bug_type t ON t.id = b._type LEFT JOIN _severity v ON v.id = b._severity "
                         "LEFT JOIN _priority p ON p.id = b._priority LEFT JOIN _user u ON u.id = b._assignee "
                         "LEFT JOIN _status s ON s.id = b._status WHERE b._title = ?", (NEW_BUG["title"],))
        if not rows:
            return None
        number, *fields = rows[0]
        return {"id": number, "fields": tuple(fields),
                "components": [r[0] for r in query(db, "SELECT c._name FROM bug_components bc JOIN _component c "
                                                       "ON c.id = bc.linkid WHERE bc.nodeid = ?", (number,))],
                "nosy": sorted(r[0] for r in query(db, "SELECT u._username FROM bug_nosy n JOIN _user u "
                                                       "ON u.id = n.linkid WHERE n.nodeid = ?", (number,))),
                "messages": query(db, "SELECT count(*) FROM bug_messages WHERE nodeid = ?", (number,))[0][0]}

    def reported():
        got = bug()
        return got is not None and got["fields"][:4] == tuple(NEW_BUG[k] for k in ("type", "severity", "priority",
                                                                                  "assignee")) \
            and got["components"] == [NEW_BUG["component"]] and "alice" in got["nosy"] and got["messages"] == 1

    def logged_in():
        return any("'admin'" in r[0] for r in query(sessions, "SELECT session_value FROM sessions"))

    return {
        "login": logged_in,
        "refused": lambda: bug() is None,
        "reported": reported,
        "bug": bug,
        "edited": lambda: (bug() or {}).get("fields", ())[-1:] == (NEW_BUG["status"],) and bug()["messages"] == 2,
        "logout": lambda: not logged_in(),
    }


def read_back(text):
    """What the bug's page shows selected, and its nosy list: the data as the application shows it."""
    return all(f'option "{NEW_BUG[k]}" [selected]' in text for k in ("type", "severity", "priority", "assignee")) \
        and "alice" in text


async def ours_tracker(meter, sessions, base, task):
    """Read with `snapshot {query}`: the captions a form shows bring the unnamed controls beside
    them (snapshot_text._beside); act with fill_form, type and click."""
    s, m = sessions[0], meter.call
    checks, started = tracker_checks(task["home"]), time.perf_counter()

    async def read(sid, query_text=None, **args):
        return await m(s, "snapshot", {"sessionId": sid, **({"query": query_text} if query_text else args)})

    async def act(sid, tool, **args):
        return answer(await m(s, tool, {"sessionId": sid, **args}))

    meter.step = "login"  # the sidebar's login form: two placeholders and a "Remember me?" checkbox
    sid = answer(await m(s, "create_session", {"url": base + "/"}))["sessionId"]
    form = await read(sid, "Username|Password|Remember|Login")
    await act(sid, "fill_form", fields=[{"ref": ref_of(form, "Username", "textbox"), "value": USERNAME},
                                         {"ref": ref_of(form, "Password", "textbox"), "value": PASSWORD},
                                         {"ref": ref_of(form, "Remember me", "checkbox"), "value": True}])
    got = await act(sid, "click", ref=ref_of(form, "Login", "button"))
    expect("Welcome" in got["url"] and checks["login"](), f"login: {got['url']}")

    meter.step = "report"  # the bug form, filled whole; the tracker refuses it (jdoe has no account)
    new = await read(sid, "Create New")
    await act(sid, "click", ref=ref_of(new, "Create New", "link"))
    # One query for the form: a caption brings the unnamed select or box beside it.
    form = await read(sid, "Title|Type|Severity|Components|Assigned To|Nosy List|Priority|Comment|Submit")
    await act(sid, "fill_form", fields=[
        {"ref": ref_of(form, "Title", "textbox"), "value": NEW_BUG["title"]},
        {"ref": ref_after(form, 'link "Type"', "combobox"), "value": NEW_BUG["type"]},
        {"ref": ref_after(form, 'link "Severity"', "combobox"), "value": NEW_BUG["severity"]},
        {"ref": ref_after(form, 'link "Components"', "listbox"), "value": NEW_BUG["component"]},
        {"ref": ref_after(form, ": Assigned To", "combobox"), "value": NEW_BUG["assignee"]},
        {"ref": ref_of(form, "Nosy List", "textbox"), "value": NEW_BUG["nosy"]},
        {"ref": ref_after(form, 'link "Priority"', "combobox"), "value": NEW_BUG["priority"]},
        {"ref": ref_after(form, ": Comment", "textbox"), "value": NEW_BUG["comment"]}])
    got = await act(sid, "click", ref=ref_of(form, "Submit New Entry", "button"))
    expect(checks["refused"](), f"report: the tracker took the bug with an unknown nosy user: {got['url']}")

    meter.step = "recover"  # read why, mend the one field, submit again: the other fields were kept
    error = await read(sid, "error|Nosy List|Submit New Entry")
    expect("jdoe" in error and "is not a user" in error, f"recover: {error[:300]}")
    await act(sid, "type", ref=ref_of(error, "Nosy List", "textbox"), text="alice")
    got = await act(sid, "click", ref=ref_of(error, "Submit New Entry", "button"))
    expect(checks["reported"](), f"recover: {checks['bug']()} at {got['url']}")

    meter.step = "find"  # the application's own search, then the bug's page read back
    box = await read(sid, "search in open bugs")  # the unnamed box comes with its button
    await act(sid, "type", ref=ref_of(box, "", "textbox"), text=NEW_BUG["search"], submit=True)
    hits = await read(sid, NEW_BUG["search"])
    await act(sid, "click", ref=ref_of(hits, NEW_BUG["title"], "link"))
    shown = await read(sid, r"\[selected\]|Nosy List")
    expect(read_back(shown), f"find: {shown[:300]}")

    meter.step = "edit"  # status and a comment on the bug's page
    form = await read(sid, "Status|Comment|Submit Changes")
    await act(sid, "fill_form", fields=[
        {"ref": ref_after(form, 'link "Status"', "combobox"), "value": NEW_BUG["status"]},
        {"ref": ref_after(form, ": Comment", "textbox"), "value": NEW_BUG["note"]}])
    got = await act(sid, "click", ref=ref_of(form, "Submit Changes", "button"))
    expect(checks["edited"](), f"edit: {checks['bug']()} at {got['url']}")

    meter.step = "logout"
    out = await read(sid, "Logout")
    await act(sid, "click", ref=ref_of(out, "Logout", "link"))
    expect(checks["logout"](), "logout: the session is still in the database")
    await m(s, "close_session", {"sessionId": sid})
    finished(meter, started)


async def theirs_tracker(meter, sessions, base, task):
    """The same steps with @playwright/mcp's tools: browser_find (a regular expression; it shows the
    lines around each match, so an unnamed select comes with the caption beside it) to read,
    browser_fill_form, browser_type and browser_click to act."""
    s, m = sessions[0], meter.call
    checks, started = tracker_checks(task["home"]), time.perf_counter()

    async def find(pattern):
        return await m(s, "browser_find", {"regex": f"/{pattern}/i"})

    def field(name, kind, target, value):
        return {"name": name, "type": kind, "target": target, "value": value}

    meter.step = "login"
    await m(s, "browser_navigate", {"url": base + "/"})
    form = await find("Username|Password|Remember|Login")
    await m(s, "browser_fill_form", {"fields": [
        field("Username", "textbox", ref_of(form, "Username", "textbox"), USERNAME),
        field("Password", "textbox", ref_of(form, "Password", "textbox"), PASSWORD),
        field("Remember me?", "checkbox", ref_of(form, "Remember me", "checkbox"), "true")]})
    got = await m(s, "browser_click", {"element": "Login", "target": ref_of(form, "Login", "button")})
    expect("Welcome" in got and checks["login"](), f"login: {got[:300]}")

    meter.step = "report"
    new = await find("Create New")
    await m(s, "browser_click", {"element": "Create New", "target": ref_of(new, "Create New", "link")})
    form = await find("Title|Type|Severity|Components|Assigned To|Nosy List|Priority|Comment|Submit")
    await m(s, "browser_fill_form", {"fields": [
        field("Title", "textbox", ref_of(form, "Title", "textbox"), NEW_BUG["title"]),
        field("Type", "combobox", ref_after(form, 'link "Type"', "combobox"), NEW_BUG["type"]),
        field("Severity", "combobox", ref_after(form, 'link "Severity"', "combobox"), NEW_BUG["severity"]),
        field("Assigned To", "combobox", ref_after(form, ": Assigned To", "combobox"), NEW_BUG["assignee"]),
        field("Nosy List", "textbox", ref_of(form, "Nosy List", "textbox"), NEW_BUG["nosy"]),
        field("Priority", "combobox", ref_after(form, 'link "Priority"', "combobox"), NEW_BUG["priority"]),
        field("Comment", "textbox", ref_after(form, ": Comment", "textbox"), NEW_BUG["comment"])]})
    # Its fill_form sets one option of a select; the multi-select takes browser_select_option.
    await m(s, "browser_select_option", {"element": "Components",
                                         "target": ref_after(form, 'link "Components"', "listbox"),
                                         "values": [NEW_BUG["component"]]})
    got = await m(s, "browser_click", {"element": "Submit New Entry",
                                       "target": ref_of(form, "Submit New Entry", "button")})
    expect(checks["refused"](), f"report: the tracker took the bug with an unknown nosy user: {got[:300]}")

    meter.step = "recover"
    error = await find("error|Nosy List|Submit New Entry")
    expect("jdoe" in error and "is not a user" in error, f"recover: {error[:300]}")
    await m(s, "browser_type", {"element": "Nosy List", "target": ref_of(error, "Nosy List", "textbox"),
                                "text": "alice"})
    got = await m(s, "browser_click", {"element": "Submit New Entry",
                                       "target": ref_of(error, "Submit New Entry", "button")})
    expect(checks["reported"](), f"recover: {checks['bug']()}: {got[:300]}")

    meter.step = "find"
    box = await find("search in open bugs")
    await m(s, "browser_type", {"element": "search", "target": ref_of(box, "", "textbox"),
                                "text": NEW_BUG["search"], "submit": True})
    hits = await find(NEW_BUG["search"])
    await m(s, "browser_click", {"element": NEW_BUG["title"], "target": ref_of(hits, NEW_BUG["title"], "link")})
    shown = await find(r"\[selected\]|Nosy List")
    expect(read_back(shown), f"find: {shown[:300]}")

    meter.step = "edit"
    form = await find("Status|Comment|Submit Changes")
    await m(s, "browser_fill_form", {"fields": [
        field("Status", "combobox", ref_after(form, 'link "Status"', "combobox"), NEW_BUG["status"]),
        field("Comment", "textbox", ref_after(form, ": Comment", "textbox"), NEW_BUG["note"])]})
    got = await m(s, "browser_click", {"element": "Submit Changes", "target": ref_of(form, "Submit Changes", "button")})
    expect(checks["edited"](), f"edit: {checks['bug']()}: {got[:300]}")

    meter.step = "logout"
    out = await find("Logout")
    await m(s, "browser_click", {"element": "Logout", "target": ref_of(out, "Logout", "link")})
    expect(checks["logout"](), "logout: the session is still in the database")
    await m(s, "browser_close", {})
    finished(meter, started)


# -- the notebook task: JupyterLab, a notebook IDE whose background never stops ---------------
# A kernel's status and output over a WebSocket, the sessions' and kernels' polls, the activity
# timers: every key and click lands on a page that is never quiet. Each step as an agent does it,
# checked in the folder JupyterLab serves (the notebook file it writes, read outside both servers;
# notebook_site.py). A kernel answers when it answers: the output is waited for with each
# server's wait tool, the same call on both sides.

NOTEBOOK_STEPS = ("open", "new", "code", "markdown", "rename", "save", "open_file")
CODE = "print(6 * 7)"
MARKDOWN = "# Results\nThe answer is 42."
NOTEBOOK = "bench.ipynb"


def notebook_checks(root):
    """What the folder JupyterLab serves must show (read outside both servers)."""
    def cells():
        try:
            with open(os.path.join(root, NOTEBOOK)) as f:
                return json.load(f)["cells"]
        except (OSError, ValueError, KeyError):
            return None

    def saved():
        got = cells() or []
        code = [c for c in got if c["cell_type"] == "code" and "".join(c["source"]) == CODE]
        outputs = "".join("".join(o.get("text", "")) for c in code for o in c.get("outputs", []))
        return bool(code) and "42" in outputs and any(
            c["cell_type"] == "markdown" and "".join(c["source"]) == MARKDOWN for c in got)

    return {
        "new": lambda: os.path.exists(os.path.join(root, "Untitled.ipynb")),
        "renamed": lambda: os.path.exists(os.path.join(root, NOTEBOOK))
        and not os.path.exists(os.path.join(root, "Untitled.ipynb")),
        "saved": saved,
    }


async def eventually(check, within_s=5.0):
    """Whether check() holds within a few seconds: an answer may come before the server wrote the file,
    and the time until it did is the step's (counted in the task's wall time)."""
    deadline = time.perf_counter() + within_s
    while not check():
        if time.perf_counter() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


def active_ref(text, role):
    """The ref of the focused `role` line (the cell the notebook moved to)."""
    for line in text.splitlines():
        if f"- {role}" in line and "[active]" in line and "[ref=" in line:
            return line.split("[ref=", 1)[1].split("]", 1)[0]
    raise StepFailed(f"no focused {role} in: {text[:300]}")


async def ours_notebook(meter, sessions, base, task):
    """Read with `snapshot {query}`, act by ref, keys with press_key; the kernel's output with wait_for."""
    s, m = sessions[0], meter.call
    checks, started = notebook_checks(task["root"]), time.perf_counter()

    async def read(sid, query_text):
        return await m(s, "snapshot", {"sessionId": sid, "query": query_text})

    async def act(sid, tool, **args):
        return answer(await m(s, tool, {"sessionId": sid, **args}))

    meter.step = "open"  # the application builds its launcher after the load
    sid = answer(await m(s, "create_session", {"url": base + "/lab"}))["sessionId"]
    await act(sid, "wait_for", text="ipykernel")
    launcher = await read(sid, "Python 3")

    meter.step = "new"  # a notebook with a kernel, from the launcher's card
    got = await act(sid, "click", ref=ref_of(launcher, "Python 3 (ipykernel)", "img"))
    expect(got["url"].endswith("/lab/tree/Untitled.ipynb") and checks["new"](), f"new: {got}")
    # JupyterLab runs no cell while the new notebook's kernel starts (Shift+Enter only moves to the next cell): an
    # agent waits for it, as a person waits for "Idle". Since keys answer before JupyterLab's own timers (issue 75)
    # our Shift+Enter came within half a second of the click and met it in about half the runs.
    await act(sid, "wait_for", text="| Idle")

    meter.step = "code"  # type a cell, run it, read its output
    cell = await read(sid, "textbox")
    for _ in range(4):  # JupyterLab focuses the new notebook's cell after its load (late on a loaded machine):
        if "[active]" in cell:  # as an agent would, read again (each a call counted)
            break
        cell = await read(sid, "textbox")
    await act(sid, "type", ref=active_ref(cell, "textbox"), text=CODE)
    await act(sid, "press_key", key="Shift+Enter")
    await act(sid, "wait_for", text="42")

    meter.step = "markdown"  # the next cell made Markdown in the toolbar's select, typed, rendered
    toolbar = await read(sid, "Cell type")
    await act(sid, "select", ref=ref_of(toolbar, "Cell type", "combobox"), labels=["Markdown"])
    cell = await read(sid, "textbox")
    await act(sid, "type", ref=active_ref(cell, "textbox"), text=MARKDOWN)
    await act(sid, "press_key", key="Shift+Enter")
    shown = await read(sid, "Results")
    expect("heading" in shown and "Results" in shown, f"markdown: {shown[:300]}")

    meter.step = "rename"  # File, Rename Notebook…, its dialog
    menu = await read(sid, "File")
    await act(sid, "click", ref=ref_of(menu, '"File"', "menuitem"))
    items = await read(sid, "Rename Notebook")
    await act(sid, "click", ref=ref_of(items, "Rename Notebook", "menuitem"))
    dialog = await read(sid, "textbox|Rename File")
    await act(sid, "type", ref=active_ref(dialog, "textbox"), text=NOTEBOOK, submit=True)
    expect(checks["renamed"](), "rename: the folder has no renamed notebook")

    meter.step = "save"
    got = await act(sid, "press_key", key="Control+s")
    expect(await eventually(checks["saved"]), f"save: the notebook on disk lacks a cell or the output: {got}")

    meter.step = "open_file"  # a text file from the file browser, read in its editor
    files = await read(sid, README)
    await act(sid, "click", ref=ref_of(files, README), clickCount=2)
    text = await read(sid, "forty-two")
    expect("forty-two" in text, f"open_file: {text[:300]}")
    await m(s, "close_session", {"sessionId": sid})
    finished(meter, started)


async def theirs_notebook(meter, sessions, base, task):
    """The same steps with @playwright/mcp's tools: browser_find (a regular expression) to read,
    browser_click, browser_type, browser_select_option and browser_press_key to act,
    browser_wait_for for the launcher and the kernel's output."""
    s, m = sessions[0], meter.call
    checks, started = notebook_checks(task["root"]), time.perf_counter()

    async def find(pattern):
        return await m(s, "browser_find", {"regex": f"/{pattern}/i"})

    meter.step = "open"
    await m(s, "browser_navigate", {"url": base + "/lab"})
    await m(s, "browser_wait_for", {"text": "ipykernel"})
    launcher = await find("Python 3")

    meter.step = "new"
    got = await m(s, "browser_click", {"element": "Python 3 (ipykernel)",
                                       "target": ref_of(launcher, "Python 3 (ipykernel)", "img")})
    expect("/lab/tree/Untitled.ipynb" in got and checks["new"](), f"new: {got[:300]}")
    await m(s, "browser_wait_for", {"text": "| Idle"})  # the kernel ready, as ours waits for it

    meter.step = "code"
    cell = await find("textbox")
    await m(s, "browser_type", {"element": "cell", "target": active_ref(cell, "textbox"), "text": CODE})
    await m(s, "browser_press_key", {"key": "Shift+Enter"})
    await m(s, "browser_wait_for", {"text": "42"})

    meter.step = "markdown"
    toolbar = await find("Cell type")
    await m(s, "browser_select_option", {"element": "Cell type", "target": ref_of(toolbar, "Cell type", "combobox"),
                                         "values": ["Markdown"]})
    cell = await find("textbox")
    await m(s, "browser_type", {"element": "cell", "target": active_ref(cell, "textbox"), "text": MARKDOWN})
    await m(s, "browser_press_key", {"key": "Shift+Enter"})
    shown = await find("Results")
    expect("heading" in shown and "Results" in shown, f"markdown: {shown[:300]}")

    meter.step = "rename"
    menu = await find("File")
    await m(s, "browser_click", {"element": "File", "target": ref_of(menu, '"File"', "menuitem")})
    items = await find("Rename Notebook")
    await m(s, "browser_click", {"element": "Rename Notebook…", "target": ref_of(items, "Rename Notebook", "menuitem")})
    dialog = await find("textbox|Rename File")
    await m(s, "browser_type", {"element": "new name", "target": active_ref(dialog, "textbox"), "text": NOTEBOOK,
                                "submit": True})
    expect(checks["renamed"](), "rename: the folder has no renamed notebook")

    meter.step = "save"
    got = await m(s, "browser_press_key", {"key": "Control+s"})
    expect(await eventually(checks["saved"]), f"save: the notebook on disk lacks a cell or the output: {got[:300]}")

    meter.step = "open_file"
    files = await find(README.replace(".", "\\."))
    await m(s, "browser_click", {"element": README, "target": ref_of(files, README, "listitem"), "doubleClick": True})
    text = await find("forty-two")
    expect("forty-two" in text, f"open_file: {text[:300]}")
    await m(s, "browser_close", {})
    finished(meter, started)


# -- the data task: SQLAdmin, a real data-browsing application ------------------------------
# A data analyst's questions on a catalogue of 137 books by 18 authors, each answered the
# cheapest way each server's tools allow on an application it has not seen, and each answer
# checked against the application's own database (data_site.py, read with sqlite3 outside
# both servers): how many books, the newest and its author's country (a related row), the
# first book of the third page by title (sorting and paging), how many poems and how many of
# them by one author (facets), and a search's hits with the first one's page count.

DATA_STEPS = ("count", "sort", "related", "page", "filter", "facet", "search", "detail")
SEARCHED = "Lantern"
FACET_AUTHOR = "Author 07"


def data_truth(db, url=""):
    """The database's answers; `url`'s filters and search (genre, author_id, search) narrow the count."""
    params = parse_qs(urlsplit(url).query)
    where, args = [], []
    if "genre" in params:
        where.append("b.genre = ?")
        args.append(params["genre"][0])
    if "author_id" in params:
        where.append("b.author_id = ?")
        args.append(int(params["author_id"][0]))
    if "search" in params:
        where.append("b.title LIKE ?")
        args.append(f"%{params['search'][0]}%")
    sql = "SELECT count(*) FROM books b" + (" WHERE " + " AND ".join(where) if where else "")
    return query(db, sql, args)[0][0]


def book_of(db, column, book_id):
    return query(db, f"SELECT {column} FROM books WHERE id = ?", (book_id,))[0][0]


def our_row(text):
    """{column: value} of the first row line a query answered with (`- row [ref=…]: id: 3 | title: …`)."""
    line = next(line for line in text.splitlines() if line.strip().startswith("- row"))
    return dict(cell.split(": ", 1) for cell in line.split("]: ", 1)[1].split(" | ") if ": " in cell)


def their_cells(text):
    """The cells of a row as @playwright/mcp's snapshot of it shows them, in order."""
    import re
    return [(m.group(1) if m.group(1) is not None else (m.group(2) or "").strip())
            for m in re.finditer(r'^\s*- cell(?: "([^"]*)")?(?: \[[^\]]*\])*(?::(?: (.*))?)?$', text, re.MULTILINE)]


def items_count(text):
    import re
    found = re.search(r"of (\d+) items", text)
    expect(found is not None, f"no count in: {text[:300]}")
    return int(found.group(1))


async def ours_data(meter, sessions, base, task):
    s, m, db = sessions[0], meter.call, task["db"]
    started = time.perf_counter()

    async def read(sid, pattern, **extra):
        return await m(s, "snapshot", {"sessionId": sid, "query": pattern, **extra})

    async def act(sid, tool, **args):
        return answer(await m(s, tool, {"sessionId": sid, **args}))

    meter.step = "count"
    sid = answer(await m(s, "create_session", {"url": base + "/admin/"}))["sessionId"]
    await act(sid, "click", ref=ref_of(await read(sid, "^Books$"), '"Books"', "link"))
    counted = await read(sid, r"of \d+ items|^year$")  # the count, and the next step's column
    expect(items_count(counted) == data_truth(db), f"count: {counted[:300]}")

    meter.step = "sort"  # the newest book: the year column sorted twice (ascending, then descending)
    await act(sid, "click", ref=ref_of(counted, '"year"', "link"))
    got = await act(sid, "click", ref=ref_of(await read(sid, "^year$"), '"year"', "link"))
    first = await read(sid, "^View$", maxNodes=1)  # a row's View link: its row, under the headers
    newest = our_row(first)
    expect("sort=desc" in got["url"] and int(newest["year"]) == query(db, "SELECT max(year) FROM books")[0][0],
           f"sort: {first[:300]}")

    meter.step = "related"  # the newest book's author, one link away
    got = await act(sid, "click", ref=ref_of(first, newest["author"], "link"))
    country = our_row(await read(sid, "^country$"))["Value"]
    book_id = query(db, "SELECT id FROM books WHERE title = ?", (newest["title"],))[0][0]
    expect(country == query(db, "SELECT a.country FROM authors a JOIN books b ON b.author_id = a.id "
                                "WHERE b.id = ?", (book_id,))[0][0], f"related: {country}")

    meter.step = "page"  # the first book of the third page, by title
    await act(sid, "click", ref=ref_of(await read(sid, "^Books$"), '"Books"', "link"))
    await act(sid, "click", ref=ref_of(await read(sid, "^title$"), '"title"', "link"))
    got = await act(sid, "click", ref=ref_of(await read(sid, "^3$"), '"3"', "link"))
    title = our_row(await read(sid, "^View$", maxNodes=1))["title"]
    expect(title == query(db, "SELECT title FROM books ORDER BY title LIMIT 1 OFFSET 40")[0][0], f"page: {title}")

    meter.step = "filter"  # how many poems: the genre facet
    filters = await read(sid, "^Poetry$", section="Filters")
    got = await act(sid, "click", ref=ref_of(filters, '"Poetry"', "link"))
    counted = await read(sid, r"of \d+ items")
    expect(items_count(counted) == data_truth(db, got["url"]) and "genre" in got["url"], f"filter: {got['url']}")

    meter.step = "facet"  # and how many of them by one author
    filters = await read(sid, f"^{FACET_AUTHOR}", section="Filters")
    got = await act(sid, "click", ref=ref_of(filters, FACET_AUTHOR, "link"))
    counted = await read(sid, r"of \d+ items|^Books$")  # the count, and the way back to the whole list
    expect(items_count(counted) == data_truth(db, got["url"]) and "author_id" in got["url"], f"facet: {got['url']}")

    meter.step = "search"  # in the whole catalogue: the list again, without its filters
    await act(sid, "click", ref=ref_of(counted, '"Books"', "link"))
    box = await read(sid, "Search")
    got = await act(sid, "type", ref=ref_of(box, "Search", "textbox"), text=SEARCHED, submit=True)
    hits = await read(sid, r"of \d+ items|^View$", maxNodes=1)
    expect(items_count(hits) == data_truth(db, got["url"]) and SEARCHED in our_row(hits)["title"],
           f"search: {hits[:300]}")

    meter.step = "detail"  # the first hit's page count, on its own page
    got = await act(sid, "click", ref=ref_of(hits, '"View"', "link"))
    pages = our_row(await read(sid, "^pages$"))["Value"]
    expect(int(pages) == book_of(db, "pages", int(got["url"].rsplit("/", 1)[1])), f"detail: {pages}")
    await m(s, "close_session", {"sessionId": sid})
    finished(meter, started)


async def theirs_data(meter, sessions, base, task):
    """The same questions with @playwright/mcp's tools: browser_find (a regular expression, with a few
    lines of context) to read, browser_snapshot of one row (by the ref find shows above a match),
    browser_click and browser_type to act; an action's answer carries the page's URL."""
    s, m, db = sessions[0], meter.call, task["db"]
    started = time.perf_counter()

    async def find(pattern, **extra):
        return await m(s, "browser_find", {"regex": f"/{pattern}/", **extra})

    async def click(text, name, role="link"):
        got = await m(s, "browser_click", {"element": name, "target": ref_of(text, name, role)})
        return got.split("Page URL: ", 1)[1].split("\n", 1)[0] if "Page URL: " in got else ""

    async def first_row():
        found = await find('link "View"', maxResults=1)
        row = next(line for line in found.splitlines() if line.strip().startswith("- row [ref="))
        return await m(s, "browser_snapshot", {"target": row.split("[ref=", 1)[1].split("]", 1)[0]})

    meter.step = "count"
    await m(s, "browser_navigate", {"url": base + "/admin/"})
    await click(await find('link "Books"'), '"Books"')
    counted = await find(r"of \d+ items")
    expect(items_count(counted) == data_truth(db), f"count: {counted[:300]}")

    meter.step = "sort"
    await click(await find('link "year"'), '"year"')
    url = await click(await find('link "year"'), '"year"')
    row = await first_row()
    cells = their_cells(row)  # select, actions, id, title, year, genre, pages, author
    expect("sort=desc" in url and int(cells[4]) == query(db, "SELECT max(year) FROM books")[0][0],
           f"sort: {cells}")

    meter.step = "related"
    await click(row, "Author")  # the author's link, in the row's last cell
    found = await find("country")
    book_id = int(cells[2])
    expect(query(db, "SELECT a.country FROM authors a JOIN books b ON b.author_id = a.id WHERE b.id = ?",
                 (book_id,))[0][0] in found, f"related: {found[:300]}")

    meter.step = "page"
    await click(await find('link "Books"'), '"Books"')
    await click(await find('link "title"'), '"title"')
    await click(await find('link "3"'), '"3"')
    cells = their_cells(await first_row())
    expect(cells[3] == query(db, "SELECT title FROM books ORDER BY title LIMIT 1 OFFSET 40")[0][0], f"page: {cells}")

    meter.step = "filter"
    url = await click(await find('link "Poetry"'), '"Poetry"')
    counted = await find(r"of \d+ items")
    expect(items_count(counted) == data_truth(db, url) and "genre" in url, f"filter: {url}")

    meter.step = "facet"
    url = await click(await find(f'link "{FACET_AUTHOR}'), FACET_AUTHOR)
    counted = await find(r"of \d+ items")
    expect(items_count(counted) == data_truth(db, url) and "author_id" in url, f"facet: {url}")

    meter.step = "search"
    await click(await find('link "Books"'), '"Books"')
    box = await find("Search")
    got = await m(s, "browser_type", {"element": "Search", "target": ref_of(box, "Search", "textbox"),
                                      "text": SEARCHED, "submit": True})
    url = got.split("Page URL: ", 1)[1].split("\n", 1)[0] if "Page URL: " in got else ""
    counted = await find(r"of \d+ items")
    hit = await find('link "View"', maxResults=1)
    expect(items_count(counted) == data_truth(db, url), f"search: {counted[:300]}")

    meter.step = "detail"
    url = await click(hit, '"View"')
    found = await find("pages")
    expect(str(book_of(db, "pages", int(url.rsplit("/", 1)[1]))) in found, f"detail: {found[:300]}")
    await m(s, "browser_close", {})
    finished(meter, started)


# -- the webmcp task: a shop's order page that offers page tools (WebMCP) ------------------
# Each side uses the page's tools where it can: ours reads their names and arguments in the load's
# answer (pageTools), where page_tools joined its tools/list, and calls them; theirs finds them grown
# into its tools/list after its navigation (webmcp_*). Both read their lists with every turn: the
# per-turn count is what makes that fair.
# Every step is checked in the shop's own state (webmcp_site.Shop), kept by its HTTP server.

WEBMCP_STEPS = ("open", "discover", "search", "add", "checkout", "confirm")
PAGE_TOOLS = ("search_products", "add_to_cart", "checkout")
ORDER = {"query": "lantern", "product": "Storm lantern", "quantity": 2, "name": "Ada Lovelace"}


def webmcp_checks(shop):
    """What the shop must hold after each step (read outside both servers)."""
    return {
        "search": lambda: shop.searches == [ORDER["query"]],
        "add": lambda: [(line["name"], line["quantity"]) for line in shop.cart_answer()["lines"]]
        == [(ORDER["product"], ORDER["quantity"])],
        "checkout": lambda: len(shop.orders) == 1 and shop.orders[0]["name"] == ORDER["name"]
        and [(line["name"], line["quantity"]) for line in shop.orders[0]["lines"]]
        == [(ORDER["product"], ORDER["quantity"])],
    }


def product_id(found_json):
    """The id of the wanted product in search_products' answer (the page's JSON list)."""
    return next((p["id"] for p in json.loads(found_json) if p["name"] == ORDER["product"]), None)


def pickup_code(text):
    return text.split("Pickup code: ", 1)[1].split(".", 1)[0] if "Pickup code: " in text else None


async def ours_webmcp(meter, sessions, base, task):
    s, m, shop = sessions[0], meter.call, task["shop"]
    checks, started = webmcp_checks(shop), time.perf_counter()

    async def call(sid, name, /, **tool_input):
        return answer(await m(s, "page_tools", {"sessionId": sid, "name": name, "input": tool_input}))

    meter.step = "open"
    opened = answer(await m(s, "create_session", {"url": base}))
    sid = opened["sessionId"]
    expect("Corner Shop" in opened.get("title", ""), f"open: {opened}")
    meter.step = "discover"  # no call: the load's answer named the page's tools, and page_tools joined the list
    named = set(re.findall(r"([\w.-]+)\(", opened.get("pageTools", "")))  # name(arg, arg?), ...
    expect(named == set(PAGE_TOOLS), f"discover: {opened}")
    expect("page_tools" in {t.name for t in (await s.list_tools()).tools}, "discover: page_tools is not listed")
    meter.step = "search"
    found = await call(sid, "search_products", query=ORDER["query"])
    wanted = product_id(found["untrustedResult"])
    expect(wanted is not None and checks["search"](), f"search: {found}")
    meter.step = "add"
    await call(sid, "add_to_cart", productId=wanted, quantity=ORDER["quantity"])
    expect(checks["add"](), f"add: {shop.cart}")
    meter.step = "checkout"
    await call(sid, "checkout", name=ORDER["name"])
    expect(checks["checkout"](), f"checkout: {shop.orders}")
    meter.step = "confirm"
    shown = await m(s, "snapshot", {"sessionId": sid, "query": "Pickup code"})
    expect(pickup_code(shown) == shop.orders[0]["pickupCode"], f"confirm: {shown[:300]}")
    await m(s, "close_session", {"sessionId": sid})
    finished(meter, started)


async def theirs_webmcp(meter, sessions, base, task):
    s, m, shop = sessions[0], meter.call, task["shop"]
    checks, started = webmcp_checks(shop), time.perf_counter()

    async def call(name, /, **tool_input):
        text = await m(s, "webmcp_" + name, tool_input)
        # Its answer: a preamble, then the page's result as JSON ({content: [{type: text, text}]}).
        return json.loads(text.split("untrusted:\n", 1)[1].split("\n###", 1)[0])["content"][0]["text"]

    meter.step = "open"
    opened = await m(s, "browser_navigate", {"url": base})
    expect("Corner Shop" in opened, f"open: {opened[:300]}")
    meter.step = "discover"  # no call: its navigation grew the page's tools into the tools/list it reads
    grown = {t.name for t in (await s.list_tools()).tools if t.name.startswith("webmcp_")}
    expect(grown == {"webmcp_" + name for name in PAGE_TOOLS}, f"discover: {grown}")
    meter.step = "search"
    wanted = product_id(await call("search_products", query=ORDER["query"]))
    expect(wanted is not None and checks["search"](), f"search: {shop.searches}")
    meter.step = "add"
    await call("add_to_cart", productId=wanted, quantity=ORDER["quantity"])
    expect(checks["add"](), f"add: {shop.cart}")
    meter.step = "checkout"
    await call("checkout", name=ORDER["name"])
    expect(checks["checkout"](), f"checkout: {shop.orders}")
    meter.step = "confirm"
    shown = await m(s, "browser_find", {"text": "Pickup code"})
    expect(pickup_code(shown) == shop.orders[0]["pickupCode"], f"confirm: {shown[:300]}")
    await m(s, "browser_close", {})
    finished(meter, started)


# -- running it ---------------------------------------------------------------------------

def ensure_site(site):
    if os.path.exists(os.path.join(site, "index.html")):
        return site
    if site != SPHINX_DOC:
        sys.exit(f"{site} has no index.html")
    if os.geteuid() != 0:
        sys.exit("Sphinx's manual is missing: run `apt-get install sphinx-doc` as root, or pass --site DIR")
    print("installing Debian's sphinx-doc…", file=sys.stderr)
    subprocess.run(["apt-get", "update", "-qq"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["apt-get", "install", "-y", "-qq", "sphinx-doc"], check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    return site


class _Quiet(QuietHandler, SimpleHTTPRequestHandler):
    pass


def pwmcp_webmcp_params(cli, executable, temp):
    """@playwright/mcp as for the other tasks, its Chromium able to run page tools: its WebMCP is on by
    default, but it does not launch Chromium with the feature, so without this it finds no page tools."""
    config = os.path.join(temp, "pwmcp-webmcp.json")
    with open(config, "w") as f:
        json.dump({"browser": {"launchOptions": {"args": ["--enable-features=WebMCP"]}}}, f)
    params = pwmcp_params(cli, executable)
    return params.model_copy(update={"args": [*params.args, "--config", config]})


def serve(site):
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=site))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}/"


async def measure(params_pair, task_fn, base, task, steps=STEPS):
    meter = Meter(steps)
    async with AsyncExitStack() as stack:
        sessions = []
        for params in params_pair:
            read, write = await stack.enter_async_context(stdio_client(params, errlog=open(os.devnull, "w")))
            session = await stack.enter_async_context(ClientSession(read, write))
            if not sessions:  # the server's instructions: a client may put them before the model too
                meter.instructions_chars = len((await session.initialize()).instructions or "")
            else:
                await session.initialize()
            sessions.append(session)
        listed = await sessions[0].list_tools()
        # What a client hands its model on every turn (model_list_chars). The whole JSON (titles,
        # annotations, output schemas) is what crosses the wire, reported beside it.
        meter.tools_list_chars = model_list_chars(listed)
        meter.tools_list_json_chars = len(json.dumps([t.model_dump(by_alias=True, exclude_none=True)
                                                      for t in listed.tools]))
        await asyncio.sleep(1.0)  # both servers start their browsers at their own pace; not the agent's cost
        try:
            await task_fn(meter, sessions, base, task)
            meter.error = None
        except StepFailed as exc:
            meter.error = f"{meter.step}: {exc}"
            meter.wall_ms = None
    return meter


def totals(meter):
    rows = meter.steps.values()
    chars = sum(r["chars"] for r in rows)
    out = {"chars": chars, "image_bytes": sum(r["image_bytes"] for r in rows),
           "calls": sum(r["calls"] for r in rows), "ms": round(meter.wall_ms) if meter.wall_ms else None,
           "all_ok": meter.error is None, "tools_list_chars": meter.tools_list_chars,
           "tools_list_json_chars": meter.tools_list_json_chars, "all_in_chars": chars + meter.tools_list_chars,
           "tools_list_turns_chars": sum(meter.turn_lists), "instructions_chars": meter.instructions_chars}
    out["all_in_turns_chars"] = chars + out["tools_list_turns_chars"]
    return out


def ratio(a, b):
    return round(a / b, 2) if a is not None and b else None


def compare(result):
    """Ratios of ours to theirs, and which targets one task met."""
    ot, tt = result["ours"]["total"], result["theirs"]["total"]
    result["ratios"] = {k: ratio(ot[k], tt[k]) for k in (
        "chars", "tools_list_chars", "all_in_chars", "tools_list_turns_chars", "all_in_turns_chars", "image_bytes",
        "calls", "ms")}
    result["targets_met"] = {
        **{k: result["ratios"][k] is not None and result["ratios"][k] <= limit for k, limit in TARGETS.items()},
        "calls": ot["calls"] <= tt["calls"], "all_ok": ot["all_ok"] and tt["all_ok"]}


TASKS = ("docs", "admin", "spa", "tracker", "notebook", "data", "webmcp")
ADMIN_FOLDER = os.path.join(os.path.expanduser("~"), ".cache", "mcpbrowser", "agent-bench-admin")
SPA_FOLDER = os.path.join(os.path.expanduser("~"), ".cache", "mcpbrowser", "agent-bench-spa")
TRACKER_FOLDER = os.path.join(os.path.expanduser("~"), ".cache", "mcpbrowser", "agent-bench-tracker")
NOTEBOOK_FOLDER = os.path.join(os.path.expanduser("~"), ".cache", "mcpbrowser", "agent-bench-notebook")
DATA_FOLDER = os.path.join(os.path.expanduser("~"), ".cache", "mcpbrowser", "agent-bench-data")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", default=SPHINX_DOC, help="folder of the docs task's site (default: Sphinx's manual)")
    parser.add_argument("--task", choices=(*TASKS, "all"), default="all",
                        help="docs (a documentation site), admin (Django's admin application), spa (optuna-dashboard, "
                             "a single-page application), tracker (Roundup, an issue tracker), notebook (JupyterLab, "
                             "a notebook IDE with a kernel), data (SQLAdmin, a data-browsing application), webmcp "
                             "(a shop's page that offers page tools, ours: scripts/webmcp_site.py), or all (default)")
    parser.add_argument("--admin-folder", default=ADMIN_FOLDER,
                        help="where Django is installed for the admin task, and its database kept "
                             f"(default {ADMIN_FOLDER})")
    parser.add_argument("--spa-folder", default=SPA_FOLDER,
                        help="where optuna-dashboard is installed (a venv) for the spa task, and its storage kept "
                             f"(default {SPA_FOLDER})")
    parser.add_argument("--tracker-folder", default=TRACKER_FOLDER,
                        help="where Roundup is installed for the tracker task, and its tracker kept "
                             f"(default {TRACKER_FOLDER})")
    parser.add_argument("--notebook-folder", default=NOTEBOOK_FOLDER,
                        help="where JupyterLab is installed (a venv) for the notebook task, and its folders kept "
                             f"(default {NOTEBOOK_FOLDER})")
    parser.add_argument("--data-folder", default=DATA_FOLDER,
                        help="where SQLAdmin is installed for the data task, and its database kept "
                             f"(default {DATA_FOLDER})")
    parser.add_argument("--ours-only", action="store_true", help="skip @playwright/mcp")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--playwright-mcp-version", default=PLAYWRIGHT_MCP_VERSION,
                        help=f"the @playwright/mcp to compare with (default {PLAYWRIGHT_MCP_VERSION}, the one the "
                             "table in docs/performance.md used; its tools change between releases)")
    args = parser.parse_args()
    tasks = TASKS if args.task == "all" else (args.task,)
    # The browser our headless server picks (its headless shell when one is installed), for every contender.
    executable = find_executable("chromium", shell=True)
    temp = tempfile.mkdtemp(prefix="agent-bench-")
    results = {"playwright_mcp_version": args.playwright_mcp_version, "tasks": {}}
    try:
        ours_params = StdioServerParameters(command=sys.executable, args=[
            "-m", "mcpbrowser", "--headless", "--rate-limit", "0", "--db", os.path.join(temp, "history.db")])
        cli = None
        if not args.ours_only:
            if not (shutil.which("node") and shutil.which("npm")):
                print("node and npm are needed for @playwright/mcp (or pass --ours-only)", file=sys.stderr)
                return NO_PLAYWRIGHT_MCP
            try:
                cli = install_playwright_mcp(os.path.join(temp, "pwmcp"), args.playwright_mcp_version)
            except subprocess.CalledProcessError as exc:
                print(f"could not install @playwright/mcp from npm: {exc}", file=sys.stderr)
                return NO_PLAYWRIGHT_MCP
        sides = [("ours", [ours_params]), *([("theirs", [pwmcp_params(cli, executable)] * 2)] if cli else [])]
        if "docs" in tasks:
            site = ensure_site(args.site)
            task_file = os.path.join(site, "agent_task.json")
            task = json.load(open(task_file)) if os.path.exists(task_file) else SPHINX_TASK
            server, base = serve(site)
            result = results["tasks"]["docs"] = {"site": site, "task": task}
            try:
                for side, params in sides:
                    fn = (lambda m, s, b, t: ours_task(m, s * 2, b, t)) if side == "ours" else theirs_task
                    meter = asyncio.run(measure(params, fn, base, task))
                    result[side] = {"steps": meter.steps, "total": totals(meter), "error": meter.error}
            finally:
                server.shutdown()
        if "admin" in tasks:
            print("setting up Django's admin…", file=sys.stderr)
            try:
                site = AdminSite.build(args.admin_folder)
            except subprocess.CalledProcessError as exc:
                print(f"could not set up Django's admin (pip from PyPI, migrate): {exc}", file=sys.stderr)
                return NO_DJANGO
            result = results["tasks"]["admin"] = {"site": "Django's admin", "steps": list(ADMIN_STEPS)}
            for side, params in sides:
                with site.serve() as (base, db):  # each server on a fresh copy of the database
                    fn = ours_admin if side == "ours" else theirs_admin
                    meter = asyncio.run(measure(params, fn, base, {"db": db}, ADMIN_STEPS))
                result[side] = {"steps": meter.steps, "total": totals(meter), "error": meter.error}
        if "spa" in tasks:
            print("setting up optuna-dashboard…", file=sys.stderr)
            try:
                spa = SpaSite.build(args.spa_folder)
            except subprocess.CalledProcessError as exc:
                print(f"could not set up optuna-dashboard (pip from PyPI, seeding): {exc}", file=sys.stderr)
                return NO_SPA
            result = results["tasks"]["spa"] = {"site": "optuna-dashboard", "steps": list(SPA_STEPS)}
            for side, params in sides:
                with spa.serve() as (base, db):  # each server on a fresh copy of the storage
                    fn = ours_spa if side == "ours" else theirs_spa
                    meter = asyncio.run(measure(params, fn, base, {"db": db}, SPA_STEPS))
                result[side] = {"steps": meter.steps, "total": totals(meter), "error": meter.error}
        if "tracker" in tasks:
            print("setting up Roundup…", file=sys.stderr)
            try:
                tracker = TrackerSite.build(args.tracker_folder)
            except subprocess.CalledProcessError as exc:
                print(f"could not set up Roundup (pip from PyPI, its tracker): {exc}", file=sys.stderr)
                return NO_TRACKER
            result = results["tasks"]["tracker"] = {"site": "Roundup", "steps": list(TRACKER_STEPS)}
            for side, params in sides:
                with tracker.serve() as (base, home):  # each server on a fresh copy of the tracker
                    fn = ours_tracker if side == "ours" else theirs_tracker
                    meter = asyncio.run(measure(params, fn, base, {"home": home}, TRACKER_STEPS))
                result[side] = {"steps": meter.steps, "total": totals(meter), "error": meter.error}
        if "notebook" in tasks:
            print("setting up JupyterLab…", file=sys.stderr)
            try:
                notebook = NotebookSite.build(args.notebook_folder)
            except subprocess.CalledProcessError as exc:
                print(f"could not set up JupyterLab (pip from PyPI): {exc}", file=sys.stderr)
                return NO_NOTEBOOK
            result = results["tasks"]["notebook"] = {"site": "JupyterLab", "steps": list(NOTEBOOK_STEPS)}
            for side, params in sides:
                with notebook.serve() as (base, root):  # each server on a fresh folder and a fresh JupyterLab
                    fn = ours_notebook if side == "ours" else theirs_notebook
                    meter = asyncio.run(measure(params, fn, base, {"root": root}, NOTEBOOK_STEPS))
                result[side] = {"steps": meter.steps, "total": totals(meter), "error": meter.error}
        if "data" in tasks:
            print("setting up SQLAdmin…", file=sys.stderr)
            try:
                data = DataSite.build(args.data_folder)
            except subprocess.CalledProcessError as exc:
                print(f"could not set up SQLAdmin (pip from PyPI, seeding): {exc}", file=sys.stderr)
                return NO_DATA
            result = results["tasks"]["data"] = {"site": "SQLAdmin", "steps": list(DATA_STEPS)}
            for side, params in sides:
                with data.serve() as (base, db):  # each server on a fresh copy of the catalogue
                    fn = ours_data if side == "ours" else theirs_data
                    meter = asyncio.run(measure(params, fn, base, {"db": db}, DATA_STEPS))
                result[side] = {"steps": meter.steps, "total": totals(meter), "error": meter.error}
        if "webmcp" in tasks:
            result = results["tasks"]["webmcp"] = {"site": "a shop's page tools", "steps": list(WEBMCP_STEPS)}
            for side, params in sides:
                if side == "theirs":
                    params = [pwmcp_webmcp_params(cli, executable, temp)]
                with WebMcpSite.serve() as (base, shop):  # each server on a fresh shop
                    fn = ours_webmcp if side == "ours" else theirs_webmcp
                    meter = asyncio.run(measure(params, fn, base, {"shop": shop}, WEBMCP_STEPS))
                result[side] = {"steps": meter.steps, "total": totals(meter), "error": meter.error}
        for result in results["tasks"].values():
            if "theirs" in result:
                compare(result)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        report(results)
    failed = [r[side]["error"] for r in results["tasks"].values() for side in ("ours", "theirs") if side in r]
    return 0 if not any(failed) else 1


def report(results):
    for name, result in results["tasks"].items():
        sides = [s for s in ("ours", "theirs") if s in result]
        print(f"== {name} task ({result['site']})")
        print(f"{'step':<10}" + "".join(f"{s + ' chars':>14}{'calls':>7}{'ms':>8}" for s in sides))
        for step in result[sides[0]]["steps"]:
            line = f"{step:<10}"
            for side in sides:
                row = result[side]["steps"][step]
                mark = "" if row["ok"] else " ✗"
                line += f"{row['chars']:>14}{row['calls']:>7}{round(row['ms']):>8}{mark}"
            print(line)
        line = f"{'total':<10}"
        for side in sides:
            t = result[side]["total"]
            line += f"{t['chars']:>14}{t['calls']:>7}{t['ms'] if t['ms'] is not None else '-':>8}"
        print(line)
        for side in sides:
            t = result[side]["total"]
            print(f"{side}: image bytes {t['image_bytes']}, tools/list {t['tools_list_chars']} characters as a "
                  f"model reads it ({t['tools_list_json_chars']} as JSON), all in {t['all_in_chars']}; "
                  f"tools/list at every call {t['tools_list_turns_chars']}, all in so {t['all_in_turns_chars']}; "
                  f"initialize's instructions {t['instructions_chars']} (counted in none of these)"
                  + (f", FAILED at {result[side]['error']}" if result[side]["error"] else ""))
        if "ratios" in result:
            print("ours/theirs:", ", ".join(f"{k} {v}" for k, v in result["ratios"].items()))
            print("targets met:", ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in result["targets_met"].items()))
        print()


if __name__ == "__main__":
    sys.exit(main())
