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
"""

from mcpbrowser.logs import log

ENGINE_NAME = "mcpbrowser_watch"
ARM = f"{ENGINE_NAME}=arm"      # resolves to the page's body (what a page-level aria snapshot starts at)
CLEAN = f"{ENGINE_NAME}=clean"  # one match when the page did not change since the last ARM, else none

ENGINE = r"""({
  queryAll(root, op) {
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
    if (op === 'clean') {
      if (!w || !w.armed || w.dirty || location.href !== w.url || active() !== w.active) return [];
      const roots = scan();
      if (!roots || roots.length !== w.roots || forms(roots) !== w.forms) return [];
      return [doc.documentElement];
    }
    if (op !== 'arm') throw new Error('mcpbrowser_watch: arm or clean');
    if (!w) {
      w = globalThis[KEY] = {};
      w.observer = new MutationObserver(() => { w.dirty = true; w.observer.disconnect(); });
      for (const type of EVENTS) addEventListener(type, () => { w.dirty = true; }, true);
    }
    w.observer.disconnect();
    const roots = scan();
    w.armed = !!roots;
    w.dirty = !roots;
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
