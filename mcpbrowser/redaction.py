"""Keeping secret values in the page: which fields are secret, and scrubbing their values from text.

SESSION THREAD: the probes run through the session's own Playwright objects; the text functions are pure.

A field is secret when it is a password input or its autocomplete token names a credential or a card (the
WHATWG autofill names below). Its value never appears in a snapshot, an answer, the history or a log:
typing into it is recorded as [REDACTED] without any flag, and the value is scrubbed wherever it would show."""

import json
import re
import secrets
import string
import threading
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit

from mcpbrowser.snapshot_text import yaml_scalar

REDACTED = "[REDACTED]"
# Shorter secret values are not scrubbed from all text (a one-letter secret would blank every "a"
# of a page); the fields that hold them still never show them (see snapshots.mark_secret).
MIN_SCRUBBED = 4
SECRET_AUTOCOMPLETE = ("current-password", "new-password", "one-time-code", "cc-number", "cc-csc", "cc-exp",
                       "cc-exp-month", "cc-exp-year")
# A field that was a password when it was typed into and then stopped being one (a page that turns it into
# a text field as it fills): MARK_SECRET_FIELDS gives it this attribute, so it stays a secret field. Its name
# ends in a random part of this process, so a page cannot mark its own fields. A page that learns the name
# (by watching a field it typed into while a password) gains nothing a password field of its own would not.
SECRET_MARK = f"data-mcpbrowser-secret-{secrets.token_hex(8)}"
# The same test as one CSS selector list: the `i` flag ignores case, `~=` matches one autocomplete token.
SECRET_FIELD = ", ".join(["input[type=password i]", *(f"input[autocomplete~={t} i]" for t in SECRET_AUTOCOMPLETE),
                          f"input[{SECRET_MARK}]"])
# An init script in every document of a session: a field typed into while it was a password keeps the mark
# once the page changes its type (the only change of the page's DOM the server makes). Only trusted input
# counts, never an event a script dispatched; and the functions it calls are taken before the page's scripts
# run, so that a page that replaces setAttribute does not learn the mark's name from the call.
MARK_SECRET_FIELDS = """(() => {
  const was = new WeakSet(), apply = Reflect.apply, {add, has} = WeakSet.prototype;
  const setAttribute = Element.prototype.setAttribute;
  const typed = (e) => {
    if (!e.isTrusted) return;
    const t = e.composedPath ? e.composedPath()[0] : e.target;
    if (t && t.localName === "input" && String(t.type).toLowerCase() === "password") apply(add, was, [t]);
  };
  addEventListener("beforeinput", typed, {capture: true, passive: true});
  addEventListener("input", typed, {capture: true, passive: true});
  new MutationObserver((changes) => {
    for (const change of changes) {
      const t = change.target;
      if (apply(has, was, [t]) && String(t.type).toLowerCase() !== "password") apply(setAttribute, t, ["MARK", ""]);
    }
  }).observe(document, {subtree: true, attributes: true, attributeFilter: ["type"]});
})()""".replace("MARK", SECRET_MARK)
JS_IS_SECRET = f"const isSecret = e => e.matches({json.dumps(SECRET_FIELD)});"
# Relative to a target locator: the target itself when it is a secret field, one that no longer holds
# the focus after typing, or one with a maxlength. type counts it, so that the costlier evaluate (below)
# runs only when the count finds something.
SECRET_OR_UNFOCUSED = f":scope:is({SECRET_FIELD}, :not(:focus-within), [maxlength])"
# On the target after typing, when that count found something: {secret, went, kept}. `went` names the
# element the focus moved to (into same-origin frames and open shadow roots) when the target does not
# hold the text (its first line, case aside: a field may upper-case it) and that element holds it, or
# its last 2 or more characters (a page that took the focus back half-way). `kept`: how many characters
# the target kept when fewer than typed (a maxlength; one-time-code boxes that move the focus on).
WHERE_TEXT_WENT = """(e, text) => {
  let a = document.activeElement;
  for (let depth = 0; a && depth < 10; depth++) {
    let inner = null;
    try {
      inner = a.shadowRoot ? a.shadowRoot.activeElement : a.contentDocument ? a.contentDocument.activeElement : null;
    } catch (x) { inner = null; }
    if (!inner || inner === a || (inner.ownerDocument && inner === inner.ownerDocument.body)) break;
    a = inner;
  }
  const held = (x) => typeof x.value === "string" ? x.value : (x.isContentEditable ? x.innerText : "");
  const first = text.split("\\n")[0].toLowerCase(), mine = held(e).toLowerCase();
  const secret = (x) => !!(x && x.matches && x.matches(SECRET_FIELD));
  const arrived = !first || mine.includes(first);
  let went = false;
  if (!arrived && a && a !== e && !e.contains(a) && a !== document.body) {
    const other = held(a).toLowerCase();
    went = other.includes(first);
    for (let n = first.length - 1; !went && n >= 2; n--) {
      went = other.endsWith(first.slice(-n)) && !mine.endsWith(first.slice(-n));
    }
  }
  const name = (x) => x.localName + (x.id ? "#" + x.id : x.name ? `[name="${x.name}"]` : "")
    + (x.getAttribute("aria-label") ? ` "${x.getAttribute("aria-label")}"` : "");
  return {secret: secret(e) || (went && secret(a)), went: went ? name(a) : null,
          kept: !arrived && held(e).length < text.length ? held(e).length : null,
          focus: a && a !== e && !e.contains(a) && a !== document.body ? name(a) : null};
}""".replace("SECRET_FIELD", json.dumps(SECRET_FIELD))
# A textbox line of an aria snapshot and its value: `- textbox "Name" [ref=e3]: value`. Playwright writes an
# <input>'s or <textarea>'s value after the colon, and a secret field may have any of these roles (a search
# field is a searchbox, a number field a spinbutton, one with a <datalist> a combobox).
VALUE_ROLES = ("textbox", "searchbox", "spinbutton", "combobox")
_TEXTBOX_VALUE = re.compile(rf'^(\s*- (?:{"|".join(VALUE_ROLES)})(?: "(?:[^"\\]|\\.)*")?(?: \[[^\]]*\])*): (.+)$')


