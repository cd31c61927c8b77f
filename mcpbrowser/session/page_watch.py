"""Knowing that a page has not changed since its last whole snapshot, without reading it again.

SESSION THREAD ONLY: the functions take the session's SessionState.

A `snapshot` right after a page-changing call (the agent's usual "act, then look")
would walk the page a second time: the history's capture has just walked it. On
a real page a walk is the most expensive thing we do (about 200 ms of renderer
CPU on Sphinx's autodoc page), so `snapshot` answers with the last whole-page
snapshot when the page provably did not change since.

How it is proved: a Playwright selector engine of ours (ENGINE) runs in
Playwright's utility world, an isolated JavaScript world that the page cannot
see or reach. Every whole-page snapshot resolves its root through it
(`ARM`), in the same evaluation as the walk, so arming and walking cost no
extra round trip and nothing can happen between them. Arming starts a
MutationObserver over the document and every open shadow root, and listens,
in the capture phase, for every input, focus, toggle, animation and
transition event; it also notes the URL, the focused element and every form
control's value and checked state (script can set those without a mutation).
`CLEAN` is true only when none of that moved. A new document has a fresh
utility world, so it is never clean.

What it cannot see, and so where a page counts as never clean: pages with
frames (`iframe`, `frame`, `object`, `embed`: their documents are not
observed) or custom elements not yet defined (their upgrade attaches a
shadow root without a mutation). Left unseen, knowingly: style sheet
changes made through the CSSOM (`insertRule`, `adoptedStyleSheets`) and
Web Animations that hide or show an element without any DOM change. Those
are rare enough that a page using them to show new content after its last
snapshot is accepted as a risk; a `snapshot` with `depth` always walks.

The history's capture after a call (snapshots.capture_snapshot) uses the
watch too: a page that did not change since the last whole snapshot is
stored as that snapshot, checked in the evaluation that would walk it
(`changed`). What the page cannot forge: the watch's state lives in the
utility world, out of the page's reach, and every arming has a token, so a
check asks about the arming of the snapshot it would reuse. What it could
hide: a page's own listener, registered before ours, may stop the events
our input sends (a click's pointer events) from reaching the watch, and
what they change in CSS alone (`:hover`) makes no mutation. So a call that
may have sent input (any tool but the read-only ones and SENDS_NO_INPUT)
drops the held snapshot as it starts (snapshots.before_call): its page is walked again, as
the events would have made it anyway, and a forged quiet costs the page
nothing but a walk. So does `evaluate`: the agent's script may change what
the watch cannot see (the CSSOM, Web Animations).
"""

from mcpbrowser.logs import log

ENGINE_NAME = "mcpbrowser_watch"
# Page-changing tools that send the page no pointer, keyboard or viewport input, and run none of the agent's
# script (`evaluate`'s may well edit a style sheet through the CSSOM, which the watch cannot see): the watch sees
# all they do.
SENDS_NO_INPUT = frozenset({"handle_dialog"})

# Selectors through the engine. Each arming carries a token (a number the session picks), so that a check can
# ask about one arming: "clean since the arming that read the snapshot I hold", not since whichever came last.
def arm(token):
    """Resolves to the page's body (what a page-level aria snapshot starts at), arming the watch as `token`."""
    return f"{ENGINE_NAME}=arm:{token}"


def changed(token):
    """arm(token) when the page changed since the last arming; no match, and no arming, when it did not."""
    return f"{ENGINE_NAME}=changed:{token}"


def clean(token):
    """One match when the watch was last armed as `token` and the page did not change since, else none."""
    return f"{ENGINE_NAME}=clean:{token}"


ENGINE = r"""({
  queryAll(root, body) {
    const [op, token] = body.split(':');
    const KEY = Symbol.for('mcpbrowser.watch');
    const EVENTS = ['input', 'change', 'beforeinput', 'toggle', 'beforetoggle', 'focusin', 'focusout',
      'pointerdown', 'pointerup', 'pointerover', 'pointerout', 'mousedown', 'mouseup', 'mouseover', 'mouseout',
      'click', 'dblclick', 'keydown', 'keyup', 'wheel', 'submit', 'reset', 'hashchange', 'popstate',
      'animationstart', 'animationend', 'animationcancel', 'transitionrun', 'transitionend', 'transitioncancel',
      'fullscreenchange', 'resize'];
    const doc = document;
    const scan = () => {
      const roots = [doc];
      for (let i = 0; i < roots.length; i++) {
        if (roots[i].querySelector('iframe,frame,object,embed,:not(:defined)')) return null;
        for (const e of roots[i].querySelectorAll('*')) if (e.shadowRoot) roots.push(e.shadowRoot);
      }
      return roots;
    };
    const active = () => {
      let a = doc.activeElement;
      while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
      return a;
    };
    const forms = (roots) => {
      let s = '';
      for (const r of roots)
        for (const e of r.querySelectorAll('input,textarea,select')) {
          s += e.value + (e.checked ? '+' : '-') + (e.indeterminate ? '+' : '-');
          if (e.options) for (const o of e.options) s += o.selected ? '+' : '-';
          s += '\u0000';
        }
      return s;
    };
    let w = globalThis[KEY];
    const clean = () => {
      if (!w || !w.armed || w.dirty || location.href !== w.url || active() !== w.active) return false;
      const roots = scan();
      return !!roots && roots.length === w.roots && forms(roots) === w.forms;
    };
    if (op === 'clean') return w && w.token === token && clean() ? [doc.documentElement] : [];
    if (op === 'changed' && clean()) return [];
    if (op !== 'arm' && op !== 'changed') throw new Error('mcpbrowser_watch: arm, changed or clean');
    if (!w) {
      w = globalThis[KEY] = {};
      w.observer = new MutationObserver(() => { w.dirty = true; w.observer.disconnect(); });
      for (const type of EVENTS) addEventListener(type, () => { w.dirty = true; }, true);
    }
    w.observer.disconnect();
    const roots = scan();
    w.armed = !!roots;
    w.dirty = !roots;
    w.token = token;
    if (roots) {
      for (const r of roots)
        w.observer.observe(r, {subtree: true, childList: true, attributes: true, characterData: true});
      w.url = location.href;
      w.active = active();
      w.roots = roots.length;
      w.forms = forms(roots);
    }
    return doc.body ? [doc.body] : [];
  }
})"""


def register(playwright):
    """Register the engine with a session's Playwright, before its context is made; False if refused."""
    try:
        playwright.selectors.register(ENGINE_NAME, ENGINE, content_script=True)
    except Exception as exc:  # an already-registered name on a shared Playwright, or an older server
        if "already registered" in str(exc):
            return True
        log.warning("page watch unavailable", extra={"error": str(exc)})
        return False
    return True
