"""The Tool declaration and helpers shared by the tool modules; imported on any thread.

A session tool's handler runs on its session's thread as handler(state, args, response): the page
state, the validated arguments, and the call's `Response` (session/response.py), on which it says what
it did for core/on_session.py; a session-less tool's runs on the core's worker pool as
handler(core, args, call) (`call.owner` says who is calling).
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

from mcpbrowser import schema

# A model reads the tool list on every turn (docs/performance.md), so what these shared arguments
# are is said once, in click's description and the instructions; and a description says only what
# the tool's and its arguments' names, and its answer's own fields, do not.
SESSION_ID = {"type": "string", "minLength": 1}
SELECTOR = {"type": "string", "minLength": 1}
REF = {"type": "string", "minLength": 1}
TARGET = {"selector": SELECTOR, "ref": REF}
WAIT_UNTIL = {"type": "string", "enum": ["load", "domcontentloaded", "networkidle", "commit"]}  # load first
# Not 0: Playwright reads it as "no timeout", a wait without end until the watchdog replaces the thread.
# Its unit is said once, in initialize's instructions, not in each tool that takes one.
TIMEOUT = schema.integer(None, minimum=1, maximum=600_000)


def result_schema(optional=(), **fields):
    """An answer's output schema: each field's JSON type (or its schema), every field required but `optional`."""
    return {"type": "object", "properties": {k: v if isinstance(v, dict) else {"type": v} for k, v in fields.items()},
            "required": [k for k in fields if k not in optional]}


SUCCESS_MESSAGE = result_schema(success="boolean", message="string")


@dataclass(frozen=True)
class Tool:
    """One MCP tool: its contract and its single implementation; declared as a SessionTool or a CoreTool."""

    needs_session: ClassVar[bool]
    name: str
    title: str
    description: str
    input_schema: dict
    handler: Callable
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    output_schema: dict | None = None
    # The page this tool leaves is captured into the history (and storage saved for resume).
    changes_page: bool = False
    # Stored in the history for get_content, without a storage save (snapshot stores its read; wait_for's is captured).
    stores_page: bool = False
    # False for tools that still work while a dialog blocks the page (logs, tabs, handle_dialog).
    page_tool: bool = True
    # It does nothing with the page (a person's hold): a page that crashed meanwhile waits for a call that does.
    page_free: bool = False
    # Runs during a login cooldown though not read_only: it attempts nothing against the wall (dispatch.py).
    during_cooldown: bool = False
    # It takes the tab away from its page (navigate): it goes past a dialog, dismissing it.
    leaves_page: bool = False
    # A read whose answer holds only for the tab it was meant for (wait_for: a text to go holds at once in another):
    # refused, as an action is, once that tab closed itself since the last answer (session/state.py).
    meant_for_tab: bool = False
    # It waits for the person to act (wait_for_user): its success ends the cooldown that covers
    # the call, and its answer names where a person can help (the live view, when one is served).
    waits_for_person: bool = False
    # Worth running as an MCP task (2025-11-25): it can wait for minutes. Any tool is accepted as one.
    task_support: bool = False
    # Its answer shows the session's expiry (elsewhere every call renews it: "now plus the timeout").
    shows_expiry: bool = False
    # Whether the tool exists under a configuration's settings (evaluate, upload_file).
    enabled: Callable = lambda config: True
    # Its tool group (config.TOOL_GROUPS): MCP clients see and call it only while that is on; the library calls all.
    group: str = "core"
    # Arguments of another group than the tool's (create_session's emulation): name -> group, taken while it is on.
    option_groups: dict = field(default_factory=dict)
    # Only a person in the live view calls it (tools/person.py): to an agent or the library it is unknown.
    person_only: bool = False
    # The handler's result carries PNG/JPEG bytes under "image", sent as MCP image content.
    returns_image: bool = False
    # Its `text` may be a secret, known only once the target is looked at: the request row waits for that.
    may_carry_secret: bool = False
    # The result field holding page text (a snapshot, HTML): MCP sends it as a text block after the others' JSON.
    text_field: str | None = None
    # Library calls: which arguments positional values fill, in order (default: the required ones).
    positional: tuple | None = None

    def positional_args(self):
        return self.positional if self.positional is not None else \
            tuple(p for p in self.input_schema["required"] if p != "sessionId")

    def describe(self, with_output_schema, groups=None, several_sessions=False):
        """The tools/list entry for this tool; options of groups not in `groups` (a set) are left out, and a
        session tool's sessionId unless its client has `several_sessions` open."""
        drop = () if groups is None else [name for name, group in self.option_groups.items() if group not in groups]
        out = {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self._published(drop, several_sessions),
            "annotations": {  # its title would repeat the tool's own
                "readOnlyHint": self.read_only,
                "destructiveHint": self.destructive,
                "idempotentHint": self.idempotent,
                "openWorldHint": self.needs_session,
            },
        }
        if with_output_schema and self.output_schema is not None:
            out["outputSchema"] = self.output_schema
        return out

    def _published(self, drop, several_sessions):
        if not self.needs_session:
            return schema.published(self.input_schema, drop)
        # A session tool acts on its client's one open session when sessionId is left out (core/dispatch.py),
        # so while a client has at most one, its list names no sessionId: a choice it does not have, paid on
        # every turn. With two or more open the list names it again, not required (the refusal names the
        # client's sessions), and the client hears the list changed (lifecycle_tools.sessions_changed).
        # The schema a call is validated against still has it: a sessionId passed is taken either way.
        published = schema.published(self.input_schema, drop if several_sessions else (*drop, "sessionId"))
        required = [name for name in published.get("required", []) if name != "sessionId"]
        published = {k: v for k, v in published.items() if k != "required"}
        if required:
            published["required"] = required
        return published


@dataclass(frozen=True)
class SessionTool(Tool):
    """A tool that acts in a session: handler(state, args, response) runs on that session's own thread."""

    needs_session: ClassVar[bool] = True


@dataclass(frozen=True)
class CoreTool(Tool):
    """A session-less tool: handler(core, args, call) runs on the core's worker pool, never on a session thread."""

    needs_session: ClassVar[bool] = False


def session_schema(properties=None, required=()):
    """Input schema for a tool that acts inside a session: sessionId comes first and is required."""
    return schema.obj({"sessionId": SESSION_ID, **(properties or {})}, ("sessionId", *required))
