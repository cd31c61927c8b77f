"""End to end: measure_performance on local pages whose answers are known by construction, and compare_performance.

One page server and one core for the module. The server holds a request for `?ms=N` before it answers,
so an LCP image, its script and a stylesheet take known times; a page's script blocks the main thread for
a known time. Each test bounds times the browser measures, so the module runs alone (setup.cfg).
"""

import json
import sys
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from support import HtmlSite

import mcpbrowser
from mcpbrowser.config import Config
from mcpbrowser.errors import ContentNotFound, InvalidParameters, NavigationFailed

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from perf_compare import PNG  # noqa: E402  the LCP image: the comparison script's, served the same way

pytestmark = [pytest.mark.e2e, pytest.mark.alone]

SCRIPT_MS, IMAGE_MS, CSS_MS, TASK_MS, HANDLER_MS = 400, 300, 800, 300, 200
SLACK_MS = 200  # a request's own time on 127.0.0.1, the script's run, a frame: on a loaded 2-core machine


PAGES = {
    # The image is found late (a script the server holds SCRIPT_MS inserts it) and loads slowly (IMAGE_MS).
    "/lcp": "<!doctype html><title>lcp</title><p>A short line.</p>"
            f"<script src='/late.js?ms={SCRIPT_MS}' async></script>",
    "/late.js": f"const i = document.createElement('img'); i.id = 'hero'; i.alt = 'Hero'; i.width = 400; "
                f"i.height = 300; i.src = '/noise.png?ms={IMAGE_MS}'; document.body.appendChild(i);",
    # The image in the page itself: its load is the network's alone (Slow 3G).
    "/image": "<!doctype html><title>image</title><img id=hero alt=Hero width=400 height=300 src='/noise.png'>",
    # A box half the viewport high moves down a quarter of it: impact 3/4 of the viewport, distance 1/4 of
    # its height over its larger side.
    "/shift": "<!doctype html><title>shift</title><style>body{margin:0}#box{position:relative;width:100vw;"
              "height:50vh;background:#ccc}</style><div id=box>Box</div>"
              "<script>setTimeout(() => { document.getElementById('box').style.top = '25vh' }, 300)</script>",
    "/css": f"<!doctype html><title>css</title><link rel=stylesheet href='/slow.css?ms={CSS_MS}'><p>Styled.</p>",
    "/slow.css": "p { color: #333 }",
    "/busy": "<!doctype html><title>busy</title><p>A busy page.</p><script src='/busy.js'></script>",
    # Well after the first paint (ten frames after the load event), so that no part of it runs before FCP:
    # two frames were not enough on a loaded machine, where the paint's time fell 2 ms into the task.
    "/busy.js": "let frames = 0; addEventListener('load', function wait() { requestAnimationFrame(++frames < 10 ? "
                "wait : function spin() { "
                f"const t = performance.now(); while (performance.now() - t < {TASK_MS}) {{}} }}); }});",
    # A fixed amount of work (not a fixed time): CPU throttling makes it longer.
    "/work": "<!doctype html><title>work</title><p>Working.</p><script src='/work.js'></script>",
    "/work.js": "addEventListener('load', function work() { let x = 0; for (let i = 0; i < 3e7; i++) "
                "x += Math.sqrt(i); window.worked = x; });",
    "/click": "<!doctype html><title>click</title><button id=go>Go</button><script>"
              "document.getElementById('go').onclick = function block() { const t = performance.now(); "
              f"while (performance.now() - t < {HANDLER_MS}) {{}} this.textContent = 'Done'; }}</script>",
    "/field": "<!doctype html><title>field</title><input id=f type=password>",
    # A dashboard whose link leaves it (for a page the server holds a moment: the old page paints meanwhile), and
    # a form whose submit does.
    "/dashboard": "<!doctype html><title>dashboard</title><h1>Dashboard</h1><a href='/search?ms=300'>Search</a>",
    # A link whose own handler blocks before the browser leaves: its entries come with the old page's last paint.
    "/slowlink": "<!doctype html><title>slow link</title><h1>Slow link</h1><a href='/search?ms=300' onclick='"
                 f"const t = performance.now(); while (performance.now() - t < {HANDLER_MS}) {{}}'>Search</a>",
    "/search": "<!doctype html><title>search</title><p>Results.</p>",
    "/form": "<!doctype html><title>form</title><form action='/search'><input name=q value=x>"
             "<button id=send>Send</button></form>",
    # A long task after the load event, scheduled by the page's own timer, interval or event listener: each
    # named with the page's function and script, whatever the server's settle does with timers.
    "/timer": "<!doctype html><title>timer</title><p>Timed.</p><script src='/timer.js'></script>",
    "/timer.js": "addEventListener('load', () => setTimeout(function longTask300() { "
                 f"const t = performance.now(); while (performance.now() - t < {TASK_MS}) {{}} }}, 100));",
    "/interval": "<!doctype html><title>interval</title><p>Ticking.</p><script src='/tick.js'></script>",
    "/tick.js": "let ticks = 0; addEventListener('load', () => setInterval(function tick() { if (++ticks === 2) { "
                f"const t = performance.now(); while (performance.now() - t < {TASK_MS}) {{}} }} }}, 100));",
    "/listener": "<!doctype html><title>listener</title><p>Listening.</p><script src='/listen.js'></script>",
    "/listen.js": "addEventListener('message', function onMessage() { const t = performance.now(); "
                  f"while (performance.now() - t < {TASK_MS}) {{}} }}); "
                  "addEventListener('load', () => postMessage('go', '*'));",
    "/frame": "<!doctype html><title>frame</title><p>Framed.</p><script src='/frame.js'></script>",
    "/frame.js": "addEventListener('load', () => setTimeout(() => requestAnimationFrame(function onFrame() { "
                 f"const t = performance.now(); while (performance.now() - t < {TASK_MS}) {{}} }}), 100));",
    "/promise": "<!doctype html><title>promise</title><p>Promised.</p><script src='/promise.js'></script>",
    # A promise's reaction runs as a microtask of the task that settled it: the browser names that task's
    # function (the timer's), in the page's script.
    "/promise.js": "addEventListener('load', () => setTimeout(function settle() { Promise.resolve().then(() => { "
                   f"const t = performance.now(); while (performance.now() - t < {TASK_MS}) {{}} }}); }}, 100));",
    # A long task in the reaction to a request's answer, and to its body's read: the browser credits it to the
    # function that called fetch() or json() (not the reaction's), which must be the page's, not the settle's wrapper.
    "/fetched": "<!doctype html><title>fetched</title><p>Fetched.</p><script src='/fetched.js'></script>",
    "/fetched.js": "function render() { const t = performance.now(); while (performance.now() - t < "
                   f"{TASK_MS}) {{}} }} addEventListener('load', () => {{ fetch('/data.json').then(render); }});",
    "/json": "<!doctype html><title>json</title><p>Read.</p><script src='/json.js'></script>",
    "/json.js": "function render(data) { const t = performance.now(); while (performance.now() - t < "
                f"{TASK_MS}) {{}} }} function read(r) {{ return r.json(); }} addEventListener('load', () => "
                "fetch('/data.json').then(read).then(render));",
    "/data.json": '{"rows": 3}',
    # A click whose request answers late: the settle waits for it when its fetch wrapper is there.
    "/go.js": "go.onclick = () => fetch('/data.json?ms=400').then(() => { out.textContent = 'answered'; }); "
              "const kept = window.fetch.bind(window); "  # a copy the page keeps, as request libraries do
              "again.onclick = () => kept('/data.json?ms=400').then(() => { out.textContent = 'kept'; });",
    # A page that does not load within a measurement's timeout (its image holds the load event).
    "/stuck": "<!doctype html><title>stuck</title><img src='/noise.png?ms=3000'><button id=go>Go</button>"
              "<p id=out></p><script>go.onclick = () => fetch('/data.json?ms=400').then(() => { "
              "out.textContent = 'answered'; });</script>",
}
LATE = "<button id=go>Go</button><button id=again>Again</button><p id=out></p><script src='/go.js'></script>"
PAGES["/fetched"] += LATE
PAGES["/json"] += LATE
TYPES = {".js": "text/javascript", ".css": "text/css", ".png": "image/png", ".json": "application/json"}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        if "ms" in query:
            time.sleep(int(query["ms"][0]) / 1000)
        if url.path == "/variant":  # its slow version (a stylesheet, a long task) while the server says so
            slow = self.server.slow
            body = ("<!doctype html><title>variant</title>"
                    + (f"<link rel=stylesheet href='/slow.css?ms={CSS_MS}'>" if slow else "")
                    + "<p>Sometimes slow.</p>" + ("<script src='/busy.js'></script>" if slow else "")).encode()
        elif url.path == "/noise.png":
            body = PNG
        elif url.path in PAGES:
            body = PAGES[url.path].encode()
        else:
            self.send_response(404)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", next((t for end, t in TYPES.items() if url.path.endswith(end)), "text/html"))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def site():
    s = HtmlSite(handler=Handler)
    s.httpd.slow = False
    yield s
    s.close()


