"""Knowing that a page has not changed since its last whole snapshot, without reading it again.

SESSION THREAD ONLY: the functions take the session's SessionState.

A `snapshot` right after a page-changing call would walk the page a second time (the history's capture has just walked
it, and a walk is the most expensive thing we do), so `snapshot` answers with the last whole-page snapshot when the page
provably did not change since. What each check refuses, as a user sees it, is in docs/history.md ("A `snapshot` right
after another reads nothing twice").

How it is proved: a Playwright selector engine of ours (ENGINE) runs in Playwright's utility world, which the page
cannot see or reach. Every whole-page snapshot resolves its root through it (`arm`), in the same evaluation as the walk:
no extra round trip, and nothing can happen between them. Arming observes every mutation of the document and its open
shadow roots, listens in the capture phase for input, focus, toggle, animation and transition events, and notes the URL,
the focus, every form control's value and checked state, the style sheets (rule counts, media, disabled), the open
popovers and the animations that show or hide (none of which is a mutation). `clean` is true only when none of that
moved; a new document has a fresh utility world, so it is never clean. The page cannot forge the watch's state, which
lives in that world.

Never clean, since their changes escape the watch: pages with frames (their documents are not observed), custom elements
not yet defined (their upgrade attaches a shadow root without a mutation), manually assigned slots. Left unseen,
knowingly, as rare: a style rule edited in place through the CSSOM, a sheet replaced with as many rules, a registered
custom property, a closed shadow root. A `snapshot` with `depth` always walks.

The history's capture (snapshots.capture_snapshot) checks the same way in the evaluation that would
walk (`changed`). A page's own listener may stop our input's events before the watch hears them,
and what they change in CSS alone (`:hover`) makes no mutation, so a call that may send input (any
tool but the read-only ones and SENDS_NO_INPUT) drops the held snapshot as it starts
(snapshots.before_call): a forged quiet costs nothing but a walk. So does `evaluate` (the CSSOM).

Three edits instead of a walk, each proved by one read that also re-arms the watch: `typed` (a `type` that filled one
plain text field: its value and the focus are read, not heard), `chose` (a `select` of one option in a plain native
select: its [selected] mark moves) and `wrote` (a `type` into a contenteditable textbox, as CodeMirror's and
ProseMirror's are: the editor's lines computed as Playwright's walk writes them, only for the shapes where that is
certain). Each refuses where a walk might write the page otherwise: anything but plain containers around the field, a
name taken from it, another control holding the same text (a hidden secret field), a style rule that "reacts" (applies
by the focus, a validity, :has() and the like, in any sheet or nested rule, and sets a property that may change what a
walk writes: `reactive`), a field sized by its content. The editor's lines are computed here, not by Playwright's walk
of the editor alone (locator.aria_snapshot): any aria snapshot replaces the one Playwright resolves `aria-ref` against,
so every ref outside the editor would stop resolving until the next whole walk.
"""

from mcpbrowser.logs import log

ENGINE_NAME = "mcpbrowser_watch"
# Page-changing tools that send the page no pointer, keyboard or viewport input, and run none of the agent's script
# (`evaluate`'s may well edit a style sheet through the CSSOM, which the watch cannot see): the watch sees all they do.
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


def typed(token, held, value, refs):
    """Scoped to the text field a `type` filled: when since the arming `held` nothing changed on the page but
    the focus (now on the field) and the field's value, which is `value`, and the field is one of `refs` (of
    the snapshot read with that arming), as many elements as its place among them (1 for the first), the
    watch re-armed as `token`; else none. A count of it says which line to change, in one round trip."""
    return f"{ENGINE_NAME}=typed:{token}:{held}:{value_hash(value)}:{'.'.join(refs)}"


def chose(token, held, lists):
    """Scoped to the native select a `select` set to one option: when since the arming `held` nothing changed on
    the page but that select's choice, the focus where it was, and the select is one of `lists` ((ref, its
    option lines' count) of the snapshot read with that arming) with every option shown, as many elements as
    the chosen option's place among all of their options (1 for the first list's first), the watch re-armed as
    `token`; else none. A count of it says which line to mark, in one round trip."""
    return f"{ENGINE_NAME}=chose:{token}:{held}:-:{'.'.join(f'{ref}/{count}' for ref, count in lists)}"