def _shows_value(line):
    return any(role in line for role in VALUE_ROLES)


def has_textbox_values(snapshot):
    """Whether any textbox in the snapshot shows a value (only then is a probe worth its round trip)."""
    return any(_TEXTBOX_VALUE.match(line) for line in snapshot.splitlines() if _shows_value(line))


def redact_textboxes(snapshot, values):
    """The snapshot with every textbox whose value is one of `values` showing [REDACTED] instead."""
    if not values:
        return snapshot
    out = []
    for line in snapshot.splitlines():
        match = _TEXTBOX_VALUE.match(line) if _shows_value(line) else None
        if match and yaml_scalar(match.group(2)) in values:
            line = f"{match.group(1)}: {REDACTED}"
        out.append(line)
    return "\n".join(out)


# A cookie or storage entry named like this holds a login (a session id, a token, a key): its value is a
# secret, as a cookie marked HttpOnly is (a page's own scripts may not read that one either).
SECRET_NAME = re.compile(r"sess|sid|token|auth|jwt|csrf|xsrf|secret|key|pass|cred|login", re.IGNORECASE)


def redact_headers(headers, sensitive):
    """Headers with the values of the `sensitive` names (lower case) shown as [REDACTED]."""
    return {name: (REDACTED if name.lower() in sensitive else value) for name, value in headers.items()}


def scrub_text(text, secrets):
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    if CUT in text and secrets:
        text = _scrub_cut_starts(text, secrets)
    return text


# Where the server's own cuts end a page's text in the page (the console guard keeps a string's first 10,000
# characters, the DOM snapshot a text's 500 and an attribute's 200): a page that pads a secret to straddle the
# cut would show the secret's start, which no whole form matches.
CUT = "\u2026"


def _scrub_cut_starts(text, secrets):
    """text with the start (MIN_SCRUBBED characters or more) of a secret hidden where a cut ends it."""
    parts = text.split(CUT)
    for i, head in enumerate(parts[:-1]):
        for secret in secrets:
            if len(secret) <= MIN_SCRUBBED or secret[:MIN_SCRUBBED] not in head[-len(secret):]:
                continue
            n = next((n for n in range(min(len(secret), len(head) + 1) - 1, MIN_SCRUBBED - 1, -1)
                      if head.endswith(secret[:n])), 0)
            if n:
                head = parts[i] = head[:-n] + REDACTED
    return CUT.join(parts)


