"""The files the server writes, without secrets: a download's name, a saved Playwright trace (every member of its
zip rewritten). Any thread (pure, files only).

Playwright records what a secret-aware server would never store (each action's parameters
and results, a log line per action, DOM snapshots with every field's value, network bodies),
and tracing has no filter, so the archive is scrubbed when trace_stop saves it:

- the JSON-lines members (`trace.trace`, `trace.network`), event by event: every string loses
  the known secrets (in their encodings); a string that is exactly a short secret, or a textbox
  of an aria snapshot showing one, becomes [REDACTED]; so does a secret field's value in DOM
  snapshots, whoever filled it;
- every other member (network bodies, screenshots) loses the known secrets' bytes;
- the values of the headers --redact-headers names and of cookies become [REDACTED].

The events keep their shape, so Playwright's trace viewer loads the archive. A screenshot shows
what the page showed: a one-time code or card number as typed (the limits in docs/safety.md)."""

import contextlib
import glob
import json
import os
import re
import tempfile
import zipfile
from urllib.parse import parse_qsl, urlsplit

from mcpbrowser.redaction import REDACTED, SECRET_AUTOCOMPLETE, SECRET_MARK, encodings, redact_textboxes, scrub_value

JSON_LINES = (".trace", ".network")
# A body's file as the network log names it: `_sha1` in the browser server's copy, `_file` in an archive.
_SHA1 = re.compile(rb'"_(?:sha1|file)":\s*"(?:resources/)?([0-9a-f]{40}[.\w]*)"')
_PAGE_ID = re.compile(rb'"pageId":\s*"(page@[0-9a-f]+)"')  # whose screencast frames are page@<id>-<time>.jpeg
_VALUE_ATTRIBUTES = ("__playwright_value_", "value")
# + our pid + "-": a directory in the temp dir per browser life (core/browser_process.py makes them)
RUNTIME_PREFIX = "mcpbrowser-run-"


def download_name(suggested, secrets):
    """The part of a download's file name the page suggested: its safe characters, as a suffix. Less the known
    secrets first: a page that named a download after the password typed into it had it in the file's name on
    disk, and in its `name` and `path` in answers as no form of it (`p@ss` became `p_ss`)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(scrub_value(suggested, secrets))).lstrip(".")[-80:]


def _is_secret_field(name, attrs):
    """The DOM snapshot's node as redaction.SECRET_FIELD sees an element: a password or credential input."""
    if name.upper() != "INPUT":
        return False
    if str(attrs.get("type", "")).lower() == "password" or SECRET_MARK in attrs:
        return True
    return any(token in SECRET_AUTOCOMPLETE for token in str(attrs.get("autocomplete", "")).lower().split())


def _hide_fields(node):
    """A frame snapshot's tree ([name, attrs, *children]; a [[n, m]] is a reference, a str is text), fields hidden.

    True when a value was hidden."""
    if not isinstance(node, list) or not node or not isinstance(node[0], str):
        return False
    hidden = False
    if len(node) > 1 and isinstance(node[1], dict) and _is_secret_field(node[0], node[1]):
        for key in _VALUE_ATTRIBUTES:
            if node[1].get(key) not in (None, "", REDACTED):
                node[1][key], hidden = REDACTED, True
    for child in node[2:]:
        hidden = _hide_fields(child) or hidden
    return hidden


def _exact(value, short):
    """Strings equal to a short secret become [REDACTED] (a substring that short is too common to replace).

    So does a textbox's value in an aria snapshot (the result of the server's own snapshot calls)."""
    if isinstance(value, str):
        if value in short:
            return REDACTED
        return redact_textboxes(value, short) if "box" in value or "spinbutton" in value else value
    if isinstance(value, dict):
        return {k: _exact(v, short) for k, v in value.items()}
    if isinstance(value, list):
        return [_exact(v, short) for v in value]
    return value


def _hide_headers(value, sensitive):
    """A network event with the values of sensitive headers (and every cookie) as [REDACTED], in place."""
    if isinstance(value, list):
        for item in value:
            _hide_headers(item, sensitive)
    elif isinstance(value, dict):
        for key, item in value.items():
            if key == "headers" and isinstance(item, list):
                for header in item:
                    if isinstance(header, dict) and str(header.get("name", "")).lower() in sensitive:
                        header["value"] = REDACTED
            elif key == "cookies" and isinstance(item, list) and {"cookie", "set-cookie"} & sensitive:
                for cookie in item:
                    if isinstance(cookie, dict) and "value" in cookie:
                        cookie["value"] = REDACTED
            else:
                _hide_headers(item, sensitive)
    return value


def _scrub_network(line, forms, short, sensitive):
    """An event: the secrets gone (as _scrub_event), and the values of --redact-headers' headers, which
    Playwright records as sent and received (Authorization), and of cookies (the network log's, and those
    of a storage state the server read), as everywhere else."""
    line = _scrub_event(line, forms, short)
    if not sensitive or not any(b'"' + name.encode() in line.lower() for name in sensitive):
        return line
    try:
        event = json.loads(line)
    except ValueError:
        return line
    return json.dumps(_hide_headers(event, sensitive), ensure_ascii=False, separators=(",", ":")).encode()


