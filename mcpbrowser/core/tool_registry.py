"""The tool registry: every tool, read-only after import. Any thread.

The area modules of `mcpbrowser/tools/` declare the session tools, whose handlers run
on a session's thread (`SessionTool`); the core's own (`CoreTool`, run on the core
pool) are declared in lifecycle_tools.py, content_tools.py, export_tools.py and
tool_groups.py beside this one. `configured(config)` narrows `ALL` to the tools a
configuration offers; tool_groups.py decides which of those each MCP client sees,
by each tool's `group`. `PERSON` are a person's own in the live view (tools/person.py):
in every configuration's table, whether or not a view is served, and the dispatcher
answers anyone but a person as if they did not exist (never listed, never documented)."""

from mcpbrowser.core import content_tools, export_tools, lifecycle_tools, performance_tools, tool_groups
from mcpbrowser.tools import (
    capture,
    emulation,
    interaction,
    memory,
    monitoring,
    navigation,
    network,
    page_tools,
    performance,
    person,
    storage,
)

ALL = [*lifecycle_tools.TOOLS, *navigation.TOOLS, *interaction.TOOLS, *capture.TOOLS, *monitoring.TOOLS,
       *emulation.TOOLS, *network.TOOLS, *storage.TOOLS, *page_tools.TOOLS, *performance.TOOLS, *memory.TOOLS,
       *content_tools.TOOLS, *export_tools.TOOLS, *performance_tools.TOOLS]
ALL.append(tool_groups.declare(ALL))
# Declared here with the others rather than added by the view as it is built: which tools exist must not
# depend on whether (or how many times) a view was built. Apart from ALL, which is what an agent or the
# library may call (the reference pages, the library's methods, enable_tools' listing read it).
PERSON = [*person.TOOLS]


def configured(config):
    """The tools a configuration offers, each as it declares itself there (type takes secretName with --secrets)."""
    offered = [tool for tool in ALL if tool.enabled(config)]
    offered = [interaction.taking_secret_names(tool) for tool in offered] if config.secrets else offered
    return [*offered, *PERSON]
