"""The tool registry: every tool, read-only after import. Any thread.

`mcpbrowser/tools/` declares the session tools (`SessionTool`, run on a session's thread); the core's own
(`CoreTool`, run on the core pool) are in the *_tools.py modules beside this one. `configured(config)` narrows
`ALL` to what a configuration offers; tool_groups.py decides which of those each client sees. `PERSON` are a
person's own in the live view, answered to anyone else as if they did not exist."""

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
# Here, not added by the view as it is built: which tools exist must not depend on a view. Apart from ALL,
# what an agent or the library may call.
PERSON = [*person.TOOLS]


def configured(config):
    """The tools a configuration offers, each as it declares itself there (type takes secretName with --secrets)."""
    offered = [tool for tool in ALL if tool.enabled(config)]
    offered = [interaction.taking_secret_names(tool) for tool in offered] if config.secrets else offered
    return [*offered, *PERSON]
