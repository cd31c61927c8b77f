"""A V8 heap snapshot (HeapProfiler's JSON) read into what grew between snapshots; pure, any thread.

The snapshot is flat arrays: `nodes` (meta.node_fields per node: type, name, id, self size, edge
count, detachedness), `edges` (meta.edge_fields per edge: type, name or index, the target node's
offset in `nodes`), `strings`, and `locations` (a closure's script and line). A node's edges follow
those of the nodes before it. Objects keep their `id` from one snapshot of a page to the next, so
what a later snapshot holds that an earlier did not is known by id. Retained sizes (a dominator
tree) are not computed: the groups are weighed by count and self size."""

import itertools
import json
from collections import deque

# Node kinds that an agent can act on: a JavaScript object by its constructor, a closure by its
# function, a DOM or other native object by its class, strings as one group. V8's own (code,
# hidden, shapes, arrays' backing stores) and numbers are left out.
KINDS = {"object": "", "closure": "closure", "native": "", "regexp": "", "string": "string",
         "concatenated string": "string", "sliced string": "string"}
DETACHED = 2       # the detachedness of a DOM node no longer in the document
SEARCHED = 200_000  # nodes a retainer search visits at most


class Snapshot:
    """One parsed snapshot: its groups (kind, name) with counts and sizes, and the graph for retainer paths."""

    def __init__(self, text):
        data = json.loads(text)
        meta = data["snapshot"]["meta"]
        self.node_fields, self.edge_fields = meta["node_fields"], meta["edge_fields"]
        self.n, self.e = len(self.node_fields), len(self.edge_fields)
        self.node_types, self.edge_types = meta["node_types"][0], meta["edge_types"][0]
        self.nodes, self.edges, self.strings = data["nodes"], data["edges"], data["strings"]
        self.detach_at = self.node_fields.index("detachedness") if "detachedness" in self.node_fields else None
        self.locations = {}
        fields = meta.get("location_fields") or []
        if "object_index" in fields and "line" in fields:
            step, at = len(fields), {name: i for i, name in enumerate(fields)}
            raw = data.get("locations") or []
            for i in range(0, len(raw), step):
                script = raw[i + at["script_object_index"]] if "script_object_index" in at else None
                self.locations[raw[i + at["object_index"]]] = (script, raw[i + at["line"]], raw[i + at["column"]])
        # Where each node's edges start in `edges` (its edge count is its field 4), and where the last one's end.
        counts = (self.nodes[offset + 4] * self.e for offset in range(0, len(self.nodes), self.n))
        self.first_edge = list(itertools.accumulate(counts, initial=0))

    def total(self):
        """The heap's size: every node's self size, in bytes."""
        return sum(self.nodes[3::self.n])

    def kind(self, offset):
        return self.node_types[self.nodes[offset]]

    def name(self, offset):
        return self.strings[self.nodes[offset + 1]]

    def detached(self, offset):
        return self.detach_at is not None and self.nodes[offset + self.detach_at] == DETACHED

    def group(self, offset):
        """(kind label, name) of the node's group, or None for V8's own."""
        kind = self.kind(offset)
        label = KINDS.get(kind)
        if label is None:
            return None
        if label == "string":
            return ("string", "(strings)")
        name = self.name(offset)
        if kind == "object":
            name = name.split(" / ", 1)[0]  # "Window / http://...": the constructor alone
        if name.startswith("system") or name.startswith("(") or not name:  # V8's own: contexts, maps, roots
            return None
        if kind == "native" and ("::" in name or name == "V8EventListener"):
            return None  # the browser's own containers; a listener is counted once, as its EventListener
        if kind == "native" and self.detached(offset):
            return ("detached", name)
        return (label, name)

    def groups(self):
        """{(kind, name): [count, self size, [node ids]]} over the snapshot's nodes."""
        out: dict[tuple, list] = {}
        nodes, n = self.nodes, self.n
        for offset in range(0, len(nodes), n):
            key = self.group(offset)
            if key is None:
                continue
            entry = out.get(key)
            if entry is None:
                entry = out[key] = [0, 0, []]
            entry[0] += 1
            entry[1] += nodes[offset + 3]
            entry[2].append(nodes[offset + 2])
        return out

    def offset_of(self, node_id):
        nodes, n = self.nodes, self.n
        for offset in range(0, len(nodes), n):
            if nodes[offset + 2] == node_id:
                return offset
        return None

    def location(self, offset):
        """'app.js:5:54' for a closure whose script the snapshot names; else None."""
        found = self.locations.get(offset)
        if found is None:
            return None
        script, line, column = found
        url = self.name(script).rsplit(" / ", 1)[-1] if script is not None else ""
        return f"{url or '?'}:{line + 1}:{column + 1}"

    def retainers(self, target):
        """The shortest path of strong references from a page's global object (Window) to the node at
        `target`: [(edge words, node offset)], the global first; None when no global holds it."""
        nodes, edges, n, e = self.nodes, self.edges, self.n, self.e
        weak = self.edge_types.index("weak") if "weak" in self.edge_types else -1
        globals_ = [offset for offset in range(0, len(nodes), n)
                    if self.kind(offset) == "object" and self.name(offset).startswith("Window")]
        came: dict[int, tuple] = {g: (None, None) for g in globals_}
        queue = deque(globals_)
        while queue and len(came) < SEARCHED:
            offset = queue.popleft()
            if offset == target:
                break
            index = offset // n
            for edge in range(self.first_edge[index], self.first_edge[index + 1], e):
                if edges[edge] == weak:
                    continue
                to = edges[edge + 2]
                if to not in came:
                    came[to] = (offset, edge)
                    queue.append(to)
        if target not in came:
            return None
        path, at = [], target
        while at is not None:
            parent, edge = came[at]
            path.append((self.edge_words(edge) if edge is not None else "", at))
            at = parent
        return path[::-1]

    def edge_words(self, edge):
        kind = self.edge_types[self.edges[edge]]
        name = self.edges[edge + 1]
        if kind == "element":
            return f"[{name}]"
        if kind in ("property", "context", "shortcut"):
            return f".{self.strings[name]}" if isinstance(name, int) and name < len(self.strings) else f".{name}"
        return ""