@pytest.fixture(scope="module")
def browser():
    with mcpbrowser.Browser(Config(headless=True, db=":memory:")) as b:
        yield b


@pytest.fixture
def session(browser):
    s = browser.create_session()
    yield s
    s.close()


def measured(browser, session, **args):
    """(answer, the stored measurement) of one measure_performance call."""
    answer = session.measure_performance(**args)
    return answer, json.loads(browser.get_content(answer["refId"], reset_cursor=True)["content"])


def value(detail, metric):
    return detail["metrics"][metric]["value"]


def test_a_late_lcp_image_is_named_with_its_load_delay_and_load_time(browser, session, site):
    answer, detail = measured(browser, session, url=site.url + "/lcp")
    lcp = detail["lcp"]
    assert lcp["element"]["selector"] == "#hero" and lcp["url"].endswith(f"/noise.png?ms={IMAGE_MS}")
    phases = lcp["phases"]
    assert SCRIPT_MS <= phases["loadDelay"] <= SCRIPT_MS + SLACK_MS, phases  # found late: its script was held
    assert IMAGE_MS <= phases["loadDuration"] <= IMAGE_MS + SLACK_MS, phases  # then held itself
    assert SCRIPT_MS + IMAGE_MS <= value(detail, "LCP") <= SCRIPT_MS + IMAGE_MS + 2 * SLACK_MS
    assert detail["metrics"]["LCP"]["rating"] == "good"
    # The answer names it as an element the agent can act on, with the phase that cost the most.
    ref = lcp["element"]["ref"]
    assert f'#hero "Hero" [ref={ref}]' in answer["summary"] and "load delay" in answer["summary"]
    assert len(answer["summary"]) < 600
    assert session.snapshot(ref=ref)["snapshot"].startswith('- img "Hero"')


