"""Shortening what a page controls (titles, URLs, dialog texts, file names) in the answers an agent reads.

Any thread: pure functions. A page can put 100,000 characters in its title, URL or an alert, and
every answer would repeat them: the agent reads them shortened, with a marker saying how much is
left out; the history keeps them whole (the MCP layer shortens its copy of the answer).

A lone UTF-16 surrogate ("\\uD800" in a script) is text no JSON can carry: the official client
refuses the whole line, and UTF-8 cannot encode it for the history. `valid_text` replaces each with U+FFFD."""

import re
from typing import Any

PAGE_STRING_CHARS = 200   # a URL, dialog text or file name as an answer shows it
TITLE_CHARS = 500         # a title: some pages put data there (a test page's JSON of 400)
MESSAGE_CHARS = 600       # our own sentences, which may quote such strings
# The fields shortened wherever they appear in an answer, and the limit of each. All of them
# at their limits, with the rest of an action's answer, stay under 2,000 characters.
LIMITS = {"title": TITLE_CHARS, "url": PAGE_STRING_CHARS, "defaultValue": PAGE_STRING_CHARS,
          "suggestedName": PAGE_STRING_CHARS, "message": MESSAGE_CHARS}
# Not entered: what a tool returns on purpose, whole (log entries have their own caps; an
# evaluation's value is the agent's own question).
WHOLE = {"entries", "result"}
REPLACEMENT = "\ufffd"
# After json.loads a surrogate pair is one character: any surrogate code point left is a lone one.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def a_(word):
    """'an alert', 'a confirm': the article a dialog's type takes."""
    return f"{'an' if word[:1] in 'aeiou' else 'a'} {word}"


def crashed_with(dialog: dict | None) -> str:
    """" with an alert dialog open ('Hello'), which went with it": what a crashed page held ("" for nothing)."""
    return f" with {a_(dialog['type'])} dialog open ({clip(dialog['message'])!r}), which went with it" if dialog else ""


def clip(text: str, limit: int = PAGE_STRING_CHARS) -> str:
    """text, or its first `limit` characters and a marker of how many more there are."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…[{len(text) - limit} more characters]"


def clip_answer(value: Any, keep: str | None = None) -> Any:
    """A copy of an answer (or error object) with its page-controlled fields clipped; `keep` is left whole."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key == keep or key in WHOLE:
                out[key] = item
            elif isinstance(item, str) and key in LIMITS:
                out[key] = clip(item, LIMITS[key])
            else:
                out[key] = clip_answer(item)
        return out
    if isinstance(value, list):
        return [clip_answer(item) for item in value]
    return value


def valid_text(value: Any) -> Any:
    """value with each lone surrogate in its strings (and keys) replaced by U+FFFD; value itself when it has none."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub(REPLACEMENT, value) if _LONE_SURROGATE.search(value) else value
    if isinstance(value, dict):
        pairs = [(valid_text(k), valid_text(v)) for k, v in value.items()]
        if all(k is old_k and v is old_v for (k, v), (old_k, old_v) in zip(pairs, value.items(), strict=True)):
            return value
        return dict(pairs)
    if isinstance(value, (list, tuple)):
        items = [valid_text(item) for item in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return type(value)(items)
    return value


def utf8(text: str) -> bytes:
    """text as UTF-8, a lone surrogate in it as U+FFFD (where strict encoding would raise)."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub(REPLACEMENT, text).encode()