def path_words(snapshot, path):
    """window.kept[3], cache (a variable), or window > listener > onResize(): a retainer path an agent reads.

    A JavaScript step is its property or index, a script's or a closure's variable starts the words
    again; a native step is its class, the browser's own containers (names with "::") left out, an
    event listener's several objects said once."""
    if not path:
        return None
    words, last, previous, previous_kind = "window", "window", "", "object"
    for edge, offset in path[1:]:
        kind, name = snapshot.kind(offset), snapshot.name(offset).split(" / ", 1)[0]
        if kind == "native" and name.startswith("Window"):  # the global's own native half: still "window"
            previous, previous_kind = snapshot.name(offset), kind
            continue
        if edge.startswith(".") and previous.startswith("system / Context"):
            words, name = f"{edge[1:]} (a variable)", edge[1:]
        elif edge.startswith((".", "[")) and previous_kind in ("object", "closure"):
            words += edge
        elif kind == "native":
            name = "listener" if "EventListener" in name else name
            if "::" in name or name.startswith(("Window", "system")) or name == last:
                previous, previous_kind = snapshot.name(offset), kind
                continue
            words += f" > {name}"
        elif kind == "closure":
            words += f" > {name}()"
        previous, previous_kind, last = snapshot.name(offset), kind, name
    if len(words) > 200:
        words = words[:100] + " … " + words[-100:]
    return words


def not_the_pages(snapshot, path):
    """Who holds it when not the page: the server's own code in the page (Playwright's injected script, the
    settle's closures: code without a script URL), or the browser's performance timeline (its own buffers)."""
    for _edge, offset in path:
        kind = snapshot.kind(offset)
        if kind == "object" and snapshot.name(offset) == "InjectedScript":
            return "the server's own scripts in the page"
        if kind == "native" and snapshot.name(offset) == "Performance":
            return "the browser's performance timeline (its own buffers)"
        if kind == "closure":
            where = snapshot.locations.get(offset)
            script = where[0] if where is not None else None
            if script is not None and snapshot.name(script).rsplit(" / ", 1)[-1] in ("", "Script"):
                return "the server's own scripts in the page"
    return None