def test_a_layout_shift_of_known_size_names_its_element_and_score(browser, session, site):
    answer, detail = measured(browser, session, url=site.url + "/shift")
    width, height = detail["viewport"]
    expected = 0.75 * (0.25 * height) / max(width, height)  # impact fraction x distance fraction
    shift = detail["layoutShifts"][0]
    assert shift["elements"][0]["selector"] == "#box"
    assert shift["score"] == pytest.approx(expected, abs=0.005)
    assert value(detail, "CLS") == pytest.approx(expected, abs=0.005)
    assert '#box "Box"' in answer["summary"] and f"{shift['score']:.3f}" in answer["summary"]


def test_a_stylesheet_that_blocks_rendering_is_named_with_its_duration(browser, session, site):
    answer, detail = measured(browser, session, url=site.url + "/css")
    [blocking] = detail["renderBlocking"]
    assert blocking["url"].endswith(f"/slow.css?ms={CSS_MS}")
    assert CSS_MS <= blocking["duration"] <= CSS_MS + SLACK_MS
    assert value(detail, "FCP") >= CSS_MS
    assert "Render-blocking: slow.css" in answer["summary"]


def test_a_long_task_is_named_with_its_script(browser, session, site):
    answer, detail = measured(browser, session, url=site.url + "/busy")
    task = detail["longTasks"][0]
    assert TASK_MS <= task["duration"] <= TASK_MS + SLACK_MS
    assert task["script"]["url"].endswith("/busy.js") and task["script"]["fn"] == "spin"
    assert TASK_MS - 50 <= value(detail, "TBT") <= TASK_MS - 50 + SLACK_MS  # its time past 50 ms, after FCP
    assert "busy.js spin()" in answer["summary"]


@pytest.mark.parametrize("cpu_rate", [1, 4])
@pytest.mark.parametrize("path, script, function", [("/timer", "timer.js", "longTask300"),
                                                    ("/interval", "tick.js", "tick"),
                                                    ("/listener", "listen.js", "onMessage"),
                                                    ("/frame", "frame.js", "onFrame"),
                                                    ("/promise", "promise.js", "settle")])
