"""A session's snapshots as shown and stored: cleaned, secrets redacted, refs remembered.

SESSION THREAD ONLY: each function takes the session's SessionState, whose current tab's `refs` say which refs the agent
may use, and whose `secrets` are scrubbed from all output.
"""

import itertools
import json
import time

from mcpbrowser import snapshot_text
from mcpbrowser.logs import log
from mcpbrowser.redaction import (
    MIN_SCRUBBED,
    SECRET_FIELD,
    encodings,
    has_textbox_values,
    redact_textboxes,
    secret_values,
)
from mcpbrowser.session import page_reading, page_watch, settle
from mcpbrowser.session.acting import INTERRUPTED
from mcpbrowser.session.playwright_internals import Together

_ARMINGS = itertools.count(1)  # the page watch's tokens (see page_watch.arm)


# A page of more elements than this is not walked by the server's own capture (the history's snapshot after a
# call): a walk costs the page about 0.1 ms per element and goes on in the page after any timeout, so the agent's
# next click would wait behind it. Such a call's history has no snapshot; the agent's own snapshot still walks it.
HUGE_ELEMENTS = 15_000
# How long the prefixes of a secret typed key by key stay hidden from the logs after the typing (see typing_key_by_key).
HIDDEN_FOR_S = 10.0
# How long the editor's proof (a text_content, which waits for its element) may wait: its engine always answers
# one element at once, so this bounds only a page gone meanwhile.
EDITOR_READ_MS = 500


def capture_snapshot(state, field_edit=None):
    """The page as YAML with refs, for the history; None when a dialog, failure or a huge page prevents it.

    When the tab's last whole snapshot is held (Tab.full_snapshot) and the page provably did not change
    since, that snapshot is the capture: the walk and the check are one evaluation (page_watch.changed).
    After a `type` or a `select` (`field_edit`: Response.filled, Response.chose), it is that snapshot edited
    where the watch proves the field was all that changed (_edited).
    """
    tab = state.tab
    if state.blocker is not None or tab is None:
        return None
    # The page as the call left it: once what its action set off is done (settle.finish: its short timers, which its
    # answer did not wait for), or as the next call finds it when that comes first (an agent's next key). Only this
    # call's: a wait_for after a key, which found its text before the key's timers ran, stores the page it found.
    if state.answers_first:
        settle.finish(state, until_called=True)
    # A tab that closed itself after the answer (a key's timer ran window.close) leaves another tab current: its page
    # is not the one the call left, and the refId stores none.
    if state.tab is not state.answered_tab:
        return None
    held, tab.full_snapshot = tab.full_snapshot, None
    if held is not None and held[1] == state.proven:  # the call's settle proved it (take_proof): no round trip
        log.debug("capture edited", extra={"event": "capture_edited", "session": state.session_id})
        return _reused(state, held)
    if held is not None and field_edit is not None:
        edited = _edited(state, held, *field_edit)
        if edited is not None:
            return edited
        held = None  # the watch saw more than the field change, or the line is not certain: a walk
    try:  # a dialog that opens meanwhile, or a page that hangs, ends the capture, not the session thread's wait
        # The count this call's settle or title read had (OnSession.run decided on it before the answer): no round
        # trip of its own. A page that grew past HUGE_ELEMENTS since, within the call, is walked once more.
        if too_large(state, state.elements_counted):
            return None
        if held is not None:
            tab.arming = next(_ARMINGS)
            root = tab.page.locator(page_watch.changed(tab.arming))
        else:
            root = page_root(state)
        reads = [(root, "aria_snapshot", {"mode": "ai", "timeout": 2000})]
        # A page read before in this document (it has refs) may show typed values, which the redaction reads
        # the secret fields for after the walk: their count goes with the walk, in the same round trip. Not on
        # a fresh document (a navigate's capture), whose fields are seldom filled: the count would cost it CPU.
        counts = bool(tab.refs) and len(tab.page.frames) == 1
        if counts:
            reads.append((tab.page.locator(SECRET_FIELD), "count", {}))
        # The next call is here already: a read may answer with this walk (fresh_walk), its title read with it. Not
        # while a new document is on its way: the history would answer at once with the old one's title, and the walk
        # in the new one (an outside try: a key that loads a slow page, its snapshot titled as the page before).
        navigations = tab.navigations
        # Nor on a page with frames: a frame's own document is not watched, and such a page is always read again.
        waiting = state.worker.next_tag() if state.chromium and not state.worker.idle() and len(tab.page.frames) == 1 \
            and not state.events.navigation_pending(tab.page) else None
        if waiting is not None:
            reads.append(page_reading.history_read(tab))
        text, *rest = state.background(tab, Together(*reads), "run") or (None,)
        if isinstance(text, Exception):
            raise text
        counted = rest.pop(0) if counts and rest else None
        title = page_reading.current_title(rest[0]) if waiting is not None and rest else None
        if title is not None and text is not None and state.worker.next_tag() is waiting \
                and tab.navigations == navigations:
            tab.fresh = (tab.arming, title, state.worker.begun + 1, tab.navigations)
    except Exception as exc:
        if held is not None and _still_clean(state, held):  # `changed` matched nothing: the page is as held
            log.debug("capture reused", extra={"event": "capture_reused", "session": state.session_id})
            return _reused(state, held)
        log.debug("snapshot capture failed", extra={"session": state.session_id, "error": str(exc)})
        state.responsive()  # a page that hangs fails with Playwright's own timeout first
        return None
    if text is None:
        return None
    return took_whole_snapshot(state, text, set() if counted == 0 else None)