class KnownSecrets:
    """The secret values one client's sessions have met; add under its lock, read from any thread.

    Iterating gives a snapshot, longest first (a secret that contains another is
    replaced whole), so scrub_text and scrub_value take it as they take a set. Held
    values (`hold`) are scrubbed as known ones until released: text a running call
    types before it knows whether its field is a secret one (see snapshots.hold)."""

    def __init__(self, parent=None, named=None):
        self._lock = threading.Lock()
        self._known: set[str] = set()
        self._held: dict[str, int] = {}  # value -> how many running calls hold it
        self._values: tuple[str, ...] = ()
        self._parent = parent  # every client's, for the logs (see SecretBook)
        self.named = named or {}  # {NAME: value}: the --secrets this client may type by name
        # Secret values too short to scrub from any text (see snapshots.mark_secret): a trace's action parameters
        # and results that are exactly one of them are hidden all the same.
        self.short: frozenset[str] = frozenset()
        self.update(v for v in self.named.values() if len(v) >= MIN_SCRUBBED)

    def add(self, value):
        self.update((value,))

    def update(self, values):
        new = {v for v in values if isinstance(v, str) and v} - self._known
        if not new:
            return
        with self._lock:
            self._known |= new
            self._sort()
        if self._parent is not None:
            self._parent.update(new)

    def add_short(self, values):
        with self._lock:
            self.short = self.short | {v for v in values if isinstance(v, str) and v}

    def hold(self, values):
        """Scrub these values as known ones until `release`d (as many times as held)."""
        self._count_held(values, 1)

    def release(self, values):
        self._count_held(values, -1)

    def _count_held(self, values, step):
        values = [v for v in values if isinstance(v, str) and v]
        if not values:
            return
        with self._lock:
            for v in values:
                left = self._held.get(v, 0) + step
                if left > 0:
                    self._held[v] = left
                else:
                    self._held.pop(v, None)
            self._sort()
        if self._parent is not None:
            self._parent._count_held(values, step)

    def _sort(self):
        self._values = tuple(sorted(self._known.union(self._held), key=len, reverse=True))

    def __iter__(self):
        return iter(self._values)

    def __len__(self):
        return len(self._values)

    def __contains__(self, value):
        return value in self._values


class SecretBook:
    """Known secrets by client (`owner`): a value met in one session is scrubbed from all that client stores.

    Per client, not per server: a [REDACTED] in another client's answers would tell it what someone else
    typed. EVERY holds all of them, for the server's own log, which only its operator reads. The values
    live, never written, as long as the server. `named` is config.named_secrets(): a client's named
    secrets are known before it types one."""

    def __init__(self, named=None):
        self._lock = threading.Lock()
        self._owners: dict = {}
        self._named = named or {}
        EVERY.update(v for names in self._named.values() for v in names.values() if len(v) >= MIN_SCRUBBED)

    def named(self, owner):
        """{NAME: value} a client may type by name: the shared ones, and its own over them."""
        return {**self._named.get(None, {}), **(self._named.get(owner, {}) if owner is not None else {})}

    def of(self, owner):
        with self._lock:
            known = self._owners.get(owner)
            if known is None:
                known = self._owners[owner] = KnownSecrets(EVERY, self.named(owner))
            return known


# Every client's secrets in this process, for the log filter (logs.py): any thread.
EVERY = KnownSecrets()