def test_a_long_task_is_named_with_its_function_whoever_scheduled_it(browser, session, site, path, script,
                                                                      function, cpu_rate):
    # The settle (an init script in every document) notes the page's timers: the browser must still credit
    # the task to the page's function, not to anything of ours.
    if cpu_rate != 1:
        session.throttle(cpu_rate=cpu_rate)
    answer, detail = measured(browser, session, url=site.url + path)
    task = detail["longTasks"][0]
    assert TASK_MS <= task["duration"] <= TASK_MS * cpu_rate + SLACK_MS, task
    assert task["script"]["url"].endswith("/" + script) and task["script"]["fn"] == function, task
    assert f"{script} {function}()" in answer["summary"]
    # And after the measured load: the same page, settled by an action, then measured again without a load.
    session.click("p")
    again = measured(browser, session, url=site.url + path)[1]["longTasks"][0]["script"]
    assert again["fn"] == function and again["url"].endswith("/" + script), again


@pytest.mark.parametrize("cpu_rate", [1, 4])
@pytest.mark.parametrize("path, script, site_code", [("/fetched", "fetched.js", "fetch('/data.json').then(render)"),
                                                     ("/json", "json.js", "json()")])
def test_a_long_task_in_a_promises_reaction_is_named_with_the_pages_script_and_the_code_that_made_the_promise(
        browser, session, site, path, script, site_code, cpu_rate):
    # The browser credits a promise's reactions to the code that made the promise: the settle's wrapper of fetch and
    # of a body's reads was that code ("Window.fetch.then (script not named)"). The measured load runs without them,
    # and the source there says what ran.
    if cpu_rate != 1:
        session.throttle(cpu_rate=cpu_rate)
    answer, detail = measured(browser, session, url=site.url + path)
    task = detail["longTasks"][0]
    assert TASK_MS <= task["duration"] <= TASK_MS * cpu_rate + SLACK_MS, task
    assert task["script"]["url"].endswith("/" + script) and task["script"]["at"] == site_code, task
    assert f"{script} {site_code}" in answer["summary"], answer["summary"]
    # The wrappers are back after the measurement: a click whose request answers late still waits for it, and so
    # does one sent with the copy of fetch the page kept (read while it was measured: the page was loaded again).
    clicked = session.click("#go")
    assert "answered" in session.snapshot(query="answered")["snapshot"], clicked
    clicked = session.click("#again")
    assert "kept" in session.snapshot(query="kept")["snapshot"], clicked


def test_a_measurement_whose_load_fails_leaves_the_settle_its_wrappers(browser, session, site):
    session.navigate(url=site.url + "/stuck", wait_until="commit")
    with pytest.raises(NavigationFailed):
        session.measure_performance(timeout=1000)
    clicked = session.click("#go")
    assert "answered" in session.snapshot(query="answered")["snapshot"], clicked


def test_a_click_that_blocks_is_measured_as_inp(browser, session, site):
    answer, detail = measured(browser, session, url=site.url + "/click", selector="#go")
    inp = value(detail, "INP")
    # An interaction's duration runs from its first event to the paint after the handler, rounded to 8 ms.
    assert HANDLER_MS <= inp <= HANDLER_MS + SLACK_MS
    interaction = detail["interaction"]
    assert interaction["phases"]["processing"] >= HANDLER_MS
    assert interaction["scripts"][0]["fn"] == "block"
    assert "INP" in answer["summary"] and "block()" in answer["summary"]
    # On the page as it is (load: false), a ref from its snapshot works as well.
    ref = session.snapshot(query="Done")["snapshot"].split("[ref=")[1].split("]")[0]
    again = session.measure_performance(load=False, ref=ref)
    assert "INP" in again["summary"] and "LCP" not in again["summary"].split("\n")[0]


