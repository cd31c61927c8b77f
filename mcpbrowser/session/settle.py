"""After an action, wait until the page has reacted to it: the settle rule. Used on a session's thread.

Single-page applications build a view after a click: a timer, a request, a render later. An answer
sent before that makes the agent read an empty page and read again. @playwright/mcp waits a fixed
second after every action; mcpbrowser waits only while the page is still reacting, so a page that
reacted at once (or not at all) costs one round trip. docs/tools.md states the rule as a user sees it.

A script in every document of the session (INSTALL: an init script, or installed by the first settle in an older
document) notes each short timer (at most TIMER_MS) and request (a fetch until its body is read) with the origin of its
chain of work (see THE RULE in INSTALL), the DOM's changes and the scrolls. After an action that did not load a new
document, the settle counts from the action's start: it answers at once when nothing of the action's chains is pending
and none was started since; otherwise it waits until what was started ended and the DOM was then quiet for QUIET_MS (at
most LINGER_MS: a ticker never quiets down), or the cap (CAP_MS, or the action's own timeout). An action that scrolled
(a script's scroll of a box counts at once: its event comes a frame later; a scroll is the action's by its chain, as
a job is) waits until neither the scroll nor the DOM moved for QUIET_MS (a virtualised list renders its rows then). A
longer timer, an interval, an animation frame and a socket's messages are not waited for; one rendering frame is, on a
page styled by a scroller's state (a scroll-state container query, which the browser applies only then). While it waits
it asks for rendering frames: a headless page that draws nothing renders none, and runs an idle callback only once one
comes.

A key's or a field's action (ANSWERS_FIRST) answers without waiting for its short timers: the next
read (READS) first finishes that settle (`finish`), and so does the history's capture after the
call, but only until the next call comes, unless that is a snapshot, which would finish it first:
then the snapshot answers with the capture's walk (snapshots.fresh_walk).

Popups: the script also counts the windows the action asked for (`window.open`, a link or a form
aimed at another window, not cancelled). The browser tells of a new tab tens of ms after the
action, so an answer would miss it; when the settle counts some, the session waits until as many
tabs opened (each within POPUP_WAIT_S of the last, within the action's timeout).
"""

import time

from mcpbrowser.logs import log

QUIET_MS = 100   # the DOM quiet this long after the action's timers and requests ended
CAP_MS = 1500    # at most this long after the action: a slow request or a page that never quiets down answers anyway
LINGER_MS = 300  # at most this long after the action's last timer or request (or scroll) waiting for the quiet
TIMER_MS = 300   # a timer the action set is waited for when it fires within this long (longer: a timeout, a toast)
LAG_MS = 250     # an input event this long before the action's start, as the page reckons it, is the action's
POPUP_WAIT_S = 2.0  # at most this long for the next of the tabs the action asked for (within its timeout)
WATCH_S = 0.002  # the capture's finish lets the next call in within this long
FULL, ANSWER_FIRST, FINISH = 0, 1, 2  # the page's settle modes (see __mcpbSettle)

# The actions that answer before their short timers, whose settle the next read finishes: keys and a field's input
# are what an application debounces, and the agent's next step after typing is more often another key than a read.
# Not a click's, hover's or drag's: there a short timer is mostly the effect itself (a view or a route after an
# animation), and a URL change after the answer would be told to nobody.
ANSWERS_FIRST = frozenset({"type", "press_key", "fill_form", "select"})
# The calls that read the page, which finish the last actions' settle first: what they return shows what the
# actions' timers rendered (a debounced search's results). `evaluate` reads as much as it acts.
READS = frozenset({"snapshot", "dom_snapshot", "screenshot", "pdf", "wait_for", "evaluate"})
# The read that may answer with the history capture's walk of the call before (snapshots.fresh_walk): when it is
# the next call, the capture finishes the settle before it walks, as that read would; one walk, not two. Not the
# other reads: they do not walk, and the capture's walk overlaps with the page's settle when it gives way to them.
WALKS_FIRST = frozenset({"snapshot"})