def before_call(state, tool):
    """A call that may send the page input drops the tabs' held whole snapshots (page_watch says why); not `type`'s
    or `select`'s, whose field value, choice and focus the watch reads, not hears (page_watch.typed, chose)."""
    state.proven = 0  # proved by a settle of this call, if any: not of another's
    if not (tool.read_only or tool.name in page_watch.SENDS_NO_INPUT or tool.name in ("type", "select")):
        for tab in state.tabs:
            tab.full_snapshot = None


def _edited(state, held, selector, value):
    """The held whole snapshot edited as Proof.of says (a field's value, a select's choice: value None, an editor's
    lines), where the page watch proves that was all that changed since it was read; else None."""
    proof = Proof.of(state, held, selector, value)
    if proof is None:
        return None
    try:
        answers = state.background(state.tab, Together(*proof.reads), "run")
    except Exception:  # a page navigating away, a ref gone: the walk decides
        answers = None
    text = proof.text(answers) if isinstance(answers, list) else None
    if text is None:
        return None
    log.debug("capture edited", extra={"event": "capture_edited", "session": state.session_id})
    return _reused(state, (text, proof.token))  # the proof's count re-armed the watch as its token


class Proof:
    """The page watch's proof that a `type` (a value) or a `select` (None) changed nothing but its field at
    `selector`: `reads`, a count scoped to the field (a line's place, 0 for a refusal) and, on a page showing an
    editor's lines, the editor's read (page_watch.wrote: "" for a refusal), which re-arm the watch as `token` when
    they prove; `text(answers)`, the held snapshot so edited (None: walk); `proved(answers)`, whether one did."""

    def __init__(self, reads, token, text):
        self.reads, self.token, self._text = reads, token, text

    def text(self, answers):
        return self._text(*answers) if self.proved(answers) else None

    @staticmethod
    def proved(answers):
        return any((isinstance(a, int) and a > 0) or (isinstance(a, str) and a) for a in answers)

    @classmethod
    def of(cls, state, held, selector, value):
        """The proof against `held` (the tab's whole snapshot), None where none can be made."""
        if value is None:
            lists = snapshot_text.option_lists(held[0])
            if not lists:
                return None

            def chosen(place):
                for options in lists.values():
                    if 0 < place <= len(options):
                        return snapshot_text.with_option_selected(held[0], options, place - 1)
                    place -= len(options)
                return None
            token = next(_ARMINGS)
            proof = page_watch.chose(token, held[1], [(ref, len(at)) for ref, at in lists.items()])
            return cls([(state.tab.page.locator(selector).locator(proof), "count", {})], token, chosen)
        fields = (snapshot_text.field_lines(held[0]) if snapshot_text.yaml_value(value) is not None else None) or {}
        # An editor's read only where the held page shows one's lines: it costs every other `type` a message.
        editors = snapshot_text.shows_editor_lines(held[0])
        if not fields and not editors:
            return None
        refs = list(fields)
        token = next(_ARMINGS)
        reads: list[tuple] = [(state.tab.page.locator(selector).locator(page_watch.typed(token, held[1], value, refs)),
                               "count", {})] if fields else []
        if editors:
            reads.append((state.tab.page.locator(page_watch.wrote(token, held[1])), "text_content",
                          {"timeout": EDITOR_READ_MS}))

        def edited(*answers):
            place, written = answers[0] if fields else 0, answers[-1] if editors else ""
            if isinstance(place, int) and 0 < place <= len(refs):
                # None for a line the walk writes otherwise (a value that says the field's name): it walks, and arms
                return snapshot_text.with_field_value(held[0], fields[refs[place - 1]], value)
            if isinstance(written, str) and written:
                editor = json.loads(written)
                return snapshot_text.with_editor_lines(held[0], editor["ref"], editor["lines"])
            return None
        return cls(reads, token, edited)


