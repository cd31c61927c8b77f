"""The live picture in a real browser (issue 65): a change on the agent's page shows on the person's screen
within 0.3 s, ten times in a row, timed from the change to the pixels the view's page shows.

The person's browser is a real Chromium (Playwright) on the view's session page. A loop of its own
(requestAnimationFrame, run just before each paint) reads the picture's middle pixel and notes when its colour
changes; the agent's page changes its background colour with `evaluate`, which returns the moment of the change.
Both are Date.now() of the same machine's clock.
"""

import time

import pytest
from playwright.sync_api import sync_playwright
from support import HtmlSite, HttpServer, SdkClient

from mcpbrowser.core.browser_process import find_executable
from mcpbrowser.session.screencast import FPS

pytestmark = [pytest.mark.e2e, pytest.mark.alone]  # it bounds a time

TOKEN = "ann-" + "a" * 24
GOAL_MS = 300
# The screencast sends at most screencast.FPS frames a second, on a page that changes faster too: there a
# change may wait one frame interval more (0.2 s). An agent's actions come slower than that; so do the changes.
SPACING_S = 1 / FPS + 0.05
COLOURS = [(220, 30, 30), (30, 200, 40), (30, 60, 220), (240, 220, 20), (20, 20, 20)] * 2
NEAR = 40  # a colour's channels as a JPEG of quality 60 gives them back
# The person's page, from the test: the picture's middle pixel, noted with the time whenever its colour changes;
# __shown(colour, after, near, ms) answers when the picture first showed that colour after `after` (null after ms):
# one round trip a change, where polling would load the machine the test measures.
WATCH = """() => {
  const seen = window.__seen = [], waiting = [];
  window.__shown = (c, after, near, ms) => new Promise((resolve) => {
    const fits = (s) => s.at >= after && s.rgb.every((v, i) => Math.abs(v - c[i]) <= near);
    const found = seen.find(fits);
    if (found) return resolve(found.at);
    waiting.push({ fits, resolve });
    setTimeout(() => resolve(null), ms);
  });
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = 1;
  const pen = canvas.getContext('2d', { willReadFrequently: true });
  let last = '';
  const look = () => {
    const picture = document.getElementById('live-picture');
    const w = picture && (picture.naturalWidth || picture.width);
    if (w) {
      const h = picture.naturalHeight || picture.height;
      pen.drawImage(picture, w / 2, h / 2, 1, 1, 0, 0, 1, 1);
      const rgb = Array.from(pen.getImageData(0, 0, 1, 1).data.slice(0, 3));
      if (rgb.join() !== last) {
        last = rgb.join();
        const now = { rgb, at: Date.now() };
        seen.push(now);
        for (const w of waiting) if (w.fits(now)) w.resolve(now.at);
      }
    }
    requestAnimationFrame(look);
  };
  requestAnimationFrame(look);
}"""


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tokens = tmp_path_factory.mktemp("picture") / "tokens"
    tokens.write_text(f"ann {TOKEN}\n")
    site = HtmlSite(lambda url: "<!doctype html><title>Colours</title><body style='margin:0;background:#fff'>")
    server = HttpServer("--http-token-file", str(tokens), "--view", "http", "--allow-evaluate")
    agent = SdkClient(server.url, token=TOKEN)
    sid = agent.tool("create_session")["sessionId"]
    agent.tool("navigate", sessionId=sid, url=site.url + "/")
    yield server, agent, sid
    agent.close()
    server.close()
    site.close()


def test_a_change_on_the_page_shows_in_the_persons_browser_within_300_ms_ten_times(served):
    server, agent, sid = served
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=find_executable("chromium"))
        try:
            page = chromium.new_page(viewport={"width": 1280, "height": 900})
            page.goto(server.base + "/view/")
            page.fill("input[name=token]", TOKEN)
            page.click("button[type=submit]")
            page.wait_for_url(server.base + "/view/")
            page.add_init_script(f"({WATCH})()")
            opened = page.evaluate("() => Date.now()")
            page.goto(server.base + f"/view/s/{sid}")
            page.wait_for_function("() => window.__seen.some((s) => s.rgb.join() !== '0,0,0')", timeout=10_000)
            first = page.evaluate("() => window.__seen[0].at") - opened
            late, last = [], 0.0
            for colour in COLOURS:
                time.sleep(max(0.0, last + SPACING_S - time.monotonic()))
                last = time.monotonic()
                changed = agent.tool("evaluate", sessionId=sid, expression=(
                    f"() => {{ document.body.style.background = 'rgb{colour}'; return Date.now(); }}"))["result"]
                # bounded: a picture that never shows the colour answers null after 5 s, and fails
                shown = page.evaluate("([c, after, near]) => window.__shown(c, after, near, 5000)",
                                      [list(colour), changed, NEAR])
                late.append(None if shown is None else shown - changed)
            print(f"\nfirst frame {first} ms after opening the session's page; change to pixels (ms): {late}")
            assert all(ms is not None and ms <= GOAL_MS for ms in late), late
            # one stream read by the page (no reopening), one screencast
            cast = page.evaluate("async (url) => (await (await fetch(url)).json()).screencast", f"/view/api/s/{sid}")
            assert cast == {"viewers": 1, "starts": 1}
        finally:
            chromium.close()