# Defines window.__mcpbSettle(elapsedMs, quietMs, capMs, mode) -> Promise of [ms waited, windows the action asked
# for, 1 when the whole rule would still wait]. Idempotent.
INSTALL = r"""(() => {
  if (window.__mcpbSettle) return;
  try {
    const clock = () => performance.now();
    const pending = new Set();   // {started, due, origin, timer} of short timers and requests not ended yet
    const ended = [];            // {origin, at, timer} of the last jobs that ended
    // THE RULE: a job (a short timer, a request) is the action's when its chain of work began with the
    // action. A job's origin is when that chain began, told by what runs the code that starts the job:
    //  - an input event (a key, a click, a field's input or change, a submit, a focus) that the page's own
    //    code did not dispatch: that event's time. This is what an action causes;
    //  - a timer's or an interval's code, a microtask queued with queueMicrotask, and the promise reactions
    //    in the same turn of the event loop: the origin of the code that set it;
    //  - what runs when a request answers (the reactions to a fetch's promise and to its body's reads, an
    //    XHR's events): the origin of the code that sent it;
    //  - a WebSocket's or an EventSource's events: the origin of the code that opened it;
    //  - anything else (a script the page adds, an observer's callback, an animation frame): that code's
    //    own start.
    // So a kernel's status poll, a ticker, a long-poll or a socket begun before the action stays of its own
    // chain however often it runs, while what the action's event set off, and what that set off in turn
    // through timers and requests, is the action's. A promise the page awaits is not followed itself: the
    // work after it is found by the request or timer that resolved it.
    let running = null;                // the origin of the callback running now (null: not known)
    let turnOrigin = null;             // the origin of the callback that began this turn of the event loop
    let depth = 0;                     // callbacks carried by us running (a microtask, a timer between its two)
    let acting = null, actingAt = 0;   // the input event being dispatched, and when it came
    let scoped = null, scopedAt = 0;   // a socket's or a request's event being dispatched, and its origin
    let lastScroll = {origin: -1, at: -1};  // the latest scroll of the chain begun last (see scrolled)
    let lastAsked = -Infinity;         // when the last action's settle was asked (not a finish's)
    const acted = [];                  // when the last input events came
    const originOf = (now) => {
      if (acting !== null && acting.eventPhase !== 0) return actingAt;
      if (scoped !== null && scoped.eventPhase !== 0) return scopedAt;
      if (running !== null) return running;
      return turnOrigin === null ? now : turnOrigin;
    };
    // The microtasks after a callback (the promise reactions it set off, the DOM's change records) and a
    // request's reactions, which run after ours, are of the same turn: its origin holds until the next
    // turn of the event loop (or the next callback of ours, which sets its own).
    const turn = new MessageChannel();
    let turning = false;
    turn.port1.onmessage = () => { turning = false; turnOrigin = null; };
    const enter = (origin) => {
      turnOrigin = origin;
      if (!turning) { turning = true; turn.port2.postMessage(0); }
    };
    const begin = (due, timer, origin) => {  // origin: the chain's, when known (a body read), else the running code's
      const now = clock(), job = {started: now, due, origin: origin === undefined ? originOf(now) : origin, timer};
      pending.add(job);
      return job;
    };
    const end = (job) => {
      if (!pending.delete(job)) return;
      ended.push({origin: job.origin, at: clock(), timer: job.timer});
      if (ended.length > 64) ended.shift();
    };
    // fn, to be called later, run with the origin of the code that asked for it now.
    const carried = (fn) => {
      const origin = originOf(clock());
      return function () {
        const outer = running;
        running = origin;
        depth++;
        try { return Reflect.apply(fn, this, arguments); } finally { running = outer; depth--; enter(origin); }
      };
    };
    // The page's timers and intervals are handed to the browser as they are: the browser credits a task to
    // the function it calls (a long task's script and function, in performance insights), and a wrapper of
    // ours would be that function. Two timers of ours with the same delay go around each instead, one set
    // just before it and one just after (the browser runs timers of one delay in the order they were set):
    // the first gives the callback its chain's origin, the second takes it back and ends the job.
    const timers = new Map();          // the page's timer id: {before, after, job, outer, inside}
    const setT = window.setTimeout, clearT = window.clearTimeout, setI = window.setInterval, timerMs = TIMER_MS;
    const around = (set, fn, ms, rest, waited) => {
      const origin = originOf(clock()), at = {job: waited ? begin(clock() + (Number(ms) || 0), true) : null,
                                              outer: null, inside: false};
      at.before = Reflect.apply(set, window, [() => {
        if (at.inside) return;
        at.inside = true; at.outer = running; running = origin; depth++;
      }, ms]);
      const id = Reflect.apply(set, window, [fn, ms, ...rest]);
      at.after = Reflect.apply(set, window, [() => leave(at, set === setT ? id : null), ms]);
      timers.set(id, at);
      return id;
    };
    const leave = (at, id) => {
      if (at.inside) { at.inside = false; running = at.outer; depth--; }
      if (at.job) { end(at.job); at.job = null; }
      if (id !== null) timers.delete(id);
    };
    window.setTimeout = function (fn, ms, ...rest) {
      if (typeof fn !== "function") return Reflect.apply(setT, window, [fn, ms, ...rest]);
      // A timer longer than TIMER_MS is not waited for (a timeout, a race's loser, a toast's end, a slow
      // poll): it only carries its chain's origin.
      return around(setT, fn, ms, rest, (Number(ms) || 0) <= timerMs);
    };
    window.setInterval = function (fn, ms, ...rest) {
      if (typeof fn !== "function") return Reflect.apply(setI, window, [fn, ms, ...rest]);
      return around(setI, fn, ms, rest, false);
    };
    // One list of ids for both kinds, as the browser keeps them: either call clears either.
    for (const name of ["clearTimeout", "clearInterval"]) {
      const original = window[name];
      window[name] = function (id) {
        const at = timers.get(id);
        if (at) {
          clearT(at.before); clearT(at.after); timers.delete(id);
          // Cleared from inside its own callback (an interval that stops itself, then sends a request): the
          // callback goes on with its chain's origin until it returns.
          if (at.inside) setT(() => leave(at, null), 0); else leave(at, null);
        }
        return Reflect.apply(original, window, arguments);
      };
    }
    // A microtask runs inside the task that queued it, and the browser credits it to that task's script:
    // carrying its origin changes nothing the browser names. Animation frames and idle callbacks are left
    // alone: their code has its own start, or the chain the task before them left set, until that turn's end (a
    // frame between a timer of ours and the page's). (Carrying the origin of the code that asked for a frame was
    // tried: JupyterLab's message loop, one frame for the work of every chain, then ran a click's work with a
    // background chain's origin, and the click that makes a notebook answered before its request. Clearing what the
    // task before a frame left set was tried too: JupyterLab's background work in frames then counted as every key's
    // and click's, whose quiet it held: its save 60 ms slower, the notebook task 0.3-1 s.)
    const carry = (name) => {
      const original = window[name];
      if (original) window[name] = function (fn, ...rest) {
        return Reflect.apply(original, window, [typeof fn === "function" ? carried(fn) : fn, ...rest]);
      };
    };
    carry("queueMicrotask");
    const bodies = new WeakMap();  // a fetch's Response: the origin of the code that sent it
    // [object, name, the browser's function, ours]: the request wrappers, which measure_performance takes out while
    // it measures (__mcpbPlain): the browser credits the task that runs a promise's reactions (a long task's script)
    // to the code that called the API making the promise, which a wrapper of ours would be ("script not named").
    const wrapped = [];
    const wrap = (object, name, make) => {
      const original = object[name];
      if (original) { object[name] = make(original); wrapped.push([object, name, original, object[name]]); }
    };
    wrap(window, "fetch", (fetch0) => function () {
      const job = begin(clock(), false);  // a request: waited for, up to the cap
      let answer;
      try { answer = Reflect.apply(fetch0, this, arguments); } catch (e) { end(job); throw e; }
      answer.then((response) => { end(job); bodies.set(response, job.origin); enter(job.origin); },
                  () => { end(job); enter(job.origin); });
      return answer;
    });
    if (window.Response) for (const name of ["json", "text", "arrayBuffer", "blob", "formData"]) {
      wrap(Response.prototype, name, (read0) => function () {
        const read = Reflect.apply(read0, this, arguments), origin = bodies.get(this);
        if (origin === undefined) return read;
        // The body may come well after the headers that ended the request's job: its read is a job of the same chain.
        const job = begin(clock(), false, origin);
        read.then(() => { end(job); enter(origin); }, () => { end(job); enter(origin); });
        return read;
      });
    }
    // plain: the browser's own functions back (true) or ours again (false), each only where the other still is (a
    // page that wrapped one itself keeps its own). A request sent meanwhile is not waited for by a settle. While
    // plain, window.fetch is read through a getter: a page that read it then may keep the browser's own (a bound
    // copy, a wrapper of its own), which putting ours back does not reach; __mcpbPlain(false) answers whether one
    // did (measure_performance then loads the page once more, ours in).
    const fetchOf = wrapped.find(([object, name]) => object === window && name === "fetch");
    let plainRead = false;
    const plainGet = () => { plainRead = true; return fetchOf[2]; };
    const data = (value) => Object.defineProperty(window, "fetch",
                                                  {value, writable: true, configurable: true, enumerable: true});
    Object.defineProperty(window, "__mcpbPlain", {value: (plain) => {
      const held = fetchOf && Object.getOwnPropertyDescriptor(window, "fetch");
      if (!plain && held && held.get === plainGet) data(fetchOf[2]);
      for (const [object, name, original, ours] of wrapped) {
        if (object[name] === (plain ? ours : original)) object[name] = plain ? original : ours;
      }
      if (plain && fetchOf && window.fetch === fetchOf[2]) {
        plainRead = false;
        Object.defineProperty(window, "fetch", {get: plainGet, set: (value) => { plainRead = true; data(value); },
                                                configurable: true, enumerable: true});
      }
      return plainRead;
    }});
    // Events of a request or a socket run with the origin of the code that sent or opened it: ours is
    // added first (as the object is made or opened), so it runs before the page's listeners.
    const scope = (target, types, origin) => {
      const mark = (e) => { scoped = e; scopedAt = origin.at; enter(origin.at); };
      for (const type of types) target.addEventListener(type, mark);
    };
    const xhrs = new WeakMap();
    const xopen0 = XMLHttpRequest.prototype.open, send0 = XMLHttpRequest.prototype.send;
    XMLHttpRequest.prototype.open = function () {
      if (!xhrs.has(this)) {
        const origin = {at: originOf(clock())};
        xhrs.set(this, origin);
        scope(this, ["readystatechange", "load", "loadend", "error", "abort", "timeout", "progress"], origin);
      }
      return Reflect.apply(xopen0, this, arguments);
    };
    XMLHttpRequest.prototype.send = function () {
      const job = begin(clock(), false);  // a request: waited for, up to the cap
      const origin = xhrs.get(this);
      if (origin) origin.at = job.origin;
      this.addEventListener("loadend", () => end(job));
      try { return Reflect.apply(send0, this, arguments); } catch (e) { end(job); throw e; }
    };
    for (const [name, types] of [["WebSocket", ["open", "message", "error", "close"]],
                                 ["EventSource", ["open", "message", "error"]]]) {
      const original = window[name];
      if (original) window[name] = new Proxy(original, {construct(target, args, newTarget) {
        const made = Reflect.construct(target, args, newTarget);
        scope(made, types, {at: originOf(clock())});
        return made;
      }});
    }
    // The action's own events: the first listeners of all (this script runs before the page's), in the
    // capture phase. One the page dispatches itself from a timer's or a socket's event (a focus() call, a
    // synthetic change) stays of that chain; one within the action's event stays the action's. One from
    // code of unknown origin (a frame, an observer, a request's answer) counts as an input: waited for. The
    // browser's own pointer, key and wheel input (isTrusted: no page's code dispatches that) is always an action's,
    // even when it comes between a timer of ours and the page's, whose chain is set until the one after it (a click
    // among a 10 ms interval's timers was taken for the interval's: its own timer and request not waited for).
    const real = new Set(["pointerdown", "pointerup", "mousedown", "mouseup", "click", "dblclick", "auxclick",
                          "contextmenu", "keydown", "keypress", "keyup", "wheel", "touchstart", "touchend"]);
    for (const type of [...real, "beforeinput", "input", "change", "submit", "reset", "focus", "blur", "focusin",
                        "focusout", "paste", "cut", "copy", "drop", "dragstart", "dragend", "compositionend",
                        "select", "selectionchange"]) {
      addEventListener(type, (e) => {
        if ((depth === 0 || (e.isTrusted && real.has(e.type))) && !(scoped !== null && scoped.eventPhase !== 0)
            && !(acting !== null && acting.eventPhase !== 0)) {
          acting = e; actingAt = clock(); enter(actingAt);
          acted.push(actingAt);
          if (acted.length > 16) acted.shift();
        }
      }, {capture: true, passive: true});
    }
    // A scroll starts a frame after the key or wheel that asks for it: those count as scrolls at once
    // (not a key typed into a field).
    const scrolls = new Set(["End", "Home", "PageDown", "PageUp", "ArrowDown", "ArrowUp", " "]);
    const editable = (t) => t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));
    // The window's place at the last scroll event: one that moved since has its event at the next frame (the act
    // scrolled its target into view), and what that scroll renders is waited for as any other's.
    const place = () => scrollX + "," + scrollY;
    let lastPlace = place();
    // A scroll is the action's when its chain began with the action, as a job is (THE RULE): a script's scroll has the
    // origin of the code that made it, and so has the scroll event it brings (a ticker scrolling a box for ever is
    // not the action's); any other (a key's, the wheel's, the act's own) is new: the action's. The latest of the
    // chain begun last is what a settle reads.
    const scrolled = (origin) => {
      const at = clock(), chain = origin === undefined ? at : origin;
      if (chain >= lastScroll.origin) lastScroll = {origin: chain, at};
      lastPlace = place();
    };
    const movedBy = new WeakMap();  // a box (the document for the window) a script moved: its origin, until its event
    // A field's own text scrolling (a long value typed, its caret kept in view) renders nothing new: not waited for.
    addEventListener("scroll", (e) => {
      if (e.target instanceof HTMLInputElement || e.target instanceof HTMLTextAreaElement) return;
      const origin = movedBy.get(e.target);
      movedBy.delete(e.target);
      scrolled(origin);
    }, {capture: true, passive: true});
    // A script that scrolls a box or the window (scrollTop, scrollTo, scrollIntoView...) moves it at once, but the
    // scroll event, and what it renders (a virtualised list, what an observer shows), come at the next frame: a call
    // that moved one is a scroll at once. (Smooth scrolls are off: browser_process.) Each call looks at the boxes it
    // may move: the window for the window's, the element itself for its own scroll, and every box it sits in (across
    // shadow roots, by its slot) for scrollIntoView. Read through the browser's own getters, taken now, so a page's
    // own (one that throws, one that lies) changes nothing; our bookkeeping never fails the page's call. Each wrapper
    // is named and sized as the browser's (no prototype, not a constructor), as the sheets' are (follow, below).
    const getter = (proto, name) => Object.getOwnPropertyDescriptor(proto, name).get;
    const topOf = getter(Element.prototype, "scrollTop"), leftOf = getter(Element.prototype, "scrollLeft");
    const parentOf = getter(Node.prototype, "parentNode"), kindOf = getter(Node.prototype, "nodeType");
    const slotOf = getter(Element.prototype, "assignedSlot"), hostOf = getter(ShadowRoot.prototype, "host");
    const read = (get, node) => Reflect.apply(get, node, []);
    const spot = (box) => box === document ? place() : read(topOf, box) + "," + read(leftOf, box);
    const boxesOf = (target, around) => {
      if (target === window) return [document];
      if (!around) return [target];
      const out = [document];
      for (let node = target; node;) {
        const kind = read(kindOf, node);
        if (kind === 1) out.push(node);
        node = kind === 11 ? read(hostOf, node) : (kind === 1 && read(slotOf, node)) || read(parentOf, node);
      }
      return out;
    };
    const watched = (target, around, act) => {
      let boxes = null, before = [];
      try {
        boxes = boxesOf(target, around);
        for (let i = 0; i < boxes.length; i++) before[i] = spot(boxes[i]);
      } catch (e) { boxes = null; }
      const result = act();
      try {
        const origin = originOf(clock());
        for (let i = 0; boxes && i < boxes.length; i++) {
          if (spot(boxes[i]) === before[i]) continue;
          movedBy.set(boxes[i] === document.documentElement ? document : boxes[i], origin);
          scrolled(origin);
        }
      } catch (e) { /* not followed */ }
      return result;
    };
    for (const [name, around] of [["scroll", false], ["scrollTo", false], ["scrollBy", false],
                                  ["scrollIntoView", true], ["scrollIntoViewIfNeeded", true]]) {
      for (const object of [Element.prototype, window]) {
        const original = object[name];
        if (typeof original !== "function" || (object === window && around)) continue;
        const method = {[name](...args) {
          return watched(this, around, () => Reflect.apply(original, this, args));
        }}[name];
        Object.defineProperty(method, "length", {value: original.length});
        object[name] = method;
      }
    }
    for (const name of ["scrollTop", "scrollLeft"]) {
      const own = Object.getOwnPropertyDescriptor(Element.prototype, name);
      const set = own.set;
      const holder = {set [name](value) { watched(this, false, () => Reflect.apply(set, this, [value])); }};
      Object.defineProperty(Element.prototype, name, {...own, set: Object.getOwnPropertyDescriptor(holder, name).set});
    }
    addEventListener("wheel", () => scrolled(), {capture: true, passive: true});
    addEventListener("keydown", (e) => { if (scrolls.has(e.key) && !editable(e.target)) scrolled(); },
                     {capture: true, passive: true});
    // New windows asked for: window.open, and links and forms that target one (cancelled ones are not counted).
    const opened = [];  // {at, event}
    const asked = (event) => { opened.push({at: clock(), event}); if (opened.length > 100) opened.shift(); };
    const open0 = window.open;
    window.open = function () { asked(null); return Reflect.apply(open0, this, arguments); };
    const elsewhere = (target) => !["", "_self", "_parent", "_top"].includes(String(target || "").toLowerCase());
    // The attribute, not the property: an SVG link's `target` is an SVGAnimatedString (never "": every SVG link
    // was counted, and its click waited POPUP_WAIT_S for a tab that never came).
    const getAttribute = Element.prototype.getAttribute;
    const targetOf = (node) => Reflect.apply(getAttribute, node, ["target"]);
    const baseTarget = () => {
      const base = document.querySelector("base[target]");
      return base ? targetOf(base) : "";
    };
    addEventListener("click", (e) => {
      const a = e.composedPath().find((n) => n instanceof Element && n.matches("a[href],area[href]"));
      if (!a || a.hasAttribute("download")) return;
      if (elsewhere(targetOf(a) || baseTarget()) || e.ctrlKey || e.metaKey || e.shiftKey) asked(e);
    }, {capture: true, passive: true});
    addEventListener("submit", (e) => {
      const via = e.submitter && e.submitter.getAttribute("formtarget");
      if (elsewhere(via || e.target.target || baseTarget())) asked(e);
    }, {capture: true, passive: true});
    // Each is told once. The action's start is known here only as "elapsed ms before this settle was asked",
    // later than it was by the time the question took to arrive (tens of ms on a loaded machine): those
    // asked up to a second before it are the action's too.
    const popups = (since) => opened.splice(0).filter((o) => o.at >= since - 1000
                                                      && !(o.event && o.event.defaultPrevented)).length;
    // The DOM's changes, each batch with the origin of the code that made it (its records are delivered in
    // the same turn): a change of the page's own background is not the action's, and is not waited out.
    const changes = [];  // {at, origin}
    new MutationObserver(() => {
      const now = clock(), origin = originOf(now), last = changes[changes.length - 1];
      if (last && last.origin === origin) last.at = now;
      else { changes.push({at: now, origin}); if (changes.length > 64) changes.shift(); }
    }).observe(document,
      {subtree: true, childList: true, attributes: true, characterData: true});
    // Style that applies by a scroller's state (a scroll-state container query: a box scrolled, or able to scroll, to
    // an edge): the browser reads that state once a rendering frame, after its layout, so what an action's scroll or
    // overflow changes of it shows only after the next frame, and a box's scroll is heard only then. A walk before
    // it reads the page as it was, which a person never sees. On a page whose sheets hold such a query, the first look
    // is after that frame (its task after the frame's rendering); on the others, nearly all, the cost is a look at the
    // sheets' rule counts: each sheet's rules are read once (25 ms for 34,000 rules), then followed (below).
    // Not seen: the sheets of shadow roots (finding them walks the DOM), of another origin, and what an @import brings
    // after its sheet was read (a page's imports load before its load event, which a navigation waits for).
    const nextFrame = window.requestAnimationFrame, Container = window.CSSContainerRule, Sheet = window.CSSStyleSheet;
    const scrollQuery = /scroll-state\s*\(/i;
    const sheetsRead = new WeakMap();  // a sheet: [its rule count, whether it holds a scroll-state query]
    const rules = (sheet) => { try { return sheet.cssRules; } catch (e) { return []; } };  // another origin's
    const holds = (list) => {  // (an index, not an iterator: a third of the time on a first read)
      for (let i = 0; i < list.length; i++) {
        const rule = list[i];
        if (rule instanceof Container && scrollQuery.test(rule.conditionText)) return true;
        if (rule.styleSheet && holds(rules(rule.styleSheet))) return true;  // @import
        if (rule.cssRules && holds(rule.cssRules)) return true;  // @media, @layer, a nested rule...
      }
      return false;
    };
    // A sheet changed by script (a CSS-in-JS library inserts a rule for each new style) is followed rule by rule: its
    // count kept and each new rule looked at, so that a sheet that grows on every action is not read whole at each
    // look. A rule put inside a rule (an @media's, a style rule's) or into an @import's sheet, or a sheet's text
    // replaced, leaves its count as it was: followed too, as the sheet's that holds it. A change made another way
    // (another window's methods) leaves a count that differs: read whole.
    // The new rule is looked at, not the text given: the browser's reading of it (an escaped name, a text whose
    // toString answers differently when asked again). Each wrapper is a method named and sized as the browser's (no
    // prototype, not a constructor), so that a page sees it as it saw that.
    const apply = Reflect.apply, Rule = window.CSSRule, Import = window.CSSImportRule;
    const follow = (proto, name, change) => {
      const original = proto && Object.prototype.hasOwnProperty.call(proto, name) && proto[name];
      if (typeof original !== "function") return;
      const method = {[name](...args) {
        // Our bookkeeping never fails the page's call (a page may have redefined what it reads): a sheet it could
        // not follow is read whole at the next look.
        let sheet = null, seen, before;
        try {
          sheet = this instanceof Sheet ? this : Rule && this instanceof Rule ? this.parentStyleSheet : null;
          while (sheet && sheet.ownerRule) sheet = sheet.ownerRule.parentStyleSheet;  // an @import's: its importer
          seen = sheet && sheetsRead.get(sheet);
          before = seen && rules(sheet).length;
        } catch (e) { seen = null; }
        const result = apply(original, this, args);
        try {
          if (seen && seen[0] === before) change(sheet, seen, this === sheet, this, result, args[0]);
          else if (sheet) sheetsRead.delete(sheet);
        } catch (e) { sheetsRead.delete(sheet); }
        return result;
      }}[name];
      Object.defineProperty(method, "length", {value: original.length});
      Object.defineProperty(proto, name, {value: method});
    };
    const grown = (sheet, seen, top, parent, index, text) => {  // one rule more, in the sheet itself (top) or inside
      seen[0] += top ? 1 : 0;
      // A text without an "@" holds no at-rule (no escape makes one): a CSS-in-JS library's style is not looked at.
      if (typeof text === "string" && text.indexOf("@") < 0) return;
      const rule = rules(parent)[index];
      if (Import && rule instanceof Import) sheetsRead.delete(sheet);  // what it brings is read with the sheet
      else seen[1] = seen[1] || holds([rule]);
    };
    const forget = (sheet) => sheetsRead.delete(sheet);
    const shrunk = (sheet, seen, top) => { seen[0] -= top ? 1 : 0; };
    if (Sheet) {
      follow(Sheet.prototype, "insertRule", grown);
      follow(Sheet.prototype, "deleteRule", shrunk);
      follow(Sheet.prototype, "addRule", forget);  // the legacy name (removeRule's change only lowers the count)
      follow(Sheet.prototype, "replaceSync", forget);
      follow(Sheet.prototype, "replace", forget);  // Chromium sets the rules at once, before its promise settles
    }
    for (const holder of [window.CSSGroupingRule, window.CSSStyleRule]) {  // an @media's rules, a style rule's
      follow(holder && holder.prototype, "insertRule", grown);
    }
    const scrollStyled = () => {
      if (!Container) return false;
      let found = false;
      for (const sheet of [...document.styleSheets, ...(document.adoptedStyleSheets || [])]) {
        const list = rules(sheet), seen = sheetsRead.get(sheet);
        let holding = seen && seen[0] === list.length ? seen[1] : null;
        if (holding === null) sheetsRead.set(sheet, [list.length, holding = holds(list)]);
        found = found || holding;
      }
      return found;
    };
    // mode 1 (ANSWER_FIRST): the action's short timers, pending or ended, are not waited for (nor the quiet after
    // them); mode 2 (FINISH): they are, and the windows asked for are left uncounted (the action's answer counted
    // them). The answer's third value says whether the whole rule would still wait (1), for finish() to go on.
    Object.defineProperty(window, "__mcpbSettle", {value: (elapsed, quiet, capMs, mode) => new Promise((resolve) => {
      const timers = mode !== 1;
      const askedAt = clock();
      // The action's start, as "elapsed ms before this settle was asked", is late by the time the question
      // took to arrive: an input event up to LAG_MS before it is the action's own, unless it came before the last
      // action's settle was asked: that action's (a key typed back to back before a click; its short timers, which
      // its answer did not wait for, are not the click's).
      let since = askedAt - elapsed;
      const floor = mode === 2 ? -Infinity : lastAsked;
      since = Math.min(since, ...acted.filter((at) => at >= since - LAG_MS && at > floor));
      if (mode !== 2) lastAsked = askedAt;
      // While it waits, it asks for rendering frames: a headless page that draws nothing renders none, and runs
      // what waits for one (an idle callback, which may render what a response brought) only once one comes.
      let framing = false, over = false;
      const tick = () => { if (!over) Reflect.apply(nextFrame, window, [tick]); };
      const busy = (now, timers) => {
        let started = false, lastEnded = -1, lastMutation = -1;
        for (const change of changes) if (change.origin >= since) lastMutation = Math.max(lastMutation, change.at);
        for (const job of pending) {
          if (job.origin < since || (job.timer && !timers)) continue;  // not the action's: a ticker's chain, a poll
          if (job.due <= since + capMs) return true;
          started = true;
        }
        // A scroll (a key, the wheel, a smooth scroll's frames) renders what comes into view: a virtualised list.
        if (place() !== lastPlace && now - askedAt < quiet) return true;  // (an event never sent holds it no longer)
        if (lastScroll.origin >= since && now - Math.max(lastScroll.at, lastMutation) < quiet
            && now - lastScroll.at < LINGER_MS)
          return true;
        for (const job of ended) {
          if (job.origin < since || (job.timer && !timers)) continue;
          started = true;
          lastEnded = Math.max(lastEnded, job.at);
        }
        if (!started) return false;  // the action started nothing that ends later: done
        // Then the DOM quiet, but not for ever: a page whose clock or ticker changes the DOM all the
        // time is never quiet, and what the action's timers and requests rendered is there by now.
        return now - Math.max(lastEnded, lastMutation) < quiet && now - lastEnded < LINGER_MS;
      };
      // 0 ms waited says the action had nothing pending at the first look: a read sent with the settle saw the
      // page as it answers (settle.now); one that waited, or ran into the cap, says 1 ms at least.
      const check = (first) => {
        const now = clock(), done = !busy(now, timers);
        if (done || now - since >= capMs) {
          over = true;
          resolve([first && done ? 0 : Math.max(1, Math.round(now - askedAt)), mode === 2 ? 0 : popups(since),
                   busy(now, true) ? 1 : 0]);
        } else {
          if (!framing && nextFrame) { framing = true; Reflect.apply(nextFrame, window, [tick]); }
          setT(() => check(false), 20);
        }
      };
      // (scrollStyled) A read sent with the settle saw the page before the frame: not as the action leaves it. A page
      // that renders no frame (a hidden one) is looked at after 100 ms all the same.
      if (scrollStyled()) {
        let looked = false;
        const look = () => { if (!looked) { looked = true; check(false); } };
        Reflect.apply(nextFrame, window, [() => setT(look, 0)]);
        setT(look, 100);
      } else check(true);
    })});
  } catch (e) { /* a page that locked these names down is not settled, only answered */ }
})()""".replace("TIMER_MS", str(TIMER_MS)).replace("LINGER_MS", str(LINGER_MS)).replace(
    "LAG_MS", str(LAG_MS))