def proof_to_settle(state, selector, value):
    """The capture's Proof for a `type` of `value` (a `select`: None) into the field at `selector`, to send with
    the action's settle (settle.now, then take_proof); None when the tab holds no whole snapshot to edit."""
    held = state.tab.full_snapshot
    return None if held is None else Proof.of(state, held, selector, value)


def take_proof(state, proof, answers, waited, usable):
    """The answer of a Proof sent with the settle. Where it proved, the settle found nothing of the action pending
    at its first look (`waited` 0, and no short timer left for settle.finish: the proof saw the page as the call
    leaves it) and the handler found the edit `usable` (a plain field that kept all its text and the focus), the
    held snapshot so edited is the page the capture stores, with no round trip of its own (capture_snapshot).
    Else, where the proof re-armed the watch, the capture walks."""
    done = waited == 0 and state.unsettled is None
    text = proof.text(answers) if usable and done else None
    if text is None:
        if proof.proved(answers):
            state.tab.full_snapshot = None  # the watch is armed as the proof's, no longer as the held snapshot's
        return
    state.tab.full_snapshot, state.proven = (text, proof.token), proof.token


def _still_clean(state, held):
    """Whether the page did not change since the held whole snapshot was read (one count, given the server's
    own INTERNAL_S). `changed`'s refusal is told apart from a failure (a page navigating, a walk that timed
    out after it re-armed the watch) by asking about the held snapshot's own arming, not by the message."""
    try:
        return state.background(state.tab, state.tab.page.locator(page_watch.clean(held[1])), "count") == 1
    except Exception:
        return False


def _reused(state, held):
    """The held whole snapshot as this capture (scrubbed of secrets learned since as it leaves, core/answer.py); its
    refs are Playwright's current ones (nothing read an aria snapshot since), and it stays held for the next call."""
    state.tab.full_snapshot = held
    state.tab.refs = frozenset(snapshot_text.REF.findall(held[0]))
    return held[0]


def too_large(state, counted=None, deadline_s=None):
    """Whether the history's capture skips the page: over HUGE_ELEMENTS (`counted`, a count just read, else
    one read), or too busy to answer the count within deadline_s (a walk would wait as long, then run on).
    A count that failed (a page navigating): False, the capture's own try decides."""
    count = counted if counted is not None else page_reading.element_count(state, deadline_s)
    if count is not None and (count > HUGE_ELEMENTS or count == page_reading.NO_ANSWER):
        log.debug("snapshot capture skipped", extra={"session": state.session_id, "elements": count})
        return True
    return False


def page_root(state):
    """What a whole-page aria snapshot is taken of: the page, through the page watch's engine when
    there is one, which arms the watch (as Tab.arming) in the same evaluation as the walk (see page_watch)."""
    tab = state.tab
    if not state.watching:
        return tab.page
    tab.arming = next(_ARMINGS)
    return tab.page.locator(page_watch.arm(tab.arming))


