"""The tool registry: every tool, read-only after import.

The modules of this package declare the session tools, whose handlers run on a
session's thread (`SessionTool`); `base.py` also declares `CoreTool`, whose tools
run on the core pool and live in `mcpbrowser/core/` (session_tools.py,
content_tools.py). `Browser.tools` narrows `ALL` to the tools a configuration enables.
"""

from mcpbrowser.core import content_tools, session_tools
from mcpbrowser.tools import capture, interaction, monitoring, navigation

ALL = [*session_tools.TOOLS, *navigation.TOOLS, *interaction.TOOLS, *capture.TOOLS, *monitoring.TOOLS,
       *content_tools.TOOLS]