# What the browser leaves as it is when a page writes text into a part of a URL (Chromium's: a
# `history.pushState` path, `location.search`, `location.hash`, a URL's password) or encodes it itself
# (encodeURIComponent, encodeURI, URLSearchParams and forms), and what a space becomes; every other
# character is %XX of its UTF-8 bytes. Python's quote keeps other characters than any of them.
_ALNUM = frozenset(string.ascii_letters + string.digits)
_HTML_SPACES = re.compile("[ \t\n\f\r]+")
_KEPT_IN_PATH = "!$%&'()*+,-./:;=@[]_~"  # and a backslash becomes a slash there (an http or https URL's)
_KEPT_IN_URLS = (("!$%&()*+,-./:;=?@[\\]^_`{|}~", "%20"),   # a query
                 ("!#$%&'()*+,-./:;=?@[\\]^_{|}~", "%20"),  # a fragment
                 ("!$%&()*+,-._~", "%20"),                    # a user name or password
                 ("!'()*-._~", "%20"),                        # encodeURIComponent
                 ("!#$&'()*+,-./:;=?@_~", "%20"),             # encodeURI
                 ("*-._", "+"))                               # URLSearchParams, a form's body or query


def _percent(text, kept, space):
    """text percent-encoded as UTF-8, but for letters, digits and `kept`; a space as `space`."""
    return "".join(c if c in _ALNUM or c in kept else space if c == " " else
                   "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass")) for c in text)


def encodings(secret):
    """The forms a value takes in stored text: as is, JSON-, HTML- and URL-encoded, its spaces collapsed or not."""
    # HTML-escaped as a DOM snapshot shows text (capture.DOM_SERIALISER); URL-encoded as Python, forms and the
    # browser do (above); runs of spaces collapsed as a title and an accessibility snapshot show text.
    texts = {secret, " ".join(_HTML_SPACES.split(secret.strip(" \t\n\f\r")))}
    forms = {form for text in texts if len(text) >= MIN_SCRUBBED or text == secret for form in (
        text, json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1],
        quote(text, safe=""), quote_plus(text, safe=""),
        text.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;"),
        _percent(text.replace("\\", "/"), _KEPT_IN_PATH, "%20"),
        *(_percent(text, kept, space) for kept, space in _KEPT_IN_URLS))}
    return sorted(forms, key=len, reverse=True)


def scrub_value(value, secrets):
    """A copy of a JSON-ready value with every known secret replaced in its strings (keys included)."""
    if not secrets:
        return value
    if isinstance(value, str):
        return scrub_text(value, secrets)
    if isinstance(value, dict):
        return {scrub_value(k, secrets): scrub_value(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub_value(v, secrets) for v in value]
    return value


def secret_values(page):
    """The values of the secret fields in every frame of the page, open shadow roots included.

    A count per frame, then a read per secret field. Both run in Playwright's utility world
    (as Playwright's CSS, they pierce open shadow roots); an evaluate of our own would run in
    the page's world, which costs more on a fresh document, though most pages have no secret field."""
    values: set[str] = set()
    for frame in page.frames:
        try:
            fields = frame.locator(SECRET_FIELD)
            values.update(fields.nth(i).input_value(timeout=1000) for i in range(fields.count()))
        except Exception:
            continue  # a frame that detached or navigated meanwhile has nothing left to show
    values.discard("")
    return values


# The one rule for a URL that logs, answers, errors and --print-config show (a remote browser's, the
# history's database): a cloud Grid's user:key@ is its account and key, and tokens and libpq's password=
# travel in the query. A URL that does not parse shows its scheme only.
def shown_url(url):
    """The URL as anyone may see it: scheme://host:port/path, without user, password, query or fragment."""
    if not isinstance(url, str):
        return url
    parts = None
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port
    except ValueError:  # a port that is not a number, an unclosed [
        return f"{parts.scheme if parts else url.partition(':')[0]}://…"
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{host}{f':{port}' if port else ''}{parts.path}"


URL = re.compile(r"[a-z][a-z0-9+.-]*://[^\s'\"<>]+", re.IGNORECASE)


def scrub_urls(text, url=None):
    """text with each URL in it as shown_url shows it, and the password of `url` (the one the text is
    about: its userinfo's, or its query's password=) masked wherever else it stands, should a driver
    or a browser echo it alone."""
    text = URL.sub(lambda match: shown_url(match.group(0)), text)
    try:
        parts = urlsplit(url or "")
        hidden = [parts.password, *(v for k, v in parse_qsl(parts.query) if k == "password")]
    except ValueError:
        hidden = []
    for secret in filter(None, hidden):
        for form in (secret, unquote(secret), quote(unquote(secret), safe="")):
            text = text.replace(form, "***")
    return text