SETTLE = ("([elapsed, quiet, cap, mode]) => window.__mcpbSettle ? window.__mcpbSettle(elapsed, quiet, cap, mode) "
          f": ({INSTALL}, [-1, 0, 0])")
# The same through CDP, answering [ms waited, windows asked for, still busy, document.title, elements]: one round
# trip that also saves the title's own, and the element count that decides whether the history captures the page
# (snapshots.too_large). INSTALL is not in it: a CDP expression is compiled anew each time (its numbers change), and
# compiling INSTALL's 20 KB cost each action about a millisecond. A document without the script (one made before
# the init script, as a new tab's first about:blank) answers NOT_INSTALLED: `_answered` installs it then.
NOT_INSTALLED = -2
SETTLE_CDP = ("(window.__mcpbSettle ? window.__mcpbSettle(%d, %d, %d, %d) : Promise.resolve(["
              + str(NOT_INSTALLED) + ", 0, 0])).then((settled) => [...settled, document.title, "
              + "document.getElementsByTagName('*').length])")


def settle(state, elapsed_s, timeout_s, tabs_before):
    """Wait for the current page to settle after an action that started elapsed_s ago, then for the tabs it asked
    for to open (tabs_before: state.tabs_opened as it started). A dialog (run_tool reports it), a navigation, a
    closed or hung page end the wait. Returns the title on Chromium, read in the settle's round trip (which also
    leaves the element count in state.elements_counted), else None; a handler that settled already (`now`) is
    answered its title with no round trip."""
    early, state.settled = state.settled, None
    if early is not None and early[0] is state.tab and early[1] == state.tab.navigations:
        return early[2]
    started = time.monotonic() - elapsed_s
    try:
        read, deadline_s = _read(state, elapsed_s, timeout_s)
        settled = _answered(state, state.act(read[0], read[1], deadline_s=deadline_s, **read[2]))
    except Exception as exc:  # it navigated or closed meanwhile: the caller reports where it is
        log.debug("settle ended by the page", extra={"session": state.session_id, "error": str(exc)})
        return None
    if settled is None:
        return None
    _after(state, settled, tabs_before, timeout_s - elapsed_s, started)
    return settled[2]