def took_whole_snapshot(state, text, secret_fields=None):
    """took_snapshot, for a whole-page snapshot read through page_root: unchanged_snapshot may give it again."""
    tab = state.tab
    text = took_snapshot(state, text, secret_fields)
    if state.watching:
        tab.full_snapshot = (text, tab.arming)
    return text


def walk_page(state, options):
    """The agent's walk of the whole page (snapshot): (text, title), INTERRUPTED for the text when a dialog
    ended it. The secret fields' count (as capture_snapshot sends it) and, on Chromium, the tab's title go
    out with the walk: one round trip instead of three."""
    tab = state.tab
    reads = [(page_root(state), "aria_snapshot", options)]
    counts = bool(tab.refs) and len(tab.page.frames) == 1
    if counts:
        reads.append((tab.page.locator(SECRET_FIELD), "count", {}))
    if state.chromium:
        reads.append(page_reading.history_read(tab))
    navigations = tab.navigations
    answers = state.act(Together(*reads), "run")
    if answers is INTERRUPTED:
        return INTERRUPTED, None
    text, *rest = answers
    if isinstance(text, Exception):
        raise text
    counted = rest.pop(0) if counts else None
    # A document that came during the walk: the history may have answered the one before's (the caller reads it).
    title = page_reading.current_title(rest[0]) if rest and tab.navigations == navigations else None
    return took_whole_snapshot(state, text, set() if counted == 0 else None), title


def unchanged_snapshot(state, response):
    """(text, title): the tab's last whole-page snapshot if the page provably did not change since it was
    read, with the tab's title read in the same round trip (Chromium; else None); else (None, None).

    One count through the page watch's engine, sent with the title's read. Playwright's refs are still
    that snapshot's: every other aria snapshot read clears full_snapshot. Through state.act: behind a
    dialog that opened meanwhile they would hang.
    """
    tab = state.tab
    held = tab.full_snapshot
    if held is None:
        return None, None
    walked = fresh_walk(state, held)
    if walked is not None:
        response.reused_snapshot()
        return walked
    reads: list[tuple] = [(tab.page.locator(page_watch.clean(held[1])), "count", {})]
    if state.chromium:
        reads.append(page_reading.history_read(tab))
    answers = state.act(Together(*reads), "run")
    if answers is INTERRUPTED:
        return None, None
    if isinstance(answers[0], Exception):
        raise answers[0]
    if answers[0] != 1:
        return None, None
    title = page_reading.current_title(answers[1]) if len(answers) > 1 else None
    response.reused_snapshot()  # the call's log line says so
    return _reused(state, held), title  # a secret typed since is scrubbed from it too


def fresh_walk(state, held):
    """(text, title) of the held whole snapshot when the last capture walked it while this call waited to run, nothing
    ran since (no other command, no settle's finish) and it is still the tab's document: the page as this call
    found it, with no round trip. Else None (the watch's count proves it, unchanged_snapshot)."""
    tab, fresh = state.tab, state.tab.fresh
    tab.fresh = None
    if fresh is None or fresh[0] != held[1] or fresh[2:] != (state.worker.begun, tab.navigations) \
            or state.unsettled is not None:
        return None
    return _reused(state, held), fresh[1]


def mark_secret(state, response, text):
    """The running call's text is a secret: recorded as [REDACTED], and scrubbed from all output.

    Values shorter than MIN_SCRUBBED are not scrubbed from everything (a one-letter
    secret would blank every "a" of a page); the field still never shows them.
    """
    response.text_is_secret()
    learn_secrets(state, (text,))


# Text the running call is about to put into the page before it knows whether its field is a secret one is
# held: scrubbed from all a reader sees meanwhile (answers, the log resources, list_sessions, progress, the
# logs), from before the first key until `release` or the call's end (state.running). It costs no round trip:
# type's hot path looks at its field only after filling it.
def hold(state, values):
    """Hold values (4 characters or more) as secrets until released; returns what it holds, for `release`."""
    held = tuple({v for v in values if isinstance(v, str) and len(v) >= MIN_SCRUBBED})
    state.secrets.hold(held)
    state.held.append(held)
    return held