def test_a_click_that_leaves_the_page_is_measured_on_the_page_it_left(browser, session, site):
    dashboard = site.url + "/dashboard"
    answer, detail = measured(browser, session, url=dashboard, selector="text=Search")
    # The answer names the page whose load it measured, and where the click went.
    assert answer["url"] == detail["url"] == dashboard
    assert detail["left"] == site.url + "/search?ms=300"
    assert answer["summary"].startswith(f"Measured {dashboard}; the interaction left for {site.url}/search?ms=300.\n")
    assert "LCP" in detail["metrics"] and detail["lcp"]["element"]["selector"] == "body > h1"
    # INP as the browser reported it before the page unloaded, or why not.
    inp = detail["metrics"].get("INP")
    assert inp is not None or "unloaded" in detail["notMeasured"]["INP"], detail.get("notMeasured")
    if inp is not None:
        assert detail["interaction"]["event"] in ("pointerdown", "pointerup", "click", "mousedown", "mouseup")
    # A comparison finds the dashboard's earlier measurement.
    again = session.measure_performance(url=dashboard)
    assert browser.compare_performance(again["refId"])["baseline"] == answer["refId"]


def test_inp_of_a_click_that_leaves_is_the_one_the_browser_reported_before_the_page_unloaded(browser, session, site):
    answer, detail = measured(browser, session, url=site.url + "/slowlink", selector="text=Search")
    assert detail["left"] == site.url + "/search?ms=300"
    assert HANDLER_MS <= value(detail, "INP") <= HANDLER_MS + SLACK_MS, detail.get("notMeasured")
    assert detail["interaction"]["phases"]["processing"] >= HANDLER_MS


def test_a_submit_measured_without_a_load_names_the_page_and_its_inp_or_why_not(browser, session, site):
    session.navigate(site.url + "/form")
    answer, detail = measured(browser, session, load=False, selector="#send")
    first = answer["summary"].split("\n")[0]
    assert first == f"Measured {site.url}/form; the interaction left for {site.url}/search?q=x.", answer["summary"]
    assert detail["url"] == site.url + "/form"
    assert "INP" in detail["metrics"] or "unloaded" in detail["notMeasured"]["INP"], detail


def test_a_ref_cannot_outlive_the_load_it_asks_for(session, site):
    with pytest.raises(InvalidParameters):
        session.measure_performance(url=site.url + "/click", ref="e1")


def _at_once(browser, sessions, url):
    """Each session's stored measurement of `url`, all measured at the same time: whatever else loads the
    machine then loads each of them alike, so their ratio is the throttling's."""
    futures = [browser.submit("measure_performance", {"sessionId": s.id, "url": url}) for s in sessions]
    answers = [f.result(timeout=60) for f in futures]
    return [{**json.loads(browser.get_content(a["refId"], reset_cursor=True)["content"]), "answer": a["summary"]}
            for a in answers]


def _ratio(pair):
    """How many times the throttled session's long task the neighbour's, measured at the same time, counted low: a
    task under 50 ms is no long task (none listed), the throttled one's then 0, the neighbour's 50 (a quiet machine
    ran the neighbour's under 50 ms: the list was empty)."""
    slowed, neighbour = (d["longTasks"][0]["duration"] if d["longTasks"] else none
                         for d, none in zip(pair, (0, 50), strict=True))
    return slowed / neighbour


def test_throttling_slows_what_it_should_and_not_the_neighbour(browser, site):
    a, b = browser.create_session(), browser.create_session()
    try:
        alike = _at_once(browser, (a, b), site.url + "/work")
        assert all(d["longTasks"] for d in alike)
        a.throttle(cpu_rate=4)
        # The same work, at the same time: 4x CPU makes the throttled session's task several times the
        # neighbour's, which a throttle reaching the neighbour too would not. Chromium's throttle adds idle time
        # in proportion to the CPU time a task used, so other load on the machine thins the factor (1.9 seen
        # with 20 processes waiting for 2 cores; 1.24 in a CI run beside another test's busy pages; two
        # unthrottled tabs measured together differed by up to 1.7x): up to four pairs, until one shows it.
        pairs = []
        while len(pairs) < 4 and not any(_ratio(pair) >= 2 for pair in pairs):
            pairs.append(_at_once(browser, (a, b), site.url + "/work"))
        assert all(slowed["throttle"] == {"cpuRate": 4} and neighbour["throttle"] == {} for slowed, neighbour in pairs)
        assert pairs[0][0]["answer"].startswith("Throttled: cpuRate 4.\n") and "Throttled" not in pairs[0][1]["answer"]
        assert _ratio(pairs[-1]) >= 2, ([[d["longTasks"][:1] for d in pair] for pair in pairs],
                                        [d["longTasks"][0]["duration"] for d in alike])
        a.throttle(cpu_rate=1, network="Slow 3G")
        slow, plain = (d["lcp"]["phases"] for d in _at_once(browser, (a, b), site.url + "/image"))
        assert slow["loadDuration"] >= 1500 > plain["loadDuration"] + 1000  # Slow 3G's 2 s round trip, A's alone
    finally:
        a.close()
        b.close()