def finish(state, until_called=False):
    """The settle of the last actions that answered before their short timers (ANSWERS_FIRST), finished, at most the
    cap counted from the last one's start: before a read (READS), and before the history's capture (until_called:
    only until the next call comes, which finds the page as it is). Nothing when none is left or its cap passed."""
    left = state.unsettled
    if left is None:
        return
    tab, navigations, first, last = left
    now, timeout_s = time.monotonic(), state.config.action_timeout / 1000
    if until_called and _called(state):
        return  # the next call is here, and it may act first: a read among them finishes it
    if state.blocker is not None or state.tab is not tab or tab.navigations != navigations \
            or now - last >= min(CAP_MS / 1000, timeout_s):
        state.unsettled = None
        return
    # A call that comes meanwhile is let in within WATCH_S, unless it is a snapshot (it would finish this first); the
    # page's wait runs on to its end, unheard.
    watch = (WATCH_S, lambda: not _called(state)) if until_called else None
    tab.fresh = None  # the page moves on: a walk before it is not the page a read finds
    try:
        cap_ms = int((last - first) * 1000) + min(CAP_MS, int(timeout_s * 1000))
        read, deadline_s = _read(state, now - first, timeout_s, FINISH, cap_ms)
        settled = _answered(state, state.act(read[0], read[1], deadline_s=deadline_s, watch=watch, **read[2]))
    except Exception as exc:  # it navigated or closed meanwhile: the read says where it is
        log.debug("finish ended by the page", extra={"session": state.session_id, "error": str(exc)})
        settled = None
    if settled is None and until_called and state.unsettled is left and _called(state):
        return  # the next call came first, and it may act first: a read among them finishes it
    state.unsettled = None
    if settled is not None:
        log.debug("settle finished", extra={"session": state.session_id, "waited": settled[0],
                                            "before": "capture" if until_called else "read"})


