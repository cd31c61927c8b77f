"""Page capture: aria snapshot with refs, DOM serialisation, screenshots; handlers run on the session thread."""

import os
import struct
import time

from mcpbrowser import schema
from mcpbrowser.errors import ElementNotClickable, InvalidParameters
from mcpbrowser.redaction import JS_IS_SECRET
from mcpbrowser.session_state import INTERRUPTED
from mcpbrowser.tools.base import TARGET, TIMEOUT, Tool, session_schema
from mcpbrowser.tools.targeting import on_element

DEFAULT_MAX_NODES = 1000  # about 30k characters of YAML: a page an agent can still read whole
MAX_NODES = schema.integer(f"Most nodes to return (default {DEFAULT_MAX_NODES}); the rest is cut and flagged.",
                           minimum=1, maximum=100_000)

# Serialises the DOM below `root` as indented HTML, stopping after `limit` nodes
# (elements and non-blank text). Script and style bodies are left out: they cost
# tokens and say nothing about what is on the page.
DOM_SERIALISER = """([root, limit]) => {
  """ + JS_IS_SECRET + """
  const out = []; let shown = 0, total = 0;
  const quiet = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE']);
  const esc = s => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');
  const cut = (s, n) => s.length > n ? s.slice(0, n) + '…' : s;
  function walk(node, depth) {
    const pad = '  '.repeat(depth);
    if (node.nodeType === Node.TEXT_NODE) {
      const text = node.textContent.trim();
      if (!text) return;
      total++;
      if (shown < limit) { shown++; out.push(pad + esc(cut(text, 500))); }
      return;
    }
    if (node.nodeType !== Node.ELEMENT_NODE) return;
    total++;
    const tag = node.tagName.toLowerCase();
    const open = shown < limit;
    if (open) {
      shown++;
      const hide = isSecret(node);  // a secret field's value attribute is not shown
      const attrs = Array.from(node.attributes, a =>
        ` ${a.name}="${hide && a.name === 'value' ? '[REDACTED]' : esc(cut(a.value, 200))}"`).join('');
      out.push(`${pad}<${tag}${attrs}>`);
    }
    if (!quiet.has(node.tagName)) {
      const kids = node.shadowRoot ? [...node.shadowRoot.childNodes, ...node.childNodes] : node.childNodes;
      for (const child of kids) walk(child, depth + 1);
      if (tag === 'iframe') {
        try { if (node.contentDocument) walk(node.contentDocument.documentElement, depth + 1); } catch (e) {}
      }
    }
    if (open && shown < limit) out.push(`${pad}</${tag}>`);
  }
  walk(root || document.documentElement, 0);
  return {html: out.join('\\n'), nodes: shown, totalNodes: total};
}"""


def _count_nodes(line):
    body = line.lstrip()
    return body.startswith("- ") and not body.startswith("- /")  # "- /url: …" is a property


def snapshot(state, args):
    limit = args.get("maxNodes", DEFAULT_MAX_NODES)
    if state.locate(args, required=False)[1] is None:
        text = state.act(state.page, "aria_snapshot", mode="ai")
    else:
        texts = []
        on_element(state, args, ElementNotClickable, lambda first: texts.append(state.act(
            first, "aria_snapshot", mode="ai", timeout=args.get("timeout", state.config.action_timeout))))
        text = texts[0]
    if text is INTERRUPTED:
        text = ""
    kept, nodes, total = [], 0, 0
    for line in text.splitlines():
        if _count_nodes(line):
            total += 1
            if nodes >= limit:
                continue
            nodes += 1
        elif nodes >= limit:
            continue
        kept.append(line)
    yaml = state.redact_snapshot("\n".join(kept))
    state.remember_refs(yaml)
    title = state.page.title() if state.dialog is None else ""
    state.remember_page(title)
    return {"snapshot": yaml, "nodes": nodes, "totalNodes": total, "truncated": total > nodes,
            "url": state.page.url, "title": title}


def dom_snapshot(state, args):
    limit = args.get("maxNodes", DEFAULT_MAX_NODES)
    matches = state.locate(args, required=False)[1]
    root = None
    if matches is not None:
        handles = []
        timeout = args.get("timeout", state.config.action_timeout)
        on_element(state, args, ElementNotClickable,
                   lambda first: handles.append(first.element_handle(timeout=timeout)))
        root = handles[0]
    result = state.act(state.page, "evaluate", expression=DOM_SERIALISER, arg=[root, limit])
    if result is INTERRUPTED:
        result = {"html": "", "nodes": 0, "totalNodes": 0}
    return {**result, "truncated": result["totalNodes"] > result["nodes"], "url": state.page.url}


