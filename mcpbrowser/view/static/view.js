// The live view's one script: no framework, no build step. Everything a page shows is put in
// with textContent (titles, URLs and logs come from the pages the agents visit).
"use strict";
(function () {
  const meta = (name) => (document.querySelector(`meta[name="${name}"]`) || {}).content || "";
  const base = meta("base"), csrf = meta("csrf"), kind = meta("view-page"), sessionId = meta("session");
  const main = document.getElementById("main");
  if (!main) return;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v; else if (k === "href") node.href = v; else node.setAttribute(k, v);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  async function get(path) {
    const answer = await fetch(base + path, { credentials: "same-origin" });
    if (answer.status === 401) { location.reload(); throw new Error("signed out"); }
    if (!answer.ok) throw new Error(String(answer.status));
    return answer.headers.get("Content-Type").startsWith("application/json") ? answer.json() : answer.text();
  }
  async function post(path, body) {
    const answer = await fetch(base + path, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify(body || {}),
    });
    return answer.json();
  }
  const ago = (ms) => {
    const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
    return s < 60 ? `${s} s ago` : s < 3600 ? `${Math.round(s / 60)} min ago` : `${Math.round(s / 3600)} h ago`;
  };
  // What a person reads: a time of day (the date and the milliseconds on hover), a duration in ms or s,
  // and a long value (a URL, a call's arguments) cut to `max` characters, the whole on hover and on a click.
  const pad = (n, width) => String(n).padStart(width || 2, "0");
  function when(ms) {
    const d = new Date(ms);
    return el("time", { datetime: d.toISOString(), title: `${d.toLocaleDateString()} ${d.toLocaleTimeString()}.${pad(d.getMilliseconds(), 3)}` },
      `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`);
  }
  const took = (ms) => ms === null || ms === undefined ? "" : ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
  const cut = (text, max) => (text = String(text === null || text === undefined ? "" : text)).length <= max ? text : text.slice(0, max - 1) + "…";
  function long(text, max) {
    text = String(text === null || text === undefined ? "" : text);
    if (text.length <= max) return el("span", {}, text);
    const whole = el("details", { class: "long" },
      el("summary", { title: text.slice(0, 4000) }, el("span", { class: "short" }, text.slice(0, max - 1) + "…")), el("span", {}, text));
    whole.addEventListener("click", (event) => event.stopPropagation());  // not the call row's click
    return whole;
  }
  function stateBadge(s) {
    let text = s.state, cls = "state";
    if (s.heldBy) { text = `held by ${s.heldBy}`; cls += " held"; }
    else if (s.state === "waiting for a person") cls += " waiting";
    else if (s.state === "cooldown") { cls += " cooldown"; text = `cooldown, ${Math.ceil(s.cooldownMs / 1000)} s left`; }
    else if (s.state === "working") cls += " working";
    else if (s.state === "crashed") cls += " crashed";
    return el("span", { class: cls }, text);
  }

  // -- the list -----------------------------------------------------------------------
  async function showList() {
    const body = el("tbody");
    main.replaceChildren(el("h1", {}, "Sessions"), el("table", { id: "sessions" },
      el("thead", {}, el("tr", {}, ...["Session", "Page", "State", "Throttling", "Memory", "Last call"].map((h) => el("th", {}, h)))),
      body));
    async function refresh() {
      let data;
      try { data = await get("api/sessions"); } catch (e) { return; }
      body.replaceChildren(...data.sessions.map((s) => el("tr", { "data-session": s.sessionId },
        el("td", {}, el("a", { href: base + "s/" + encodeURIComponent(s.sessionId) }, s.sessionId.slice(0, 8))),
        el("td", { class: "url" }, el("div", {}, s.title || "(no title)"), el("div", { title: s.url }, cut(s.url, 120))),
        el("td", {}, stateBadge(s), s.waitingFor ? el("div", {}, s.waitingFor) : null),
        el("td", {}, s.throttle ? JSON.stringify(s.throttle) : "none"),
        el("td", {}, s.memoryMb ? `${s.memoryMb} MB` : ""),
        el("td", {}, s.lastCall ? el("span", { class: s.lastCall.error ? "error" : "" },
          `${s.lastCall.tool}${s.lastCall.error ? " " + s.lastCall.error : ""} at `, when(s.lastCall.at), ` (${ago(s.lastCall.at)})`) : ""))));
      if (!data.sessions.length) body.append(el("tr", {}, el("td", { colspan: "6" }, "No open sessions.")));
    }
    await refresh();
    setInterval(refresh, 2000);
  }

  // -- a session ------------------------------------------------------------------------
  // Its console and network logs as rows: a time, a level and a text; a method, a status, a URL and a duration.
  const LOG_ROWS = 500;  // rows a pane keeps, the oldest dropped first
  function logPane(id, heads) {
    const body = el("tbody");
    const box = el("div", { class: "logs", id }, el("table", {}, el("thead", {}, el("tr", {}, ...heads.map((h) => el("th", {}, h)))), body));
    function add(...rows) {
      const atEnd = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;  // follow the newest, unless scrolled up
      body.append(...rows);
      while (body.rows.length > LOG_ROWS) body.rows[0].remove();
      if (atEnd) box.scrollTop = box.scrollHeight;
    }
    return { box, add, note: (text) => add(el("tr", { class: "note" }, el("td", { colspan: String(heads.length) }, text))) };
  }
  const LEVELS = ["error", "warning", "info", "debug", "log"];
  function consoleRow(entry) {
    if (!entry || typeof entry !== "object") return el("tr", {}, el("td", { colspan: "3" }, String(entry)));
    const level = String(entry.level || "");
    return el("tr", { class: `level-${LEVELS.includes(level) ? level : "other"}` },
      el("td", { class: "time" }, entry.timestamp ? when(entry.timestamp) : ""), el("td", { class: "level" }, level),
      el("td", { class: "text" }, long(entry.message, 300), entry.location ? el("div", { class: "where" }, long(entry.location, 100)) : null));
  }
  function networkRow(entry) {
    if (!entry || typeof entry !== "object") return el("tr", {}, el("td", { colspan: "5" }, String(entry)));
    const failed = Boolean(entry.failure || entry.blocked || entry.status >= 400);
    const status = entry.blocked ? "blocked" : entry.status === undefined ? (entry.failure ? "failed" : "") : entry.status;
    return el("tr", { class: failed ? "failed" : "" }, el("td", {}, entry.method || ""),
      el("td", { class: failed ? "error" : "" }, String(status), entry.failure ? el("div", { class: "where" }, long(entry.failure, 100)) : null),
      el("td", { class: "url" }, long(entry.url, 80)), el("td", {}, entry.resourceType || ""), el("td", { class: "num" }, took(entry.durationMs)));
  }

  async function showSession() {
    const banner = el("div", { class: "banner", id: "banner" });
    const info = el("div", { id: "info" });
    const calls = el("tbody");
    const page = el("pre", { id: "stored-page" }, "Click a call to read the page it stored.");
    const logs = { console: logPane("console-log", ["Time", "Level", "Message"]),
                   network: logPane("network-log", ["Method", "Status", "URL", "Type", "Duration"]) };
    const rowOf = { console: consoleRow, network: networkRow };
    const live = el("div", { class: "live", id: "live" });
    main.replaceChildren(el("h1", {}, "Session ", sessionId.slice(0, 8)), banner, info,
      el("div", { class: "columns" },
        el("div", {}, live, el("h2", {}, "Calls"), el("table", { id: "calls" },
          el("thead", {}, el("tr", {}, ...["Time", "Tool", "Arguments", "Result", "Duration", "refId"].map((h) => el("th", {}, h)))), calls)),
        el("div", {}, el("h2", {}, "Stored page"), page, el("h2", {}, "Console"), logs.console.box, el("h2", {}, "Network"), logs.network.box)));
    if (window.mcpbrowserLive) window.mcpbrowserLive(live, { base, csrf, sessionId, el, post });
    let after = 0;
    const rows = new Map();
    const cursors = { console: 0, network: 0 };
    async function refresh() {
      let data;
      try { data = await get(`api/s/${encodeURIComponent(sessionId)}?after=${after}`); } catch (e) { return; }
      info.replaceChildren(stateBadge(data), " ", ...(data.lastCall ? [`last call ${data.lastCall.tool} at `, when(data.lastCall.at), ` (${ago(data.lastCall.at)})`] : []));
      let words = "";
      if (data.heldBy) words = `${data.heldBy} holds this session: the agent's actions wait until it is handed back.`;
      else if (data.waitingFor !== undefined) words = `The agent waits for a person: ${data.waitingFor}`;
      else if (data.state === "cooldown") words = `Login cooldown, ${Math.ceil(data.cooldownMs / 1000)} s left. ${data.cooldownMessage || ""}`;
      banner.textContent = words;
      document.body.dataset.state = data.state;
      document.body.dataset.held = data.heldBy ? "yes" : "no";
      let unfinished = null;
      for (const call of data.calls) {
        // A call still running is read again until it has its outcome (its row is then replaced).
        if (!call.status && unfinished === null) unfinished = call.seq - 1;
        after = unfinished === null ? Math.max(after, call.seq) : unfinished;
        const old = rows.get(call.refId);
        const args = JSON.stringify(Object.fromEntries(Object.entries(call.params).filter(([k]) => k !== "sessionId")));
        const row = el("tr", { class: "call", "data-ref": call.refId },
          el("td", { class: "time" }, when(call.at)), el("td", { class: "tool" }, call.tool), el("td", { class: "args" }, long(args, 80)),
          el("td", { class: call.error ? "error" : "" }, call.error || call.status || "running"),
          el("td", { class: "num" }, took(call.durationMs)), el("td", { title: call.refId }, call.refId.slice(0, 8)));
        if (call.hasPage) row.addEventListener("click", async () => {
          try { page.textContent = await get(`api/page/${encodeURIComponent(call.refId)}`); } catch (e) { page.textContent = "Not stored."; }
        });
        if (old) old.replaceWith(row); else calls.prepend(row);
        rows.set(call.refId, row);
      }
      for (const name of ["console", "network"]) {
        try {
          const got = await get(`api/s/${encodeURIComponent(sessionId)}/logs/${name}?after=${cursors[name]}`);
          cursors[name] = got.cursor;
          if (got.dropped) logs[name].note(`${got.dropped} earlier entries were dropped before the view read them.`);
          if (got.entries.length) logs[name].add(...got.entries.map(rowOf[name]));
        } catch (e) { /* the session closed */ }
      }
    }
    await refresh();
    setInterval(refresh, 1000);
  }

  // -- the page live ---------------------------------------------------------------------
  // The picture: this script reads the live stream (multipart JPEG frames) and paints each frame as
  // soon as its last byte is in. An <img> on the stream itself drew a frame only when the next one
  // began to arrive: after a change, the keep-alive 2 s later. The newest frame wins: one still
  // decoding when others arrive is followed by the last of them only. A part larger than
  // MAX_FRAME ends the stream; it is opened again after a pause, unless the session is gone.
  const BOUNDARY = "--frame", MAX_FRAME = 16 << 20, MAX_HEAD = 1024;
  function showFrames(picture, url) {
    let waiting = null, painting = false, shown = null;
    async function paint() {
      painting = true;
      while (waiting) {
        const blob = waiting; waiting = null;
        const next = URL.createObjectURL(blob), probe = new Image();
        probe.src = next;
        try { await probe.decode(); } catch (e) { URL.revokeObjectURL(next); continue; }
        picture.src = next;  // decoded already: shown at the next paint
        if (shown) URL.revokeObjectURL(shown);
        shown = next;
      }
      painting = false;
    }
    const find = (bytes, text, from) => {
      outer: for (let i = from; i <= bytes.length - text.length; i++) {
        for (let j = 0; j < text.length; j++) if (bytes[i + j] !== text.charCodeAt(j)) continue outer;
        return i;
      }
      return -1;
    };
    async function read() {
      const answer = await fetch(url, { credentials: "same-origin" });
      if (!answer.ok || !answer.body) return answer.status;
      const reader = answer.body.getReader();
      let buffer = new Uint8Array(0);
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return 0;
        const joined = new Uint8Array(buffer.length + value.length);
        joined.set(buffer); joined.set(value, buffer.length);
        buffer = joined;
        for (;;) {
          let start = 0;
          while (start < buffer.length && (buffer[start] === 13 || buffer[start] === 10)) start++;  // keep-alives
          const end = find(buffer, "\r\n\r\n", start);
          if (end < 0) {
            if (buffer.length - start > MAX_HEAD) { reader.cancel(); return 0; }
            buffer = buffer.subarray(start);
            break;
          }
          const head = new TextDecoder().decode(buffer.subarray(start, end));
          const size = Number((/content-length:\s*(\d+)/i.exec(head) || [])[1]);
          if (!head.startsWith(BOUNDARY) || !(size >= 0) || size > MAX_FRAME) { reader.cancel(); return 0; }
          if (buffer.length < end + 4 + size) { buffer = buffer.subarray(start); break; }
          waiting = new Blob([buffer.subarray(end + 4, end + 4 + size)], { type: "image/jpeg" });
          buffer = buffer.subarray(end + 4 + size);
          if (!painting) paint();
        }
      }
    }
    (async function watch() {
      let status = 0;
      try { status = await read(); } catch (e) { /* the connection broke: open it again */ }
      if (status === 401 || status === 403 || status === 404) return;  // signed out, or the session is gone
      setTimeout(watch, status === 429 ? 5000 : 2000);
    })();
  }

  // Take over, hand back, and the person's clicks, scrolls and keys on the picture. Typed text is
  // sent in runs (one call each, a secret to the server), a special key or a click ends a run.
  const KEYS = ["Enter", "Tab", "Backspace", "Delete", "Escape", "ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight",
                "Home", "End", "PageUp", "PageDown"];
  window.mcpbrowserLive = function (live) {
    const sid = encodeURIComponent(sessionId);
    const picture = el("img", { id: "live-picture", alt: "The session's page, live" });
    const take = el("button", { id: "take-over" }, "Take over");
    const give = el("button", { id: "hand-back" }, "Hand back");
    const note = el("span", { id: "hands-note" });
    live.append(el("div", { class: "controls" }, take, give, note), picture);
    showFrames(picture, `${base}api/s/${sid}/live`);
    let mine = false, typed = "", timer = null, queue = Promise.resolve();
    const send = (action) => { queue = queue.then(() => post(`api/s/${sid}/input`, action)).then((r) => {
      note.textContent = r.error ? `Not done: ${r.error}` : ""; return r; }); return queue; };
    const flush = () => { clearTimeout(timer); if (typed) { const text = typed; typed = ""; send({ action: "type", text }); } return queue; };
    const hold = (on) => { mine = on; live.classList.toggle("held", on); document.body.dataset.mine = on ? "yes" : "no"; };
    hold(false);
    take.addEventListener("click", async () => { const r = await post(`api/s/${sid}/takeover`); hold(!r.error); note.textContent = r.error || "You drive: click, scroll and type on the picture."; });
    give.addEventListener("click", async () => { await flush(); const r = await post(`api/s/${sid}/handback`); hold(false); note.textContent = r.error || "Handed back."; });
    const at = (event) => ({ x: Math.min(1, Math.max(0, event.offsetX / picture.clientWidth)), y: Math.min(1, Math.max(0, event.offsetY / picture.clientHeight)) });
    picture.addEventListener("click", (event) => { if (!mine) return; flush(); send({ action: "click", ...at(event) }); });
    picture.addEventListener("wheel", (event) => { if (!mine) return; event.preventDefault(); flush(); send({ action: "scroll", ...at(event), dx: event.deltaX, dy: event.deltaY }); }, { passive: false });
    document.addEventListener("keydown", (event) => {
      if (!mine || event.ctrlKey || event.metaKey || event.altKey) return;
      if (event.key.length === 1) { typed += event.key; clearTimeout(timer); timer = setTimeout(flush, 400); }
      else if (KEYS.includes(event.key)) { flush(); send({ action: "key", key: event.key }); }
      else return;
      event.preventDefault();
    });
  };

  if (kind === "list") showList(); else if (kind === "session") showSession();
})();