def _called(state):
    """Whether a call waits that the capture's finish gives way to: any but a snapshot (WALKS_FIRST: the dispatcher
    tags a call's command with (call, budget)); a person's input too."""
    if state.worker.idle():
        return False
    tag = state.worker.next_tag()
    return not (isinstance(tag, tuple) and getattr(tag[0], "tool", None) in WALKS_FIRST)


def mark(state):
    """A handler's act about to start, as `now` counts from it: (monotonic time, tab, its navigations, tabs opened)."""
    return time.monotonic(), state.tab, state.tab.navigations, state.tabs_opened


# One round trip after an action: a handler's own reads after its act (type's secret field check, the capture's
# proof) go with the settle run_tool would send next anyway (Together). They run as the settle's first look does,
# so they tell the page as the call leaves it only when it waited 0 ms (snapshots.take_proof).
def now(state, marked, reads):
    """Settle right after the handler's act (`marked` before it), `reads` ((target, method, kwargs) each) sent in
    the same round trip: (ms waited, or None when it did not settle; their answers, an exception for one that
    failed). None where it cannot run now (a dialog, another page or document, an act slower than PROBE_AFTER_S,
    which run_tool probes first; the page did not answer): the caller reads for itself, and run_tool settles."""
    from mcpbrowser.session.acting import INTERRUPTED, PROBE_AFTER_S, TIMED_OUT
    from mcpbrowser.session.playwright_internals import Together

    started, tab, navigations, tabs_before = marked
    elapsed_s, timeout_s = time.monotonic() - started, state.config.action_timeout / 1000
    if state.blocker is not None or state.tab is not tab or tab.navigations != navigations \
            or elapsed_s > PROBE_AFTER_S:
        return None
    try:
        read, deadline_s = _read(state, elapsed_s, timeout_s)
        answers = state.act(Together(read, *reads), "run", deadline_s=deadline_s)
    except Exception as exc:  # its CDP session would not open (the page closing): the caller reads for itself
        log.debug("settle with reads failed", extra={"session": state.session_id, "error": str(exc)})
        return None
    if answers is INTERRUPTED or answers is TIMED_OUT:
        return None
    settled = None if isinstance(answers[0], Exception) else _answered(state, answers[0])
    if settled is None or state.tab is not tab or tab.navigations != navigations:
        return None, answers[1:]
    state.settled = (tab, navigations, settled[2])
    _after(state, settled, tabs_before, timeout_s - elapsed_s, started)
    return settled[0], answers[1:]