def test_two_runs_compared_say_what_moved_and_why(browser, session, site):
    site.httpd.slow = False
    first = session.measure_performance(url=site.url + "/variant", runs=3)  # the median of three: less noise
    site.httpd.slow = True
    second = session.measure_performance(url=site.url + "/variant")
    site.httpd.slow = False
    third = session.measure_performance(url=site.url + "/variant", runs=3)
    moved = browser.compare_performance(second["refId"])  # the last earlier run of this URL: the first
    assert moved["baseline"] == first["refId"]
    text = moved["summary"]
    assert "FCP" in text and "worse" in text and "TBT" in text
    assert "slow.css" in text.split("Render-blocking: new ")[1].split("\n")[0] and "busy.js spin()" in text
    same = [browser.compare_performance(third["refId"], baseline=first["refId"])["summary"]]
    # Up to two more pairs: in the alone run a neighbour test's load once made one median of three 52 ms slower in
    # LCP and FCP than the next (92 against 40 ms), beyond the noise of a quiet machine.
    while not same[-1].startswith("Nothing moved") and len(same) < 3:
        again = session.measure_performance(url=site.url + "/variant", runs=3)
        same.append(browser.compare_performance(again["refId"], baseline=third["refId"])["summary"])
        third = again
    assert same[-1].startswith("Nothing moved beyond run-to-run noise"), same
    with pytest.raises(ContentNotFound):
        browser.compare_performance(first["refId"])  # nothing earlier of this URL


def test_the_stored_measurement_is_scrubbed_of_secrets(browser, session, site):
    session.navigate(site.url + "/field")
    session.type("#f", "Zq7-perf-secret", secret=True)
    answer, detail = measured(browser, session, url=site.url + "/busy?token=Zq7-perf-secret")
    stored = browser.get_content(answer["refId"], reset_cursor=True)["content"]
    assert "Zq7-perf-secret" not in stored and "Zq7-perf-secret" not in json.dumps(answer)
    assert "[REDACTED]" in detail["url"]


# The arithmetic on the entries, on made-up ones (no browser).

def test_ratings_at_the_published_thresholds():
    from mcpbrowser.perf_report import rating
    assert [rating("LCP", v) for v in (2500, 2501, 4000, 4001)] == ["good", "needs improvement",
                                                                    "needs improvement", "poor"]
    assert [rating("CLS", v) for v in (0.1, 0.11, 0.26)] == ["good", "needs improvement", "poor"]
    assert [rating("TBT", v) for v in (200, 600, 601)] == ["good", "needs improvement", "poor"]


def test_cls_is_the_largest_session_window_and_tbt_counts_after_fcp():
    from mcpbrowser.perf_report import cls, total_blocking_time
    shifts = [{"time": 0, "value": 0.1}, {"time": 900, "value": 0.1},  # one window: 0.2
              {"time": 2000, "value": 0.15},  # over 1 s after the last: a window of its own
              {"time": 2500, "value": 0.01}]
    assert cls(shifts) == pytest.approx(0.2)
    steady = [{"time": t, "value": 0.05} for t in range(0, 6001, 600)]  # every 600 ms: windows of 5 s at most
    assert cls(steady) == pytest.approx(0.05 * 9)
    tasks = [{"start": 0, "duration": 90}, {"start": 100, "duration": 300}, {"start": 500, "duration": 40}]
    assert total_blocking_time(tasks, fcp=200) == 150  # the first ended before FCP; the second counts from it


