"""Which tool groups each MCP client sees and may call, and the enable_tools tool.

Any thread (the per-client table is under one lock): the dispatcher's check on the caller's thread, the
listing on a transport's, enable_tools' handler on the core pool. A model reads the whole tools/list every
turn, so the default list holds the tools most tasks use and the rest wait behind a group: --caps turns one
on for every client, enable_tools for its own client until the server stops. The library is not checked."""

import threading

from mcpbrowser import schema
from mcpbrowser.config import TOOL_GROUPS
from mcpbrowser.errors import InvalidParameters, ToolNotEnabled


class ToolGroups:
    """The groups on for each client: the server's (--caps) and the ones it enabled itself."""

    def __init__(self, config, tools):
        self._server = frozenset({"core", *config.caps})
        self._tools = tools  # name -> Tool: the tools the server's settings allow
        self._lock = threading.Lock()
        self._enabled = {}  # owner -> set of group names it turned on

    def on(self, owner):
        """The groups `owner` (a client; None over stdio) sees."""
        with self._lock:
            return self._server | self._enabled.get(owner, set())

    def enable(self, owner, names):
        """Turn groups on for `owner`; returns those that were off."""
        with self._lock:
            mine = self._enabled.setdefault(owner, set())
            new = [name for name in names if name not in self._server and name not in mine]
            mine.update(new)
            return new

    def is_default(self, groups):
        """Whether `groups` are the server's own, the same for every client."""
        return groups == self._server

    def listed(self, owner):
        """The tools `owner` sees in tools/list, in declaration order."""
        groups = self.on(owner)
        return [tool for tool in self._tools.values() if tool.group in groups], groups

    def off_note(self, name, caller):
        """' (in the logins tool group: enable_tools turns it on)' for a message that names tool `name`,
        when its group is off for `caller`; '' when it is on, or the caller reads no tool list."""
        tool = self._tools.get(name)
        if tool is None or not caller.lists_tools or tool.group in self.on(caller.owner):
            return ""
        return f" (in the {tool.group} tool group: enable_tools turns it on)"

    def check(self, tool, args, owner):
        """Raise TOOL_NOT_ENABLED for a tool, or an argument, whose group is off for `owner`."""
        groups = self.on(owner)
        given = [(name, group) for name, group in tool.option_groups.items() if isinstance(args, dict) and name in args]
        for name, group in [(None, tool.group), *given]:
            if group not in groups:
                what = tool.name if name is None else f"{tool.name}'s {name}"
                raise ToolNotEnabled(f"{what} is in the tool group {group!r}, which is off. Call enable_tools with "
                                     f"groups [{group!r}] first (or start the server with --caps {group}).",
                                     details={"group": group, "flag": f"--caps {group}",
                                              **({"argument": name} if name else {})})


def _signature(tool, groups):
    """`go_forward(waitUntil?, timeout?)`: enough for a model to call a tool its client did not list yet."""
    required = set(tool.input_schema["required"]) - {"sessionId"}
    names = [name for name in tool.input_schema["properties"]
             if name != "sessionId" and tool.option_groups.get(name, tool.group) in groups]
    return f"{tool.name}({', '.join(n if n in required else n + '?' for n in names)})"


def enable_tools(core, args, call):
    unknown = [name for name in args["groups"] if name == "core" or name not in TOOL_GROUPS]
    if unknown:  # checked here, not by an enum in the schema: the description names every group already
        raise InvalidParameters(f"No tool group {unknown[0]!r} to enable; the groups: "
                                f"{', '.join(name for name in TOOL_GROUPS if name != 'core')}.",
                                details={"groups": unknown})
    owner = call.owner
    new = core.groups.enable(owner, args["groups"])
    tools, groups = core.groups.listed(owner)
    added = [_signature(tool, groups) for tool in tools if tool.group in new]
    added += [f"{tool.name}: {name}" for tool in tools for name, group in tool.option_groups.items() if group in new]
    if new:
        call.caller.tools_changed()
    return {"enabled": sorted(groups - {"core"}), "added": added,
            "message": "Now callable (sessionId first where a tool takes one)." if added else "Already on."}


def declare(all_tools):
    """The enable_tools tool, its description listing each group's tools (so nothing is out of reach)."""
    from mcpbrowser.tools.base import CoreTool  # here: tool_registry imports this module to call declare()
    members: dict[str, list[str]] = {name: [] for name in TOOL_GROUPS if name != "core"}
    for tool in all_tools:
        if tool.group != "core":
            members[tool.group].append(tool.name)
        options: dict[str, list[str]] = {}
        for option, group in tool.option_groups.items():
            options.setdefault(group, []).append(option)
        for group, names in options.items():  # the first: enable_tools' answer names them all
            members[group].append(f"{tool.name}'s {names[0]}{', ...' if len(names) > 1 else ''}")
    listing = "; ".join(f"{group}: {', '.join(names)}" for group, names in members.items() if names)
    return CoreTool(
        name="enable_tools", title="Enable tool groups",
        # Its name says what the listing is: no "Groups: " before it, which a model would read every turn.
        description=f"{listing}.",
        # The groups' names are the description's: an enum of them too would say them twice in every tools/list.
        input_schema=schema.obj({"groups": {"type": "array", "minItems": 1, "items": {"type": "string"}}},
                                ("groups",)),
        handler=enable_tools, idempotent=True,
        during_cooldown=True,  # it changes only which tools the client sees
        # Off when every group is on already.
        enabled=lambda config: set(config.caps) != set(members),
        output_schema=schema.result({"enabled": {"type": "array"}, "added": {"type": "array"}}, ("enabled", "added")),
    )