def _read(state, elapsed_s, timeout_s, mode=None, cap_ms=None):
    """The settle's read ((target, method, kwargs)) in `mode` (default: this call's, FULL or ANSWER_FIRST) for an
    action that started elapsed_s ago, and its deadline. cap_ms: how long after that start it ends at the latest
    (default: CAP_MS, within timeout_s)."""
    if mode is None:
        mode = ANSWER_FIRST if state.answers_first else FULL
    # An action that used up its timeout is not waited for, but still asked (at once) what it opened.
    if cap_ms is None:
        cap_ms = max(0, min(CAP_MS, int(timeout_s * 1000 - elapsed_s * 1000)))
    since_ms, deadline_s = int(elapsed_s * 1000) + 5, cap_ms / 1000 + 1.0
    if state.chromium:
        expression = SETTLE_CDP % (since_ms, QUIET_MS, cap_ms, mode)
        return (state.tab.cdp(), "send", {"method": "Runtime.evaluate", "params": {
            "expression": expression, "awaitPromise": True, "returnByValue": True}}), deadline_s
    return (state.tab.page, "evaluate", {"expression": SETTLE, "arg": [since_ms, QUIET_MS, cap_ms, mode]}), deadline_s


def _answered(state, answer):
    """(ms waited, windows asked for, title or None, whether the whole rule would still wait) from the settle's
    answer; None when it did not settle. On Chromium the element count goes to state.elements_counted."""
    from mcpbrowser.session.acting import INTERRUPTED, TIMED_OUT

    if answer is INTERRUPTED or answer is TIMED_OUT:
        return None
    if not state.chromium:
        waited, popups, left = answer
        return waited, popups, None, left
    if "exceptionDetails" in answer:
        return None
    waited, popups, left, title, state.elements_counted = answer["result"]["value"]
    if waited == NOT_INSTALLED:  # not settled (nothing watched the action): the script set up for the next one
        waited = -1
        try:
            state.act(state.tab.cdp(), "send", deadline_s=1.0, method="Runtime.evaluate",
                      params={"expression": INSTALL})
        except Exception as exc:  # the page went meanwhile: the next document has the init script
            log.debug("settle script not installed", extra={"session": state.session_id, "error": str(exc)})
    return waited, popups, title, left