def test_inp_is_the_worst_interaction_with_its_own_phases_and_scripts():
    # The measurement reads every event entry of 16 ms or more while it waits for the paint: a page may have
    # had more than one interaction (a handler it ran before, a key and its click). INP is the worst of them,
    # described by its own events and the scripts that ran within it; an entry of no interaction (a hover's,
    # interactionId 0) is none, however long.
    from mcpbrowser.perf_report import interaction_of

    def events(interaction_id, start, duration, names=("pointerdown", "pointerup", "click")):
        return [{"name": name, "interactionId": interaction_id, "start": start + n, "duration": duration - n,
                 "processingStart": start + 5 + n, "processingEnd": start + duration - 20} for n, name in
                enumerate(names)]

    raw = {"events": [*events(1, 100, 40), *events(2, 400, 300), *events(3, 900, 120),
                      {"name": "pointerover", "interactionId": 0, "start": 1200, "duration": 500,
                       "processingStart": 1205, "processingEnd": 1690}],
           "frames": [{"start": 100, "duration": 60, "scripts": [{"fn": "light", "start": 105, "duration": 15}]},
                      {"start": 400, "duration": 300, "scripts": [{"fn": "heavy", "start": 405, "duration": 270}]},
                      {"start": 1200, "duration": 500, "scripts": [{"fn": "hover", "start": 1205, "duration": 480}]}]}
    inp = interaction_of(raw)
    assert (inp["value"], inp["event"]) == (300, "pointerdown")
    assert inp["phases"] == {"inputDelay": 5, "processing": 275, "presentationDelay": 20}
    assert [s["fn"] for s in inp["scripts"]] == ["heavy"]
    assert interaction_of({"events": raw["events"][-1:]}) is None  # a hover alone: no interaction


def test_third_parties_are_weighed_by_requests_bytes_and_their_scripts_main_thread_time():
    from mcpbrowser.perf_report import analyse
    raw = {"url": "https://shop.example.com/", "supported": ["long-animation-frame", "longtask"],
           "nav": {"ttfb": 10}, "fcp": 100, "lcp": None,
           "resources": [{"url": "https://cdn.tracker.net/t.js", "start": 20, "end": 80, "duration": 60,
                          "transfer": 3000},
                         {"url": "https://img.tracker.net/p.gif", "start": 30, "end": 50, "duration": 20,
                          "transfer": 500},
                         {"url": "https://static.example.com/app.js", "start": 20, "end": 40, "duration": 20,
                          "transfer": 9000}],
           "tasks": [{"start": 200, "duration": 120}],
           "frames": [{"start": 200, "duration": 120, "scripts": [
               {"url": "https://cdn.tracker.net/t.js", "fn": "track", "invoker": "x", "start": 200, "duration": 110}]}]}
    out = analyse(raw)
    assert out["thirdParties"] == [{"site": "tracker.net", "requests": 2, "transferKB": 3.5, "mainThreadMs": 110}]
    assert out["longTasks"][0]["script"]["fn"] == "track"
    # What this made-up engine lacks is named, not given as zero.
    assert out["missing"] == {"LCP": "this browser has no largest-contentful-paint entries",
                              "CLS": "this browser has no layout-shift entries"}
    assert "LCP" not in out["metrics"] and "CLS" not in out["metrics"]


def test_an_exported_session_replays_a_measurements_load_and_interaction():
    from mcpbrowser.core.script_export import build
    rows = [("r1", "navigate", {"sessionId": "s", "url": "http://127.0.0.1:1/a"}, "ok",
             {"url": "http://127.0.0.1:1/a", "title": "A"}, None),
            ("r2", "measure_performance", {"sessionId": "s", "url": "http://127.0.0.1:1/b", "selector": "#go"}, "ok",
             {"url": "http://127.0.0.1:1/b", "summary": "LCP 40 ms good."}, b'{"url": "http://127.0.0.1:1/b"}'),
            ("r3", "measure_performance", {"sessionId": "s"}, "ok", {"url": "http://127.0.0.1:1/b", "summary": ""},
             None),
            ("r4", "click", {"sessionId": "s", "selector": "#next"}, "ok", {"url": "http://127.0.0.1:1/b"}, None)]
    source, script = build(rows, "s", {})
    lines = [line.strip() for line in source.splitlines()]
    start = lines.index('page.goto("http://127.0.0.1:1/b")')  # the measured page, then what the agent did there
    assert lines[start + 1:start + 5] == ['page.locator("#go").click()', "page.reload()",
                                          'expect(page).to_have_url("http://127.0.0.1:1/b")',
                                          'page.locator("#next").click()']
    assert script.steps == 5