def _scrub_event(line, forms, short):
    # Most events hold nothing to hide: those are kept byte for byte, unparsed (rewriting every event
    # of a long trace takes seconds). A DOM snapshot lists an <input> again only when it changed (else
    # it refers back), and one whose secret fields are empty is kept too.
    fields = b'"frame-snapshot"' in line and b'"INPUT"' in line
    known = any(form.encode() in line for form in forms)
    exact = any(json.dumps(secret).encode()[1:-1] in line for secret in short)
    if not (fields or known or exact):
        return line
    try:
        event = json.loads(line)
    except ValueError:
        return _scrub_bytes(line, forms)
    if fields and isinstance(event, dict):
        fields = _hide_fields(event.get("snapshot", {}).get("html"))
    if not (fields or known or exact):
        return line  # empty secret fields only: kept as they were
    if exact:
        event = _exact(event, short)
        if isinstance(event, dict) and isinstance(event.get("message"), str):  # a log line: `fill("123")`
            for secret in short:
                event["message"] = event["message"].replace(json.dumps(secret), json.dumps(REDACTED))
    if known:
        event = scrub_value(_pairs_again(scrub_value(event, forms)), forms)
    return json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode()


# The trace splits a request's query (and a form body) at each `&` into decoded pairs: a secret that holds
# one (a page put it in its URL) lost its whole forms from the URL, but its halves stayed in the pairs.
def _pairs_again(event):
    """A network event whose query pairs (and form body's) are parsed again from its scrubbed URL (and body)."""
    snapshot = event.get("snapshot") if isinstance(event, dict) else None
    request = snapshot.get("request") if isinstance(snapshot, dict) else None
    if not isinstance(request, dict):
        return event
    if isinstance(request.get("queryString"), list) and isinstance(request.get("url"), str):
        request["queryString"] = _pairs(urlsplit(request["url"]).query)
    post = request.get("postData")
    if isinstance(post, dict) and isinstance(post.get("params"), list) and isinstance(post.get("text"), str):
        post["params"] = _pairs(post["text"])
    return event


def _pairs(query):
    return [{"name": name, "value": value} for name, value in parse_qsl(query, keep_blank_values=True)]


def _scrub_bytes(data, forms):
    for form in forms:
        data = data.replace(form.encode(), REDACTED.encode())
    return data


def scrub_trace(path, secrets, short=(), headers=()):
    """Rewrite the trace zip at `path` without `secrets` (scrubbed wherever they occur) and `short` (exact values),
    and with the values of the `headers` named (lower case; cookies too) as [REDACTED] in its network log.

    The new archive is written beside the old one and moved over it, so a reader never sees half of it."""
    forms = sorted({form for secret in secrets for form in encodings(secret)}, key=len, reverse=True)
    short, sensitive = frozenset(short), frozenset(headers)
    temporary = path + ".scrubbing"
    try:
        with zipfile.ZipFile(path) as source, zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as target:
            for member in source.infolist():
                data = source.read(member)
                if member.filename.endswith(JSON_LINES):
                    data = b"\n".join(_scrub_network(line, forms, short, sensitive) if line.strip() else line
                                      for line in data.split(b"\n"))
                else:
                    data = _scrub_bytes(data, forms)
                target.writestr(member, data, compress_type=member.compress_type)
        os.replace(temporary, path)
    except BaseException:
        # A full disk halfway: no partial copy is left beside the trace (which its caller removes).
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def artifact_roots():
    """Where a browser server of ours keeps Playwright's artifacts: its TMPDIR in our runtime folder, or /tmp.

    A remote browser keeps them on its own machine, out of our reach."""
    temp = tempfile.gettempdir()
    return [temp, *glob.glob(os.path.join(glob.escape(temp), f"{RUNTIME_PREFIX}{os.getpid()}-*", "tmp"))]


def scrub_leftovers(name, roots, secrets):
    """The browser server's own copy of the trace `name`, left under `roots`, removed: its event files, its
    pages' screencast frames, and the resources its network log names (bodies, by their content's hash)
    that no other trace being recorded names; those (shared by every trace of the browser) are scrubbed of
    `secrets` in place instead. Playwright keeps them in clear until the browser exits."""
    forms = sorted({form for secret in secrets for form in encodings(secret)}, key=len, reverse=True)
    for root in roots:
        for folder in glob.glob(os.path.join(glob.escape(root), "playwright-artifacts-*")):
            own = glob.glob(os.path.join(glob.escape(folder), glob.escape(name) + "*"))
            resources, pages = set(), set()
            for path in own:
                with open(path, "rb") as f:
                    data = f.read()
                if path.endswith(".network"):
                    resources.update(_SHA1.findall(data))
                elif path.endswith(".trace"):
                    pages.update(_PAGE_ID.findall(data))
            for path in own:
                os.remove(path)
            for page in pages:  # a page is one context's, so one session's: its frames are this trace's
                for path in glob.glob(os.path.join(glob.escape(folder), "**", glob.escape(page.decode()) + "-*"),
                                      recursive=True):
                    os.remove(path)
            others = b"".join(_read(path) for path in glob.glob(os.path.join(glob.escape(folder), "*"))
                              if path.endswith(JSON_LINES))
            for resource in resources:
                path = os.path.join(folder, "resources", resource.decode())
                if resource not in others:
                    with contextlib.suppress(FileNotFoundError):
                        os.remove(path)
                    continue
                data = _read(path)
                scrubbed = _scrub_bytes(data, forms)
                if scrubbed != data:
                    with open(path, "wb") as f:
                        f.write(scrubbed)


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""