def _after(state, settled, tabs_before, left_s, started):
    """Once settled: logged, the tabs the action asked for awaited, and an action that `started` then whose short
    timers its settle left (answers_first) kept for finish."""
    log.debug("settled", extra={"session": state.session_id, "waited": settled[0], "popups": settled[1],
                                "left": settled[3]})
    if settled[3] and state.answers_first:
        tab, navigations = state.tab, state.tab.navigations
        kept = state.unsettled
        first = kept[2] if kept is not None and kept[0] is tab and kept[1] == navigations else started
        state.unsettled = (tab, navigations, first, started)
    if settled[1]:
        _await_tabs(state, tabs_before + settled[1], max(POPUP_WAIT_S, left_s))


def _await_tabs(state, count, wait_s):
    """Until state.tabs_opened reaches count, a dialog opens, no tab came for POPUP_WAIT_S, or wait_s passed:
    the page events of the popups an action asked for are dispatched while the session waits in the browser
    server. (40 windows come one by one, seconds apart on a loaded machine: each resets the wait.)"""
    page, now = state.tab.page, time.monotonic()
    end, quiet_end, seen = now + wait_s, now + POPUP_WAIT_S, state.tabs_opened
    try:
        while state.tabs_opened < count and state.blocker is None and time.monotonic() < min(end, quiet_end):
            page.wait_for_timeout(20)
            if state.tabs_opened > seen:
                seen, quiet_end = state.tabs_opened, time.monotonic() + POPUP_WAIT_S
    except Exception as exc:  # the page closed meanwhile
        log.debug("wait for popups ended", extra={"session": state.session_id, "error": str(exc)})
    if state.tabs_opened < count:  # a window.open the browser refused, a named window that existed already
        log.debug("popups not all opened", extra={"session": state.session_id, "missing": count - state.tabs_opened})
