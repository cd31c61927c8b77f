"""End to end: `snapshot` answers from the page's last whole snapshot only when the page provably
did not change since, and walks it again on every change a page can make by itself.

Each change is made by the page's own timer, after the capture that armed the watch, so only
the watch can tell the next snapshot about it; the server's log says whether a snapshot was
reused, and the answer must show the change.
"""

import time

import pytest
from support import McpClient, wait_for

pytestmark = pytest.mark.e2e

PAGE = """<!doctype html><title>Watched</title>
<h1>Watched page</h1><p id=t>before</p>
<label>Field <input id=f value=start></label>
<label>Box <input id=c type=checkbox></label>
<select id=s aria-label=Choice><option>one<option>two</select>
<p id=h hidden>shown later</p>
<details id=d><summary>More</summary><p>inside details</p></details>
<div id=pop popover>popover text</div>
<div id=host></div>
<div id=plain>plain host</div>
<button id=b onclick="document.getElementById('t').textContent = 'clicked'">Press</button>
<script>document.getElementById('host').attachShadow({mode: 'open'}).innerHTML = '<p>shadow before</p>'</script>"""

FRAMED = "<!doctype html><title>Framed</title><p>outer</p><iframe srcdoc='<p>inner</p>'></iframe>"


@pytest.fixture(scope="module")
def client():
    """This module's server offers evaluate: the page's own timers are set through it."""
    c = McpClient("--allow-evaluate")
    yield c
    c.close()


@pytest.fixture(scope="module")
def site(pages):
    from support import PAGES
    PAGES["/watched"], PAGES["/framed"] = PAGE, FRAMED
    yield pages
    del PAGES["/watched"], PAGES["/framed"]


def reused(client, since):
    """Whether each snapshot call logged after the first `since` log lines was answered from the last one."""
    lines = [e for e in client.server_log()[since:] if e.get("event") == "tool_call" and e["tool"] == "snapshot"]
    return [bool(e.get("snapshot_reused")) for e in lines]


def later(client, session, script):
    """Have the page run `script` by itself 1 s from now, and wait until it has.

    1 s, not 300 ms: the evaluate's capture (after its answer) must arm the watch before the change,
    and on a loaded 2-core machine it came later than 300 ms (the change was then in the capture,
    and the next snapshot rightly reused it: the test saw no walk).

    A one-shot interval, not a timeout: the settle rule waits for an action's short timeouts
    (the change would land inside the evaluate call, before its capture), not for intervals."""
    client.tool("evaluate", sessionId=session,
                expression=f"() => {{ const id = setInterval(() => {{ clearInterval(id); {script} }}, 1000) }}")
    time.sleep(1.5)


def test_a_snapshot_after_a_capture_is_the_capture_when_nothing_changed(client, session, site):
    nav = client.tool("navigate", sessionId=session, url=site.url("/watched"))
    since = len(client.server_log())
    first = client.tool("snapshot", sessionId=session)
    second = client.tool("snapshot", sessionId=session)
    assert wait_for(lambda: len(reused(client, since)) == 2)
    assert reused(client, since) == [True, True]
    assert first["snapshot"] == second["snapshot"] == client.tool("get_content", ref_id=nav["refId"])["content"]
    assert "Watched page" in first["snapshot"]
    # Its refs work: Playwright's last snapshot is still the one we answered with.
    ref = next(line.split("[ref=")[1].split("]")[0] for line in first["snapshot"].splitlines()
               if 'button "Press"' in line)
    client.tool("click", sessionId=session, ref=ref)
    assert "clicked" in client.tool("snapshot", sessionId=session)["snapshot"]


CHANGES = {
    "text": ("document.getElementById('t').firstChild.data = 'after'", "after"),
    "element": ("document.body.insertAdjacentHTML('beforeend', '<p>after</p>')", "after"),
    "attribute": ("document.getElementById('h').hidden = false", "shown later"),
    "value": ("document.getElementById('f').value = 'after'", "after"),
    "checked": ("document.getElementById('c').checked = true", "[checked]"),
    "selected": ("document.getElementById('s').selectedIndex = 1", 'option "two" [selected]'),
    "focus": ("document.getElementById('f').focus()", 'textbox "Field" [active]'),
    "details": ("document.getElementById('d').open = true", "inside details"),
    "popover": ("document.getElementById('pop').showPopover()", "popover text"),
    "shadow": ("document.getElementById('host').shadowRoot.firstChild.textContent = 'after'", "after"),
    "new shadow root": ("document.getElementById('plain').attachShadow({mode: 'open'}).innerHTML = '<b>after</b>'",
                        "after"),
    "url": ("history.pushState({}, '', '#after')", None),
}


@pytest.mark.parametrize("change", CHANGES)
def test_every_change_the_page_makes_by_itself_is_seen(client, session, site, change):
    script, shown = CHANGES[change]
    client.tool("navigate", sessionId=session, url=site.url("/watched"))
    before = client.tool("snapshot", sessionId=session)["snapshot"]
    if shown is not None:
        assert shown not in before
    later(client, session, script)  # the evaluate's capture armed the watch; then the page changes
    since = len(client.server_log())
    after = client.tool("snapshot", sessionId=session)
    assert wait_for(lambda: reused(client, since))
    assert reused(client, since) == [False], change
    if shown is not None:
        assert shown in after["snapshot"], after["snapshot"]
    else:
        assert after["url"].endswith("#after")


def test_a_page_with_frames_is_always_read_again(client, session, site):
    client.tool("navigate", sessionId=session, url=site.url("/framed"))
    since = len(client.server_log())
    answer = client.tool("snapshot", sessionId=session)["snapshot"]
    client.tool("snapshot", sessionId=session)
    assert wait_for(lambda: len(reused(client, since)) == 2)
    assert reused(client, since) == [False, False]  # a frame's own document is not watched
    assert "inner" in answer


def test_a_partial_snapshot_is_never_given_again_and_breaks_the_chain(client, session, site):
    client.tool("navigate", sessionId=session, url=site.url("/watched"))
    since = len(client.server_log())
    shallow = client.tool("snapshot", sessionId=session, depth=1)["snapshot"]
    whole = client.tool("snapshot", sessionId=session)["snapshot"]
    assert wait_for(lambda: len(reused(client, since)) == 2)
    # The depth-limited read replaced Playwright's refs, so the capture before it is not given again.
    assert reused(client, since) == [False, False]
    assert len(shallow) < len(whole) and "inside details" not in shallow