def release(state, held):
    """Stop holding what `hold` returned (a value that turned out secret stays known through mark_secret)."""
    if held in state.held:
        state.held.remove(held)
        state.secrets.release(held)


# A page that logs its field's value on each key would tell all of a secret typed key by key but its last
# character: every prefix long enough to scrub, in every form stored text carries it, is held, so scrubbed from
# every answer, row, title and snapshot, and from the console and network entries as they arrive (events.py).
# Held past the call, HIDDEN_FOR_S after the typing, and added to by what a next run types meanwhile: a page's
# echo of the last keys may come during the next action. Not for the session's life: a password's 4-letter
# prefix ("pass") would blank that word in every log. Only for a secret: a plain field's would blank common words.
def typing_key_by_key(state, text):
    """A secret is about to be typed one key at a time: hide its prefixes too."""
    forms = {form for n in range(MIN_SCRUBBED, len(text) + 1) for form in encodings(text[:n])}
    if time.monotonic() < state.events.hidden_until:
        forms.update(state.events.hidden)
    stop_hiding(state)
    state.secrets.hold(forms)
    state.events.hidden = tuple(sorted(forms, key=len, reverse=True))
    state.events.hidden_until = time.monotonic() + HIDDEN_FOR_S


def stop_hiding(state, only_if_due=False):
    """End what typing_key_by_key hides (when its time is up, with only_if_due)."""
    if not state.events.hidden or (only_if_due and time.monotonic() < state.events.hidden_until):
        return
    state.secrets.release(state.events.hidden)
    state.events.hidden = ()


def learn_secrets(state, values):
    """Values known to be secret from now on: scrubbed everywhere, or (shorter ones) where they stand alone."""
    values = {v for v in values if v}
    state.secrets.update(secret_forms(values))
    state.secrets.add_short(v for v in values if len(v) < MIN_SCRUBBED)


def secret_forms(values):
    """The forms a secret is scrubbed in: in every form stored text carries them (a form sent by GET puts
    `p=Zq7%24ecret+p%40ss` in the URL), and upper- and lower-cased, as many a field keeps a code or a key
    (its page's script changes its value)."""
    return {form for v in values if v and len(v) >= MIN_SCRUBBED
            for case in {v, v.upper(), v.lower()} for form in encodings(case)}


def took_snapshot(state, text, secret_fields=None):
    """A fresh aria snapshot as shown and stored: cleaned, redacted; its refs become the current ones.
    secret_fields: the secret fields' values, when read with the walk (else read here if needed)."""
    text = redact_snapshot(state, snapshot_text.clean(text), secret_fields)
    state.tab.refs = frozenset(snapshot_text.REF.findall(text))
    return text


def redact_snapshot(state, text, secret_fields=None):
    """An aria snapshot with every secret field's value hidden where it stands: the page alone knows those
    values, never learned into the secret book (below), so they are hidden as the page is read; the book's
    known values are scrubbed as the snapshot leaves (core/answer.py).

    The fields' values are read only when some textbox in the snapshot shows a value.
    """
    if state.tab is None or state.blocker is not None or not has_textbox_values(text):
        return text
    # What "a secret the client met" means, decided here: a value the client's agent typed or filled as a secret
    # (flagged, or into a field that was a secret one when the server looked: mark_secret), and the --secrets
    # values. Never what a page shows: a secret field's value is hidden where it stands (this snapshot, the DOM
    # snapshot, screenshots, a trace) but not learned, since a page fills its own fields as it likes and would
    # otherwise hide the words of its choice in every session of that client. So a value the user typed into a
    # secret field (wait_for_user) is hidden in its field and in the session's trace (capture.trace_stop).
    values = secret_values(state.tab.page) if secret_fields is None else secret_fields
    if state.tracing:
        state.traced_fields.update(values)
    return redact_textboxes(text, values)