def wrote(token, held):
    """Of the whole page: after a `type` into the focused editor (a contenteditable textbox), when since the arming
    `held` nothing changed on the page but the focus (now on it) and its content, and a walk's lines of it are
    certain, one element out of the document whose text is {"ref": its ref, "lines": [[role, ref, text], ...]}
    (JSON), the watch re-armed as `token`; else one of no text. Read by text_content, in the watch's world."""
    return f"{ENGINE_NAME}=wrote:{token}:{held}"


def value_hash(text):
    """FNV-1a (32 bits) over the text's UTF-16 code units, as the engine computes it of a field's value."""
    h = 0x811C9DC5
    data = text.encode("utf-16-le")
    for i in range(0, len(data), 2):
        h = ((h ^ (data[i] | data[i + 1] << 8)) * 0x01000193) & 0xFFFFFFFF
    return h


ENGINE = r"""({
  queryAll(root, body) {
    const [op, token] = body.split(':');
    const KEY = Symbol.for('mcpbrowser.watch');
    const EVENTS = ['input', 'change', 'beforeinput', 'toggle', 'beforetoggle', 'focusin', 'focusout',
      'pointerdown', 'pointerup', 'pointerover', 'pointerout', 'mousedown', 'mouseup', 'mouseover', 'mouseout',
      'click', 'dblclick', 'keydown', 'keyup', 'wheel', 'submit', 'reset', 'hashchange', 'popstate',
      'animationstart', 'animationend', 'animationcancel', 'transitionrun', 'transitionend', 'transitioncancel',
      'fullscreenchange', 'resize', 'scroll'];
    const doc = document;
    const scan = () => {
      const roots = [doc];
      for (let i = 0; i < roots.length; i++) {
        if (roots[i].querySelector('iframe,frame,object,embed,:not(:defined)')) return null;
        if (roots[i].slotAssignment === 'manual') return null;  // slot.assign() moves content without a mutation
        for (const e of roots[i].querySelectorAll('*')) if (e.shadowRoot) roots.push(e.shadowRoot);
      }
      return roots;
    };
    // The style sheets (each one's rule count, media and whether it is disabled, none a mutation: insertRule, a
    // <style>'s .disabled, sheet.media), the open popovers (showPopover, whose toggle events a page may stop
    // first) and the animations that show or hide, finished ones that still apply their end included.
    // The properties that change neither a box's size, its visibility, its pointer events nor its text (a
    // custom property may feed any of those through var(); a filter makes a box hold fixed ones).
    const HARMLESS = new RegExp('^(color|opacity|caret-color|accent-color|cursor|box-shadow|text-shadow|' +
      'fill|stroke|scrollbar-color|background-.*|border-(top|right|bottom|left|block-start|block-end|' +
      'inline-start|inline-end)-color|outline-.*|text-decoration-.*|text-underline-offset|transition-.*)$');
    const sheets = (r) => [...r.styleSheets, ...(r.adoptedStyleSheets || [])];
    const rules = (sheet) => { try { return sheet.cssRules; } catch (e) { return null; } };  // another origin's
    const popovers = (r) => { try { return r.querySelectorAll(':popover-open').length; } catch (e) { return 0; } };
    const looks = (roots) => roots.map(r => sheets(r).map(s => (s.disabled ? 'd' : 'e') + (rules(s) || []).length +
      (s.media && s.media.mediaText ? '@' + s.media.mediaText : '')).join(',') + '/' + popovers(r)).join(';') +
      '|' + doc.getAnimations().filter(shows).length + '|' + scrollX + ',' + scrollY;
    // An animation whose keyframes may change what a walk writes (any property but HARMLESS's: display,
    // visibility, a size, pointer events): it changes the page later without a mutation, and a page may stop
    // its events; while one runs, no page is clean. A scroll-driven one moves with the scroll, which is heard.
    const KEYFRAME = new Set(['offset', 'computedOffset', 'easing', 'composite']);
    const shows = (a) => a.effect && a.effect.getKeyframes && a.effect.getKeyframes().some(k => Object.keys(k)
      .some(p => !KEYFRAME.has(p) && !HARMLESS.test(p.replace(/[A-Z]/g, c => '-' + c.toLowerCase()))));
    const revealing = () => doc.getAnimations().some(a => a.playState !== 'finished' && shows(a));
    const active = () => {
      let a = doc.activeElement;
      while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
      return a;
    };
    const controls = (roots) => roots.flatMap(r => [...r.querySelectorAll('input,textarea,select')]);
    const state = (e) => {  // what a control shows beside its value
      let s = (e.checked ? '+' : '-') + (e.indeterminate ? '+' : '-');
      if (e.options) for (const o of e.options) s += o.selected ? '+' : '-';
      return s;
    };
    const forms = (list) => list.map(e => e.value + state(e));
    const hash = (text) => {  // snapshots' value_hash
      let h = 0x811c9dc5;
      for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
      return h;
    };
    // What a move of the focus fires wherever it goes: the field left commits its value (`change`), which
    // `typed` reads for itself; `clean` counts them as any event.
    const FOCUS = new Set(['focusin', 'focusout', 'change']);
    let w = globalThis[KEY];
    const quiet = (field) => w && w.armed && !w.dirty && !w.host && location.href === w.url &&
      w.heard.every(t => t === field);
    const clean = () => {
      if (!quiet(undefined) || w.focusMoved || active() !== w.active || revealing()) return false;
      const roots = scan();
      return !!roots && roots.length === w.roots && forms(controls(roots)).join('\u0000') === w.forms.join('\u0000')
        && looks(roots) === w.looks;
    };
    // Rules that apply by what typing changes: the focus, a value's validity, the placeholder shown, :has() over
    // them, custom states, the direction a dir=auto field takes from its text. A sheet of another origin
    // cannot be read: it may.
    const REACTS = new RegExp(':(focus|valid|invalid|user-valid|user-invalid|placeholder-shown|has|in-range|' +
      'out-of-range|state|blank|autofill|dir)\\b', 'i');
    // A choice changes what :checked and :default match (an option's), and a required select's validity.
    const CHOICE_REACTS = /:(checked|default|valid|invalid|user-valid|user-invalid|has|state)\b/i;
    // Whether a rule that applies by them may change what a walk writes: any property but HARMLESS's. Under a selector,
    // a nested rule's parent, an @scope or a condition that applies by them; an imported sheet read too. Read once a
    // document for each look of its style sheets (w.looks, the callers' check that they are as armed): a page of 30,000
    // rules took 40 ms a scan, more than the walk the edit saves on a small page.
    const harmless = (style) => { for (let i = 0; i < style.length; i++) if (!HARMLESS.test(style[i])) return false;
      return true; };
    const reactive = (roots, reacts = REACTS) => {
      const key = w.looks + '|' + reacts.source;
      if (w.reacting && w.reacting.has(key)) return w.reacting.get(key);
      const visit = (list, under) => {
        for (const rule of list) {
          const applies = under || [rule.selectorText, rule.conditionText, rule.start, rule.end]
            .some(t => t && reacts.test(t));
          if (applies && rule.style && !harmless(rule.style)) return true;
          if (rule.styleSheet) {  // @import
            const imported = rules(rule.styleSheet);
            if (!imported || visit(imported, applies)) return true;
          }
          if (rule.cssRules && visit(rule.cssRules, applies)) return true;
        }
        return false;
      };
      const found = roots.some(r => sheets(r).some(s => {
        const list = rules(s);
        return !list || visit(list, false);
      }));
      if (!w.reacting || w.reacting.size > 16) w.reacting = new Map();
      w.reacting.set(key, found);
      return found;
    };
    // Elements an embedded field's value may name (ARIA's name from content: a link, a button, a heading, a
    // cell, an option, a legend's fieldset, a figcaption's figure, any element with a role): only plain
    // containers may hold the field, and a <label> only its own.
    const PLAIN = new Set(['BODY', 'DIV', 'SPAN', 'FORM', 'P', 'SECTION', 'MAIN', 'ARTICLE', 'NAV', 'HEADER',
      'FOOTER', 'ASIDE', 'LABEL', 'UL', 'OL', 'LI', 'DL', 'DD', 'DT', 'FIELDSET', 'B', 'I', 'EM', 'STRONG', 'SMALL']);
    const plainly = (field) => {
      for (let a = field.parentElement; a && a !== doc.documentElement; a = a.parentElement)
        if (!PLAIN.has(a.tagName) || a.hasAttribute('role') || a.hasAttribute('aria-owns') ||
            (a.tagName === 'LABEL' && a.control !== field)) return false;
      return true;
    };
    // A field sized by its content: its value moves the boxes around it (a ref may go, a container query apply).
    const sized = (field) => getComputedStyle(field).fieldSizing === 'content';
    // Whether another element is named after the field's container, or owns it into its own name.
    const named = (roots, field) => roots.some(r => [...r.querySelectorAll('[aria-labelledby],[aria-owns]')].some(e =>
      ((e.getAttribute('aria-labelledby') || '') + ' ' + (e.getAttribute('aria-owns') || '')).split(/\s+/).some(id => {
        const by = id && r.getElementById(id);
        return by && by.contains(field);
      })));
    // Only the field's value and the focus moved: nothing else of the page's reads it into a name (a label
    // holding another control, an aria-labelledby over it), and it is a text field whose line shows its value.
    const typed = (field, held, want) => {
      if (!w || w.token !== held || !quiet(field) || active() !== field || !doc.hasFocus() || !w.hasFocus) return false;
      if (!(field instanceof HTMLTextAreaElement || (field instanceof HTMLInputElement &&
            ['text', 'search', 'email', 'url', 'tel'].includes(field.type)))) return false;
      // In the document itself (a field in a shadow root: its host holds the focus mark) and plainly held.
      if (field.getRootNode() !== doc || field.hasAttribute('role') || !plainly(field) || revealing() ||
          sized(field)) return false;
      const roots = scan();
      if (!roots || roots.length !== w.roots || looks(roots) !== w.looks || named(roots, field)) return false;
      const list = controls(roots), now = forms(list);
      // Another control holding the same text (a secret field, shown or not, whose value the walk hides
      // wherever it stands): the walk decides.
      if (field.value && list.some(e => e !== field && e.value === field.value)) return false;
      return list.length === w.controls.length && list.every((e, i) => e === w.controls[i] &&
        (e === field ? w.forms[i].endsWith(state(e)) : now[i] === w.forms[i])) &&
        list.includes(field) && hash(field.value) === Number(want) && !reactive(roots);
    };
    // Only the select's choice moved (the focus stayed where it was): a plain native select of one choice, every
    // option of it a line of the held snapshot (`count` of them: none hidden, no group), nothing reading its
    // choice into a name (a label holding another control, an aria-labelledby over it).
    const chose = (field, held, count) => {
      if (!w || w.token !== held || !quiet(field) || active() !== w.active || doc.hasFocus() !== w.hasFocus)
        return false;
      if (!(field instanceof HTMLSelectElement) || field.multiple || field.size > 1 || field.selectedIndex < 0 ||
          field.options.length !== count || field.querySelector('optgroup') || field.hasAttribute('aria-owns') ||
          getComputedStyle(field).appearance === 'base-select') return false;
      if (field.getRootNode() !== doc || field.hasAttribute('role') || !plainly(field) || revealing() ||
          sized(field)) return false;
      const roots = scan();
      if (!roots || roots.length !== w.roots || looks(roots) !== w.looks || named(roots, field)) return false;
      const list = controls(roots), now = forms(list);
      return list.length === w.controls.length && list.every((e, i) => e === w.controls[i] &&
        (e === field || now[i] === w.forms[i])) && list.includes(field) && !reactive(roots, CHOICE_REACTS);
    };
    // The editing host that holds a node: the topmost contenteditable element around it, in the document itself.
    const hostOf = (node) => {
      let e = node && (node.nodeType === 1 ? node : node.parentElement);
      if (!e || !e.isContentEditable || e.getRootNode() !== doc) return null;
      while (e.parentElement && e.parentElement.isContentEditable) e = e.parentElement;
      return e;
    };
    // The mutations since the arming, as they come: all inside one editing host (its text, its lines, a class of
    // an element in it) leave the page to `wrote` to judge (w.host, which no other check takes as clean); any
    // other makes it dirty. A node out of the document is not walked: its removal was a record of its own.
    const took = (records) => {
      for (const r of records) {
        if (w.dirty) return;
        if (!r.target.isConnected) continue;
        const host = hostOf(r.target);
        if (!host || (w.host && w.host !== host) || (r.type === 'attributes' &&
            (r.attributeName !== 'class' || r.target === host))) {
          w.dirty = true;
          w.observer.disconnect();
          return;
        }
        w.host = host;
      }
    };
    // What a walk writes of an editor (a contenteditable element of role textbox) after typing, computed as
    // Playwright's walk computes it, for the only shapes whose writing is certain: the editor's own text is not
    // written (a textbox's); each line, a plain <div> (or <p>) right under it holding text, plain inline <span>s
    // of one text each and <br>s, is written as its text, whitespace collapsed. Anything else: null, a walk.
    // Children a walk writes under the editor besides its own: the elements it owns, its placeholder.
    const OWN_ATTRS = ['aria-owns', 'placeholder'];
    const LINE_ROLES = {DIV: 'generic', P: 'paragraph'};
    const bare = (e) => [...e.attributes].every(a => a.name === 'class') && !e.shadowRoot;
    const noContent = (e) => ['::before', '::after'].every(p => ['none', 'normal']
      .includes(getComputedStyle(e, p).content));
    const shown = (e, style) => e.checkVisibility() && style.visibility === 'visible';
    const boxed = (e) => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
    const unpointed = (style) => style.cursor !== 'pointer';
    const normal = (text) => text.replace(/[\u200b\u00ad]/g, '').trim().replace(/\s+/g, ' ');
    const lineOf = (line) => {
      const role = LINE_ROLES[line.tagName], style = getComputedStyle(line), ref = line._ariaRef;
      if (!role || !bare(line) || style.display !== 'block' || !shown(line, style) || !boxed(line) ||
          style.pointerEvents === 'none' || !unpointed(style) || !noContent(line) || !ref || ref.role !== role ||
          ref.name !== '') return null;
      let text = '';
      for (let n = line.firstChild; n; n = n.nextSibling) {
        if (n.nodeType === 3) { text += n.nodeValue; continue; }
        if (n.nodeType !== 1) continue;
        const s = getComputedStyle(n);
        if (!bare(n) || !noContent(n) || s.display !== 'inline' || !unpointed(s)) return null;
        if (n.tagName === 'BR') continue;  // a generic of no text, left out
        if (n.tagName !== 'SPAN' || n.childNodes.length !== 1 || n.firstChild.nodeType !== 3) return null;
        if (n.firstChild.nodeValue && !(shown(n, s) && boxed(n))) return null;
        text += n.firstChild.nodeValue;
      }
      return [role, ref.ref, normal(text)];
    };
    const lines = (editor) => {
      const out = [];
      for (let n = editor.firstChild; n; n = n.nextSibling) {
        if (n.nodeType !== 1) continue;  // the textbox's own text: not written
        if (n.tagName === 'BR' || n.tagName === 'SPAN') {  // a generic of no text; a text of the textbox's own
          const s = getComputedStyle(n);
          if (!bare(n) || !noContent(n) || s.display !== 'inline' || !unpointed(s) || (n.tagName === 'SPAN' &&
              (n.childNodes.length !== 1 || n.firstChild.nodeType !== 3))) return null;
          continue;
        }
        const line = lineOf(n);
        if (!line) return null;
        out.push(line);
      }
      return out;
    };
    // Rules that apply by what typing into an editor changes besides a field's: whether an element is empty.
    const EDIT_REACTS = new RegExp(REACTS.source.replace('dir)', 'dir|empty)'), 'i');
    // Only the focused editor's content changed (`took`), its lines certain (`lines`) and its box as armed, not
    // overflowing (the boxes around it as they were), nothing else as in `typed`: {ref, lines} of it; else null.
    const wrote = (held) => {
      if (!w || w.token !== held || !w.armed || w.dirty || location.href !== w.url) return null;
      took(w.observer.takeRecords());
      const e = active();
      if (!e || w.dirty || (w.host && w.host !== e) || !w.heard.every(t => t === e) || !doc.hasFocus() ||
          !w.hasFocus) return null;
      if (!e.isContentEditable || hostOf(e) !== e || e.getAttribute('role') !== 'textbox' || !plainly(e) ||
          OWN_ATTRS.some(a => e.hasAttribute(a)) || (e.getAttribute('aria-label') || '').length > 900 ||
          revealing() || !noContent(e) || !e._ariaRef || e._ariaRef.role !== 'textbox') return null;
      const box = e.getBoundingClientRect();
      if (!w.editors || w.editors.get(e) !== box.width + ',' + box.height || e.scrollWidth > e.clientWidth ||
          e.scrollHeight > e.clientHeight || e.scrollTop || e.scrollLeft) return null;
      const roots = scan();
      if (!roots || roots.length !== w.roots || looks(roots) !== w.looks || named(roots, e)) return null;
      const list = controls(roots);
      if (list.length !== w.controls.length || list.some((c, i) => c !== w.controls[i]) ||
          forms(list).join('\u0000') !== w.forms.join('\u0000')) return null;
      const written = lines(e);
      return written && !reactive(roots, EDIT_REACTS) ? {ref: e._ariaRef.ref, lines: written} : null;
    };
    const [, , held, want, refs] = body.split(':');
    // The field's ref, as the held snapshot's walk (in this world) marked it: its place among the lines. For a
    // select, its list among the lists (ref/count) and the options before it.
    const mine = root._ariaRef && root._ariaRef.ref;
    const at = op === 'typed' && mine ? refs.split('.').indexOf(mine) : -1;
    const lists = op === 'chose' ? refs.split('.').map(l => l.split('/')) : [];
    const list = lists.findIndex(([ref]) => mine && ref === mine);
    if (op === 'clean') return w && w.token === token && clean() ? [doc.documentElement] : [];
    if (op === 'changed' && clean()) return [];
    if (op === 'typed' && (at < 0 || !typed(root, held, want))) return [];
    if (op === 'chose' && (list < 0 || !chose(root, held, Number(lists[list][1])))) return [];
    // The editor's answer is a text (read by text_content, in this world), so always one element: out of the
    // document, so no change of the page's. Empty: refused.
    const answer = (text) => { const out = doc.createElement('div'); out.textContent = text; return [out]; };
    const edit = op === 'wrote' ? wrote(held) : null;
    if (op === 'wrote' && !edit) return answer('');
    if (!['arm', 'changed', 'typed', 'chose', 'wrote'].includes(op))
      throw new Error('mcpbrowser_watch: arm, changed, clean, typed, chose or wrote');
    if (!w) {
      w = globalThis[KEY] = {};
      w.observer = new MutationObserver(took);
      // What each event was aimed at (its first target, through shadow roots), kept for `typed`; so many
      // that nothing reads them is a change of its own.
      const heard = (e) => {
        if (w.dirty) return;
        const at = e.composedPath()[0] || e.target;
        // A field's own text scrolling (a long value, put back to its start as the focus leaves) moves no box.
        if (e.type === 'scroll' && (at instanceof HTMLInputElement || at instanceof HTMLTextAreaElement)) return;
        // Any other scroll is aimed at no element: an editor's own moves what scroll-state rules read.
        if (FOCUS.has(e.type)) w.focusMoved = true;
        else if (w.heard.push(e.type === 'scroll' ? null : at) > 64) w.dirty = true;
      };
      for (const type of EVENTS) addEventListener(type, heard, true);
    }
    w.observer.disconnect();
    const roots = scan();
    w.armed = !!roots && !revealing();
    w.dirty = !w.armed;
    w.token = token;
    w.heard = [];
    w.focusMoved = false;
    w.host = undefined;
    if (roots) {
      for (const r of roots)
        w.observer.observe(r, {subtree: true, childList: true, attributes: true, characterData: true});
      w.controls = controls(roots);
      w.url = location.href;
      w.active = active();
      w.hasFocus = doc.hasFocus();
      w.roots = roots.length;
      w.forms = forms(w.controls);
      w.looks = looks(roots);
      // Each editor's box (its size), which an edit of it must keep: the boxes around it then stay.
      w.editors = new Map([...doc.querySelectorAll('[contenteditable]')].filter(e => hostOf(e) === e)
        .map(e => { const r = e.getBoundingClientRect(); return [e, r.width + ',' + r.height]; }));
    }
    // The field's place as a count: one element each, from every root (the lines may be more than the
    // document's own elements when fields sit in shadow roots).
    const place = op === 'typed' ? at + 1 :
      op === 'chose' ? lists.slice(0, list).reduce((n, [, c]) => n + Number(c), 0) + root.selectedIndex + 1 : 0;
    if (place) return roots ? roots.flatMap(r => [...r.querySelectorAll('*')]).slice(0, place) : [];
    if (edit) return answer(JSON.stringify(edit));
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