def image_size(data):
    """(width, height) of PNG or JPEG bytes, read from the header."""
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return struct.unpack(">II", data[16:24])
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            i += 1
            continue
        marker, length = data[i + 1], struct.unpack(">H", data[i + 2:i + 4])[0]
        if marker in (0xC0, 0xC1, 0xC2):
            height, width = struct.unpack(">HH", data[i + 5:i + 9])
            return width, height
        i += 2 + length
    raise ValueError("not a PNG or JPEG image")


def screenshot(state, args):
    fmt = args.get("format", "png")
    options = {"type": fmt}
    if "quality" in args:
        if fmt != "jpeg":
            raise InvalidParameters("quality applies to jpeg only.", session_id=state.session_id)
        options["quality"] = args["quality"]
    state.report(0, 2, "Capturing")
    if state.locate(args, required=False)[1] is None:
        data = state.act(state.page, "screenshot", full_page=args.get("fullPage", False), **options)
    else:
        if args.get("fullPage"):
            raise InvalidParameters("fullPage applies to the page, not to an element.",
                                    session_id=state.session_id)
        shots = []
        on_element(state, args, ElementNotClickable, lambda first: shots.append(state.act(
            first, "screenshot", timeout=args.get("timeout", state.config.action_timeout), **options)))
        data = shots[0]
    if data is INTERRUPTED:
        raise InvalidParameters("A dialog opened during the screenshot; answer it with handle_dialog.",
                                session_id=state.session_id)
    width, height = image_size(data)
    state.report(1, 2, "Captured")
    saved = None
    if state.config.output_dir:
        # The server names the file, so nothing a client sends can steer the path.
        os.makedirs(state.config.output_dir, exist_ok=True)
        state.screenshots += 1
        name = f"{time.strftime('%Y%m%d-%H%M%S')}-{state.session_id[:8]}-{state.screenshots}.{fmt}"
        saved = os.path.join(os.path.realpath(state.config.output_dir), name)
        with open(saved, "wb") as f:
            f.write(data)
    state.report(2, 2, "Done")
    return {"width": width, "height": height, "format": fmt, "bytes": len(data), "savedTo": saved,
            "image": data}


TOOLS = [
    Tool(
        name="snapshot",
        title="Accessibility snapshot",
        description="The page's accessibility tree as YAML with [ref=eN] markers; pass a ref to element "
                    "tools instead of a selector. Refs last until the page changes.",
        input_schema=session_schema({**TARGET, "maxNodes": MAX_NODES, "timeout": TIMEOUT}),
        handler=snapshot,
        read_only=True,
        output_schema={
            "type": "object",
            "properties": {"snapshot": {"type": "string"}, "nodes": {"type": "integer"},
                           "totalNodes": {"type": "integer"}, "truncated": {"type": "boolean"},
                           "url": {"type": "string"}, "title": {"type": "string"}},
            "required": ["snapshot", "nodes", "totalNodes", "truncated", "url", "title"],
        },
    ),
    Tool(
        name="dom_snapshot",
        title="DOM snapshot",
        description="The DOM as indented HTML (scripts and styles elided), cut at maxNodes.",
        input_schema=session_schema({**TARGET, "maxNodes": MAX_NODES, "timeout": TIMEOUT}),
        handler=dom_snapshot,
        read_only=True,
        output_schema={
            "type": "object",
            "properties": {"html": {"type": "string"}, "nodes": {"type": "integer"},
                           "totalNodes": {"type": "integer"}, "truncated": {"type": "boolean"},
                           "url": {"type": "string"}},
            "required": ["html", "nodes", "totalNodes", "truncated", "url"],
        },
    ),
    Tool(
        name="screenshot",
        title="Screenshot",
        description="Screenshot of the viewport, the full page, or one element, as an image.",
        input_schema=session_schema({
            **TARGET,
            "format": schema.string("Image format (default png).", enum=["png", "jpeg"]),
            "quality": schema.integer("JPEG quality 0-100.", minimum=0, maximum=100),
            "fullPage": schema.boolean("Capture the whole scrollable page."),
            "timeout": TIMEOUT,
        }),
        handler=screenshot,
        read_only=True,
        returns_image=True,
        output_schema={
            "type": "object",
            "properties": {"width": {"type": "integer"}, "height": {"type": "integer"},
                           "format": {"type": "string"}, "bytes": {"type": "integer"},
                           "savedTo": {"type": ["string", "null"]}},
            "required": ["width", "height", "format", "bytes", "savedTo"],
        },
    ),
]
