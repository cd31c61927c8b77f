"""The tool registry: every tool, read-only after import.

The modules of this package declare the session tools, whose handlers run on a
session's thread (`SessionTool`); `base.py` also declares `CoreTool`, whose tools
run on the core pool and live in `mcpbrowser/core/` (session_tools.py,
content_tools.py). `configured(config)` narrows `ALL` to the tools a configuration offers.
"""

from mcpbrowser.core import content_tools, session_tools
from mcpbrowser.tools import capture, interaction, monitoring, navigation

ALL = [*session_tools.TOOLS, *navigation.TOOLS, *interaction.TOOLS, *capture.TOOLS, *monitoring.TOOLS,
       *content_tools.TOOLS]


def configured(config):
    """The tools a configuration offers, each as it declares itself there (type takes secretName with --secrets)."""
    offered = [tool for tool in ALL if tool.enabled(config)]
    return [interaction.taking_secret_names(tool) for tool in offered] if config.secrets else offered
