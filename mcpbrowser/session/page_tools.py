"""The tools a page registers (WebMCP), found in its frames and called under the domain policy.

SESSION THREAD ONLY: through Playwright's `frame.webmcp` of the session's own pages.

Frames: a frame's tools are offered labelled with its origin (`frame`), never mixed with the page's
own, and only while the domain policy allows the frame's URL; a frame it forbids is not even asked
what it offers (its descriptions are text from where the session may not go), and a call naming it
is refused before anything reaches it. Left out entirely, a site whose tools live in a frame of its
own (a checkout, a map) would offer the agent nothing; labelled, the agent sees whose tool it calls.
"""

import re
from typing import Any
from urllib.parse import urlsplit

from mcpbrowser.errors import DomainNotAllowed, InvalidParameters
from mcpbrowser.page_strings import clip

NOT_ENABLED = "WebMCP is not enabled"
# What a load's answer says of the page's own tools: their names and argument names, identifiers alone (a page
# writes them; Chromium already refuses other tool names), at most ANNOUNCED of them.
ANNOUNCED = 12
IDENTIFIER = re.compile(r"[A-Za-z0-9_.-]{1,64}")


class WebMcpOff(Exception):
    """The browser was launched without WebMCP (--no-webmcp, or a remote browser without the feature)."""


def origin(url: str) -> str:
    """scheme://host[:port] of a frame's URL; the URL's scheme alone for one without a host (about:, data:)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.netloc else f"{parts.scheme}:"


def offering_frames(state: Any) -> tuple[list[tuple[Any, str | None]], int]:
    """([(frame, its label: None for the page itself, else its origin)], how many frames the policy left out)."""
    page = state.tab.page
    kept, left_out = [], 0
    for frame in page.frames:
        if frame.is_detached():
            continue
        if not state.network_policy.allows(frame.url):
            if frame is page.main_frame and state.network_policy.forbids_page(frame.url):  # an action sent it there
                host = urlsplit(frame.url).hostname
                raise DomainNotAllowed(f"{host} is not allowed: its page tools are never called.",
                                       session_id=state.session_id, details={"domain": host})
            if frame is not page.main_frame:  # the main frame's: the browser's error page (a closed port, say)
                left_out += 1
            continue
        kept.append((frame, None if frame is page.main_frame else origin(frame.url)))
    return kept, left_out


def tools_of(frame: Any, timeout_ms: int) -> list[Any]:
    """What a frame registers now (a late tool, an unregistered one: each read asks afresh)."""
    try:
        return frame.webmcp.tools(timeout=timeout_ms)
    except Exception as exc:
        if NOT_ENABLED in str(exc):
            raise WebMcpOff(str(exc)) from None
        raise


def found(state: Any, timeout_ms: int) -> tuple[list[tuple[dict[str, Any], str | None]], int]:
    """Every page tool the session's current tab offers now, with its frame's label; and the frames left out."""
    frames, left_out = offering_frames(state)
    out: list[tuple[dict[str, Any], str | None]] = []
    for frame, label in frames:
        try:
            registered = tools_of(frame, timeout_ms)
        except WebMcpOff:
            raise
        except Exception:  # a frame that navigated or closed meanwhile offers nothing
            if label is None:
                raise
            continue
        out.extend((tool, label) for tool in registered)
    return out, left_out


# What a load asks of the page's own tools, in the main world through the tab's CDP session: Playwright's
# frame.webmcp.tools() runs in its utility world, which a fresh document must first set up. A page could answer
# falsely here, but what it says is its own, as its text is, and only names that are identifiers are shown.
# Bounded: a page whose getTools() never settles answers null after 200 ms.
OFFERED = """(async () => {
  const mc = document.modelContext || navigator.modelContext;
  if (!mc || typeof mc.getTools !== 'function') return null;
  const late = new Promise(resolve => setTimeout(() => resolve(null), 200));
  const tools = await Promise.race([Promise.resolve(mc.getTools()).catch(() => null), late]);
  if (!Array.isArray(tools)) return null;
  const own = tools.filter(t => !('window' in t) || t.window === window);
  return {total: own.length, tools: own.slice(0, %d).map(t => {
    let schema = t.inputSchema;
    try { if (typeof schema === 'string') schema = JSON.parse(schema); } catch (e) { schema = null; }
    return {name: String(t.name), inputSchema: schema && typeof schema === 'object' ? schema : null};
  })};
})()"""


def offered_read(state: Any, timeout_ms: int) -> tuple[Any, str, dict[str, Any]] | None:
    """The read ((target, method, kwargs)) of the tools the page itself (its main frame) offers now, for a load to
    send with its title's (page_reading.loaded_title: one round trip); None when the browser runs no page tools.
    Its frames' tools are page_tools' list's to show, with their origins."""
    if not (state.config.webmcp and state.chromium) or state.blocker is not None:  # a dialog holds the page's script
        return None
    return state.tab.cdp(), "send", {"method": "Runtime.evaluate", "params": {
        "expression": OFFERED % ANNOUNCED, "awaitPromise": True, "returnByValue": True}}


def announced(answer: Any) -> str | None:
    """`name(arg, arg?), …` of the tools a load's read found (offered_read's CDP answer); None when it offers none,
    or the read failed (a page that is not a secure context, one gone meanwhile)."""
    offered = answer.get("result", {}).get("value") if isinstance(answer, dict) else None
    registered = offered.get("tools") if isinstance(offered, dict) else None
    if not isinstance(registered, list):
        return None
    shown = [signature for signature in map(_signature, registered[:ANNOUNCED]) if isinstance(signature, str)]
    if not shown:
        return None
    total = offered.get("total") if isinstance(offered, dict) else None
    more = (total if isinstance(total, int) else len(registered)) - ANNOUNCED
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _signature(tool: dict[str, Any]) -> str | None:
    name = str(tool.get("name", ""))
    if not IDENTIFIER.fullmatch(name):
        return None
    declared = tool.get("inputSchema")
    declared = declared if isinstance(declared, dict) else {}
    properties = declared.get("properties")
    required = declared.get("required")
    required = required if isinstance(required, list) else []
    args = [arg if arg in required else arg + "?" for arg in (properties if isinstance(properties, dict) else {})
            if isinstance(arg, str) and IDENTIFIER.fullmatch(arg)]
    return f"{name}({', '.join(args)})"


def frame_for(state: Any, label: str | None) -> Any:
    """The frame a call names (None: the page itself), once the domain policy allows it."""
    page = state.tab.page
    if label is None:
        frame = page.main_frame
    else:
        frame = next((f for f in page.frames if f is not page.main_frame and not f.is_detached()
                      and origin(f.url) == label), None)
        if frame is None:
            origins = sorted({origin(f.url) for f in page.frames if f is not page.main_frame and not f.is_detached()})
            raise InvalidParameters(f"No frame of {clip(label)} on this page (a frame is named by its origin, "
                                    f"scheme://host:port; it has: {clip(', '.join(origins)) or 'none'}).",
                                    session_id=state.session_id, details={"field": "frame"})
    if not state.network_policy.allows(frame.url) or not state.network_policy.allows(page.url):
        host = urlsplit(frame.url).hostname or frame.url
        raise DomainNotAllowed(f"{host} is not allowed: its page tools are never called.",
                               session_id=state.session_id, details={"domain": host})
    return frame