def test_a_long_task_without_a_script_says_what_it_was():
    from mcpbrowser.perf_report import analyse, summary
    frames = [{"start": 1000, "duration": 200, "layout": 1020, "render": 1010, "scripts": []},
              {"start": 2000, "duration": 100, "layout": 2090, "render": 2090, "scripts": []}]
    raw = {"url": "http://127.0.0.1:1/", "supported": ["long-animation-frame", "longtask"],
           "nav": {"ttfb": 5, "domContentLoaded": 500}, "fcp": 50, "lcp": None, "resources": [], "frames": frames,
           "tasks": [{"start": 1000, "duration": 200}, {"start": 100, "duration": 120},
                     {"start": 2000, "duration": 100}]}
    works = {t["start"]: t["work"] for t in analyse(raw)["longTasks"]}
    assert works == {1000: "style and layout 180 ms", 100: "parsing the HTML",
                     2000: "the browser's own work: no script ran"}
    tasks = analyse(raw)
    text = summary({"url": raw["url"], "metrics": {}, "longTasks": tasks["longTasks"]})
    assert "Long tasks: 200 ms style and layout 180 ms, 120 ms parsing the HTML" in text


def test_several_loads_are_told_by_the_median_one_with_their_spread():
    """performance.md: runs > 1 gives each metric's median and its spread, and the causes of the load whose LCP is
    the median one."""
    from mcpbrowser.perf_report import report, summary
    loads = [{"metrics": {"LCP": lcp, "FCP": lcp - 20}, "missing": {}, "viewport": {"load": lcp}}
             for lcp in (900, 300, 500)]
    out = report(loads, None, {"url": "http://127.0.0.1:1/"})
    assert out["viewport"] == {"load": 500}  # the median load's own causes, not the slowest's
    assert out["metrics"]["LCP"] == {"value": 500, "spread": [300, 900], "rating": "good"}
    assert out["runs"] == [{"LCP": 900, "FCP": 880}, {"LCP": 300, "FCP": 280}, {"LCP": 500, "FCP": 480}]
    assert "LCP 500 ms (300-900 ms) good; FCP 480 ms (280-880 ms) good." in summary(out)


def test_the_pages_own_favicon_and_what_blocked_rendering_after_the_first_paint_are_not_causes():
    from mcpbrowser.perf_report import analyse, site
    assert [site(u) for u in ("https://a.b.example.co.uk/", "https://cdn.example.com/", "http://127.0.0.1:1/")] == \
        ["example.co.uk", "example.com", "127.0.0.1"]
    page = "https://shop.example.co.uk/"

    def resource(path, start, **more):
        return {"url": page.rstrip("/") + path if path.startswith("/") else path, "start": start, "end": start + 20,
                "duration": 20, **more}

    raw = {"url": page, "supported": ["paint", "layout-shift", "longtask", "long-animation-frame"],
           "nav": {"ttfb": 10}, "fcp": 100, "lcp": None, "tasks": [], "frames": [],
           "resources": [resource("/favicon.ico", 5, type="other"), resource("/early.css", 20, blocking="blocking"),
                         resource("/late.css", 150, blocking="blocking"),
                         resource("https://cdn.tracker.co.uk/t.js", 30, transfer=2000)]}
    out = analyse(raw)
    assert [r["url"].rsplit("/", 1)[1] for r in out["requests"]] == ["early.css", "t.js", "late.css"]
    assert [r["url"] for r in out["renderBlocking"]] == [page + "early.css"]
    assert out["thirdParties"] == [{"site": "tracker.co.uk", "requests": 1, "transferKB": 2.0, "mainThreadMs": 0}]


def test_a_change_within_either_runs_spread_is_noise_and_other_throttling_is_not_alike():
    from mcpbrowser.perf_report import compare
    before = {"url": "http://127.0.0.1:1/", "metrics": {"FCP": {"value": 100, "spread": [60, 220], "rating": "good"}}}
    after = {"url": "http://127.0.0.1:1/", "metrics": {"FCP": {"value": 180, "rating": "good"}}}
    assert compare(before, after) == "Nothing moved beyond run-to-run noise."  # 80 ms, within the 160 ms spread
    lone = {**before, "metrics": {"FCP": {"value": 100, "rating": "good"}}}
    assert compare(lone, after).startswith("Moved: FCP 100 ms -> 180 ms (+80 ms, +80%) worse")  # the control
    throttled = {**after, "throttle": {"cpuRate": 4}}
    assert compare(before, throttled).startswith("Not alike: throttling none then cpuRate 4.\n")
